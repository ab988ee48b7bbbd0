//! Hierarchical (SMP-aware) forms of barrier, broadcast, reduce and allreduce, for communicators
//! whose ranks span several nodes: the ranks of a node first work among themselves over shared
//! memory, one *leader* per node then runs the flat algorithm between nodes, and the leaders
//! finish within their nodes. Only one message per node pair crosses the network where the flat
//! algorithms send one per rank pair.
//!
//! - barrier: members → leader (0 bytes), dissemination between leaders, leader → members;
//! - bcast: between leaders from the root (the root leads its node), then within each node;
//! - reduce (commutative operations): within each node to its leader (the root leads its node),
//!   then between leaders to the root;
//! - allreduce (commutative operations): reduce within each node, allreduce between leaders
//!   (in place), broadcast within each node.
//!
//! Each phase is a flat schedule of `super` built for the phase's ranks and spliced in
//! ([`Schedule::splice`]) at the steps of its phase number ([`Schedule::phase`]: a rank
//! absent from a phase must agree with the others on the next phase's steps); the flat algorithm of each phase is chosen for its own rank count
//! and size by the caller's `pick` functions. Owns the composition; the node layout comes from
//! [`Layout`].

use super::super::schedule::{BufId, RECV, Range, SEND, Schedule};

/// Which node each rank of a communicator runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// The node (index into `members`) of each rank.
    node: Vec<u32>,
    /// The ranks of each node, ascending; nodes in the order of their lowest rank.
    members: Vec<Vec<u32>>,
}

impl Layout {
    /// From any per-rank node key (equal keys: same node).
    pub(crate) fn new<K: PartialEq>(keys: &[K]) -> Layout {
        let mut firsts: Vec<&K> = Vec::new();
        let mut members: Vec<Vec<u32>> = Vec::new();
        let mut node = Vec::with_capacity(keys.len());
        for (r, k) in keys.iter().enumerate() {
            let i = match firsts.iter().position(|f| *f == k) {
                Some(i) => i,
                None => {
                    firsts.push(k);
                    members.push(Vec::new());
                    firsts.len() - 1
                }
            };
            members[i].push(r as u32);
            node.push(i as u32);
        }
        Layout { node, members }
    }

    /// Several nodes, and at least one of them with several ranks: the only case where a
    /// hierarchy changes anything.
    pub(crate) fn is_hierarchical(&self) -> bool {
        self.members.len() > 1 && self.members.len() < self.node.len()
    }

    pub(crate) fn nodes(&self) -> u32 {
        self.members.len() as u32
    }

    /// The members of `me`'s node and `me`'s index among them.
    fn local(&self, me: u32) -> (&[u32], u32) {
        let m = &self.members[self.node[me as usize] as usize];
        (m, m.iter().position(|&r| r == me).unwrap() as u32)
    }

    /// The leader of each node: `root` for its own node, the lowest rank elsewhere.
    fn leaders(&self, root: u32) -> Vec<u32> {
        let rn = self.node[root as usize] as usize;
        self.members.iter().enumerate().map(|(i, m)| if i == rn { root } else { m[0] }).collect()
    }
}

/// Builds the flat schedule of one phase: `(ranks, me, root, input)` → schedule, where `input`
/// is the phase's [`SEND`], or [`RECV`] when the phase works in place.
pub(crate) type Phase<'a> = &'a dyn Fn(u32, u32, u32, BufId) -> Schedule;

pub(crate) fn barrier(s: &mut Schedule, l: &Layout, me: u32, between: Phase) {
    let (local, _) = l.local(me);
    let leader = local[0];
    let base = s.steps();
    if me != leader {
        let r = s.round();
        s.send(r, leader, base, Range::EMPTY);
        let r = s.round();
        s.recv(r, leader, base + 1, Range::EMPTY);
        return;
    }
    if local.len() > 1 {
        let r = s.round();
        for &m in &local[1..] {
            s.recv(r, m, base, Range::EMPTY);
        }
    }
    let leaders = l.leaders(0);
    let i = leaders.iter().position(|&x| x == me).unwrap() as u32;
    s.phase(1);
    s.splice(between(l.nodes(), i, 0, SEND), &leaders, SEND, RECV);
    if local.len() > 1 {
        let r = s.round();
        for &m in &local[1..] {
            s.send(r, m, base + 1, Range::EMPTY);
        }
    }
}

/// Broadcast of [`RECV`] from `root`: `between` and `within` build flat broadcasts.
pub(crate) fn bcast(s: &mut Schedule, l: &Layout, me: u32, root: u32, between: Phase, within: Phase) {
    let leaders = l.leaders(root);
    let (local, li) = l.local(me);
    let leader = leaders[l.node[me as usize] as usize];
    if me == leader {
        let i = l.node[me as usize];
        s.splice(between(l.nodes(), i, l.node[root as usize], RECV), &leaders, SEND, RECV);
    }
    s.phase(1);
    let lroot = local.iter().position(|&r| r == leader).unwrap() as u32;
    s.splice(within(local.len() as u32, li, lroot, RECV), local, SEND, RECV);
}

/// Reduce of `input` into [`RECV`] at `root` (commutative operations): `phase` builds the flat
/// reduces (within nodes, then between leaders) into the phase's [`RECV`].
pub(crate) fn reduce(
    s: &mut Schedule,
    l: &Layout,
    me: u32,
    root: u32,
    input: BufId,
    len: usize,
    phase: Phase,
) {
    let leaders = l.leaders(root);
    let (local, li) = l.local(me);
    let leader = leaders[l.node[me as usize] as usize];
    let lroot = local.iter().position(|&r| r == leader).unwrap() as u32;
    // The node's partial result: the root's output, a temporary at the other leaders.
    let partial = if me == root || me != leader { RECV } else { s.tmp(len) };
    s.splice(phase(local.len() as u32, li, lroot, input), local, SEND, partial);
    s.phase(1);
    if me == leader {
        let i = l.node[me as usize];
        let from = if partial == RECV { RECV } else { SEND };
        s.splice(phase(l.nodes(), i, l.node[root as usize], from), &leaders, partial, RECV);
    }
}

/// Allreduce of `input` into [`RECV`] (commutative operations): a reduce within each node
/// (`within_reduce`, to its lowest rank), an allreduce between leaders (`between`, in place:
/// from [`RECV`]), a broadcast within each node (`within_bcast`).
pub(crate) fn allreduce(
    s: &mut Schedule,
    l: &Layout,
    me: u32,
    input: BufId,
    within_reduce: Phase,
    between: Phase,
    within_bcast: Phase,
) {
    let leaders = l.leaders(0);
    let (local, li) = l.local(me);
    s.splice(within_reduce(local.len() as u32, li, 0, input), local, SEND, RECV);
    s.phase(1);
    if li == 0 {
        let i = l.node[me as usize];
        s.splice(between(l.nodes(), i, 0, RECV), &leaders, SEND, RECV);
    }
    s.phase(2);
    s.splice(within_bcast(local.len() as u32, li, 0, RECV), local, SEND, RECV);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coll::choice::{Allreduce, Bcast, Forced};
    use crate::coll::plan::{self, Site};
    use crate::coll::sim::run;
    use std::sync::Arc;

    /// Node keys of each layout tried: blocks, round robin, uneven, lone ranks.
    const LAYOUTS: &[&[u8]] = &[
        &[0, 0, 1],
        &[0, 1, 0, 1],
        &[0, 0, 1, 1],
        &[0, 1, 2, 0, 1, 2, 0],
        &[2, 2, 2, 1, 0, 0, 1, 2],
        &[0, 1, 1, 1, 1, 1, 1, 1, 2],
    ];

    fn sum(input: &[u8], inout: &mut [u8], count: usize) {
        for (i, o) in input.chunks_exact(8).zip(inout.chunks_exact_mut(8)).take(count) {
            let v = u64::from_le_bytes(i.try_into().unwrap())
                .wrapping_add(u64::from_le_bytes((&*o).try_into().unwrap()));
            o.copy_from_slice(&v.to_le_bytes());
        }
    }

    fn data(rank: u32, count: usize) -> Vec<u8> {
        (0..count as u64).flat_map(|i| (i * 1_000_003 + u64::from(rank) * 7919 + 1).to_le_bytes()).collect()
    }

    fn total(n: u32, count: usize) -> Vec<u8> {
        let mut acc = vec![0u8; count * 8];
        (0..n).for_each(|r| sum(&data(r, count), &mut acc, count));
        acc
    }

    fn sites(keys: &[u8]) -> Vec<Site> {
        let l = Arc::new(Layout::new(keys));
        assert!(l.is_hierarchical(), "{keys:?}");
        let n = keys.len() as u32;
        (0..n).map(|me| Site { n, me, ctx: 0, layout: Some(l.clone()) }).collect()
    }

    fn forced() -> Vec<Forced> {
        let f = Forced::default();
        vec![
            f,
            Forced { bcast: Some(Bcast::ScatterRing), allreduce: Some(Allreduce::Rabenseifner), ..f },
            Forced { allreduce: Some(Allreduce::ReduceBcast), ..f },
        ]
    }

    #[test]
    fn layouts_group_ranks_by_node_in_order_of_their_lowest_rank() {
        let l = Layout::new(&["b", "a", "b", "c", "a"]);
        assert_eq!(l.members, [vec![0, 2], vec![1, 4], vec![3]]);
        assert_eq!(l.node, [0, 1, 0, 2, 1]);
        assert_eq!(l.leaders(4), [0, 4, 3]);
        assert!(l.is_hierarchical());
        assert!(!Layout::new(&[1, 1, 1]).is_hierarchical(), "one node");
        assert!(!Layout::new(&[1, 2, 3]).is_hierarchical(), "one rank per node");
    }

    #[test]
    fn hierarchical_barrier_and_bcast_on_every_layout_and_root() {
        for keys in LAYOUTS {
            let n = keys.len() as u32;
            let s = sites(keys).iter().map(|site| plan::barrier(site, &Forced::default())).collect();
            run(s, vec![vec![]; n as usize], vec![vec![]; n as usize], &sum).unwrap();
            for f in forced() {
                for len in [1usize, 7, 1000] {
                    for root in 0..n {
                        let want: Vec<u8> = (0..len).map(|i| (i * 13 + 5) as u8).collect();
                        let recv =
                            (0..n).map(|r| if r == root { want.clone() } else { vec![0; len] }).collect();
                        let s = sites(keys).iter().map(|site| plan::bcast(site, &f, root, len)).collect();
                        let got = run(s, vec![vec![]; n as usize], recv, &sum)
                            .unwrap_or_else(|e| panic!("{keys:?} len={len} root={root}: {e}"));
                        assert!(got.iter().all(|g| *g == want), "{keys:?} len={len} root={root}");
                    }
                }
            }
        }
    }

    #[test]
    fn hierarchical_reduce_and_allreduce_on_every_layout_root_and_in_place() {
        for keys in LAYOUTS {
            let n = keys.len() as u32;
            for f in forced() {
                for count in [1usize, 3, 16, 37] {
                    let want = total(n, count);
                    for in_place in [false, true] {
                        for root in 0..n {
                            let ip = |me| in_place && me == root;
                            let s = sites(keys)
                                .iter()
                                .map(|site| {
                                    let input = if ip(site.me) { RECV } else { SEND };
                                    plan::reduce(site, &f, root, input, count, 8, true)
                                })
                                .collect();
                            let (send, recv) = (0..n)
                                .map(|r| match (ip(r), r == root) {
                                    (true, _) => (vec![], data(r, count)),
                                    (_, true) => (data(r, count), vec![0; count * 8]),
                                    _ => (data(r, count), vec![]),
                                })
                                .unzip();
                            let got = run(s, send, recv, &sum).unwrap_or_else(|e| {
                                panic!("reduce {keys:?} count={count} root={root} in_place={in_place}: {e}")
                            });
                            assert_eq!(got[root as usize], want, "reduce {keys:?} count={count} root={root}");
                        }
                        let input = if in_place { RECV } else { SEND };
                        let s = sites(keys)
                            .iter()
                            .map(|site| plan::allreduce(site, &f, input, count, 8, true))
                            .collect();
                        let (send, recv) = (0..n)
                            .map(|r| {
                                if in_place {
                                    (vec![], data(r, count))
                                } else {
                                    (data(r, count), vec![0; count * 8])
                                }
                            })
                            .unzip();
                        let got = run(s, send, recv, &sum).unwrap_or_else(|e| {
                            panic!("allreduce {keys:?} count={count} in_place={in_place}: {e}")
                        });
                        assert!(
                            got.iter().all(|g| *g == want),
                            "allreduce {keys:?} count={count} in_place={in_place}"
                        );
                    }
                }
            }
        }
    }

    /// Only one message per node pair crosses between nodes in a hierarchical barrier's middle
    /// phase: members talk to their leader only.
    #[test]
    fn members_talk_only_to_their_leader() {
        let keys = [0u8, 1, 0, 1, 0, 1];
        for site in sites(&keys) {
            let s = plan::allreduce(&site, &Forced::default(), SEND, 4, 8, true);
            let peers: Vec<u32> = s
                .rounds
                .iter()
                .flat_map(|r| &r.xfers)
                .map(|x| match *x {
                    crate::coll::schedule::Xfer::Send { peer, .. }
                    | crate::coll::schedule::Xfer::Recv { peer, .. } => peer,
                })
                .collect();
            let cross = peers.iter().filter(|&&p| keys[p as usize] != keys[site.me as usize]).count();
            match site.me {
                0 | 1 => assert!(cross > 0, "leaders exchange: {peers:?}"),
                _ => assert_eq!(cross, 0, "rank {} stays on its node: {peers:?}", site.me),
            }
        }
    }
}
