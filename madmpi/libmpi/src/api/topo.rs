//! Process topologies, shared parts: `MPI_Topo_test`, and the helpers of [`super::topo_cart`]
//! and [`super::topo_graph`] (reading C `int` arrays, writing a rank or `MPI_PROC_NULL`).
//!
//! Owns the C side of the topology calls common to every kind; the topologies themselves are
//! `madmpi::topo`'s.

use crate::check;
use crate::comms::CommObj;
use crate::errors::{Fail, On};
use crate::export::export;
use crate::state::state;
use madmpi::abi;
use madmpi::error::Error;
use madmpi::topo::Topology;
use std::ffi::c_int;
use std::sync::Arc;

/// `MPI_GRAPH`, `MPI_CART`, `MPI_DIST_GRAPH`: MPICH 4.0's `MPIR_Topo_type` values.
pub(super) const MPI_GRAPH: c_int = 1;
pub(super) const MPI_CART: c_int = 2;
pub(super) const MPI_DIST_GRAPH: c_int = 3;

/// A non-negative length argument (`MPI_ERR_ARG` otherwise; `what` names it).
pub(super) fn length(c: &Arc<CommObj>, n: c_int, what: &str) -> Result<usize, Fail> {
    usize::try_from(n).map_err(|_| Error::arg(format!("{what} is negative ({n})"))).on(c)
}

/// The `n` ints at `p`, copied (`MPI_ERR_ARG` for a null or misaligned array with `n` > 0).
///
/// # Safety
/// A non-null, aligned `p` holds `n` readable ints.
pub(super) unsafe fn ints(
    c: &Arc<CommObj>,
    p: *const c_int,
    n: usize,
    what: &str,
) -> Result<Vec<c_int>, Fail> {
    // SAFETY: the caller's contract.
    Ok(unsafe { check::array_in(p, n, what) }.on(c)?.to_vec())
}

/// Writes `v` to the array `p` of at least `v.len()` ints (nothing for an empty `v`).
///
/// # Safety
/// A non-null, aligned `p` has room for `v.len()` ints.
pub(super) unsafe fn write_ints(
    c: &Arc<CommObj>,
    p: *mut c_int,
    v: impl ExactSizeIterator<Item = c_int>,
    what: &str,
) -> Result<(), Fail> {
    if v.len() == 0 {
        return Ok(());
    }
    // SAFETY: the caller's contract.
    let out = unsafe { check::array(p, v.len(), what) }.on(c)?;
    out.iter_mut().zip(v).for_each(|(o, x)| *o = x);
    Ok(())
}

/// A rank for C: `MPI_PROC_NULL` for `None`.
pub(super) fn rank_or_null(r: Option<u32>) -> c_int {
    r.map_or(abi::MPI_PROC_NULL, |r| r as c_int)
}

export! {
    /// `MPI_Topo_test`: `MPI_CART`, `MPI_GRAPH`, `MPI_DIST_GRAPH` or `MPI_UNDEFINED`.
    fn MPI_Topo_test / PMPI_Topo_test(comm: abi::Comm, status: *mut c_int) {
        let st = state()?;
        let c = st.comm(comm)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(status, "status") }.on(&c)?;
        *out = match c.comm.topology().map(|t| &**t) {
            Some(Topology::Cart(_)) => MPI_CART,
            Some(Topology::Graph(_)) => MPI_GRAPH,
            Some(Topology::DistGraph(_)) => MPI_DIST_GRAPH,
            None => abi::MPI_UNDEFINED,
        };
        Ok(())
    }
}
