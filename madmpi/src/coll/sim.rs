//! An in-process simulator: runs the schedules of all n ranks of a collective against each
//! other, without processes or nmad, and returns every rank's output buffer. Messages match by
//! (source, destination, step) in order, receives must get exactly the bytes they expect, and a
//! run that stops with rounds left (a deadlock) or messages unreceived is an error. Sends take
//! their bytes when posted (eager), so a schedule that changed a buffer while it was being sent
//! would go unnoticed here: `Schedule::validate` checks that within a round, and rounds are
//! ordered by their dependencies.
//!
//! The tests below run every algorithm for n = 1..=9 ranks, every root, in place or not, over a
//! range of counts, with a commutative operation (wrapping sum) and a non-commutative one
//! (composition of affine maps), against a locally computed reference.

use super::algo;
use super::choice::{Allreduce, Barrier, Bcast, Reduce};
use super::schedule::{Local, RECV, Range, SEND, Schedule, Xfer};
use std::collections::{HashMap, VecDeque};

/// `inout = input op inout` on `count` elements.
type Reduce_ = dyn Fn(&[u8], &mut [u8], usize);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum St {
    Waiting,
    Running,
    Done,
}

struct RankRun {
    s: Schedule,
    bufs: Vec<Vec<u8>>,
    st: Vec<St>,
    /// Pending receives of each running round: (peer, step, range).
    pending: Vec<Vec<(u32, u32, Range)>>,
}

fn read(bufs: &[Vec<u8>], r: Range) -> Vec<u8> {
    bufs[r.buf][r.off..r.end()].to_vec()
}

/// Runs the schedules (`scheds[i]` for rank i) on inputs `send[i]` / initial outputs `recv[i]`.
/// Returns the output buffers.
pub(crate) fn run(
    scheds: Vec<Schedule>,
    send: Vec<Vec<u8>>,
    recv: Vec<Vec<u8>>,
    op: &Reduce_,
) -> Result<Vec<Vec<u8>>, String> {
    let mut ranks: Vec<RankRun> = scheds
        .into_iter()
        .zip(send.into_iter().zip(recv))
        .map(|(s, (snd, rcv))| {
            s.validate(snd.len(), rcv.len()).expect("a valid schedule");
            let mut bufs = vec![snd, rcv];
            bufs.extend(s.tmp_len[2..].iter().map(|&l| vec![0xeeu8; l]));
            let n = s.rounds.len();
            RankRun { s, bufs, st: vec![St::Waiting; n], pending: vec![Vec::new(); n] }
        })
        .collect();
    let mut mail: HashMap<(u32, u32, u32), VecDeque<Vec<u8>>> = HashMap::new();
    loop {
        let mut changed = false;
        for (me, rk) in ranks.iter_mut().enumerate() {
            let me = me as u32;
            // Receives.
            for r in 0..rk.st.len() {
                let mut keep = Vec::new();
                for (peer, step, range) in std::mem::take(&mut rk.pending[r]) {
                    match mail.get_mut(&(peer, me, step)).and_then(|q| q.pop_front()) {
                        Some(m) => {
                            if m.len() != range.len {
                                return Err(format!(
                                    "rank {me} step {step}: {} bytes from {peer}, {} expected",
                                    m.len(),
                                    range.len
                                ));
                            }
                            rk.bufs[range.buf][range.off..range.end()].copy_from_slice(&m);
                            changed = true;
                        }
                        None => keep.push((peer, step, range)),
                    }
                }
                rk.pending[r] = keep;
                if rk.st[r] == St::Running && rk.pending[r].is_empty() {
                    rk.st[r] = St::Done;
                    changed = true;
                }
            }
            // Starts.
            for r in 0..rk.st.len() {
                if rk.st[r] != St::Waiting || !rk.s.rounds[r].deps.iter().all(|&d| rk.st[d] == St::Done) {
                    continue;
                }
                for l in rk.s.rounds[r].local.clone() {
                    match l {
                        Local::Copy { from, to } => {
                            let d = read(&rk.bufs, from);
                            rk.bufs[to.buf][to.off..to.end()].copy_from_slice(&d);
                        }
                        Local::Reduce { from, into, count } => {
                            let d = read(&rk.bufs, from);
                            op(&d, &mut rk.bufs[into.buf][into.off..into.end()], count);
                        }
                    }
                }
                for x in rk.s.rounds[r].xfers.clone() {
                    match x {
                        Xfer::Send { peer, step, data } => {
                            mail.entry((me, peer, step)).or_default().push_back(read(&rk.bufs, data))
                        }
                        Xfer::Recv { peer, step, data } => rk.pending[r].push((peer, step, data)),
                    }
                }
                rk.st[r] = St::Running;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for (me, rk) in ranks.iter().enumerate() {
        if let Some(r) = rk.st.iter().position(|&s| s != St::Done) {
            return Err(format!("rank {me}: stuck at round {r} of {}", rk.st.len()));
        }
    }
    if let Some((k, _)) = mail.iter().find(|(_, q)| !q.is_empty()) {
        return Err(format!("message (from, to, step) {k:?} never received"));
    }
    Ok(ranks.into_iter().map(|mut r| r.bufs.swap_remove(RECV)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Elements: u32 pairs (a, b), the map t ↦ a·t + b; `x op y` = x then y (non-commutative).
    const E: usize = 8;

    fn affine(input: &[u8], inout: &mut [u8], count: usize) {
        for (i, o) in input.chunks_exact(E).zip(inout.chunks_exact_mut(E)).take(count) {
            let g = |b: &[u8], k: usize| u32::from_le_bytes(b[k..k + 4].try_into().unwrap());
            let (xa, xb, ya, yb) = (g(i, 0), g(i, 4), g(o, 0), g(o, 4));
            o[..4].copy_from_slice(&ya.wrapping_mul(xa).to_le_bytes());
            o[4..].copy_from_slice(&ya.wrapping_mul(xb).wrapping_add(yb).to_le_bytes());
        }
    }

    fn sum(input: &[u8], inout: &mut [u8], count: usize) {
        for (i, o) in input.chunks_exact(E).zip(inout.chunks_exact_mut(E)).take(count) {
            let v = u64::from_le_bytes(i.try_into().unwrap())
                .wrapping_add(u64::from_le_bytes((&*o).try_into().unwrap()));
            o.copy_from_slice(&v.to_le_bytes());
        }
    }

    fn data(rank: u32, count: usize) -> Vec<u8> {
        (0..count * E).map(|i| (i as u32 * 7 + rank * 31 + 1) as u8 | 1).collect()
    }

    fn reference(n: u32, count: usize, op: &Reduce_) -> Vec<u8> {
        let mut acc = data(n - 1, count);
        for r in (0..n - 1).rev() {
            // acc = x_r op acc, from the right: x0 op (x1 op (… op x_{n−1})).
            op(&data(r, count), &mut acc, count);
        }
        acc
    }

    const COUNTS: [usize; 9] = [0, 1, 2, 3, 5, 8, 9, 16, 37];

    #[test]
    fn barrier_every_size() {
        for n in 1..=9 {
            let s = (0..n).map(|me| algo::barrier(n, me, Barrier::Dissemination)).collect();
            run(s, vec![vec![]; n as usize], vec![vec![]; n as usize], &sum).unwrap();
        }
    }

    #[test]
    fn bcast_every_algorithm_size_and_root() {
        for a in [Bcast::Binomial, Bcast::ScatterRing] {
            for n in 1..=9u32 {
                for len in [0usize, 1, 2, 5, 8, 9, 100, 1001] {
                    for root in 0..n {
                        let want: Vec<u8> = (0..len).map(|i| (i * 13 + 5) as u8).collect();
                        let recv =
                            (0..n).map(|r| if r == root { want.clone() } else { vec![0; len] }).collect();
                        let s = (0..n).map(|me| algo::bcast(n, me, root, len, a)).collect();
                        let got = run(s, vec![vec![]; n as usize], recv, &sum)
                            .unwrap_or_else(|e| panic!("{a:?} n={n} len={len} root={root}: {e}"));
                        assert!(got.iter().all(|g| *g == want), "{a:?} n={n} len={len} root={root}");
                    }
                }
            }
        }
    }

    fn reduce_case(a: Reduce, n: u32, count: usize, root: u32, in_place: bool, op: &Reduce_) {
        // In place only at the root (elsewhere the slice is a plain input, as the API binds it).
        let input = |me| if in_place && me == root { RECV } else { SEND };
        let s = (0..n).map(|me| algo::reduce(n, me, root, input(me), count, E, a)).collect();
        let (send, recv): (Vec<_>, Vec<_>) = (0..n)
            .map(|r| match (in_place, r == root) {
                (true, true) => (vec![], data(r, count)),
                (_, true) => (data(r, count), vec![0; count * E]),
                (_, false) => (data(r, count), vec![]),
            })
            .unzip();
        let got = run(s, send, recv, op)
            .unwrap_or_else(|e| panic!("{a:?} n={n} count={count} root={root} in_place={in_place}: {e}"));
        assert_eq!(got[root as usize], reference(n, count, op), "{a:?} n={n} count={count} root={root}");
    }

    #[test]
    fn reduce_every_algorithm_size_and_root() {
        for n in 1..=9u32 {
            for count in COUNTS {
                for root in 0..n {
                    for in_place in [false, true] {
                        reduce_case(Reduce::Binomial, n, count, root, in_place, &sum);
                        reduce_case(Reduce::Ordered, n, count, root, in_place, &sum);
                        reduce_case(Reduce::Ordered, n, count, root, in_place, &affine);
                    }
                }
            }
        }
    }

    fn allreduce_case(a: Allreduce, n: u32, count: usize, in_place: bool, commutative: bool, op: &Reduce_) {
        let input = if in_place { RECV } else { SEND };
        let s = (0..n).map(|me| algo::allreduce(n, me, input, count, E, a, commutative)).collect();
        let (send, recv): (Vec<_>, Vec<_>) = (0..n)
            .map(|r| if in_place { (vec![], data(r, count)) } else { (data(r, count), vec![0; count * E]) })
            .unzip();
        let got = run(s, send, recv, op)
            .unwrap_or_else(|e| panic!("{a:?} n={n} count={count} in_place={in_place}: {e}"));
        let want = reference(n, count, op);
        for (r, g) in got.iter().enumerate() {
            assert_eq!(*g, want, "{a:?} n={n} count={count} in_place={in_place}: rank {r}");
        }
    }

    #[test]
    fn allreduce_every_algorithm_and_size() {
        for n in 1..=9u32 {
            for count in COUNTS {
                for in_place in [false, true] {
                    allreduce_case(Allreduce::RecursiveDoubling, n, count, in_place, true, &sum);
                    allreduce_case(Allreduce::RecursiveDoubling, n, count, in_place, false, &affine);
                    allreduce_case(Allreduce::ReduceBcast, n, count, in_place, true, &sum);
                    allreduce_case(Allreduce::ReduceBcast, n, count, in_place, false, &affine);
                    if count >= super::super::schedule::pof2_below(n) as usize {
                        allreduce_case(Allreduce::Rabenseifner, n, count, in_place, true, &sum);
                    }
                }
            }
        }
    }

    #[test]
    fn schedule_shapes() {
        // Dissemination: ⌈log2 n⌉ rounds of one send and one receive.
        for (n, rounds) in [(1, 0), (2, 1), (3, 2), (4, 2), (5, 3), (8, 3), (9, 4)] {
            let s = algo::barrier(n, 0, Barrier::Dissemination);
            assert_eq!(s.rounds.len(), rounds, "n={n}");
        }
        // Binomial bcast from 0 on 8 ranks: the root sends to 4, 2, 1; rank 6 receives from 4
        // and sends to 7.
        let peers = |s: &Schedule| {
            s.rounds
                .iter()
                .flat_map(|r| r.xfers.iter())
                .map(|x| match *x {
                    Xfer::Send { peer, .. } => (true, peer),
                    Xfer::Recv { peer, .. } => (false, peer),
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(peers(&algo::bcast(8, 0, 0, 10, Bcast::Binomial)), [(true, 4), (true, 2), (true, 1)]);
        assert_eq!(peers(&algo::bcast(8, 6, 0, 10, Bcast::Binomial)), [(false, 4), (true, 7)]);
        // Recursive doubling on 5 ranks: rank 0 gives its data to rank 1 and gets the result back.
        let s = algo::allreduce(5, 0, SEND, 4, E, Allreduce::RecursiveDoubling, true);
        assert_eq!(peers(&s), [(true, 1), (false, 1)]);
    }
}
