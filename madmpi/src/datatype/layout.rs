//! `count` elements of a committed type as an nmad [`Layout`]: iterated lazily, never listed.
//!
//! Element `i` is at `i * extent`; its blocks are the committed ones. Iteration merges the last
//! block of an element with the first of the next when they touch, and starts at any packed
//! offset in O(log blocks): divide by the element size, then binary-search the element's blocks
//! by packed offset. Since the committed blocks of one element never touch each other, every
//! element with two blocks or more emits at least one block, so the work is proportional to the
//! blocks emitted; a one-block element whose block fills its extent makes the whole message one
//! block.
//!
//! This file must never materialize `count × blocks`: a layout is a few words and an `Arc` on
//! the committed blocks, whatever the count.

use super::Datatype;
use super::error::{Checked, Result, TypeError};
use super::flatten::Flat;
use nmad::Layout;
use std::sync::Arc;

/// `count` elements of a committed datatype, relative to the buffer address.
#[derive(Clone, Debug)]
pub struct TypeLayout {
    flat: Arc<Flat>,
    count: usize,
    elem_size: usize,
    extent: isize,
    /// `Some(offset)`: all the elements are one block from `offset`.
    whole: Option<isize>,
}

impl Datatype {
    /// The layout of `count` elements (the type must be committed). Hand it to
    /// `nmad::Data::from_layout(buf, Arc::new(layout))`.
    pub fn layout(&self, count: i64) -> Result<TypeLayout> {
        let flat = self.flat()?.clone();
        if count < 0 {
            return Err(TypeError::count(format!("negative count ({count})")));
        }
        let overflow = |_| TypeError::overflow();
        let count = usize::try_from(count).map_err(overflow)?;
        let elem_size = usize::try_from(self.size()).map_err(overflow)?;
        count.mul_(elem_size)?;
        let extent = isize::try_from(self.extent()).map_err(overflow)?;
        if count > 0 && elem_size > 0 {
            // Every byte of the last element must have an address offset.
            let last = (count as isize - 1).mul_(extent)?;
            for &(off, len) in flat.blocks() {
                last.add_(off)?.add_(len as isize)?;
            }
        }
        let whole = match flat.blocks() {
            &[(off, len)] if len as isize == extent || count == 1 => Some(off),
            _ => None,
        };
        Ok(TypeLayout { flat, count, elem_size, extent, whole })
    }
}

impl Datatype {
    /// The nmad description of `count` elements at `buf`: one contiguous range when the type is
    /// contiguous (the fast path), else a [`TypeLayout`]. The type must be committed.
    ///
    /// # Safety
    /// As [`nmad::Data::from_layout`], for every block of [`Datatype::layout`]`(count)`.
    pub unsafe fn data(&self, buf: *mut u8, count: i64) -> Result<nmad::Data> {
        if let Some(off) = self.contiguous_offset() {
            // Every send and receive of a predefined type comes here: check what `layout` would
            // (committed, count, no overflow) without building one.
            self.flat()?;
            if count < 0 {
                return Err(TypeError::count(format!("negative count ({count})")));
            }
            let bytes = (count as u64)
                .checked_mul(self.size())
                .and_then(|b| isize::try_from(b).ok())
                .filter(|&b| (off as isize).checked_add(b).is_some())
                .ok_or_else(TypeError::overflow)?;
            // SAFETY: the range is the single block of the layout, which the caller vouches for.
            return Ok(unsafe { nmad::Data::from_raw(buf.wrapping_offset(off as isize), bytes as usize) });
        }
        let layout = self.layout(count)?;
        // SAFETY: the caller vouches for every block of the layout.
        Ok(unsafe { nmad::Data::from_layout(buf, Arc::new(layout)) })
    }
}

impl TypeLayout {
    /// Number of elements.
    pub fn count(&self) -> usize {
        self.count
    }
}

impl Layout for TypeLayout {
    fn size(&self) -> usize {
        self.count * self.elem_size
    }

    fn blocks(&self, from: usize, f: &mut dyn FnMut(isize, usize) -> bool) {
        let total = self.size();
        if from >= total {
            return;
        }
        if let Some(off) = self.whole {
            f(off + from as isize, total - from);
            return;
        }
        let (blocks, starts) = (self.flat.blocks(), self.flat.starts());
        let mut elem = from / self.elem_size;
        let within = from % self.elem_size;
        let mut j = starts.partition_point(|&s| s <= within) - 1;
        let mut base = elem as isize * self.extent;
        let skip = within - starts[j];
        let (off, len) = blocks[j];
        let mut pending = (base + off + skip as isize, len - skip);
        loop {
            j += 1;
            if j == blocks.len() {
                j = 0;
                elem += 1;
                if elem == self.count {
                    break;
                }
                base += self.extent;
            }
            let (off, len) = blocks[j];
            let off = base + off;
            if pending.0 + pending.1 as isize == off {
                pending.1 += len;
            } else {
                if !f(pending.0, pending.1) {
                    return;
                }
                pending = (off, len);
            }
        }
        f(pending.0, pending.1);
    }
}
