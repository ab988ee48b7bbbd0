//! Data descriptions: where the bytes of a message live in user memory.
//!
//! A message is a *packed* byte stream of `len()` bytes; a description maps packed offsets to
//! memory. Contiguous buffers are the fast path; non-contiguous layouts (MPI derived datatypes,
//! iovecs, strided blocks) implement [`Layout`], an iterator of (offset, length) blocks, so the
//! core sends them as iovecs and receives straight into them without an intermediate copy.
//!
//! Descriptions hold raw pointers: whoever builds one answers for the memory (see
//! [`Data::from_raw`]); the safe entry points in `sendrecv` borrow slices for a bounded scope.

use crate::drivers::{Segment, SegmentMut};
use std::ops::Range;
use std::sync::Arc;

/// A non-contiguous layout: blocks of memory relative to a base address, in packed order.
pub trait Layout: Send + Sync {
    /// Total bytes (packed).
    fn size(&self) -> usize;
    /// Calls `f(offset, len)` (offset from the base address, possibly negative) for the blocks
    /// holding packed bytes `from..`, in order; the first block may be cut to start at `from`.
    /// Stops when `f` returns `false`.
    fn blocks(&self, from: usize, f: &mut dyn FnMut(isize, usize) -> bool);
}

/// Blocks listed explicitly (an iovec relative to a base).
#[derive(Clone, Debug, Default)]
pub struct Blocks {
    blocks: Vec<(isize, usize)>,
    /// Packed offset at which each block starts (for `blocks(from)` by binary search).
    starts: Vec<usize>,
    size: usize,
}

impl Blocks {
    pub fn new(blocks: impl IntoIterator<Item = (isize, usize)>) -> Blocks {
        let mut b = Blocks::default();
        for (off, len) in blocks {
            if len > 0 {
                b.starts.push(b.size);
                b.blocks.push((off, len));
                b.size += len;
            }
        }
        b
    }
}

impl Layout for Blocks {
    fn size(&self) -> usize {
        self.size
    }
    fn blocks(&self, from: usize, f: &mut dyn FnMut(isize, usize) -> bool) {
        let i = self.starts.partition_point(|&s| s <= from).saturating_sub(1);
        for (k, &(off, len)) in self.blocks.iter().enumerate().skip(i) {
            let skip = from.saturating_sub(self.starts[k]);
            if skip >= len {
                continue;
            }
            if !f(off + skip as isize, len - skip) {
                return;
            }
        }
    }
}

/// `count` blocks of `block` bytes, `stride` bytes apart (a vector datatype).
#[derive(Clone, Copy, Debug)]
pub struct Strided {
    pub count: usize,
    pub block: usize,
    pub stride: isize,
}

impl Layout for Strided {
    fn size(&self) -> usize {
        self.count * self.block
    }
    fn blocks(&self, from: usize, f: &mut dyn FnMut(isize, usize) -> bool) {
        if self.block == 0 {
            return;
        }
        let (first, skip) = (from / self.block, from % self.block);
        for i in first..self.count {
            let s = if i == first { skip } else { 0 };
            if !f(i as isize * self.stride + s as isize, self.block - s) {
                return;
            }
        }
    }
}

/// Where a message's bytes are.
#[derive(Clone, Default)]
pub enum Data {
    /// No memory: an empty message, or a receive whose buffer comes later (peek first).
    #[default]
    None,
    Contig {
        ptr: *mut u8,
        len: usize,
    },
    Layout {
        base: *mut u8,
        layout: Arc<dyn Layout>,
    },
}

impl std::fmt::Debug for Data {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Data::None => write!(f, "Data::None"),
            Data::Contig { ptr, len } => write!(f, "Data::Contig({ptr:?}, {len})"),
            Data::Layout { base, layout } => write!(f, "Data::Layout({base:?}, {} bytes)", layout.size()),
        }
    }
}

// SAFETY: a description of memory; the code that builds one from raw pointers promises the
// memory may be used from the threads that progress the message (`Data::from_raw`).
unsafe impl Send for Data {}
// SAFETY: as above.
unsafe impl Sync for Data {}

impl Data {
    /// Describes `len` bytes at `ptr`.
    ///
    /// # Safety
    /// Until the request using it completes, the memory must stay valid (readable for a send,
    /// writable for a receive) and must not be accessed by anything else in a conflicting way.
    pub unsafe fn from_raw(ptr: *mut u8, len: usize) -> Data {
        if len == 0 { Data::None } else { Data::Contig { ptr, len } }
    }

    /// Describes the blocks of `layout` around `base`.
    ///
    /// # Safety
    /// As [`Data::from_raw`], for every block.
    pub unsafe fn from_layout(base: *mut u8, layout: Arc<dyn Layout>) -> Data {
        if layout.size() == 0 { Data::None } else { Data::Layout { base, layout } }
    }

    /// Packed length.
    pub fn len(&self) -> usize {
        match self {
            Data::None => 0,
            Data::Contig { len, .. } => *len,
            Data::Layout { layout, .. } => layout.size(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of blocks of packed bytes `range` (1 for contiguous data).
    pub fn block_count(&self, range: Range<usize>) -> usize {
        let mut n = 0;
        self.for_each(range, |_, _| {
            n += 1;
            true
        });
        n
    }

    /// Calls `f(address, len)` for the memory of packed bytes `range`, in order.
    pub(crate) fn for_each(&self, range: Range<usize>, mut f: impl FnMut(*mut u8, usize) -> bool) {
        let end = range.end.min(self.len());
        if range.start >= end {
            return;
        }
        match self {
            Data::None => {}
            // SAFETY (for the pointer arithmetic here and below): offsets stay within the
            // described memory, which the builder of `Data` vouched for.
            Data::Contig { ptr, .. } => {
                f(ptr.wrapping_add(range.start), end - range.start);
            }
            Data::Layout { base, layout } => {
                let mut left = end - range.start;
                layout.blocks(range.start, &mut |off, len| {
                    let n = len.min(left);
                    left -= n;
                    f(base.wrapping_offset(off), n) && left > 0
                });
            }
        }
    }

    /// Appends the memory of packed bytes `range` as send segments.
    pub fn segments(&self, range: Range<usize>, out: &mut Vec<Segment>) {
        self.for_each(range, |ptr, len| {
            out.push(Segment { ptr, len });
            true
        });
    }

    /// Appends the memory of packed bytes `range` as receive segments.
    pub fn segments_mut(&self, range: Range<usize>, out: &mut Vec<SegmentMut>) {
        self.for_each(range, |ptr, len| {
            out.push(SegmentMut { ptr, len });
            true
        });
    }

    /// Copies `bytes` into packed position `at..` (cut at the end of the data). Returns the bytes
    /// copied.
    ///
    /// # Safety
    /// The described memory must be valid for writes (the contract of [`Data::from_raw`]).
    pub unsafe fn unpack(&self, at: usize, bytes: &[u8]) -> usize {
        let mut done = 0;
        self.for_each(at..at.saturating_add(bytes.len()), |ptr, len| {
            // SAFETY: `ptr..ptr+len` is described memory (caller's contract); `done + len` stays
            // within `bytes` because the range was cut to `bytes.len()`.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr().add(done), ptr, len) };
            done += len;
            true
        });
        done
    }

    /// Copies packed bytes `at..at + out.len()` into `out` (cut at the end). Returns the bytes
    /// copied.
    ///
    /// # Safety
    /// The described memory must be valid for reads.
    pub unsafe fn pack(&self, at: usize, out: &mut [u8]) -> usize {
        let mut done = 0;
        self.for_each(at..at.saturating_add(out.len()), |ptr, len| {
            // SAFETY: as in `unpack`, reading.
            unsafe { std::ptr::copy_nonoverlapping(ptr, out.as_mut_ptr().add(done), len) };
            done += len;
            true
        });
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strided_buf() -> (Vec<u8>, Data) {
        let mut buf: Vec<u8> = (0..100).collect();
        // SAFETY: the buffer outlives the description in each test.
        let d = unsafe {
            Data::from_layout(buf.as_mut_ptr(), Arc::new(Strided { count: 4, block: 3, stride: 10 }))
        };
        (buf, d)
    }

    #[test]
    fn strided_layouts_pack_and_unpack_from_any_offset() {
        let (buf, d) = strided_buf();
        assert_eq!(d.len(), 12);
        let mut out = [0u8; 12];
        // SAFETY: `buf` is alive.
        assert_eq!(unsafe { d.pack(0, &mut out) }, 12);
        assert_eq!(out, [0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32]);
        let mut part = [0u8; 5];
        // SAFETY: as above.
        assert_eq!(unsafe { d.pack(4, &mut part) }, 5);
        assert_eq!(part, [11, 12, 20, 21, 22]);
        // SAFETY: as above.
        assert_eq!(unsafe { d.unpack(10, &[99, 98, 97]) }, 2, "cut at the end");
        drop(d);
        assert_eq!(&buf[30..33], &[30, 99, 98]);
    }

    #[test]
    fn blocks_layouts_describe_segments_of_a_range() {
        let mut buf = vec![0u8; 64];
        let base = buf.as_mut_ptr();
        let layout = Arc::new(Blocks::new([(40, 4), (0, 0), (-0, 2), (10, 6)]));
        // SAFETY: offsets are within `buf`.
        let d = unsafe { Data::from_layout(base, layout) };
        assert_eq!(d.len(), 12);
        let mut segs = Vec::new();
        d.segments(3..9, &mut segs);
        let offs: Vec<_> = segs.iter().map(|s| (s.ptr as usize - base as usize, s.len)).collect();
        assert_eq!(offs, [(43, 1), (0, 2), (10, 3)]);
        assert_eq!(d.block_count(0..12), 3);
        // SAFETY: `buf` is alive.
        unsafe { d.unpack(0, &[1; 12]) };
        assert_eq!(buf.iter().filter(|&&b| b == 1).count(), 12);
    }

    #[test]
    fn contiguous_and_empty() {
        let mut buf = [0u8; 8];
        // SAFETY: `buf` outlives `d`.
        let d = unsafe { Data::from_raw(buf.as_mut_ptr(), 8) };
        // SAFETY: as above.
        assert_eq!(unsafe { d.unpack(6, &[5, 6, 7]) }, 2);
        assert_eq!(buf[6..], [5, 6]);
        // SAFETY: a null pointer with length 0 describes nothing.
        let e = unsafe { Data::from_raw(std::ptr::null_mut(), 0) };
        assert!(e.is_empty() && matches!(e, Data::None));
        let mut segs = Vec::new();
        e.segments(0..10, &mut segs);
        assert!(segs.is_empty());
    }
}
