//! Scenario `typed`: typed point-to-point over `i32`, `f64`, `u8` and [`TwoInt`], a struct that
//! implements `Equivalence` by hand: blocking send/recv (eager and rendezvous sizes), isend/irecv
//! completed by `wait_any` then `wait_all`, `sendrecv`, probe/iprobe then a receive of the probed
//! count, `MPI_ANY_SOURCE` / `MPI_ANY_TAG`, and `ssend`/`issend` (which must not complete before
//! the receiver matched). Steps are separated by barriers on a communicator of their own.

use crate::{barrier, ok};
use madmpi::comm::Comm;
use madmpi::datatype::Predefined;
use madmpi::env::universe::Universe;
use madmpi::p2p::{Equivalence, From, Rank, Tag};
use madmpi::request::{Mode, Request, wait_all, wait_any};

/// `struct { int; int; }`, MPI's `MPI_2INT`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct TwoInt {
    a: i32,
    b: i32,
}

// SAFETY: two `i32`s in C layout: no padding, every bit pattern valid, the layout of MPI_2INT.
unsafe impl Equivalence for TwoInt {
    const DATATYPE: Predefined = Predefined::TwoInt;
}

/// Element `i` of what rank `from` sends in the step tagged `tag`, for each type.
trait Value: Equivalence + PartialEq + std::fmt::Debug + Default {
    fn value(from: u32, tag: i32, i: usize) -> Self;
}

impl Value for i32 {
    fn value(from: u32, tag: i32, i: usize) -> i32 {
        (from as i32 * 1_000_000 + tag * 10_000).wrapping_add(i as i32) ^ 0x5a5a
    }
}

impl Value for f64 {
    fn value(from: u32, tag: i32, i: usize) -> f64 {
        f64::from(from) + f64::from(tag) / 1000.0 + i as f64 * 1e-7 - 0.5
    }
}

impl Value for u8 {
    fn value(from: u32, tag: i32, i: usize) -> u8 {
        (from as usize * 31 + tag as usize * 7 + i * 13) as u8
    }
}

impl Value for TwoInt {
    fn value(from: u32, tag: i32, i: usize) -> TwoInt {
        TwoInt { a: i32::value(from, tag, i), b: -(i as i32) - tag }
    }
}

fn message<T: Value>(from: u32, tag: i32, n: usize) -> Vec<T> {
    (0..n).map(|i| T::value(from, tag, i)).collect()
}

/// Asserts that `got` is element by element what `from` sent in step `tag`.
fn check<T: Value>(what: &str, got: &[T], from: u32, tag: i32) {
    for (i, g) in got.iter().enumerate() {
        let want = T::value(from, tag, i);
        assert_eq!(*g, want, "{what}: element {i} of {} from rank {from} (tag {tag})", got.len());
    }
}

pub fn run(u: &Universe) {
    let w = u.world();
    let ctl = w.dup().expect("dup for barriers");
    blocking(w);
    barrier(&ctl);
    nonblocking(w);
    barrier(&ctl);
    sendrecv(w);
    barrier(&ctl);
    probes(w);
    barrier(&ctl);
    wildcards(w);
    barrier(&ctl);
    synchronous(w);
}

/// Blocking send/recv of `n` elements of `T` around the ring 0 → 1 → 2 → 0: rank 0 sends
/// first, the others receive first, so that rendezvous-sized blocking sends cannot deadlock.
fn ring<T: Value>(w: &Comm, tag: i32, n: usize) {
    let me = w.rank();
    let (next, prev) = ((me + 1) % 3, (me + 2) % 3);
    let out = message::<T>(me, tag, n);
    let mut inp = vec![T::default(); n];
    let receive = |inp: &mut [T]| {
        let st = w.recv(inp, From::Rank(prev), Tag::Tag(tag)).expect("recv");
        assert_eq!((st.source, st.tag, st.count::<T>()), (Some(prev), tag, Some(n as u64)), "status");
    };
    if me == 0 {
        w.send(&out, Rank::Rank(next), tag).expect("send");
        receive(&mut inp);
    } else {
        receive(&mut inp);
        w.send(&out, Rank::Rank(next), tag).expect("send");
    }
    check(std::any::type_name::<T>(), &inp, prev, tag);
}

fn blocking(w: &Comm) {
    for (k, n) in [1usize, 1000, 50_000].into_iter().enumerate() {
        let tag = k as i32 * 4;
        ring::<i32>(w, tag, n);
        ring::<f64>(w, tag + 1, n);
        ring::<u8>(w, tag + 2, n);
        ring::<TwoInt>(w, tag + 3, n);
    }
    ring::<u8>(w, 99, 0);
    ok("blocking send/recv i32 f64 u8 TwoInt, 0 B to 400 KB");
}

/// Every rank receives from both others with irecv (i32, f64 and u8, eager and rendezvous
/// sizes) and sends to both with isend (standard and synchronous): half completed one by one by
/// `wait_any`, the rest by `wait_all`.
fn nonblocking(w: &Comm) {
    let me = w.rank();
    let others: Vec<u32> = (0..3).filter(|&r| r != me).collect();
    const N: [usize; 2] = [16, 20_000];
    let out_i: Vec<Vec<i32>> = N.iter().map(|&n| message(me, 1, n)).collect();
    let out_f: Vec<Vec<f64>> = N.iter().map(|&n| message(me, 2, n)).collect();
    let out_b: Vec<Vec<u8>> = N.iter().map(|&n| message(me, 3, n * 3)).collect();
    // Receive buffer k: from peer k / 2, size N[k % 2].
    let sizes = [N[0], N[1], N[0], N[1]];
    let mut in_i: Vec<Vec<i32>> = sizes.iter().map(|&n| vec![0; n]).collect();
    let mut in_f: Vec<Vec<f64>> = sizes.iter().map(|&n| vec![0.; n]).collect();
    let mut in_b: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![0; 3 * n]).collect();
    // (label, expected source and tag) of each request, in `reqs` order.
    let mut what: Vec<(String, Option<(u32, i32)>)> = Vec::new();
    let mut reqs: Vec<Request<'_>> = Vec::new();
    // Tags: 100 * type + 10 * size index.
    for (k, ((bi, bf), bb)) in in_i.iter_mut().zip(in_f.iter_mut()).zip(in_b.iter_mut()).enumerate() {
        let (p, s) = (others[k / 2], k % 2);
        let t = 10 * s as i32;
        reqs.push(w.irecv(bi, From::Rank(p), Tag::Tag(100 + t)).expect("irecv i32"));
        reqs.push(w.irecv(bf, From::Rank(p), Tag::Tag(200 + t)).expect("irecv f64"));
        reqs.push(w.irecv(bb, From::Rank(p), Tag::Tag(300 + t)).expect("irecv u8"));
        for ty in 1..=3 {
            what.push((format!("irecv type {ty} size {s} from {p}"), Some((p, 100 * ty + t))));
        }
    }
    for &p in &others {
        for s in 0..2 {
            let t = 10 * s as i32;
            let mode = if s == 0 { Mode::Synchronous } else { Mode::Standard };
            reqs.push(w.isend(&out_i[s], Rank::Rank(p), 100 + t, mode).expect("isend i32"));
            reqs.push(w.isend(&out_f[s], Rank::Rank(p), 200 + t, Mode::Standard).expect("isend f64"));
            reqs.push(w.isend(&out_b[s], Rank::Rank(p), 300 + t, mode).expect("isend u8"));
            for ty in 1..=3 {
                what.push((format!("isend type {ty} size {s} to {p}"), None));
            }
        }
    }
    assert_eq!(reqs.len(), 24);
    let check_status = |(label, want): &(String, Option<(u32, i32)>), st: madmpi::p2p::Status| {
        if let Some((src, tag)) = *want {
            assert_eq!((st.source, st.tag), (Some(src), tag), "{label}: status");
        }
    };
    for _ in 0..12 {
        let (i, r) = wait_any(&mut reqs).expect("requests left");
        let label = what.remove(i);
        check_status(&label, r.unwrap_or_else(|e| panic!("{}: {e}", label.0)));
    }
    let sts = wait_all(reqs).expect("wait_all");
    assert_eq!(sts.len(), what.len());
    what.iter().zip(sts).for_each(|(l, st)| check_status(l, st));
    for (k, ((bi, bf), bb)) in in_i.iter().zip(&in_f).zip(&in_b).enumerate() {
        let p = others[k / 2];
        check("irecv i32", bi, p, 1);
        check("irecv f64", bf, p, 2);
        check("irecv u8", bb, p, 3);
    }
    ok("isend/irecv i32 f64 u8 (standard and synchronous) with wait_any then wait_all");
}

/// `sendrecv` around the ring in both directions, with different send and receive types.
fn sendrecv(w: &Comm) {
    let me = w.rank();
    let (next, prev) = ((me + 1) % 3, (me + 2) % 3);
    for (n, tag) in [(10usize, 7), (30_000, 8)] {
        let out = message::<f64>(me, tag, n);
        let mut inp = vec![0f64; n];
        let st = w
            .sendrecv(&out, Rank::Rank(next), tag, &mut inp, From::Rank(prev), Tag::Tag(tag))
            .expect("sendrecv");
        assert_eq!((st.source, st.tag, st.count::<f64>()), (Some(prev), tag, Some(n as u64)));
        check("sendrecv f64", &inp, prev, tag);
        // The other way, as TwoInt out and i32 in (same bytes, twice the count), any tag. (Not
        // any source: once `prev` got our message, it may go on to the next round and send us
        // its first message, which an any-source receive still posted here would take.)
        let out = message::<TwoInt>(me, tag, n);
        let mut inp = vec![0i32; 2 * n];
        let st =
            w.sendrecv(&out, Rank::Rank(prev), tag, &mut inp, From::Rank(next), Tag::Any).expect("sendrecv");
        assert_eq!((st.source, st.tag, st.count::<i32>()), (Some(next), tag, Some(2 * n as u64)));
        let pairs: Vec<TwoInt> = inp.chunks(2).map(|c| TwoInt { a: c[0], b: c[1] }).collect();
        check("sendrecv TwoInt as i32 pairs", &pairs, next, tag);
    }
    ok("sendrecv f64 and TwoInt/i32, both directions");
}

/// Each rank sends its next neighbour two messages of a length only the sender knows; the
/// receiver sizes its buffer from `probe` (any source, any tag) and from an `iprobe` loop.
fn probes(w: &Comm) {
    let me = w.rank();
    let (next, prev) = ((me + 1) % 3, (me + 2) % 3);
    let len = |r: u32| 100 + 3001 * r as usize;
    w.send(&message::<i32>(me, 40 + me as i32, len(me)), Rank::Rank(next), 40 + me as i32).expect("send");
    w.send(&message::<f64>(me, 50, len(me) / 2), Rank::Rank(next), 50).expect("send");
    let p = w.probe(From::Any, Tag::Any).expect("probe");
    let tag = 40 + prev as i32;
    assert_eq!((p.source, p.tag, p.count::<i32>()), (Some(prev), tag, Some(len(prev) as u64)), "probe");
    let mut b = vec![0i32; p.count::<i32>().unwrap() as usize];
    let st = w.recv(&mut b, From::Rank(prev), Tag::Tag(p.tag)).expect("recv probed");
    assert_eq!(st, p, "the receive got what the probe announced");
    check("probed i32", &b, prev, tag);
    let p = loop {
        if let Some(p) = w.iprobe(From::Rank(prev), Tag::Any).expect("iprobe") {
            break p;
        }
    };
    assert_eq!((p.source, p.tag, p.count::<f64>()), (Some(prev), 50, Some(len(prev) as u64 / 2)), "iprobe");
    let mut b = vec![0f64; p.count::<f64>().unwrap() as usize];
    w.recv(&mut b, From::Any, Tag::Tag(50)).expect("recv iprobed");
    check("iprobed f64", &b, prev, 50);
    assert!(w.iprobe(From::Any, Tag::Any).expect("iprobe").is_none(), "nothing left");
    ok("probe and iprobe, then recv of the probed count");
}

/// Any source with a given tag, and a given source with any tag.
fn wildcards(w: &Comm) {
    let me = w.rank();
    let others: Vec<u32> = (0..3).filter(|&r| r != me).collect();
    for &p in &others {
        w.send(&message::<u8>(me, 60, 64), Rank::Rank(p), 60).expect("send");
    }
    let mut seen = Vec::new();
    for _ in 0..2 {
        let mut b = [0u8; 64];
        let st = w.recv(&mut b, From::Any, Tag::Tag(60)).expect("recv any source");
        let src = st.source.expect("a source");
        check("any-source u8", &b, src, 60);
        seen.push(src);
    }
    seen.sort();
    assert_eq!(seen, others, "one message from each other rank");
    // To the next rank, tags 70..75 in order; received with any tag, they come in order.
    let (next, prev) = ((me + 1) % 3, (me + 2) % 3);
    for tag in 70..75 {
        w.send(&message::<i32>(me, tag, tag as usize), Rank::Rank(next), tag).expect("send");
    }
    for tag in 70..75 {
        let mut b = vec![0i32; 100];
        let st = w.recv(&mut b, From::Rank(prev), Tag::Any).expect("recv any tag");
        assert_eq!((st.tag, st.count::<i32>()), (tag, Some(tag as u64)), "any-tag messages in order");
        check("any-tag i32", &b[..tag as usize], prev, tag);
    }
    ok("MPI_ANY_SOURCE and MPI_ANY_TAG");
}

/// Rank 0 `issend`s to rank 1, which posts its receive only after rank 0 saw the request stay
/// incomplete through many tests and told it to go; rank 2 `ssend`s a rendezvous-sized message
/// to rank 0.
fn synchronous(w: &Comm) {
    const TESTS: usize = 200;
    match w.rank() {
        0 => {
            let out = message::<u16>(0, 80, 8);
            let mut r = w.isend(&out, Rank::Rank(1), 80, Mode::Synchronous).expect("issend");
            for _ in 0..TESTS {
                r = match r.test() {
                    Ok(st) => panic!("an issend completed before its receive was posted: {st:?}"),
                    Err(r) => r,
                };
            }
            w.send(&[1u8], Rank::Rank(1), 81).expect("go");
            r.wait().expect("issend wait");
            let mut b = vec![0f64; 40_000];
            w.recv(&mut b, From::Rank(2), Tag::Tag(82)).expect("recv of ssend");
            check("ssend f64", &b, 2, 82);
        }
        1 => {
            w.recv(&mut [0u8; 1], From::Rank(0), Tag::Tag(81)).expect("go");
            let mut b = [0u16; 8];
            w.recv(&mut b, From::Rank(0), Tag::Tag(80)).expect("recv of issend");
            check("issend u16", &b, 0, 80);
        }
        _ => w.ssend(&message::<f64>(2, 82, 40_000), Rank::Rank(0), 82).expect("ssend"),
    }
    ok("issend incomplete until matched; ssend");
}

impl Value for u16 {
    fn value(from: u32, tag: i32, i: usize) -> u16 {
        (from as usize * 1000 + tag as usize * 10 + i) as u16
    }
}
