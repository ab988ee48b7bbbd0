//! File manipulation (MPI 4.0 §14.2, §14.3, §14.4.4, §14.6): `MPI_File_open`,
//! `MPI_File_close`, `MPI_File_delete`, `MPI_File_set_size`, `MPI_File_preallocate`,
//! `MPI_File_get_size`, `MPI_File_get_group`, `MPI_File_get_amode`, `MPI_File_set_info`,
//! `MPI_File_get_info`, `MPI_File_set_view`, `MPI_File_get_view`, `MPI_File_get_type_extent`
//! (and `_c`), `MPI_File_set_atomicity`, `MPI_File_get_atomicity`, `MPI_File_sync`,
//! `MPI_File_seek`, `MPI_File_get_position`, `MPI_File_seek_shared`,
//! `MPI_File_get_position_shared`, `MPI_File_get_byte_offset`, and the handle conversions
//! `MPI_File_c2f` and `MPI_File_f2c` (functions, not macros: `MPI_File` is a pointer).
//!
//! Errors go to the file's handler (`MPI_ERRORS_RETURN` unless set), those of `MPI_File_open`,
//! `MPI_File_delete` and of a handle that names no open file to the default file handler,
//! `MPI_FILE_NULL`'s (see `files`). Checks, in parameter order as ROMIO: the file
//! (`MPI_ERR_FILE`), a negative size or offset and a negative displacement other than
//! `MPI_DISPLACEMENT_CURRENT` (`MPI_ERR_ARG`), datatypes (`MPI_ERR_TYPE`; `set_view`'s must be
//! committed), an unknown `whence` (`MPI_ERR_ARG`), the access mode (`MPI_ERR_AMODE`, from
//! [`Amode::new`]), a null file name (`MPI_ERR_ARG`; one longer than `PATH_MAX` or not UTF-8 is
//! `MPI_ERR_BAD_FILE`), a null `datarep` (`MPI_ERR_ARG`; one longer than
//! `MPI_MAX_DATAREP_STRING - 1` bytes or not UTF-8 is `MPI_ERR_UNSUPPORTED_DATAREP`), info
//! handles (`MPI_ERR_INFO`), output pointers (`MPI_ERR_ARG`). `MPI_File_open` on an
//! intercommunicator is `MPI_ERR_COMM`.
//!
//! `MPI_File_get_view` returns the predefined types as they are and a new handle (of the same
//! committed type, to free with `MPI_Type_free`) for a derived one, as MPI says.
//!
//! Owns the C signatures and the order of the checks; the files are `madmpi::io`'s.

use super::write_string;
use crate::check;
use crate::datareps;
use crate::datatypes::predefined_handle;
use crate::errors::{Fail, On};
use crate::export::export;
use crate::files::{self, CFile, FileObj, NoFile};
use crate::infos;
use crate::state::{State, state};
use madmpi::abi;
use madmpi::datatype::Datatype;
use madmpi::error::Error;
use madmpi::io::{Amode, Disp, File, Whence};
use std::ffi::{c_char, c_int};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

/// `MPI_SEEK_SET`, `MPI_SEEK_CUR`, `MPI_SEEK_END` (ROMIO's values).
pub(crate) const MPI_SEEK_SET: c_int = 600;
pub(crate) const MPI_SEEK_CUR: c_int = 602;
pub(crate) const MPI_SEEK_END: c_int = 604;
/// `MPI_DISPLACEMENT_CURRENT` (ROMIO's value).
pub(crate) const MPI_DISPLACEMENT_CURRENT: abi::Offset = -54278278;

/// Longest file name read, in bytes (Linux's `PATH_MAX`, its NUL not counted).
const PATH_MAX: usize = 4095;

/// The open file of `fh` and the running state (an error after the handle's goes to the
/// file's handler).
pub(super) fn open_file(fh: CFile) -> Result<(Arc<State>, Arc<FileObj>), Fail> {
    let f = files::file(fh)?;
    let st = state().on(&f)?;
    Ok((st, f))
}

/// A file name argument: `MPI_ERR_ARG` if null, `MPI_ERR_BAD_FILE` if too long or not UTF-8.
///
/// # Safety
/// A non-null `p` points to a NUL-terminated string (MPI's contract).
unsafe fn path(p: *const c_char) -> Result<String, Error> {
    // SAFETY: the caller's contract.
    match unsafe { check::c_string(p, PATH_MAX) } {
        None => Err(Error::arg("the file name is a null pointer")),
        Some(Err(())) => Err(Error::bad_file(format!("the file name is longer than {PATH_MAX} bytes"))),
        Some(Ok(b)) => match std::str::from_utf8(b) {
            Ok(s) => Ok(s.to_owned()),
            Err(_) => {
                Err(Error::bad_file(format!("the file name {:?} is not UTF-8", String::from_utf8_lossy(b))))
            }
        },
    }
}

/// A `datarep` argument: `MPI_ERR_ARG` if null, `MPI_ERR_UNSUPPORTED_DATAREP` if it cannot name
/// a representation (too long, not UTF-8).
///
/// # Safety
/// As [`path`].
pub(super) unsafe fn datarep_name(p: *const c_char) -> Result<String, Error> {
    let max = abi::MPI_MAX_DATAREP_STRING as usize - 1;
    // SAFETY: the caller's contract.
    match unsafe { check::c_string(p, max) } {
        None => Err(Error::arg("datarep is a null pointer")),
        Some(Err(())) => Err(Error::unsupported_datarep(format!("datarep is longer than {max} bytes"))),
        Some(Ok(b)) => std::str::from_utf8(b).map(str::to_owned).map_err(|_| {
            Error::unsupported_datarep(format!("datarep {:?} is not UTF-8", String::from_utf8_lossy(b)))
        }),
    }
}

/// A `whence` argument: `MPI_ERR_ARG` unless `MPI_SEEK_SET`, `_CUR` or `_END`.
fn whence(w: c_int) -> Result<Whence, Error> {
    match w {
        MPI_SEEK_SET => Ok(Whence::Set),
        MPI_SEEK_CUR => Ok(Whence::Cur),
        MPI_SEEK_END => Ok(Whence::End),
        _ => Err(Error::arg(format!(
            "invalid whence {w} (MPI_SEEK_SET, MPI_SEEK_CUR or MPI_SEEK_END expected)"
        ))),
    }
}

/// A size or offset that must not be negative: `MPI_ERR_ARG`.
fn non_negative(v: abi::Offset, what: &str) -> Result<i64, Error> {
    if v < 0 {
        return Err(Error::arg(format!("negative {what} ({v})")));
    }
    Ok(v)
}

/// The handle `MPI_File_get_view` gives for a view's type: a predefined type's own, else a new
/// handle of the same committed type (its envelope is the original's, as ROMIO's copy has; the
/// caller frees the handle, the view keeps the type).
fn view_type_handle(st: &State, t: &Datatype) -> Result<abi::Datatype, Error> {
    if let Some(p) = t.as_predefined() {
        return Ok(predefined_handle(p));
    }
    st.datatypes.insert(t.clone()).ok_or_else(|| Error::intern("too many live datatypes"))
}

/// `MPI_File_get_type_extent`, `_c`: the extent through `write`.
fn type_extent(
    fh: CFile,
    datatype: abi::Datatype,
    write: impl FnOnce(i64) -> Result<(), Error>,
) -> Result<(), Fail> {
    let (st, f) = open_file(fh)?;
    let t = st.datatype(datatype).on(&f)?;
    datareps::remember(&t, datatype);
    let extent = f.file.type_extent(&t).on(&f)?;
    write(extent).on(&f)
}

export! {
    /// `MPI_File_open` (collective over `comm`): `filename` opened with `amode` by every
    /// process; the file starts with the default file handler.
    fn MPI_File_open / PMPI_File_open(
        comm: abi::Comm,
        filename: *const c_char,
        amode: c_int,
        info: abi::Info,
        fh: *mut CFile,
    ) {
        let st = state().no_file()?;
        let c = st.comm(comm).no_file()?;
        if c.comm.is_inter() {
            return Err(Error::comm("files are opened on intracommunicators")).no_file();
        }
        // SAFETY: a C string (MPI's contract).
        let path = unsafe { path(filename) }.no_file()?;
        let amode = Amode::new(amode).no_file()?;
        let hints = infos::hints(info).no_file()?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(fh, "fh") }.no_file()?;
        let file = File::open(&c.comm, &path, amode, &hints).no_file()?;
        *out = files::add(file).no_file()?;
        Ok(())
    }

    /// `MPI_File_close` (collective): waits for the file's nonblocking operations, closes it and
    /// sets `*fh` to `MPI_FILE_NULL` (a file whose close failed keeps its handle).
    fn MPI_File_close / PMPI_File_close(fh: *mut CFile) {
        // SAFETY: an in-out argument.
        let h = unsafe { check::out(fh, "fh") }.no_file()?;
        let (_, f) = open_file(*h)?;
        f.file.clone().close().on(&f)?;
        files::remove(*h);
        *h = std::ptr::null_mut();
        Ok(())
    }

    /// `MPI_File_delete`: removes `filename` (`MPI_ERR_NO_SUCH_FILE` if there is none).
    fn MPI_File_delete / PMPI_File_delete(filename: *const c_char, info: abi::Info) {
        state().no_file()?;
        // SAFETY: a C string (MPI's contract).
        let path = unsafe { path(filename) }.no_file()?;
        let hints = infos::hints(info).no_file()?;
        File::delete(&path, &hints).no_file()
    }

    /// `MPI_File_set_size` (collective): truncates or extends the file to `size` bytes.
    fn MPI_File_set_size / PMPI_File_set_size(fh: CFile, size: abi::Offset) {
        let (_, f) = open_file(fh)?;
        let size = non_negative(size, "size").on(&f)?;
        f.file.set_size(size).on(&f)
    }

    /// `MPI_File_preallocate` (collective): at least `size` bytes are reserved.
    fn MPI_File_preallocate / PMPI_File_preallocate(fh: CFile, size: abi::Offset) {
        let (_, f) = open_file(fh)?;
        let size = non_negative(size, "size").on(&f)?;
        f.file.preallocate(size).on(&f)
    }

    /// `MPI_File_get_size`, in bytes.
    fn MPI_File_get_size / PMPI_File_get_size(fh: CFile, size: *mut abi::Offset) {
        let (_, f) = open_file(fh)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(size, "size") }.on(&f)?;
        *out = f.file.size().on(&f)?;
        Ok(())
    }

    /// `MPI_File_get_group`: a new handle to the group of the file's communicator.
    fn MPI_File_get_group / PMPI_File_get_group(fh: CFile, group: *mut abi::Group) {
        let (st, f) = open_file(fh)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(group, "group") }.on(&f)?;
        *out = st.add_group(f.file.group().clone()).on(&f)?;
        Ok(())
    }

    /// `MPI_File_get_amode`: the access mode the file was opened with.
    fn MPI_File_get_amode / PMPI_File_get_amode(fh: CFile, amode: *mut c_int) {
        let (_, f) = open_file(fh)?;
        // SAFETY: an output argument.
        *unsafe { check::out(amode, "amode") }.on(&f)? = f.file.amode().bits();
        Ok(())
    }

    /// `MPI_File_set_info` (collective): the hints that may still change are taken.
    fn MPI_File_set_info / PMPI_File_set_info(fh: CFile, info: abi::Info) {
        let (_, f) = open_file(fh)?;
        let hints = infos::hints(info).on(&f)?;
        f.file.set_info(&hints).on(&f)
    }

    /// `MPI_File_get_info`: a new info object with the hints in use.
    fn MPI_File_get_info / PMPI_File_get_info(fh: CFile, info_used: *mut abi::Info) {
        let (_, f) = open_file(fh)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(info_used, "info_used") }.on(&f)?;
        *out = infos::add(f.file.info()).on(&f)?;
        Ok(())
    }

    /// `MPI_File_set_view` (collective): both file pointers go back to 0.
    fn MPI_File_set_view / PMPI_File_set_view(
        fh: CFile,
        disp: abi::Offset,
        etype: abi::Datatype,
        filetype: abi::Datatype,
        datarep: *const c_char,
        info: abi::Info,
    ) {
        let (st, f) = open_file(fh)?;
        let disp = match disp {
            MPI_DISPLACEMENT_CURRENT => Disp::Current,
            d => Disp::Bytes(non_negative(d, "displacement").on(&f)?),
        };
        let et = st.committed_datatype(etype).on(&f)?;
        let ft = st.committed_datatype(filetype).on(&f)?;
        // SAFETY: a C string (MPI's contract).
        let rep = unsafe { datarep_name(datarep) }.on(&f)?;
        let hints = infos::hints(info).on(&f)?;
        datareps::remember(&et, etype);
        datareps::remember(&ft, filetype);
        f.file.set_view(disp, &et, &ft, &rep, &hints).on(&f)
    }

    /// `MPI_File_get_view`: `datarep` has room for `MPI_MAX_DATAREP_STRING` bytes; a derived
    /// etype or filetype comes back as a new handle, for the program to free.
    fn MPI_File_get_view / PMPI_File_get_view(
        fh: CFile,
        disp: *mut abi::Offset,
        etype: *mut abi::Datatype,
        filetype: *mut abi::Datatype,
        datarep: *mut c_char,
    ) {
        let (st, f) = open_file(fh)?;
        // SAFETY: output arguments.
        let (disp, etype, filetype) = unsafe {
            (
                check::out(disp, "disp").on(&f)?,
                check::out(etype, "etype").on(&f)?,
                check::out(filetype, "filetype").on(&f)?,
            )
        };
        let view = f.file.view();
        let mut len = 0;
        // SAFETY: `datarep` has MPI_MAX_DATAREP_STRING bytes (MPI's contract); `len` is ours.
        unsafe { write_string(view.datarep(), datarep, abi::MPI_MAX_DATAREP_STRING, &mut len, "datarep") }
            .on(&f)?;
        *disp = view.disp;
        *etype = view_type_handle(&st, &view.etype).on(&f)?;
        *filetype = view_type_handle(&st, &view.filetype).on(&f)?;
        Ok(())
    }

    /// `MPI_File_get_type_extent`: `datatype`'s extent in the view's data representation.
    fn MPI_File_get_type_extent / PMPI_File_get_type_extent(
        fh: CFile,
        datatype: abi::Datatype,
        extent: *mut abi::Aint,
    ) {
        type_extent(fh, datatype, |e| {
            // SAFETY: an output argument.
            *unsafe { check::out(extent, "extent") }? = e;
            Ok(())
        })
    }

    /// `MPI_File_get_type_extent_c`: as `MPI_File_get_type_extent`, into an `MPI_Count`.
    fn MPI_File_get_type_extent_c / PMPI_File_get_type_extent_c(
        fh: CFile,
        datatype: abi::Datatype,
        extent: *mut abi::Count,
    ) {
        type_extent(fh, datatype, |e| {
            // SAFETY: an output argument.
            *unsafe { check::out(extent, "extent") }? = e;
            Ok(())
        })
    }

    /// `MPI_File_set_atomicity` (collective): `flag` nonzero for atomic mode.
    fn MPI_File_set_atomicity / PMPI_File_set_atomicity(fh: CFile, flag: c_int) {
        let (_, f) = open_file(fh)?;
        f.file.set_atomicity(flag != 0).on(&f)
    }

    /// `MPI_File_get_atomicity`.
    fn MPI_File_get_atomicity / PMPI_File_get_atomicity(fh: CFile, flag: *mut c_int) {
        let (_, f) = open_file(fh)?;
        // SAFETY: an output argument.
        *unsafe { check::out(flag, "flag") }.on(&f)? = c_int::from(f.file.atomicity());
        Ok(())
    }

    /// `MPI_File_sync` (collective): what this process wrote reaches the storage device.
    fn MPI_File_sync / PMPI_File_sync(fh: CFile) {
        let (_, f) = open_file(fh)?;
        f.file.sync().on(&f)
    }

    /// `MPI_File_seek`: moves the individual file pointer (in etypes of the view).
    fn MPI_File_seek / PMPI_File_seek(fh: CFile, offset: abi::Offset, whence: c_int) {
        let (_, f) = open_file(fh)?;
        let w = self::whence(whence).on(&f)?;
        f.file.seek(offset, w).on(&f)
    }

    /// `MPI_File_get_position`: the individual file pointer, in etypes of the view.
    fn MPI_File_get_position / PMPI_File_get_position(fh: CFile, offset: *mut abi::Offset) {
        let (_, f) = open_file(fh)?;
        // SAFETY: an output argument.
        *unsafe { check::out(offset, "offset") }.on(&f)? = f.file.position();
        Ok(())
    }

    /// `MPI_File_seek_shared` (collective, with the same arguments everywhere): moves the
    /// shared file pointer.
    fn MPI_File_seek_shared / PMPI_File_seek_shared(fh: CFile, offset: abi::Offset, whence: c_int) {
        let (_, f) = open_file(fh)?;
        let w = self::whence(whence).on(&f)?;
        f.file.seek_shared(offset, w).on(&f)
    }

    /// `MPI_File_get_position_shared`: the shared file pointer, in etypes of the view.
    fn MPI_File_get_position_shared / PMPI_File_get_position_shared(fh: CFile, offset: *mut abi::Offset) {
        let (_, f) = open_file(fh)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(offset, "offset") }.on(&f)?;
        *out = f.file.position_shared().on(&f)?;
        Ok(())
    }

    /// `MPI_File_get_byte_offset`: the absolute byte position of view offset `offset`.
    fn MPI_File_get_byte_offset / PMPI_File_get_byte_offset(fh: CFile, offset: abi::Offset, disp: *mut abi::Offset) {
        let (_, f) = open_file(fh)?;
        let offset = non_negative(offset, "offset").on(&f)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(disp, "disp") }.on(&f)?;
        *out = f.file.byte_offset(offset).on(&f)?;
        Ok(())
    }
}

/// `MPI_File_c2f`: the file's Fortran handle, 0 for `MPI_FILE_NULL` and anything that is not an
/// open file (as ROMIO: the call has no error to return).
#[unsafe(no_mangle)]
pub extern "C" fn PMPI_File_c2f(file: CFile) -> abi::Fint {
    catch_unwind(AssertUnwindSafe(|| files::c2f(file))).unwrap_or(0)
}

/// The profiling entry point of [`PMPI_File_c2f`], which it calls.
#[unsafe(no_mangle)]
pub extern "C" fn MPI_File_c2f(file: CFile) -> abi::Fint {
    PMPI_File_c2f(file)
}

/// `MPI_File_f2c`: the file of a Fortran handle, `MPI_FILE_NULL` for 0 and anything that is not
/// an open file's (as ROMIO).
#[unsafe(no_mangle)]
pub extern "C" fn PMPI_File_f2c(file: abi::Fint) -> CFile {
    catch_unwind(|| files::f2c(file)).unwrap_or(std::ptr::null_mut())
}

/// The profiling entry point of [`PMPI_File_f2c`], which it calls.
#[unsafe(no_mangle)]
pub extern "C" fn MPI_File_f2c(file: abi::Fint) -> CFile {
    PMPI_File_f2c(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use madmpi::error::ErrorClass;

    /// The value `mpi.h` defines `name` as.
    fn header_value(name: &str) -> i64 {
        let header = include_str!("../../../include/mpi.h");
        let line = header
            .lines()
            .find_map(|l| l.strip_prefix("#define ")?.trim_start().strip_prefix(name)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("{name} is not defined in mpi.h"));
        line.trim().trim_matches(['(', ')']).parse().unwrap_or_else(|_| panic!("{name}: {line}"))
    }

    #[test]
    fn constants_are_the_headers() {
        assert_eq!(header_value("MPI_SEEK_SET"), i64::from(MPI_SEEK_SET));
        assert_eq!(header_value("MPI_SEEK_CUR"), i64::from(MPI_SEEK_CUR));
        assert_eq!(header_value("MPI_SEEK_END"), i64::from(MPI_SEEK_END));
        assert_eq!(header_value("MPI_DISPLACEMENT_CURRENT"), MPI_DISPLACEMENT_CURRENT);
    }

    #[test]
    fn argument_checks() {
        assert_eq!(whence(MPI_SEEK_CUR).unwrap(), Whence::Cur);
        assert_eq!(whence(601).unwrap_err().class(), ErrorClass::Arg);
        assert_eq!(non_negative(-1, "size").unwrap_err().class(), ErrorClass::Arg);
        // SAFETY: C strings or null.
        unsafe {
            assert_eq!(path(std::ptr::null()).unwrap_err().class(), ErrorClass::Arg);
            assert_eq!(path(c"/tmp/x".as_ptr()).unwrap(), "/tmp/x");
            assert_eq!(path(c"\xff".as_ptr()).unwrap_err().class(), ErrorClass::BadFile);
            assert_eq!(datarep_name(std::ptr::null()).unwrap_err().class(), ErrorClass::Arg);
            assert_eq!(datarep_name(c"native".as_ptr()).unwrap(), "native");
            let long = std::ffi::CString::new("x".repeat(128)).unwrap();
            assert_eq!(datarep_name(long.as_ptr()).unwrap_err().class(), ErrorClass::UnsupportedDatarep);
        }
    }
}
