//! Scenario `errors`: misuse comes back as `Err` with the right error class, at the caller only,
//! and the job goes on: bad ranks and tags in every point-to-point call (`MPI_ERR_RANK`,
//! `MPI_ERR_TAG`), receive buffers too small (`MPI_ERR_TRUNCATE`, blocking and nonblocking,
//! eager and rendezvous; the buffer holds the message's start and the next message is intact),
//! an uncommitted datatype (`MPI_ERR_TYPE`), a negative count (`MPI_ERR_COUNT`), a negative split
//! color (`MPI_ERR_ARG` at that rank only; the others get their communicator), bad group ranks.

use crate::{barrier, ok};
use madmpi::comm::Comm;
use madmpi::datatype::{Datatype, Predefined};
use madmpi::env::universe::Universe;
use madmpi::error::{Error, ErrorClass};
use madmpi::group::Peer;
use madmpi::p2p::{From, Rank, Tag};
use madmpi::request::Mode;

#[track_caller]
fn expect_class<T: std::fmt::Debug>(what: &str, r: Result<T, Error>, class: ErrorClass) {
    match r {
        Err(e) => assert_eq!(e.class(), class, "{what}: wrong class: {e}"),
        Ok(v) => panic!("{what}: succeeded ({v:?}), expected {}", class.name()),
    }
}

pub fn run(u: &Universe) {
    let w = u.world();
    let ctl = w.dup().expect("dup for barriers");
    arguments(w, &ctl);
    truncation(w);
    others(w);
    // The job goes on: a ring exchange after all of the above.
    let me = w.rank();
    let mut got = [0u32; 2];
    let st = w
        .sendrecv(&[me, 77], Rank::Rank((me + 1) % 3), 9, &mut got, From::Rank((me + 2) % 3), Tag::Tag(9))
        .expect("sendrecv after the errors");
    assert_eq!((got, st.bytes), ([(me + 2) % 3, 77], 8));
    ok("traffic goes on after the errors");
}

/// Ranks outside the communicator and negative tags, in every point-to-point call.
fn arguments(w: &Comm, ctl: &Comm) {
    let buf = [1u8; 4];
    let mut inp = [0u8; 4];
    for bad in [3u32, 4, u32::MAX] {
        expect_class("send to a bad rank", w.send(&buf, Rank::Rank(bad), 0), ErrorClass::Rank);
        expect_class("ssend to a bad rank", w.ssend(&buf, Rank::Rank(bad), 0), ErrorClass::Rank);
        expect_class("recv from a bad rank", w.recv(&mut inp, From::Rank(bad), Tag::Any), ErrorClass::Rank);
        expect_class("probe of a bad rank", w.probe(From::Rank(bad), Tag::Any), ErrorClass::Rank);
        expect_class("iprobe of a bad rank", w.iprobe(From::Rank(bad), Tag::Any), ErrorClass::Rank);
        expect_class("mprobe of a bad rank", w.mprobe(From::Rank(bad), Tag::Any).map(drop), ErrorClass::Rank);
        let r = w.isend(&buf, Rank::Rank(bad), 0, Mode::Standard).map(drop);
        expect_class("isend to a bad rank", r, ErrorClass::Rank);
        expect_class(
            "irecv from a bad rank",
            w.irecv(&mut inp, From::Rank(bad), Tag::Any).map(drop),
            ErrorClass::Rank,
        );
        let r = w.sendrecv(&buf, Rank::Rank(bad), 0, &mut inp, From::Rank(0), Tag::Any);
        expect_class("sendrecv to a bad rank", r, ErrorClass::Rank);
        let r = w.sendrecv(&buf, Rank::ProcNull, 0, &mut inp, From::Rank(bad), Tag::Any);
        expect_class("sendrecv from a bad rank", r, ErrorClass::Rank);
    }
    for bad in [-1, -2, i32::MIN] {
        expect_class("send with a bad tag", w.send(&buf, Rank::Rank(0), bad), ErrorClass::Tag);
        expect_class("send to PROC_NULL with a bad tag", w.send(&buf, Rank::ProcNull, bad), ErrorClass::Tag);
        expect_class("recv with a bad tag", w.recv(&mut inp, From::Any, Tag::Tag(bad)), ErrorClass::Tag);
        expect_class("probe with a bad tag", w.probe(From::Any, Tag::Tag(bad)), ErrorClass::Tag);
        expect_class("iprobe with a bad tag", w.iprobe(From::Any, Tag::Tag(bad)), ErrorClass::Tag);
        let r = w.isend(&buf, Rank::Rank(0), bad, Mode::Synchronous).map(drop);
        expect_class("issend with a bad tag", r, ErrorClass::Tag);
        expect_class(
            "irecv with a bad tag",
            w.irecv(&mut inp, From::Any, Tag::Tag(bad)).map(drop),
            ErrorClass::Tag,
        );
        let r = w.sendrecv(&buf, Rank::Rank(0), bad, &mut inp, From::Any, Tag::Any);
        expect_class("sendrecv with a bad tag", r, ErrorClass::Tag);
    }
    // None of these sent anything (what another rank sent before the barrier has arrived by the
    // end of it: its packets come in order).
    barrier(ctl);
    assert!(w.iprobe(From::Any, Tag::Any).expect("iprobe").is_none(), "a refused call sent a message");
    barrier(ctl);
    ok("bad ranks and tags are MPI_ERR_RANK and MPI_ERR_TAG in every call");
}

/// Each rank sends its next neighbour a message too long for the receive, then a good one.
/// Sends are nonblocking: three blocking rendezvous sends around a ring would wait for each other.
fn truncation(w: &Comm) {
    let me = w.rank();
    let (next, prev) = ((me + 1) % 3, (me + 2) % 3);
    let long = |r: u32, n: usize| (0..n as u32).map(|i| r * 1_000_000 + i).collect::<Vec<u32>>();
    for (n, tag) in [(10usize, 1), (100_000, 2)] {
        let (out, marker) = (long(me, n), [me, tag as u32]);
        let s1 = w.isend(&out, Rank::Rank(next), tag, Mode::Standard).expect("isend");
        let s2 = w.isend(&marker, Rank::Rank(next), 100 + tag, Mode::Standard).expect("isend");
        // Blocking: the start of the message is there.
        let mut small = vec![0u32; n / 2];
        let r = w.recv(&mut small, From::Rank(prev), Tag::Tag(tag));
        expect_class("recv into a short buffer", r, ErrorClass::Truncate);
        assert_eq!(small, long(prev, n)[..n / 2], "the buffer holds the message's start");
        let mut next_msg = [0u32; 2];
        w.recv(&mut next_msg, From::Rank(prev), Tag::Any).expect("recv after the truncation");
        assert_eq!(next_msg, [prev, tag as u32]);
        s1.wait().expect("the sender of a truncated message succeeds");
        s2.wait().expect("isend");
        // Nonblocking: the error comes with the wait.
        let s = w.isend(&out, Rank::Rank(next), tag, Mode::Synchronous).expect("issend");
        let mut small = vec![0u32; n - 1];
        let r = w.irecv(&mut small, From::Rank(prev), Tag::Tag(tag)).expect("irecv");
        expect_class("irecv into a short buffer", r.wait(), ErrorClass::Truncate);
        s.wait().expect("the sender of a truncated message succeeds");
    }
    // A probe says how much to receive; receiving less is still an error.
    w.send(&[5u64; 7], Rank::Rank(next), 3).expect("send");
    let p = w.probe(From::Rank(prev), Tag::Tag(3)).expect("probe");
    assert_eq!(p.count::<u64>(), Some(7));
    let m = w.mprobe(From::Rank(prev), Tag::Tag(3)).expect("mprobe");
    expect_class("mrecv into a short buffer", m.recv(&mut [0u64; 6]), ErrorClass::Truncate);
    ok(
        "truncation is MPI_ERR_TRUNCATE (recv, irecv, mrecv; eager and rendezvous) and the next message is intact",
    );
}

/// Datatype, count, split and group errors.
fn others(w: &Comm) {
    let me = w.rank();
    let int = Datatype::predefined(Predefined::Int);
    let v = Datatype::vector(2, 1, 3, &int).expect("vector");
    let mut buf = [0i32; 8];
    // SAFETY: the layout is refused before any memory is described.
    let r = unsafe { v.data(buf.as_mut_ptr().cast(), 1) };
    expect_class("layout of an uncommitted type", r.map(drop).map_err(Error::from), ErrorClass::Type);
    expect_class("negative count", Datatype::contiguous(-1, &int).map_err(Error::from), ErrorClass::Count);
    v.commit().expect("commit");
    // SAFETY: as above: a negative count is refused first.
    let r = unsafe { v.data(buf.as_mut_ptr().cast(), -2) };
    expect_class("layout of a negative count", r.map(drop).map_err(Error::from), ErrorClass::Count);
    // Rank 2 gives a negative color: an error there only; 0 and 1 get their communicator.
    let r = w.split(Some(if me == 2 { -4 } else { 1 }), 0);
    if me == 2 {
        expect_class("split with a negative color", r.map(|c| c.map(|c| c.size())), ErrorClass::Arg);
    } else {
        let c = r.expect("split").expect("a color");
        assert_eq!(c.group().members(), [0, 1]);
        let mut x = [0u32];
        c.sendrecv(&[me], Rank::Rank(1 - c.rank()), 0, &mut x, From::Any, Tag::Any).expect("sendrecv");
        assert_eq!(x, [1 - me]);
    }
    let g = w.group();
    expect_class("incl of a bad rank", g.incl(&[0, 3]), ErrorClass::Rank);
    expect_class("excl of a repeated rank", g.excl(&[1, 1]), ErrorClass::Rank);
    expect_class("translate of a bad rank", g.translate_ranks(&[Peer::Rank(5)], g), ErrorClass::Rank);
    ok("uncommitted type, negative count, negative color, bad group ranks");
}
