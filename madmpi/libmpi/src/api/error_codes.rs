//! Error classes, codes and strings the program adds: `MPI_Add_error_class`,
//! `MPI_Add_error_code`, `MPI_Add_error_string`, and MPICH's `MPIX_Delete_error_class`,
//! `MPIX_Delete_error_code`, `MPIX_Delete_error_string`. The numbering and the rules are
//! madmpi's (`madmpi::error::UserErrors`); `MPI_Error_class`, `MPI_Error_string` and the
//! `MPI_LASTUSEDCODE` attribute report them.
//!
//! Like `MPI_Error_string`, these work at any time; errors go to `MPI_COMM_WORLD`'s handler.
//! Differences from MPICH 4.0.2 (`tests/c/status_errors_legacy.c`): deleting a class that still has
//! codes, a code or class that is not the program's, or a string that was never added is
//! `MPI_ERR_ARG` here.

use crate::check;
use crate::export::export;
use madmpi::abi;
use madmpi::error::{Error, user_errors};
use std::ffi::{c_char, c_int};

export! {
    /// `MPI_Add_error_class`: a new class, above `MPI_ERR_LASTCODE`.
    fn MPI_Add_error_class / PMPI_Add_error_class(errorclass: *mut c_int) {
        // SAFETY: an output argument.
        let out = unsafe { check::out(errorclass, "errorclass") }?;
        *out = user_errors().add_class()?;
        Ok(())
    }

    /// `MPI_Add_error_code`: a new code of `errorclass` (predefined or added).
    fn MPI_Add_error_code / PMPI_Add_error_code(errorclass: c_int, errorcode: *mut c_int) {
        // SAFETY: an output argument.
        let out = unsafe { check::out(errorcode, "errorcode") }?;
        *out = user_errors().add_code(errorclass)?;
        Ok(())
    }

    /// `MPI_Add_error_string`: the string `MPI_Error_string` returns for an added class or
    /// code, shorter than `MPI_MAX_ERROR_STRING`.
    fn MPI_Add_error_string / PMPI_Add_error_string(errorcode: c_int, string: *const c_char) {
        let max = abi::MPI_MAX_ERROR_STRING as usize - 1;
        // SAFETY: a NUL-terminated string (MPI's contract), read at most `max + 1` bytes far.
        let bytes = match unsafe { check::c_string(string, max) } {
            None => return Err(Error::arg("string is a null pointer").into()),
            Some(Err(())) => {
                return Err(Error::arg(format!("string is longer than MPI_MAX_ERROR_STRING - 1 = {max} bytes")).into());
            }
            Some(Ok(bytes)) => bytes,
        };
        let text = String::from_utf8_lossy(bytes);
        user_errors().set_string(errorcode, &text)?;
        Ok(())
    }

    /// `MPIX_Delete_error_class`: an added class without codes left.
    fn MPIX_Delete_error_class / PMPIX_Delete_error_class(errorclass: c_int) {
        Ok(user_errors().delete_class(errorclass)?)
    }

    /// `MPIX_Delete_error_code`: an added code.
    fn MPIX_Delete_error_code / PMPIX_Delete_error_code(errorcode: c_int) {
        Ok(user_errors().delete_code(errorcode)?)
    }

    /// `MPIX_Delete_error_string`: the string of an added class or code (empty again).
    fn MPIX_Delete_error_string / PMPIX_Delete_error_string(errorcode: c_int) {
        Ok(user_errors().delete_string(errorcode)?)
    }
}
