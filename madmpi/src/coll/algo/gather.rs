//! Gather: every rank's block to `root`'s [`RECV`].
//!
//! - [`binomial`] (equal blocks of `b` bytes): MPICH's binomial tree relative to the root
//!   (`vr = me − root mod n`, parent `vr` without its lowest set bit, subtree
//!   `[vr, vr + lowbit(vr))`); each inner rank collects its subtree's blocks in relative order in a
//!   temporary and sends them up in one message: ⌈log2 n⌉ steps, for small blocks. The root
//!   receives each child's subtree straight into [`RECV`] unless it wraps around rank n − 1 (then
//!   through a temporary and two copies).
//! - [`linear`] (any blocks, also `MPI_Gatherv`): every rank sends its block to the root, which
//!   posts all receives at once: for large blocks, where the tree's intermediate copies cost more
//!   than its fewer steps save.
//!
//! `mine` is where this rank's block is: its input ([`SEND`](crate::coll::schedule::SEND)), or
//! in place at the root its slot of [`RECV`].

use crate::coll::schedule::{RECV, Range, Schedule, lowbit};

/// The real rank of relative rank `vr`.
pub(crate) fn real(vr: u32, root: u32, n: u32) -> u32 {
    (vr + root) % n
}

/// The size of relative rank `vr`'s subtree: `[vr, vr + size)`, clipped to n.
pub(crate) fn subtree(vr: u32, n: u32) -> u32 {
    let top = if vr == 0 { n.next_power_of_two() } else { lowbit(vr) };
    top.min(n - vr)
}

/// The children of relative rank `vr`, largest subtree first: (relative rank, subtree size).
pub(crate) fn children(vr: u32, n: u32) -> Vec<(u32, u32)> {
    let top = if vr == 0 { n.next_power_of_two() } else { lowbit(vr) };
    let mut m = top >> 1;
    let mut c = Vec::new();
    while m > 0 {
        if vr + m < n {
            c.push((vr + m, subtree(vr + m, n)));
        }
        m >>= 1;
    }
    c
}

pub(crate) fn binomial(s: &mut Schedule, n: u32, me: u32, root: u32, mine: Range, b: usize) {
    let base = s.steps();
    if b == 0 {
        return;
    }
    let vr = (me + n - root) % n;
    let blk = |buf, from: u32, to: u32| Range::new(buf, from as usize * b, (to - from) as usize * b);
    if vr == 0 {
        let r = s.round();
        s.copy(r, mine, blk(RECV, root, root + 1));
        let mut after = Vec::new();
        for (c, sz) in children(0, n) {
            let (lo, hi) = (root + c, root + c + sz);
            if hi <= n || lo >= n {
                // Relative [c, c + sz) is real [lo, hi) mod n, in one piece.
                let lo = lo % n;
                s.recv(r, real(c, root, n), base, blk(RECV, lo, lo + sz));
            } else {
                let t = s.tmp(sz as usize * b);
                s.recv(r, real(c, root, n), base, blk(t, 0, sz));
                after.push((t, sz, lo));
            }
        }
        if let Some((t, sz, lo)) = after.pop() {
            // The wrapping subtree: its first n − lo blocks end the output, the others start it.
            let r = s.round();
            let k = n - lo;
            s.copy(r, blk(t, 0, k), blk(RECV, lo, n));
            s.copy(r, blk(t, k, sz), blk(RECV, 0, sz - k));
        }
        return;
    }
    let sub = subtree(vr, n);
    let parent = real(vr - lowbit(vr), root, n);
    if sub == 1 {
        let r = s.round();
        s.send(r, parent, base, mine);
        return;
    }
    let t = s.tmp(sub as usize * b);
    let r = s.round();
    s.copy(r, mine, blk(t, 0, 1));
    for (c, sz) in children(vr, n) {
        s.recv(r, real(c, root, n), base, blk(t, c - vr, c - vr + sz));
    }
    let r = s.round();
    s.send(r, parent, base, blk(t, 0, sub));
}

/// `blocks[i]`: where rank i's block goes in the root's [`RECV`] (read at the root only).
pub(crate) fn linear(s: &mut Schedule, n: u32, me: u32, root: u32, mine: Range, blocks: &[Range]) {
    let base = s.steps();
    let r = s.round();
    if me != root {
        if mine.len > 0 {
            s.send(r, root, base, mine);
        }
        return;
    }
    s.copy(r, mine, blocks[me as usize]);
    for i in (0..n).filter(|&i| i != root) {
        if blocks[i as usize].len > 0 {
            s.recv(r, i, base, blocks[i as usize]);
        }
    }
}
