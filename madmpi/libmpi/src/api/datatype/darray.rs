//! `MPI_Type_create_darray` and `MPI_Type_create_darray_c`: one `widths!` entry, its body
//! written once over `Count`, the width of the global sizes.
//!
//! Checks, in order: `size`, `rank`, `ndims`, the arrays (null with `ndims > 0` is `MPI_ERR_ARG`),
//! the distribution codes, the order, the type and `newtype`; the engine then checks the grid
//! and the distribution arguments (`MPI_ERR_ARG`, as MPICH). Owns the C signatures only.

use super::args::{self, input};
use super::count::widen;
use super::ctors::order;
use super::{newtype_out, publish};
use crate::api::family::widths;
use crate::check::CInt;
use crate::state::state;
use madmpi::abi;
use madmpi::datatype::{Darray, Datatype, Distribution};
use madmpi::error::Error;
use std::ffi::c_int;

widths! {
    /// The part of a distributed global array that process `rank` of a grid of `size`
    /// processes owns (global sizes as `MPI_Count` in the `_c` form).
    (
        size: c_int,
        rank: c_int,
        ndims: c_int,
        array_of_gsizes: *const Count,
        array_of_distribs: *const c_int,
        array_of_dargs: *const c_int,
        array_of_psizes: *const c_int,
        order_: c_int,
        oldtype: abi::Datatype,
        newtype: *mut abi::Datatype,
    ) {
        let st = state()?;
        if size < 1 {
            return Err(Error::arg(format!("darray: size {size} is not positive")).into());
        }
        if rank < 0 || rank >= size {
            return Err(Error::arg(format!("darray: rank {rank} is not in a grid of {size}")).into());
        }
        if ndims < 1 {
            return Err(Error::arg(format!("darray: ndims {ndims} is not positive")).into());
        }
        let n = args::len(i64::from(ndims));
        // SAFETY: the caller passes four arrays of `ndims` elements (MPI's contract); `input`
        // checks them for null and alignment.
        let gsizes = widen(unsafe { input(array_of_gsizes, n, "array_of_gsizes") }?);
        // SAFETY: as the global sizes.
        let codes = unsafe { input(array_of_distribs, n, "array_of_distribs") }?;
        // SAFETY: as the global sizes.
        let dargs = widen(unsafe { input(array_of_dargs, n, "array_of_dargs") }?);
        // SAFETY: as the global sizes.
        let psizes = widen(unsafe { input(array_of_psizes, n, "array_of_psizes") }?);
        let distribs = codes
            .iter()
            .map(|&d| {
                Distribution::from_code(i64::from(d))
                    .ok_or_else(|| Error::arg(format!("darray: unknown distribution {d}")))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let order = order(order_)?;
        let old = st.datatype(oldtype)?;
        // SAFETY: null and misaligned pointers are rejected before use; a valid one is the
        // caller's writable output handle (MPI's contract).
        let out = unsafe { newtype_out(newtype) }?;
        let args =
            Darray { size: i64::from(size), rank: i64::from(rank), gsizes, distribs, dargs, psizes, order };
        publish(&st, Count::built(Datatype::darray(args, &old)?), out)?;
        Ok(())
    }
    int MPI_Type_create_darray / PMPI_Type_create_darray;
    large MPI_Type_create_darray_c / PMPI_Type_create_darray_c;
}
