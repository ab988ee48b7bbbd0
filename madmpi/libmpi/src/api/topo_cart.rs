//! Cartesian topologies: `MPI_Dims_create`, `MPI_Cart_create`, `_coords`, `_rank`, `_shift`,
//! `_sub`, `_get`, `_map` and `MPI_Cartdim_get`, over `madmpi::topo::Cart`.
//!
//! Checks in parameter order, with MPICH 4.0's classes: negative `ndims`/`maxdims` too small
//! `MPI_ERR_ARG`, bad extents `MPI_ERR_DIMS`, a rank outside the grid `MPI_ERR_RANK`, a
//! communicator without a Cartesian topology `MPI_ERR_TOPOLOGY`. Deviations, where MPICH 4.0.2
//! runs what the standard calls erroneous: a negative extent in `MPI_Cart_create` or
//! `MPI_Cart_map` is `MPI_ERR_DIMS` here (MPICH accepts it); `MPI_Cart_get` with `maxdims`
//! below the grid's dimensions is `MPI_ERR_ARG` (MPICH writes past the arrays);
//! `MPI_Dims_create` of 0 nodes is `MPI_ERR_ARG` (MPICH loops forever).
//!
//! Owns the C signatures and the order of the checks.

use super::comm_create::publish;
use super::topo::{ints, length, rank_or_null, write_ints};
use crate::check;
use crate::comms::CommObj;
use crate::errors::{Fail, On};
use crate::export::export;
use crate::state::state;
use madmpi::abi;
use madmpi::error::Error;
use madmpi::topo::{Cart, dims_create};
use std::ffi::c_int;
use std::sync::Arc;

/// The grid of `ndims` extents at `dims` and flags at `periods`.
///
/// # Safety
/// Non-null, aligned arrays hold `ndims` ints each.
unsafe fn grid(
    c: &Arc<CommObj>,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
) -> Result<Cart, Fail> {
    let n = length(c, ndims, "ndims")?;
    // SAFETY: the caller's contract.
    let d = unsafe { ints(c, dims, n, "the dims array") }?;
    // SAFETY: the caller's contract.
    let p = unsafe { ints(c, periods, n, "the periods array") }?;
    Cart::new(&d, &p.iter().map(|&x| x != 0).collect::<Vec<_>>()).on(c)
}

/// `maxdims`, checked to cover the grid's dimensions.
fn room(c: &Arc<CommObj>, maxdims: c_int, g: &Cart) -> Result<(), Fail> {
    if usize::try_from(maxdims).map_or(true, |m| m < g.ndims()) {
        return Err(Error::arg(format!("maxdims {maxdims} for a grid of {} dimensions", g.ndims()))).on(c);
    }
    Ok(())
}

export! {
    /// `MPI_Dims_create`: MPICH's balanced factorisation (`madmpi::topo::dims_create`).
    fn MPI_Dims_create / PMPI_Dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) {
        state()?;
        let n = usize::try_from(ndims).map_err(|_| Error::arg(format!("ndims is negative ({ndims})")))?;
        if n == 0 {
            return Ok(());
        }
        // SAFETY: `dims` holds `ndims` ints (MPI's contract); checked non-null and aligned.
        let d = unsafe { check::array(dims, n, "the dims array") }?;
        dims_create(nnodes, d)?;
        Ok(())
    }

    /// `MPI_Cart_create`: no reordering; the ranks beyond the grid get `MPI_COMM_NULL`
    /// (`MPI_ERR_ARG` for a grid larger than the communicator).
    fn MPI_Cart_create / PMPI_Cart_create(
        comm_old: abi::Comm,
        ndims: c_int,
        dims: *const c_int,
        periods: *const c_int,
        _reorder: c_int,
        comm_cart: *mut abi::Comm,
    ) {
        let st = state()?;
        let c = st.comm(comm_old)?;
        // SAFETY: input arrays of `ndims` ints (MPI's contract).
        let g = unsafe { grid(&c, ndims, dims, periods) }?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(comm_cart, "comm_cart") }.on(&c)?;
        *out = abi::MPI_COMM_NULL;
        let new = c.comm.cart_create(g).on(&c)?;
        publish(&st, &c, new, out)
    }

    /// `MPI_Cart_coords`: the coordinates of `rank` (`maxdims` at least the grid's dimensions).
    fn MPI_Cart_coords / PMPI_Cart_coords(comm: abi::Comm, rank: c_int, maxdims: c_int, coords: *mut c_int) {
        let st = state()?;
        let c = st.comm(comm)?;
        let g = c.comm.cart().on(&c)?;
        let r = u32::try_from(rank).map_err(|_| Error::rank(format!("invalid rank {rank}"))).on(&c)?;
        let v = g.coords(r).on(&c)?;
        room(&c, maxdims, g)?;
        // SAFETY: `coords` has room for `maxdims` ≥ `v.len()` ints (MPI's contract).
        unsafe { write_ints(&c, coords, v.iter().map(|&x| x as c_int), "the coords array") }
    }

    /// `MPI_Cart_rank`: wraps periodic coordinates; `MPI_ERR_ARG` outside a non-periodic one.
    fn MPI_Cart_rank / PMPI_Cart_rank(comm: abi::Comm, coords: *const c_int, rank: *mut c_int) {
        let st = state()?;
        let c = st.comm(comm)?;
        let g = c.comm.cart().on(&c)?;
        // SAFETY: `coords` holds one int per dimension (MPI's contract).
        let v = unsafe { ints(&c, coords, g.ndims(), "the coords array") }?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(rank, "rank") }.on(&c)?;
        *out = g.rank(&v.iter().map(|&x| i64::from(x)).collect::<Vec<_>>()).on(&c)? as c_int;
        Ok(())
    }

    /// `MPI_Cart_shift`: `MPI_PROC_NULL` off the edges of non-periodic dimensions.
    fn MPI_Cart_shift / PMPI_Cart_shift(
        comm: abi::Comm,
        direction: c_int,
        disp: c_int,
        rank_source: *mut c_int,
        rank_dest: *mut c_int,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        let g = c.comm.cart().on(&c)?;
        let (s, d) = g.shift(c.comm.rank(), direction, disp).on(&c)?;
        // SAFETY: output arguments.
        let (so, dout) = unsafe { (check::out(rank_source, "rank_source"), check::out(rank_dest, "rank_dest")) };
        *so.on(&c)? = rank_or_null(s);
        *dout.on(&c)? = rank_or_null(d);
        Ok(())
    }

    /// `MPI_Cart_sub`: the sub-grid of the dimensions where `remain_dims` is true.
    fn MPI_Cart_sub / PMPI_Cart_sub(comm: abi::Comm, remain_dims: *const c_int, newcomm: *mut abi::Comm) {
        let st = state()?;
        let c = st.comm(comm)?;
        let n = c.comm.cart().on(&c)?.ndims();
        // SAFETY: `remain_dims` holds one int per dimension (MPI's contract).
        let keep = unsafe { ints(&c, remain_dims, n, "the remain_dims array") }?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(newcomm, "newcomm") }.on(&c)?;
        *out = abi::MPI_COMM_NULL;
        let new = c.comm.cart_sub(&keep.iter().map(|&k| k != 0).collect::<Vec<_>>()).on(&c)?;
        publish(&st, &c, Some(new), out)
    }

    /// `MPI_Cart_get`: extents, periodicity and this rank's coordinates.
    fn MPI_Cart_get / PMPI_Cart_get(
        comm: abi::Comm,
        maxdims: c_int,
        dims: *mut c_int,
        periods: *mut c_int,
        coords: *mut c_int,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        let g = c.comm.cart().on(&c)?;
        room(&c, maxdims, g)?;
        let me = g.coords(c.comm.rank()).on(&c)?;
        // SAFETY: each array has room for `maxdims` ≥ `ndims` ints (MPI's contract).
        unsafe {
            write_ints(&c, dims, g.dims().iter().map(|&x| x as c_int), "the dims array")?;
            write_ints(&c, periods, g.periods().iter().map(|&p| c_int::from(p)), "the periods array")?;
            write_ints(&c, coords, me.iter().map(|&x| x as c_int), "the coords array")
        }
    }

    /// `MPI_Cart_map`: the rank this process would have in the grid (identity), or
    /// `MPI_UNDEFINED` beyond it; `MPI_ERR_DIMS` for a grid larger than the communicator.
    fn MPI_Cart_map / PMPI_Cart_map(
        comm: abi::Comm,
        ndims: c_int,
        dims: *const c_int,
        periods: *const c_int,
        newrank: *mut c_int,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        // SAFETY: input arrays of `ndims` ints (MPI's contract).
        let g = unsafe { grid(&c, ndims, dims, periods) }?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(newrank, "newrank") }.on(&c)?;
        *out = g.map(c.comm.size(), c.comm.rank()).on(&c)?.map_or(abi::MPI_UNDEFINED, |r| r as c_int);
        Ok(())
    }

    /// `MPI_Cartdim_get`: the number of dimensions.
    fn MPI_Cartdim_get / PMPI_Cartdim_get(comm: abi::Comm, ndims: *mut c_int) {
        let st = state()?;
        let c = st.comm(comm)?;
        let g = c.comm.cart().on(&c)?;
        // SAFETY: an output argument.
        *unsafe { check::out(ndims, "ndims") }.on(&c)? = g.ndims() as c_int;
        Ok(())
    }
}
