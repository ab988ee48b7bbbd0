//! Attribute caching on communicators: `MPI_Comm_create_keyval`, `MPI_Comm_free_keyval`,
//! `MPI_Comm_set_attr`, `MPI_Comm_get_attr`, `MPI_Comm_delete_attr`, and `MPIR_Dup_fn`, the
//! function MPICH's `MPI_COMM_DUP_FN` names (programs built with MPICH's header reference it).
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
use crate::errors::On;
use crate::export::export;
use crate::state::state;
use madmpi::abi;
use std::ffi::{c_int, c_void};

export! {
    /// `MPI_Comm_create_keyval`: null functions are `MPI_COMM_NULL_COPY_FN` (never copied) and
    /// `MPI_COMM_NULL_DELETE_FN`.
    fn MPI_Comm_create_keyval / PMPI_Comm_create_keyval(
        comm_copy_attr_fn: Option<CopyFn>,
        comm_delete_attr_fn: Option<DeleteFn>,
        comm_keyval: *mut c_int,
        extra_state: *mut c_void,
    ) {
        let st = state()?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(comm_keyval, "comm_keyval") }?;
        *out = st.keyvals.create(comm_copy_attr_fn, comm_delete_attr_fn, extra_state)?;
        Ok(())
    }

    /// `MPI_Comm_free_keyval`: sets the handle to `MPI_KEYVAL_INVALID`; the attributes set
    /// with it stay, with their callbacks.
    fn MPI_Comm_free_keyval / PMPI_Comm_free_keyval(comm_keyval: *mut c_int) {
        let st = state()?;
        // SAFETY: an in-out argument.
        let h = unsafe { check::out(comm_keyval, "comm_keyval") }?;
        st.keyvals.free(*h)?;
        *h = abi::MPI_KEYVAL_INVALID;
        Ok(())
    }

    /// `MPI_Comm_set_attr`: a replaced value goes through the delete callback first.
    fn MPI_Comm_set_attr / PMPI_Comm_set_attr(comm: abi::Comm, comm_keyval: c_int, attribute_val: *mut c_void) {
        let st = state()?;
        let c = st.comm(comm)?;
        let kv = match st.keyvals.resolve(comm_keyval).on(&c)? {
            Key::Predefined(k) => return Err(k.read_only("MPI_Comm_set_attr")).on(&c),
            Key::User(kv) => kv,
        };
        let value = attribute_val.expose_provenance();
        c.attrs.with(|t| t.set(&c.handle(), &kv, value)).and_then(|r| r).on(&c)
    }

    /// `MPI_Comm_get_attr`: `attribute_val` is a `void **` that receives the value (for a
    /// predefined attribute, a pointer to its `int`); `flag` tells whether it is set.
    fn MPI_Comm_get_attr / PMPI_Comm_get_attr(
        comm: abi::Comm,
        comm_keyval: c_int,
        attribute_val: *mut c_void,
        flag: *mut c_int,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        let key = st.keyvals.resolve(comm_keyval).on(&c)?;
        // SAFETY: output arguments (a `void *` and an `int`).
        let (val, flag) = unsafe {
            (check::out(attribute_val.cast::<*mut c_void>(), "attribute_val").on(&c)?, check::out(flag, "flag").on(&c)?)
        };
        let found = match key {
            Key::Predefined(k) => predefined_value(k).map(|p| p.cast::<c_void>()),
            Key::User(kv) => c
                .attrs
                .with(|t| t.get(&kv).copied())
                .on(&c)?
                .map(std::ptr::with_exposed_provenance_mut),
        };
        *flag = c_int::from(found.is_some());
        if let Some(v) = found {
            *val = v;
        }
        Ok(())
    }

    /// `MPI_Comm_delete_attr`: the delete callback runs; deleting an attribute that is not set
    /// succeeds (as in MPICH).
    fn MPI_Comm_delete_attr / PMPI_Comm_delete_attr(comm: abi::Comm, comm_keyval: c_int) {
        let st = state()?;
        let c = st.comm(comm)?;
        let kv = match st.keyvals.resolve(comm_keyval).on(&c)? {
            Key::Predefined(k) => return Err(k.read_only("MPI_Comm_delete_attr")).on(&c),
            Key::User(kv) => kv,
        };
        c.attrs.with(|t| t.delete(&c.handle(), &kv)).and_then(|r| r).on(&c)
    }
}

/// `MPI_COMM_DUP_FN` (MPICH's name for it): copies the value, always.
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
