//! Allgather: every rank's block to every rank's [`RECV`] (block i at `blocks[i]`, or at
//! `i·b` for equal blocks of `b` bytes). `mine` is this rank's block: its input
//! ([`SEND`](crate::coll::schedule::SEND)), or in place its own slot of [`RECV`].
//!
//! - [`recursive_doubling`] (n a power of two, equal blocks): log2 n exchanges with partner
//!   `me ^ 2^k` of everything gathered so far, in place in [`RECV`]. For small and medium sizes.
//! - [`bruck`] (any n, equal blocks): ⌈log2 n⌉ steps; at distance `d` each rank sends what it has
//!   (its block and the next ones, in a temporary rotated by its rank) to `me − d` and receives
//!   from `me + d`; one rotation at the end. For small sizes on non-powers of two.
//! - [`ring`] (any blocks, also `MPI_Allgatherv`): n − 1 steps, each passing the block received
//!   last to the right neighbour: every byte crosses n − 1 links once. For large sizes.
//! - [`linear`] (any blocks): every rank sends its block to every other at once.

use crate::coll::schedule::{RECV, Range, Schedule};

pub(crate) fn recursive_doubling(s: &mut Schedule, n: u32, me: u32, mine: Range, b: usize) {
    let base = s.steps();
    debug_assert!(n.is_power_of_two());
    if b == 0 {
        return;
    }
    let blk = |from: u32, to: u32| Range::new(RECV, from as usize * b, (to - from) as usize * b);
    let r = s.round();
    s.copy(r, mine, blk(me, me + 1));
    let (mut mask, mut k) = (1u32, 0u32);
    while mask < n {
        let partner = me ^ mask;
        let (a, p) = (me & !(mask - 1), partner & !(mask - 1));
        let r = s.round();
        s.send(r, partner, base + k, blk(a, a + mask));
        s.recv(r, partner, base + k, blk(p, p + mask));
        mask <<= 1;
        k += 1;
    }
}

pub(crate) fn bruck(s: &mut Schedule, n: u32, me: u32, mine: Range, b: usize) {
    let base = s.steps();
    if b == 0 {
        return;
    }
    let t = s.tmp(n as usize * b);
    let blk = |buf, from: u32, to: u32| Range::new(buf, from as usize * b, (to - from) as usize * b);
    // t[j] holds block me + j mod n.
    let r = s.round();
    s.copy(r, mine, blk(t, 0, 1));
    let (mut d, mut k) = (1u32, 0u32);
    while d < n {
        let cnt = d.min(n - d);
        let r = s.round();
        s.send(r, (me + n - d) % n, base + k, blk(t, 0, cnt));
        s.recv(r, (me + d) % n, base + k, blk(t, d, d + cnt));
        d <<= 1;
        k += 1;
    }
    let r = s.round();
    s.copy(r, blk(t, 0, n - me), blk(RECV, me, n));
    s.copy(r, blk(t, n - me, n), blk(RECV, 0, me));
}

pub(crate) fn ring(s: &mut Schedule, n: u32, me: u32, mine: Range, blocks: &[Range]) {
    let base = s.steps();
    let r = s.round();
    s.copy(r, mine, blocks[me as usize]);
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    for i in 0..n.saturating_sub(1) {
        let (out, inc) = (blocks[((me + n - i) % n) as usize], blocks[((me + 2 * n - i - 1) % n) as usize]);
        if out.len == 0 && inc.len == 0 {
            continue;
        }
        let r = s.round();
        if out.len > 0 {
            s.send(r, right, base + i, out);
        }
        if inc.len > 0 {
            s.recv(r, left, base + i, inc);
        }
    }
}

pub(crate) fn linear(s: &mut Schedule, n: u32, me: u32, mine: Range, blocks: &[Range]) {
    let base = s.steps();
    let r = s.round();
    s.copy(r, mine, blocks[me as usize]);
    for i in (0..n).filter(|&i| i != me) {
        if mine.len > 0 {
            s.send(r, i, base, mine);
        }
        if blocks[i as usize].len > 0 {
            s.recv(r, i, base, blocks[i as usize]);
        }
    }
}
