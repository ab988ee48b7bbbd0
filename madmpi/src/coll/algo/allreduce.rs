//! Allreduce of `count` elements of `elem` bytes of buffer `input` (on every rank) into [`RECV`]
//! (on every rank; `input` is [`SEND`], or [`RECV`] in place).
//!
//! Non-powers of two (MPICH's way): with `p` the largest power of two ≤ n and `rem = n − p`, the
//! first `2·rem` ranks pair up: each even rank gives its data to the odd rank above it and sits
//! out; the `p` remaining ranks run the power-of-two algorithm (new rank `r/2` for the odd ones,
//! `r − rem` for the others: rank order is kept), and finally each odd rank gives the result back
//! to its even neighbour.
//!
//! - [`recursive_doubling`]: log2 p exchanges of the whole vector with partner `new ^ 2^k`; the
//!   lower-ranked side's data goes on the left of `op`, so non-commutative operations work.
//! - [`rabenseifner`] (commutative operations, `count ≥ p`): a reduce-scatter by recursive halving
//!   (each exchange sends half of what is left, so each rank ends with 1/p of the result), then an
//!   allgather by recursive doubling: about 2·len bytes per rank instead of len·log2 p.
//! - [`reduce_bcast`]: a reduce to rank 0 then a broadcast (any operation; a reference and a
//!   fallback).

use super::elems;
use crate::coll::schedule::{BufId, RECV, Range, Schedule, pof2_below};

/// The pairing step for non-powers of two. Returns this rank's new rank, if it takes part.
#[allow(clippy::too_many_arguments)]
fn fold_in(
    s: &mut Schedule,
    me: u32,
    rem: u32,
    base: u32,
    acc: BufId,
    tmp: BufId,
    count: usize,
    elem: usize,
) -> Option<u32> {
    let all = |b| elems(b, 0, count, elem);
    if me >= 2 * rem {
        return Some(me - rem);
    }
    let r = s.round();
    if me.is_multiple_of(2) {
        s.send(r, me + 1, base, all(acc));
        None
    } else {
        s.recv(r, me - 1, base, all(tmp));
        let r = s.round();
        // The even rank is the lower one: tmp op acc.
        s.reduce(r, all(tmp), all(acc), count);
        Some(me / 2)
    }
}

/// The real rank of new rank `nr`.
fn real(nr: u32, rem: u32) -> u32 {
    if nr < rem { nr * 2 + 1 } else { nr + rem }
}

/// The result goes back from each odd rank below `2·rem` to the even rank below it.
fn give_back(s: &mut Schedule, me: u32, rem: u32, base: u32, acc: BufId, count: usize, elem: usize) {
    let all = |b| elems(b, 0, count, elem);
    let r = s.round();
    s.copy(r, all(acc), all(RECV));
    if me < 2 * rem {
        if !me.is_multiple_of(2) {
            s.send(r, me - 1, base, all(RECV));
        } else {
            s.recv(r, me + 1, base, all(RECV));
        }
    }
}

pub(crate) fn recursive_doubling(
    s: &mut Schedule,
    n: u32,
    me: u32,
    input: BufId,
    count: usize,
    elem: usize,
    commutative: bool,
) {
    let base = s.steps();
    if count == 0 {
        return;
    }
    let all = |b| elems(b, 0, count, elem);
    let (p, len) = (pof2_below(n), count * elem);
    let rem = n - p;
    let (mut acc, mut tmp) = (RECV, s.tmp(len));
    let r = s.round();
    s.copy(r, all(input), all(acc));
    let new = fold_in(s, me, rem, base, acc, tmp, count, elem);
    if let Some(nr) = new {
        let (mut mask, mut k) = (1u32, 1u32);
        while mask < p {
            let dst = real(nr ^ mask, rem);
            let r = s.round();
            s.send(r, dst, base + k, all(acc));
            s.recv(r, dst, base + k, all(tmp));
            let r = s.round();
            if dst < me || commutative {
                s.reduce(r, all(tmp), all(acc), count);
            } else {
                s.reduce(r, all(acc), all(tmp), count);
                std::mem::swap(&mut acc, &mut tmp);
            }
            mask <<= 1;
            k += 1;
        }
    }
    give_back(s, me, rem, base + 63, acc, count, elem);
}

/// Needs a commutative operation and `count ≥ pof2_below(n)`.
pub(crate) fn rabenseifner(s: &mut Schedule, n: u32, me: u32, input: BufId, count: usize, elem: usize) {
    let base = s.steps();
    if count == 0 {
        return;
    }
    let all = |b| elems(b, 0, count, elem);
    let (p, len) = (pof2_below(n), count * elem);
    let rem = n - p;
    debug_assert!(count >= p as usize);
    let (acc, tmp) = (RECV, s.tmp(len));
    let r = s.round();
    s.copy(r, all(input), all(acc));
    if let Some(nr) = fold_in(s, me, rem, base, acc, tmp, count, elem) {
        let pu = p as usize;
        let cnts: Vec<usize> = (0..pu).map(|i| count / pu + usize::from(i < count % pu)).collect();
        let disps: Vec<usize> = cnts.iter().scan(0, |a, &c| Some(std::mem::replace(a, *a + c))).collect();
        // Elements of blocks [a, b).
        let span = |buf, a: usize, b: usize| {
            let (lo, hi) = (disps.get(a).copied().unwrap_or(count), disps.get(b).copied().unwrap_or(count));
            (elems(buf, lo, hi, elem), hi - lo)
        };
        let (mut send_idx, mut recv_idx, mut last_idx) = (0usize, 0usize, pu);
        let (mut mask, mut k) = (1usize, 1u32);
        // Reduce-scatter by recursive halving.
        while mask < pu {
            let nd = nr as usize ^ mask;
            let dst = real(nd as u32, rem);
            let half = pu / (mask * 2);
            let (snd, rcv);
            if (nr as usize) < nd {
                send_idx = recv_idx + half;
                snd = span(acc, send_idx, last_idx);
                rcv = span(tmp, recv_idx, send_idx);
            } else {
                recv_idx = send_idx + half;
                snd = span(acc, send_idx, recv_idx);
                rcv = span(tmp, recv_idx, last_idx);
            }
            let r = s.round();
            if snd.1 > 0 {
                s.send(r, dst, base + k, snd.0);
            }
            if rcv.1 > 0 {
                s.recv(r, dst, base + k, rcv.0);
            }
            let r = s.round();
            let into = Range::new(acc, rcv.0.off, rcv.0.len);
            s.reduce(r, rcv.0, into, rcv.1);
            send_idx = recv_idx;
            mask <<= 1;
            k += 1;
            if mask < pu {
                last_idx = recv_idx + pu / mask;
            }
        }
        // Allgather by recursive doubling, the same exchanges in reverse.
        mask >>= 1;
        while mask > 0 {
            let nd = nr as usize ^ mask;
            let dst = real(nd as u32, rem);
            let half = pu / (mask * 2);
            let (snd, rcv);
            if (nr as usize) < nd {
                if mask != pu / 2 {
                    last_idx += half;
                }
                recv_idx = send_idx + half;
                snd = span(acc, send_idx, recv_idx);
                rcv = span(acc, recv_idx, last_idx);
            } else {
                recv_idx = send_idx - half;
                snd = span(acc, send_idx, last_idx);
                rcv = span(acc, recv_idx, send_idx);
            }
            let r = s.round();
            if snd.1 > 0 {
                s.send(r, dst, base + k, snd.0);
            }
            if rcv.1 > 0 {
                s.recv(r, dst, base + k, rcv.0);
            }
            if (nr as usize) > nd {
                send_idx = recv_idx;
            }
            mask >>= 1;
            k += 1;
        }
    }
    give_back(s, me, rem, base + 63, acc, count, elem);
}

/// A reduce to rank 0 (binomial if commutative, else ordered) then a broadcast from rank 0.
#[allow(clippy::too_many_arguments)]
pub(crate) fn reduce_bcast(
    s: &mut Schedule,
    n: u32,
    me: u32,
    input: BufId,
    count: usize,
    elem: usize,
    commutative: bool,
    large: bool,
) {
    if commutative {
        super::reduce::binomial(s, n, me, 0, input, count, elem);
    } else {
        super::reduce::ordered(s, n, me, 0, input, count, elem);
    }
    if large {
        super::bcast::scatter_ring(s, n, me, 0, RECV, count * elem);
    } else {
        super::bcast::binomial(s, n, me, 0, RECV, count * elem);
    }
}
