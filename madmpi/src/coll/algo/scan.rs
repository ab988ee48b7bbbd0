//! Scan (inclusive prefix reduction) and exscan (exclusive) of `count` elements of `elem` bytes
//! of buffer `input` into [`RECV`]: rank r gets `x0 op x1 op … op xr` (scan) or
//! `x0 op … op x(r−1)` (exscan). `input` is [`SEND`], or [`RECV`] in place. Exscan never writes
//! rank 0's [`RECV`] (MPI leaves its output undefined; here it is left as it was, so in place it
//! still holds rank 0's input).
//!
//! - [`recursive_doubling`] (MPICH's): in step k a rank exchanges its *partial* result (the
//!   reduction over its aligned block of 2^k ranks) with rank `me ^ 2^k`; the lower block's data
//!   always goes on the left of `op`, and a rank folds the lower partner's partial result into
//!   its own output: rank order is kept, so non-commutative operations work. ⌈log2 n⌉ steps of
//!   the whole vector.
//! - [`linear`]: a pipelined chain: the vector is cut into segments (at least
//!   [`SEGMENT`] bytes, at most [`MAX_SEGMENTS`] of them); for each segment rank r receives the
//!   prefix of ranks `< r` from r − 1, combines it with its own input (prefix on the left) and
//!   passes its prefix on to r + 1. n − 1 + segments steps of one segment: for large vectors.

use super::elems;
use crate::coll::choice::Scan;
use crate::coll::schedule::{BufId, RECV, Schedule};

/// Linear scan's segments hold at least this many bytes.
pub const SEGMENT: usize = 32 << 10;
/// At most this many segments (a step each).
pub const MAX_SEGMENTS: usize = 1024;

/// A rank's schedule for a scan (`exclusive`: an exscan) of `count` elements of `input`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn schedule(
    n: u32,
    me: u32,
    input: BufId,
    count: usize,
    elem: usize,
    a: Scan,
    commutative: bool,
    exclusive: bool,
) -> Schedule {
    let mut s = Schedule::new();
    match a {
        Scan::RecursiveDoubling => {
            recursive_doubling(&mut s, n, me, input, count, elem, commutative, exclusive)
        }
        Scan::Linear => linear(&mut s, n, me, input, count, elem, exclusive),
    }
    s
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn recursive_doubling(
    s: &mut Schedule,
    n: u32,
    me: u32,
    input: BufId,
    count: usize,
    elem: usize,
    commutative: bool,
    exclusive: bool,
) {
    let base = s.steps();
    if count == 0 {
        return;
    }
    let all = |b| elems(b, 0, count, elem);
    let (mut partial, mut tmp) = (s.tmp(count * elem), s.tmp(count * elem));
    let r = s.round();
    s.copy(r, all(input), all(partial));
    if !exclusive {
        s.copy(r, all(input), all(RECV));
    }
    // Exscan: whether RECV holds something yet.
    let mut have = !exclusive;
    let (mut mask, mut k) = (1u32, 0u32);
    while mask < n {
        let dst = me ^ mask;
        if dst < n {
            let r = s.round();
            s.send(r, dst, base + k, all(partial));
            s.recv(r, dst, base + k, all(tmp));
            let r = s.round();
            if dst < me {
                if have {
                    s.reduce(r, all(tmp), all(RECV), count);
                } else {
                    s.copy(r, all(tmp), all(RECV));
                    have = true;
                }
                s.reduce(r, all(tmp), all(partial), count);
            } else if commutative {
                s.reduce(r, all(tmp), all(partial), count);
            } else {
                // partial op tmp: the partner's block is above.
                s.reduce(r, all(partial), all(tmp), count);
                std::mem::swap(&mut partial, &mut tmp);
            }
        }
        mask <<= 1;
        k += 1;
    }
}

pub(crate) fn linear(
    s: &mut Schedule,
    n: u32,
    me: u32,
    input: BufId,
    count: usize,
    elem: usize,
    exclusive: bool,
) {
    let base = s.steps();
    if count == 0 {
        return;
    }
    let all = |b| elems(b, 0, count, elem);
    let seg = (SEGMENT / elem.max(1)).max(count.div_ceil(MAX_SEGMENTS)).max(1);
    let nseg = count.div_ceil(seg);
    let part = |b, j: usize| elems(b, j * seg, ((j + 1) * seg).min(count), elem);
    let len = |j: usize| ((j + 1) * seg).min(count) - j * seg;
    let last = me + 1 == n;
    let init = s.round();
    if !exclusive {
        s.copy(init, all(input), all(RECV));
    }
    if me == 0 {
        // The prefix of rank 0 is its input.
        if !last {
            for j in 0..nseg {
                s.send(init, 1, base + j as u32, part(input, j));
            }
        }
        return;
    }
    if !exclusive {
        // RECV = prefix op mine, then passed on.
        let tmp = s.tmp(count * elem);
        for j in 0..nseg {
            let rj = s.round_after(&[]);
            s.recv(rj, me - 1, base + j as u32, part(tmp, j));
            let fj = s.round_after(&[init, rj]);
            s.reduce(fj, part(tmp, j), part(RECV, j), len(j));
            if !last {
                s.send(fj, me + 1, base + j as u32, part(RECV, j));
            }
        }
        return;
    }
    // Exscan: the prefix of ranks < me is the output; mine = prefix op input goes on. In place the
    // input is saved first (the prefix overwrites it).
    let mine = if input == RECV {
        let t = s.tmp(count * elem);
        s.copy(init, all(RECV), all(t));
        t
    } else {
        input
    };
    let fwd = if last { None } else { Some(s.tmp(count * elem)) };
    for j in 0..nseg {
        let rj = s.round_after(&[init]);
        s.recv(rj, me - 1, base + j as u32, part(RECV, j));
        if let Some(f) = fwd {
            let fj = s.round_after(&[rj]);
            s.copy(fj, part(mine, j), part(f, j));
            s.reduce(fj, part(RECV, j), part(f, j), len(j));
            s.send(fj, me + 1, base + j as u32, part(f, j));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coll::algo::reduce_scatter::tests::{E, Op, affine, data, fold, sum};
    use crate::coll::schedule::SEND;
    use crate::coll::sim::run;

    fn case(a: Scan, n: u32, count: usize, in_place: bool, commutative: bool, exclusive: bool, op: &Op) {
        let input = if in_place { RECV } else { SEND };
        let s = (0..n).map(|me| schedule(n, me, input, count, E, a, commutative, exclusive)).collect();
        // Outputs start as a marker, to see that exscan leaves rank 0's alone.
        let marker = vec![0xa5u8; count * E];
        let (send, recv): (Vec<_>, Vec<_>) = (0..n)
            .map(|r| if in_place { (vec![], data(r, count)) } else { (data(r, count), marker.clone()) })
            .unzip();
        let what = format!("{a:?} n={n} count={count} in_place={in_place} exclusive={exclusive}");
        let got = run(s, send, recv, op).unwrap_or_else(|e| panic!("{what}: {e}"));
        for (r, g) in got.iter().enumerate() {
            let r = r as u32;
            let want = match (exclusive, r) {
                (false, _) => fold(0, r + 1, count, op),
                (true, 0) if in_place => data(0, count),
                (true, 0) => marker.clone(),
                (true, _) => fold(0, r, count, op),
            };
            assert!(*g == want, "{what}: rank {r}");
        }
    }

    #[test]
    fn scan_and_exscan_every_algorithm_and_size() {
        for n in 1..=9u32 {
            for count in [0usize, 1, 2, 3, 5, 8, 9, 16, 37] {
                for in_place in [false, true] {
                    for exclusive in [false, true] {
                        for a in [Scan::RecursiveDoubling, Scan::Linear] {
                            case(a, n, count, in_place, true, exclusive, &sum);
                            case(a, n, count, in_place, false, exclusive, &affine);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn choice_and_environment() {
        use crate::coll::choice::{self, Forced, SCAN_LARGE};
        let f = Forced::parse(|k| (k == "MADMPI_COLL_SCAN").then(|| "linear".to_string())).unwrap();
        assert_eq!(f.scan, Some(Scan::Linear));
        let e = Forced::parse(|k| (k == "MADMPI_COLL_SCAN").then(|| "x".to_string())).unwrap_err();
        assert!(e.contains("MADMPI_COLL_SCAN") && e.contains("recursive_doubling"), "{e}");
        assert_eq!(choice::scan(None, 8, SCAN_LARGE), Scan::Linear);
        assert_eq!(choice::scan(None, 2, SCAN_LARGE), Scan::RecursiveDoubling);
        assert_eq!(choice::scan(None, 8, SCAN_LARGE - 1), Scan::RecursiveDoubling);
        assert_eq!(choice::scan(Some(Scan::Linear), 8, 8), Scan::Linear);
    }

    #[test]
    fn linear_cuts_large_vectors_into_segments() {
        // 100 000 elements of 8 bytes: 4096 per 32 KiB segment, 25 segments; rank 1 of 3
        // receives and forwards each.
        let s = schedule(3, 1, SEND, 100_000, 8, Scan::Linear, false, false);
        assert_eq!(s.rounds.len(), 1 + 2 * 25);
        // Many segments: capped at MAX_SEGMENTS.
        let s = schedule(2, 0, SEND, 1 << 26, 1, Scan::Linear, false, true);
        assert_eq!(s.rounds[0].xfers.len(), MAX_SEGMENTS);
        for n in [2, 3, 5] {
            for (count, elem) in [(100_000usize, 8usize), (70_001, 1)] {
                for exclusive in [false, true] {
                    let sc = (0..n)
                        .map(|me| schedule(n, me, SEND, count, elem, Scan::Linear, false, exclusive))
                        .collect();
                    let mk = |r: u32| {
                        (0..count * elem)
                            .map(|i| ((i as u32).wrapping_mul(2 * r + 1) >> 3) as u8 ^ r as u8)
                            .collect::<Vec<u8>>()
                    };
                    let xor = |i: &[u8], o: &mut [u8], _| o.iter_mut().zip(i).for_each(|(o, i)| *o ^= i);
                    let got =
                        run(sc, (0..n).map(mk).collect(), vec![vec![0; count * elem]; n as usize], &xor)
                            .unwrap();
                    // acc: the xor of ranks 0..r (exscan's answer), then of 0..=r (scan's).
                    let mut acc = vec![0u8; count * elem];
                    for r in 0..n {
                        let before = acc.clone();
                        xor(&mk(r), &mut acc, 0);
                        let want = if exclusive { before } else { acc.clone() };
                        if !exclusive || r > 0 {
                            assert!(got[r as usize] == want, "n={n} count={count} rank {r}");
                        }
                    }
                }
            }
        }
    }
}
