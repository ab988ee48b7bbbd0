//! The packet format: a version byte, then chunks, each a kind byte and its fields: a message's
//! header (`msg`) in fixed little-endian words, every other number in LEB128.
//!
//! ```text
//! packet := VERSION chunk*
//! msg    := flags:u8 session:u32 tag:u64 seq:u32   (17 bytes, little-endian)
//! DATA   := 1 msg len:u32 [cookie if SYNC] payload[len]
//! RDV    := 2 msg total cookie hlen header[hlen] [namelen name klen key if READ]
//!           (header: a copy of the message's first bytes, for peeking; if READ, the sender
//!           exposed all `total` bytes through its rail `name`, which gave the opaque `key`)
//! RTR    := 3 cookie recv_cookie accepted npieces (namelen name offset len)*
//! FIN    := 4 cookie            (the receiver has read everything it wanted: send complete)
//! ACK    := 5 cookie            (a synchronous eager send was matched)
//! CREDIT := 6 bytes slots       (unexpected-message credit returned to the sender)
//! NAK    := 7 cookie            (the message was dropped unmatched, its session revoked: the
//!                                send that waited for an answer fails)
//! AM     := 8 handler hlen len header[hlen] payload[len]
//!           (an active message: the receiver runs handler `handler` (u16) on it; `header`
//!           at most MAX_AM_HEADER bytes; the payload follows as a separate segment, like DATA's)
//! RTW    := 9 cookie recv_cookie accepted written namelen name klen key
//!           (ready to be written: the receiver exposed the first `written` bytes of its buffer
//!           through its rail `name`, which gave `key`; the sender writes them there and answers
//!           WRITTEN, or sends them as bulk data to `recv_cookie` if it cannot. The receiver
//!           reads bytes `written..accepted` itself, if any, and answers FIN)
//! WRITTEN:= 10 recv_cookie      (the sender wrote what the RTW asked)
//! SEQ    := 11 n                (first chunk of a packet on a gate with rail failover: its
//!                                number; a packet that arrives twice is dropped at this chunk)
//! GACK   := 12 ack              (a gate's acknowledgement of the packets it received: the
//!                                `reliable::Ack` encoding; on gates with rail failover)
//! PING   := 13                  (a packet of its own: is this rail alive? answered by PONG on
//! PONG   := 14                   the rail it came on; see `gate/failover.rs`)
//! RAILDOWN := 15 namelen name   (this side found its rail `name` to the peer failed: the peer
//!                                stops using it too, without waiting for its own detection)
//! ```
//! A small message costs one packet: 23 bytes of headers, then its data. Its header is fixed
//! width because every message's is written and read: one bounds check and four loads (varints
//! cost a loop per field: about 90 instructions to encode and 150 to decode a DATA header,
//! counted by callgrind, against a few bytes saved on the wire). The decoder treats every byte as
//! hostile: lengths are checked against what remains, counts are capped, varints may not
//! overflow; it returns an error and never panics or reads out of bounds.

use crate::drivers::MAX_KEY;
use crate::leb128;
use std::fmt;

pub const VERSION: u8 = 0xA2;

/// A DATA or RDV chunk asks for an ACK when matched (synchronous send).
pub const FLAG_SYNC: u8 = 1;
/// An RDV chunk carries the sender's memory for a direct read.
pub const FLAG_READ: u8 = 2;

/// Bytes of user header an RDV may carry for the receiver to peek at.
pub const MAX_RDV_HEADER: usize = 1024;
/// Pieces in an RTR (rails × splits).
pub const MAX_PIECES: usize = 16;
/// Longest rail name in an RTR.
pub const MAX_RAIL_NAME: usize = 64;
/// Bytes of handler header an AM may carry (the payload is bounded by the eager limit).
pub const MAX_AM_HEADER: usize = 1024;
/// An upper bound of a chunk header (without payload, user header or segments), for sizing.
pub const MAX_HEADER: usize = 2 + 5 + 10 + 5 + 10 + 10;
/// A message header's bytes after its chunk's kind byte (`msg` above).
const MSG_FIELDS: usize = 17;
/// A DATA chunk's fixed bytes after its kind byte: `msg` and the payload length.
const DATA_FIELDS: usize = MSG_FIELDS + 4;
/// The longest payload a DATA chunk carries (its length is a `u32`).
pub const MAX_DATA: usize = u32::MAX as usize;

const DATA: u8 = 1;
const RDV: u8 = 2;
const RTR: u8 = 3;
const FIN: u8 = 4;
const ACK: u8 = 5;
const CREDIT: u8 = 6;
const NAK: u8 = 7;
const AM: u8 = 8;
const RTW: u8 = 9;
const WRITTEN: u8 = 10;
const SEQ: u8 = 11;
const GACK: u8 = 12;
const PING: u8 = 13;
const PONG: u8 = 14;
const RAIL_DOWN: u8 = 15;

/// The heartbeat packets of rail failover, whole.
pub const PING_PACKET: [u8; 2] = [VERSION, PING];
pub const PONG_PACKET: [u8; 2] = [VERSION, PONG];

/// Where a message belongs: session, tag and its sequence number on (gate, session).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsgHeader {
    pub flags: u8,
    pub session: u32,
    pub tag: u64,
    pub seq: u32,
}

/// A piece of the rendezvous data: which rail carries which bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece<'a> {
    pub rail: &'a [u8],
    pub offset: u64,
    pub len: u64,
}

/// One decoded chunk (borrowing the packet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Chunk<'a> {
    Data {
        h: MsgHeader,
        cookie: u64,
        payload: &'a [u8],
    },
    Rdv {
        h: MsgHeader,
        total: u64,
        cookie: u64,
        header: &'a [u8],
        remote: Option<RemoteMem<'a>>,
    },
    Rtr {
        cookie: u64,
        recv_cookie: u64,
        accepted: u64,
        pieces: Vec<Piece<'a>>,
    },
    Fin {
        cookie: u64,
    },
    Ack {
        cookie: u64,
    },
    Credit {
        bytes: u64,
        slots: u64,
    },
    Nak {
        cookie: u64,
    },
    Am {
        handler: u16,
        header: &'a [u8],
        payload: &'a [u8],
    },
    Rtw {
        cookie: u64,
        recv_cookie: u64,
        accepted: u64,
        written: u64,
        remote: RemoteMem<'a>,
    },
    Written {
        recv_cookie: u64,
    },
    Seq {
        n: u64,
    },
    /// A `reliable::Ack`, checked here, kept encoded (an `Ack` is large: every chunk would be).
    GateAck(&'a [u8]),
    /// A heartbeat (its own packet: see [`PING_PACKET`]); `true` for a PING.
    Heartbeat(bool),
    RailDown {
        rail: &'a [u8],
    },
}

/// The sender's memory announced in an RDV: the rail that exposed it and the key it gave (opaque
/// here: that rail's driver checks it when the receiver reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteMem<'a> {
    pub rail: &'a [u8],
    pub key: &'a [u8],
}

/// What is wrong with a packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    pub at: usize,
    pub what: &'static str,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed packet at byte {}: {}", self.at, self.what)
    }
}

impl std::error::Error for DecodeError {}

/// The number of a packet on a gate with rail failover (its first chunk, SEQ), if it has one
/// (a malformed packet has none: its decoding reports why).
pub fn packet_number(packet: &[u8]) -> Option<u64> {
    match Decoder::new(packet).ok()?.next()? {
        Ok(Chunk::Seq { n }) => Some(n),
        _ => None,
    }
}

/// Iterates over the chunks of a packet.
pub struct Decoder<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Decoder<'a> {
    /// Checks the version byte.
    pub fn new(packet: &'a [u8]) -> Result<Decoder<'a>, DecodeError> {
        match packet.first() {
            Some(&VERSION) => Ok(Decoder { b: packet, at: 1 }),
            Some(_) => Err(DecodeError { at: 0, what: "unknown packet version" }),
            None => Err(DecodeError { at: 0, what: "empty packet" }),
        }
    }

    /// The chunks of a packet's remainder (after its version byte and whole chunks).
    pub fn rest(chunks: &'a [u8]) -> Decoder<'a> {
        Decoder { b: chunks, at: 0 }
    }

    #[inline]
    fn err<T>(&self, what: &'static str) -> Result<T, DecodeError> {
        Err(DecodeError { at: self.at, what })
    }

    #[inline]
    fn byte(&mut self) -> Result<u8, DecodeError> {
        let Some(&v) = self.b.get(self.at) else { return self.err("truncated") };
        self.at += 1;
        Ok(v)
    }

    #[inline]
    fn varint(&mut self) -> Result<u64, DecodeError> {
        match leb128::get(self.b, &mut self.at) {
            Ok(v) => Ok(v),
            Err(leb128::Malformed::CutShort) => self.err("truncated"),
            Err(leb128::Malformed::Overflow) => self.err("varint overflows 64 bits"),
        }
    }

    #[inline]
    fn bytes(&mut self, n: u64) -> Result<&'a [u8], DecodeError> {
        let rest = (self.b.len() - self.at) as u64;
        if n > rest {
            return self.err("length beyond the end of the packet");
        }
        let s = &self.b[self.at..self.at + n as usize];
        self.at += n as usize;
        Ok(s)
    }

    /// The next `N` bytes (one bounds check), moved past.
    #[inline(always)]
    fn fixed<const N: usize>(&mut self) -> Result<&'a [u8; N], DecodeError> {
        let b: &'a [u8] = self.b;
        match b.get(self.at..).and_then(<[u8]>::first_chunk::<N>) {
            Some(f) => {
                self.at += N;
                Ok(f)
            }
            None => self.err("truncated"),
        }
    }

    /// A message header from its fixed fields (the first [`MSG_FIELDS`] bytes of `f`).
    #[inline(always)]
    fn msg_fields(&self, f: &[u8]) -> Result<MsgHeader, DecodeError> {
        let flags = f[0];
        if flags & !(FLAG_SYNC | FLAG_READ) != 0 {
            return self.err("unknown flags");
        }
        let word = |at: usize| u32::from_le_bytes([f[at], f[at + 1], f[at + 2], f[at + 3]]);
        let tag = u64::from(word(5)) | u64::from(word(9)) << 32;
        Ok(MsgHeader { flags, session: word(1), tag, seq: word(13) })
    }

    #[inline]
    fn msg_header(&mut self) -> Result<MsgHeader, DecodeError> {
        let f = self.fixed::<MSG_FIELDS>()?;
        self.msg_fields(f)
    }

    /// A DATA chunk's fields after its kind byte: header, payload length, cookie (0 unless
    /// synchronous).
    #[inline]
    fn data_header(&mut self) -> Result<(MsgHeader, u64, u64), DecodeError> {
        let f = self.fixed::<DATA_FIELDS>()?;
        let h = self.msg_fields(f)?;
        if h.flags & FLAG_READ != 0 {
            return self.err("READ flag on a DATA chunk");
        }
        let len = u32::from_le_bytes([f[17], f[18], f[19], f[20]]);
        let cookie = if h.flags & FLAG_SYNC != 0 { self.varint()? } else { 0 };
        Ok((h, u64::from(len), cookie))
    }

    /// A rail name and a memory key (RDV with READ, RTW).
    fn remote_mem(&mut self) -> Result<RemoteMem<'a>, DecodeError> {
        let n = self.varint()?;
        if n == 0 || n > MAX_RAIL_NAME as u64 {
            return self.err("bad rail name length");
        }
        let rail = self.bytes(n)?;
        let n = self.varint()?;
        if n == 0 || n > MAX_KEY as u64 {
            return self.err("bad memory key length");
        }
        Ok(RemoteMem { rail, key: self.bytes(n)? })
    }

    #[inline]
    fn chunk(&mut self) -> Result<Chunk<'a>, DecodeError> {
        match self.byte()? {
            DATA => {
                let (h, len, cookie) = self.data_header()?;
                Ok(Chunk::Data { h, cookie, payload: self.bytes(len)? })
            }
            RDV => {
                let h = self.msg_header()?;
                let total = self.varint()?;
                let cookie = self.varint()?;
                let hlen = self.varint()?;
                if hlen > MAX_RDV_HEADER as u64 || hlen > total {
                    return self.err("rendezvous header too long");
                }
                let header = self.bytes(hlen)?;
                let remote = if h.flags & FLAG_READ != 0 { Some(self.remote_mem()?) } else { None };
                Ok(Chunk::Rdv { h, total, cookie, header, remote })
            }
            RTR => {
                let cookie = self.varint()?;
                let recv_cookie = self.varint()?;
                let accepted = self.varint()?;
                let n = self.varint()?;
                if n > MAX_PIECES as u64 {
                    return self.err("too many pieces");
                }
                let mut pieces = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    let nl = self.varint()?;
                    if nl > MAX_RAIL_NAME as u64 {
                        return self.err("rail name too long");
                    }
                    let rail = self.bytes(nl)?;
                    let (offset, len) = (self.varint()?, self.varint()?);
                    if offset.checked_add(len).is_none_or(|end| end > accepted) {
                        return self.err("piece beyond the accepted length");
                    }
                    pieces.push(Piece { rail, offset, len });
                }
                Ok(Chunk::Rtr { cookie, recv_cookie, accepted, pieces })
            }
            RTW => {
                let (cookie, recv_cookie, accepted) = (self.varint()?, self.varint()?, self.varint()?);
                let written = self.varint()?;
                if written == 0 || written > accepted {
                    return self.err("bytes to write outside the accepted length");
                }
                Ok(Chunk::Rtw { cookie, recv_cookie, accepted, written, remote: self.remote_mem()? })
            }
            WRITTEN => Ok(Chunk::Written { recv_cookie: self.varint()? }),
            SEQ => Ok(Chunk::Seq { n: self.varint()? }),
            GACK => match crate::reliable::Ack::decode(&self.b[self.at..]) {
                Some((_, used)) => Ok(Chunk::GateAck(self.bytes(used as u64)?)),
                None => self.err("malformed gate acknowledgement"),
            },
            PING => Ok(Chunk::Heartbeat(true)),
            RAIL_DOWN => {
                let nl = self.varint()?;
                if nl > MAX_RAIL_NAME as u64 {
                    return self.err("rail name too long");
                }
                Ok(Chunk::RailDown { rail: self.bytes(nl)? })
            }
            PONG => Ok(Chunk::Heartbeat(false)),
            FIN => Ok(Chunk::Fin { cookie: self.varint()? }),
            ACK => Ok(Chunk::Ack { cookie: self.varint()? }),
            CREDIT => Ok(Chunk::Credit { bytes: self.varint()?, slots: self.varint()? }),
            NAK => Ok(Chunk::Nak { cookie: self.varint()? }),
            AM => {
                let handler = self.varint()?;
                let handler = u16::try_from(handler).or_else(|_| self.err("handler id exceeds 16 bits"))?;
                let hlen = self.varint()?;
                if hlen > MAX_AM_HEADER as u64 {
                    return self.err("active message header too long");
                }
                let len = self.varint()?;
                let header = self.bytes(hlen)?;
                Ok(Chunk::Am { handler, header, payload: self.bytes(len)? })
            }
            _ => {
                self.at -= 1;
                self.err("unknown chunk kind")
            }
        }
    }
}

/// A packet of the latency path's shape (what [`Small`] writes): a DATA chunk without flags,
/// its payload, then nothing or one CREDIT chunk. Returns its header, payload and credit,
/// or `None` for any other shape or a malformed one:
/// the general decoder then reads it, and reports what is wrong. Most packets of small
/// messages have this shape; decoding it at once spares the general decoder's chunk enum (a
/// ping-pong receive: about 1,040 → 870 instructions per packet, callgrind).
#[inline]
pub fn small_packet(b: &[u8]) -> Option<SmallPacket<'_>> {
    let f: &[u8; SMALL_HEAD] = b.first_chunk()?;
    if f[0] != VERSION || f[1] != DATA || f[2] != 0 {
        return None;
    }
    let word = |at: usize| u32::from_le_bytes([f[at], f[at + 1], f[at + 2], f[at + 3]]);
    let h = MsgHeader {
        flags: 0,
        session: word(3),
        tag: u64::from(word(7)) | u64::from(word(11)) << 32,
        seq: word(15),
    };
    let rest = &b[SMALL_HEAD..];
    let len = word(19) as usize;
    if len > rest.len() {
        return None;
    }
    let (payload, tail) = rest.split_at(len);
    let credit = match tail {
        [] => None,
        [CREDIT, numbers @ ..] => {
            let mut at = 0;
            let bytes = leb128::get(numbers, &mut at).ok()?;
            let slots = leb128::get(numbers, &mut at).ok()?;
            if at != numbers.len() {
                return None;
            }
            Some((bytes, slots))
        }
        _ => return None,
    };
    Some(SmallPacket { h, payload, credit })
}

/// What [`small_packet`] decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmallPacket<'a> {
    pub h: MsgHeader,
    pub payload: &'a [u8],
    /// The CREDIT chunk's (bytes, slots), if the packet has one.
    pub credit: Option<(u64, u64)>,
}

/// The first chunk of a window: the first bytes of the rest of a packet lent by its driver
/// (`Sink::packet_lent`), which goes on past the window.
#[derive(Debug, PartialEq, Eq)]
pub enum Windowed<'a> {
    /// A whole chunk within the window, `used` bytes long.
    Chunk(Chunk<'a>, usize),
    /// A DATA chunk whose payload goes past the window: its header is `used` bytes long and
    /// `len` payload bytes follow it (the caller checks them against the packet's length).
    DataPast { h: MsgHeader, cookie: u64, used: usize, len: u64 },
    /// Neither: the chunk's header goes past the window, or the window is malformed (the
    /// caller decodes the whole rest, which tells the two apart).
    Cut,
}

/// Decodes the first chunk of `window` (see [`Windowed`]).
#[inline]
pub fn first_in_window(window: &[u8]) -> Windowed<'_> {
    let mut d = Decoder::rest(window);
    if window.first() == Some(&DATA) {
        d.at = 1;
        let Ok((h, len, cookie)) = d.data_header() else { return Windowed::Cut };
        let used = d.at;
        return match d.bytes(len) {
            Ok(payload) => Windowed::Chunk(Chunk::Data { h, cookie, payload }, d.at),
            Err(_) => Windowed::DataPast { h, cookie, used, len },
        };
    }
    match d.chunk() {
        Ok(c) => Windowed::Chunk(c, d.at),
        Err(_) => Windowed::Cut,
    }
}

impl<'a> Iterator for Decoder<'a> {
    type Item = Result<Chunk<'a>, DecodeError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.b.len() {
            return None;
        }
        let r = self.chunk();
        if r.is_err() {
            self.at = self.b.len(); // stop after the first error
        }
        Some(r)
    }
}

// ------------------------------------------------------------------ encoding

/// Appends encoded chunk headers to a buffer (payloads go separately, as iovec segments): a
/// vector, or for the latency path's headers a [`Small`] one.
pub struct Encoder<'b, O: Out = Vec<u8>>(pub &'b mut O);

/// Where an [`Encoder`] writes.
pub trait Out {
    fn byte(&mut self, b: u8);

    fn fixed<const N: usize>(&mut self, b: &[u8; N]);

    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.byte(v as u8 | 0x80);
            v >>= 7;
        }
        self.byte(v as u8);
    }
}

impl Out for Vec<u8> {
    fn byte(&mut self, b: u8) {
        self.push(b);
    }

    fn fixed<const N: usize>(&mut self, b: &[u8; N]) {
        self.extend_from_slice(b);
    }

    fn varint(&mut self, v: u64) {
        leb128::put(self, v);
    }
}

/// The kind byte and the fixed fields of a message header, then zeros up to `N` bytes.
#[inline(always)]
fn msg_fields<const N: usize>(kind: u8, h: &MsgHeader) -> [u8; N] {
    let mut f = [0u8; N];
    f[0] = kind;
    f[1] = h.flags;
    f[2..6].copy_from_slice(&h.session.to_le_bytes());
    f[6..14].copy_from_slice(&h.tag.to_le_bytes());
    f[14..18].copy_from_slice(&h.seq.to_le_bytes());
    f
}

/// A DATA chunk's kind byte and fixed fields (no cookie).
#[inline(always)]
fn data_fields(h: &MsgHeader, len: usize) -> [u8; 1 + DATA_FIELDS] {
    debug_assert!(len <= MAX_DATA, "a DATA payload of {len} bytes");
    let mut f = msg_fields::<{ 1 + DATA_FIELDS }>(DATA, h);
    f[18..].copy_from_slice(&(len as u32).to_le_bytes());
    f
}

/// The bytes before a small packet's payload: the version and a DATA chunk's fixed fields.
const SMALL_HEAD: usize = 2 + DATA_FIELDS;

/// Payloads up to this size go inside a [`Small`] packet (one slice for the link to write).
pub const SMALL_INLINE: usize = 64;

/// The latency path's packets, written by an [`Encoder`] into one fixed buffer without a
/// vector's capacity checks: the head (version and the DATA header of a message without
/// cookie), then the payload if it is small ([`Small::set_inline`]; else it goes between head
/// and tail as a slice of its own: [`Small::set`]), then the tail (the CREDIT chunk, empty when
/// nothing is owed).
pub struct Small {
    /// Head [`SMALL_HEAD`] bytes (no cookie), payload up to [`SMALL_INLINE`], tail at most 21
    /// (1 + 10 + 10): 108 bytes at most.
    buf: [u8; 128],
    /// Where the payload ends (after the head when it is not inside).
    body: usize,
    len: usize,
}

impl Default for Small {
    fn default() -> Small {
        Small::new()
    }
}

impl Small {
    /// Room for a packet (see [`Small::set`]).
    pub const fn new() -> Small {
        Small { buf: [0; 128], body: SMALL_HEAD, len: SMALL_HEAD }
    }

    /// Writes the headers of a packet holding the DATA chunk of `h` (flags 0: no cookie) with
    /// `len` payload bytes, to go between [`Small::head`] and [`Small::tail`], then the CREDIT
    /// chunk of `credit` (bytes, slots) unless both are 0. In place: a `Small` returned by
    /// value costs a copy of its bytes on the latency path.
    #[inline(always)]
    pub fn set(&mut self, h: &MsgHeader, len: usize, credit: (u64, u64)) {
        self.start(h, len);
        self.body = SMALL_HEAD;
        self.finish(credit);
    }

    /// [`Small::set`] with the payload inside (at most [`SMALL_INLINE`] bytes): the whole
    /// packet is [`Small::packet`].
    #[inline(always)]
    pub fn set_inline(&mut self, h: &MsgHeader, payload: &[u8], credit: (u64, u64)) {
        let n = payload.len();
        assert!(n <= SMALL_INLINE, "an inline payload of {n} bytes");
        self.start(h, n);
        // SAFETY: `n` bytes fit after the head (checked above: 23 + 64 < 128), and the payload
        // is another object than this buffer (`&mut self`).
        unsafe { crate::small_copy::copy(payload.as_ptr(), self.buf.as_mut_ptr().add(SMALL_HEAD), n) };
        self.body = SMALL_HEAD + n;
        self.finish(credit);
    }

    #[inline(always)]
    fn start(&mut self, h: &MsgHeader, len: usize) {
        debug_assert_eq!(h.flags & FLAG_SYNC, 0, "a synchronous message carries a cookie");
        self.buf[0] = VERSION;
        self.buf[1..SMALL_HEAD].copy_from_slice(&data_fields(h, len));
    }

    #[inline(always)]
    fn finish(&mut self, credit: (u64, u64)) {
        self.len = self.body;
        if credit != (0, 0) {
            Encoder(self).credit(credit.0, credit.1);
        }
    }

    /// What goes before the payload ([`Small::set`]).
    pub fn head(&self) -> &[u8] {
        &self.buf[..SMALL_HEAD]
    }

    /// What goes after it (empty without credit; [`Small::set`]).
    pub fn tail(&self) -> &[u8] {
        &self.buf[self.body..self.len]
    }

    /// The whole packet ([`Small::set_inline`]).
    pub fn packet(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Out for Small {
    #[inline(always)]
    fn byte(&mut self, b: u8) {
        // Within bounds by construction (108 bytes at most); the mask spares a bounds check.
        self.buf[self.len & 127] = b;
        self.len += 1;
    }

    #[inline(always)]
    fn fixed<const N: usize>(&mut self, b: &[u8; N]) {
        self.buf[self.len..self.len + N].copy_from_slice(b);
        self.len += N;
    }
}

impl<O: Out> Encoder<'_, O> {
    #[inline]
    pub fn varint(&mut self, v: u64) {
        self.0.varint(v);
    }

    /// A DATA header; `len` payload bytes must follow it in the packet. `len` is at most
    /// [`MAX_DATA`] (gates cap their eager limit there).
    #[inline]
    pub fn data(&mut self, h: &MsgHeader, len: usize, cookie: u64) {
        self.0.fixed(&data_fields(h, len));
        if h.flags & FLAG_SYNC != 0 {
            self.varint(cookie);
        }
    }

    #[inline]
    pub fn credit(&mut self, bytes: u64, slots: u64) {
        self.0.byte(CREDIT);
        self.varint(bytes);
        self.varint(slots);
    }
}

impl Encoder<'_> {
    /// An RDV chunk (complete: its user header is copied in). `remote`: the rail and key of the
    /// sender's exposed memory when `h.flags` has [`FLAG_READ`].
    pub fn rdv(
        &mut self,
        h: &MsgHeader,
        total: u64,
        cookie: u64,
        header: &[u8],
        remote: Option<RemoteMem<'_>>,
    ) {
        self.0.fixed(&msg_fields::<{ 1 + MSG_FIELDS }>(RDV, h));
        self.varint(total);
        self.varint(cookie);
        self.varint(header.len() as u64);
        self.0.extend_from_slice(header);
        if let Some(r) = remote {
            self.remote_mem(r);
        }
    }

    fn remote_mem(&mut self, r: RemoteMem<'_>) {
        self.varint(r.rail.len() as u64);
        self.0.extend_from_slice(r.rail);
        self.varint(r.key.len() as u64);
        self.0.extend_from_slice(r.key);
    }

    /// An RTW chunk: `remote` names the first `written` bytes of the receive buffer, exposed
    /// for writing.
    pub fn rtw(&mut self, cookie: u64, recv_cookie: u64, accepted: u64, written: u64, remote: RemoteMem<'_>) {
        self.0.push(RTW);
        self.varint(cookie);
        self.varint(recv_cookie);
        self.varint(accepted);
        self.varint(written);
        self.remote_mem(remote);
    }

    pub fn written(&mut self, recv_cookie: u64) {
        self.0.push(WRITTEN);
        self.varint(recv_cookie);
    }

    pub fn rtr(&mut self, cookie: u64, recv_cookie: u64, accepted: u64, pieces: &[Piece<'_>]) {
        self.0.push(RTR);
        self.varint(cookie);
        self.varint(recv_cookie);
        self.varint(accepted);
        self.varint(pieces.len() as u64);
        for p in pieces {
            self.varint(p.rail.len() as u64);
            self.0.extend_from_slice(p.rail);
            self.varint(p.offset);
            self.varint(p.len);
        }
    }

    pub fn seq(&mut self, n: u64) {
        self.0.push(SEQ);
        self.varint(n);
    }

    pub fn rail_down(&mut self, rail: &[u8]) {
        self.0.push(RAIL_DOWN);
        self.varint(rail.len() as u64);
        self.0.extend_from_slice(rail);
    }

    pub fn gate_ack(&mut self, ack: &crate::reliable::Ack) {
        self.0.push(GACK);
        ack.encode(self.0);
    }

    pub fn fin(&mut self, cookie: u64) {
        self.0.push(FIN);
        self.varint(cookie);
    }

    pub fn ack(&mut self, cookie: u64) {
        self.0.push(ACK);
        self.varint(cookie);
    }

    pub fn nak(&mut self, cookie: u64) {
        self.0.push(NAK);
        self.varint(cookie);
    }

    /// An AM header with its handler header copied in; `len` payload bytes must follow it.
    /// `header` is at most [`MAX_AM_HEADER`] bytes (the decoder rejects longer ones).
    pub fn am(&mut self, handler: u16, header: &[u8], len: usize) {
        debug_assert!(header.len() <= MAX_AM_HEADER);
        self.0.push(AM);
        self.varint(u64::from(handler));
        self.varint(header.len() as u64);
        self.varint(len as u64);
        self.0.extend_from_slice(header);
    }
}

/// Bytes `v` takes as a varint.
pub fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(build: impl FnOnce(&mut Encoder<'_>)) -> Vec<u8> {
        let mut b = vec![VERSION];
        build(&mut Encoder(&mut b));
        b
    }

    #[test]
    fn varints_round_trip_and_their_length_is_known() {
        for v in [0, 1, 127, 128, 300, u32::MAX as u64, u64::MAX - 1, u64::MAX] {
            let mut b = vec![VERSION, 6];
            Encoder(&mut b).varint(v);
            assert_eq!(b.len() - 2, varint_len(v), "{v}");
            Encoder(&mut b).varint(0);
            let c = Decoder::new(&b).unwrap().next().unwrap().unwrap();
            assert_eq!(c, Chunk::Credit { bytes: v, slots: 0 });
        }
    }

    #[test]
    fn every_chunk_round_trips() {
        let h = MsgHeader { flags: FLAG_SYNC, session: 7, tag: u64::MAX, seq: 99_999 };
        let hr = MsgHeader { flags: FLAG_READ, session: 0, tag: 3, seq: 0 };
        let key = [0u8, 2, 0x80, 0x20, 0xa0, 0x1f, 0x80, 0x20, 96];
        let remote = RemoteMem { rail: b"shm", key: &key };
        let mut b = packet(|e| {
            e.data(&h, 3, 42);
        });
        b.extend_from_slice(b"abc");
        Encoder(&mut b).rdv(&hr, 4096, 9, b"hdr!", Some(remote));
        Encoder(&mut b).rtr(
            9,
            10,
            100,
            &[Piece { rail: b"shm", offset: 0, len: 60 }, Piece { rail: b"tcp:eth1", offset: 60, len: 40 }],
        );
        Encoder(&mut b).fin(5);
        Encoder(&mut b).ack(6);
        Encoder(&mut b).credit(1 << 40, 3);
        Encoder(&mut b).nak(7);
        Encoder(&mut b).am(u16::MAX, b"put", 2);
        b.extend_from_slice(b"xy");
        Encoder(&mut b).rtw(11, 12, 1 << 20, 1 << 19, remote);
        Encoder(&mut b).written(12);
        Encoder(&mut b).seq(1 << 33);
        let mut ack = crate::reliable::Ack::new(40, None);
        ack.push_range(42, 45);
        Encoder(&mut b).gate_ack(&ack);
        let mut ack_bytes = Vec::new();
        ack.encode(&mut ack_bytes);
        b.extend_from_slice(&PING_PACKET[1..]);
        b.extend_from_slice(&PONG_PACKET[1..]);
        Encoder(&mut b).rail_down(b"tcp:rail1");
        let got: Vec<_> = Decoder::new(&b).unwrap().map(Result::unwrap).collect();
        assert_eq!(got[0], Chunk::Data { h, cookie: 42, payload: b"abc" });
        match &got[1] {
            Chunk::Rdv { h: g, total: 4096, cookie: 9, header, remote: Some(r) } => {
                assert_eq!((g, *header), (&hr, &b"hdr!"[..]));
                assert_eq!(*r, remote);
            }
            c => panic!("{c:?}"),
        }
        assert!(
            matches!(&got[2], Chunk::Rtr { cookie: 9, recv_cookie: 10, accepted: 100, pieces } if pieces.len() == 2 && pieces[1].rail == b"tcp:eth1")
        );
        assert_eq!(
            got[3..],
            [
                Chunk::Fin { cookie: 5 },
                Chunk::Ack { cookie: 6 },
                Chunk::Credit { bytes: 1 << 40, slots: 3 },
                Chunk::Nak { cookie: 7 },
                Chunk::Am { handler: u16::MAX, header: b"put", payload: b"xy" },
                Chunk::Rtw { cookie: 11, recv_cookie: 12, accepted: 1 << 20, written: 1 << 19, remote },
                Chunk::Written { recv_cookie: 12 },
                Chunk::Seq { n: 1 << 33 },
                Chunk::GateAck(&ack_bytes),
                Chunk::Heartbeat(true),
                Chunk::Heartbeat(false),
                Chunk::RailDown { rail: b"tcp:rail1" },
            ]
        );
    }

    #[test]
    fn the_latency_paths_headers_are_the_general_encoders() {
        let vals = [0u64, 1, 127, 128, 300, 16_383, 16_384, u32::MAX as u64, u64::MAX];
        for &v in &vals {
            let h = MsgHeader { flags: 0, session: v as u32, tag: v, seq: (v >> 3) as u32 };
            let len = v.min(MAX_DATA as u64) as usize;
            let mut general = vec![VERSION];
            Encoder(&mut general).data(&h, len, 0);
            let mut credit = Vec::new();
            Encoder(&mut credit).credit(v, v >> 9);
            let mut small = Small::new();
            small.set(&h, len, (v, v >> 9));
            assert_eq!(small.head(), &general[..], "{v}");
            assert_eq!(small.tail(), if v == 0 { &[][..] } else { &credit[..] }, "credit {v}");
            let payload: Vec<u8> = (0..(v as usize).min(SMALL_INLINE)).map(|i| i as u8).collect();
            let mut whole = vec![VERSION];
            Encoder(&mut whole).data(&h, payload.len(), 0);
            whole.extend_from_slice(&payload);
            if v != 0 {
                whole.extend_from_slice(&credit);
            }
            small.set_inline(&h, &payload, (v, v >> 9));
            assert_eq!(small.packet(), &whole[..], "inline {v}");
        }
    }

    #[test]
    fn a_small_message_header_is_fixed_width_little_endian() {
        let b = packet(|e| {
            e.data(&MsgHeader { flags: 0, session: 0x0403_0201, tag: 5 << 32 | 6, seq: 10 }, 8, 0)
        });
        let want = [VERSION, DATA, 0, 1, 2, 3, 4, 6, 0, 0, 0, 5, 0, 0, 0, 10, 0, 0, 0, 8, 0, 0, 0];
        assert_eq!(b, want);
    }

    /// A DATA chunk of session 1, tag 1, sequence number 1 with `flags` and payload length
    /// `len` (the payload not included), then `rest`.
    fn data(flags: u8, len: u32, rest: &[u8]) -> Vec<u8> {
        let mut b = vec![VERSION, DATA, flags, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0];
        b.extend_from_slice(&len.to_le_bytes());
        b.extend_from_slice(rest);
        b
    }

    /// An RDV chunk of session 1, tag 1, sequence number 1 with `flags`, then `rest`.
    fn rdv(flags: u8, rest: &[u8]) -> Vec<u8> {
        let mut b = vec![VERSION, RDV, flags, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0];
        b.extend_from_slice(rest);
        b
    }

    #[test]
    fn hostile_packets_are_errors() {
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (vec![], "empty packet"),
            (vec![0x42], "unknown packet version"),
            (vec![VERSION, 99], "unknown chunk kind"),
            (data(0, 200, &[]), "length beyond the end of the packet"),
            (data(0, 1, &[]), "length beyond the end of the packet"),
            (data(0x80, 0, &[]), "unknown flags"),
            (data(FLAG_READ, 0, &[]), "READ flag on a DATA chunk"),
            (data(FLAG_SYNC, 0, &[]), "truncated"),
            (data(0, 0, &[])[..20].to_vec(), "truncated"),
            (vec![VERSION, DATA], "truncated"),
            (
                vec![VERSION, CREDIT, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0],
                "varint overflows 64 bits",
            ),
            (vec![VERSION, RTR, 1, 1, 10, 17], "too many pieces"),
            (vec![VERSION, RTW, 1, 1, 10, 10, 0], "bad rail name length"),
            (vec![VERSION, RTW, 1, 1, 10, 10, 3, b's', b'h', b'm', 0], "bad memory key length"),
            (
                vec![VERSION, RTW, 1, 1, 10, 4, 3, b's', b'h', b'm', 4, 1],
                "length beyond the end of the packet",
            ),
            (
                vec![VERSION, RTW, 1, 1, 10, 11, 3, b's', b'h', b'm', 1, 1],
                "bytes to write outside the accepted length",
            ),
            (
                vec![VERSION, RTW, 1, 1, 10, 0, 3, b's', b'h', b'm', 1, 1],
                "bytes to write outside the accepted length",
            ),
            (vec![VERSION, WRITTEN], "truncated"),
            (vec![VERSION, GACK, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], "malformed gate acknowledgement"),
            (vec![VERSION, RTR, 1, 1, 10, 1, 3, b's', b'h', b'm', 5, 6], "piece beyond the accepted length"),
            (rdv(0, &[10, 1, 11]), "rendezvous header too long"),
            (rdv(0, &[10, 1]), "truncated"),
            (rdv(0x40, &[10, 1, 0]), "unknown flags"),
            (rdv(0, &[])[..10].to_vec(), "truncated"),
            (rdv(FLAG_READ, &[10, 1, 0, 0]), "bad rail name length"),
            (rdv(FLAG_READ, &[10, 1, 0, 65]), "bad rail name length"),
            (rdv(FLAG_READ, &[10, 1, 0, 1, b's', 0]), "bad memory key length"),
            (rdv(FLAG_READ, &[10, 1, 0, 1, b's', 0x95, 0x0a]), "bad memory key length"),
            (rdv(FLAG_READ, &[10, 1, 0, 1, b's', 2, 0]), "length beyond the end of the packet"),
            (vec![VERSION, AM, 0x80, 0x80, 0x04, 0, 0], "handler id exceeds 16 bits"),
            (vec![VERSION, AM, 1, 0x81, 0x08, 0], "active message header too long"),
            (vec![VERSION, AM, 1, 2, 0, b'h'], "length beyond the end of the packet"),
            (vec![VERSION, AM, 1, 0, 3, b'a', b'b'], "length beyond the end of the packet"),
        ];
        for (p, want) in cases {
            let r = Decoder::new(&p).and_then(|mut d| d.next().unwrap());
            match r {
                Err(e) => assert_eq!(e.what, want, "{p:?}"),
                Ok(c) => panic!("{p:?} decoded as {c:?}"),
            }
        }
    }
}
