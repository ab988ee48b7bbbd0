//! The intercommunicator schedules of groups A and B run against each other in the simulator,
//! for uneven sizes and every root, against references computed here.

use super::*;
use crate::coll::schedule::Xfer;
use crate::coll::sim;

const SIZES: [(u32, u32); 6] = [(1, 1), (1, 2), (2, 1), (2, 3), (3, 5), (4, 4)];

/// `inout += input`, bytewise (wrapping): commutative, so any order gives the reference.
fn sum(input: &[u8], inout: &mut [u8], _count: usize) {
    inout.iter_mut().zip(input).for_each(|(o, i)| *o = o.wrapping_add(*i));
}

/// Runs A's schedules (ranks 0..na of the simulation) and B's (ranks na..): B's peers are
/// renumbered from its own view (local first) into the simulation's.
fn run(a: Vec<Schedule>, b: Vec<Schedule>, send: Vec<Vec<u8>>, recv: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let (na, nb) = (a.len() as u32, b.len() as u32);
    let global = |p: u32| if p < nb { na + p } else { p - nb };
    let b = b.into_iter().map(|mut s| {
        for x in s.rounds.iter_mut().flat_map(|r| r.xfers.iter_mut()) {
            let (Xfer::Send { peer, .. } | Xfer::Recv { peer, .. }) = x;
            *peer = global(*peer);
        }
        s
    });
    sim::run(a.into_iter().chain(b).collect(), send, recv, &sum)
        .unwrap_or_else(|e| panic!("na={na} nb={nb}: {e}"))
}

fn data(rank: u32, len: usize) -> Vec<u8> {
    (0..len).map(|i| (rank as usize * 37 + i * 11 + 1) as u8).collect()
}

/// The bytewise sum of `data(r, len)` over `ranks`.
fn total(ranks: std::ops::Range<u32>, len: usize) -> Vec<u8> {
    let mut t = vec![0u8; len];
    for r in ranks {
        sum(&data(r, len), &mut t, len);
    }
    t
}

#[test]
fn barrier_between_groups() {
    for (na, nb) in SIZES {
        let a = (0..na).map(|me| barrier(na, me)).collect();
        let b = (0..nb).map(|me| barrier(nb, me)).collect();
        let n = (na + nb) as usize;
        run(a, b, vec![vec![]; n], vec![vec![]; n]);
    }
}

#[test]
fn bcast_and_reduce_from_every_root_of_a() {
    let len = 7;
    for (na, nb) in SIZES {
        for root in 0..na {
            for algo in [Bcast::Binomial, Bcast::ScatterRing] {
                let role = |me| if me == root { Root::Here } else { Root::Idle };
                let a = (0..na).map(|me| bcast(na, me, role(me), len, algo)).collect();
                let b = (0..nb).map(|me| bcast(nb, me, Root::Remote(root), len, algo)).collect();
                let recv: Vec<Vec<u8>> =
                    (0..na + nb).map(|r| if r == root { data(99, len) } else { vec![0; len] }).collect();
                let out = run(a, b, vec![vec![]; (na + nb) as usize], recv);
                for (r, o) in out.iter().enumerate() {
                    let want = if r as u32 == root || r as u32 >= na { data(99, len) } else { vec![0; len] };
                    assert_eq!(*o, want, "bcast na={na} nb={nb} root={root} rank {r}");
                }
            }
            for algo in [Reduce::Binomial, Reduce::Ordered] {
                let role = |me| if me == root { Root::Here } else { Root::Idle };
                let a = (0..na).map(|me| reduce(na, me, role(me), len, 1, algo)).collect();
                let b = (0..nb).map(|me| reduce(nb, me, Root::Remote(root), len, 1, algo)).collect();
                let send = (0..na + nb).map(|r| if r < na { vec![] } else { data(r, len) }).collect();
                let recv = (0..na + nb).map(|r| if r == root { vec![0; len] } else { vec![] }).collect();
                let out = run(a, b, send, recv);
                assert_eq!(out[root as usize], total(na..na + nb, len), "reduce na={na} nb={nb} root={root}");
            }
        }
    }
}

#[test]
fn allreduce_and_reduce_scatter_give_each_group_the_others_result() {
    for (na, nb) in SIZES {
        let len = 6;
        let a = (0..na).map(|me| allreduce(na, me, len, 1, Reduce::Binomial, Bcast::Binomial)).collect();
        let b = (0..nb).map(|me| allreduce(nb, me, len, 1, Reduce::Ordered, Bcast::ScatterRing)).collect();
        let n = na + nb;
        let out = run(a, b, (0..n).map(|r| data(r, len)).collect(), vec![vec![0; len]; n as usize]);
        for (r, o) in out.iter().enumerate() {
            let want = if (r as u32) < na { total(na..n, len) } else { total(0..na, len) };
            assert_eq!(*o, want, "allreduce na={na} nb={nb} rank {r}");
        }
        // Counts: A's blocks 1, 2, 3..., B's the same total spread otherwise.
        let ca: Vec<usize> = (1..=na as usize).collect();
        let t: usize = ca.iter().sum();
        let mut cb = vec![t / nb as usize; nb as usize];
        cb[0] += t % nb as usize;
        let a = (0..na).map(|me| reduce_scatter(na, me, &ca, 2, Reduce::Binomial)).collect();
        let b = (0..nb).map(|me| reduce_scatter(nb, me, &cb, 2, Reduce::Ordered)).collect();
        let recv = (0..n)
            .map(|r| vec![0; 2 * if r < na { ca[r as usize] } else { cb[(r - na) as usize] }])
            .collect();
        let out = run(a, b, (0..n).map(|r| data(r, 2 * t)).collect(), recv);
        let (from_b, from_a) = (total(na..n, 2 * t), total(0..na, 2 * t));
        let block = |whole: &[u8], counts: &[usize], i: usize| {
            let at: usize = counts[..i].iter().sum();
            whole[2 * at..2 * (at + counts[i])].to_vec()
        };
        for (r, o) in out.iter().enumerate() {
            let want =
                if r < na as usize { block(&from_b, &ca, r) } else { block(&from_a, &cb, r - na as usize) };
            assert_eq!(*o, want, "reduce_scatter na={na} nb={nb} rank {r}");
        }
    }
}

#[test]
fn gather_scatter_allgather_and_alltoall_across() {
    let b_len = 3;
    for (na, nb) in SIZES {
        let n = na + nb;
        // Gather to A's last rank, scatter back from it.
        let root = na - 1;
        let role = |me| if me == root { Root::Here } else { Root::Idle };
        let blocks: Vec<Range> = (0..nb as usize).map(|j| Range::new(RECV, j * b_len, b_len)).collect();
        let a = (0..na).map(|me| gather(na, role(me), Range::EMPTY, &blocks)).collect();
        let b = (0..nb).map(|_| gather(nb, Root::Remote(root), Range::new(SEND, 0, b_len), &[])).collect();
        let send = (0..n).map(|r| if r < na { vec![] } else { data(r, b_len) }).collect();
        let recv = (0..n).map(|r| vec![0; if r == root { nb as usize * b_len } else { 0 }]).collect();
        let out = run(a, b, send, recv);
        assert_eq!(out[root as usize], (na..n).flat_map(|r| data(r, b_len)).collect::<Vec<_>>(), "gather");
        let sblocks: Vec<Range> = (0..nb as usize).map(|j| Range::new(SEND, j * b_len, b_len)).collect();
        let a = (0..na).map(|me| scatter(na, role(me), &sblocks, Range::EMPTY)).collect();
        let b = (0..nb).map(|_| scatter(nb, Root::Remote(root), &[], Range::new(RECV, 0, b_len))).collect();
        let send = (0..n).map(|r| if r == root { data(5, nb as usize * b_len) } else { vec![] }).collect();
        let recv = (0..n).map(|r| vec![0; if r < na { 0 } else { b_len }]).collect();
        let out = run(a, b, send, recv);
        for j in 0..nb as usize {
            assert_eq!(
                out[na as usize + j],
                data(5, nb as usize * b_len)[j * b_len..(j + 1) * b_len],
                "scatter"
            );
        }
        // Alltoall: rank r's block for remote j is data(r * 16 + j); allgather: data(r).
        let side = |me: u32| if me < na { (na, nb, me) } else { (nb, na, me - na) };
        let scheds = |all: bool| -> (Vec<Schedule>, Vec<Schedule>) {
            let make = |nl: u32, nr: u32| {
                let sends: Vec<Range> = (0..nr as usize)
                    .map(|j| Range::new(SEND, if all { 0 } else { j * b_len }, b_len))
                    .collect();
                let recvs: Vec<Range> =
                    (0..nr as usize).map(|j| Range::new(RECV, j * b_len, b_len)).collect();
                all_to_remote(nl, &sends, &recvs)
            };
            ((0..na).map(|_| make(na, nb)).collect(), (0..nb).map(|_| make(nb, na)).collect())
        };
        for all in [true, false] {
            let (a, b) = scheds(all);
            let send = (0..n)
                .map(|r| {
                    let nr = side(r).1;
                    if all { data(r, b_len) } else { (0..nr).flat_map(|j| data(r * 16 + j, b_len)).collect() }
                })
                .collect();
            let recv = (0..n).map(|r| vec![0; side(r).1 as usize * b_len]).collect();
            let out = run(a, b, send, recv);
            for r in 0..n {
                let (_, nr, me) = side(r);
                let first_remote = if r < na { na } else { 0 };
                let want: Vec<u8> = (0..nr)
                    .flat_map(|j| {
                        let from = first_remote + j;
                        if all { data(from, b_len) } else { data(from * 16 + me, b_len) }
                    })
                    .collect();
                assert_eq!(out[r as usize], want, "all={all} na={na} nb={nb} rank {r}");
            }
        }
    }
}
