//! Error handlers and strings: `MPI_Comm_set_errhandler`, `MPI_Comm_get_errhandler` (the
//! predefined handlers for now), `MPI_Error_string`, `MPI_Error_class` (these two work at any
//! time).

use super::write_string;
use crate::check;
use crate::errors::{On, check_errhandler};
use crate::export::export;
use crate::state::state;
use madmpi::abi;
use madmpi::error::{Error, error_class, registry};
use std::ffi::{c_char, c_int};

export! {
    /// `MPI_Comm_set_errhandler`.
    fn MPI_Comm_set_errhandler / PMPI_Comm_set_errhandler(comm: abi::Comm, errhandler: abi::Errhandler) {
        let c = state()?.comm(comm)?;
        let h = check_errhandler(errhandler).on(&c)?;
        c.errhandler.set(h);
        Ok(())
    }

    /// `MPI_Comm_get_errhandler`.
    fn MPI_Comm_get_errhandler / PMPI_Comm_get_errhandler(comm: abi::Comm, errhandler: *mut abi::Errhandler) {
        let c = state()?.comm(comm)?;
        // SAFETY: an output argument.
        *unsafe { check::out(errhandler, "errhandler") }.on(&c)? = c.errhandler.get();
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
