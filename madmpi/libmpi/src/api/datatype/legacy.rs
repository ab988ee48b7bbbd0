//! The MPI-1 datatype names that MPI-3 removed and MPICH 4.0 still exports: `MPI_Address`,
//! `MPI_Type_extent`, `MPI_Type_lb`, `MPI_Type_ub`, `MPI_Type_hvector`, `MPI_Type_hindexed` and
//! `MPI_Type_struct`.
//!
//! Each is its modern call under the old name (MPICH gives the same combiners:
//! `MPI_COMBINER_HVECTOR`, `_HINDEXED`, `_STRUCT`): the bodies are shared, nothing is copied.
//! Owns these names only.

use super::address::get_address;
use super::ctors::{Unit, create_struct, hvector, indexed};
use crate::check;
use crate::export::export;
use crate::state::state;
use madmpi::abi;
use std::ffi::{c_int, c_void};

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

    /// `MPI_Type_hvector`: `MPI_Type_create_hvector`.
    fn MPI_Type_hvector / PMPI_Type_hvector(
        count: c_int,
        blocklength: c_int,
        stride: abi::Aint,
        oldtype: abi::Datatype,
        newtype: *mut abi::Datatype,
    ) {
        // SAFETY: `newtype` is the C caller's output handle (null or misaligned: MPI_ERR_ARG in the body).
        unsafe { hvector(count, blocklength, stride, oldtype, newtype) }
    }

    /// `MPI_Type_hindexed`: `MPI_Type_create_hindexed`.
    fn MPI_Type_hindexed / PMPI_Type_hindexed(
        count: c_int,
        array_of_blocklengths: *mut c_int,
        array_of_displacements: *mut abi::Aint,
        oldtype: abi::Datatype,
        newtype: *mut abi::Datatype,
    ) {
        // SAFETY: MPI_Type_(h)indexed's caller passes `count` block lengths and displacements and an output
        // handle; the body checks them for null and alignment.
        unsafe {
            indexed(
                Unit::Bytes,
                count,
                array_of_blocklengths.cast_const(),
                array_of_displacements.cast_const(),
                oldtype,
                newtype,
            )
        }
    }

    /// `MPI_Type_struct`: `MPI_Type_create_struct`.
    fn MPI_Type_struct / PMPI_Type_struct(
        count: c_int,
        array_of_blocklengths: *mut c_int,
        array_of_displacements: *mut abi::Aint,
        array_of_types: *mut abi::Datatype,
        newtype: *mut abi::Datatype,
    ) {
        // SAFETY: the caller passes three arrays of `count` elements and an output handle; the body checks
        // them for null and alignment.
        unsafe {
            create_struct(
                count,
                array_of_blocklengths.cast_const(),
                array_of_displacements.cast_const(),
                array_of_types.cast_const(),
                newtype,
            )
        }
    }
}
