//! Collective operations: `MPI_Barrier`, `MPI_Bcast`, `MPI_Reduce`, `MPI_Allreduce` and their
//! nonblocking forms, over `madmpi::coll::raw` (buffers as address, count and datatype; derived
//! datatypes are packed and unpacked by the collective's schedule itself, so a nonblocking
//! call's output is unpacked before its request completes).
//!
//! Check order (MPICH 4.0's, parameter order after the communicator): count, datatype,
//! operation, root, then the buffers (`MPI_ERR_BUFFER`: null with data, `MPI_IN_PLACE` where it
//! is not allowed, send and receive buffers aliased), then the request pointer; the operation
//! must be defined on the datatype (`MPI_ERR_OP`). Every error after the communicator goes to
//! its error handler. A blocking call is the nonblocking one waited for.

use crate::check;
use crate::comms::CommObj;
use crate::errors::{Fail, On, Outcome};
use crate::export::export;
use crate::ops::{self, OpRef};
use crate::state::{State, state};
use madmpi::abi;
use madmpi::coll::raw::{self, RawBuf};
use madmpi::datatype::Datatype;
use madmpi::error::Error;
use madmpi::request::RawRequest;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// Whether `p` is `MPI_IN_PLACE`.
pub(super) fn in_place(p: *const c_void) -> bool {
    p as usize == abi::MPI_IN_PLACE
}

/// A root: a rank of the communicator (`MPI_ERR_ROOT` otherwise).
pub(super) fn root(c: &Arc<CommObj>, r: c_int) -> Result<u32, Fail> {
    u32::try_from(r)
        .ok()
        .filter(|&r| r < c.comm.size())
        .ok_or_else(|| Error::root(format!("invalid root {r} (communicator of size {})", c.comm.size())))
        .on(c)
}

/// The checked count and datatype of a collective.
pub(super) fn count_type(
    st: &State,
    c: &Arc<CommObj>,
    count: c_int,
    datatype: abi::Datatype,
) -> Result<(i64, Datatype), Fail> {
    let count = check::count(count).on(c)?;
    let ty = st.committed_datatype(datatype).on(c)?;
    Ok((count, ty))
}

/// `count` elements of `ty` at `buf`, checked (`MPI_ERR_BUFFER` for a null buffer with data or
/// `MPI_IN_PLACE`, `what` naming it).
pub(super) fn buffer(
    c: &Arc<CommObj>,
    buf: *const c_void,
    count: i64,
    ty: &Datatype,
    what: &str,
) -> Result<RawBuf, Fail> {
    not_in_place(c, buf, what)?;
    check::buffer(buf, count, ty).on(c)?;
    Ok(RawBuf { base: buf.cast_mut().cast(), count: count as usize, dtype: ty.clone() })
}

/// `MPI_ERR_BUFFER` if `buf` is `MPI_IN_PLACE` (`what` names the buffer).
pub(super) fn not_in_place(c: &Arc<CommObj>, buf: *const c_void, what: &str) -> Result<(), Fail> {
    if in_place(buf) {
        return Err(Error::buffer(format!("MPI_IN_PLACE is not allowed as the {what} here"))).on(c);
    }
    Ok(())
}

/// `MPI_ERR_BUFFER` if `send` and `recv` are the same memory and data moves.
pub(super) fn not_aliased(
    c: &Arc<CommObj>,
    send: *const c_void,
    recv: *const c_void,
    data: bool,
) -> Result<(), Fail> {
    if data && std::ptr::eq(send, recv) {
        return Err(Error::buffer("the send and receive buffers are the same (use MPI_IN_PLACE)")).on(c);
    }
    Ok(())
}

/// The operation of handle `op`, checked.
pub(super) fn operation(c: &Arc<CommObj>, op: abi::Op) -> Result<OpRef, Fail> {
    ops::resolve(op).on(c)
}

/// Waits for a blocking collective.
pub(super) fn finish(c: &Arc<CommObj>, raw: RawRequest) -> Outcome {
    raw.wait().map(drop).on(c)
}

/// Stores the request of a nonblocking collective.
pub(super) fn store(st: &State, c: &Arc<CommObj>, raw: RawRequest, request: &mut abi::Request) -> Outcome {
    *request = st.add_request(raw, c).on(c)?;
    Ok(())
}

/// Starts `MPI_Ibcast` after the checks.
///
/// # Safety
/// `buf` holds the data until the request completes (MPI's contract).
unsafe fn ibcast(
    st: &State,
    c: &Arc<CommObj>,
    buf: *mut c_void,
    count: c_int,
    datatype: abi::Datatype,
    root_rank: c_int,
) -> Result<RawRequest, Fail> {
    if c.comm.is_inter() {
        // SAFETY: the caller's contract.
        return unsafe { super::coll_inter::ibcast(st, c, buf, count, datatype, root_rank) };
    }
    let (count, ty) = count_type(st, c, count, datatype)?;
    let root = root(c, root_rank)?;
    let b = buffer(c, buf, count, &ty, "buffer")?;
    // SAFETY: the caller's contract.
    unsafe { raw::ibcast(&c.comm, &b, root) }.on(c)
}

/// Starts `MPI_Ireduce` after the checks.
///
/// # Safety
/// The buffers are valid until the request completes (MPI's contract).
#[allow(clippy::too_many_arguments)]
unsafe fn ireduce(
    st: &State,
    c: &Arc<CommObj>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: abi::Datatype,
    op: abi::Op,
    root_rank: c_int,
) -> Result<RawRequest, Fail> {
    if c.comm.is_inter() {
        // SAFETY: the caller's contract.
        return unsafe {
            super::coll_inter::ireduce(st, c, sendbuf, recvbuf, count, datatype, op, root_rank)
        };
    }
    let (count, ty) = count_type(st, c, count, datatype)?;
    let o = operation(c, op)?;
    let root = root(c, root_rank)?;
    let at_root = c.comm.rank() == root;
    let send = if at_root && in_place(sendbuf) {
        None
    } else {
        Some(buffer(c, sendbuf, count, &ty, "send buffer")?)
    };
    let recv = if at_root {
        let r = buffer(c, recvbuf, count, &ty, "receive buffer")?;
        not_aliased(c, sendbuf, recvbuf, count > 0)?;
        Some(r)
    } else {
        None
    };
    let op = o.op(datatype);
    // SAFETY: the caller's contract.
    unsafe { raw::ireduce(&c.comm, send.as_ref(), recv.as_ref(), &op, root) }.on(c)
}

/// Starts `MPI_Iallreduce` after the checks.
///
/// # Safety
/// The buffers are valid until the request completes (MPI's contract).
unsafe fn iallreduce(
    st: &State,
    c: &Arc<CommObj>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: abi::Datatype,
    op: abi::Op,
) -> Result<RawRequest, Fail> {
    let (count, ty) = count_type(st, c, count, datatype)?;
    let o = operation(c, op)?;
    let send = if in_place(sendbuf) { None } else { Some(buffer(c, sendbuf, count, &ty, "send buffer")?) };
    let recv = buffer(c, recvbuf, count, &ty, "receive buffer")?;
    not_aliased(c, sendbuf, recvbuf, count > 0)?;
    let op = o.op(datatype);
    // SAFETY: the caller's contract.
    unsafe { raw::iallreduce(&c.comm, send.as_ref(), &recv, &op) }.on(c)
}

export! {
    /// `MPI_Barrier`.
    fn MPI_Barrier / PMPI_Barrier(comm: abi::Comm) {
        let st = state()?;
        let c = st.comm(comm)?;
        let raw = raw::ibarrier(&c.comm).on(&c)?;
        finish(&c, raw)
    }

    /// `MPI_Ibarrier`.
    fn MPI_Ibarrier / PMPI_Ibarrier(comm: abi::Comm, request: *mut abi::Request) {
        let st = state()?;
        let c = st.comm(comm)?;
        // SAFETY: an output argument.
        let request = unsafe { check::out(request, "request") }.on(&c)?;
        let raw = raw::ibarrier(&c.comm).on(&c)?;
        store(&st, &c, raw, request)
    }

    /// `MPI_Bcast`.
    fn MPI_Bcast / PMPI_Bcast(
        buffer: *mut c_void,
        count: c_int,
        datatype: abi::Datatype,
        root: c_int,
        comm: abi::Comm,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        // SAFETY: the buffer is valid during this blocking call (MPI's contract).
        let raw = unsafe { ibcast(&st, &c, buffer, count, datatype, root) }?;
        finish(&c, raw)
    }

    /// `MPI_Ibcast`.
    fn MPI_Ibcast / PMPI_Ibcast(
        buffer: *mut c_void,
        count: c_int,
        datatype: abi::Datatype,
        root: c_int,
        comm: abi::Comm,
        request: *mut abi::Request,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        // SAFETY: an output argument.
        let request = unsafe { check::out(request, "request") }.on(&c)?;
        // SAFETY: the buffer stays valid until the request completes (MPI's contract).
        let raw = unsafe { ibcast(&st, &c, buffer, count, datatype, root) }?;
        store(&st, &c, raw, request)
    }

    /// `MPI_Reduce`: `MPI_IN_PLACE` as the send buffer at the root only.
    fn MPI_Reduce / PMPI_Reduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: abi::Datatype,
        op: abi::Op,
        root: c_int,
        comm: abi::Comm,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        // SAFETY: the buffers are valid during this blocking call (MPI's contract).
        let raw = unsafe { ireduce(&st, &c, sendbuf, recvbuf, count, datatype, op, root) }?;
        finish(&c, raw)
    }

    /// `MPI_Ireduce`.
    fn MPI_Ireduce / PMPI_Ireduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: abi::Datatype,
        op: abi::Op,
        root: c_int,
        comm: abi::Comm,
        request: *mut abi::Request,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        // SAFETY: an output argument.
        let request = unsafe { check::out(request, "request") }.on(&c)?;
        // SAFETY: the buffers stay valid until the request completes (MPI's contract).
        let raw = unsafe { ireduce(&st, &c, sendbuf, recvbuf, count, datatype, op, root) }?;
        store(&st, &c, raw, request)
    }

    /// `MPI_Allreduce`: `MPI_IN_PLACE` as the send buffer everywhere.
    fn MPI_Allreduce / PMPI_Allreduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: abi::Datatype,
        op: abi::Op,
        comm: abi::Comm,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        // SAFETY: the buffers are valid during this blocking call (MPI's contract).
        let raw = unsafe { iallreduce(&st, &c, sendbuf, recvbuf, count, datatype, op) }?;
        finish(&c, raw)
    }

    /// `MPI_Iallreduce`.
    fn MPI_Iallreduce / PMPI_Iallreduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: abi::Datatype,
        op: abi::Op,
        comm: abi::Comm,
        request: *mut abi::Request,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        // SAFETY: an output argument.
        let request = unsafe { check::out(request, "request") }.on(&c)?;
        // SAFETY: the buffers stay valid until the request completes (MPI's contract).
        let raw = unsafe { iallreduce(&st, &c, sendbuf, recvbuf, count, datatype, op) }?;
        store(&st, &c, raw, request)
    }
}
