//! The algorithms: pure functions appending one rank's part of a collective to a
//! [`Schedule`](super::schedule::Schedule), from the communicator size `n`, the rank `me` and the
//! sizes. Every rank builds its own schedule; the messages of all ranks must match (same steps,
//! same lengths), which the simulator of `super::sim` checks for every algorithm and size.
//!
//! Owns the algorithms (one file per collective); choosing one is `super::choice`'s job.

pub(crate) mod allgather;
pub(crate) mod allreduce;
pub(crate) mod alltoall;
pub(crate) mod barrier;
pub(crate) mod bcast;
pub(crate) mod gather;
pub(crate) mod hier;
pub(crate) mod neighbor;
pub(crate) mod reduce;
pub(crate) mod reduce_scatter;
pub(crate) mod scan;
pub(crate) mod scatter;

/// The byte range of elements `[from, to)` of `elem`-byte elements in `buf`.
pub(crate) fn elems(
    buf: super::schedule::BufId,
    from: usize,
    to: usize,
    elem: usize,
) -> super::schedule::Range {
    super::schedule::Range::new(buf, from * elem, (to - from) * elem)
}

use super::choice::{Allreduce, Barrier, Bcast, Reduce};
use super::schedule::{BufId, RECV, Schedule};

/// A rank's schedule for a barrier.
pub(crate) fn barrier(n: u32, me: u32, a: Barrier) -> Schedule {
    let mut s = Schedule::new();
    match a {
        Barrier::Dissemination => barrier::dissemination(&mut s, n, me),
    }
    s
}

/// A rank's schedule for broadcasting `len` bytes of [`RECV`] from `root`.
pub(crate) fn bcast(n: u32, me: u32, root: u32, len: usize, a: Bcast) -> Schedule {
    let mut s = Schedule::new();
    match a {
        Bcast::Binomial => bcast::binomial(&mut s, n, me, root, RECV, len),
        Bcast::ScatterRing => bcast::scatter_ring(&mut s, n, me, root, RECV, len),
    }
    s
}

/// A rank's schedule for reducing `count` elements of `input` into [`RECV`] at `root`.
pub(crate) fn reduce(
    n: u32,
    me: u32,
    root: u32,
    input: BufId,
    count: usize,
    elem: usize,
    a: Reduce,
) -> Schedule {
    let mut s = Schedule::new();
    match a {
        Reduce::Binomial => reduce::binomial(&mut s, n, me, root, input, count, elem),
        Reduce::Ordered => reduce::ordered(&mut s, n, me, root, input, count, elem),
    }
    s
}

/// A rank's schedule for reducing `count` elements of `input` into [`RECV`] everywhere.
#[allow(clippy::too_many_arguments)]
pub(crate) fn allreduce(
    n: u32,
    me: u32,
    input: BufId,
    count: usize,
    elem: usize,
    a: Allreduce,
    commutative: bool,
) -> Schedule {
    let mut s = Schedule::new();
    match a {
        Allreduce::RecursiveDoubling => {
            allreduce::recursive_doubling(&mut s, n, me, input, count, elem, commutative)
        }
        Allreduce::Rabenseifner => allreduce::rabenseifner(&mut s, n, me, input, count, elem),
        Allreduce::ReduceBcast => {
            let large = super::choice::bcast(None, n, count * elem) == Bcast::ScatterRing;
            allreduce::reduce_bcast(&mut s, n, me, input, count, elem, commutative, large)
        }
    }
    s
}
