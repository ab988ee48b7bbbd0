//! Reduction collectives beyond reduce and allreduce: `MPI_Reduce_scatter`,
//! `MPI_Reduce_scatter_block`, `MPI_Scan`, `MPI_Exscan`, blocking, nonblocking and persistent, in
//! `int` and `_c` forms (one `family!` entry each), over `madmpi::coll::raw`. Checks as in [`super::coll`] (count, datatype, operation, buffers);
//! `MPI_IN_PLACE` as the send buffer everywhere (reduce-scatter in place: the receive buffer
//! holds the whole vector and gets this rank's block at its start). `MPI_Exscan` leaves rank
//! 0's receive buffer untouched.

use super::coll::{buffer, count_type, in_place, operation};
use super::coll_blocks::total;
use super::family::family;
use crate::check::{self, CInt};
use crate::comms::CommObj;
use crate::errors::{Fail, On};
use crate::state::State;
use madmpi::abi;
use madmpi::coll::raw::{self, RawBuf};
use madmpi::error::Error;
use madmpi::operation::Operation;
use std::ffi::c_void;
use std::sync::Arc;

/// The send buffer (`None` for `MPI_IN_PLACE`) and receive buffer of `count` and `recv_count`
/// elements (`recv_count` in place: the input's count), checked for aliasing.
fn buffers(
    c: &Arc<CommObj>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: i64,
    recv_count: i64,
    ty: &madmpi::datatype::Datatype,
) -> Result<(Option<RawBuf>, RawBuf), Fail> {
    let send = if in_place(sendbuf) { None } else { Some(buffer(c, sendbuf, count, ty, "send buffer")?) };
    let recv = buffer(c, recvbuf, if send.is_none() { count } else { recv_count }, ty, "receive buffer")?;
    if count > 0 && std::ptr::eq(sendbuf, recvbuf) {
        return Err(Error::buffer("the send and receive buffers are the same (use MPI_IN_PLACE)")).on(c);
    }
    Ok((send, recv))
}

/// A reduce-scatter, checked.
///
/// # Safety
/// The buffers (until the request completes) and `recvcounts` (one per rank) are valid.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_scatter(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const impl CInt,
    datatype: abi::Datatype,
    op: abi::Op,
) -> Result<Operation, Fail> {
    let n = c.comm.size() as usize;
    // SAFETY: the caller's contract.
    let cs = unsafe { check::array_in(recvcounts, n, "recvcounts") }.on(c)?;
    let counts =
        cs.iter().map(|&x| check::count(x).map(|v| v as usize)).collect::<Result<Vec<_>, _>>().on(c)?;
    let ty = st.committed_datatype(datatype).on(c)?;
    let o = operation(c, op)?;
    let total = total(&counts).on(c)?;
    let mine = counts[c.comm.rank() as usize] as i64;
    let (send, recv) = buffers(c, sendbuf, recvbuf, total, mine, &ty)?;
    let op = o.op(datatype);
    raw::reduce_scatter(&c.comm, send.as_ref(), &recv, &counts, &op).map(Operation::Collective).on(c)
}

/// A reduce-scatter with blocks of one size, checked.
///
/// # Safety
/// The buffers are valid until the request completes (MPI's contract).
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_scatter_block(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: impl CInt,
    datatype: abi::Datatype,
    op: abi::Op,
) -> Result<Operation, Fail> {
    let (count, ty) = count_type(st, c, recvcount, datatype)?;
    let o = operation(c, op)?;
    let n = c.comm.size() as usize;
    let total = count.checked_mul(n as i64).ok_or_else(|| Error::count("the vector is too large")).on(c)?;
    let (send, recv) = buffers(c, sendbuf, recvbuf, total, count, &ty)?;
    let counts = vec![count as usize; n];
    let op = o.op(datatype);
    raw::reduce_scatter(&c.comm, send.as_ref(), &recv, &counts, &op).map(Operation::Collective).on(c)
}

/// A scan (`exclusive`: an exscan), checked.
///
/// # Safety
/// The buffers are valid until the request completes (MPI's contract).
#[allow(clippy::too_many_arguments)]
unsafe fn scan(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    exclusive: bool,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: impl CInt,
    datatype: abi::Datatype,
    op: abi::Op,
) -> Result<Operation, Fail> {
    let (count, ty) = count_type(st, c, count, datatype)?;
    let o = operation(c, op)?;
    let (send, recv) = buffers(c, sendbuf, recvbuf, count, count, &ty)?;
    let op = o.op(datatype);
    raw::scan(&c.comm, send.as_ref(), &recv, &op, exclusive).map(Operation::Collective).on(c)
}

family! {
    (
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcounts: *const Count,
        datatype: abi::Datatype,
        op: abi::Op,
    )
    /// Reduce-scatter: `MPI_IN_PLACE` as the send buffer everywhere.
    => reduce_scatter[];
    run MPI_Reduce_scatter / PMPI_Reduce_scatter, MPI_Reduce_scatter_c / PMPI_Reduce_scatter_c;
    start MPI_Ireduce_scatter / PMPI_Ireduce_scatter, MPI_Ireduce_scatter_c / PMPI_Ireduce_scatter_c;
    init_info MPI_Reduce_scatter_init / PMPI_Reduce_scatter_init,
        MPI_Reduce_scatter_init_c / PMPI_Reduce_scatter_init_c;

    (
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: Count,
        datatype: abi::Datatype,
        op: abi::Op,
    )
    /// Reduce-scatter with blocks of one size (`count`, MPI's `recvcount`): `MPI_IN_PLACE` as
    /// the send buffer everywhere.
    => reduce_scatter_block[];
    run MPI_Reduce_scatter_block / PMPI_Reduce_scatter_block,
        MPI_Reduce_scatter_block_c / PMPI_Reduce_scatter_block_c;
    start MPI_Ireduce_scatter_block / PMPI_Ireduce_scatter_block,
        MPI_Ireduce_scatter_block_c / PMPI_Ireduce_scatter_block_c;
    init_info MPI_Reduce_scatter_block_init / PMPI_Reduce_scatter_block_init,
        MPI_Reduce_scatter_block_init_c / PMPI_Reduce_scatter_block_init_c;
    /// Inclusive scan: `MPI_IN_PLACE` as the send buffer everywhere.
    => scan[false];
    run MPI_Scan / PMPI_Scan, MPI_Scan_c / PMPI_Scan_c;
    start MPI_Iscan / PMPI_Iscan, MPI_Iscan_c / PMPI_Iscan_c;
    init_info MPI_Scan_init / PMPI_Scan_init, MPI_Scan_init_c / PMPI_Scan_init_c;
    /// Exclusive scan: `MPI_IN_PLACE` as the send buffer everywhere; rank 0's receive buffer
    /// is left untouched.
    => scan[true];
    run MPI_Exscan / PMPI_Exscan, MPI_Exscan_c / PMPI_Exscan_c;
    start MPI_Iexscan / PMPI_Iexscan, MPI_Iexscan_c / PMPI_Iexscan_c;
    init_info MPI_Exscan_init / PMPI_Exscan_init, MPI_Exscan_init_c / PMPI_Exscan_init_c;
}
