//! Letting go of requests: `MPI_Request_free`, `MPI_Cancel`. Nonblocking operations start in
//! [`p2p`](super::p2p) and the collective files (their `start` forms); their completion is in
//! [`completion`](super::completion).

use crate::check;
use crate::errors::On;
use crate::export::export;
use crate::state::state;
use madmpi::abi;
use madmpi::error::Error;

export! {
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
