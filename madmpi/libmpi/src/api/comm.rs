//! Communicator queries: `MPI_Comm_size`, `MPI_Comm_rank`.

use crate::check;
use crate::errors::On;
use crate::export::export;
use crate::state::state;
use madmpi::abi;
use std::ffi::c_int;

export! {
    /// `MPI_Comm_size`.
    fn MPI_Comm_size / PMPI_Comm_size(comm: abi::Comm, size: *mut c_int) {
        let c = state()?.comm(comm)?;
        // SAFETY: an output argument.
        *unsafe { check::out(size, "size") }.on(&c)? = c.comm.size() as c_int;
        Ok(())
    }

    /// `MPI_Comm_rank`.
    fn MPI_Comm_rank / PMPI_Comm_rank(comm: abi::Comm, rank: *mut c_int) {
        let c = state()?.comm(comm)?;
        // SAFETY: an output argument.
        *unsafe { check::out(rank, "rank") }.on(&c)? = c.comm.rank() as c_int;
        Ok(())
    }
}
