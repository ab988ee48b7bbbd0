//! The datatype constructors beyond contiguous and vector: `MPI_Type_create_hvector`,
//! `MPI_Type_indexed`, `MPI_Type_create_hindexed`, `MPI_Type_create_indexed_block`,
//! `MPI_Type_create_hindexed_block`, `MPI_Type_create_struct`, `MPI_Type_create_resized`,
//! `MPI_Type_create_subarray` and `MPI_Type_dup`.
//!
//! Each checks its arguments in MPICH 4.0.2's order (see the [module](super)), then hands them to
//! the engine, whose own errors (an overflowing extent, inconsistent subarray dimensions) come
//! last. Owns the C signatures of these calls only.

use super::args::{self, input};
use super::{newtype_out, publish};
use crate::check;
use crate::export::export;
use crate::state::state;
use madmpi::abi;
use madmpi::datatype::{Datatype, ORDER_C, ORDER_FORTRAN, Order};
use madmpi::error::Error;
use std::ffi::c_int;

/// `MPI_ORDER_C` and `MPI_ORDER_FORTRAN` (MPICH's values, the engine's constants).
fn order(o: c_int) -> Result<Order, Error> {
    match i64::from(o) {
        ORDER_C => Ok(Order::C),
        ORDER_FORTRAN => Ok(Order::Fortran),
        _ => Err(Error::arg(format!("invalid order {o} (MPI_ORDER_C or MPI_ORDER_FORTRAN)"))),
    }
}

export! {
    /// `MPI_Type_create_hvector`: `count` blocks of `blocklength` elements, `stride` bytes apart.
    fn MPI_Type_create_hvector / PMPI_Type_create_hvector(
        count: c_int,
        blocklength: c_int,
        stride: abi::Aint,
        oldtype: abi::Datatype,
        newtype: *mut abi::Datatype,
    ) {
        let st = state()?;
        let count = check::count(count)?;
        let blocklength = check::count(blocklength)?;
        let old = st.datatype(oldtype)?;
        // SAFETY: an output argument.
        let out = unsafe { newtype_out(newtype) }?;
        publish(&st, Datatype::hvector(count, blocklength, stride, &old)?, out)?;
        Ok(())
    }

    /// `MPI_Type_indexed`: blocks at displacements counted in extents of `oldtype`.
    fn MPI_Type_indexed / PMPI_Type_indexed(
        count: c_int,
        array_of_blocklengths: *const c_int,
        array_of_displacements: *const c_int,
        oldtype: abi::Datatype,
        newtype: *mut abi::Datatype,
    ) {
        let st = state()?;
        let n = args::len(check::count(count)?);
        // SAFETY: input arrays of `count` elements (MPI's contract).
        let bls = args::blocklengths(unsafe { input(array_of_blocklengths, n, "array_of_blocklengths") }?)?;
        // SAFETY: as above.
        let disps = args::ints(unsafe { input(array_of_displacements, n, "array_of_displacements") }?);
        let old = st.datatype(oldtype)?;
        // SAFETY: an output argument.
        let out = unsafe { newtype_out(newtype) }?;
        publish(&st, Datatype::indexed(&bls, &disps, &old)?, out)?;
        Ok(())
    }

    /// `MPI_Type_create_hindexed`: blocks at displacements in bytes.
    fn MPI_Type_create_hindexed / PMPI_Type_create_hindexed(
        count: c_int,
        array_of_blocklengths: *const c_int,
        array_of_displacements: *const abi::Aint,
        oldtype: abi::Datatype,
        newtype: *mut abi::Datatype,
    ) {
        let st = state()?;
        let n = args::len(check::count(count)?);
        // SAFETY: input arrays of `count` elements (MPI's contract).
        let bls = args::blocklengths(unsafe { input(array_of_blocklengths, n, "array_of_blocklengths") }?)?;
        // SAFETY: as above.
        let disps = args::addresses(unsafe { input(array_of_displacements, n, "array_of_displacements") }?);
        let old = st.datatype(oldtype)?;
        // SAFETY: an output argument.
        let out = unsafe { newtype_out(newtype) }?;
        publish(&st, Datatype::hindexed(&bls, &disps, &old)?, out)?;
        Ok(())
    }

    /// `MPI_Type_create_indexed_block`: blocks of one length at displacements in extents.
    fn MPI_Type_create_indexed_block / PMPI_Type_create_indexed_block(
        count: c_int,
        blocklength: c_int,
        array_of_displacements: *const c_int,
        oldtype: abi::Datatype,
        newtype: *mut abi::Datatype,
    ) {
        let st = state()?;
        let n = args::len(check::count(count)?);
        let blocklength = check::count(blocklength)?;
        // SAFETY: an input array of `count` elements (MPI's contract).
        let disps = args::ints(unsafe { input(array_of_displacements, n, "array_of_displacements") }?);
        let old = st.datatype(oldtype)?;
        // SAFETY: an output argument.
        let out = unsafe { newtype_out(newtype) }?;
        publish(&st, Datatype::indexed_block(blocklength, &disps, &old)?, out)?;
        Ok(())
    }

    /// `MPI_Type_create_hindexed_block`: blocks of one length at displacements in bytes.
    fn MPI_Type_create_hindexed_block / PMPI_Type_create_hindexed_block(
        count: c_int,
        blocklength: c_int,
        array_of_displacements: *const abi::Aint,
        oldtype: abi::Datatype,
        newtype: *mut abi::Datatype,
    ) {
        let st = state()?;
        let n = args::len(check::count(count)?);
        let blocklength = check::count(blocklength)?;
        // SAFETY: an input array of `count` elements (MPI's contract).
        let disps = args::addresses(unsafe { input(array_of_displacements, n, "array_of_displacements") }?);
        let old = st.datatype(oldtype)?;
        // SAFETY: an output argument.
        let out = unsafe { newtype_out(newtype) }?;
        publish(&st, Datatype::hindexed_block(blocklength, &disps, &old)?, out)?;
        Ok(())
    }

    /// `MPI_Type_create_struct`: blocks of different types at displacements in bytes.
    fn MPI_Type_create_struct / PMPI_Type_create_struct(
        count: c_int,
        array_of_blocklengths: *const c_int,
        array_of_displacements: *const abi::Aint,
        array_of_types: *const abi::Datatype,
        newtype: *mut abi::Datatype,
    ) {
        let st = state()?;
        let n = args::len(check::count(count)?);
        // SAFETY: input arrays of `count` elements (MPI's contract).
        let bls = args::blocklengths(unsafe { input(array_of_blocklengths, n, "array_of_blocklengths") }?)?;
        // SAFETY: as above.
        let disps = args::addresses(unsafe { input(array_of_displacements, n, "array_of_displacements") }?);
        // SAFETY: as above.
        let types = args::datatypes(&st, unsafe { input(array_of_types, n, "array_of_types") }?)?;
        // SAFETY: an output argument.
        let out = unsafe { newtype_out(newtype) }?;
        publish(&st, Datatype::create_struct(&bls, &disps, &types)?, out)?;
        Ok(())
    }

    /// `MPI_Type_create_resized`: the same type map with lower bound `lb` and extent `extent`.
    fn MPI_Type_create_resized / PMPI_Type_create_resized(
        oldtype: abi::Datatype,
        lb: abi::Aint,
        extent: abi::Aint,
        newtype: *mut abi::Datatype,
    ) {
        let st = state()?;
        let old = st.datatype(oldtype)?;
        // SAFETY: an output argument.
        let out = unsafe { newtype_out(newtype) }?;
        publish(&st, Datatype::resized(&old, lb, extent)?, out)?;
        Ok(())
    }

    /// `MPI_Type_create_subarray`. MPICH checks `ndims` (`MPI_ERR_ARG` if negative), negative
    /// starts (`MPI_ERR_COUNT`), the type, the order and `newtype`, and accepts other erroneous
    /// dimensions; here every dimension is then checked (`MPI_ERR_ARG`: sizes positive, subsizes
    /// and starts within them, `ndims` positive) rather than building a type MPI calls
    /// erroneous. Null arrays are `MPI_ERR_ARG` (MPICH crashes on them).
    fn MPI_Type_create_subarray / PMPI_Type_create_subarray(
        ndims: c_int,
        array_of_sizes: *const c_int,
        array_of_subsizes: *const c_int,
        array_of_starts: *const c_int,
        order_: c_int,
        oldtype: abi::Datatype,
        newtype: *mut abi::Datatype,
    ) {
        let st = state()?;
        if ndims < 0 {
            return Err(Error::arg(format!("negative ndims ({ndims})")).into());
        }
        let n = args::len(i64::from(ndims));
        // SAFETY: input arrays of `ndims` elements (MPI's contract).
        let sizes = args::ints(unsafe { input(array_of_sizes, n, "array_of_sizes") }?);
        // SAFETY: as above.
        let subsizes = args::ints(unsafe { input(array_of_subsizes, n, "array_of_subsizes") }?);
        // SAFETY: as above.
        let starts = args::ints(unsafe { input(array_of_starts, n, "array_of_starts") }?);
        if let Some((i, s)) = starts.iter().enumerate().find(|(_, s)| **s < 0) {
            return Err(Error::count(format!("negative start {s} in dimension {i}")).into());
        }
        let old = st.datatype(oldtype)?;
        let order = order(order_)?;
        // SAFETY: an output argument.
        let out = unsafe { newtype_out(newtype) }?;
        publish(&st, Datatype::subarray(&sizes, &subsizes, &starts, order, &old)?, out)?;
        Ok(())
    }

    /// `MPI_Type_dup`: a new type with the same type map and committed state.
    fn MPI_Type_dup / PMPI_Type_dup(oldtype: abi::Datatype, newtype: *mut abi::Datatype) {
        let st = state()?;
        let old = st.datatype(oldtype)?;
        // SAFETY: an output argument.
        let out = unsafe { newtype_out(newtype) }?;
        publish(&st, old.dup(), out)?;
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
