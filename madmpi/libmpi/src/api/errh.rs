//! Error handlers and strings: `MPI_Comm_create_errhandler`, `MPI_Comm_set_errhandler`,
//! `MPI_Comm_get_errhandler` (and their MPI-1 names `MPI_Errhandler_create`, `_set`, `_get`),
//! `MPI_Comm_call_errhandler`, `MPI_Errhandler_free`, `MPI_Error_string`, `MPI_Error_class`
//! (these two work at any time, and know the classes and codes programs add: `error_codes`).
//!
//! Handles from `create` and `get` each hold a reference that `MPI_Errhandler_free` gives
//! back; a communicator holds one on its handler (see `errhandlers`). Differences from MPICH
//! 4.0.2, where MPICH crashes or takes garbage: a null output pointer for
//! `MPI_Comm_create_errhandler` and an invalid handle for `MPI_Comm_set_errhandler` are
//! `MPI_ERR_ARG` here.

use super::write_string;
use crate::check;
use crate::errhandlers::{self, CommErrhandlerFn};
use crate::errors::{On, Outcome, call_handler};
use crate::export::export;
use crate::state::state;
use madmpi::abi;
use madmpi::error::{Error, class_of_code, error_string};
use std::ffi::{c_char, c_int};

/// `MPI_Comm_create_errhandler`, `MPI_Errhandler_create`.
fn create(function: Option<CommErrhandlerFn>, errhandler: *mut abi::Errhandler) -> Outcome {
    state()?;
    let function = function.ok_or_else(|| Error::arg("the error handler function is a null pointer"))?;
    // SAFETY: an output argument.
    let out = unsafe { check::out(errhandler, "errhandler") }?;
    *out = errhandlers::create(function)?;
    Ok(())
}

/// `MPI_Comm_set_errhandler`, `MPI_Errhandler_set`.
fn set(comm: abi::Comm, errhandler: abi::Errhandler) -> Outcome {
    let c = state()?.comm(comm)?;
    c.errhandler.set(errhandler).on(&c)
}

/// `MPI_Comm_get_errhandler`, `MPI_Errhandler_get`.
fn get(comm: abi::Comm, errhandler: *mut abi::Errhandler) -> Outcome {
    let c = state()?.comm(comm)?;
    // SAFETY: an output argument.
    let out = unsafe { check::out(errhandler, "errhandler") }.on(&c)?;
    *out = c.errhandler.get_retained().on(&c)?;
    Ok(())
}

export! {
    /// `MPI_Comm_create_errhandler`: a user handler, called as `function(&comm, &code)`.
    fn MPI_Comm_create_errhandler / PMPI_Comm_create_errhandler(
        function: Option<CommErrhandlerFn>,
        errhandler: *mut abi::Errhandler,
    ) {
        create(function, errhandler)
    }

    /// `MPI_Errhandler_create` (MPI-1): `MPI_Comm_create_errhandler` (`MPI_Handler_function`
    /// is `MPI_Comm_errhandler_function`).
    fn MPI_Errhandler_create / PMPI_Errhandler_create(
        function: Option<CommErrhandlerFn>,
        errhandler: *mut abi::Errhandler,
    ) {
        create(function, errhandler)
    }

    /// `MPI_Comm_set_errhandler`.
    fn MPI_Comm_set_errhandler / PMPI_Comm_set_errhandler(comm: abi::Comm, errhandler: abi::Errhandler) {
        set(comm, errhandler)
    }

    /// `MPI_Errhandler_set` (MPI-1): `MPI_Comm_set_errhandler`.
    fn MPI_Errhandler_set / PMPI_Errhandler_set(comm: abi::Comm, errhandler: abi::Errhandler) {
        set(comm, errhandler)
    }

    /// `MPI_Comm_get_errhandler`: a handle to free with `MPI_Errhandler_free`.
    fn MPI_Comm_get_errhandler / PMPI_Comm_get_errhandler(comm: abi::Comm, errhandler: *mut abi::Errhandler) {
        get(comm, errhandler)
    }

    /// `MPI_Errhandler_get` (MPI-1): `MPI_Comm_get_errhandler`.
    fn MPI_Errhandler_get / PMPI_Errhandler_get(comm: abi::Comm, errhandler: *mut abi::Errhandler) {
        get(comm, errhandler)
    }

    /// `MPI_Comm_call_errhandler`: `comm`'s handler runs on `errorcode`; `MPI_SUCCESS` once
    /// it returns (under `MPI_ERRORS_RETURN` too, as in MPICH 4.0.2).
    fn MPI_Comm_call_errhandler / PMPI_Comm_call_errhandler(comm: abi::Comm, errorcode: c_int) {
        let c = state()?.comm(comm)?;
        call_handler(&c, errorcode);
        Ok(())
    }

    /// `MPI_Errhandler_free`: gives back the handle's reference (nothing for a predefined
    /// handler) and sets it to `MPI_ERRHANDLER_NULL`.
    fn MPI_Errhandler_free / PMPI_Errhandler_free(errhandler: *mut abi::Errhandler) {
        state()?;
        // SAFETY: an in-out argument.
        let h = unsafe { check::out(errhandler, "errhandler") }?;
        errhandlers::free(*h)?;
        *h = abi::MPI_ERRHANDLER_NULL;
        Ok(())
    }

    /// `MPI_Error_string`: the class's text, with what went wrong for the codes calls return;
    /// for a class or code the program added, its string (empty if none was added).
    fn MPI_Error_string / PMPI_Error_string(errorcode: c_int, string: *mut c_char, resultlen: *mut c_int) {
        let text = error_string(errorcode)
            .ok_or_else(|| Error::arg(format!("{errorcode} is not an error code")))?;
        // SAFETY: `string` has MPI_MAX_ERROR_STRING bytes (MPI's contract).
        unsafe { write_string(&text, string, abi::MPI_MAX_ERROR_STRING, resultlen, "string") }?;
        Ok(())
    }

    /// `MPI_Error_class`: also of the classes and codes the program added.
    fn MPI_Error_class / PMPI_Error_class(errorcode: c_int, errorclass: *mut c_int) {
        let class = class_of_code(errorcode).ok_or_else(|| Error::arg(format!("{errorcode} is not an error code")))?;
        // SAFETY: an output argument.
        *unsafe { check::out(errorclass, "errorclass") }? = class;
        Ok(())
    }
}
