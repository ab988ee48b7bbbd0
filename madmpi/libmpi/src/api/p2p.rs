//! Blocking point-to-point: `MPI_Send`, `MPI_Ssend`, `MPI_Rsend`, `MPI_Recv`, `MPI_Sendrecv`,
//! `MPI_Sendrecv_replace`, `MPI_Probe` and `MPI_Iprobe` (`MPI_Get_count` is with the datatype
//! calls). The argument checks here serve the nonblocking, buffered, persistent and matched
//! calls too.
//!
//! Check order (MPICH 4.0.2, observed): communicator, count, datatype, buffer, rank, tag, then
//! the status or request pointer.

use super::data;
use crate::check;
use crate::comms::CommObj;
use crate::errors::{Fail, On, Outcome};
use crate::export::export;
use crate::state::{State, state};
use crate::status;
use madmpi::abi;
use madmpi::datatype::Datatype;
use madmpi::p2p::{From, Rank, Tag};
use madmpi::request::{Mode, RawRequest};
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// The checked arguments of a send.
pub(super) struct Send {
    pub(super) data: nmad::Data,
    pub(super) dest: Rank,
    pub(super) tag: i32,
}

/// The checked arguments of a receive.
pub(super) struct Recv {
    pub(super) data: nmad::Data,
    pub(super) from: From,
    pub(super) tag: Tag,
}

/// Checks the arguments of a send on `c`, in MPICH's order (count, datatype, buffer, rank, tag).
///
/// # Safety
/// The memory the type map addresses from `buf` must stay valid for reads until the send
/// completes.
pub(super) unsafe fn send_args(
    st: &State,
    c: &Arc<CommObj>,
    buf: *const c_void,
    count: c_int,
    datatype: abi::Datatype,
    dest: c_int,
    tag: c_int,
) -> Result<Send, Fail> {
    let count = check::count(count).on(c)?;
    let ty = st.committed_datatype(datatype).on(c)?;
    // SAFETY: the caller's contract.
    let data = unsafe { checked_data(c, &ty, buf, count) }?;
    let dest = check::dest(&c.comm, dest).on(c)?;
    let tag = check::send_tag(tag).on(c)?;
    Ok(Send { data, dest, tag })
}

/// Checks the arguments of a receive on `c`, in MPICH's order.
///
/// # Safety
/// The memory the type map addresses from `buf` must stay valid for writes until the receive
/// completes.
pub(super) unsafe fn recv_args(
    st: &State,
    c: &Arc<CommObj>,
    buf: *mut c_void,
    count: c_int,
    datatype: abi::Datatype,
    source: c_int,
    tag: c_int,
) -> Result<Recv, Fail> {
    let count = check::count(count).on(c)?;
    let ty = st.committed_datatype(datatype).on(c)?;
    // SAFETY: the caller's contract.
    let data = unsafe { checked_data(c, &ty, buf, count) }?;
    let from = check::source(&c.comm, source).on(c)?;
    let tag = check::recv_tag(tag).on(c)?;
    Ok(Recv { data, from, tag })
}

/// The description of a communication buffer, checked (`MPI_ERR_BUFFER` for a null buffer
/// with data).
///
/// # Safety
/// As [`super::data`].
pub(super) unsafe fn checked_data(
    c: &Arc<CommObj>,
    ty: &Datatype,
    buf: *const c_void,
    count: i64,
) -> Result<nmad::Data, Fail> {
    check::buffer(buf, count, ty).on(c)?;
    // SAFETY: the caller's contract.
    unsafe { data(ty, buf, count) }.on(c)
}

/// `MPI_Send`, `MPI_Ssend` and `MPI_Rsend`.
///
/// # Safety
/// `buf` as for [`send_args`], until this returns.
#[allow(clippy::too_many_arguments)]
unsafe fn send(
    op: &str,
    mode: Mode,
    buf: *const c_void,
    count: c_int,
    datatype: abi::Datatype,
    dest: c_int,
    tag: c_int,
    comm: abi::Comm,
) -> Outcome {
    let st = state()?;
    let c = st.comm(comm)?;
    // SAFETY: the call blocks until the data was sent.
    let s = unsafe { send_args(&st, &c, buf, count, datatype, dest, tag) }?;
    // SAFETY: as above.
    unsafe { c.comm.send_data(op, s.data, s.dest, s.tag, mode) }.on(&c)
}

export! {
    /// `MPI_Send`.
    fn MPI_Send / PMPI_Send(
        buf: *const c_void,
        count: c_int,
        datatype: abi::Datatype,
        dest: c_int,
        tag: c_int,
        comm: abi::Comm,
    ) {
        // SAFETY: `buf` holds the data (MPI's contract) during this blocking call.
        unsafe { send("MPI_Send", Mode::Standard, buf, count, datatype, dest, tag, comm) }
    }

    /// `MPI_Ssend`: returns once the receiver matched the message.
    fn MPI_Ssend / PMPI_Ssend(
        buf: *const c_void,
        count: c_int,
        datatype: abi::Datatype,
        dest: c_int,
        tag: c_int,
        comm: abi::Comm,
    ) {
        // SAFETY: as in MPI_Send.
        unsafe { send("MPI_Ssend", Mode::Synchronous, buf, count, datatype, dest, tag, comm) }
    }

    /// `MPI_Rsend`: a standard send (MPI lets a ready send be one; a ready send with no receive
    /// posted is erroneous, and not detected).
    fn MPI_Rsend / PMPI_Rsend(
        buf: *const c_void,
        count: c_int,
        datatype: abi::Datatype,
        dest: c_int,
        tag: c_int,
        comm: abi::Comm,
    ) {
        // SAFETY: as in MPI_Send.
        unsafe { send("MPI_Rsend", Mode::Standard, buf, count, datatype, dest, tag, comm) }
    }

    /// `MPI_Recv`: a longer message than the buffer is `MPI_ERR_TRUNCATE`, with the status of
    /// what was stored.
    fn MPI_Recv / PMPI_Recv(
        buf: *mut c_void,
        count: c_int,
        datatype: abi::Datatype,
        source: c_int,
        tag: c_int,
        comm: abi::Comm,
        status: *mut abi::Status,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        // SAFETY: `buf` is writable (MPI's contract) during this blocking call.
        let r = unsafe { recv_args(&st, &c, buf, count, datatype, source, tag) }?;
        // SAFETY: an output argument.
        let status = unsafe { check::status(status) }.on(&c)?;
        // SAFETY: as above.
        let o = unsafe { c.comm.recv_data("MPI_Recv", r.data, r.from, r.tag) }.on(&c)?;
        status::fill(status, &o.status);
        o.error.map_or(Ok(()), Err).on(&c)
    }

    /// `MPI_Sendrecv`: the receive is posted first, so two processes exchanging never
    /// deadlock.
    fn MPI_Sendrecv / PMPI_Sendrecv(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: abi::Datatype,
        dest: c_int,
        sendtag: c_int,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: abi::Datatype,
        source: c_int,
        recvtag: c_int,
        comm: abi::Comm,
        status: *mut abi::Status,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        // SAFETY: both buffers are valid (MPI's contract) during this blocking call.
        let s = unsafe { send_args(&st, &c, sendbuf, sendcount, sendtype, dest, sendtag) }?;
        // SAFETY: as above.
        let r = unsafe { recv_args(&st, &c, recvbuf, recvcount, recvtype, source, recvtag) }?;
        // SAFETY: an output argument.
        let status = unsafe { check::status(status) }.on(&c)?;
        // SAFETY: as above; the request is waited for (or dropped, which cancels or waits)
        // before this returns.
        let recv = unsafe { RawRequest::irecv(&c.comm, r.data, r.from, r.tag) }.on(&c)?;
        // SAFETY: as above.
        unsafe { c.comm.send_data("MPI_Sendrecv", s.data, s.dest, s.tag, Mode::Standard) }.on(&c)?;
        let _ = recv.wait();
        let o = recv.outcome().expect("waited for");
        status::fill(status, &o.status);
        o.error.map_or(Ok(()), Err).on(&c)
    }

    /// `MPI_Sendrecv_replace`: the message in `buf` (any datatype) is packed into a temporary
    /// buffer, then the receive into `buf` is posted and the packed bytes sent. Checks as
    /// MPICH: count, datatype, buffer, dest, sendtag, source, recvtag, status.
    fn MPI_Sendrecv_replace / PMPI_Sendrecv_replace(
        buf: *mut c_void,
        count: c_int,
        datatype: abi::Datatype,
        dest: c_int,
        sendtag: c_int,
        source: c_int,
        recvtag: c_int,
        comm: abi::Comm,
        status: *mut abi::Status,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        // SAFETY: `buf` is readable and writable (MPI's contract) during this blocking call.
        let s = unsafe { send_args(&st, &c, buf, count, datatype, dest, sendtag) }?;
        let from = check::source(&c.comm, source).on(&c)?;
        let tag = check::recv_tag(recvtag).on(&c)?;
        // SAFETY: an output argument.
        let status = unsafe { check::status(status) }.on(&c)?;
        let mut packed = vec![0u8; s.data.len()];
        // SAFETY: the data is readable (MPI's contract); `packed` is exactly its length.
        unsafe { s.data.pack(0, &mut packed) };
        // SAFETY: as above; the receive is waited for (or dropped, which cancels or waits)
        // before this returns.
        let recv = unsafe { RawRequest::irecv(&c.comm, s.data, from, tag) }.on(&c)?;
        // SAFETY: `packed` outlives the blocking send.
        let out = unsafe { nmad::Data::from_raw(packed.as_mut_ptr(), packed.len()) };
        // SAFETY: as above.
        unsafe { c.comm.send_data("MPI_Sendrecv_replace", out, s.dest, s.tag, Mode::Standard) }.on(&c)?;
        let _ = recv.wait();
        let o = recv.outcome().expect("waited for");
        status::fill(status, &o.status);
        o.error.map_or(Ok(()), Err).on(&c)
    }

    /// `MPI_Probe`: waits for a matching message; its status tells its size.
    fn MPI_Probe / PMPI_Probe(source: c_int, tag: c_int, comm: abi::Comm, status: *mut abi::Status) {
        let st = state()?;
        let c = st.comm(comm)?;
        let from = check::source(&c.comm, source).on(&c)?;
        let tag = check::recv_tag(tag).on(&c)?;
        // SAFETY: an output argument.
        let status = unsafe { check::status(status) }.on(&c)?;
        let found = c.comm.probe(from, tag).on(&c)?;
        status::fill(status, &found);
        Ok(())
    }

    /// `MPI_Iprobe`.
    fn MPI_Iprobe / PMPI_Iprobe(
        source: c_int,
        tag: c_int,
        comm: abi::Comm,
        flag: *mut c_int,
        status: *mut abi::Status,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        let from = check::source(&c.comm, source).on(&c)?;
        let tag = check::recv_tag(tag).on(&c)?;
        // SAFETY: output arguments.
        let flag = unsafe { check::out(flag, "flag") }.on(&c)?;
        // SAFETY: as above.
        let status = unsafe { check::status(status) }.on(&c)?;
        let found = c.comm.iprobe(from, tag).on(&c)?;
        *flag = c_int::from(found.is_some());
        if let Some(found) = found {
            status::fill(status, &found);
        }
        Ok(())
    }
}
