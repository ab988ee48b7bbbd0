//! User data representations (MPI 4.0 §14.5.3): `MPI_Register_datarep` and its large-count
//! form `MPI_Register_datarep_c` (whose conversion functions take an `MPI_Count`).
//!
//! The functions become a `madmpi::io::Conversion` (`datareps`): `MPI_CONVERSION_FN_NULL`
//! (`_C`) for either conversion function means that direction stores native bytes; unlike
//! ROMIO, which refuses conversion functions (`MPI_ERR_CONVERSION`), they are called.
//!
//! Checks, as ROMIO: the name (null, empty, longer than `MPI_MAX_DATAREP_STRING - 1` bytes or
//! not UTF-8: `MPI_ERR_ARG`), the extent function (null: `MPI_ERR_ARG`), then a name already
//! taken, the predefined ones included (`MPI_ERR_DUP_DATAREP`, from `madmpi::io`; ROMIO
//! checks it before the extent function). Errors go to the default file handler
//! (`MPI_FILE_NULL`'s).
//!
//! Owns the C signatures and the order of the checks; the registry is `madmpi::io`'s.

use crate::check;
use crate::datareps::{CConversion, ConversionFn, ConversionFnC, Convert, ExtentFn};
use crate::errors::Outcome;
use crate::export::export;
use crate::files::NoFile;
use crate::state::state;
use madmpi::abi;
use madmpi::error::Error;
use std::ffi::{c_char, c_void};
use std::sync::Arc;

/// The name argument: `MPI_ERR_ARG` unless 1 to `MPI_MAX_DATAREP_STRING - 1` bytes of UTF-8.
///
/// # Safety
/// A non-null `p` points to a NUL-terminated string (MPI's contract).
unsafe fn name(p: *const c_char) -> Result<String, Error> {
    let max = abi::MPI_MAX_DATAREP_STRING as usize - 1;
    // SAFETY: the caller's contract.
    let bytes = match unsafe { check::c_string(p, max) } {
        None => return Err(Error::arg("datarep is a null pointer")),
        Some(Err(())) => return Err(Error::arg(format!("datarep is longer than {max} bytes"))),
        Some(Ok(b)) => b,
    };
    match std::str::from_utf8(bytes) {
        Ok("") => Err(Error::arg("datarep is the empty string")),
        Ok(s) => Ok(s.to_owned()),
        Err(_) => Err(Error::arg(format!("datarep {:?} is not UTF-8", String::from_utf8_lossy(bytes)))),
    }
}

/// Both registrations.
///
/// # Safety
/// As [`name`] for `datarep`.
unsafe fn register(
    datarep: *const c_char,
    read: Option<Convert>,
    write: Option<Convert>,
    extent: Option<ExtentFn>,
    extra_state: *mut c_void,
) -> Outcome {
    state().no_file()?;
    // SAFETY: the caller's contract.
    let name = unsafe { self::name(datarep) }.no_file()?;
    let extent = extent.ok_or_else(|| Error::arg("dtype_file_extent_fn is a null pointer")).no_file()?;
    let conv = CConversion::new(read, write, extent, extra_state);
    madmpi::io::register_datarep(&name, Arc::new(conv)).no_file()
}

export! {
    /// `MPI_Register_datarep`: `datarep` becomes usable in `MPI_File_set_view`; the
    /// conversion functions get at most `INT_MAX` elements at a time.
    fn MPI_Register_datarep / PMPI_Register_datarep(
        datarep: *const c_char,
        read_conversion_fn: Option<ConversionFn>,
        write_conversion_fn: Option<ConversionFn>,
        dtype_file_extent_fn: Option<ExtentFn>,
        extra_state: *mut c_void,
    ) {
        // SAFETY: a C string (MPI's contract).
        unsafe {
            register(
                datarep,
                read_conversion_fn.map(Convert::Int),
                write_conversion_fn.map(Convert::Int),
                dtype_file_extent_fn,
                extra_state,
            )
        }
    }

    /// `MPI_Register_datarep_c`: as `MPI_Register_datarep`, with conversion functions taking
    /// an `MPI_Count`.
    fn MPI_Register_datarep_c / PMPI_Register_datarep_c(
        datarep: *const c_char,
        read_conversion_fn: Option<ConversionFnC>,
        write_conversion_fn: Option<ConversionFnC>,
        dtype_file_extent_fn: Option<ExtentFn>,
        extra_state: *mut c_void,
    ) {
        // SAFETY: a C string (MPI's contract).
        unsafe {
            register(
                datarep,
                read_conversion_fn.map(Convert::Large),
                write_conversion_fn.map(Convert::Large),
                dtype_file_extent_fn,
                extra_state,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use madmpi::error::ErrorClass;

    #[test]
    fn names() {
        // SAFETY: C strings or null.
        unsafe {
            assert_eq!(name(c"mine".as_ptr()).unwrap(), "mine");
            assert_eq!(name(c"".as_ptr()).unwrap_err().class(), ErrorClass::Arg);
            assert_eq!(name(std::ptr::null()).unwrap_err().class(), ErrorClass::Arg);
            let long = std::ffi::CString::new("d".repeat(128)).unwrap();
            assert_eq!(name(long.as_ptr()).unwrap_err().class(), ErrorClass::Arg);
            let longest = std::ffi::CString::new("d".repeat(127)).unwrap();
            assert_eq!(name(longest.as_ptr()).unwrap().len(), 127);
        }
    }
}
