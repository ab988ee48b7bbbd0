//! Nonblocking point-to-point and completion: `MPI_Isend`, `MPI_Issend`, `MPI_Irecv`,
//! `MPI_Wait`, `MPI_Test`, `MPI_Waitall`, `MPI_Request_free`.
//!
//! A completed request is removed from the table and its handle set to `MPI_REQUEST_NULL`; a
//! null request completes at once with an empty status. Errors of an operation go to the
//! handler of its communicator.

use super::p2p::{recv_args, send_args};
use crate::check;
use crate::errors::{Fail, On, Outcome, named};
use crate::export::export;
use crate::requests::ReqEntry;
use crate::state::{State, state};
use crate::status;
use madmpi::abi;
use madmpi::error::{Error, ErrorClass};
use madmpi::request::{Mode, RawRequest};
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// `MPI_Isend` and `MPI_Issend`.
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

/// Completes the request of `entry`: forgets it, fills `status`; the operation's error if
/// it failed.
fn complete(
    st: &State,
    handle: &mut abi::Request,
    entry: &ReqEntry,
    status: Option<&mut abi::Status>,
) -> Result<(), Error> {
    let o = entry.raw.outcome().expect("completed");
    st.retire_request(*handle);
    *handle = abi::MPI_REQUEST_NULL;
    status::fill(status, &o.status);
    o.error.map_or(Ok(()), Err)
}

/// The requests of `Waitall`, resolved before anything waits (an invalid handle fails the call).
fn resolve_all(st: &State, handles: &[abi::Request]) -> Result<Vec<Option<Arc<ReqEntry>>>, Error> {
    handles.iter().map(|&h| st.request(h)).collect()
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

    /// `MPI_Wait`.
    fn MPI_Wait / PMPI_Wait(request: *mut abi::Request, status: *mut abi::Status) {
        let st = state()?;
        // SAFETY: an in-out argument.
        let handle = unsafe { check::out(request, "request") }?;
        // SAFETY: an output argument.
        let status = unsafe { check::status(status) }?;
        let Some(entry) = st.request(*handle)? else {
            status::empty(status);
            return Ok(());
        };
        let _ = entry.raw.wait();
        complete(&st, handle, &entry, status).on(&entry.comm)
    }

    /// `MPI_Test`.
    fn MPI_Test / PMPI_Test(request: *mut abi::Request, flag: *mut c_int, status: *mut abi::Status) {
        let st = state()?;
        // SAFETY: an in-out argument.
        let handle = unsafe { check::out(request, "request") }?;
        // SAFETY: output arguments.
        let flag = unsafe { check::out(flag, "flag") }?;
        // SAFETY: as above.
        let status = unsafe { check::status(status) }?;
        let Some(entry) = st.request(*handle)? else {
            *flag = 1;
            status::empty(status);
            return Ok(());
        };
        *flag = c_int::from(entry.raw.test());
        if *flag == 0 {
            return Ok(());
        }
        complete(&st, handle, &entry, status).on(&entry.comm)
    }

    /// `MPI_Waitall`: on failure, `MPI_ERR_IN_STATUS` with each status's `MPI_ERROR` set (or,
    /// with `MPI_STATUSES_IGNORE`, the first failure's code).
    fn MPI_Waitall / PMPI_Waitall(count: c_int, array_of_requests: *mut abi::Request, array_of_statuses: *mut abi::Status) {
        let st = state()?;
        let n = check::count(count)? as usize;
        if n == 0 {
            return Ok(());
        }
        // SAFETY: the array of `count` requests (MPI's contract).
        let handles = unsafe { check::array(array_of_requests, n, "array_of_requests") }?;
        let mut statuses = if array_of_statuses as usize == abi::MPI_STATUSES_IGNORE {
            None
        } else {
            // SAFETY: the array of `count` statuses (MPI's contract).
            Some(unsafe { check::array(array_of_statuses, n, "array_of_statuses") }?)
        };
        let entries = resolve_all(&st, handles)?;
        let mut failures: Vec<(usize, Error, Arc<ReqEntry>)> = Vec::new();
        for (i, entry) in entries.into_iter().enumerate() {
            let status = statuses.as_deref_mut().map(|s| &mut s[i]);
            let Some(entry) = entry else {
                status::empty(status);
                continue;
            };
            let _ = entry.raw.wait();
            if let Err(e) = complete(&st, &mut handles[i], &entry, status) {
                failures.push((i, e, entry));
            }
        }
        let Some((_, first, entry)) = failures.first() else { return Ok(()) };
        let comm = Some(entry.comm.clone());
        let Some(statuses) = statuses else { return Err(Fail { error: first.clone(), comm }) };
        for s in statuses.iter_mut() {
            s.error = 0;
        }
        for (i, e, _) in &failures {
            statuses[*i].error = named("MPI_Waitall", e.clone()).code();
        }
        let what = format!("{} of {n} requests failed (see the MPI_ERROR of their statuses)", failures.len());
        Err(Fail { error: Error::new(ErrorClass::InStatus, what), comm })
    }

    /// `MPI_Request_free`: the operation goes on; its completion is no longer reported.
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
}
