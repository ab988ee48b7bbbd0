//! Where partitions are: a partitioned buffer is `parts` equal partitions of packed bytes, and
//! the two sides may cut the same total differently (MPI 4.0 §4.2.1). Each sender partition is
//! one message; a receive partition has arrived once every sender partition that overlaps it
//! has.
//!
//! Owns the arithmetic and the description of a partition's memory; no communication.

use nmad::{Blocks, Data};
use std::ops::Range;
use std::sync::Arc;

/// How one side cuts its buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub(crate) parts: usize,
    /// Packed bytes of each partition.
    pub(crate) part_bytes: usize,
}

impl Geometry {
    pub(crate) fn total(&self) -> usize {
        self.parts * self.part_bytes
    }

    /// Packed bytes of partition `k`.
    pub(crate) fn range(&self, k: usize) -> Range<usize> {
        k * self.part_bytes..(k + 1) * self.part_bytes
    }

    /// The partitions of `sender` (same total) that overlap partition `j` of this cut: all of
    /// them when the partitions are empty.
    pub(crate) fn overlapping(&self, j: usize, sender: &Geometry) -> Range<usize> {
        let r = self.range(j);
        let sp = sender.part_bytes;
        if sp == 0 || r.is_empty() {
            return 0..sender.parts;
        }
        r.start / sp..r.end.div_ceil(sp).min(sender.parts)
    }
}

/// The description of packed bytes `range` of `whole` (a part of memory its builder vouched
/// for, so the same contract holds for the part).
pub(crate) fn sub_data(whole: &Data, range: Range<usize>) -> Data {
    let range = range.start.min(whole.len())..range.end.min(whole.len());
    if range.is_empty() {
        return Data::None;
    }
    match whole {
        Data::None => Data::None,
        // SAFETY: a sub-range of memory described by `whole`, whose builder answers for it.
        Data::Contig { ptr, .. } => unsafe { Data::from_raw(ptr.wrapping_add(range.start), range.len()) },
        Data::Layout { base, .. } => {
            let mut segs = Vec::new();
            whole.segments(range, &mut segs);
            let blocks = segs.iter().map(|s| ((s.ptr as isize).wrapping_sub(*base as isize), s.len));
            // SAFETY: the blocks are segments of `whole`'s own description, offset from its
            // base, so `whole`'s builder answers for them.
            unsafe { Data::from_layout(*base, Arc::new(Blocks::new(blocks))) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nmad::Strided;

    #[test]
    fn overlaps_of_different_cuts() {
        let send = Geometry { parts: 4, part_bytes: 6 };
        let recv = Geometry { parts: 3, part_bytes: 8 };
        assert_eq!(send.total(), recv.total());
        assert_eq!(recv.overlapping(0, &send), 0..2); // bytes 0..8: send 0..6, 6..12
        assert_eq!(recv.overlapping(1, &send), 1..3); // 8..16
        assert_eq!(recv.overlapping(2, &send), 2..4); // 16..24
        let fine = Geometry { parts: 24, part_bytes: 1 };
        assert_eq!(fine.overlapping(13, &send), 2..3);
        assert_eq!(send.overlapping(3, &fine), 18..24);
        let empty = Geometry { parts: 2, part_bytes: 0 };
        assert_eq!(empty.overlapping(1, &Geometry { parts: 5, part_bytes: 0 }), 0..5);
    }

    #[test]
    fn sub_descriptions_cover_the_right_bytes() {
        let mut buf: Vec<u8> = (0..40).collect();
        // SAFETY: `buf` outlives the descriptions, which are only read here.
        let contig = unsafe { Data::from_raw(buf.as_mut_ptr(), 40) };
        let mut out = [0u8; 5];
        // SAFETY: the sub-range lies in `buf`, alive and not otherwise borrowed.
        assert_eq!(unsafe { sub_data(&contig, 10..15).pack(0, &mut out) }, 5);
        assert_eq!(out, [10, 11, 12, 13, 14]);
        assert!(sub_data(&contig, 40..44).is_empty());
        // Every other 2-byte block: packed bytes 3..7 are bytes 5, 8, 9, 12.
        let strided = Strided { count: 10, block: 2, stride: 4 };
        // SAFETY: the layout stays within `buf` (10 blocks of 2 bytes, 4 apart: 38 bytes).
        let layout = unsafe { Data::from_layout(buf.as_mut_ptr(), Arc::new(strided)) };
        let part = sub_data(&layout, 3..7);
        let mut out = [0u8; 4];
        // SAFETY: the part's blocks lie in `buf`, alive and not otherwise borrowed.
        assert_eq!(unsafe { part.pack(0, &mut out) }, 4);
        assert_eq!(out, [5, 8, 9, 12]);
        assert_eq!(part.len(), 4);
    }
}
