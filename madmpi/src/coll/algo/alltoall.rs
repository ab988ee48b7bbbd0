//! Alltoall: block j of rank i's input to slot i of rank j's [`RECV`]. For the general forms,
//! `sblocks[j]` is this rank's block for rank j in its input buffer and `rblocks[i]` the slot
//! of rank i's block in [`RECV`]; equal blocks of `b` bytes lie at `j·b`.
//!
//! - [`bruck`] (equal blocks): ⌈log2 n⌉ steps; after a local rotation by the rank, step k sends
//!   every block whose index has bit k set to `me + 2^k` (packed in one message) and receives
//!   the same indices from `me − 2^k`; a final rotation puts the blocks in rank order. About
//!   n/2·log2 n blocks per rank instead of n, in log2 n messages instead of n: for small blocks
//!   on many ranks.
//! - [`linear`] (any blocks, also `MPI_Alltoallv`): every send and receive posted at once. For
//!   medium blocks.
//! - [`pairwise`] (any blocks): n − 1 steps; in step k send to `me + k` and receive from
//!   `me − k`: one message in each direction at a time, for large blocks.
//!
//! `linear` and `pairwise` tag the message from i to j with the same step (`j − i mod n`), so
//! ranks that chose differently (the `v` form chooses by local sizes) still match.
//!
//! In place, [`copy_input`] first copies [`RECV`] to a temporary that serves as the input.

use crate::coll::schedule::{BufId, RECV, Range, Schedule};

/// In place: a temporary holding a copy of the first `len` bytes of [`RECV`] (the input, laid
/// out as the output).
pub(crate) fn copy_input(s: &mut Schedule, len: usize) -> BufId {
    let t = s.tmp(len);
    let r = s.round();
    s.copy(r, Range::new(RECV, 0, len), Range::new(t, 0, len));
    t
}

/// `input`: the buffer holding the n blocks (the input, or [`RECV`] in place).
pub(crate) fn bruck(s: &mut Schedule, n: u32, me: u32, input: BufId, b: usize) {
    let base = s.steps();
    if b == 0 {
        return;
    }
    let len = n as usize * b;
    let blk = |buf, from: u32, to: u32| Range::new(buf, from as usize * b, (to - from) as usize * b);
    // t[j]: the block for rank me + j mod n (then, after the steps, from rank me − j).
    let t = s.tmp(len);
    let (pack, unpack) = (s.tmp(len.div_ceil(2) + b), s.tmp(len.div_ceil(2) + b));
    let r = s.round();
    s.copy(r, blk(input, me, n), blk(t, 0, n - me));
    s.copy(r, blk(input, 0, me), blk(t, n - me, n));
    let (mut p, mut k) = (1u32, 0u32);
    while p < n {
        // Runs [j, j + p) of indices with bit p set.
        let runs: Vec<(u32, u32)> = (0..n)
            .step_by(2 * p as usize)
            .map(|j| j + p)
            .filter(|&j| j < n)
            .map(|j| (j, (j + p).min(n)))
            .collect();
        let cnt: u32 = runs.iter().map(|(a, z)| z - a).sum();
        let r = s.round();
        let mut at = 0;
        for &(a, z) in &runs {
            s.copy(r, blk(t, a, z), blk(pack, at, at + z - a));
            at += z - a;
        }
        s.send(r, (me + p) % n, base + k, blk(pack, 0, cnt));
        s.recv(r, (me + n - p) % n, base + k, blk(unpack, 0, cnt));
        let r = s.round();
        let mut at = 0;
        for &(a, z) in &runs {
            s.copy(r, blk(unpack, at, at + z - a), blk(t, a, z));
            at += z - a;
        }
        p <<= 1;
        k += 1;
    }
    // RECV[i] = t[me − i mod n].
    let r = s.round();
    for i in 0..n {
        let j = (me + n - i) % n;
        s.copy(r, blk(t, j, j + 1), blk(RECV, i, i + 1));
    }
}

fn step(from: u32, to: u32, n: u32) -> u32 {
    (to + n - from) % n
}

pub(crate) fn linear(s: &mut Schedule, n: u32, me: u32, sblocks: &[Range], rblocks: &[Range]) {
    let base = s.steps();
    let r = s.round();
    s.copy(r, sblocks[me as usize], rblocks[me as usize]);
    for i in (0..n).filter(|&i| i != me) {
        let (sb, rb) = (sblocks[i as usize], rblocks[i as usize]);
        if sb.len > 0 {
            s.send(r, i, base + step(me, i, n), sb);
        }
        if rb.len > 0 {
            s.recv(r, i, base + step(i, me, n), rb);
        }
    }
}

pub(crate) fn pairwise(s: &mut Schedule, n: u32, me: u32, sblocks: &[Range], rblocks: &[Range]) {
    let base = s.steps();
    let r = s.round();
    s.copy(r, sblocks[me as usize], rblocks[me as usize]);
    for k in 1..n {
        let (dst, src) = ((me + k) % n, (me + n - k) % n);
        let (sb, rb) = (sblocks[dst as usize], rblocks[src as usize]);
        if sb.len == 0 && rb.len == 0 {
            continue;
        }
        let r = s.round();
        if sb.len > 0 {
            s.send(r, dst, base + k, sb);
        }
        if rb.len > 0 {
            s.recv(r, src, base + k, rb);
        }
    }
}
