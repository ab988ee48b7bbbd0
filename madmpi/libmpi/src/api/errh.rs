//! Error handlers and strings: `MPI_Comm_create_errhandler`, `MPI_Comm_set_errhandler`,
//! `MPI_Comm_get_errhandler`, `MPI_Comm_call_errhandler`, `MPI_Errhandler_free`,
//! `MPI_Error_string`, `MPI_Error_class` (these two work at any time).
//!
//! Handles from `create` and `get` each hold a reference that `MPI_Errhandler_free` gives
//! back; a communicator holds one on its handler (see `errhandlers`). Differences from MPICH
//! 4.0.2, where MPICH crashes or takes garbage: a null output pointer for
//! `MPI_Comm_create_errhandler` and an invalid handle for `MPI_Comm_set_errhandler` are
//! `MPI_ERR_ARG` here.

use super::write_string;
use crate::check;
use crate::errhandlers::{self, CommErrhandlerFn};
use crate::errors::{On, call_handler};
use crate::export::export;
use crate::state::state;
use madmpi::abi;
use madmpi::error::{Error, error_class, registry};
use std::ffi::{c_char, c_int};

export! {
    /// `MPI_Comm_create_errhandler`: a user handler, called as `function(&comm, &code)`.
    fn MPI_Comm_create_errhandler / PMPI_Comm_create_errhandler(
        function: Option<CommErrhandlerFn>,
        errhandler: *mut abi::Errhandler,
    ) {
        state()?;
        let function = function.ok_or_else(|| Error::arg("the error handler function is a null pointer"))?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(errhandler, "errhandler") }?;
        *out = errhandlers::create(function)?;
        Ok(())
    }

    /// `MPI_Comm_set_errhandler`.
    fn MPI_Comm_set_errhandler / PMPI_Comm_set_errhandler(comm: abi::Comm, errhandler: abi::Errhandler) {
        let c = state()?.comm(comm)?;
        c.errhandler.set(errhandler).on(&c)
    }

    /// `MPI_Comm_get_errhandler`: a handle to free with `MPI_Errhandler_free`.
    fn MPI_Comm_get_errhandler / PMPI_Comm_get_errhandler(comm: abi::Comm, errhandler: *mut abi::Errhandler) {
        let c = state()?.comm(comm)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(errhandler, "errhandler") }.on(&c)?;
        *out = c.errhandler.get_retained().on(&c)?;
        Ok(())
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

    /// `MPI_Error_string`: the class's text, with what went wrong for the codes calls return.
    fn MPI_Error_string / PMPI_Error_string(errorcode: c_int, string: *mut c_char, resultlen: *mut c_int) {
        let text = registry()
            .string(errorcode)
            .ok_or_else(|| Error::arg(format!("{errorcode} is not an error code")))?;
        // SAFETY: `string` has MPI_MAX_ERROR_STRING bytes (MPI's contract).
        unsafe { write_string(&text, string, abi::MPI_MAX_ERROR_STRING, resultlen, "string") }?;
        Ok(())
    }

    /// `MPI_Error_class`.
    fn MPI_Error_class / PMPI_Error_class(errorcode: c_int, errorclass: *mut c_int) {
        let class = error_class(errorcode).ok_or_else(|| Error::arg(format!("{errorcode} is not an error code")))?;
        // SAFETY: an output argument.
        *unsafe { check::out(errorclass, "errorclass") }? = class.code();
        Ok(())
    }
}
