//! Scatter: block i of `root`'s input to rank i's [`RECV`].
//!
//! - [`binomial`] (equal blocks of `b` bytes): the tree of [`gather`](super::gather) run
//!   downwards: each rank receives its subtree's blocks (relative order) in one message, keeps
//!   the first and passes each child its subtree's; ⌈log2 n⌉ steps, for small blocks. The root
//!   sends each child's subtree straight from its input unless it wraps around rank n − 1 (then
//!   through a temporary).
//! - [`linear`] (any blocks, also `MPI_Scatterv`): the root sends every block at once.
//!
//! `out` is where this rank's block goes ([`RECV`]), `None` in place at the root (its block stays
//! in its input). The root's input is [`SEND`].

use super::gather::{children, real, subtree};
use crate::coll::schedule::{RECV, Range, SEND, Schedule, lowbit};

pub(crate) fn binomial(s: &mut Schedule, n: u32, me: u32, root: u32, out: Option<Range>, b: usize) {
    let base = s.steps();
    if b == 0 {
        return;
    }
    let vr = (me + n - root) % n;
    let blk = |buf, from: u32, to: u32| Range::new(buf, from as usize * b, (to - from) as usize * b);
    if vr == 0 {
        let r = s.round();
        if let Some(o) = out {
            s.copy(r, blk(SEND, root, root + 1), o);
        }
        for (c, sz) in children(0, n) {
            let (lo, hi) = (root + c, root + c + sz);
            if hi <= n || lo >= n {
                let lo = lo % n;
                s.send(r, real(c, root, n), base, blk(SEND, lo, lo + sz));
            } else {
                let t = s.tmp(sz as usize * b);
                let k = n - lo;
                s.copy(r, blk(SEND, lo, n), blk(t, 0, k));
                s.copy(r, blk(SEND, 0, sz - k), blk(t, k, sz));
                s.send(r, real(c, root, n), base, blk(t, 0, sz));
            }
        }
        return;
    }
    let sub = subtree(vr, n);
    let parent = real(vr - lowbit(vr), root, n);
    let out = out.unwrap_or(Range::new(RECV, 0, b));
    if sub == 1 {
        let r = s.round();
        s.recv(r, parent, base, out);
        return;
    }
    let t = s.tmp(sub as usize * b);
    let r = s.round();
    s.recv(r, parent, base, blk(t, 0, sub));
    let r = s.round();
    s.copy(r, blk(t, 0, 1), out);
    for (c, sz) in children(vr, n) {
        s.send(r, real(c, root, n), base, blk(t, c - vr, c - vr + sz));
    }
}

/// `blocks[i]`: rank i's block in the root's [`SEND`] (read at the root only); `out` as for
/// [`binomial`] (its length is this rank's block's).
pub(crate) fn linear(s: &mut Schedule, n: u32, me: u32, root: u32, out: Option<Range>, blocks: &[Range]) {
    let base = s.steps();
    let r = s.round();
    if me != root {
        if let Some(o) = out.filter(|o| o.len > 0) {
            s.recv(r, root, base, o);
        }
        return;
    }
    if let Some(o) = out {
        s.copy(r, blocks[me as usize], o);
    }
    for i in (0..n).filter(|&i| i != root) {
        if blocks[i as usize].len > 0 {
            s.send(r, i, base, blocks[i as usize]);
        }
    }
}
