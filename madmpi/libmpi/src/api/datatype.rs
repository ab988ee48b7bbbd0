//! The first derived-datatype calls: `MPI_Type_contiguous`, `MPI_Type_vector`,
//! `MPI_Type_commit`, `MPI_Type_free`, `MPI_Type_size` (enough to send non-contiguous data;
//! the other constructors come with the datatype batch).
//!
//! Errors here are not tied to a communicator: they go to `MPI_COMM_WORLD`'s handler.

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

/// Stores `t` and writes its handle to `newtype`.
///
/// # Safety
/// As [`check::out`].
unsafe fn publish(st: &State, t: Datatype, newtype: *mut abi::Datatype) -> Result<(), Error> {
    // SAFETY: the caller's contract.
    let out = unsafe { check::out(newtype, "newtype") }?;
    *out = st.add_datatype(t)?;
    Ok(())
}

export! {
    /// `MPI_Type_contiguous`.
    fn MPI_Type_contiguous / PMPI_Type_contiguous(count: c_int, oldtype: abi::Datatype, newtype: *mut abi::Datatype) {
        let st = state()?;
        let count = check::count(count)?;
        let old = st.datatype(oldtype)?;
        let t = Datatype::contiguous(count, &old)?;
        // SAFETY: an output argument.
        unsafe { publish(&st, t, newtype) }?;
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
        let t = Datatype::vector(count, blocklength, i64::from(stride), &old)?;
        // SAFETY: an output argument.
        unsafe { publish(&st, t, newtype) }?;
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
