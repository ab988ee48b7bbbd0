//! Attribute caching on datatypes: `MPI_Type_create_keyval`, `MPI_Type_free_keyval`,
//! `MPI_Type_set_attr`, `MPI_Type_get_attr` and `MPI_Type_delete_attr`; the copies made by
//! `MPI_Type_dup` and the deletions made by `MPI_Type_free`.
//!
//! The rules are `madmpi::attr`'s, the C callbacks `crate::attrs`' (the same as for
//! communicators: `MPI_TYPE_DUP_FN` is MPICH's `MPIR_Dup_fn`). Attributes belong to the datatype
//! object, so every handle to it sees them (`MPI_Type_get_contents` hands out new handles to the
//! same object); the callbacks receive the handle the call named. So `MPI_Type_free` on one of
//! several handles to an object deletes the object's attributes for all of them (MPICH, whose
//! handles are counted references, deletes them with the last one). Predefined types take
//! attributes too. A failing delete callback makes `MPI_Type_free` fail and keep the type (as for
//! communicators). Owns the C side of these calls only.

use crate::attrs::{Attrs, CopyFn, DeleteFn, Key};
use crate::check;
use crate::export::export;
use crate::state::{State, state};
use madmpi::abi;
use madmpi::attr::Keyval;
use madmpi::datatype::Datatype;
use madmpi::error::Result;
use std::ffi::{c_int, c_void};

/// A user keyval of datatypes (there are no predefined datatype attributes).
fn user_keyval(st: &State, h: c_int) -> Result<Keyval<crate::attrs::CAttr>> {
    match st.type_keyvals.resolve(h)? {
        Key::User(kv) => Ok(kv),
        Key::Predefined(k) => Err(k.read_only("a datatype attribute call")),
    }
}

/// `MPI_Type_dup`'s attributes: each keyval's copy callback decides, with the old handle; the
/// copies become `new`'s (the new handle `new_h` names it to delete callbacks if a copy fails).
pub(super) fn copy_for_dup(
    st: &State,
    old_h: abi::Datatype,
    old: &Datatype,
    new_h: abi::Datatype,
    new: &Datatype,
) -> Result<()> {
    let Some(attrs) = st.type_attrs.get(old.object_id()) else { return Ok(()) };
    let copied = attrs.with(|t| t.copy_for_dup(&old_h, &new_h)).and_then(|r| r)?;
    if !copied.is_empty() {
        st.type_attrs.insert(new.object_id(), Attrs::with_table(copied));
    }
    Ok(())
}

/// `MPI_Type_free`'s attributes: every delete callback runs (newest first); on the first error
/// the remaining attributes stay and the error is returned (the caller keeps the type).
pub(super) fn delete_all(st: &State, h: abi::Datatype, t: &Datatype) -> Result<()> {
    let Some(attrs) = st.type_attrs.get(t.object_id()) else { return Ok(()) };
    attrs.with(|table| table.delete_all(&h)).and_then(|r| r)?;
    st.type_attrs.remove(t.object_id());
    Ok(())
}

export! {
    /// `MPI_Type_create_keyval`: null functions are `MPI_TYPE_NULL_COPY_FN` (never copied) and
    /// `MPI_TYPE_NULL_DELETE_FN`.
    fn MPI_Type_create_keyval / PMPI_Type_create_keyval(
        type_copy_attr_fn: Option<CopyFn>,
        type_delete_attr_fn: Option<DeleteFn>,
        type_keyval: *mut c_int,
        extra_state: *mut c_void,
    ) {
        let st = state()?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(type_keyval, "type_keyval") }?;
        *out = st.type_keyvals.create(type_copy_attr_fn, type_delete_attr_fn, extra_state)?;
        Ok(())
    }

    /// `MPI_Type_free_keyval`: sets the handle to `MPI_KEYVAL_INVALID`; the attributes set with
    /// it stay, with their callbacks.
    fn MPI_Type_free_keyval / PMPI_Type_free_keyval(type_keyval: *mut c_int) {
        let st = state()?;
        // SAFETY: an in-out argument.
        let h = unsafe { check::out(type_keyval, "type_keyval") }?;
        st.type_keyvals.free(*h)?;
        *h = abi::MPI_KEYVAL_INVALID;
        Ok(())
    }

    /// `MPI_Type_set_attr`: a replaced value goes through the delete callback first.
    fn MPI_Type_set_attr / PMPI_Type_set_attr(datatype: abi::Datatype, type_keyval: c_int, attribute_val: *mut c_void) {
        let st = state()?;
        let t = st.datatype(datatype)?;
        let kv = user_keyval(&st, type_keyval)?;
        let attrs = st.type_attrs.get_or_new(t.object_id());
        attrs.with(|table| table.set(&datatype, &kv, attribute_val.expose_provenance())).and_then(|r| r)?;
        Ok(())
    }

    /// `MPI_Type_get_attr`: `attribute_val` is a `void **` that receives the value; `flag`
    /// tells whether it is set.
    fn MPI_Type_get_attr / PMPI_Type_get_attr(
        datatype: abi::Datatype,
        type_keyval: c_int,
        attribute_val: *mut c_void,
        flag: *mut c_int,
    ) {
        let st = state()?;
        let t = st.datatype(datatype)?;
        let kv = user_keyval(&st, type_keyval)?;
        // SAFETY: output arguments (a `void *` and an `int`).
        let (val, flag) = unsafe {
            (check::out(attribute_val.cast::<*mut c_void>(), "attribute_val")?, check::out(flag, "flag")?)
        };
        let found = match st.type_attrs.get(t.object_id()) {
            Some(attrs) => attrs.with(|table| table.get(&kv).copied())?,
            None => None,
        };
        *flag = c_int::from(found.is_some());
        if let Some(v) = found {
            *val = std::ptr::with_exposed_provenance_mut(v);
        }
        Ok(())
    }

    /// `MPI_Type_delete_attr`: the delete callback runs; deleting an attribute that is not set
    /// succeeds (as for communicators in MPICH).
    fn MPI_Type_delete_attr / PMPI_Type_delete_attr(datatype: abi::Datatype, type_keyval: c_int) {
        let st = state()?;
        let t = st.datatype(datatype)?;
        let kv = user_keyval(&st, type_keyval)?;
        if let Some(attrs) = st.type_attrs.get(t.object_id()) {
            attrs.with(|table| table.delete(&datatype, &kv)).and_then(|r| r)?;
        }
        Ok(())
    }
}
