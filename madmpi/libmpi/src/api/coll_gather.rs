//! Collective operations of the gather family: `MPI_Gather`, `MPI_Scatter`, `MPI_Allgather`,
//! `MPI_Alltoall`, their `v` forms, `MPI_Alltoallw` and their nonblocking forms, over
//! `madmpi::coll::raw` (derived datatypes are packed and unpacked by the schedule itself, as in
//! [`super::coll`]).
//!
//! Checks as in [`super::coll`] (MPICH 4.0's order: root, the send side, the receive side;
//! every error after the communicator goes to its handler). Arguments significant only at the
//! root are not looked at elsewhere. `MPI_IN_PLACE` (MPI 4.0): gather(v) `sendbuf` at the root;
//! scatter(v) `recvbuf` at the root; allgather(v) and alltoall(v, w) `sendbuf` on every rank;
//! anywhere else it is `MPI_ERR_BUFFER`, as are a null buffer with data and a send buffer equal
//! to the receive buffer. `v` count and displacement arrays: null `MPI_ERR_ARG`, a negative
//! count `MPI_ERR_COUNT`.
//!
//! Layout: one checker per kind of buffer (`plain` here, `v` and `w` buffers in
//! `coll_blocks`); one checker per shape of collective (`rooted_args`, `everywhere_args`),
//! which decides which sides this rank looks at and in which order, and returns them checked;
//! then one build function per collective or pair of collectives of one shape (that checker
//! given the buffer checkers of its sides, then the `raw` plan), which a `family!` entry makes
//! the blocking, nonblocking and persistent C functions, in `int` and `_c` forms.

use super::coll::{buffer, count_type, in_place, not_aliased, root};
use super::coll_blocks::{Side, TypesArg, VBuf, blocks, peers};
use super::family::family;
use crate::check::CInt;
use crate::comms::CommObj;
use crate::errors::{Fail, On};
use crate::state::State;
use madmpi::abi;
use madmpi::coll::raw::{self, RawBuf};
use madmpi::operation::Operation;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// No `v` count arrays (a gather or scatter, not its `v` form, on an intercommunicator).
const NO_V: Option<(*const c_int, *const c_int)> = None;

/// What the error messages call the send buffer.
const SEND: &str = "send buffer";
/// What the error messages call the receive buffer.
const RECV: &str = "receive buffer";

/// `count` elements of `datatype` at `buf`, checked (count, datatype, buffer).
pub(super) fn plain(
    st: &State,
    c: &Arc<CommObj>,
    buf: *const c_void,
    count: impl CInt,
    datatype: abi::Datatype,
    what: &str,
) -> Result<RawBuf, Fail> {
    let (n, ty) = count_type(st, c, count, datatype)?;
    buffer(c, buf, n, &ty, what)
}

/// The checked sides of a rooted collective, each `None` where it is not significant (or is
/// `MPI_IN_PLACE`).
struct Rooted<S, R> {
    root: u32,
    send: Option<S>,
    recv: Option<R>,
}

/// Which way a rooted collective moves data: to the root (a gather) or from it (a scatter).
#[derive(Clone, Copy, PartialEq)]
enum Way {
    Gather,
    Scatter,
}

/// The arguments of a rooted collective: the root; the send side (`send`), then the receive
/// side (`recv`), each where it is significant: the side data leaves or reaches the root by
/// (a gather's receive side, a scatter's send side) at the root only, the other on every rank
/// but the root with `MPI_IN_PLACE` there; then at the root aliasing.
fn rooted_args<S, R: Side>(
    c: &Arc<CommObj>,
    way: Way,
    root_rank: c_int,
    sendbuf: *const c_void,
    recvbuf: *const c_void,
    send: impl FnOnce() -> Result<S, Fail>,
    recv: impl FnOnce() -> Result<R, Fail>,
) -> Result<Rooted<S, R>, Fail> {
    let root = root(c, root_rank)?;
    let at_root = c.comm.rank() == root;
    let significant = |root_side: bool, buf| if root_side { at_root } else { !(at_root && in_place(buf)) };
    let send = if significant(way == Way::Scatter, sendbuf) { Some(send()?) } else { None };
    let recv = if significant(way == Way::Gather, recvbuf) { Some(recv()?) } else { None };
    if let (true, Some(r)) = (at_root, &recv) {
        not_aliased(c, sendbuf, recvbuf, r.moves())?;
    }
    Ok(Rooted { root, send, recv })
}

/// The checked sides of a collective without a root: the send side (`None` for
/// `MPI_IN_PLACE`) and the receive side.
struct Everywhere<S, R> {
    send: Option<S>,
    recv: R,
}

/// The arguments of an allgather or alltoall: the send side (`send`) unless `MPI_IN_PLACE`,
/// the receive side (`recv`), then aliasing.
fn everywhere_args<S, R: Side>(
    c: &Arc<CommObj>,
    sendbuf: *const c_void,
    recvbuf: *const c_void,
    send: impl FnOnce() -> Result<S, Fail>,
    recv: impl FnOnce() -> Result<R, Fail>,
) -> Result<Everywhere<S, R>, Fail> {
    let send = if in_place(sendbuf) { None } else { Some(send()?) };
    let recv = recv()?;
    not_aliased(c, sendbuf, recvbuf, recv.moves())?;
    Ok(Everywhere { send, recv })
}

/// A gather or a scatter (`way`), checked.
///
/// # Safety
/// The buffers are valid until the request completes (MPI's contract).
#[allow(clippy::too_many_arguments)]
unsafe fn rooted(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    way: Way,
    sendbuf: *const c_void,
    sendcount: impl CInt,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcount: impl CInt,
    recvtype: abi::Datatype,
    root: c_int,
) -> Result<Operation, Fail> {
    if c.comm.is_inter() {
        // SAFETY: the buffers are as this function's contract says, which is the
        // intercommunicator version's.
        return unsafe {
            match way {
                Way::Gather => super::coll_inter::gather(
                    st, c, sendbuf, sendcount, sendtype, recvbuf, recvcount, NO_V, recvtype, root,
                ),
                Way::Scatter => super::coll_inter::scatter(
                    st, c, sendbuf, sendcount, NO_V, sendtype, recvbuf, recvcount, recvtype, root,
                ),
            }
        };
    }
    let a = rooted_args(
        c,
        way,
        root,
        sendbuf,
        recvbuf,
        || plain(st, c, sendbuf, sendcount, sendtype, SEND),
        || plain(st, c, recvbuf, recvcount, recvtype, RECV),
    )?;
    let plan = match way {
        Way::Gather => raw::gather,
        Way::Scatter => raw::scatter,
    };
    plan(&c.comm, a.send.as_ref(), a.recv.as_ref(), a.root).map(Operation::Collective).on(c)
}

/// A gatherv, checked.
///
/// # Safety
/// The buffers and arrays are valid (MPI's contract), the buffers until the request completes.
#[allow(clippy::too_many_arguments)]
unsafe fn gatherv(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    sendbuf: *const c_void,
    sendcount: impl CInt,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const impl CInt,
    displs: *const impl CInt,
    recvtype: abi::Datatype,
    root: c_int,
) -> Result<Operation, Fail> {
    if c.comm.is_inter() {
        // SAFETY: the buffers (and, at the root, the count arrays) are as this function's
        // contract says, which is the intercommunicator version's.
        return unsafe {
            super::coll_inter::gather(
                st,
                c,
                sendbuf,
                sendcount,
                sendtype,
                recvbuf,
                0,
                Some((recvcounts, displs)),
                recvtype,
                root,
            )
        };
    }
    let a = rooted_args(
        c,
        Way::Gather,
        root,
        sendbuf,
        recvbuf,
        || plain(st, c, sendbuf, sendcount, sendtype, SEND),
        // SAFETY: the caller's contract.
        || unsafe { blocks(st, c, recvbuf, recvcounts, displs, recvtype, peers(c), RECV) },
    )?;
    let recv = a.recv.as_ref().map(VBuf::raw);
    raw::gatherv(&c.comm, a.send.as_ref(), recv.as_ref(), a.root).map(Operation::Collective).on(c)
}

/// A scatterv, checked.
///
/// # Safety
/// The buffers and arrays are valid (MPI's contract), the buffers until the request completes.
#[allow(clippy::too_many_arguments)]
unsafe fn scatterv(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    sendbuf: *const c_void,
    sendcounts: *const impl CInt,
    displs: *const impl CInt,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcount: impl CInt,
    recvtype: abi::Datatype,
    root: c_int,
) -> Result<Operation, Fail> {
    if c.comm.is_inter() {
        // SAFETY: the buffers (and, at the root, the count arrays) are as this function's
        // contract says, which is the intercommunicator version's.
        return unsafe {
            super::coll_inter::scatter(
                st,
                c,
                sendbuf,
                0,
                Some((sendcounts, displs)),
                sendtype,
                recvbuf,
                recvcount,
                recvtype,
                root,
            )
        };
    }
    let a = rooted_args(
        c,
        Way::Scatter,
        root,
        sendbuf,
        recvbuf,
        // SAFETY: the caller's contract.
        || unsafe { blocks(st, c, sendbuf, sendcounts, displs, sendtype, peers(c), SEND) },
        || plain(st, c, recvbuf, recvcount, recvtype, RECV),
    )?;
    let send = a.send.as_ref().map(VBuf::raw);
    raw::scatterv(&c.comm, send.as_ref(), a.recv.as_ref(), a.root).map(Operation::Collective).on(c)
}

/// What a collective without a root plans from its checked sides (allgather, alltoall).
type PlanEverywhere =
    fn(&madmpi::comm::Comm, Option<&RawBuf>, &RawBuf) -> madmpi::error::Result<raw::Planned>;

/// An allgather or an alltoall (`plan`), checked: one block of `sendcount` elements to every
/// rank (the same block, or block j to rank j) and one of `recvcount` from each.
///
/// # Safety
/// Nothing is read through the pointers (the buffers are only described).
#[allow(clippy::too_many_arguments)]
unsafe fn everywhere(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    plan: PlanEverywhere,
    sendbuf: *const c_void,
    sendcount: impl CInt,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcount: impl CInt,
    recvtype: abi::Datatype,
) -> Result<Operation, Fail> {
    let a = everywhere_args(
        c,
        sendbuf,
        recvbuf,
        || plain(st, c, sendbuf, sendcount, sendtype, SEND),
        || plain(st, c, recvbuf, recvcount, recvtype, RECV),
    )?;
    plan(&c.comm, a.send.as_ref(), &a.recv).map(Operation::Collective).on(c)
}

/// An allgatherv, checked.
///
/// # Safety
/// The buffers and arrays are valid (MPI's contract), the buffers until the request completes.
#[allow(clippy::too_many_arguments)]
unsafe fn allgatherv(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    sendbuf: *const c_void,
    sendcount: impl CInt,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const impl CInt,
    displs: *const impl CInt,
    recvtype: abi::Datatype,
) -> Result<Operation, Fail> {
    let a = everywhere_args(
        c,
        sendbuf,
        recvbuf,
        || plain(st, c, sendbuf, sendcount, sendtype, SEND),
        // SAFETY: the caller's contract.
        || unsafe { blocks(st, c, recvbuf, recvcounts, displs, recvtype, peers(c), RECV) },
    )?;
    raw::allgatherv(&c.comm, a.send.as_ref(), &a.recv.raw()).map(Operation::Collective).on(c)
}

/// An alltoallv or (`T` an array of datatypes) an alltoallw, checked.
///
/// # Safety
/// The buffers and arrays are valid (MPI's contract), the buffers until the request completes.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoall_blocks<T: TypesArg>(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    sendbuf: *const c_void,
    sendcounts: *const impl CInt,
    sdispls: *const impl CInt,
    sendtypes: T,
    recvbuf: *mut c_void,
    recvcounts: *const impl CInt,
    rdispls: *const impl CInt,
    recvtypes: T,
) -> Result<Operation, Fail> {
    let a = everywhere_args(
        c,
        sendbuf,
        recvbuf,
        // SAFETY: the caller's contract.
        || unsafe { blocks(st, c, sendbuf, sendcounts, sdispls, sendtypes, peers(c), SEND) },
        // SAFETY: the caller's contract.
        || unsafe { blocks(st, c, recvbuf, recvcounts, rdispls, recvtypes, peers(c), RECV) },
    )?;
    T::alltoall(&c.comm, a.send.as_ref(), &a.recv).map(Operation::Collective).on(c)
}

family! {
    (
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcount: Count,
        recvtype: abi::Datatype,
        root: c_int,
    )
    /// Gather: `MPI_IN_PLACE` as the send buffer at the root only.
    => rooted[Way::Gather];
    run MPI_Gather / PMPI_Gather, MPI_Gather_c / PMPI_Gather_c;
    start MPI_Igather / PMPI_Igather, MPI_Igather_c / PMPI_Igather_c;
    init_info MPI_Gather_init / PMPI_Gather_init, MPI_Gather_init_c / PMPI_Gather_init_c;
    /// Scatter: `MPI_IN_PLACE` as the receive buffer at the root only.
    => rooted[Way::Scatter];
    run MPI_Scatter / PMPI_Scatter, MPI_Scatter_c / PMPI_Scatter_c;
    start MPI_Iscatter / PMPI_Iscatter, MPI_Iscatter_c / PMPI_Iscatter_c;
    init_info MPI_Scatter_init / PMPI_Scatter_init, MPI_Scatter_init_c / PMPI_Scatter_init_c;

    (
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcounts: *const Count,
        displs: *const Displ,
        recvtype: abi::Datatype,
        root: c_int,
    )
    /// Gather of blocks of varying sizes: `MPI_IN_PLACE` as the send buffer at the root only.
    => gatherv[];
    run MPI_Gatherv / PMPI_Gatherv, MPI_Gatherv_c / PMPI_Gatherv_c;
    start MPI_Igatherv / PMPI_Igatherv, MPI_Igatherv_c / PMPI_Igatherv_c;
    init_info MPI_Gatherv_init / PMPI_Gatherv_init, MPI_Gatherv_init_c / PMPI_Gatherv_init_c;

    (
        sendbuf: *const c_void,
        sendcounts: *const Count,
        displs: *const Displ,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcount: Count,
        recvtype: abi::Datatype,
        root: c_int,
    )
    /// Scatter of blocks of varying sizes: `MPI_IN_PLACE` as the receive buffer at the root
    /// only.
    => scatterv[];
    run MPI_Scatterv / PMPI_Scatterv, MPI_Scatterv_c / PMPI_Scatterv_c;
    start MPI_Iscatterv / PMPI_Iscatterv, MPI_Iscatterv_c / PMPI_Iscatterv_c;
    init_info MPI_Scatterv_init / PMPI_Scatterv_init, MPI_Scatterv_init_c / PMPI_Scatterv_init_c;

    (
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcount: Count,
        recvtype: abi::Datatype,
    )
    /// Allgather: `MPI_IN_PLACE` as the send buffer everywhere.
    => everywhere[raw::allgather];
    run MPI_Allgather / PMPI_Allgather, MPI_Allgather_c / PMPI_Allgather_c;
    start MPI_Iallgather / PMPI_Iallgather, MPI_Iallgather_c / PMPI_Iallgather_c;
    init_info MPI_Allgather_init / PMPI_Allgather_init, MPI_Allgather_init_c / PMPI_Allgather_init_c;
    /// All-to-all: `MPI_IN_PLACE` as the send buffer everywhere.
    => everywhere[raw::alltoall];
    run MPI_Alltoall / PMPI_Alltoall, MPI_Alltoall_c / PMPI_Alltoall_c;
    start MPI_Ialltoall / PMPI_Ialltoall, MPI_Ialltoall_c / PMPI_Ialltoall_c;
    init_info MPI_Alltoall_init / PMPI_Alltoall_init, MPI_Alltoall_init_c / PMPI_Alltoall_init_c;

    (
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcounts: *const Count,
        displs: *const Displ,
        recvtype: abi::Datatype,
    )
    /// Allgather of blocks of varying sizes: `MPI_IN_PLACE` as the send buffer everywhere.
    => allgatherv[];
    run MPI_Allgatherv / PMPI_Allgatherv, MPI_Allgatherv_c / PMPI_Allgatherv_c;
    start MPI_Iallgatherv / PMPI_Iallgatherv, MPI_Iallgatherv_c / PMPI_Iallgatherv_c;
    init_info MPI_Allgatherv_init / PMPI_Allgatherv_init, MPI_Allgatherv_init_c / PMPI_Allgatherv_init_c;

    (
        sendbuf: *const c_void,
        sendcounts: *const Count,
        sdispls: *const Displ,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcounts: *const Count,
        rdispls: *const Displ,
        recvtype: abi::Datatype,
    )
    /// All-to-all of blocks of varying sizes: `MPI_IN_PLACE` as the send buffer everywhere.
    => alltoall_blocks[];
    run MPI_Alltoallv / PMPI_Alltoallv, MPI_Alltoallv_c / PMPI_Alltoallv_c;
    start MPI_Ialltoallv / PMPI_Ialltoallv, MPI_Ialltoallv_c / PMPI_Ialltoallv_c;
    init_info MPI_Alltoallv_init / PMPI_Alltoallv_init, MPI_Alltoallv_init_c / PMPI_Alltoallv_init_c;

    (
        sendbuf: *const c_void,
        sendcounts: *const Count,
        sdispls: *const Displ,
        sendtypes: *const abi::Datatype,
        recvbuf: *mut c_void,
        recvcounts: *const Count,
        rdispls: *const Displ,
        recvtypes: *const abi::Datatype,
    )
    /// All-to-all with a datatype per block: `MPI_IN_PLACE` as the send buffer everywhere;
    /// displacements in bytes.
    => alltoall_blocks[];
    run MPI_Alltoallw / PMPI_Alltoallw, MPI_Alltoallw_c / PMPI_Alltoallw_c;
    start MPI_Ialltoallw / PMPI_Ialltoallw, MPI_Ialltoallw_c / PMPI_Ialltoallw_c;
    init_info MPI_Alltoallw_init / PMPI_Alltoallw_init, MPI_Alltoallw_init_c / PMPI_Alltoallw_init_c;
}
