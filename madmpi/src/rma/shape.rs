//! What a target knows of an operation's target datatype: `count` elements, `extent` bytes
//! apart, each made of blocks `(offset, len)` in packed order; or one contiguous run. The
//! target maps a range of the operation's packed stream to addresses with it, and checks the
//! whole access against its window before it touches memory.
//!
//! Owns the description a peer sent (built from [`super::wire::Record::TypeDef`] blocks, so
//! every number is checked here: lengths positive, sums and products without overflow), the
//! stream-to-memory walk, and that walk as an nmad layout ([`Placed`]) for large transfers. It
//! must not touch memory itself.

use std::sync::Arc;

/// Most blocks a peer's type may have (a bound on what a peer can make a target allocate).
pub(crate) const MAX_BLOCKS: u32 = 1 << 20;

/// One element of a derived target type, as its origin described it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Element {
    blocks: Vec<(i64, u64)>,
    /// Packed offset of each block's start (the running sum of the lengths).
    starts: Vec<u64>,
    size: u64,
    extent: i64,
    /// Lowest and highest (exclusive) byte offsets of one element.
    lo: i64,
    hi: i64,
}

impl Element {
    /// Checks a peer's description: `None` if a length is 0 or a sum overflows.
    pub(crate) fn new(blocks: Vec<(i64, u64)>, extent: i64) -> Option<Element> {
        let mut starts = Vec::with_capacity(blocks.len());
        let (mut size, mut lo, mut hi) = (0u64, i64::MAX, i64::MIN);
        for &(off, len) in &blocks {
            if len == 0 {
                return None;
            }
            starts.push(size);
            size = size.checked_add(len)?;
            let end = off.checked_add(i64::try_from(len).ok()?)?;
            lo = lo.min(off);
            hi = hi.max(end);
        }
        if blocks.is_empty() {
            (lo, hi) = (0, 0);
        }
        Some(Element { blocks, starts, size, extent, lo, hi })
    }
}

/// The target memory an operation addresses, relative to its displacement's address.
#[derive(Clone, Debug)]
pub(crate) enum Shape {
    Bytes(u64),
    Derived { elem: Arc<Element>, count: u64 },
}

impl Shape {
    /// Packed bytes of the whole access.
    pub(crate) fn size(&self) -> Option<u64> {
        match self {
            Shape::Bytes(n) => Some(*n),
            Shape::Derived { elem, count } => elem.size.checked_mul(*count),
        }
    }

    /// The byte range `[lo, hi)` the access touches, relative to the displacement's address.
    pub(crate) fn span(&self) -> Option<(i64, i64)> {
        match self {
            Shape::Bytes(n) => Some((0, i64::try_from(*n).ok()?)),
            Shape::Derived { elem, count } => {
                if *count == 0 || elem.size == 0 {
                    return Some((0, 0));
                }
                let last = i64::try_from(*count - 1).ok()?.checked_mul(elem.extent)?;
                let lo = elem.lo.min(last.checked_add(elem.lo)?);
                let hi = elem.hi.max(last.checked_add(elem.hi)?);
                Some((lo, hi))
            }
        }
    }

    /// Calls `f(offset, at, n)` for the pieces of packed bytes `[from, from + len)`: `n`
    /// bytes at `offset` from the displacement's address are bytes `at .. at + n` of the
    /// range. The caller checked `from + len` against [`Shape::size`].
    pub(crate) fn walk(&self, from: u64, len: u64, mut f: impl FnMut(i64, usize, usize)) {
        self.walk_while(from, len, |o, at, n| {
            f(o, at, n);
            true
        });
    }

    /// [`Shape::walk`], stopping when `f` returns `false`.
    fn walk_while(&self, from: u64, len: u64, mut f: impl FnMut(i64, usize, usize) -> bool) {
        match self {
            Shape::Bytes(_) => {
                f(from as i64, 0, len as usize);
            }
            Shape::Derived { elem, .. } => {
                let (mut pos, end) = (from, from + len);
                if pos >= end {
                    return;
                }
                // Found once by search, then block after block (a type may have a million).
                let mut i = pos / elem.size;
                let within = pos % elem.size;
                let mut b = elem.starts.partition_point(|&s| s <= within) - 1;
                let mut skip = within - elem.starts[b];
                while pos < end {
                    let (off, blen) = elem.blocks[b];
                    let n = (blen - skip).min(end - pos);
                    let base = (i as i64) * elem.extent + off + skip as i64;
                    if !f(base, (pos - from) as usize, n as usize) {
                        return;
                    }
                    pos += n;
                    skip = 0;
                    b += 1;
                    if b == elem.blocks.len() {
                        (b, i) = (0, i + 1);
                    }
                }
            }
        }
    }
}

/// The first `len` packed bytes of a shape as nmad sees a buffer's layout: a large transfer
/// then lands in (or leaves from) a derived target type's blocks directly.
pub(crate) struct Placed {
    pub(crate) shape: Shape,
    /// At most the shape's size (the caller checked).
    pub(crate) len: u64,
}

impl nmad::Layout for Placed {
    fn size(&self) -> usize {
        self.len as usize
    }

    fn blocks(&self, from: usize, f: &mut dyn FnMut(isize, usize) -> bool) {
        let from = (from as u64).min(self.len);
        self.shape.walk_while(from, self.len - from, |off, _, n| f(off as isize, n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(s: &Shape, from: u64, len: u64) -> Vec<(i64, usize, usize)> {
        let mut v = Vec::new();
        s.walk(from, len, |o, a, n| v.push((o, a, n)));
        v
    }

    #[test]
    fn a_vector_type_maps_stream_ranges_to_its_blocks() {
        // Two ints every 5: blocks (0,8) (20,8), extent 40.
        let e = Arc::new(Element::new(vec![(0, 8), (20, 8)], 40).unwrap());
        let s = Shape::Derived { elem: e, count: 3 };
        assert_eq!(s.size(), Some(48));
        assert_eq!(s.span(), Some((0, 108)));
        assert_eq!(pieces(&s, 0, 48).len(), 6);
        assert_eq!(pieces(&s, 4, 20), vec![(4, 0, 4), (20, 4, 8), (40, 12, 8)]);
    }

    #[test]
    fn a_placed_shape_gives_nmad_its_blocks_from_any_offset() {
        use nmad::Layout;
        let e = Arc::new(Element::new(vec![(0, 8), (20, 8)], 40).unwrap());
        let p = Placed { shape: Shape::Derived { elem: e, count: 3 }, len: 44 };
        assert_eq!(p.size(), 44);
        let mut v = Vec::new();
        p.blocks(4, &mut |o, n| {
            v.push((o, n));
            true
        });
        assert_eq!(v, vec![(4, 4), (20, 8), (40, 8), (60, 8), (80, 8), (100, 4)]);
        v.clear();
        p.blocks(0, &mut |o, n| {
            v.push((o, n));
            v.len() < 2
        });
        assert_eq!(v, vec![(0, 8), (20, 8)]);
    }

    #[test]
    fn a_peer_cannot_describe_empty_blocks_or_overflowing_ones() {
        assert!(Element::new(vec![(0, 0)], 4).is_none());
        assert!(Element::new(vec![(i64::MAX, 2)], 4).is_none());
        let e = Arc::new(Element::new(vec![(0, 4)], i64::MAX).unwrap());
        assert_eq!(Shape::Derived { elem: e, count: 3 }.span(), None);
    }
}
