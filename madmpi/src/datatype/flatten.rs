//! Commit: one element flattened into a compact list of memory blocks in packed order.
//!
//! Adjacent blocks are merged, and a sub-type that is one run of memory is emitted as one block
//! per part (so `contiguous(1 << 30, int)` is one block, not a billion). A sub-type used by many
//! parts is flattened once (memoized by identity, or taken from its own commit).
//!
//! This file owns the per-element block list; repeating it `count` times is `layout`'s job,
//! lazily.

use super::error::{Checked, Result, TypeError};
use super::parts::Parts;
use super::{Datatype, Inner};
use std::collections::HashMap;
use std::rc::Rc;

/// The blocks of one element.
#[derive(Debug)]
pub(crate) struct Flat {
    blocks: Box<[(isize, usize)]>,
    /// Packed offset of the first byte of each block (for a binary search by packed offset).
    starts: Box<[usize]>,
}

impl Flat {
    /// Flattens one element of `t`.
    pub fn of(t: &Datatype) -> Result<Flat> {
        let mut memo = HashMap::new();
        let blocks = flatten(t, &mut memo)?;
        drop(memo); // so that the blocks are not copied below
        let blocks: Box<[(isize, usize)]> = Rc::unwrap_or_clone(blocks).into();
        let mut at = 0usize;
        let starts = blocks
            .iter()
            .map(|&(_, len)| {
                let s = at;
                at += len; // bounded by the type size, a u64 that fit in usize below
                s
            })
            .collect();
        Ok(Flat { blocks, starts })
    }

    /// `(offset from the element's address, length)` in packed order.
    pub fn blocks(&self) -> &[(isize, usize)] {
        &self.blocks
    }

    /// Packed offset at which each block starts.
    pub fn starts(&self) -> &[usize] {
        &self.starts
    }
}

fn isize_of(v: i64) -> Result<isize> {
    isize::try_from(v).map_err(|_| TypeError::overflow())
}

fn usize_of(v: u64) -> Result<usize> {
    usize::try_from(v).map_err(|_| TypeError::overflow())
}

/// Appends a block, merging it with the previous one when they touch.
fn push(out: &mut Vec<(isize, usize)>, off: isize, len: usize) -> Result<()> {
    if let Some(last) = out.last_mut()
        && last.0.checked_add_unsigned(last.1) == Some(off)
    {
        last.1 = last.1.add_(len)?;
    } else {
        out.push((off, len));
    }
    Ok(())
}

type Memo = HashMap<*const Inner, Rc<Vec<(isize, usize)>>>;

fn flatten(t: &Datatype, memo: &mut Memo) -> Result<Rc<Vec<(isize, usize)>>> {
    let key: *const Inner = &*t.0;
    if let Some(b) = memo.get(&key) {
        return Ok(b.clone());
    }
    let out = Rc::new(match t.0.flat.get() {
        Some(f) => f.blocks.to_vec(),
        None => compute(t, memo)?,
    });
    memo.insert(key, out.clone());
    Ok(out)
}

fn compute(t: &Datatype, memo: &mut Memo) -> Result<Vec<(isize, usize)>> {
    let a = &t.0.attrs;
    let mut out = Vec::new();
    if a.size == 0 {
        return Ok(out);
    }
    if let Some(s) = a.run {
        out.push((isize_of(s)?, usize_of(a.size)?));
        return Ok(out);
    }
    for p in Parts::of(t).iter() {
        let old = &p.old.0.attrs;
        if p.bl == 0 || old.size == 0 {
            continue;
        }
        match old.run {
            // One run per part: the elements of the block touch (or there is one).
            Some(s) if p.bl == 1 || old.extent == old.size as i64 => {
                let len = usize_of(p.bl.mul_(old.size)?)?;
                push(&mut out, isize_of(p.disp.add_(s)?)?, len)?;
            }
            _ => {
                let sub = flatten(p.old, memo)?;
                let ext = isize_of(old.extent)?;
                let mut base = isize_of(p.disp)?;
                for k in 0..p.bl {
                    if k > 0 {
                        base = base.add_(ext)?;
                    }
                    for &(o, l) in sub.iter() {
                        push(&mut out, base.add_(o)?, l)?;
                    }
                }
            }
        }
    }
    Ok(out)
}
