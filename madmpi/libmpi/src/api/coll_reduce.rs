//! Reduction collectives beyond reduce and allreduce: `MPI_Reduce_scatter`,
//! `MPI_Reduce_scatter_block`, `MPI_Scan`, `MPI_Exscan` and their nonblocking forms, over
//! `madmpi::coll::raw`. Checks as in [`super::coll`] (count, datatype, operation, buffers);
//! `MPI_IN_PLACE` as the send buffer everywhere (reduce-scatter in place: the receive buffer
//! holds the whole vector and gets this rank's block at its start). `MPI_Exscan` leaves rank
//! 0's receive buffer untouched.

use super::coll::{buffer, count_type, finish, in_place, operation, store};
use super::coll_gather::pair;
use crate::check;
use crate::comms::CommObj;
use crate::errors::{Fail, On};
use crate::export::export;
use crate::state::{State, state};
use madmpi::abi;
use madmpi::coll::raw::{self, RawBuf};
use madmpi::error::Error;
use madmpi::request::RawRequest;
use std::ffi::{c_int, c_void};
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

/// Starts `MPI_Ireduce_scatter` after the checks.
///
/// # Safety
/// The buffers (until the request completes) and `recvcounts` (one per rank) are valid.
unsafe fn ireduce_scatter(
    st: &State,
    c: &Arc<CommObj>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    datatype: abi::Datatype,
    op: abi::Op,
) -> Result<RawRequest, Fail> {
    let n = c.comm.size() as usize;
    // SAFETY: the caller's contract.
    let cs = unsafe { check::array_in(recvcounts, n, "recvcounts") }.on(c)?;
    let counts =
        cs.iter().map(|&x| check::count(x).map(|v| v as usize)).collect::<Result<Vec<_>, _>>().on(c)?;
    let ty = st.committed_datatype(datatype).on(c)?;
    let o = operation(c, op)?;
    let total = counts.iter().sum::<usize>() as i64;
    let mine = counts[c.comm.rank() as usize] as i64;
    let (send, recv) = buffers(c, sendbuf, recvbuf, total, mine, &ty)?;
    let op = o.op(datatype);
    // SAFETY: the caller's contract.
    unsafe { raw::ireduce_scatter(&c.comm, send.as_ref(), &recv, &counts, &op) }.on(c)
}

/// Starts `MPI_Ireduce_scatter_block` after the checks.
///
/// # Safety
/// The buffers are valid until the request completes (MPI's contract).
unsafe fn ireduce_scatter_block(
    st: &State,
    c: &Arc<CommObj>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    datatype: abi::Datatype,
    op: abi::Op,
) -> Result<RawRequest, Fail> {
    let (count, ty) = count_type(st, c, recvcount, datatype)?;
    let o = operation(c, op)?;
    let n = c.comm.size() as usize;
    let total = count.checked_mul(n as i64).ok_or_else(|| Error::count("the vector is too large")).on(c)?;
    let (send, recv) = buffers(c, sendbuf, recvbuf, total, count, &ty)?;
    let counts = vec![count as usize; n];
    let op = o.op(datatype);
    // SAFETY: the caller's contract.
    unsafe { raw::ireduce_scatter(&c.comm, send.as_ref(), &recv, &counts, &op) }.on(c)
}

/// Starts `MPI_Iscan` (`exclusive`: `MPI_Iexscan`) after the checks.
///
/// # Safety
/// The buffers are valid until the request completes (MPI's contract).
#[allow(clippy::too_many_arguments)]
unsafe fn iscan_any(
    st: &State,
    c: &Arc<CommObj>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: abi::Datatype,
    op: abi::Op,
    exclusive: bool,
) -> Result<RawRequest, Fail> {
    let (count, ty) = count_type(st, c, count, datatype)?;
    let o = operation(c, op)?;
    let (send, recv) = buffers(c, sendbuf, recvbuf, count, count, &ty)?;
    let op = o.op(datatype);
    // SAFETY: the caller's contract.
    unsafe { raw::iscan(&c.comm, send.as_ref(), &recv, &op, exclusive) }.on(c)
}

/// Starts `MPI_Iscan` after the checks.
///
/// # Safety
/// As [`iscan_any`].
unsafe fn iscan(
    st: &State,
    c: &Arc<CommObj>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: abi::Datatype,
    op: abi::Op,
) -> Result<RawRequest, Fail> {
    // SAFETY: the caller's contract.
    unsafe { iscan_any(st, c, sendbuf, recvbuf, count, datatype, op, false) }
}

/// Starts `MPI_Iexscan` after the checks.
///
/// # Safety
/// As [`iscan_any`].
unsafe fn iexscan(
    st: &State,
    c: &Arc<CommObj>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: abi::Datatype,
    op: abi::Op,
) -> Result<RawRequest, Fail> {
    // SAFETY: the caller's contract.
    unsafe { iscan_any(st, c, sendbuf, recvbuf, count, datatype, op, true) }
}

pair! {
    /// `MPI_Reduce_scatter`: `MPI_IN_PLACE` as the send buffer everywhere.
    fn MPI_Reduce_scatter / PMPI_Reduce_scatter, MPI_Ireduce_scatter / PMPI_Ireduce_scatter(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        datatype: abi::Datatype,
        op: abi::Op,
    ) => ireduce_scatter;

    /// `MPI_Reduce_scatter_block`: `MPI_IN_PLACE` as the send buffer everywhere.
    fn MPI_Reduce_scatter_block / PMPI_Reduce_scatter_block,
        MPI_Ireduce_scatter_block / PMPI_Ireduce_scatter_block(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcount: c_int,
        datatype: abi::Datatype,
        op: abi::Op,
    ) => ireduce_scatter_block;

    /// `MPI_Scan`: `MPI_IN_PLACE` as the send buffer everywhere.
    fn MPI_Scan / PMPI_Scan, MPI_Iscan / PMPI_Iscan(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: abi::Datatype,
        op: abi::Op,
    ) => iscan;

    /// `MPI_Exscan`: `MPI_IN_PLACE` as the send buffer everywhere; rank 0's receive buffer is
    /// left untouched.
    fn MPI_Exscan / PMPI_Exscan, MPI_Iexscan / PMPI_Iexscan(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: abi::Datatype,
        op: abi::Op,
    ) => iexscan;
}
