//! The datatype chapter: this file has `MPI_Type_contiguous`, `MPI_Type_vector`,
//! `MPI_Type_commit`, `MPI_Type_free`, `MPI_Type_size` and how a new type gets its handle;
//! [`ctors`] the other constructors, [`darray`] distributed arrays, [`query`] sizes, extents,
//! envelopes, contents and names, [`pack`] `MPI_Pack`/`MPI_Unpack`/`MPI_Pack_size` and element
//! counts, [`external`] `MPI_Pack_external` and friends, [`fortran`] the f90 types and
//! `MPI_Type_match_size`, [`attr`] type attributes, [`address`] addresses and `MPI_Aint`
//! arithmetic, [`legacy`] the MPI-1 names MPICH still exports, [`memory`] `MPI_Alloc_mem` and
//! `MPI_Free_mem`; `args` checks their C arrays and strings, `count` widens arrays of counts
//! (every call with a `_c` form has one body generic over `check::CInt`, and one `widths!`
//! entry making both forms).
//!
//! Arguments are checked in MPICH 4.0.2's order: parameter by parameter, an array fully (null,
//! then its values) before the next parameter, `newtype` last but before the type is built.
//! Errors go to `MPI_COMM_WORLD`'s handler, except those of the pack calls, which take a
//! communicator. Handles are references: a freed type used by another type or by a pending
//! operation lives on in them (the engine's types are `Arc`s; the table only drops its own).
//!
//! Owns the C side of the datatype calls; the engine (`madmpi::datatype`) computes everything.

pub mod address;
mod args;
pub mod attr;
mod count;
pub mod ctors;
pub mod darray;
pub mod external;
pub mod fortran;
pub mod legacy;
pub mod memory;
pub mod pack;
pub mod query;

use crate::api::family::widths;
use crate::check;
use crate::check::CInt;
use crate::datatypes::predefined;
use crate::export::export;
use crate::state::{State, state};
use madmpi::abi;
use madmpi::datatype::Datatype;
use madmpi::error::Error;

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

widths! {
    /// `count` copies of `oldtype`, end to end.
    (count: Count, oldtype: abi::Datatype, newtype: *mut abi::Datatype) {
        let st = state()?;
        let count = count.count()?;
        let old = st.datatype(oldtype)?;
        // SAFETY: null and misaligned pointers are rejected before use; a valid one is the caller's
        // writable output (MPI's contract).
        let out = unsafe { newtype_out(newtype) }?;
        publish(&st, Count::built(Datatype::contiguous(count, &old)?), out)?;
        Ok(())
    }
    int MPI_Type_contiguous / PMPI_Type_contiguous;
    large MPI_Type_contiguous_c / PMPI_Type_contiguous_c;

    /// `count` blocks of `blocklength` elements, `stride` extents apart.
    (count: Count, blocklength: Count, stride: Count, oldtype: abi::Datatype, newtype: *mut abi::Datatype) {
        let st = state()?;
        let count = count.count()?;
        let blocklength = blocklength.count()?;
        let old = st.datatype(oldtype)?;
        // SAFETY: null and misaligned pointers are rejected before use; a valid one is the caller's
        // writable output (MPI's contract).
        let out = unsafe { newtype_out(newtype) }?;
        publish(&st, Count::built(Datatype::vector(count, blocklength, stride.wide(), &old)?), out)?;
        Ok(())
    }
    int MPI_Type_vector / PMPI_Type_vector;
    large MPI_Type_vector_c / PMPI_Type_vector_c;

    /// Bytes of data in one element.
    (datatype: abi::Datatype, size: *mut Count) {
        let st = state()?;
        let t = st.datatype(datatype)?;
        // SAFETY: null and misaligned pointers are rejected before use; a valid one is the caller's
        // writable output (MPI's contract).
        let size = unsafe { check::out(size, "size") }?;
        *size = Count::or_undefined(Some(t.size()));
        Ok(())
    }
    int MPI_Type_size / PMPI_Type_size;
    large MPI_Type_size_c / PMPI_Type_size_c, MPI_Type_size_x / PMPI_Type_size_x;
}

export! {
    /// `MPI_Type_commit`: makes the type usable for communication (idempotent).
    fn MPI_Type_commit / PMPI_Type_commit(datatype: *mut abi::Datatype) {
        let st = state()?;
        // SAFETY: an in-out argument.
        let h = unsafe { check::out(datatype, "datatype") }?;
        st.datatype(*h)?.commit()?;
        Ok(())
    }

    /// `MPI_Type_free`: deletes the attributes (a failing delete callback keeps the type), then
    /// forgets the handle (operations using the type keep it alive). Predefined types and the
    /// f90 types cannot be freed.
    fn MPI_Type_free / PMPI_Type_free(datatype: *mut abi::Datatype) {
        let st = state()?;
        // SAFETY: an in-out argument.
        let h = unsafe { check::out(datatype, "datatype") }?;
        if predefined(*h).is_some() {
            return Err(Error::datatype(format!("predefined datatype {:#x} cannot be freed", *h)).into());
        }
        let t = st.datatype(*h)?;
        if t.f90_kind().is_some() {
            let msg = format!("the f90 datatype {:#x} is predefined: it cannot be freed", *h);
            return Err(Error::datatype(msg).into());
        }
        attr::delete_all(&st, *h, &t)?;
        drop(st.datatypes.remove(*h));
        *h = abi::MPI_DATATYPE_NULL;
        Ok(())
    }
}
