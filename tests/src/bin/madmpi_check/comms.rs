//! Scenario `comms`: communicator management followed by traffic on the new communicators.
//! `dup` (congruent, a matching space of its own), `split` by parity with reversed keys and with
//! `MPI_UNDEFINED`, groups (`incl`, `excl`, `translate_ranks`, `compare`, set operations),
//! `create` from groups, `compare` between all of these, names, and a `dup` after the others
//! were freed (context ids reused without mixing messages).
//!
//! Traffic: on each communicator every member sends every member (itself included) a message
//! naming its world rank and the communicator's context id, all at once on several
//! communicators with the same tags, so that a message crossing communicators is caught.

use crate::ok;
use madmpi::comm::{Comm, Comparison};
use madmpi::env::universe::Universe;
use madmpi::group::{Group, GroupComparison, Peer, Translated};
use madmpi::p2p::{From, Rank, Tag};
use madmpi::request::wait_all;

/// An all-to-all exchange on every communicator of `comms` at once, all with tag `tag`.
fn traffic(comms: &[&Comm], tag: i32) {
    let mut inbox: Vec<Vec<[u32; 3]>> = comms.iter().map(|c| vec![[0; 3]; c.size() as usize]).collect();
    let outbox: Vec<[u32; 3]> =
        comms.iter().map(|c| [c.world_rank(c.rank()).unwrap(), c.context_id(), tag as u32]).collect();
    let mut reqs = Vec::new();
    for (c, slots) in comms.iter().zip(inbox.iter_mut()) {
        for (r, slot) in slots.iter_mut().enumerate() {
            reqs.push(c.irecv(slot, From::Rank(r as u32), Tag::Tag(tag)).expect("irecv"));
        }
    }
    for (c, out) in comms.iter().zip(&outbox) {
        for r in 0..c.size() {
            reqs.push(c.isend(out, Rank::Rank(r), tag, Default::default()).expect("isend"));
        }
    }
    wait_all(reqs).expect("wait_all");
    for (c, slots) in comms.iter().zip(&inbox) {
        for (r, got) in slots.iter().enumerate() {
            let want = [c.world_rank(r as u32).unwrap(), c.context_id(), tag as u32];
            assert_eq!(
                *got,
                want,
                "communicator {:?} (context {}): message from rank {r}",
                c.name(),
                c.context_id()
            );
        }
    }
}

pub fn run(u: &Universe) {
    let w = u.world();
    let me = w.rank();

    let d = w.dup().expect("dup");
    assert_eq!((d.size(), d.rank()), (3, me));
    assert_ne!(d.context_id(), w.context_id());
    assert_eq!(w.compare(&d), Comparison::Congruent);
    assert_eq!(w.compare(&w.clone()), Comparison::Ident);
    d.set_name("the dup");
    assert_eq!((d.name().as_str(), w.name().as_str()), ("the dup", "MPI_COMM_WORLD"));
    // The same tag on both: each receive takes its own communicator's message, in the other
    // order. (Any tag but not any source: `next` may already send us its traffic below.)
    let (next, prev) = ((me + 1) % 3, (me + 2) % 3);
    w.send(&[10u32 + me], Rank::Rank(next), 5).expect("send on world");
    d.send(&[20u32 + me], Rank::Rank(next), 5).expect("send on dup");
    let (mut a, mut b) = ([0u32], [0u32]);
    d.recv(&mut b, From::Rank(prev), Tag::Any).expect("recv on dup");
    w.recv(&mut a, From::Rank(prev), Tag::Any).expect("recv on world");
    assert_eq!((a, b), ([10 + prev], [20 + prev]), "messages stayed in their communicator");
    traffic(&[w, &d], 1);
    ok("dup: congruent, named, its own matching space");

    // Even ranks [2, 0] (reversed by key), odd rank [1].
    let half = w.split(Some((me % 2) as i32), -(me as i32)).expect("split").expect("a color");
    let members: &[u32] = if me.is_multiple_of(2) { &[2, 0] } else { &[1] };
    assert_eq!(half.group().members(), members);
    assert_eq!(half.world_rank(half.rank()), Some(me));
    assert_eq!(w.compare(&half), Comparison::Unequal);
    // Rank 1 opts out (MPI_UNDEFINED).
    let pair = w.split(if me == 1 { None } else { Some(3) }, 0).expect("split");
    assert_eq!(pair.as_ref().map(|c| c.group().members().to_vec()), (me != 1).then(|| vec![0, 2]));
    if let Some(p) = &pair {
        assert_eq!(half.compare(p), Comparison::Similar);
        traffic(&[&half, p, &d], 2);
    } else {
        traffic(&[&half, &d], 2);
    }
    ok("split by parity (reversed keys) and with MPI_UNDEFINED");

    let g = w.group();
    let inc = g.incl(&[2, 0]).expect("incl");
    let exc = g.excl(&[1]).expect("excl");
    assert_eq!((inc.members(), exc.members()), (&[2, 0][..], &[0, 2][..]));
    assert_eq!(inc.compare(&exc), GroupComparison::Similar);
    assert_eq!(exc.compare(&Group::new(vec![0, 2]).unwrap()), GroupComparison::Ident);
    assert_eq!(g.compare(&inc), GroupComparison::Unequal);
    let all = [Peer::Rank(0), Peer::Rank(1), Peer::Rank(2), Peer::ProcNull];
    use Translated::{ProcNull, Rank as R, Undefined};
    assert_eq!(g.translate_ranks(&all, &inc).unwrap(), [R(1), Undefined, R(0), ProcNull]);
    assert_eq!(inc.translate_ranks(&[Peer::Rank(0), Peer::Rank(1)], &exc).unwrap(), [R(1), R(0)]);
    assert_eq!(inc.union(g).members(), [2, 0, 1]);
    assert_eq!(g.difference(&inc).members(), [1]);
    assert!(g.intersection(&Group::new(vec![1]).unwrap()).members() == [1]);
    ok("groups: incl, excl, compare, translate_ranks, union, difference, intersection");

    let ci = w.create(&inc).expect("create");
    let ce = d.create(&exc).expect("create");
    assert_eq!(ci.is_some(), me != 1);
    assert_eq!(ce.is_some(), me != 1);
    if let (Some(ci), Some(ce), Some(p)) = (&ci, &ce, &pair) {
        assert_eq!(ci.compare(ce), Comparison::Similar);
        assert_eq!(ci.compare(&half), Comparison::Congruent);
        assert_eq!(ce.compare(p), Comparison::Congruent);
        assert_eq!(ci.rank(), if me == 2 { 0 } else { 1 });
        let here = ci.group().translate_ranks(&[Peer::Rank(ci.rank())], g).unwrap();
        assert_eq!(here, [R(me)], "translated to the world");
        traffic(&[ci, ce, p, &half, w], 3);
    } else {
        traffic(&[&half, w], 3);
    }
    ok("create from incl and excl groups, compare, traffic on all at once");

    // Free everything but the world, then make new ones: ids come back, messages don't mix.
    let old: Vec<u32> = [Some(&d), Some(&half), pair.as_ref(), ci.as_ref(), ce.as_ref()]
        .into_iter()
        .flatten()
        .map(Comm::context_id)
        .collect();
    drop((d, half, pair, ci, ce));
    let again = w.dup().expect("dup");
    let third = again.split(Some(0), me as i32).expect("split").expect("a color");
    assert_eq!(again.compare(&third), Comparison::Congruent);
    traffic(&[&again, &third, w], 4);
    println!("# rank {me}: freed contexts {old:?}, new {} and {}", again.context_id(), third.context_id());
    ok("dup and split after freeing the others");
}
