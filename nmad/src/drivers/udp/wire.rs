//! The udp driver's datagrams, encoded and checked. Every field that comes from the network is
//! bounds-checked here before anything is trusted; a datagram that fails is dropped and counted
//! (a stranger's, or a corrupted one), never delivered.
//!
//! Data socket (little endian; 16-byte header then the kind's fields):
//! - header: magic `NU`, version, kind, the sender's rank (u32), the receiver's id for the link
//!   (u64, chosen by the receiver at the handshake and known only to the two ends);
//! - DATA: sequence number (u64), clock stamp (u32), flags (u8: first / last fragment of a
//!   packet, bulk piece, ACK asked at once, ACK carried), then the carried ACK
//!   ([`Ack`] encoding), then for a bulk piece its cookie and offset (u64 each), then the payload
//!   (the rest of the datagram);
//! - ACK: an [`Ack`];
//! - CLOSE: nothing (the link is cut);
//! - PING: nothing (a heartbeat on a silent link: answered by an ACK).
//!
//! Handshake socket: `NMUDPHS1`, kind, then the kind's fixed fields (see [`Handshake`]); proofs are HMAC-SHA256 of the job key over both sides' fields (`tools::secret`).

use crate::reliable::Ack;

pub const MAGIC: [u8; 2] = *b"NU";
pub const VERSION: u8 = 1;
pub const HEADER: usize = 16;

pub const KIND_DATA: u8 = 1;
pub const KIND_ACK: u8 = 2;
pub const KIND_CLOSE: u8 = 3;
pub const KIND_PING: u8 = 4;

/// DATA flags.
pub const FIRST: u8 = 1;
pub const LAST: u8 = 2;
pub const BULK: u8 = 4;
pub const ACK_NOW: u8 = 8;
pub const HAS_ACK: u8 = 16;

/// Fixed part of a DATA datagram after the header (seq, stamp, flags).
pub const DATA_FIXED: usize = 13;
/// A bulk piece's cookie and offset.
pub const BULK_FIELDS: usize = 16;
/// The most a DATA datagram spends before its payload (an ACK with every range included).
pub const MAX_DATA_OVERHEAD: usize = HEADER + DATA_FIXED + 13 + 8 * crate::reliable::MAX_RANGES + BULK_FIELDS;

/// The header every data-socket datagram starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub kind: u8,
    pub from: u32,
    pub link_id: u64,
}

impl Header {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.push(self.kind);
        out.extend_from_slice(&self.from.to_le_bytes());
        out.extend_from_slice(&self.link_id.to_le_bytes());
    }

    pub fn decode(b: &[u8]) -> Option<Header> {
        if b.len() < HEADER || b[..2] != MAGIC || b[2] != VERSION {
            return None;
        }
        Some(Header {
            kind: b[3],
            from: u32::from_le_bytes(b[4..8].try_into().ok()?),
            link_id: u64::from_le_bytes(b[8..16].try_into().ok()?),
        })
    }
}

/// The fields of a DATA datagram, its payload located by range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Data {
    pub seq: u64,
    pub stamp: u32,
    pub flags: u8,
    pub ack: Option<Ack>,
    /// A bulk piece's (cookie, offset).
    pub bulk: Option<(u64, u64)>,
    /// Where the payload starts in the datagram (it runs to the end).
    pub payload_at: usize,
}

impl Data {
    /// Encodes everything before the payload (the header included).
    pub fn encode_head(
        h: &Header,
        seq: u64,
        stamp: u32,
        flags: u8,
        ack: Option<&Ack>,
        bulk: Option<(u64, u64)>,
        out: &mut Vec<u8>,
    ) {
        h.encode(out);
        out.extend_from_slice(&seq.to_le_bytes());
        out.extend_from_slice(&stamp.to_le_bytes());
        let flags = flags | if ack.is_some() { HAS_ACK } else { 0 } | if bulk.is_some() { BULK } else { 0 };
        out.push(flags);
        if let Some(a) = ack {
            a.encode(out);
        }
        if let Some((cookie, offset)) = bulk {
            out.extend_from_slice(&cookie.to_le_bytes());
            out.extend_from_slice(&offset.to_le_bytes());
        }
    }

    /// Decodes the fields after the header of datagram `b`.
    pub fn decode(b: &[u8]) -> Option<Data> {
        Data::decode_head(b, b.len())
    }

    /// Decodes the fields after the header from `head`, the first bytes of a datagram of
    /// `total` bytes (a peek at it).
    pub fn decode_head(b: &[u8], total: usize) -> Option<Data> {
        if b.len() > total {
            return None;
        }
        let f = b.get(HEADER..HEADER + DATA_FIXED)?;
        let seq = u64::from_le_bytes(f[..8].try_into().ok()?);
        let stamp = u32::from_le_bytes(f[8..12].try_into().ok()?);
        let flags = f[12];
        if flags & !(FIRST | LAST | BULK | ACK_NOW | HAS_ACK) != 0 {
            return None;
        }
        let mut at = HEADER + DATA_FIXED;
        let ack = if flags & HAS_ACK != 0 {
            let (a, n) = Ack::decode(b.get(at..)?)?;
            at += n;
            Some(a)
        } else {
            None
        };
        let bulk = if flags & BULK != 0 {
            let f = b.get(at..at + BULK_FIELDS)?;
            at += BULK_FIELDS;
            let cookie = u64::from_le_bytes(f[..8].try_into().ok()?);
            let offset = u64::from_le_bytes(f[8..].try_into().ok()?);
            // A bulk piece is not a packet fragment, and its end must not overflow.
            if flags & (FIRST | LAST) != 0 || offset.checked_add(total.checked_sub(at)? as u64).is_none() {
                return None;
            }
            Some((cookie, offset))
        } else {
            None
        };
        Some(Data { seq, stamp, flags, ack, bulk, payload_at: at })
    }
}

// ------------------------------------------------------------------ handshake

pub const HS_MAGIC: [u8; 8] = *b"NMUDPHS1";
pub const HS_HELLO: u8 = 1;
pub const HS_WELCOME: u8 = 2;
pub const HS_PROOF: u8 = 3;
pub const HS_READY: u8 = 4;
pub const NONCE: usize = 16;
pub const MAC: usize = 32;

/// What one side of a link tells the other at the handshake: who it is, where its data
/// socket listens, the id the other must put in datagrams to it, and its limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Side {
    pub rank: u32,
    /// Where its data socket receives, and the port its datagrams to this peer come from (a
    /// socket of the link's own, connected: no route lookup per send).
    pub data_port: u16,
    pub send_port: u16,
    pub link_id: u64,
    /// Its receive window (units it keeps out of order).
    pub window: u32,
    /// Its data socket's receive buffer, bytes.
    pub rcvbuf: u32,
    /// The largest datagram it takes.
    pub max_datagram: u32,
}

const SIDE: usize = 4 + 2 + 2 + 8 + 4 + 4 + 4;

impl Side {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.rank.to_le_bytes());
        out.extend_from_slice(&self.data_port.to_le_bytes());
        out.extend_from_slice(&self.send_port.to_le_bytes());
        out.extend_from_slice(&self.link_id.to_le_bytes());
        out.extend_from_slice(&self.window.to_le_bytes());
        out.extend_from_slice(&self.rcvbuf.to_le_bytes());
        out.extend_from_slice(&self.max_datagram.to_le_bytes());
    }

    fn decode(b: &[u8]) -> Option<Side> {
        let b = b.get(..SIDE)?;
        Some(Side {
            rank: u32::from_le_bytes(b[0..4].try_into().ok()?),
            data_port: u16::from_le_bytes(b[4..6].try_into().ok()?),
            send_port: u16::from_le_bytes(b[6..8].try_into().ok()?),
            link_id: u64::from_le_bytes(b[8..16].try_into().ok()?),
            window: u32::from_le_bytes(b[16..20].try_into().ok()?),
            rcvbuf: u32::from_le_bytes(b[20..24].try_into().ok()?),
            max_datagram: u32::from_le_bytes(b[24..28].try_into().ok()?),
        })
    }
}

/// One handshake datagram. HELLO: the client's side, the rank it wants, its nonce. WELCOME:
/// the server's side, both nonces, the server's proof. PROOF: both nonces and the client's
/// proof. READY: both nonces and the server's proof that it took the PROOF.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handshake {
    Hello { client: Side, to: u32, nc: [u8; NONCE] },
    Welcome { server: Side, nc: [u8; NONCE], ns: [u8; NONCE], mac: [u8; MAC] },
    Proof { from: u32, nc: [u8; NONCE], ns: [u8; NONCE], mac: [u8; MAC] },
    Ready { nc: [u8; NONCE], ns: [u8; NONCE], mac: [u8; MAC] },
}

fn array<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at + N)?.try_into().ok()
}

impl Handshake {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = HS_MAGIC.to_vec();
        match self {
            Handshake::Hello { client, to, nc } => {
                out.push(HS_HELLO);
                client.encode(&mut out);
                out.extend_from_slice(&to.to_le_bytes());
                out.extend_from_slice(nc);
            }
            Handshake::Welcome { server, nc, ns, mac } => {
                out.push(HS_WELCOME);
                server.encode(&mut out);
                out.extend_from_slice(nc);
                out.extend_from_slice(ns);
                out.extend_from_slice(mac);
            }
            Handshake::Proof { from, nc, ns, mac } => {
                out.push(HS_PROOF);
                out.extend_from_slice(&from.to_le_bytes());
                out.extend_from_slice(nc);
                out.extend_from_slice(ns);
                out.extend_from_slice(mac);
            }
            Handshake::Ready { nc, ns, mac } => {
                out.push(HS_READY);
                out.extend_from_slice(nc);
                out.extend_from_slice(ns);
                out.extend_from_slice(mac);
            }
        }
        out
    }

    /// Decodes a whole datagram (trailing bytes make it malformed).
    pub fn decode(b: &[u8]) -> Option<Handshake> {
        if b.get(..8)? != HS_MAGIC {
            return None;
        }
        let at = 9;
        let (h, len) = match *b.get(8)? {
            HS_HELLO => {
                let client = Side::decode(b.get(at..)?)?;
                let to = u32::from_le_bytes(array(b, at + SIDE)?);
                (Handshake::Hello { client, to, nc: array(b, at + SIDE + 4)? }, at + SIDE + 4 + NONCE)
            }
            HS_WELCOME => {
                let server = Side::decode(b.get(at..)?)?;
                let at = at + SIDE;
                let nc = array(b, at)?;
                let ns = array(b, at + NONCE)?;
                let mac = array(b, at + 2 * NONCE)?;
                (Handshake::Welcome { server, nc, ns, mac }, at + 2 * NONCE + MAC)
            }
            HS_PROOF => {
                let from = u32::from_le_bytes(array(b, at)?);
                let at = at + 4;
                let (nc, ns, mac) = (array(b, at)?, array(b, at + NONCE)?, array(b, at + 2 * NONCE)?);
                (Handshake::Proof { from, nc, ns, mac }, at + 2 * NONCE + MAC)
            }
            HS_READY => {
                let (nc, ns, mac) = (array(b, at)?, array(b, at + NONCE)?, array(b, at + 2 * NONCE)?);
                (Handshake::Ready { nc, ns, mac }, at + 2 * NONCE + MAC)
            }
            _ => return None,
        };
        (len == b.len()).then_some(h)
    }
}

/// The bytes both proofs cover: both sides' fields and both nonces.
pub fn transcript(client: &Side, server: &Side, nc: &[u8; NONCE], ns: &[u8; NONCE]) -> Vec<u8> {
    let mut t = Vec::with_capacity(2 * SIDE + 2 * NONCE);
    client.encode(&mut t);
    server.encode(&mut t);
    t.extend_from_slice(nc);
    t.extend_from_slice(ns);
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(rank: u32) -> Side {
        Side {
            rank,
            data_port: 4000 + rank as u16,
            send_port: 5000 + rank as u16,
            link_id: 0xABCD_0000 + u64::from(rank),
            window: 64,
            rcvbuf: 1 << 22,
            max_datagram: 65_000,
        }
    }

    #[test]
    fn data_round_trips_and_every_cut_or_bad_field_is_refused() {
        let h = Header { kind: KIND_DATA, from: 3, link_id: 77 };
        let mut ack = Ack::new(10, Some(5));
        ack.push_range(12, 14);
        for (flags, ack, bulk) in [(FIRST | LAST, None, None), (ACK_NOW, Some(ack), Some((9, 1 << 40)))] {
            let mut b = Vec::new();
            Data::encode_head(&h, 42, 99, flags, ack.as_ref(), bulk, &mut b);
            let payload_at = b.len();
            b.extend_from_slice(b"payload");
            assert_eq!(Header::decode(&b), Some(h));
            let d = Data::decode(&b).unwrap();
            assert_eq!((d.seq, d.stamp, d.ack, d.bulk, d.payload_at), (42, 99, ack, bulk, payload_at));
            for cut in 0..payload_at {
                assert_eq!(Data::decode(&b[..cut]), None, "cut at {cut}");
            }
        }
        let mut b = Vec::new();
        Data::encode_head(&h, 1, 1, 0x80, None, None, &mut b);
        assert_eq!(Data::decode(&b), None, "unknown flag");
        let mut b = Vec::new();
        Data::encode_head(&h, 1, 1, FIRST, None, Some((1, u64::MAX)), &mut b);
        b.push(0);
        assert_eq!(Data::decode(&b), None, "a bulk piece flagged as a fragment, past u64::MAX");
        let mut bad = Vec::new();
        h.encode(&mut bad);
        bad[2] = 9;
        assert_eq!(Header::decode(&bad), None, "another version");
    }

    #[test]
    fn a_peeked_head_decodes_as_its_whole_datagram_does() {
        let h = Header { kind: KIND_DATA, from: 1, link_id: 5 };
        let mut b = Vec::new();
        Data::encode_head(&h, 7, 3, 0, None, Some((4, 1000)), &mut b);
        let at = b.len();
        b.resize(at + 500, 0);
        let whole = Data::decode(&b).unwrap();
        assert_eq!(Data::decode_head(&b[..at], b.len()), Some(whole));
        assert_eq!(Data::decode_head(&b[..at], at - 1), None, "a total shorter than the head");
        assert_eq!(Data::decode_head(&b[..at - 1], b.len()), None, "a head cut inside the fields");
        let mut far = Vec::new();
        Data::encode_head(&h, 7, 3, 0, None, Some((4, u64::MAX - 10)), &mut far);
        assert_eq!(Data::decode_head(&far, far.len() + 11), None, "its end past u64::MAX");
        assert!(Data::decode_head(&far, far.len() + 10).is_some());
    }

    #[test]
    fn handshakes_round_trip_and_cut_or_padded_ones_are_refused() {
        let (nc, ns, mac) = ([1; NONCE], [2; NONCE], [3; MAC]);
        for m in [
            Handshake::Hello { client: side(1), to: 0, nc },
            Handshake::Welcome { server: side(0), nc, ns, mac },
            Handshake::Proof { from: 1, nc, ns, mac },
            Handshake::Ready { nc, ns, mac },
        ] {
            let b = m.encode();
            assert_eq!(Handshake::decode(&b), Some(m));
            for cut in 0..b.len() {
                assert_eq!(Handshake::decode(&b[..cut]), None);
            }
            let mut long = b.clone();
            long.push(0);
            assert_eq!(Handshake::decode(&long), None);
        }
        assert_eq!(Handshake::decode(b"GET / HTTP/1.1\r\n"), None);
    }
}
