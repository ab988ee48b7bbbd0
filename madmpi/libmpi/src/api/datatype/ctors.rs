//! The datatype constructors beyond contiguous and vector: `MPI_Type_create_hvector`,
//! `MPI_Type_indexed`, `MPI_Type_create_hindexed`, `MPI_Type_create_indexed_block`,
//! `MPI_Type_create_hindexed_block`, `MPI_Type_create_struct`, `MPI_Type_create_resized`,
//! `MPI_Type_create_subarray` and `MPI_Type_dup`, and the MPI-1 names of three of them
//! (`MPI_Type_hvector`, `MPI_Type_hindexed`, `MPI_Type_struct`: MPICH gives them the same
//! combiners).
//!
//! Each checks its arguments in MPICH 4.0.2's order (see the [module](super)), then hands them to
//! the engine, whose own errors (an overflowing extent, inconsistent subarray dimensions) come
//! last. Each call has one body generic over the width of its counts (`CInt`), one `widths!`
//! entry making its `int` and `_c` forms. Owns the C signatures of these calls only.

use super::args::{self, input};
use super::count::{blocklengths, widen};
use super::{newtype_out, publish};
use crate::api::family::widths;
use crate::check::CInt;
use crate::errors::Outcome;
use crate::export::export;
use crate::state::state;
use madmpi::abi;
use madmpi::datatype::{Datatype, ORDER_C, ORDER_FORTRAN, Order};
use madmpi::error::Error;
use std::ffi::c_int;

/// `MPI_ORDER_C` and `MPI_ORDER_FORTRAN` (MPICH's values, the engine's constants).
pub(super) fn order(o: c_int) -> Result<Order, Error> {
    match i64::from(o) {
        ORDER_C => Ok(Order::C),
        ORDER_FORTRAN => Ok(Order::Fortran),
        _ => Err(Error::arg(format!("invalid order {o} (MPI_ORDER_C or MPI_ORDER_FORTRAN)"))),
    }
}

/// Which displacement unit an (h)indexed call uses.
#[derive(Clone, Copy)]
enum Unit {
    Extents,
    Bytes,
}

/// `MPI_Type_indexed(_c)` and `MPI_Type_create_hindexed(_c)`; `D` is the displacements' width.
///
/// # Safety
/// The arrays as [`input`] for `count` elements; `newtype` as [`crate::check::out`].
unsafe fn indexed<C: CInt, D: CInt>(
    unit: Unit,
    count: C,
    array_of_blocklengths: *const C,
    array_of_displacements: *const D,
    oldtype: abi::Datatype,
    newtype: *mut abi::Datatype,
) -> Outcome {
    let st = state()?;
    let n = args::len(count.count()?);
    // SAFETY: input arrays of `count` elements (the caller's contract).
    let bls = blocklengths(unsafe { input(array_of_blocklengths, n, "array_of_blocklengths") }?)?;
    // SAFETY: as the block lengths.
    let disps = widen(unsafe { input(array_of_displacements, n, "array_of_displacements") }?);
    let old = st.datatype(oldtype)?;
    // SAFETY: null and misaligned pointers are rejected before use; a valid one is writable (this function's
    // `# Safety`).
    let out = unsafe { newtype_out(newtype) }?;
    let t = match unit {
        Unit::Extents => Datatype::indexed(&bls, &disps, &old)?,
        Unit::Bytes => Datatype::hindexed(&bls, &disps, &old)?,
    };
    publish(&st, C::built(t), out)?;
    Ok(())
}

/// `MPI_Type_create_indexed_block(_c)` and `MPI_Type_create_hindexed_block(_c)`.
///
/// # Safety
/// The array as [`input`] for `count` elements; `newtype` as [`crate::check::out`].
unsafe fn indexed_block<C: CInt, D: CInt>(
    unit: Unit,
    count: C,
    blocklength: C,
    array_of_displacements: *const D,
    oldtype: abi::Datatype,
    newtype: *mut abi::Datatype,
) -> Outcome {
    let st = state()?;
    let n = args::len(count.count()?);
    let blocklength = blocklength.count()?;
    // SAFETY: an input array of `count` elements (the caller's contract).
    let disps = widen(unsafe { input(array_of_displacements, n, "array_of_displacements") }?);
    let old = st.datatype(oldtype)?;
    // SAFETY: null and misaligned pointers are rejected before use; a valid one is writable (this function's
    // `# Safety`).
    let out = unsafe { newtype_out(newtype) }?;
    let t = match unit {
        Unit::Extents => Datatype::indexed_block(blocklength, &disps, &old)?,
        Unit::Bytes => Datatype::hindexed_block(blocklength, &disps, &old)?,
    };
    publish(&st, C::built(t), out)?;
    Ok(())
}

widths! {
    /// `count` blocks of `blocklength` elements, `stride` bytes apart (MPI-1's
    /// `MPI_Type_hvector` too).
    (count: Count, blocklength: Count, stride: abi::Aint, oldtype: abi::Datatype, newtype: *mut abi::Datatype) {
        let st = state()?;
        let count = count.count()?;
        let blocklength = blocklength.count()?;
        let old = st.datatype(oldtype)?;
        // SAFETY: null and misaligned pointers are rejected before use; a valid one is the caller's
        // writable output (MPI's contract).
        let out = unsafe { newtype_out(newtype) }?;
        publish(&st, Count::built(Datatype::hvector(count, blocklength, stride, &old)?), out)?;
        Ok(())
    }
    int MPI_Type_create_hvector / PMPI_Type_create_hvector, MPI_Type_hvector / PMPI_Type_hvector;
    large MPI_Type_create_hvector_c / PMPI_Type_create_hvector_c;

    /// Blocks at displacements counted in extents of `oldtype`.
    (
        count: Count,
        array_of_blocklengths: *const Count,
        array_of_displacements: *const Displ,
        oldtype: abi::Datatype,
        newtype: *mut abi::Datatype,
    ) {
        // SAFETY: the caller passes `count` block lengths and displacements and an output handle;
        // the body checks them for null and alignment.
        unsafe { indexed(Unit::Extents, count, array_of_blocklengths, array_of_displacements, oldtype, newtype) }
    }
    int MPI_Type_indexed / PMPI_Type_indexed;
    large MPI_Type_indexed_c / PMPI_Type_indexed_c;

    /// Blocks at displacements in bytes (MPI-1's `MPI_Type_hindexed` too).
    (
        count: Count,
        array_of_blocklengths: *const Count,
        array_of_displacements: *const abi::Aint,
        oldtype: abi::Datatype,
        newtype: *mut abi::Datatype,
    ) {
        // SAFETY: the caller passes `count` block lengths and displacements and an output handle;
        // the body checks them for null and alignment.
        unsafe { indexed(Unit::Bytes, count, array_of_blocklengths, array_of_displacements, oldtype, newtype) }
    }
    int MPI_Type_create_hindexed / PMPI_Type_create_hindexed, MPI_Type_hindexed / PMPI_Type_hindexed;
    large MPI_Type_create_hindexed_c / PMPI_Type_create_hindexed_c;

    /// Blocks of one length at displacements in extents.
    (
        count: Count,
        blocklength: Count,
        array_of_displacements: *const Displ,
        oldtype: abi::Datatype,
        newtype: *mut abi::Datatype,
    ) {
        // SAFETY: the caller passes `count` displacements and an output handle; the body checks
        // them for null and alignment.
        unsafe { indexed_block(Unit::Extents, count, blocklength, array_of_displacements, oldtype, newtype) }
    }
    int MPI_Type_create_indexed_block / PMPI_Type_create_indexed_block;
    large MPI_Type_create_indexed_block_c / PMPI_Type_create_indexed_block_c;

    /// Blocks of one length at displacements in bytes.
    (
        count: Count,
        blocklength: Count,
        array_of_displacements: *const abi::Aint,
        oldtype: abi::Datatype,
        newtype: *mut abi::Datatype,
    ) {
        // SAFETY: the caller passes `count` displacements and an output handle; the body checks
        // them for null and alignment.
        unsafe { indexed_block(Unit::Bytes, count, blocklength, array_of_displacements, oldtype, newtype) }
    }
    int MPI_Type_create_hindexed_block / PMPI_Type_create_hindexed_block;
    large MPI_Type_create_hindexed_block_c / PMPI_Type_create_hindexed_block_c;

    /// Blocks of different types at displacements in bytes (MPI-1's `MPI_Type_struct` too).
    (
        count: Count,
        array_of_blocklengths: *const Count,
        array_of_displacements: *const abi::Aint,
        array_of_types: *const abi::Datatype,
        newtype: *mut abi::Datatype,
    ) {
        let st = state()?;
        let n = args::len(count.count()?);
        // SAFETY: the caller passes input arrays of `count` elements (MPI's contract); `input`
        // checks them for null and alignment.
        let bls = blocklengths(unsafe { input(array_of_blocklengths, n, "array_of_blocklengths") }?)?;
        // SAFETY: as the block lengths.
        let disps = args::addresses(unsafe { input(array_of_displacements, n, "array_of_displacements") }?);
        // SAFETY: as the block lengths.
        let types = args::datatypes(&st, unsafe { input(array_of_types, n, "array_of_types") }?)?;
        // SAFETY: null and misaligned pointers are rejected before use; a valid one is the caller's
        // writable output (MPI's contract).
        let out = unsafe { newtype_out(newtype) }?;
        publish(&st, Count::built(Datatype::create_struct(&bls, &disps, &types)?), out)?;
        Ok(())
    }
    int MPI_Type_create_struct / PMPI_Type_create_struct, MPI_Type_struct / PMPI_Type_struct;
    large MPI_Type_create_struct_c / PMPI_Type_create_struct_c;

    /// The same type map with lower bound `lb` and extent `extent`.
    (oldtype: abi::Datatype, lb: abi::Aint, extent: abi::Aint, newtype: *mut abi::Datatype) {
        let st = state()?;
        let old = st.datatype(oldtype)?;
        // SAFETY: null and misaligned pointers are rejected before use; a valid one is the caller's
        // writable output (MPI's contract).
        let out = unsafe { newtype_out(newtype) }?;
        publish(&st, Count::built(Datatype::resized(&old, lb, extent)?), out)?;
        Ok(())
    }
    int MPI_Type_create_resized / PMPI_Type_create_resized;
    large MPI_Type_create_resized_c / PMPI_Type_create_resized_c;

    /// A subarray of an `ndims`-dimensional array.
    (
        ndims: c_int,
        array_of_sizes: *const Count,
        array_of_subsizes: *const Count,
        array_of_starts: *const Count,
        order_: c_int,
        oldtype: abi::Datatype,
        newtype: *mut abi::Datatype,
    ) {
        let st = state()?;
        if ndims < 0 {
            return Err(Error::arg(format!("negative ndims ({ndims})")).into());
        }
        let n = args::len(i64::from(ndims));
        // SAFETY: the caller passes input arrays of `ndims` elements (MPI's contract); `input`
        // checks them for null and alignment.
        let sizes = widen(unsafe { input(array_of_sizes, n, "array_of_sizes") }?);
        // SAFETY: as the sizes.
        let subsizes = widen(unsafe { input(array_of_subsizes, n, "array_of_subsizes") }?);
        // SAFETY: as the sizes.
        let starts = widen(unsafe { input(array_of_starts, n, "array_of_starts") }?);
        if let Some((i, s)) = starts.iter().enumerate().find(|(_, s)| **s < 0) {
            return Err(Error::count(format!("negative start {s} in dimension {i}")).into());
        }
        let old = st.datatype(oldtype)?;
        let order = order(order_)?;
        // SAFETY: null and misaligned pointers are rejected before use; a valid one is the caller's
        // writable output (MPI's contract).
        let out = unsafe { newtype_out(newtype) }?;
        publish(&st, Count::built(Datatype::subarray(&sizes, &subsizes, &starts, order, &old)?), out)?;
        Ok(())
    }
    int MPI_Type_create_subarray / PMPI_Type_create_subarray;
    large MPI_Type_create_subarray_c / PMPI_Type_create_subarray_c;
}

export! {
    /// `MPI_Type_dup`: a new type with the same type map and committed state; the attributes
    /// go through their keyvals' copy callbacks.
    fn MPI_Type_dup / PMPI_Type_dup(oldtype: abi::Datatype, newtype: *mut abi::Datatype) {
        let st = state()?;
        let old = st.datatype(oldtype)?;
        // SAFETY: an output argument.
        let out = unsafe { newtype_out(newtype) }?;
        let new = old.dup();
        let h = st.add_datatype(new.clone())?;
        if let Err(e) = super::attr::copy_for_dup(&st, oldtype, &old, h, &new) {
            drop(st.datatypes.remove(h));
            return Err(e.into());
        }
        *out = h;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use madmpi::error::ErrorClass;

    #[test]
    fn orders_are_mpichs() {
        assert_eq!(order(56).unwrap(), Order::C);
        assert_eq!(order(57).unwrap(), Order::Fortran);
        assert_eq!(order(3).unwrap_err().class(), ErrorClass::Arg);
    }
}
