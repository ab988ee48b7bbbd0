//! Reduce-scatter of a vector of `Σ counts` elements of `elem` bytes, in buffer `input` of every
//! rank: rank i receives block i (`counts[i]` elements at `Σ counts[..i]`) of the reduction, at
//! the start of [`RECV`]. `input` is [`SEND`], or [`RECV`] in place (then [`RECV`] holds the whole
//! vector on input, and its bytes after the rank's block are left with unspecified values).
//! `MPI_Reduce_scatter_block` is the same with equal counts.
//!
//! - [`recursive_halving`] (commutative operations): non-powers of two are folded as in
//!   allreduce (each even rank below `2·rem` gives its vector to the odd rank above it); then in
//!   log2 p exchanges each rank sends the half of its current block range it gives up and
//!   reduces the half it keeps, so new rank `nr` ends with block `nr` (the blocks of the real
//!   ranks it stands for). Odd ranks of the fold give their even neighbour its block back.
//!   Sends about `total·(p−1)/p` elements per rank (MPICH's choice below 512 KiB).
//! - [`pairwise`] (any operation): n − 1 steps; in step i a rank sends its input's block of rank
//!   `me + i` to it and receives its own block of rank `me − i`'s input. Commutative operations
//!   fold each block in as it comes; otherwise the blocks of ranks below `me` arrive in
//!   decreasing rank order and are put on the left of a *left* accumulator (starting from the
//!   rank's own block), those of ranks above arrive from `n − 1` down and go on the left of a
//!   *right* accumulator, and the result is `left op right`: rank order is kept. Each rank
//!   sends exactly the bytes it must (for large vectors).
//! - [`reduce_scatterv`] (any operation): a reduce of the whole vector to rank 0 (binomial tree
//!   if commutative, else the ordered tree, both from `reduce`) then rank 0 sends each rank its
//!   block: the fallback for non-commutative operations.

use super::elems;
use crate::coll::choice::ReduceScatter;
use crate::coll::schedule::{BufId, Local, RECV, Range, STEP_BLOCK, Schedule, Xfer, pof2_below};

/// The prefix sums of `counts`: `d[i] = Σ counts[..i]`, `d[n]` the total.
pub(crate) fn displs(counts: &[usize]) -> Vec<usize> {
    let mut d = Vec::with_capacity(counts.len() + 1);
    d.push(0);
    for c in counts {
        d.push(d[d.len() - 1] + c);
    }
    d
}

/// A rank's schedule for a reduce-scatter of `input` (`counts.len()` is the communicator size).
pub(crate) fn schedule(
    me: u32,
    input: BufId,
    counts: &[usize],
    elem: usize,
    a: ReduceScatter,
    commutative: bool,
) -> Schedule {
    let mut s = Schedule::new();
    match a {
        ReduceScatter::RecursiveHalving => recursive_halving(&mut s, me, input, counts, elem),
        ReduceScatter::Pairwise => pairwise(&mut s, me, input, counts, elem, commutative),
        ReduceScatter::ReduceScatterv => reduce_scatterv(&mut s, me, input, counts, elem, commutative),
    }
    s
}

/// Needs a commutative operation.
pub(crate) fn recursive_halving(s: &mut Schedule, me: u32, input: BufId, counts: &[usize], elem: usize) {
    let base = s.steps();
    let n = counts.len() as u32;
    let d = displs(counts);
    let total = d[n as usize];
    if total == 0 {
        return;
    }
    let all = |b| elems(b, 0, total, elem);
    let mine = Range::new(RECV, 0, counts[me as usize] * elem);
    let (p, give_back) = (pof2_below(n), base + 63);
    let rem = n - p;
    if me < 2 * rem && me.is_multiple_of(2) {
        // Folded out: give the vector to the odd rank above, get the block back.
        let r = s.round();
        s.send(r, me + 1, base, all(input));
        if mine.len > 0 {
            let r = s.round();
            s.recv(r, me + 1, give_back, mine);
        }
        return;
    }
    let (acc, tmp) = (s.tmp(total * elem), s.tmp(total * elem));
    let r = s.round();
    s.copy(r, all(input), all(acc));
    let nr = if me < 2 * rem {
        s.recv(r, me - 1, base, all(tmp));
        let r = s.round();
        s.reduce(r, all(tmp), all(acc), total);
        me / 2
    } else {
        me - rem
    };
    // The first element of new rank b's block (the blocks of the real ranks it stands for).
    let nd = |b: u32| d[if b < rem { 2 * b } else { b + rem } as usize];
    let real = |b: u32| if b < rem { 2 * b + 1 } else { b + rem };
    let (mut lo, mut hi, mut mask, mut k) = (0u32, p, p >> 1, 1u32);
    while mask > 0 {
        let dst = real(nr ^ mask);
        let mid = lo + mask;
        let (keep, give) = if nr & mask == 0 { ((lo, mid), (mid, hi)) } else { ((mid, hi), (lo, mid)) };
        let (gs, ge, ks, ke) = (nd(give.0), nd(give.1), nd(keep.0), nd(keep.1));
        let r = s.round();
        if ge > gs {
            s.send(r, dst, base + k, elems(acc, gs, ge, elem));
        }
        if ke > ks {
            s.recv(r, dst, base + k, elems(tmp, ks, ke, elem));
        }
        let r = s.round();
        s.reduce(r, elems(tmp, ks, ke, elem), elems(acc, ks, ke, elem), ke - ks);
        (lo, hi) = keep;
        mask >>= 1;
        k += 1;
    }
    let r = s.round();
    let me_ = me as usize;
    if me < 2 * rem {
        // Holds the blocks of me − 1 and me.
        if counts[me_ - 1] > 0 {
            s.send(r, me - 1, give_back, elems(acc, d[me_ - 1], d[me_], elem));
        }
    }
    s.copy(r, elems(acc, d[me_], d[me_ + 1], elem), mine);
}

/// Any operation (rank order kept when `commutative` is false).
pub(crate) fn pairwise(
    s: &mut Schedule,
    me: u32,
    input: BufId,
    counts: &[usize],
    elem: usize,
    commutative: bool,
) {
    let base = s.steps();
    let n = counts.len() as u32;
    let d = displs(counts);
    if d[n as usize] == 0 {
        return;
    }
    let cnt = counts[me as usize];
    let block = |b, r: u32| elems(b, d[r as usize], d[r as usize + 1], elem);
    let own = |b| elems(b, 0, cnt, elem);
    let (left, tmp) = (s.tmp(cnt * elem), s.tmp(cnt * elem));
    let mut right: Option<BufId> = None;
    let r = s.round();
    s.copy(r, block(input, me), own(left));
    // The block received in the previous step (from this rank), folded in at the next round.
    let mut prev: Option<u32> = None;
    let mut fold = |s: &mut Schedule, r: usize, src: u32| {
        if commutative || src < me {
            s.reduce(r, own(tmp), own(left), cnt);
        } else if let Some(rt) = right {
            s.reduce(r, own(tmp), own(rt), cnt);
        } else {
            let rt = s.tmp(cnt * elem);
            s.copy(r, own(tmp), own(rt));
            right = Some(rt);
        }
    };
    for i in 1..n {
        let (dst, src) = ((me + i) % n, (me + n - i) % n);
        let r = s.round();
        if let Some(p) = prev {
            fold(s, r, p);
        }
        if counts[dst as usize] > 0 {
            s.send(r, dst, base + i, block(input, dst));
        }
        if cnt > 0 {
            s.recv(r, src, base + i, own(tmp));
        }
        prev = Some(src);
    }
    let r = s.round();
    if let Some(p) = prev {
        fold(s, r, p);
    }
    match right {
        Some(rt) => {
            s.reduce(r, own(left), own(rt), cnt);
            s.copy(r, own(rt), own(RECV));
        }
        None => s.copy(r, own(left), own(RECV)),
    }
}

/// Any operation: a reduce to rank 0, then rank 0 sends the blocks.
pub(crate) fn reduce_scatterv(
    s: &mut Schedule,
    me: u32,
    input: BufId,
    counts: &[usize],
    elem: usize,
    commutative: bool,
) {
    let n = counts.len() as u32;
    let d = displs(counts);
    let total = d[n as usize];
    // Rank 0 gathers the whole result in RECV in place (it holds the whole vector), else in a
    // temporary.
    let out = if me == 0 && input != RECV { s.tmp(total * elem) } else { RECV };
    let mut sub = Schedule::new();
    if commutative {
        super::reduce::binomial(&mut sub, n, me, 0, input, total, elem);
    } else {
        super::reduce::ordered(&mut sub, n, me, 0, input, total, elem);
    }
    splice(s, sub, out);
    let base = s.steps();
    if total == 0 {
        return;
    }
    let r = s.round();
    if me == 0 {
        for i in 1..n {
            if counts[i as usize] > 0 {
                s.send(r, i, base, elems(out, d[i as usize], d[i as usize + 1], elem));
            }
        }
        s.copy(r, elems(out, 0, counts[0], elem), elems(RECV, 0, counts[0], elem));
    } else if counts[me as usize] > 0 {
        s.recv(r, 0, base, elems(RECV, 0, counts[me as usize], elem));
    }
}

/// Appends `sub` (a schedule built on its own) to `s`: its temporaries become new temporaries of
/// `s`, its [`RECV`] becomes `recv`, its steps are moved to blocks reserved in `s`, and its
/// rounds without dependencies depend on the last round of `s` (so they chain).
pub(crate) fn splice(s: &mut Schedule, mut sub: Schedule, recv: BufId) {
    let blocks = sub.steps() / STEP_BLOCK;
    let off = s.steps();
    for _ in 1..blocks {
        s.steps();
    }
    let ids: Vec<BufId> = sub
        .tmp_len
        .iter()
        .enumerate()
        .map(|(i, &l)| match i {
            0 => 0,
            1 => recv,
            _ => s.tmp(l),
        })
        .collect();
    let m = |r: Range| Range { buf: ids[r.buf], ..r };
    let first = s.rounds.len();
    let prev: Vec<usize> = first.checked_sub(1).into_iter().collect();
    for round in sub.rounds {
        let deps: Vec<usize> =
            if round.deps.is_empty() { prev.clone() } else { round.deps.iter().map(|d| d + first).collect() };
        let r = s.round_after(&deps);
        for l in round.local {
            match l {
                Local::Copy { from, to } => s.copy(r, m(from), m(to)),
                Local::Reduce { from, into, count } => s.reduce(r, m(from), m(into), count),
            }
        }
        for x in round.xfers {
            match x {
                Xfer::Send { peer, step, data } => s.send(r, peer, step + off, m(data)),
                Xfer::Recv { peer, step, data } => s.recv(r, peer, step + off, m(data)),
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::coll::schedule::SEND;
    use crate::coll::sim::run;

    /// Elements: u32 pairs (a, b), the map t ↦ a·t + b; `x op y` = x then y (non-commutative):
    /// the same operation as `sim`'s tests.
    pub(crate) const E: usize = 8;

    pub(crate) fn affine(input: &[u8], inout: &mut [u8], count: usize) {
        for (i, o) in input.chunks_exact(E).zip(inout.chunks_exact_mut(E)).take(count) {
            let g = |b: &[u8], k: usize| u32::from_le_bytes(b[k..k + 4].try_into().unwrap());
            let (xa, xb, ya, yb) = (g(i, 0), g(i, 4), g(o, 0), g(o, 4));
            o[..4].copy_from_slice(&ya.wrapping_mul(xa).to_le_bytes());
            o[4..].copy_from_slice(&ya.wrapping_mul(xb).wrapping_add(yb).to_le_bytes());
        }
    }

    pub(crate) fn sum(input: &[u8], inout: &mut [u8], count: usize) {
        for (i, o) in input.chunks_exact(E).zip(inout.chunks_exact_mut(E)).take(count) {
            let v = u64::from_le_bytes(i.try_into().unwrap())
                .wrapping_add(u64::from_le_bytes((&*o).try_into().unwrap()));
            o.copy_from_slice(&v.to_le_bytes());
        }
    }

    pub(crate) type Op = dyn Fn(&[u8], &mut [u8], usize);

    pub(crate) fn data(rank: u32, count: usize) -> Vec<u8> {
        (0..count * E).map(|i| (i as u32 * 7 + rank * 31 + 1) as u8 | 1).collect()
    }

    /// `x_lo op … op x_{hi−1}` over `count` elements (`lo < hi`).
    pub(crate) fn fold(lo: u32, hi: u32, count: usize, op: &Op) -> Vec<u8> {
        let mut acc = data(hi - 1, count);
        for r in (lo..hi - 1).rev() {
            op(&data(r, count), &mut acc, count);
        }
        acc
    }

    fn case(a: ReduceScatter, counts: &[usize], in_place: bool, commutative: bool, op: &Op) {
        let n = counts.len() as u32;
        let d = displs(counts);
        let total = d[n as usize];
        let input = if in_place { RECV } else { SEND };
        let s = (0..n).map(|me| schedule(me, input, counts, E, a, commutative)).collect();
        let (send, recv): (Vec<_>, Vec<_>) = (0..n)
            .map(|r| {
                if in_place {
                    (vec![], data(r, total))
                } else {
                    (data(r, total), vec![0; counts[r as usize] * E])
                }
            })
            .unzip();
        let got = run(s, send, recv, op)
            .unwrap_or_else(|e| panic!("{a:?} counts={counts:?} in_place={in_place}: {e}"));
        let want = fold(0, n, total, op);
        for (r, g) in got.iter().enumerate() {
            let c = counts[r] * E;
            assert_eq!(
                g[..c],
                want[d[r] * E..d[r + 1] * E],
                "{a:?} counts={counts:?} in_place={in_place} rank {r}"
            );
        }
    }

    #[test]
    fn reduce_scatter_every_algorithm_and_size() {
        for n in 1..=9usize {
            let mut shapes: Vec<Vec<usize>> = [0usize, 1, 2, 5].iter().map(|&c| vec![c; n]).collect();
            // Uneven, some empty blocks.
            shapes.push((0..n).map(|i| (i * 7 + 3) % 5).collect());
            shapes.push((0..n).map(|i| if i == n / 2 { 9 } else { 0 }).collect());
            for counts in &shapes {
                for in_place in [false, true] {
                    for a in [
                        ReduceScatter::RecursiveHalving,
                        ReduceScatter::Pairwise,
                        ReduceScatter::ReduceScatterv,
                    ] {
                        case(a, counts, in_place, true, &sum);
                    }
                    case(ReduceScatter::Pairwise, counts, in_place, false, &affine);
                    case(ReduceScatter::ReduceScatterv, counts, in_place, false, &affine);
                }
            }
        }
    }

    #[test]
    fn choice_and_environment() {
        use crate::coll::choice::{self, Forced, REDUCE_SCATTER_LARGE};
        let f =
            Forced::parse(|k| (k == "MADMPI_COLL_REDUCE_SCATTER").then(|| "pairwise".to_string())).unwrap();
        assert_eq!(f.reduce_scatter, Some(ReduceScatter::Pairwise));
        let e = Forced::parse(|k| (k == "MADMPI_COLL_REDUCE_SCATTER").then(|| "x".to_string())).unwrap_err();
        assert!(e.contains("MADMPI_COLL_REDUCE_SCATTER") && e.contains("reduce_scatterv"), "{e}");
        let (rh, pw, rs) =
            (ReduceScatter::RecursiveHalving, ReduceScatter::Pairwise, ReduceScatter::ReduceScatterv);
        assert_eq!(choice::reduce_scatter(None, 100, true), rh);
        assert_eq!(choice::reduce_scatter(None, 100, false), rs);
        assert_eq!(choice::reduce_scatter(None, REDUCE_SCATTER_LARGE, true), pw);
        assert_eq!(choice::reduce_scatter(None, REDUCE_SCATTER_LARGE, false), pw);
        assert_eq!(choice::reduce_scatter(Some(rh), 100, false), rs, "never wrong results");
        assert_eq!(choice::reduce_scatter(Some(rs), 100, true), rs);
    }

    #[test]
    fn splice_moves_steps_and_buffers() {
        let mut s = Schedule::new();
        let first = s.steps();
        let t = s.tmp(4);
        let r = s.round();
        s.send(r, 1, first, Range::new(t, 0, 4));
        let mut sub = Schedule::new();
        let st = sub.steps();
        let u = sub.tmp(8);
        let r = sub.round();
        sub.recv(r, 1, st + 2, Range::new(u, 0, 8));
        sub.copy(r, Range::new(RECV, 0, 8), Range::new(u, 0, 8));
        splice(&mut s, sub, t + 5);
        assert_eq!(s.tmp_len, [0, 0, 4, 8]);
        assert_eq!(s.rounds[1].deps, [0]);
        assert_eq!(
            s.rounds[1].xfers,
            [Xfer::Recv { peer: 1, step: STEP_BLOCK + 2, data: Range::new(3, 0, 8) }]
        );
        assert_eq!(
            s.rounds[1].local,
            [Local::Copy { from: Range::new(t + 5, 0, 8), to: Range::new(3, 0, 8) }]
        );
    }
}
