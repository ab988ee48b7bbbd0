//! The MPI-1 datatype queries that MPI-3 removed and MPICH 4.0 still exports: `MPI_Address`,
//! `MPI_Type_extent`, `MPI_Type_lb` and `MPI_Type_ub` (the MPI-1 constructors
//! `MPI_Type_hvector`, `MPI_Type_hindexed` and `MPI_Type_struct` are names of their modern
//! calls' entries in [`super::ctors`]).
//!
//! Each is its modern call under the old name: the bodies are shared, nothing is copied.
//! Owns these names only.

use super::address::get_address;
use crate::check;
use crate::export::export;
use crate::state::state;
use madmpi::abi;
use std::ffi::c_void;

/// Which bound of a type an MPI-1 query reads.
#[derive(Clone, Copy)]
enum Bound {
    Extent,
    Lb,
    Ub,
}

/// `MPI_Type_extent`, `MPI_Type_lb` and `MPI_Type_ub`.
///
/// # Safety
/// `out` as [`check::out`].
unsafe fn bound(datatype: abi::Datatype, which: Bound, out: *mut abi::Aint) -> crate::errors::Outcome {
    let st = state()?;
    let t = st.datatype(datatype)?;
    // SAFETY: null and misaligned pointers are rejected before use; a valid one is writable (this function's
    // `# Safety`).
    let out = unsafe { check::out(out, "displacement") }?;
    *out = match which {
        Bound::Extent => t.extent(),
        Bound::Lb => t.lb(),
        Bound::Ub => t.ub(),
    };
    Ok(())
}

export! {
    /// `MPI_Address`: `MPI_Get_address`.
    fn MPI_Address / PMPI_Address(location: *mut c_void, address: *mut abi::Aint) {
        // SAFETY: `address` is the caller's output (checked in the body).
        unsafe { get_address(location, address) }
    }

    /// `MPI_Type_extent`: the extent of `MPI_Type_get_extent`.
    fn MPI_Type_extent / PMPI_Type_extent(datatype: abi::Datatype, extent: *mut abi::Aint) {
        // SAFETY: the output is the caller's (checked in the body).
        unsafe { bound(datatype, Bound::Extent, extent) }
    }

    /// `MPI_Type_lb`: the lower bound.
    fn MPI_Type_lb / PMPI_Type_lb(datatype: abi::Datatype, displacement: *mut abi::Aint) {
        // SAFETY: the output is the caller's (checked in the body).
        unsafe { bound(datatype, Bound::Lb, displacement) }
    }

    /// `MPI_Type_ub`: the upper bound (lower bound plus extent).
    fn MPI_Type_ub / PMPI_Type_ub(datatype: abi::Datatype, displacement: *mut abi::Aint) {
        // SAFETY: the output is the caller's (checked in the body).
        unsafe { bound(datatype, Bound::Ub, displacement) }
    }
}
