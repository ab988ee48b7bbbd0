//! Collectives on intercommunicators (MPI 4.0 §6.2.2): every one but the scans, as schedules.
//!
//! A rank's peers in these schedules are numbered across both groups: local rank `i` is peer
//! `i`, remote rank `j` is peer `nl + j` (`nl` the local group's size; the engine maps them with
//! `Comm::coll_world_rank`). The flat algorithms of `algo` then serve the phases within the
//! local group unchanged (spliced with the identity), and the phases between the groups are
//! written here. Every phase starts at a fixed step block (`Schedule::phase`), so the two
//! groups agree on the steps of the messages between them whatever their local phases took.
//!
//! The algorithms are the simplest correct ones (as in MPICH's intercommunicator defaults):
//! - barrier: local barrier, the leaders (local rank 0) swap an empty message, local barrier;
//! - bcast: the root sends to remote rank 0, which broadcasts in its group; reduce: the group
//!   without the root reduces to its rank 0, which sends to the root;
//! - allreduce: each group reduces to its rank 0, the leaders swap the results, each leader
//!   broadcasts the other group's result in its group; reduce-scatter likewise, with a scatter
//!   of the other group's result by the local counts at the end;
//! - gather, scatter (and `v`): the root receives from, or sends to, every remote rank;
//!   allgather, alltoall (and `v`, `w`): every rank sends to and receives from every remote rank.
//!
//! `coll::raw_inter` is the entry of the C library (roots `MPI_ROOT` and `MPI_PROC_NULL`, buffers only
//! where significant). Owns these schedules; it must not touch the engine's state.

#[cfg(test)]
mod tests;

use super::algo;
use super::choice::{Barrier, Bcast, Reduce};
use super::schedule::{BufId, RECV, Range, SEND, Schedule};

/// The role of a rank in a rooted intercommunicator collective (its `root` argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Root {
    /// `MPI_ROOT`: this rank is the root.
    Here,
    /// `MPI_PROC_NULL`: in the root's group, not the root: no part in the operation.
    Idle,
    /// In the other group: the root is remote rank `r`.
    Remote(u32),
}

/// Appends `sub`, a schedule of the local group, after what `s` holds.
fn local(s: &mut Schedule, nl: u32, sub: Schedule, send: BufId, recv: BufId) {
    let peers: Vec<u32> = (0..nl).collect();
    s.splice(sub, &peers, send, recv);
}

/// The round of phase `k` between the groups, taken by the ranks that take part.
fn between(s: &mut Schedule, k: u32, takes_part: bool) -> Option<(usize, u32)> {
    s.phase(k);
    let step = s.steps();
    takes_part.then(|| (s.round(), step))
}

pub(crate) fn barrier(nl: u32, me: u32) -> Schedule {
    let mut s = Schedule::new();
    local(&mut s, nl, algo::barrier(nl, me, Barrier::Dissemination), SEND, RECV);
    if let Some((r, step)) = between(&mut s, 1, me == 0) {
        s.send(r, nl, step, Range::EMPTY);
        s.recv(r, nl, step, Range::EMPTY);
    }
    s.phase(2);
    local(&mut s, nl, algo::barrier(nl, me, Barrier::Dissemination), SEND, RECV);
    s
}

/// Broadcast of `len` bytes of `RECV`.
pub(crate) fn bcast(nl: u32, me: u32, root: Root, len: usize, a: Bcast) -> Schedule {
    let mut s = Schedule::new();
    let data = Range::new(RECV, 0, len);
    match root {
        Root::Idle => {}
        Root::Here => {
            if let Some((r, step)) = between(&mut s, 1, true) {
                s.send(r, nl, step, data);
            }
        }
        Root::Remote(from) => {
            if let Some((r, step)) = between(&mut s, 1, me == 0) {
                s.recv(r, nl + from, step, data);
            }
            s.phase(2);
            local(&mut s, nl, algo::bcast(nl, me, 0, len, a), SEND, RECV);
        }
    }
    s
}

/// Reduction of `count` elements of `elem` bytes of `SEND` into the root's `RECV`.
pub(crate) fn reduce(nl: u32, me: u32, root: Root, count: usize, elem: usize, a: Reduce) -> Schedule {
    let mut s = Schedule::new();
    let bytes = count * elem;
    match root {
        Root::Idle => {}
        Root::Here => {
            if let Some((r, step)) = between(&mut s, 1, true) {
                s.recv(r, nl, step, Range::new(RECV, 0, bytes));
            }
        }
        Root::Remote(to) => {
            let t = s.tmp(bytes);
            local(&mut s, nl, algo::reduce(nl, me, 0, SEND, count, elem, a), SEND, t);
            if let Some((r, step)) = between(&mut s, 1, me == 0) {
                s.send(r, nl + to, step, Range::new(t, 0, bytes));
            }
        }
    }
    s
}

/// Each group's reduction of `count` elements of `SEND` into the other group's `RECV`.
pub(crate) fn allreduce(nl: u32, me: u32, count: usize, elem: usize, a: Reduce, b: Bcast) -> Schedule {
    let mut s = Schedule::new();
    let bytes = count * elem;
    let t = s.tmp(bytes);
    local(&mut s, nl, algo::reduce(nl, me, 0, SEND, count, elem, a), SEND, t);
    if let Some((r, step)) = between(&mut s, 1, me == 0) {
        s.send(r, nl, step, Range::new(t, 0, bytes));
        s.recv(r, nl, step, Range::new(RECV, 0, bytes));
    }
    s.phase(2);
    local(&mut s, nl, algo::bcast(nl, me, 0, bytes, b), SEND, RECV);
    s
}

/// Each group's reduction of `Σ counts` elements of `SEND`, scattered over the other group by
/// its `counts` (one per local rank, the same total in both groups) into `RECV`.
pub(crate) fn reduce_scatter(nl: u32, me: u32, counts: &[usize], elem: usize, a: Reduce) -> Schedule {
    let mut s = Schedule::new();
    let total: usize = counts.iter().sum();
    let bytes = total * elem;
    let (t, u) = (s.tmp(bytes), s.tmp(bytes));
    local(&mut s, nl, algo::reduce(nl, me, 0, SEND, total, elem, a), SEND, t);
    if let Some((r, step)) = between(&mut s, 1, me == 0) {
        s.send(r, nl, step, Range::new(t, 0, bytes));
        s.recv(r, nl, step, Range::new(u, 0, bytes));
    }
    s.phase(2);
    let mut at = 0;
    let blocks: Vec<Range> = counts
        .iter()
        .map(|&c| {
            at += c * elem;
            Range::new(SEND, at - c * elem, c * elem)
        })
        .collect();
    let mut sub = Schedule::new();
    let out = Range::new(RECV, 0, counts[me as usize] * elem);
    algo::scatter::linear(&mut sub, nl, me, 0, Some(out), &blocks);
    local(&mut s, nl, sub, u, RECV);
    s
}

/// Gather of every remote rank's `mine` into the root's `blocks` (one per remote rank).
pub(crate) fn gather(nl: u32, root: Root, mine: Range, blocks: &[Range]) -> Schedule {
    let mut s = Schedule::new();
    match root {
        Root::Idle => {}
        Root::Here => {
            if let Some((r, step)) = between(&mut s, 1, true) {
                for (j, b) in blocks.iter().enumerate().filter(|(_, b)| b.len > 0) {
                    s.recv(r, nl + j as u32, step, *b);
                }
            }
        }
        Root::Remote(to) => {
            if let Some((r, step)) = between(&mut s, 1, mine.len > 0) {
                s.send(r, nl + to, step, mine);
            }
        }
    }
    s
}

/// Scatter of the root's `blocks` (one per remote rank) into every remote rank's `out`.
pub(crate) fn scatter(nl: u32, root: Root, blocks: &[Range], out: Range) -> Schedule {
    let mut s = Schedule::new();
    match root {
        Root::Idle => {}
        Root::Here => {
            if let Some((r, step)) = between(&mut s, 1, true) {
                for (j, b) in blocks.iter().enumerate().filter(|(_, b)| b.len > 0) {
                    s.send(r, nl + j as u32, step, *b);
                }
            }
        }
        Root::Remote(from) => {
            if let Some((r, step)) = between(&mut s, 1, out.len > 0) {
                s.recv(r, nl + from, step, out);
            }
        }
    }
    s
}

/// Every rank sends `sends[j]` to remote rank j and receives `recvs[j]` from it (allgather:
/// the same block to all; alltoall: a block each).
pub(crate) fn all_to_remote(nl: u32, sends: &[Range], recvs: &[Range]) -> Schedule {
    let mut s = Schedule::new();
    all_to_remote_into(&mut s, nl, sends, recvs);
    s
}

/// [`all_to_remote`], appended to `s` (after its rounds).
pub(crate) fn all_to_remote_into(s: &mut Schedule, nl: u32, sends: &[Range], recvs: &[Range]) {
    let any = sends.iter().chain(recvs).any(|b| b.len > 0);
    if let Some((r, step)) = between(s, 1, any) {
        for (j, b) in sends.iter().enumerate().filter(|(_, b)| b.len > 0) {
            s.send(r, nl + j as u32, step, *b);
        }
        for (j, b) in recvs.iter().enumerate().filter(|(_, b)| b.len > 0) {
            s.recv(r, nl + j as u32, step, *b);
        }
    }
}
