//! Keys of memory exposed *by address*, for drivers whose peers reach this process's address
//! space (cross-memory attach, the self driver): the key lists the exposed segments' addresses
//! and lengths. A key names one range of their total length; readers and writers name an offset
//! in it ([`super::Link::read_remote`], [`super::Link::write_remote`]).
//!
//! It owns the key's encoding and its checks. A key arrives from a peer: decoding treats it as
//! hostile (bounded count, no wrap-around, exact length), and a range outside it is refused here,
//! before any address reaches the system (which checks the addresses themselves).
//!
//! ```text
//! key := access nseg (addr len)*        access: 0 read, 1 read-write; LEB128 numbers,
//!                                       1 ≤ nseg ≤ MAX_SEGMENTS
//! ```
//! A write through a read-only key is refused here. That stops a buggy peer, not a hostile one:
//! a process allowed to read another by cross-memory attach may write it too.

use super::{Access, MAX_EXPOSED_SEGMENTS as MAX_SEGMENTS, Segment};
use crate::leb128;
use std::io;

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("memory key: {what}"))
}

/// The next number of a key.
fn number(key: &[u8], at: &mut usize) -> io::Result<u64> {
    leb128::get(key, at).map_err(|e| match e {
        leb128::Malformed::CutShort => invalid("cut short"),
        leb128::Malformed::Overflow => invalid("number overflows"),
    })
}

/// The key of `segs` (empty segments are left out) for `access`. Refused if there are too many.
pub fn encode(segs: &[Segment], access: Access) -> io::Result<Vec<u8>> {
    let n = segs.iter().filter(|s| s.len > 0).count();
    if n == 0 || n > MAX_SEGMENTS {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("memory key: {n} segments (1 to {MAX_SEGMENTS} can be exposed by address)"),
        ));
    }
    let mut key = Vec::with_capacity(2 + 20 * n);
    key.push(u8::from(access == Access::ReadWrite));
    leb128::put(&mut key, n as u64);
    for s in segs.iter().filter(|s| s.len > 0) {
        leb128::put(&mut key, s.ptr as usize as u64);
        leb128::put(&mut key, s.len as u64);
    }
    Ok(key)
}

/// The `(address, length)` pieces of bytes `offset .. offset + len` of the memory `key` names,
/// in order, for `access`. Errors if the key is malformed, does not grant `access`, or the range
/// is not inside it.
pub fn range(key: &[u8], access: Access, offset: u64, len: usize) -> io::Result<Vec<(usize, usize)>> {
    let writable = match key.first() {
        Some(0) => false,
        Some(1) => true,
        _ => return Err(invalid("unknown access")),
    };
    if access == Access::ReadWrite && !writable {
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, "memory key: exposed for reading only"));
    }
    let mut at = 1;
    let n = number(key, &mut at)?;
    if n == 0 || n > MAX_SEGMENTS as u64 {
        return Err(invalid("bad number of segments"));
    }
    let end = offset.checked_add(len as u64).ok_or_else(|| invalid("range wraps around"))?;
    let (mut pieces, mut seen) = (Vec::new(), 0u64);
    for _ in 0..n {
        let (addr, seg_len) = (number(key, &mut at)?, number(key, &mut at)?);
        let (Ok(a), Ok(l)) = (usize::try_from(addr), usize::try_from(seg_len)) else {
            return Err(invalid("segment beyond the address space"));
        };
        if a.checked_add(l).is_none() {
            return Err(invalid("segment wraps around"));
        }
        let next = seen.checked_add(seg_len).ok_or_else(|| invalid("length overflows"))?;
        let (from, to) = (offset.max(seen), end.min(next));
        if from < to {
            pieces.push((a + (from - seen) as usize, (to - from) as usize));
        }
        seen = next;
    }
    if at != key.len() {
        return Err(invalid("trailing bytes"));
    }
    if end > seen {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("memory key: bytes {offset}..{end} outside the {seen} exposed"),
        ));
    }
    Ok(pieces)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn seg(addr: usize, len: usize) -> Segment {
        Segment { ptr: addr as *const u8, len }
    }

    #[test]
    fn a_range_maps_onto_the_exposed_segments() {
        let key = encode(&[seg(1000, 10), seg(0, 0), seg(5000, 30)], Access::ReadWrite).unwrap();
        for access in [Access::Read, Access::ReadWrite] {
            assert_eq!(range(&key, access, 0, 40).unwrap(), vec![(1000, 10), (5000, 30)]);
            assert_eq!(range(&key, access, 4, 10).unwrap(), vec![(1004, 6), (5000, 4)]);
            assert_eq!(range(&key, access, 12, 3).unwrap(), vec![(5002, 3)]);
            assert_eq!(range(&key, access, 40, 0).unwrap(), vec![]);
        }
    }

    #[test]
    fn ranges_outside_and_hostile_keys_are_refused() {
        let key = encode(&[seg(1000, 10)], Access::Read).unwrap();
        let r = Access::Read;
        assert_eq!(range(&key, Access::ReadWrite, 0, 1).unwrap_err().kind(), io::ErrorKind::PermissionDenied);
        assert!(range(&key, r, 5, 6).is_err(), "past the end");
        assert!(range(&key, r, u64::MAX, 2).is_err(), "offset wraps");
        let mut long = key.clone();
        long.push(0);
        assert!(range(&long, r, 0, 1).is_err(), "trailing bytes");
        assert!(range(&key[..key.len() - 1], r, 0, 1).is_err(), "cut short");
        assert!(range(&[], r, 0, 0).is_err(), "empty");
        assert!(range(&[2, 1, 0, 0], r, 0, 0).is_err(), "unknown access");
        assert!(range(&[0, 0], r, 0, 0).is_err(), "no segment");
        assert!(range(&[0, 65], r, 0, 0).is_err(), "too many segments");
        let mut wraps = vec![0, 1];
        leb128::put(&mut wraps, usize::MAX as u64 - 3);
        leb128::put(&mut wraps, 10);
        assert!(range(&wraps, r, 0, 1).is_err(), "segment wraps around");
        let huge = [0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 1];
        assert!(range(&huge, r, 0, 1).is_err(), "number overflows");
        let many: Vec<Segment> = (0..=MAX_SEGMENTS).map(|i| seg(64 * i + 64, 8)).collect();
        assert_eq!(encode(&many, r).unwrap_err().kind(), io::ErrorKind::Unsupported);
        assert_eq!(encode(&[], r).unwrap_err().kind(), io::ErrorKind::Unsupported);
    }
}
