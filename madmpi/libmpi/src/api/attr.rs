//! Attribute caching on communicators: `MPI_Comm_create_keyval`, `MPI_Comm_free_keyval`,
//! `MPI_Comm_set_attr`, `MPI_Comm_get_attr`, `MPI_Comm_delete_attr`, their MPI-1 names
//! (`MPI_Keyval_create`, `MPI_Keyval_free`, `MPI_Attr_put`, `MPI_Attr_get`, `MPI_Attr_delete`:
//! the same calls, the MPI-1 callback types having the same C signatures), and `MPIR_Dup_fn`,
//! the function MPICH's `MPI_COMM_DUP_FN` and `MPI_DUP_FN` name (programs built with MPICH's
//! header reference it).
//!
//! A callback's failure makes the call return the callback's very code (MPICH does the same).
//! The predefined attributes (`MPI_TAG_UB`...) are read on every communicator through a
//! pointer to an `int`; setting, deleting or freeing them is `MPI_ERR_KEYVAL`.
//!
//! Differences from MPICH 4.0.2 (`madmpi/tests/c/attr_check.c`, `tests/c/attrs.c`): when a copy
//! callback fails, the copies already made are deleted here (MPICH leaves them); a freed
//! keyval's handle is invalid at once here (MPICH accepts it while attributes use it); when a delete callback
//! fails while a communicator is freed, the attributes not yet deleted stay here (MPICH
//! deletes them all and frees nothing either); `MPI_APPNUM` is absent here (MPICH: 0).

use crate::attrs::{CopyFn, DeleteFn, Key, predefined_value};
use crate::check;
use crate::errors::{On, Outcome};
use crate::export::export;
use crate::state::state;
use madmpi::abi;
use std::ffi::{c_int, c_void};

/// `MPI_Comm_create_keyval`, `MPI_Keyval_create`.
fn create_keyval(
    copy: Option<CopyFn>,
    delete: Option<DeleteFn>,
    keyval: *mut c_int,
    extra_state: *mut c_void,
) -> Outcome {
    let st = state()?;
    // SAFETY: an output argument.
    let out = unsafe { check::out(keyval, "comm_keyval") }?;
    *out = st.keyvals.create(copy, delete, extra_state)?;
    Ok(())
}

/// `MPI_Comm_free_keyval`, `MPI_Keyval_free`.
fn free_keyval(keyval: *mut c_int) -> Outcome {
    let st = state()?;
    // SAFETY: an in-out argument.
    let h = unsafe { check::out(keyval, "comm_keyval") }?;
    st.keyvals.free(*h)?;
    *h = abi::MPI_KEYVAL_INVALID;
    Ok(())
}

/// `MPI_Comm_set_attr`, `MPI_Attr_put`.
fn set_attr(func: &str, comm: abi::Comm, keyval: c_int, attribute_val: *mut c_void) -> Outcome {
    let st = state()?;
    let c = st.comm(comm)?;
    let kv = match st.keyvals.resolve(keyval).on(&c)? {
        Key::Predefined(k) => return Err(k.read_only(func)).on(&c),
        Key::User(kv) => kv,
    };
    let value = attribute_val.expose_provenance();
    c.attrs.with(|t| t.set(&c.handle(), &kv, value)).and_then(|r| r).on(&c)
}

/// `MPI_Comm_get_attr`, `MPI_Attr_get`.
fn get_attr(comm: abi::Comm, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> Outcome {
    let st = state()?;
    let c = st.comm(comm)?;
    let key = st.keyvals.resolve(keyval).on(&c)?;
    // SAFETY: output arguments (a `void *` and an `int`).
    let (val, flag) = unsafe {
        (
            check::out(attribute_val.cast::<*mut c_void>(), "attribute_val").on(&c)?,
            check::out(flag, "flag").on(&c)?,
        )
    };
    let found = match key {
        Key::Predefined(k) => predefined_value(k).map(|p| p.cast::<c_void>()),
        Key::User(kv) => {
            c.attrs.with(|t| t.get(&kv).copied()).on(&c)?.map(std::ptr::with_exposed_provenance_mut)
        }
    };
    *flag = c_int::from(found.is_some());
    if let Some(v) = found {
        *val = v;
    }
    Ok(())
}

/// `MPI_Comm_delete_attr`, `MPI_Attr_delete`.
fn delete_attr(func: &str, comm: abi::Comm, keyval: c_int) -> Outcome {
    let st = state()?;
    let c = st.comm(comm)?;
    let kv = match st.keyvals.resolve(keyval).on(&c)? {
        Key::Predefined(k) => return Err(k.read_only(func)).on(&c),
        Key::User(kv) => kv,
    };
    c.attrs.with(|t| t.delete(&c.handle(), &kv)).and_then(|r| r).on(&c)
}

export! {
    /// `MPI_Comm_create_keyval`: null functions are `MPI_COMM_NULL_COPY_FN` (never copied) and
    /// `MPI_COMM_NULL_DELETE_FN`.
    fn MPI_Comm_create_keyval / PMPI_Comm_create_keyval(
        comm_copy_attr_fn: Option<CopyFn>,
        comm_delete_attr_fn: Option<DeleteFn>,
        comm_keyval: *mut c_int,
        extra_state: *mut c_void,
    ) {
        create_keyval(comm_copy_attr_fn, comm_delete_attr_fn, comm_keyval, extra_state)
    }

    /// `MPI_Keyval_create` (MPI-1): `MPI_Comm_create_keyval`; `MPI_NULL_COPY_FN` and
    /// `MPI_NULL_DELETE_FN` are the null functions.
    fn MPI_Keyval_create / PMPI_Keyval_create(
        copy_fn: Option<CopyFn>,
        delete_fn: Option<DeleteFn>,
        keyval: *mut c_int,
        extra_state: *mut c_void,
    ) {
        create_keyval(copy_fn, delete_fn, keyval, extra_state)
    }

    /// `MPI_Comm_free_keyval`: sets the handle to `MPI_KEYVAL_INVALID`; the attributes set
    /// with it stay, with their callbacks.
    fn MPI_Comm_free_keyval / PMPI_Comm_free_keyval(comm_keyval: *mut c_int) {
        free_keyval(comm_keyval)
    }

    /// `MPI_Keyval_free` (MPI-1): `MPI_Comm_free_keyval`.
    fn MPI_Keyval_free / PMPI_Keyval_free(keyval: *mut c_int) {
        free_keyval(keyval)
    }

    /// `MPI_Comm_set_attr`: a replaced value goes through the delete callback first.
    fn MPI_Comm_set_attr / PMPI_Comm_set_attr(comm: abi::Comm, comm_keyval: c_int, attribute_val: *mut c_void) {
        set_attr("MPI_Comm_set_attr", comm, comm_keyval, attribute_val)
    }

    /// `MPI_Attr_put` (MPI-1): `MPI_Comm_set_attr`.
    fn MPI_Attr_put / PMPI_Attr_put(comm: abi::Comm, keyval: c_int, attribute_val: *mut c_void) {
        set_attr("MPI_Attr_put", comm, keyval, attribute_val)
    }

    /// `MPI_Comm_get_attr`: `attribute_val` is a `void **` that receives the value (for a
    /// predefined attribute, a pointer to its `int`); `flag` tells whether it is set.
    fn MPI_Comm_get_attr / PMPI_Comm_get_attr(
        comm: abi::Comm,
        comm_keyval: c_int,
        attribute_val: *mut c_void,
        flag: *mut c_int,
    ) {
        get_attr(comm, comm_keyval, attribute_val, flag)
    }

    /// `MPI_Attr_get` (MPI-1): `MPI_Comm_get_attr`.
    fn MPI_Attr_get / PMPI_Attr_get(comm: abi::Comm, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) {
        get_attr(comm, keyval, attribute_val, flag)
    }

    /// `MPI_Comm_delete_attr`: the delete callback runs; deleting an attribute that is not set
    /// succeeds (as in MPICH).
    fn MPI_Comm_delete_attr / PMPI_Comm_delete_attr(comm: abi::Comm, comm_keyval: c_int) {
        delete_attr("MPI_Comm_delete_attr", comm, comm_keyval)
    }

    /// `MPI_Attr_delete` (MPI-1): `MPI_Comm_delete_attr`.
    fn MPI_Attr_delete / PMPI_Attr_delete(comm: abi::Comm, keyval: c_int) {
        delete_attr("MPI_Attr_delete", comm, keyval)
    }
}

/// `MPI_COMM_DUP_FN` and `MPI_DUP_FN` (MPICH's name for it): copies the value, always.
///
/// # Safety
/// `attribute_val_out` and `flag`, if not null and aligned, must be valid for writes of a
/// `void *` and an `int`, as MPI passes them to copy callbacks.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPIR_Dup_fn(
    _oldcomm: abi::Comm,
    _keyval: c_int,
    _extra_state: *mut c_void,
    attribute_val_in: *mut c_void,
    attribute_val_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: output arguments, checked before use.
    let out =
        unsafe { (check::out(attribute_val_out.cast::<*mut c_void>(), "out"), check::out(flag, "flag")) };
    let (Ok(out), Ok(flag)) = out else { return madmpi::error::ErrorClass::Arg.code() };
    *out = attribute_val_in;
    *flag = 1;
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dup_fn_copies() {
        let (mut out, mut flag) = (std::ptr::null_mut::<c_void>(), 0);
        let v = std::ptr::without_provenance_mut::<c_void>(42);
        // SAFETY: valid pointers to locals; then null pointers, which are checked.
        unsafe {
            assert_eq!(MPIR_Dup_fn(0, 0, v, v, (&raw mut out).cast(), &mut flag), 0);
            assert_eq!((out, flag), (v, 1));
            assert_ne!(MPIR_Dup_fn(0, 0, v, v, std::ptr::null_mut(), &mut flag), 0);
        }
    }
}
