//! Intercommunicator collectives on raw memory, for the C library (see `coll::raw`, whose
//! binding of buffers to schedules they share). A buffer is given where MPI makes it
//! significant: at the root (`Root::Here`) and in the other group for the rooted ones (none in
//! the root's group otherwise), everywhere for the others. `MPI_IN_PLACE` is not allowed on an
//! intercommunicator (`MPI_ERR_BUFFER`, as in MPICH), nor are the scans (`MPI_ERR_COMM`).
//!
//! Owns the argument rules of intercommunicator collectives; the schedules are `inter`'s.

use super::choice::{self, Forced};
use super::inter::{self, Root, all_to_remote, all_to_remote_into};
use super::raw::{Mem, NONE, RawBuf, RawVBuf, RawWBuf, bytes_mismatch, elem_size, launch, reducer, start};
use super::schedule::{RECV, Range, SEND};
use crate::coll::Op;
use crate::coll::planned::Planned;
use crate::comm::Comm;
use crate::error::{Error, Result};

fn remote_size(comm: &Comm) -> u32 {
    comm.remote_group().map_or(0, |g| g.size())
}

/// `MPI_ERR_ROOT` unless a remote root names a remote rank.
fn check_root(comm: &Comm, call: &str, root: Root) -> Result<()> {
    match root {
        Root::Remote(r) if r >= remote_size(comm) => Err(Error::root(format!(
            "{call}: root {r} is outside the remote group (size {})",
            remote_size(comm)
        ))),
        _ => Ok(()),
    }
}

/// The buffer MPI makes significant here (`what` names it in the error).
fn needed<'a, T>(call: &str, b: Option<&'a T>, what: &str) -> Result<&'a T> {
    b.ok_or_else(|| {
        Error::buffer(format!("{call}: no {what} (MPI_IN_PLACE is not allowed on an intercommunicator)"))
    })
}

fn counts_for(call: &str, counts: usize, n: u32, whose: &str) -> Result<()> {
    if counts != n as usize {
        return Err(Error::arg(format!("{call}: {counts} counts for the {n} ranks of the {whose} group")));
    }
    Ok(())
}

/// `MPI_Ibarrier`.
pub fn barrier(comm: &Comm) -> Result<Planned> {
    let s = inter::barrier(comm.size(), comm.rank());
    launch(comm, s, NONE, NONE, None)
}

/// `MPI_Ibcast` from `root`: `buf` at the root and in the other group.
pub fn bcast(comm: &Comm, buf: Option<&RawBuf>, root: Root) -> Result<Planned> {
    const CALL: &str = "MPI_Bcast";
    check_root(comm, CALL, root)?;
    let m = match root {
        Root::Idle => None,
        _ => Some(Mem::of(needed(CALL, buf, "buffer")?)?),
    };
    let len = m.as_ref().map_or(0, Mem::packed_len);
    let a = choice::bcast(Forced::from_env()?.bcast, comm.size(), len);
    let s = inter::bcast(comm.size(), comm.rank(), root, len, a);
    start(comm, s, None, m.as_ref(), root == Root::Here, None)
}

/// `MPI_Ireduce` to `root`: `send` in the other group, `recv` at the root.
pub fn reduce(
    comm: &Comm,
    send: Option<&RawBuf>,
    recv: Option<&RawBuf>,
    op: &Op,
    root: Root,
) -> Result<Planned> {
    const CALL: &str = "MPI_Reduce";
    check_root(comm, CALL, root)?;
    let (sm, rm, count, r) = match root {
        Root::Idle => (None, None, 0, None),
        Root::Here => {
            let recv = needed(CALL, recv, "output buffer at the root")?;
            (None, Some(Mem::of(recv)?), recv.count, Some(reducer(CALL, op, &recv.dtype)?))
        }
        Root::Remote(_) => {
            let send = needed(CALL, send, "input buffer")?;
            (Some(Mem::of(send)?), None, send.count, Some(reducer(CALL, op, &send.dtype)?))
        }
    };
    let elem = r.as_ref().map_or(Ok(0), |r| elem_size(&r.dtype))?;
    if let Some(rm) = rm.as_ref().filter(|m| m.packed_len() != count * elem) {
        return Err(bytes_mismatch(CALL, "the root's output", rm.packed_len(), count * elem));
    }
    let a = choice::reduce(Forced::from_env()?.reduce, op.reorderable());
    let s = inter::reduce(comm.size(), comm.rank(), root, count, elem, a);
    start(comm, s, sm.as_ref(), rm.as_ref(), false, r)
}

/// `MPI_Iallreduce`: `recv` receives the reduction of the other group's `send`s.
pub fn allreduce(comm: &Comm, send: Option<&RawBuf>, recv: &RawBuf, op: &Op) -> Result<Planned> {
    const CALL: &str = "MPI_Allreduce";
    let send = needed(CALL, send, "input buffer")?;
    let r = reducer(CALL, op, &send.dtype)?;
    let (sm, rm) = (Mem::of(send)?, Mem::of(recv)?);
    let elem = elem_size(&send.dtype)?;
    if rm.packed_len() != sm.packed_len() {
        return Err(bytes_mismatch(CALL, "the output", rm.packed_len(), sm.packed_len()));
    }
    let f = Forced::from_env()?;
    let a = choice::reduce(f.reduce, op.reorderable());
    let b = choice::bcast(f.bcast, comm.size(), sm.packed_len());
    let s = inter::allreduce(comm.size(), comm.rank(), send.count, elem, a, b);
    start(comm, s, Some(&sm), Some(&rm), false, Some(r))
}

/// `MPI_Ireduce_scatter` (`MPI_Ireduce_scatter_block`: equal counts): `recv` receives block
/// `counts[rank]` of the reduction of the other group's `send`s (`Σ counts` elements; the
/// other group's counts add up to the same).
pub fn reduce_scatter(
    comm: &Comm,
    send: Option<&RawBuf>,
    recv: &RawBuf,
    counts: &[usize],
    op: &Op,
) -> Result<Planned> {
    const CALL: &str = "MPI_Reduce_scatter";
    counts_for(CALL, counts.len(), comm.size(), "local")?;
    let send = needed(CALL, send, "input buffer")?;
    let r = reducer(CALL, op, &send.dtype)?;
    let elem = elem_size(&send.dtype)?;
    let total = counts
        .iter()
        .try_fold(0usize, |a, &c| a.checked_add(c))
        .filter(|t| t.checked_mul(elem).is_some())
        .ok_or_else(|| Error::count(format!("{CALL}: the counts add up to more than memory")))?;
    let (sm, rm) = (Mem::of(send)?, Mem::of(recv)?);
    if sm.packed_len() != total * elem {
        return Err(bytes_mismatch(CALL, "the input", sm.packed_len(), total * elem));
    }
    let want = counts[comm.rank() as usize] * elem;
    if rm.packed_len() != want {
        return Err(bytes_mismatch(CALL, "the output", rm.packed_len(), want));
    }
    let a = choice::reduce(Forced::from_env()?.reduce, op.reorderable());
    let s = inter::reduce_scatter(comm.size(), comm.rank(), counts, elem, a);
    start(comm, s, Some(&sm), Some(&rm), false, Some(r))
}

/// `MPI_Igather` to `root`: `send` in the other group, `recv` (`recv.count` elements per remote
/// rank) at the root.
pub fn gather(comm: &Comm, send: Option<&RawBuf>, recv: Option<&RawBuf>, root: Root) -> Result<Planned> {
    const CALL: &str = "MPI_Gather";
    check_root(comm, CALL, root)?;
    match root {
        Root::Here => {
            let recv = needed(CALL, recv, "output buffer at the root")?;
            let (rm, blocks) = RawVBuf::uniform(recv, remote_size(comm), |v| v.mem(CALL, RECV))?;
            gather_at_root(comm, rm, &blocks)
        }
        _ => send_to_root(comm, CALL, send, root),
    }
}

/// `MPI_Igatherv` to `root`: `recv` at the root has one count and displacement per remote rank.
pub fn gatherv(
    comm: &Comm,
    send: Option<&RawBuf>,
    recv: Option<&RawVBuf<'_>>,
    root: Root,
) -> Result<Planned> {
    const CALL: &str = "MPI_Gatherv";
    check_root(comm, CALL, root)?;
    match root {
        Root::Here => {
            let recv = needed(CALL, recv, "output buffer at the root")?;
            counts_for(CALL, recv.counts.len(), remote_size(comm), "remote")?;
            let (rm, blocks) = recv.mem(CALL, RECV)?;
            gather_at_root(comm, rm, &blocks)
        }
        _ => send_to_root(comm, CALL, send, root),
    }
}

fn gather_at_root(comm: &Comm, rm: Mem, blocks: &[Range]) -> Result<Planned> {
    let s = inter::gather(comm.size(), Root::Here, Range::EMPTY, blocks);
    start(comm, s, None, Some(&rm), false, None)
}

fn send_to_root(comm: &Comm, call: &str, send: Option<&RawBuf>, root: Root) -> Result<Planned> {
    let sm = match root {
        Root::Idle => None,
        _ => Some(Mem::of(needed(call, send, "input buffer")?)?),
    };
    let mine = Range::new(SEND, 0, sm.as_ref().map_or(0, Mem::packed_len));
    let s = inter::gather(comm.size(), root, mine, &[]);
    start(comm, s, sm.as_ref(), None, false, None)
}

/// `MPI_Iscatter` from `root`: `send` (`send.count` elements per remote rank) at the root,
/// `recv` in the other group.
pub fn scatter(comm: &Comm, send: Option<&RawBuf>, recv: Option<&RawBuf>, root: Root) -> Result<Planned> {
    const CALL: &str = "MPI_Scatter";
    check_root(comm, CALL, root)?;
    match root {
        Root::Here => {
            let send = needed(CALL, send, "input buffer at the root")?;
            let (sm, blocks) = RawVBuf::uniform(send, remote_size(comm), |v| v.mem(CALL, SEND))?;
            scatter_from_root(comm, sm, &blocks)
        }
        _ => recv_from_root(comm, CALL, recv, root),
    }
}

/// `MPI_Iscatterv` from `root`: `send` at the root has one count and displacement per remote
/// rank.
pub fn scatterv(
    comm: &Comm,
    send: Option<&RawVBuf<'_>>,
    recv: Option<&RawBuf>,
    root: Root,
) -> Result<Planned> {
    const CALL: &str = "MPI_Scatterv";
    check_root(comm, CALL, root)?;
    match root {
        Root::Here => {
            let send = needed(CALL, send, "input buffer at the root")?;
            counts_for(CALL, send.counts.len(), remote_size(comm), "remote")?;
            let (sm, blocks) = send.mem(CALL, SEND)?;
            scatter_from_root(comm, sm, &blocks)
        }
        _ => recv_from_root(comm, CALL, recv, root),
    }
}

fn scatter_from_root(comm: &Comm, sm: Mem, blocks: &[Range]) -> Result<Planned> {
    let s = inter::scatter(comm.size(), Root::Here, blocks, Range::EMPTY);
    start(comm, s, Some(&sm), None, false, None)
}

fn recv_from_root(comm: &Comm, call: &str, recv: Option<&RawBuf>, root: Root) -> Result<Planned> {
    let rm = match root {
        Root::Idle => None,
        _ => Some(Mem::of(needed(call, recv, "output buffer")?)?),
    };
    let out = Range::new(RECV, 0, rm.as_ref().map_or(0, Mem::packed_len));
    let s = inter::scatter(comm.size(), root, &[], out);
    start(comm, s, None, rm.as_ref(), false, None)
}

/// `MPI_Iallgather`: every rank's `send` to every remote rank's `recv` (`recv.count` elements
/// per remote rank).
pub fn allgather(comm: &Comm, send: Option<&RawBuf>, recv: &RawBuf) -> Result<Planned> {
    const CALL: &str = "MPI_Allgather";
    let sm = Mem::of(needed(CALL, send, "input buffer")?)?;
    let (rm, blocks) = RawVBuf::uniform(recv, remote_size(comm), |v| v.mem(CALL, RECV))?;
    let mine = Range::new(SEND, 0, sm.packed_len());
    let sends = vec![mine; remote_size(comm) as usize];
    let s = all_to_remote(comm.size(), &sends, &blocks);
    start(comm, s, Some(&sm), Some(&rm), false, None)
}

/// `MPI_Iallgatherv`: as [`allgather`], `recv` with one count and displacement per remote rank.
pub fn allgatherv(comm: &Comm, send: Option<&RawBuf>, recv: &RawVBuf<'_>) -> Result<Planned> {
    const CALL: &str = "MPI_Allgatherv";
    counts_for(CALL, recv.counts.len(), remote_size(comm), "remote")?;
    let sm = Mem::of(needed(CALL, send, "input buffer")?)?;
    let (rm, blocks) = recv.mem(CALL, RECV)?;
    let sends = vec![Range::new(SEND, 0, sm.packed_len()); remote_size(comm) as usize];
    let s = all_to_remote(comm.size(), &sends, &blocks);
    start(comm, s, Some(&sm), Some(&rm), false, None)
}

/// `MPI_Ialltoall`: block j of `send` to remote rank j, block j of `recv` from it.
pub fn alltoall(comm: &Comm, send: Option<&RawBuf>, recv: &RawBuf) -> Result<Planned> {
    const CALL: &str = "MPI_Alltoall";
    let nr = remote_size(comm);
    let (sm, sblocks) = RawVBuf::uniform(needed(CALL, send, "input buffer")?, nr, |v| v.mem(CALL, SEND))?;
    let (rm, rblocks) = RawVBuf::uniform(recv, nr, |v| v.mem(CALL, RECV))?;
    let s = all_to_remote(comm.size(), &sblocks, &rblocks);
    start(comm, s, Some(&sm), Some(&rm), false, None)
}

/// `MPI_Ialltoallv`: as [`alltoall`], with one count and displacement per remote rank.
pub fn alltoallv(comm: &Comm, send: Option<&RawVBuf<'_>>, recv: &RawVBuf<'_>) -> Result<Planned> {
    const CALL: &str = "MPI_Alltoallv";
    let send = needed(CALL, send, "input buffer")?;
    for c in [send.counts.len(), recv.counts.len()] {
        counts_for(CALL, c, remote_size(comm), "remote")?;
    }
    let (sm, sblocks) = send.mem(CALL, SEND)?;
    let (rm, rblocks) = recv.mem(CALL, RECV)?;
    let s = all_to_remote(comm.size(), &sblocks, &rblocks);
    start(comm, s, Some(&sm), Some(&rm), false, None)
}

/// `MPI_Ialltoallw`: block j of `send` (its own count, type and byte displacement) to remote
/// rank j, block j of `recv` from it.
pub fn alltoallw(comm: &Comm, send: Option<&RawWBuf<'_>>, recv: &RawWBuf<'_>) -> Result<Planned> {
    const CALL: &str = "MPI_Alltoallw";
    let nr = remote_size(comm) as usize;
    let send = needed(CALL, send, "input buffer")?;
    let (sb, sblocks) = send.pieces(CALL, nr, SEND)?;
    let (rb, rblocks) = recv.pieces(CALL, nr, RECV)?;
    let nl = comm.size();
    let s = super::api_gather::alltoallw_with(Some(&sblocks), &rblocks, rb.1, |s, sends, recvs| {
        all_to_remote_into(s, nl, sends, recvs)
    });
    launch(comm, s, sb, rb, None)
}
