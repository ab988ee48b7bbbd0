//! What a receiver tells its sender: every unit below `next` arrived, and so did the units of
//! `ranges` above it; `echo` returns the clock stamp of the unit that made this ACK advance.
//!
//! On the wire (little endian): `next` u64, `echo` u32 (0: none), a count byte, then per range
//! its start and length relative to `next` (u32 each). Decoding checks every field: ranges must
//! be non-empty, ascending, disjoint, above `next`, at most [`MAX_RANGES`].

/// Ranges an ACK carries at most: the lowest ones (next to the holes the sender must fill
/// first) and the one holding the latest arrival (so that, ACK after ACK, the sender learns of
/// every unit that arrived: RFC 2018's rule).
pub const MAX_RANGES: usize = 16;

/// A cumulative and selective acknowledgement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ack {
    /// Every unit with a lower sequence number arrived.
    pub next: u64,
    /// The clock stamp of the unit that last advanced `next` (for the sender's round trip).
    pub echo: Option<u32>,
    ranges: [(u64, u64); MAX_RANGES],
    len: u8,
}

impl Ack {
    pub fn new(next: u64, echo: Option<u32>) -> Ack {
        Ack { next, echo, ..Ack::default() }
    }

    /// Adds the received range `start..end` (above the previous ones); `false` when full.
    pub fn push_range(&mut self, start: u64, end: u64) -> bool {
        if usize::from(self.len) == MAX_RANGES {
            return false;
        }
        debug_assert!(start < end && start > self.next);
        self.ranges[usize::from(self.len)] = (start, end);
        self.len += 1;
        true
    }

    /// Received ranges above `next`, ascending (`start..end`).
    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.ranges[..usize::from(self.len)]
    }

    /// Whether it shows a hole (the NACK of PM/UDP).
    pub fn has_gap(&self) -> bool {
        self.len > 0
    }

    /// Encoded size.
    pub fn wire_len(&self) -> usize {
        13 + 8 * usize::from(self.len)
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.next.to_le_bytes());
        out.extend_from_slice(&self.echo.unwrap_or(0).to_le_bytes());
        out.push(self.len);
        for &(s, e) in self.ranges() {
            // Ranges lie within the receiver's window (u32) by construction.
            out.extend_from_slice(&((s - self.next) as u32).to_le_bytes());
            out.extend_from_slice(&((e - s) as u32).to_le_bytes());
        }
    }

    /// Decodes an ACK at the start of `b`; returns it and the bytes it took, or `None` if `b`
    /// is short or the ACK malformed.
    pub fn decode(b: &[u8]) -> Option<(Ack, usize)> {
        let next = u64::from_le_bytes(b.get(..8)?.try_into().ok()?);
        let echo = u32::from_le_bytes(b.get(8..12)?.try_into().ok()?);
        let n = usize::from(*b.get(12)?);
        if n > MAX_RANGES {
            return None;
        }
        let mut ack = Ack::new(next, (echo != 0).then_some(echo));
        let mut floor = next; // the next range starts above this
        for i in 0..n {
            let at = 13 + 8 * i;
            let off = u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?);
            let len = u32::from_le_bytes(b.get(at + 4..at + 8)?.try_into().ok()?);
            let start = next.checked_add(u64::from(off))?;
            let end = start.checked_add(u64::from(len))?;
            if len == 0 || start <= floor {
                return None;
            }
            ack.push_range(start, end);
            floor = end;
        }
        Some((ack, 13 + 8 * n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acks_round_trip_and_malformed_ones_are_refused() {
        let mut a = Ack::new(1000, Some(77));
        assert!(a.push_range(1002, 1005));
        assert!(a.push_range(1009, 1010));
        let mut b = Vec::new();
        a.encode(&mut b);
        assert_eq!(b.len(), a.wire_len());
        assert_eq!(Ack::decode(&b), Some((a, b.len())));
        for cut in 0..b.len() {
            assert_eq!(Ack::decode(&b[..cut]), None, "cut at {cut}");
        }
        // A range touching `next`, an empty one, overlapping ones, too many.
        let bad = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut c = b.clone();
            f(&mut c);
            Ack::decode(&c)
        };
        assert_eq!(bad(&|c| c[13..17].copy_from_slice(&0u32.to_le_bytes())), None);
        assert_eq!(bad(&|c| c[17..21].copy_from_slice(&0u32.to_le_bytes())), None);
        assert_eq!(bad(&|c| c[21..25].copy_from_slice(&3u32.to_le_bytes())), None);
        assert_eq!(bad(&|c| c[12] = 9), None);
        let mut full = Ack::new(u64::MAX - 10, None);
        assert!(full.push_range(u64::MAX - 5, u64::MAX - 4));
        let mut f = Vec::new();
        full.encode(&mut f);
        f[17..21].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(Ack::decode(&f), None, "a range past u64::MAX");
    }
}
