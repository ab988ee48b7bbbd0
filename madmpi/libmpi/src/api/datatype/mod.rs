//! The datatype chapter: this file has `MPI_Type_contiguous`, `MPI_Type_vector`,
//! `MPI_Type_commit`, `MPI_Type_free`, `MPI_Type_size` and how a new type gets its handle;
//! [`ctors`] the other constructors, [`query`] sizes, extents, envelopes, contents and names,
//! [`pack`] `MPI_Pack`/`MPI_Unpack`/`MPI_Pack_size` and element counts; `args` checks their
//! C arrays and strings.
//!
//! Arguments are checked in MPICH 4.0.2's order: parameter by parameter, an array fully (null,
//! then its values) before the next parameter, `newtype` last but before the type is built.
//! Errors go to `MPI_COMM_WORLD`'s handler, except those of the pack calls, which take a
//! communicator. Handles are references: a freed type used by another type or by a pending
//! operation lives on in them (the engine's types are `Arc`s; the table only drops its own).
//!
//! Owns the C side of the datatype calls; the engine (`madmpi::datatype`) computes everything.

mod args;
pub mod ctors;
pub mod pack;
pub mod query;

use crate::check;
use crate::datatypes::predefined;
use crate::export::export;
use crate::state::{State, state};
use madmpi::abi;
use madmpi::datatype::Datatype;
use madmpi::error::Error;
use std::ffi::c_int;

impl State {
    /// Stores a new datatype; its handle.
    fn add_datatype(&self, t: Datatype) -> Result<abi::Datatype, Error> {
        self.datatypes.insert(t).ok_or_else(|| Error::intern("too many live datatypes"))
    }
}

/// The `newtype` output of a constructor: `MPI_ERR_ARG` if null or misaligned. MPICH checks it
/// after the other arguments, before building the type.
///
/// # Safety
/// As [`check::out`].
unsafe fn newtype_out<'a>(newtype: *mut abi::Datatype) -> Result<&'a mut abi::Datatype, Error> {
    // SAFETY: the caller's contract.
    unsafe { check::out(newtype, "newtype") }
}

/// Stores `t` and writes its handle to `out`.
fn publish(st: &State, t: Datatype, out: &mut abi::Datatype) -> Result<(), Error> {
    *out = st.add_datatype(t)?;
    Ok(())
}

export! {
    /// `MPI_Type_contiguous`.
    fn MPI_Type_contiguous / PMPI_Type_contiguous(count: c_int, oldtype: abi::Datatype, newtype: *mut abi::Datatype) {
        let st = state()?;
        let count = check::count(count)?;
        let old = st.datatype(oldtype)?;
        // SAFETY: an output argument.
        let out = unsafe { newtype_out(newtype) }?;
        publish(&st, Datatype::contiguous(count, &old)?, out)?;
        Ok(())
    }

    /// `MPI_Type_vector`.
    fn MPI_Type_vector / PMPI_Type_vector(
        count: c_int,
        blocklength: c_int,
        stride: c_int,
        oldtype: abi::Datatype,
        newtype: *mut abi::Datatype,
    ) {
        let st = state()?;
        let count = check::count(count)?;
        let blocklength = check::count(blocklength)?;
        let old = st.datatype(oldtype)?;
        // SAFETY: an output argument.
        let out = unsafe { newtype_out(newtype) }?;
        publish(&st, Datatype::vector(count, blocklength, i64::from(stride), &old)?, out)?;
        Ok(())
    }

    /// `MPI_Type_commit`: makes the type usable for communication (idempotent).
    fn MPI_Type_commit / PMPI_Type_commit(datatype: *mut abi::Datatype) {
        let st = state()?;
        // SAFETY: an in-out argument.
        let h = unsafe { check::out(datatype, "datatype") }?;
        st.datatype(*h)?.commit()?;
        Ok(())
    }

    /// `MPI_Type_free`: forgets the handle (operations using the type keep it alive).
    fn MPI_Type_free / PMPI_Type_free(datatype: *mut abi::Datatype) {
        let st = state()?;
        // SAFETY: an in-out argument.
        let h = unsafe { check::out(datatype, "datatype") }?;
        if predefined(*h).is_some() {
            return Err(Error::datatype(format!("predefined datatype {:#x} cannot be freed", *h)).into());
        }
        st.datatype(*h)?;
        drop(st.datatypes.remove(*h));
        *h = abi::MPI_DATATYPE_NULL;
        Ok(())
    }

    /// `MPI_Type_size`: bytes of data in one element (`MPI_UNDEFINED` beyond an `int`).
    fn MPI_Type_size / PMPI_Type_size(datatype: abi::Datatype, size: *mut c_int) {
        let st = state()?;
        let t = st.datatype(datatype)?;
        // SAFETY: an output argument.
        let size = unsafe { check::out(size, "size") }?;
        *size = c_int::try_from(t.size()).unwrap_or(abi::MPI_UNDEFINED);
        Ok(())
    }
}
