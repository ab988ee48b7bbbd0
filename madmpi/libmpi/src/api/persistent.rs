//! Persistent requests: `MPI_Send_init`, `MPI_Ssend_init`, `MPI_Recv_init`, `MPI_Start`,
//! `MPI_Startall`. Init checks the arguments once (as the matching nonblocking call would) and
//! makes an inactive request; each start runs the operation again, and the completion call
//! that reports it makes the request inactive (its handle stays valid until
//! `MPI_Request_free`). `MPI_Bsend_init` and `MPI_Rsend_init` are not in madmpi's `mpi.h`.

use super::p2p::{recv_args, send_args};
use crate::check;
use crate::errors::{On, Outcome};
use crate::export::export;
use crate::persistent::Persistent;
use crate::requests::ReqEntry;
use crate::state::{State, state};
use madmpi::abi;
use madmpi::error::Error;
use madmpi::request::Mode;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// `MPI_Send_init` and `MPI_Ssend_init`.
///
/// # Safety
/// The send buffer stays valid while the request is active, and `request` is an output
/// argument (MPI's contract).
#[allow(clippy::too_many_arguments)]
unsafe fn send_init(
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
    let p = Persistent::Send { data: s.data, dest: s.dest, tag: s.tag, mode };
    *request = st.add_persistent(p, &c).on(&c)?;
    Ok(())
}

/// The persistent request of handle `h`, ready to start (`MPI_ERR_REQUEST` otherwise, as
/// MPICH: null, invalid, not persistent, already active).
fn startable(st: &State, h: abi::Request) -> Result<Arc<ReqEntry>, Error> {
    let Some(entry) = st.request(h)? else {
        return Err(Error::request("MPI_REQUEST_NULL cannot be started"));
    };
    entry.check_startable()?;
    Ok(entry)
}

export! {
    /// `MPI_Send_init`.
    fn MPI_Send_init / PMPI_Send_init(
        buf: *const c_void,
        count: c_int,
        datatype: abi::Datatype,
        dest: c_int,
        tag: c_int,
        comm: abi::Comm,
        request: *mut abi::Request,
    ) {
        // SAFETY: MPI's contract for persistent sends.
        unsafe { send_init(Mode::Standard, buf, count, datatype, dest, tag, comm, request) }
    }

    /// `MPI_Ssend_init`.
    fn MPI_Ssend_init / PMPI_Ssend_init(
        buf: *const c_void,
        count: c_int,
        datatype: abi::Datatype,
        dest: c_int,
        tag: c_int,
        comm: abi::Comm,
        request: *mut abi::Request,
    ) {
        // SAFETY: MPI's contract for persistent sends.
        unsafe { send_init(Mode::Synchronous, buf, count, datatype, dest, tag, comm, request) }
    }

    /// `MPI_Recv_init`.
    fn MPI_Recv_init / PMPI_Recv_init(
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
        // SAFETY: the buffer stays writable while the request is active (MPI's contract).
        let r = unsafe { recv_args(&st, &c, buf, count, datatype, source, tag) }?;
        // SAFETY: an output argument.
        let request = unsafe { check::out(request, "request") }.on(&c)?;
        let p = Persistent::Recv { data: r.data, from: r.from, tag: r.tag };
        *request = st.add_persistent(p, &c).on(&c)?;
        Ok(())
    }

    /// `MPI_Start`.
    fn MPI_Start / PMPI_Start(request: *mut abi::Request) {
        let st = state()?;
        // SAFETY: an input argument.
        let handle = unsafe { check::out(request, "request") }?;
        let entry = startable(&st, *handle)?;
        // SAFETY: the buffer given at init is valid while the request is active (MPI's
        // contract).
        unsafe { entry.start() }.on(&entry.comm)
    }

    /// `MPI_Startall`: every request is checked before any starts.
    fn MPI_Startall / PMPI_Startall(count: c_int, array_of_requests: *mut abi::Request) {
        let st = state()?;
        let n = check::count(count)? as usize;
        if n == 0 {
            return Ok(());
        }
        // SAFETY: an array of `count` requests (MPI's contract).
        let handles = unsafe { check::array(array_of_requests, n, "array_of_requests") }?;
        let entries = handles
            .iter()
            .enumerate()
            .map(|(i, &h)| {
                startable(&st, h)
                    .map_err(|e| Error::new(e.class(), format!("array_of_requests[{i}]: {}", e.message())))
            })
            .collect::<Result<Vec<_>, _>>()?;
        for entry in entries {
            // SAFETY: as in MPI_Start.
            unsafe { entry.start() }.on(&entry.comm)?;
        }
        Ok(())
    }
}
