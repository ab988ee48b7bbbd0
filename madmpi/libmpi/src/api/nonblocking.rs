//! Starting nonblocking point-to-point operations and letting go of them: `MPI_Isend`,
//! `MPI_Issend`, `MPI_Irsend`, `MPI_Irecv`, `MPI_Request_free`, `MPI_Cancel`. Their completion
//! is in [`completion`](super::completion).

use super::p2p::{recv_args, send_args};
use crate::check;
use crate::errors::{On, Outcome};
use crate::export::export;
use crate::state::state;
use madmpi::abi;
use madmpi::error::Error;
use madmpi::request::{Mode, RawRequest};
use std::ffi::{c_int, c_void};

/// `MPI_Isend`, `MPI_Issend` and `MPI_Irsend`.
///
/// # Safety
/// The send buffer stays valid until the request completes, and `request` is an output
/// argument (MPI's contract).
#[allow(clippy::too_many_arguments)]
unsafe fn isend(
    mode: Mode,
    buf: *const c_void,
    count: c_int,
    datatype: abi::Datatype,
    dest: c_int,
    tag: c_int,
    comm: abi::Comm,
    request: *mut abi::Request,
) -> Outcome {
    let st = state()?;
    let c = st.comm(comm)?;
    // SAFETY: the caller's contract.
    let s = unsafe { send_args(&st, &c, buf, count, datatype, dest, tag) }?;
    // SAFETY: as above.
    let request = unsafe { check::out(request, "request") }.on(&c)?;
    // SAFETY: as above: the buffer outlives the request.
    let raw = unsafe { RawRequest::isend(&c.comm, s.data, s.dest, s.tag, mode) }.on(&c)?;
    *request = st.add_request(raw, &c).on(&c)?;
    Ok(())
}

export! {
    /// `MPI_Isend`.
    fn MPI_Isend / PMPI_Isend(
        buf: *const c_void,
        count: c_int,
        datatype: abi::Datatype,
        dest: c_int,
        tag: c_int,
        comm: abi::Comm,
        request: *mut abi::Request,
    ) {
        // SAFETY: MPI's contract for nonblocking sends.
        unsafe { isend(Mode::Standard, buf, count, datatype, dest, tag, comm, request) }
    }

    /// `MPI_Issend`: completes once the receiver matched the message.
    fn MPI_Issend / PMPI_Issend(
        buf: *const c_void,
        count: c_int,
        datatype: abi::Datatype,
        dest: c_int,
        tag: c_int,
        comm: abi::Comm,
        request: *mut abi::Request,
    ) {
        // SAFETY: MPI's contract for nonblocking sends.
        unsafe { isend(Mode::Synchronous, buf, count, datatype, dest, tag, comm, request) }
    }

    /// `MPI_Irsend`: a standard send (MPI lets a ready send be one; a ready send with no
    /// receive posted is erroneous, and not detected).
    fn MPI_Irsend / PMPI_Irsend(
        buf: *const c_void,
        count: c_int,
        datatype: abi::Datatype,
        dest: c_int,
        tag: c_int,
        comm: abi::Comm,
        request: *mut abi::Request,
    ) {
        // SAFETY: MPI's contract for nonblocking sends.
        unsafe { isend(Mode::Standard, buf, count, datatype, dest, tag, comm, request) }
    }

    /// `MPI_Irecv`.
    fn MPI_Irecv / PMPI_Irecv(
        buf: *mut c_void,
        count: c_int,
        datatype: abi::Datatype,
        source: c_int,
        tag: c_int,
        comm: abi::Comm,
        request: *mut abi::Request,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        // SAFETY: the buffer stays writable until the request completes (MPI's contract).
        let r = unsafe { recv_args(&st, &c, buf, count, datatype, source, tag) }?;
        // SAFETY: an output argument.
        let request = unsafe { check::out(request, "request") }.on(&c)?;
        // SAFETY: as above.
        let raw = unsafe { RawRequest::irecv(&c.comm, r.data, r.from, r.tag) }.on(&c)?;
        *request = st.add_request(raw, &c).on(&c)?;
        Ok(())
    }

    /// `MPI_Request_free`: the operation goes on; its completion is no longer reported. An
    /// inactive persistent request is simply freed.
    fn MPI_Request_free / PMPI_Request_free(request: *mut abi::Request) {
        let st = state()?;
        // SAFETY: an in-out argument.
        let handle = unsafe { check::out(request, "request") }?;
        if *handle == abi::MPI_REQUEST_NULL {
            return Err(Error::request("MPI_REQUEST_NULL cannot be freed").into());
        }
        st.free_request(*handle)?;
        *handle = abi::MPI_REQUEST_NULL;
        Ok(())
    }

    /// `MPI_Cancel`: a receive that has not matched is cancelled (it completes, and its status
    /// says so: `MPI_Test_cancelled`); anything else completes as it would have. A send is never
    /// cancelled (MPICH may cancel a send whose data has not left; MPI allows both). As MPICH:
    /// `MPI_REQUEST_NULL` and an inactive persistent request are `MPI_ERR_REQUEST`.
    fn MPI_Cancel / PMPI_Cancel(request: *mut abi::Request) {
        let st = state()?;
        // SAFETY: an input argument (MPI's contract).
        let handle = unsafe { check::out(request, "request") }?;
        if *handle == abi::MPI_REQUEST_NULL {
            return Err(Error::request("MPI_REQUEST_NULL cannot be cancelled").into());
        }
        let Some(entry) = st.request(*handle)? else { unreachable!("not null") };
        let Some(op) = entry.op() else {
            return Err(Error::request("an inactive persistent request cannot be cancelled")).on(&entry.comm);
        };
        if let Some(g) = op.generalized() {
            return g.cancel().on(&entry.comm);
        }
        if op.partitioned().is_some() {
            return Err(Error::request("an active partitioned request cannot be cancelled (MPI 4.0 §4.2.2)"))
                .on(&entry.comm);
        }
        op.cancel();
        Ok(())
    }
}
