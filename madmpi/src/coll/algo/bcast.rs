//! Broadcast of `len` bytes of buffer `buf` from `root`.
//!
//! - [`binomial`]: ⌈log2 n⌉ levels; a rank receives the whole message from its parent, then
//!   sends it to its children (largest subtree first). Best for small messages.
//! - [`scatter_ring`] (van de Geijn): the message is cut into n blocks, scattered down the same
//!   binomial tree (each rank receives the blocks of its subtree), then every rank collects the
//!   others' blocks with a ring allgather (n − 1 steps). Each byte crosses each link about twice
//!   instead of log2 n times: for large messages.
//!
//! Ranks are numbered relative to the root (`vr = me − root mod n`); the tree is MPICH's: the
//! parent of `vr` is `vr` without its lowest set bit, its subtree is `[vr, vr + lowbit(vr))`.

use crate::coll::schedule::{BufId, Range, Schedule, lowbit};

fn real(vr: u32, root: u32, n: u32) -> u32 {
    (vr + root) % n
}

/// The subtree of relative rank `vr`: `[vr, vr + size)`, clipped to n.
fn subtree(vr: u32, n: u32) -> u32 {
    let top = if vr == 0 { n.next_power_of_two() } else { lowbit(vr) };
    top.min(n - vr)
}

pub(crate) fn binomial(s: &mut Schedule, n: u32, me: u32, root: u32, buf: BufId, len: usize) {
    let base = s.steps();
    if n == 1 || len == 0 {
        return;
    }
    let vr = (me + n - root) % n;
    let all = Range::new(buf, 0, len);
    if vr != 0 {
        let r = s.round();
        s.recv(r, real(vr - lowbit(vr), root, n), base, all);
    }
    let top = if vr == 0 { n.next_power_of_two() } else { lowbit(vr) };
    let mut m = top >> 1;
    let r = s.round();
    while m > 0 {
        if vr + m < n {
            s.send(r, real(vr + m, root, n), base, all);
        }
        m >>= 1;
    }
}

pub(crate) fn scatter_ring(s: &mut Schedule, n: u32, me: u32, root: u32, buf: BufId, len: usize) {
    let base = s.steps();
    if n == 1 || len == 0 {
        return;
    }
    let bs = len.div_ceil(n as usize);
    // Bytes of blocks [a, b).
    let blocks = |a: u32, b: u32| {
        let lo = (a as usize * bs).min(len);
        let hi = (b as usize * bs).min(len);
        Range::new(buf, lo, hi - lo)
    };
    let vr = (me + n - root) % n;
    // Scatter: receive my subtree's blocks, then pass each child its subtree's.
    if vr != 0 {
        let r = s.round();
        let mine = blocks(vr, vr + subtree(vr, n));
        if mine.len > 0 {
            s.recv(r, real(vr - lowbit(vr), root, n), base, mine);
        }
    }
    let r = s.round();
    let top = if vr == 0 { n.next_power_of_two() } else { lowbit(vr) };
    let mut m = top >> 1;
    while m > 0 {
        if vr + m < n {
            let theirs = blocks(vr + m, vr + m + subtree(vr + m, n));
            if theirs.len > 0 {
                s.send(r, real(vr + m, root, n), base, theirs);
            }
        }
        m >>= 1;
    }
    // Ring allgather: in step i, pass on block vr − i, receive block vr − i − 1.
    let (right, left) = (real((vr + 1) % n, root, n), real((vr + n - 1) % n, root, n));
    for i in 0..n - 1 {
        let r = s.round();
        let out = (vr + n - i) % n;
        let inc = (vr + 2 * n - i - 1) % n;
        let (o, x) = (blocks(out, out + 1), blocks(inc, inc + 1));
        if o.len > 0 {
            s.send(r, right, base + 1 + i, o);
        }
        if x.len > 0 {
            s.recv(r, left, base + 1 + i, x);
        }
    }
}
