//! Neighbourhood collectives: `MPI_Neighbor_allgather`, `_allgatherv`, `_alltoall`,
//! `_alltoallv`, `_alltoallw`, their nonblocking `MPI_Ineighbor_*` forms and the large-count
//! `_c` forms of both, over `madmpi::coll::neighbor` with the neighbour lists of the
//! communicator's topology.
//!
//! One build function per collective, generic over the width of counts and displacements
//! (`CInt`: `int`, or `MPI_Count`/`MPI_Aint` for `_c`), checks the arguments and plans the
//! exchange; one `family!` entry each makes it the blocking, nonblocking and persistent
//! (`MPI_Neighbor_*_init`, MPI 4.0) C functions in both widths, as for the other collectives.
//!
//! Checks (the buffer checkers are the gather family's, given the topology's degrees as the
//! number of blocks): the topology first (`MPI_ERR_TOPOLOGY` without one: the array lengths are its
//! degrees), then the send side and the receive side in parameter order (counts
//! `MPI_ERR_COUNT`, datatypes, arrays `MPI_ERR_ARG`, buffers `MPI_ERR_BUFFER`; `MPI_IN_PLACE`
//! is not defined for neighbourhood collectives: `MPI_ERR_BUFFER`).
//!
//! Owns the C signatures and the order of the checks.

use super::coll_blocks::{TypesArg, blocks};
use super::coll_gather::plain;
use super::family::family;
use crate::check::CInt;
use crate::comms::CommObj;
use crate::errors::{Fail, On};
use crate::state::State;
use madmpi::abi;
use madmpi::coll::neighbor::{self, Links};
use madmpi::coll::raw::{Planned, RawBuf};
use madmpi::operation::Operation;
use std::ffi::c_void;
use std::sync::Arc;

const SEND: &str = "send buffer";
const RECV: &str = "receive buffer";

fn links(c: &Arc<CommObj>) -> Result<Links, Fail> {
    c.comm.neighbor_links().on(c)
}

/// How a neighbourhood collective of plain buffers (allgather, alltoall) is planned.
type PlanPlain = fn(&madmpi::comm::Comm, &Links, &RawBuf, &RawBuf) -> madmpi::error::Result<Planned>;

/// `MPI_Neighbor_allgather` or `MPI_Neighbor_alltoall` (`plan`), checked and planned.
///
/// # Safety
/// The buffers are valid until the operation completes (MPI's contract).
#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_plain<W: CInt>(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    plan: PlanPlain,
    sendbuf: *const c_void,
    sendcount: W,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcount: W,
    recvtype: abi::Datatype,
) -> Result<Operation, Fail> {
    let l = links(c)?;
    let send = plain(st, c, sendbuf, sendcount, sendtype, SEND)?;
    let recv = plain(st, c, recvbuf, recvcount, recvtype, RECV)?;
    plan(&c.comm, &l, &send, &recv).map(Operation::Collective).on(c)
}

/// `MPI_Neighbor_allgatherv`, checked and planned.
///
/// # Safety
/// The buffers are valid until the request completes, the arrays during the call (MPI's
/// contract).
#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_allgatherv<W: CInt, D: CInt>(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    sendbuf: *const c_void,
    sendcount: W,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const W,
    displs: *const D,
    recvtype: abi::Datatype,
) -> Result<Operation, Fail> {
    let l = links(c)?;
    let send = plain(st, c, sendbuf, sendcount, sendtype, SEND)?;
    // SAFETY: the arrays hold one element per source (MPI's contract).
    let recv = unsafe { blocks(st, c, recvbuf, recvcounts, displs, recvtype, l.sources.len(), RECV) }?;
    neighbor::neighbor_allgatherv(&c.comm, &l, &send, &recv.raw()).map(Operation::Collective).on(c)
}

/// `MPI_Neighbor_alltoallv` or (`T` an array of datatypes) `MPI_Neighbor_alltoallw`, checked
/// and planned.
///
/// # Safety
/// The buffers are valid until the request completes, the arrays during the call (MPI's
/// contract).
#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_blocks<W: CInt, D: CInt, T: TypesArg>(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    sendbuf: *const c_void,
    sendcounts: *const W,
    sdispls: *const D,
    sendtypes: T,
    recvbuf: *mut c_void,
    recvcounts: *const W,
    rdispls: *const D,
    recvtypes: T,
) -> Result<Operation, Fail> {
    let l = links(c)?;
    // SAFETY: the arrays hold one element per destination, then per source (MPI's contract).
    let (send, recv) = unsafe {
        let s = blocks(st, c, sendbuf, sendcounts, sdispls, sendtypes, l.dests.len(), SEND)?;
        (s, blocks(st, c, recvbuf, recvcounts, rdispls, recvtypes, l.sources.len(), RECV)?)
    };
    T::neighbor_alltoall(&c.comm, &l, &send, &recv).map(Operation::Collective).on(c)
}

family! {
    (
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcount: Count,
        recvtype: abi::Datatype,
    )
    /// `MPI_Neighbor_allgather`: the send buffer to every destination, block j of the receive
    /// buffer from source j.
    => neighbor_plain[neighbor::neighbor_allgather];
    run MPI_Neighbor_allgather / PMPI_Neighbor_allgather, MPI_Neighbor_allgather_c / PMPI_Neighbor_allgather_c;
    start MPI_Ineighbor_allgather / PMPI_Ineighbor_allgather, MPI_Ineighbor_allgather_c / PMPI_Ineighbor_allgather_c;
    init_info MPI_Neighbor_allgather_init / PMPI_Neighbor_allgather_init,
        MPI_Neighbor_allgather_init_c / PMPI_Neighbor_allgather_init_c;
    /// `MPI_Neighbor_alltoall`: block k to destination k, block j from source j.
    => neighbor_plain[neighbor::neighbor_alltoall];
    run MPI_Neighbor_alltoall / PMPI_Neighbor_alltoall, MPI_Neighbor_alltoall_c / PMPI_Neighbor_alltoall_c;
    start MPI_Ineighbor_alltoall / PMPI_Ineighbor_alltoall, MPI_Ineighbor_alltoall_c / PMPI_Ineighbor_alltoall_c;
    init_info MPI_Neighbor_alltoall_init / PMPI_Neighbor_alltoall_init,
        MPI_Neighbor_alltoall_init_c / PMPI_Neighbor_alltoall_init_c;

    (
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcounts: *const Count,
        displs: *const Displ,
        recvtype: abi::Datatype,
    )
    /// `MPI_Neighbor_allgatherv`: source j's block at `displs[j]` extents.
    => neighbor_allgatherv[];
    run MPI_Neighbor_allgatherv / PMPI_Neighbor_allgatherv, MPI_Neighbor_allgatherv_c / PMPI_Neighbor_allgatherv_c;
    start MPI_Ineighbor_allgatherv / PMPI_Ineighbor_allgatherv, MPI_Ineighbor_allgatherv_c / PMPI_Ineighbor_allgatherv_c;
    init_info MPI_Neighbor_allgatherv_init / PMPI_Neighbor_allgatherv_init,
        MPI_Neighbor_allgatherv_init_c / PMPI_Neighbor_allgatherv_init_c;

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
    /// `MPI_Neighbor_alltoallv`: displacements in extents of the datatypes.
    => neighbor_blocks[];
    run MPI_Neighbor_alltoallv / PMPI_Neighbor_alltoallv, MPI_Neighbor_alltoallv_c / PMPI_Neighbor_alltoallv_c;
    start MPI_Ineighbor_alltoallv / PMPI_Ineighbor_alltoallv, MPI_Ineighbor_alltoallv_c / PMPI_Ineighbor_alltoallv_c;
    init_info MPI_Neighbor_alltoallv_init / PMPI_Neighbor_alltoallv_init,
        MPI_Neighbor_alltoallv_init_c / PMPI_Neighbor_alltoallv_init_c;

    (
        sendbuf: *const c_void,
        sendcounts: *const Count,
        sdispls: *const abi::Aint,
        sendtypes: *const abi::Datatype,
        recvbuf: *mut c_void,
        recvcounts: *const Count,
        rdispls: *const abi::Aint,
        recvtypes: *const abi::Datatype,
    )
    /// `MPI_Neighbor_alltoallw`: a datatype per block, displacements in bytes (`MPI_Aint` in
    /// both forms).
    => neighbor_blocks[];
    run MPI_Neighbor_alltoallw / PMPI_Neighbor_alltoallw, MPI_Neighbor_alltoallw_c / PMPI_Neighbor_alltoallw_c;
    start MPI_Ineighbor_alltoallw / PMPI_Ineighbor_alltoallw, MPI_Ineighbor_alltoallw_c / PMPI_Ineighbor_alltoallw_c;
    init_info MPI_Neighbor_alltoallw_init / PMPI_Neighbor_alltoallw_init,
        MPI_Neighbor_alltoallw_init_c / PMPI_Neighbor_alltoallw_init_c;
}
