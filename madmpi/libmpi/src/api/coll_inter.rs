//! The rooted collectives on an intercommunicator, reached from the start functions of
//! [`super::coll`] and [`super::coll_gather`] (the unrooted ones take the same path as on an
//! intracommunicator: `madmpi::coll::raw` serves both).
//!
//! The root argument is `MPI_ROOT` at the root, `MPI_PROC_NULL` at the other processes of its
//! group, and the root's rank in the remote group in the other group (`MPI_ERR_ROOT`
//! otherwise). Checks as on an intracommunicator (count, datatype, operation, root, then the
//! buffers significant at this process: the root's output or input, the other group's input
//! or output; nothing at `MPI_PROC_NULL`). `MPI_IN_PLACE` is `MPI_ERR_BUFFER` here.

use super::coll::{buffer, count_type, operation};
use super::coll_blocks::{blocks, peers};
use super::coll_gather::plain;
use crate::check::CInt;
use crate::comms::CommObj;
use crate::errors::{Fail, On};
use crate::state::State;
use madmpi::abi;
use madmpi::coll::inter::Root;
use madmpi::coll::raw_inter as raw;
use madmpi::error::Error;
use madmpi::operation::Operation;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// What the error messages call the send buffer.
const SEND: &str = "send buffer";
/// What the error messages call the receive buffer.
const RECV: &str = "receive buffer";

/// The root argument on an intercommunicator.
fn root(c: &Arc<CommObj>, r: c_int) -> Result<Root, Fail> {
    let remote = c.comm.peer_size();
    match r {
        abi::MPI_ROOT => Ok(Root::Here),
        abi::MPI_PROC_NULL => Ok(Root::Idle),
        _ => u32::try_from(r)
            .ok()
            .filter(|&r| r < remote)
            .map(Root::Remote)
            .ok_or_else(|| {
                Error::root(format!(
                    "invalid root {r} (MPI_ROOT, MPI_PROC_NULL or a rank of the remote group of size {remote})"
                ))
            })
            .on(c),
    }
}

/// `MPI_Ibcast` on an intercommunicator.
///
/// # Safety
/// `buf` holds the data until the request completes (MPI's contract).
pub(super) unsafe fn bcast(
    st: &State,
    c: &Arc<CommObj>,
    buf: *mut c_void,
    count: impl CInt,
    datatype: abi::Datatype,
    root_rank: c_int,
) -> Result<Operation, Fail> {
    let (count, ty) = count_type(st, c, count, datatype)?;
    let root = root(c, root_rank)?;
    let b = match root {
        Root::Idle => None,
        _ => Some(buffer(c, buf, count, &ty, "buffer")?),
    };
    raw::bcast(&c.comm, b.as_ref(), root).map(Operation::Collective).on(c)
}

/// `MPI_Ireduce` on an intercommunicator.
///
/// # Safety
/// The buffers are valid until the request completes (MPI's contract).
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn reduce(
    st: &State,
    c: &Arc<CommObj>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: impl CInt,
    datatype: abi::Datatype,
    op: abi::Op,
    root_rank: c_int,
) -> Result<Operation, Fail> {
    let (count, ty) = count_type(st, c, count, datatype)?;
    let o = operation(c, op)?;
    let root = root(c, root_rank)?;
    let send = match root {
        Root::Remote(_) => Some(buffer(c, sendbuf, count, &ty, SEND)?),
        _ => None,
    };
    let recv = match root {
        Root::Here => Some(buffer(c, recvbuf, count, &ty, RECV)?),
        _ => None,
    };
    let op = o.op(datatype);
    raw::reduce(&c.comm, send.as_ref(), recv.as_ref(), &op, root).map(Operation::Collective).on(c)
}

/// `MPI_Igather` (`recvcounts` and `displs` given: `MPI_Igatherv`) on an intercommunicator.
///
/// # Safety
/// The buffers are valid until the request completes, the arrays (one entry per remote rank,
/// read at the root) during the call (MPI's contract).
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn gather(
    st: &State,
    c: &Arc<CommObj>,
    sendbuf: *const c_void,
    sendcount: impl CInt,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcount: impl CInt,
    v: Option<(*const impl CInt, *const impl CInt)>,
    recvtype: abi::Datatype,
    root_rank: c_int,
) -> Result<Operation, Fail> {
    let root = root(c, root_rank)?;
    match (root, v) {
        (Root::Here, None) => {
            let recv = plain(st, c, recvbuf, recvcount, recvtype, RECV)?;
            raw::gather(&c.comm, None, Some(&recv), root).map(Operation::Collective).on(c)
        }
        (Root::Here, Some((counts, displs))) => {
            // SAFETY: at the root the arrays hold one entry per remote rank (this function's
            // contract), as `blocks` reads them.
            let recv = unsafe { blocks(st, c, recvbuf, counts, displs, recvtype, peers(c), RECV) }?;
            raw::gatherv(&c.comm, None, Some(&recv.raw()), root).map(Operation::Collective).on(c)
        }
        (Root::Remote(_), _) => {
            let send = plain(st, c, sendbuf, sendcount, sendtype, SEND)?;
            raw::gather(&c.comm, Some(&send), None, root).map(Operation::Collective).on(c)
        }
        (Root::Idle, _) => raw::gather(&c.comm, None, None, root).map(Operation::Collective).on(c),
    }
}

/// `MPI_Iscatter` (`sendcounts` and `displs` given: `MPI_Iscatterv`) on an intercommunicator.
///
/// # Safety
/// As [`gather`].
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn scatter(
    st: &State,
    c: &Arc<CommObj>,
    sendbuf: *const c_void,
    sendcount: impl CInt,
    v: Option<(*const impl CInt, *const impl CInt)>,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcount: impl CInt,
    recvtype: abi::Datatype,
    root_rank: c_int,
) -> Result<Operation, Fail> {
    let root = root(c, root_rank)?;
    match (root, v) {
        (Root::Here, None) => {
            let send = plain(st, c, sendbuf, sendcount, sendtype, SEND)?;
            raw::scatter(&c.comm, Some(&send), None, root).map(Operation::Collective).on(c)
        }
        (Root::Here, Some((counts, displs))) => {
            // SAFETY: at the root the arrays hold one entry per remote rank (this function's
            // contract), as `blocks` reads them.
            let send = unsafe { blocks(st, c, sendbuf, counts, displs, sendtype, peers(c), SEND) }?;
            raw::scatterv(&c.comm, Some(&send.raw()), None, root).map(Operation::Collective).on(c)
        }
        (Root::Remote(_), _) => {
            let recv = plain(st, c, recvbuf, recvcount, recvtype, RECV)?;
            raw::scatter(&c.comm, None, Some(&recv), root).map(Operation::Collective).on(c)
        }
        (Root::Idle, _) => raw::scatter(&c.comm, None, None, root).map(Operation::Collective).on(c),
    }
}
