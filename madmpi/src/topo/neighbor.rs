//! The neighbourhood collectives of a communicator's topology, on raw memory (for the C
//! library): each takes the neighbour lists of the communicator's topology (`MPI_ERR_TOPOLOGY`
//! without one) and runs `coll::neighbor`'s exchange. Buffers and safety contracts are
//! `coll::neighbor`'s.
//!
//! Owns the step from a communicator to its neighbour lists; the exchange is the collective
//! layer's.

use crate::coll::neighbor::{self, Links};
use crate::coll::raw::{RawBuf, RawVBuf, RawWBuf};
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::request::RawRequest;

impl Comm {
    /// This rank's sources and destinations in the communicator's topology.
    pub fn neighbor_links(&self) -> Result<Links> {
        let t = self.topology().ok_or_else(|| Error::topology("the communicator has no topology"))?;
        Ok(t.links(self.rank()))
    }
}

/// `MPI_Ineighbor_allgather` (see [`neighbor::ineighbor_allgather`]).
///
/// # Safety
/// The memories must stay valid and untouched by others until the request completes.
pub unsafe fn ineighbor_allgather(comm: &Comm, send: &RawBuf, recv: &RawBuf) -> Result<RawRequest> {
    let l = comm.neighbor_links()?;
    // SAFETY: the caller's contract, passed on.
    unsafe { neighbor::ineighbor_allgather(comm, &l, send, recv) }
}

/// `MPI_Ineighbor_allgatherv` (see [`neighbor::ineighbor_allgatherv`]).
///
/// # Safety
/// The memories must stay valid and untouched by others until the request completes.
pub unsafe fn ineighbor_allgatherv(comm: &Comm, send: &RawBuf, recv: &RawVBuf<'_>) -> Result<RawRequest> {
    let l = comm.neighbor_links()?;
    // SAFETY: the caller's contract, passed on.
    unsafe { neighbor::ineighbor_allgatherv(comm, &l, send, recv) }
}

/// `MPI_Ineighbor_alltoall` (see [`neighbor::ineighbor_alltoall`]).
///
/// # Safety
/// The memories must stay valid and untouched by others until the request completes.
pub unsafe fn ineighbor_alltoall(comm: &Comm, send: &RawBuf, recv: &RawBuf) -> Result<RawRequest> {
    let l = comm.neighbor_links()?;
    // SAFETY: the caller's contract, passed on.
    unsafe { neighbor::ineighbor_alltoall(comm, &l, send, recv) }
}

/// `MPI_Ineighbor_alltoallv` (see [`neighbor::ineighbor_alltoallv`]).
///
/// # Safety
/// The memories must stay valid and untouched by others until the request completes.
pub unsafe fn ineighbor_alltoallv(comm: &Comm, send: &RawVBuf<'_>, recv: &RawVBuf<'_>) -> Result<RawRequest> {
    let l = comm.neighbor_links()?;
    // SAFETY: the caller's contract, passed on.
    unsafe { neighbor::ineighbor_alltoallv(comm, &l, send, recv) }
}

/// `MPI_Ineighbor_alltoallw` (see [`neighbor::ineighbor_alltoallw`]).
///
/// # Safety
/// The memories must stay valid and untouched by others until the request completes.
pub unsafe fn ineighbor_alltoallw(comm: &Comm, send: &RawWBuf<'_>, recv: &RawWBuf<'_>) -> Result<RawRequest> {
    let l = comm.neighbor_links()?;
    // SAFETY: the caller's contract, passed on.
    unsafe { neighbor::ineighbor_alltoallw(comm, &l, send, recv) }
}
