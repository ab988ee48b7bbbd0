//! Expected values come from MPICH 4.0.2 (`madmpi/tests/c/group_check.c` under
//! `mpiexec.hydra -n 4`, output in `group_check.mpich-4.0.2.txt`), except where a comment says
//! MPICH accepts an erroneous call that we reject.

use super::*;
use crate::error::ErrorClass;
use proptest::prelude::*;

fn world() -> Group {
    Group::world(4)
}

fn g(members: &[u32]) -> Group {
    Group::new(members.to_vec()).unwrap()
}

fn class<T: fmt::Debug>(r: Result<T>) -> ErrorClass {
    r.unwrap_err().class()
}

#[test]
fn incl_and_excl() {
    let w = world();
    assert_eq!(w.incl(&[3, 1]).unwrap().members(), [3, 1]);
    assert!(w.incl(&[]).unwrap().is_empty());
    assert_eq!(w.incl(&[0, 1, 2, 3]).unwrap(), w);
    assert_eq!(class(w.incl(&[4])), ErrorClass::Rank);
    // MPICH 4.0.2 returns a group with process 1 twice; repeated ranks are erroneous.
    assert_eq!(class(w.incl(&[1, 1])), ErrorClass::Rank);
    assert_eq!(class(w.incl(&[0, 1, 2, 3, 0])), ErrorClass::Rank);

    assert_eq!(w.excl(&[1, 3]).unwrap().members(), [0, 2]);
    assert_eq!(class(w.excl(&[4])), ErrorClass::Rank);
    // MPICH 4.0.2 returns [0, 1] (wrong) for a repeated rank, MPI_ERR_OTHER for 5 ranks out of 4.
    assert_eq!(class(w.excl(&[2, 2])), ErrorClass::Rank);
    assert_eq!(class(w.excl(&[0, 1, 2, 3, 1])), ErrorClass::Rank);
    assert!(w.excl(&[0, 1, 2, 3]).unwrap().is_empty());
    assert_eq!(w.excl(&[]).unwrap(), w);
}

#[test]
fn range_incl_matches_mpich() {
    let w = world();
    let ok: &[(&[Range], &[u32])] = &[
        (&[[0, 3, 2]], &[0, 2]),
        (&[[3, 0, -1]], &[3, 2, 1, 0]),
        (&[[3, 0, -2]], &[3, 1]),
        (&[[1, 1, 1]], &[1]),
        (&[[1, 1, -1]], &[1]),
        (&[[0, 2, 5]], &[0]),
        (&[[3, 3, -1]], &[3]),
        (&[[0, 3, 3]], &[0, 3]),
        (&[[1, 0, -5]], &[1]),
        (&[[2, 3, 1], [0, 0, 1]], &[2, 3, 0]),
        (&[], &[]),
    ];
    for (ranges, expected) in ok {
        assert_eq!(w.range_incl(ranges).unwrap().members(), *expected, "{ranges:?}");
    }
    let arg: &[&[Range]] = &[
        &[[0, 3, 0]],
        &[[0, 4, 1]],
        &[[-1, 2, 1]],
        &[[0, 2, -1]],
        &[[2, 1, 1]],
        &[[0, 1, 1], [1, 2, 1]],
        &[[2, 5, 3]],
        &[[3, -1, -2]],
        &[[0, 3, 1], [3, 3, 1]],
        &[[4, 4, 1]],
        &[[i32::MIN, i32::MAX, i32::MIN]],
    ];
    for ranges in arg {
        assert_eq!(class(w.range_incl(ranges)), ErrorClass::Arg, "{ranges:?}");
    }
}

#[test]
fn range_excl_matches_mpich() {
    let w = world();
    assert_eq!(w.range_excl(&[[0, 3, 2]]).unwrap().members(), [1, 3]);
    assert_eq!(w.range_excl(&[[3, 0, -3]]).unwrap().members(), [1, 2]);
    assert!(w.range_excl(&[[0, 3, 1]]).unwrap().is_empty());
    assert_eq!(w.range_excl(&[[1, 2, 1], [3, 3, 1]]).unwrap().members(), [0]);
    assert_eq!(w.range_excl(&[]).unwrap(), w);
    for ranges in
        [&[[0, 3, 0]][..], &[[0, 1, 1], [1, 2, 1]], &[[0, 4, 1]], &[[2, 1, 1]], &[[0, 2, -1]], &[[2, 5, 3]]]
    {
        assert_eq!(class(w.range_excl(ranges)), ErrorClass::Arg, "{ranges:?}");
    }
}

#[test]
fn set_operations_follow_mpi_order() {
    let (a, b, c, d) = (g(&[3, 1, 2]), g(&[0, 2, 1]), g(&[3, 1]), g(&[2, 0]));
    let e = Group::empty();
    assert_eq!(a.union(&b).members(), [3, 1, 2, 0]);
    assert_eq!(b.union(&a).members(), [0, 2, 1, 3]);
    assert_eq!(c.union(&d).members(), [3, 1, 2, 0]);
    assert_eq!(d.union(&c).members(), [2, 0, 3, 1]);
    assert_eq!(e.union(&a), a);
    assert!(e.union(&e).is_empty());
    assert_eq!(a.intersection(&b).members(), [1, 2]);
    assert_eq!(b.intersection(&a).members(), [2, 1]);
    assert!(c.intersection(&d).is_empty());
    assert!(a.intersection(&e).is_empty());
    assert_eq!(a.difference(&b).members(), [3]);
    assert_eq!(b.difference(&a).members(), [0]);
    assert_eq!(a.difference(&c).members(), [2]);
    assert!(a.difference(&a).is_empty());
    assert_eq!(a.difference(&e), a);
}

#[test]
fn translate_ranks_matches_mpich() {
    use Translated::{ProcNull, Rank, Undefined};
    let (a, b, c) = (g(&[3, 1, 2]), g(&[0, 2, 1]), g(&[3, 1]));
    let e = Group::empty();
    let r = |v: &[u32]| v.iter().map(|&x| Peer::Rank(x)).collect::<Vec<_>>();
    let mut peers = r(&[0, 1, 2]);
    peers.push(Peer::ProcNull);
    assert_eq!(a.translate_ranks(&peers, &b).unwrap(), [Undefined, Rank(2), Rank(1), ProcNull]);
    assert_eq!(a.translate_ranks(&r(&[0, 1]), &c).unwrap(), [Rank(0), Rank(1)]);
    assert_eq!(class(a.translate_ranks(&r(&[3]), &b)), ErrorClass::Rank);
    assert_eq!(a.translate_ranks(&r(&[0, 1]), &e).unwrap(), [Undefined, Undefined]);
    assert_eq!(e.translate_ranks(&[Peer::ProcNull], &a).unwrap(), [ProcNull]);
    assert_eq!(class(e.translate_ranks(&r(&[0]), &a)), ErrorClass::Rank);
    assert!(a.translate_ranks(&[], &b).unwrap().is_empty());
}

#[test]
fn compare_matches_mpich() {
    use GroupComparison::*;
    let (a, b, c, d, e) = (g(&[3, 1, 2]), g(&[0, 2, 1]), g(&[3, 1]), g(&[2, 0]), g(&[1, 2, 3]));
    let empty = Group::empty();
    assert_eq!(a.compare(&a.clone()), Ident);
    assert_eq!(a.compare(&g(&[3, 1, 2])), Ident);
    assert_eq!(a.compare(&b), Unequal);
    assert_eq!(a.compare(&c), Unequal);
    assert_eq!(a.compare(&e), Similar);
    assert_eq!(c.compare(&d), Unequal);
    assert_eq!(empty.compare(&Group::world(0)), Ident);
    assert_eq!(empty.compare(&a), Unequal);
    assert_eq!(world().compare(&world().incl(&[0, 1, 2, 3]).unwrap()), Ident);
}

#[test]
fn rank_of_and_members() {
    let (a, b, c) = (g(&[3, 1, 2]), g(&[0, 2, 1]), g(&[3, 1]));
    assert_eq!(c.rank_of(0), None);
    assert_eq!(a.rank_of(0), None);
    assert_eq!(b.rank_of(0), Some(0));
    assert_eq!(a.member(0), Some(3));
    assert_eq!(a.member(3), None);
    assert_eq!(class(Group::new(vec![1, 2, 1])), ErrorClass::Arg);
    let shifted = g(&[10, 11, 12]);
    assert_eq!((shifted.rank_of(9), shifted.rank_of(12), shifted.rank_of(13)), (None, Some(2), None));
    assert_eq!(format!("{c:?}"), "Group([3, 1])");
}

/// A group: a shuffled subset of `0..n`.
fn group_in(n: u32) -> impl Strategy<Value = Group> {
    proptest::sample::subsequence((0..n).collect::<Vec<_>>(), 0..=n as usize)
        .prop_shuffle()
        .prop_map(|m| Group::new(m).unwrap())
}

/// Ranks of one triplet, written independently of the implementation; `None` if MPICH says
/// MPI_ERR_ARG.
fn model_range(size: i32, [first, last, stride]: Range) -> Option<Vec<u32>> {
    let in_group = |r: i32| (0..size).contains(&r);
    if stride == 0 || !in_group(first) || !in_group(last) || (last - first).signum() * stride.signum() < 0 {
        return None;
    }
    let mut out = Vec::new();
    let mut r = first;
    while (stride > 0 && r <= last) || (stride < 0 && r >= last) {
        out.push(r as u32);
        r += stride;
    }
    Some(out)
}

proptest! {
    #[test]
    fn union_intersection_difference_against_a_model(a in group_in(40), b in group_in(40)) {
        let (am, bm) = (a.members(), b.members());
        let mut union = am.to_vec();
        union.extend(bm.iter().filter(|w| !am.contains(w)));
        prop_assert_eq!(a.union(&b).members().to_vec(), union);
        let inter: Vec<u32> = am.iter().copied().filter(|w| bm.contains(w)).collect();
        prop_assert_eq!(a.intersection(&b).members().to_vec(), inter);
        let diff: Vec<u32> = am.iter().copied().filter(|w| !bm.contains(w)).collect();
        prop_assert_eq!(a.difference(&b).members().to_vec(), diff);
        prop_assert_eq!(a.intersection(&b).size() + a.difference(&b).size(), a.size());
        prop_assert_eq!(a.union(&b).compare(&b.union(&a)) != GroupComparison::Unequal, true);
    }

    #[test]
    fn translate_ranks_round_trip(a in group_in(60), b in group_in(60)) {
        let ranks: Vec<Peer> = (0..a.size()).map(Peer::Rank).collect();
        let there = a.translate_ranks(&ranks, &b).unwrap();
        for (r, t) in (0..a.size()).zip(there) {
            let w = a.member(r).unwrap();
            match t {
                Translated::Rank(j) => {
                    prop_assert_eq!(b.member(j), Some(w));
                    prop_assert_eq!(b.translate_ranks(&[Peer::Rank(j)], &a).unwrap(), [Translated::Rank(r)]);
                }
                Translated::Undefined => prop_assert!(!b.contains(w)),
                Translated::ProcNull => prop_assert!(false, "ProcNull from a rank"),
            }
        }
    }

    #[test]
    fn rank_of_inverts_member(a in group_in(100), extra in 0u32..120) {
        for r in 0..a.size() {
            prop_assert_eq!(a.rank_of(a.member(r).unwrap()), Some(r));
        }
        prop_assert_eq!(a.rank_of(extra).is_some(), a.members().contains(&extra));
    }

    #[test]
    fn ranges_against_a_model(size in 0i32..12, first in -2i32..14, last in -2i32..14, stride in -6i32..6) {
        let group = Group::world(size as u32);
        match model_range(size, [first, last, stride]) {
            Some(ranks) => {
                prop_assert_eq!(group.range_incl(&[[first, last, stride]]).unwrap().members().to_vec(), ranks.clone());
                let rest = group.excl(&ranks).unwrap();
                prop_assert_eq!(group.range_excl(&[[first, last, stride]]).unwrap(), rest);
            }
            None => {
                prop_assert_eq!(class(group.range_incl(&[[first, last, stride]])), ErrorClass::Arg);
                prop_assert_eq!(class(group.range_excl(&[[first, last, stride]])), ErrorClass::Arg);
            }
        }
    }

    #[test]
    fn incl_excl_partition(a in group_in(30), picks in proptest::collection::vec(any::<proptest::sample::Index>(), 0..10)) {
        let mut ranks: Vec<u32> = picks.iter().filter(|_| a.size() > 0).map(|i| i.index(a.size() as usize) as u32).collect();
        ranks.dedup();
        let distinct = { let mut s = ranks.clone(); s.sort(); s.windows(2).all(|w| w[0] != w[1]) };
        if distinct {
            let inc = a.incl(&ranks).unwrap();
            prop_assert_eq!(a.excl(&ranks).unwrap(), a.difference(&inc));
            prop_assert_eq!(inc.union(&a.excl(&ranks).unwrap()).compare(&a) != GroupComparison::Unequal, true);
        } else {
            prop_assert_eq!(class(a.incl(&ranks)), ErrorClass::Rank);
            prop_assert_eq!(class(a.excl(&ranks)), ErrorClass::Rank);
        }
    }
}
