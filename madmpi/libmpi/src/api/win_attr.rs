//! What a window carries besides its memory: attributes (`MPI_Win_create_keyval`,
//! `MPI_Win_free_keyval`, `MPI_Win_set_attr`, `MPI_Win_get_attr`, `MPI_Win_delete_attr`, and the
//! predefined `MPI_WIN_BASE`, `MPI_WIN_SIZE`, `MPI_WIN_DISP_UNIT`, `MPI_WIN_CREATE_FLAVOR`,
//! `MPI_WIN_MODEL`), `MPI_Win_get_group`, `MPI_Win_set_name` / `get_name`, `MPI_Win_set_info` /
//! `get_info`, and error handlers (`MPI_Win_create_errhandler`, `set_errhandler`,
//! `get_errhandler`, `call_errhandler`).
//!
//! Keyvals and attribute tables are the communicators' machinery (`attrs`), over a registry of
//! window keyvals: the same callback rules, a delete callback's failure returned as its code.
//! Windows are never duplicated, so copy callbacks never run. The predefined attributes read:
//! `MPI_WIN_BASE` the base address itself, the others a pointer to the value (an `MPI_Aint`
//! for the size, an `int` otherwise), as MPI specifies; they cannot be set or deleted
//! (`MPI_ERR_KEYVAL`). Window error handlers share the communicators' table (both C types take
//! an `int` handle): as for sessions, a handler of the other kind is accepted.

use super::comm::read_name;
use super::write_string;
use crate::attrs::{CopyFn, DeleteFn, Key};
use crate::check;
use crate::errhandlers::{self, CommErrhandlerFn};
use crate::errors::{Outcome, call_handler_of};
use crate::export::export;
use crate::infos;
use crate::state::state;
use crate::wins::{OnWin, WinObj};
use madmpi::abi;
use madmpi::attr::Keyval;
use madmpi::error::Error;
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

/// The value `MPI_Win_get_attr` gives for predefined key `keyval`, if it is one.
fn predefined(w: &WinObj, keyval: c_int) -> Option<*mut c_void> {
    let p = |v: &c_int| std::ptr::from_ref(v).cast_mut().cast();
    Some(match keyval {
        abi::MPI_WIN_BASE => std::ptr::with_exposed_provenance_mut(w.win.local().base),
        abi::MPI_WIN_SIZE => std::ptr::from_ref(&w.size).cast_mut().cast(),
        abi::MPI_WIN_DISP_UNIT => p(&w.disp_unit),
        abi::MPI_WIN_CREATE_FLAVOR => p(&w.flavor),
        abi::MPI_WIN_MODEL => p(&w.model),
        _ => return None,
    })
}

fn is_predefined(keyval: c_int) -> bool {
    matches!(
        keyval,
        abi::MPI_WIN_BASE
            | abi::MPI_WIN_SIZE
            | abi::MPI_WIN_DISP_UNIT
            | abi::MPI_WIN_CREATE_FLAVOR
            | abi::MPI_WIN_MODEL
    )
}

/// The user keyval `keyval` names, for setting or deleting (`MPI_ERR_KEYVAL` for a predefined
/// one and anything that is not a live window keyval).
fn user_keyval(
    func: &str,
    w: &Arc<WinObj>,
    keyval: c_int,
) -> Result<Keyval<crate::attrs::CAttr>, crate::errors::Fail> {
    if is_predefined(keyval) {
        return Err(Error::keyval(format!("{func}: predefined window attributes cannot be changed")))
            .on_win(w);
    }
    match state()?.win_keyvals.resolve(keyval).on_win(w)? {
        Key::User(kv) => Ok(kv),
        Key::Predefined(k) => Err(k.read_only(func)).on_win(w),
    }
}

/// Writes a new handle to the group of `w`'s communicator to `out` (`MPI_Win_get_group`).
fn group_handle(w: &Arc<WinObj>, out: *mut abi::Group) -> Outcome {
    // SAFETY: an output argument.
    let out = unsafe { check::out(out, "group") }.on_win(w)?;
    *out = state()?.add_group(w.win.group().clone()).on_win(w)?;
    Ok(())
}

export! {
    /// `MPI_Win_create_keyval`: null functions are `MPI_WIN_NULL_COPY_FN` and
    /// `MPI_WIN_NULL_DELETE_FN`; `MPI_WIN_DUP_FN` is `MPIR_Dup_fn`.
    fn MPI_Win_create_keyval / PMPI_Win_create_keyval(
        win_copy_attr_fn: Option<CopyFn>,
        win_delete_attr_fn: Option<DeleteFn>,
        win_keyval: *mut c_int,
        extra_state: *mut c_void,
    ) {
        let st = state()?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(win_keyval, "win_keyval") }?;
        *out = st.win_keyvals.create(win_copy_attr_fn, win_delete_attr_fn, extra_state)?;
        Ok(())
    }

    /// `MPI_Win_free_keyval`: sets the handle to `MPI_KEYVAL_INVALID`; attributes set with it
    /// stay, with their callbacks.
    fn MPI_Win_free_keyval / PMPI_Win_free_keyval(win_keyval: *mut c_int) {
        let st = state()?;
        // SAFETY: an in-out argument.
        let h = unsafe { check::out(win_keyval, "win_keyval") }?;
        if is_predefined(*h) {
            return Err(Error::keyval("predefined window attributes cannot be freed").into());
        }
        st.win_keyvals.free(*h)?;
        *h = abi::MPI_KEYVAL_INVALID;
        Ok(())
    }

    /// `MPI_Win_set_attr`: a replaced value goes through the delete callback first.
    fn MPI_Win_set_attr / PMPI_Win_set_attr(win: abi::Win, win_keyval: c_int, attribute_val: *mut c_void) {
        let w = state()?.win(win)?;
        let kv = user_keyval("MPI_Win_set_attr", &w, win_keyval)?;
        w.attrs.with(|t| t.set(&win, &kv, attribute_val.expose_provenance())).and_then(|r| r).on_win(&w)
    }

    /// `MPI_Win_get_attr`: `attribute_val` is a `void **` receiving the value; `flag` tells
    /// whether it is set (the predefined attributes always are).
    fn MPI_Win_get_attr / PMPI_Win_get_attr(win: abi::Win, win_keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) {
        let st = state()?;
        let w = st.win(win)?;
        let found = match predefined(&w, win_keyval) {
            Some(v) => Some(v),
            None => match st.win_keyvals.resolve(win_keyval).on_win(&w)? {
                Key::User(kv) => w.attrs.with(|t| t.get(&kv).copied()).on_win(&w)?.map(std::ptr::with_exposed_provenance_mut),
                Key::Predefined(_) => None,
            },
        };
        // SAFETY: output arguments (a `void *` and an `int`).
        let (val, flag) = unsafe {
            (
                check::out(attribute_val.cast::<*mut c_void>(), "attribute_val").on_win(&w)?,
                check::out(flag, "flag").on_win(&w)?,
            )
        };
        *flag = c_int::from(found.is_some());
        if let Some(v) = found {
            *val = v;
        }
        Ok(())
    }

    /// `MPI_Win_delete_attr`: the delete callback runs; an attribute not set is no error.
    fn MPI_Win_delete_attr / PMPI_Win_delete_attr(win: abi::Win, win_keyval: c_int) {
        let w = state()?.win(win)?;
        let kv = user_keyval("MPI_Win_delete_attr", &w, win_keyval)?;
        w.attrs.with(|t| t.delete(&win, &kv)).and_then(|r| r).on_win(&w)
    }

    /// `MPI_Win_get_group`: a new handle to the group of the window's communicator.
    fn MPI_Win_get_group / PMPI_Win_get_group(win: abi::Win, group: *mut abi::Group) {
        let w = state()?.win(win)?;
        group_handle(&w, group)
    }

    /// `MPI_Win_set_name`: names longer than `MPI_MAX_OBJECT_NAME - 1` bytes are cut there.
    fn MPI_Win_set_name / PMPI_Win_set_name(win: abi::Win, win_name: *const c_char) {
        let w = state()?.win(win)?;
        // SAFETY: a C string (MPI's contract).
        let name = unsafe { read_name(win_name) }.on_win(&w)?;
        w.win.set_name(&name);
        Ok(())
    }

    /// `MPI_Win_get_name`: the name set, or the empty string.
    fn MPI_Win_get_name / PMPI_Win_get_name(win: abi::Win, win_name: *mut c_char, resultlen: *mut c_int) {
        let w = state()?.win(win)?;
        // SAFETY: `win_name` has MPI_MAX_OBJECT_NAME bytes (MPI's contract).
        unsafe { write_string(&w.win.name(), win_name, abi::MPI_MAX_OBJECT_NAME, resultlen, "win_name") }.on_win(&w)
    }

    /// `MPI_Win_set_info`: the recognized hints of `info` with a valid value update the
    /// window's (`madmpi::rma::WinHints`); other keys are ignored.
    fn MPI_Win_set_info / PMPI_Win_set_info(win: abi::Win, info: abi::Info) {
        let w = state()?.win(win)?;
        w.win.set_info(&infos::hints(info).on_win(&w)?);
        Ok(())
    }

    /// `MPI_Win_get_info`: a new info object with every recognized hint and its value.
    fn MPI_Win_get_info / PMPI_Win_get_info(win: abi::Win, info_used: *mut abi::Info) {
        let w = state()?.win(win)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(info_used, "info_used") }.on_win(&w)?;
        *out = infos::add(w.win.hints().to_info()).on_win(&w)?;
        Ok(())
    }

    /// `MPI_Win_create_errhandler`: a handler called as `function(&win, &code)`.
    fn MPI_Win_create_errhandler / PMPI_Win_create_errhandler(
        win_errhandler_fn: Option<CommErrhandlerFn>,
        errhandler: *mut abi::Errhandler,
    ) {
        state()?;
        let function = win_errhandler_fn.ok_or_else(|| Error::arg("the error handler function is a null pointer"))?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(errhandler, "errhandler") }?;
        *out = errhandlers::create(function)?;
        Ok(())
    }

    /// `MPI_Win_set_errhandler`.
    fn MPI_Win_set_errhandler / PMPI_Win_set_errhandler(win: abi::Win, errhandler: abi::Errhandler) {
        let w = state()?.win(win)?;
        w.errhandler.set(errhandler).on_win(&w)
    }

    /// `MPI_Win_get_errhandler`: a handle to free with `MPI_Errhandler_free`.
    fn MPI_Win_get_errhandler / PMPI_Win_get_errhandler(win: abi::Win, errhandler: *mut abi::Errhandler) {
        let w = state()?.win(win)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(errhandler, "errhandler") }.on_win(&w)?;
        *out = w.errhandler.get_retained().on_win(&w)?;
        Ok(())
    }

    /// `MPI_Win_call_errhandler`: the window's handler runs on `errorcode`; `MPI_SUCCESS` once
    /// it returns.
    fn MPI_Win_call_errhandler / PMPI_Win_call_errhandler(win: abi::Win, errorcode: c_int) {
        let w = state()?.win(win)?;
        call_handler_of(&*w, "MPI_Win_call_errhandler", errorcode);
        Ok(())
    }
}
