//! The tcp driver's wire format: what follows the job handshake on a connection, and the frames.
//!
//! After `tools::secret`'s handshake, the connecting side sends a hello — `NMTCP1`, its rank
//! and the rank it wants (u32 LE each), the rail name's length (u8) and the name — and the
//! accepting side answers with a status byte ([`ACK_OK`] or why it refuses) and its own rank
//! (u32 LE).
//!
//! Then both directions carry frames, little-endian, header then payload:
//! - packet: `[1, 0, 0, 0, len: u32]` + `len` bytes, `len <= MAX_PACKET`;
//! - bulk: `[2, 0, 0, 0, len: u32, cookie: u64, offset: u64]` + `len` bytes,
//!   `len <= MAX_BULK_FRAME` (one piece of a rendezvous transfer).
//!
//! The decoder is the first thing untrusted bytes meet: it checks every field and never
//! allocates. This module owns no state.

use crate::drivers::BulkHeader;
use std::fmt;
use std::io::{self, Read};

/// Largest packet payload (the driver's `Caps::max_packet`).
pub const MAX_PACKET: usize = 64 << 10;
/// Largest bulk frame payload a receiver accepts.
pub const MAX_BULK_FRAME: usize = 4 << 20;
pub const PACKET_HEADER: usize = 8;
pub const BULK_HEADER: usize = 24;
const KIND_PACKET: u8 = 1;
const KIND_BULK: u8 = 2;

const HELLO_MAGIC: &[u8; 6] = b"NMTCP1";
/// Hello answers.
pub const ACK_OK: u8 = 0;
pub const ACK_WRONG_RAIL: u8 = 1;
pub const ACK_BAD_RANK: u8 = 2;
pub const ACK_CLOSED: u8 = 3;
pub const ACK_WRONG_PEER: u8 = 4;
/// Bytes of the accepting side's answer.
pub const ACK_LEN: usize = 5;

/// A decoded frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame {
    Packet { len: usize },
    Bulk(BulkHeader),
}

impl Frame {
    pub fn header_len(&self) -> usize {
        match self {
            Frame::Packet { .. } => PACKET_HEADER,
            Frame::Bulk(_) => BULK_HEADER,
        }
    }
}

/// Why a frame header is malformed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    UnknownKind(u8),
    ReservedNotZero,
    PacketTooLarge(u32),
    BulkTooLarge(u32),
    OffsetOverflow,
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::UnknownKind(k) => write!(f, "unknown frame kind {k}"),
            FrameError::ReservedNotZero => write!(f, "reserved header bytes are not zero"),
            FrameError::PacketTooLarge(n) => write!(f, "packet of {n} bytes (max {MAX_PACKET})"),
            FrameError::BulkTooLarge(n) => write!(f, "bulk frame of {n} bytes (max {MAX_BULK_FRAME})"),
            FrameError::OffsetOverflow => write!(f, "bulk offset + length overflows"),
        }
    }
}

impl From<FrameError> for io::Error {
    fn from(e: FrameError) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, format!("malformed frame: {e}"))
    }
}

pub fn packet_header(len: usize) -> [u8; PACKET_HEADER] {
    debug_assert!(len <= MAX_PACKET);
    let mut h = [0u8; PACKET_HEADER];
    h[0] = KIND_PACKET;
    h[4..8].copy_from_slice(&(len as u32).to_le_bytes());
    h
}

pub fn bulk_header(hdr: &BulkHeader) -> [u8; BULK_HEADER] {
    debug_assert!(hdr.len <= MAX_BULK_FRAME as u64);
    let mut h = [0u8; BULK_HEADER];
    h[0] = KIND_BULK;
    h[4..8].copy_from_slice(&(hdr.len as u32).to_le_bytes());
    h[8..16].copy_from_slice(&hdr.cookie.to_le_bytes());
    h[16..24].copy_from_slice(&hdr.offset.to_le_bytes());
    h
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(std::array::from_fn(|i| b[at + i]))
}

/// Decodes the frame header at the start of `bytes`: `Ok(None)` while more bytes are needed.
/// Errors are reported as soon as the bytes seen prove the header malformed.
pub fn decode(bytes: &[u8]) -> Result<Option<Frame>, FrameError> {
    let Some(&kind) = bytes.first() else { return Ok(None) };
    let need = match kind {
        KIND_PACKET => PACKET_HEADER,
        KIND_BULK => BULK_HEADER,
        k => return Err(FrameError::UnknownKind(k)),
    };
    if bytes[1..bytes.len().min(4)].iter().any(|&b| b != 0) {
        return Err(FrameError::ReservedNotZero);
    }
    if bytes.len() < need {
        return Ok(None);
    }
    let len = u32_at(bytes, 4);
    if kind == KIND_PACKET {
        if len as usize > MAX_PACKET {
            return Err(FrameError::PacketTooLarge(len));
        }
        return Ok(Some(Frame::Packet { len: len as usize }));
    }
    if len as usize > MAX_BULK_FRAME {
        return Err(FrameError::BulkTooLarge(len));
    }
    let (cookie, offset) = (u64_at(bytes, 8), u64_at(bytes, 16));
    offset.checked_add(len as u64).ok_or(FrameError::OffsetOverflow)?;
    Ok(Some(Frame::Bulk(BulkHeader { cookie, offset, len: len as u64 })))
}

/// The connecting side's hello: rank `from` wants to reach rank `to` through `rail`.
pub fn hello(from: u32, to: u32, rail: &str) -> Vec<u8> {
    let mut h = Vec::with_capacity(15 + rail.len());
    h.extend_from_slice(HELLO_MAGIC);
    h.extend_from_slice(&from.to_le_bytes());
    h.extend_from_slice(&to.to_le_bytes());
    h.push(rail.len().min(255) as u8);
    h.extend_from_slice(&rail.as_bytes()[..rail.len().min(255)]);
    h
}

/// Reads a hello: `(from, to, rail)`.
pub fn read_hello(r: &mut impl Read) -> io::Result<(u32, u32, String)> {
    let mut fixed = [0u8; 15];
    r.read_exact(&mut fixed)?;
    if &fixed[..6] != HELLO_MAGIC {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "not an nmad tcp hello"));
    }
    let (from, to) = (u32_at(&fixed, 6), u32_at(&fixed, 10));
    let mut name = vec![0u8; fixed[14] as usize];
    r.read_exact(&mut name)?;
    let name = String::from_utf8(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "rail name is not UTF-8"))?;
    Ok((from, to, name))
}

/// The accepting side's answer.
pub fn ack(status: u8, rank: u32) -> [u8; ACK_LEN] {
    let r = rank.to_le_bytes();
    [status, r[0], r[1], r[2], r[3]]
}

/// Splits an answer into status and rank.
pub fn parse_ack(a: &[u8; ACK_LEN]) -> (u8, u32) {
    (a[0], u32_at(a, 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn headers_round_trip_and_truncations_wait_for_more() {
        let p = packet_header(MAX_PACKET);
        assert_eq!(decode(&p), Ok(Some(Frame::Packet { len: MAX_PACKET })));
        let hdr = BulkHeader { cookie: u64::MAX, offset: 12345, len: MAX_BULK_FRAME as u64 };
        let b = bulk_header(&hdr);
        assert_eq!(decode(&b), Ok(Some(Frame::Bulk(hdr))));
        for cut in 0..PACKET_HEADER {
            assert_eq!(decode(&p[..cut]), Ok(None), "packet header cut at {cut}");
        }
        for cut in 0..BULK_HEADER {
            assert_eq!(decode(&b[..cut]), Ok(None), "bulk header cut at {cut}");
        }
    }

    #[test]
    fn hostile_headers_are_rejected() {
        let mut p = packet_header(0);
        p[4..8].copy_from_slice(&(MAX_PACKET as u32 + 1).to_le_bytes());
        assert_eq!(decode(&p), Err(FrameError::PacketTooLarge(MAX_PACKET as u32 + 1)));
        p[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decode(&p), Err(FrameError::PacketTooLarge(u32::MAX)));
        let mut b = bulk_header(&BulkHeader { cookie: 1, offset: 0, len: 1 });
        b[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decode(&b), Err(FrameError::BulkTooLarge(u32::MAX)));
        let b = bulk_header(&BulkHeader { cookie: 1, offset: u64::MAX, len: 1 });
        assert_eq!(decode(&b), Err(FrameError::OffsetOverflow));
        assert_eq!(decode(&[0]), Err(FrameError::UnknownKind(0)));
        assert_eq!(decode(b"GET / HTTP/1.1"), Err(FrameError::UnknownKind(b'G')));
        assert_eq!(decode(&[1, 0, 7]), Err(FrameError::ReservedNotZero), "seen before the header is whole");
    }

    #[test]
    fn hello_and_ack_round_trip() {
        let h = hello(7, 2, "tcp:eth1");
        assert_eq!(read_hello(&mut &h[..]).unwrap(), (7, 2, "tcp:eth1".to_string()));
        assert!(read_hello(&mut &h[..h.len() - 1]).is_err(), "truncated");
        assert!(read_hello(&mut &b"GET / HTTP/1.1\r\n"[..]).is_err(), "stranger");
        assert_eq!(parse_ack(&ack(ACK_BAD_RANK, 3)), (ACK_BAD_RANK, 3));
    }

    proptest! {
        #[test]
        fn any_bytes_decode_without_panic_and_within_bounds(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            match decode(&bytes) {
                Ok(Some(Frame::Packet { len })) => prop_assert!(len <= MAX_PACKET && bytes.len() >= PACKET_HEADER),
                Ok(Some(Frame::Bulk(h))) => {
                    prop_assert!(h.len <= MAX_BULK_FRAME as u64 && bytes.len() >= BULK_HEADER);
                    prop_assert!(h.offset.checked_add(h.len).is_some());
                }
                Ok(None) | Err(_) => {}
            }
        }

        #[test]
        fn encoded_headers_decode_to_themselves(cookie: u64, offset in 0..u64::MAX / 2, len in 0..=MAX_BULK_FRAME as u64, plen in 0..=MAX_PACKET) {
            let hdr = BulkHeader { cookie, offset, len };
            prop_assert_eq!(decode(&bulk_header(&hdr)), Ok(Some(Frame::Bulk(hdr))));
            prop_assert_eq!(decode(&packet_header(plen)), Ok(Some(Frame::Packet { len: plen })));
        }
    }
}
