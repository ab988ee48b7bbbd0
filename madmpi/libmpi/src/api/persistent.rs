//! Starting persistent requests: `MPI_Start`, `MPI_Startall`. The init calls (the `init` forms
//! of [`p2p`](super::p2p) and the collective files) check the arguments once (as the matching
//! nonblocking call would) and make an inactive request; each start runs the operation again
//! (a collective: the schedule planned at init), and the completion call that reports it makes
//! the request inactive (its handle stays valid until `MPI_Request_free`).

use crate::check;
use crate::errors::On;
use crate::export::export;
use crate::requests::ReqEntry;
use crate::state::{State, state};
use madmpi::abi;
use madmpi::error::Error;
use std::ffi::c_int;
use std::sync::Arc;

/// The persistent request of handle `h`, ready to start (`MPI_ERR_REQUEST` otherwise, as
/// MPICH: null, invalid, not persistent, already active).
fn startable(st: &State, h: abi::Request) -> Result<Arc<ReqEntry>, Error> {
    let Some(entry) = st.request(h)? else {
        return Err(Error::request("MPI_REQUEST_NULL cannot be started"));
    };
    entry.req.check_startable()?;
    Ok(entry)
}

export! {
    /// `MPI_Start`.
    fn MPI_Start / PMPI_Start(request: *mut abi::Request) {
        let st = state()?;
        // SAFETY: an input argument.
        let handle = unsafe { check::out(request, "request") }?;
        let entry = startable(&st, *handle)?;
        // SAFETY: the buffer given at init is valid while the request is active (MPI's
        // contract).
        unsafe { entry.req.start() }.on(&entry.comm)
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
            unsafe { entry.req.start() }.on(&entry.comm)?;
        }
        Ok(())
    }
}
