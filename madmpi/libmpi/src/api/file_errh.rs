//! The error handlers of files (MPI 4.0 §9.3.3): `MPI_File_create_errhandler`,
//! `MPI_File_set_errhandler`, `MPI_File_get_errhandler`, `MPI_File_call_errhandler`.
//!
//! `MPI_FILE_NULL` stands for the default file handler (`MPI_ERRORS_RETURN` at first): setting
//! it changes the handler of the files opened afterwards and of the calls that have no file
//! (see `files`). A user handler is an `MPI_File_errhandler_function`, `void (MPI_File *, int
//! *, ...)`, kept in the communicators' handler table (the C function pointer is stored under
//! their type, which differs only in the pointee of its first argument) and called with a
//! pointer to the `MPI_File`. As for windows and sessions, a handler of another kind is
//! accepted.
//!
//! Errors of these calls go to the file's handler, or the default one for `MPI_FILE_NULL`; a
//! handle that names no open file is `MPI_ERR_FILE`.

use crate::check;
use crate::errhandlers::{self, CommErrhandlerFn, ErrhandlerCell};
use crate::errors::{Fail, HandlerOwner, On, call_handler_of};
use crate::export::export;
use crate::files::{self, CFile, FileObj, NoFile};
use crate::state::state;
use madmpi::abi;
use madmpi::error::Error;
use std::ffi::c_int;
use std::sync::Arc;

/// The file of `fh`, `None` for `MPI_FILE_NULL` (the default handler), with MPI running.
fn target(fh: CFile) -> Result<Option<Arc<FileObj>>, Fail> {
    if fh.is_null() {
        state().no_file()?;
        return Ok(None);
    }
    let (_, f) = super::file::open_file(fh)?;
    Ok(Some(f))
}

/// Runs `op` on the handler cell of `fh`'s file (the default file handler's for
/// `MPI_FILE_NULL`); its error goes to that file's handler.
fn with_cell<T>(fh: CFile, op: impl FnOnce(&ErrhandlerCell) -> Result<T, Error>) -> Result<T, Fail> {
    match target(fh)? {
        Some(f) => op(&f.errhandler).on(&f),
        None => op(files::default_handler()).no_file(),
    }
}

export! {
    /// `MPI_File_create_errhandler`: a handler called as `function(&file, &code)`.
    fn MPI_File_create_errhandler / PMPI_File_create_errhandler(
        file_errhandler_fn: Option<CommErrhandlerFn>,
        errhandler: *mut abi::Errhandler,
    ) {
        state().no_file()?;
        let function = file_errhandler_fn
            .ok_or_else(|| Error::arg("the error handler function is a null pointer"))
            .no_file()?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(errhandler, "errhandler") }.no_file()?;
        *out = errhandlers::create(function).no_file()?;
        Ok(())
    }

    /// `MPI_File_set_errhandler`: on `MPI_FILE_NULL`, the default file handler.
    fn MPI_File_set_errhandler / PMPI_File_set_errhandler(file: CFile, errhandler: abi::Errhandler) {
        with_cell(file, |cell| cell.set(errhandler))
    }

    /// `MPI_File_get_errhandler`: a handle to free with `MPI_Errhandler_free` (on
    /// `MPI_FILE_NULL`, the default file handler).
    fn MPI_File_get_errhandler / PMPI_File_get_errhandler(file: CFile, errhandler: *mut abi::Errhandler) {
        with_cell(file, |cell| {
            // SAFETY: an output argument.
            let out = unsafe { check::out(errhandler, "errhandler") }?;
            *out = cell.get_retained()?;
            Ok(())
        })
    }

    /// `MPI_File_call_errhandler`: the file's handler (the default file handler for
    /// `MPI_FILE_NULL`) runs on `errorcode`; `MPI_SUCCESS` once it returns.
    fn MPI_File_call_errhandler / PMPI_File_call_errhandler(fh: CFile, errorcode: c_int) {
        let owner: Arc<dyn HandlerOwner> = match target(fh)? {
            Some(f) => f,
            None => files::null_owner(),
        };
        call_handler_of(&*owner, "MPI_File_call_errhandler", errorcode);
        Ok(())
    }
}
