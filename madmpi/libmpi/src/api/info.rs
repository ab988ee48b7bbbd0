//! Info objects: `MPI_Info_create`, `MPI_Info_create_env`, `MPI_Info_set`, `MPI_Info_delete`,
//! `MPI_Info_get` (deprecated by MPI 4.0, still used), `MPI_Info_get_string`,
//! `MPI_Info_get_valuelen`, `MPI_Info_get_nkeys`, `MPI_Info_get_nthkey`, `MPI_Info_dup`,
//! `MPI_Info_free`.
//!
//! They work at any time, before `MPI_Init` and after `MPI_Finalize` too (MPI 4.0, table
//! 11.1), and from any thread. Errors are tied to no communicator: they go to
//! `MPI_COMM_WORLD`'s handler (fatal before `MPI_Init`). Arguments are checked in order after
//! the handle (`MPI_ERR_INFO`): a key is `MPI_ERR_INFO_KEY` if null, empty or longer than
//! `MPI_MAX_INFO_KEY` bytes (as in MPICH; only that many bytes and one more are ever read), a
//! value `MPI_ERR_INFO_VALUE` if longer than `MPI_MAX_INFO_VAL`, other null pointers and
//! negative lengths `MPI_ERR_ARG`.
//!
//! What is written back, as MPI 4.0 says (C lengths exclude the NUL):
//! - `MPI_Info_get` writes at most `valuelen` bytes of the value and a NUL, so `value` needs
//!   `valuelen + 1` bytes; a longer value is cut, which is no error (MPICH 4.0.2 returns
//!   `MPI_ERR_INFO_VALUE` then, though it cuts too);
//! - `MPI_Info_get_string` writes at most `*buflen - 1` bytes and a NUL, nothing when `*buflen`
//!   is 0 (`value` may then be null), and sets `*buflen` to the value's length plus one; both
//!   untouched, with `flag` false, for a key that is not set;
//! - `MPI_Info_get_nthkey` writes the whole key and a NUL: `MPI_MAX_INFO_KEY + 1` bytes for
//!   the longest key (MPICH 4.0.2 cuts keys of `MPI_MAX_INFO_KEY` bytes by one);
//! - a key that is not set leaves `value` and `valuelen` untouched.

use crate::check;
use crate::export::export;
use crate::infos;
use madmpi::abi;
use madmpi::error::{Error, Result};
use madmpi::info::{self, Info, MAX_KEY, MAX_VALUE};
use std::ffi::{CStr, c_char, c_int};

/// The key argument at `p` (see the module documentation for its errors).
///
/// # Safety
/// As [`check::c_string`].
unsafe fn key<'a>(p: *const c_char) -> Result<&'a [u8]> {
    // SAFETY: the caller's contract.
    match unsafe { check::c_string(p, MAX_KEY) } {
        None => Err(Error::info_key("the key is a null pointer")),
        Some(Err(())) => Err(Error::info_key(format!("key longer than MPI_MAX_INFO_KEY ({MAX_KEY} bytes)"))),
        Some(Ok(k)) => info::check_key(k).map(|()| k),
    }
}

/// The value argument at `p`: `MPI_ERR_ARG` if null, `MPI_ERR_INFO_VALUE` if longer than
/// `MPI_MAX_INFO_VAL` bytes.
///
/// # Safety
/// As [`check::c_string`].
unsafe fn value<'a>(p: *const c_char) -> Result<&'a [u8]> {
    // SAFETY: the caller's contract.
    match unsafe { check::c_string(p, MAX_VALUE) } {
        None => Err(Error::arg("the value is a null pointer")),
        Some(Err(())) => {
            Err(Error::info_value(format!("value longer than MPI_MAX_INFO_VAL ({MAX_VALUE} bytes)")))
        }
        Some(Ok(v)) => Ok(v),
    }
}

/// Copies `bytes` and a NUL to `dst`: `MPI_ERR_ARG` if `dst` is null.
///
/// # Safety
/// A non-null `dst` must be valid for writes of `bytes.len() + 1` bytes.
unsafe fn write_c(dst: *mut c_char, bytes: &[u8], what: &str) -> Result<()> {
    if dst.is_null() {
        return Err(Error::arg(format!("{what} is a null pointer")));
    }
    // SAFETY: `dst` has room for the bytes and the NUL (the caller's contract); the source is
    // the library's own memory, distinct from the program's buffer.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst.cast::<u8>(), bytes.len());
        *dst.add(bytes.len()) = 0;
    }
    Ok(())
}

/// A length argument that may not be negative.
fn length(n: c_int, what: &str) -> Result<usize> {
    usize::try_from(n).map_err(|_| Error::arg(format!("negative {what} ({n})")))
}

/// The command line given to `MPI_Info_create_env`, or `None` to use the process's own (no
/// arguments given: `argc <= 0` or `argv` null, as MPI allows). It ends at `argc` entries or at
/// the first null one.
///
/// # Safety
/// If `argc > 0` and `argv` is not null, `argv` holds `argc` pointers, each null or to a
/// NUL-terminated string (as `main`'s arguments).
unsafe fn command_line<'a>(argc: c_int, argv: *mut *mut c_char) -> Result<Option<Vec<&'a [u8]>>> {
    if argc <= 0 || argv.is_null() {
        return Ok(None);
    }
    // SAFETY: `argc` entries (the caller's contract); null and misaligned arrays are rejected.
    let entries = unsafe { check::array_in(argv.cast_const(), argc as usize, "argv") }?;
    let args = entries
        .iter()
        .take_while(|a| !a.is_null())
        // SAFETY: a non-null entry is a NUL-terminated string (the caller's contract).
        .map(|&a| unsafe { CStr::from_ptr(a) }.to_bytes())
        .collect();
    Ok(Some(args))
}

export! {
    /// `MPI_Info_create`: a new, empty info object.
    fn MPI_Info_create / PMPI_Info_create(info: *mut abi::Info) {
        // SAFETY: an output argument.
        let out = unsafe { check::out(info, "info") }?;
        *out = infos::add(Info::new())?;
        Ok(())
    }

    /// `MPI_Info_create_env`: a new info object with `MPI_INFO_ENV`'s pairs, the command line
    /// taken from `argc`/`argv` when they are given.
    fn MPI_Info_create_env / PMPI_Info_create_env(argc: c_int, argv: *mut *mut c_char, info: *mut abi::Info) {
        // SAFETY: `main`'s arguments, or none (MPI's contract).
        let args = unsafe { command_line(argc, argv) }?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(info, "info") }?;
        let env = match args {
            Some(args) => info::env_with_args(&args),
            None => info::env(),
        };
        *out = infos::add(env)?;
        Ok(())
    }

    /// `MPI_Info_set`: sets `key` to `value`, replacing its value if it is set (it keeps its
    /// place among the keys).
    fn MPI_Info_set / PMPI_Info_set(info: abi::Info, key: *const c_char, value: *const c_char) {
        infos::modify(info, |i| {
            // SAFETY: C strings (MPI's contract).
            let (k, v) = unsafe { (self::key(key)?, self::value(value)?) };
            i.set(k, v)
        })?;
        Ok(())
    }

    /// `MPI_Info_delete`: removes `key` (`MPI_ERR_INFO_NOKEY` if it is not set).
    fn MPI_Info_delete / PMPI_Info_delete(info: abi::Info, key: *const c_char) {
        // SAFETY: a C string (MPI's contract).
        infos::modify(info, |i| i.delete(unsafe { self::key(key) }?))?;
        Ok(())
    }

    /// `MPI_Info_get`: the value of `key`, cut to `valuelen` bytes (no error), and whether it
    /// is set.
    fn MPI_Info_get / PMPI_Info_get(
        info: abi::Info,
        key: *const c_char,
        valuelen: c_int,
        value: *mut c_char,
        flag: *mut c_int,
    ) {
        infos::read(info, |i| -> Result<()> {
            // SAFETY: a C string (MPI's contract).
            let k = unsafe { self::key(key) }?;
            let room = length(valuelen, "valuelen")?;
            if value.is_null() {
                return Err(Error::arg("value is a null pointer"));
            }
            // SAFETY: an output argument.
            let flag = unsafe { check::out(flag, "flag") }?;
            *flag = c_int::from(i.get(k).is_some());
            match i.get(k) {
                // SAFETY: `value` has `valuelen + 1` bytes (MPI's contract).
                Some(v) => unsafe { write_c(value, &v[..v.len().min(room)], "value") },
                None => Ok(()),
            }
        })??;
        Ok(())
    }

    /// `MPI_Info_get_string`: the value of `key` in a buffer of `*buflen` bytes (cut to fit,
    /// NUL included), the length it needs in `*buflen`, and whether it is set.
    fn MPI_Info_get_string / PMPI_Info_get_string(
        info: abi::Info,
        key: *const c_char,
        buflen: *mut c_int,
        value: *mut c_char,
        flag: *mut c_int,
    ) {
        infos::read(info, |i| -> Result<()> {
            // SAFETY: a C string (MPI's contract).
            let k = unsafe { self::key(key) }?;
            // SAFETY: an in-out argument.
            let buflen = unsafe { check::out(buflen, "buflen") }?;
            let room = length(*buflen, "*buflen")?;
            if room > 0 && value.is_null() {
                return Err(Error::arg("value is a null pointer"));
            }
            // SAFETY: an output argument.
            let flag = unsafe { check::out(flag, "flag") }?;
            *flag = c_int::from(i.get(k).is_some());
            if let Some(v) = i.get(k) {
                if room > 0 {
                    // SAFETY: `value` has `*buflen` bytes (MPI's contract).
                    unsafe { write_c(value, &v[..v.len().min(room - 1)], "value") }?;
                }
                *buflen = v.len() as c_int + 1;
            }
            Ok(())
        })??;
        Ok(())
    }

    /// `MPI_Info_get_valuelen`: the length of `key`'s value (NUL not counted), and whether it
    /// is set.
    fn MPI_Info_get_valuelen / PMPI_Info_get_valuelen(
        info: abi::Info,
        key: *const c_char,
        valuelen: *mut c_int,
        flag: *mut c_int,
    ) {
        infos::read(info, |i| -> Result<()> {
            // SAFETY: a C string (MPI's contract).
            let k = unsafe { self::key(key) }?;
            // SAFETY: output arguments.
            let (len, flag) = unsafe { (check::out(valuelen, "valuelen")?, check::out(flag, "flag")?) };
            *flag = c_int::from(i.get(k).is_some());
            if let Some(v) = i.get(k) {
                *len = v.len() as c_int;
            }
            Ok(())
        })??;
        Ok(())
    }

    /// `MPI_Info_get_nkeys`: how many keys are set.
    fn MPI_Info_get_nkeys / PMPI_Info_get_nkeys(info: abi::Info, nkeys: *mut c_int) {
        let n = infos::read(info, Info::len)?;
        // SAFETY: an output argument.
        *unsafe { check::out(nkeys, "nkeys") }? = n as c_int;
        Ok(())
    }

    /// `MPI_Info_get_nthkey`: key number `n`, from 0 in the order keys were first set
    /// (`MPI_ERR_ARG` unless `0 <= n < nkeys`).
    fn MPI_Info_get_nthkey / PMPI_Info_get_nthkey(info: abi::Info, n: c_int, key: *mut c_char) {
        infos::read(info, |i| -> Result<()> {
            let k = usize::try_from(n).ok().and_then(|n| i.nth_key(n)).ok_or_else(|| {
                Error::arg(format!("no key number {n}: the info has {} keys", i.len()))
            })?;
            // SAFETY: `key` has room for any key and its NUL (MPI's contract).
            unsafe { write_c(key, k, "key") }
        })??;
        Ok(())
    }

    /// `MPI_Info_dup`: a new info object with the same pairs, in the same order
    /// (`MPI_INFO_ENV` may be duplicated).
    fn MPI_Info_dup / PMPI_Info_dup(info: abi::Info, newinfo: *mut abi::Info) {
        let copy = infos::read(info, Info::dup)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(newinfo, "newinfo") }?;
        *out = infos::add(copy)?;
        Ok(())
    }

    /// `MPI_Info_free`: frees the object and sets the handle to `MPI_INFO_NULL`
    /// (`MPI_INFO_ENV` cannot be freed).
    fn MPI_Info_free / PMPI_Info_free(info: *mut abi::Info) {
        // SAFETY: an in-out argument.
        let h = unsafe { check::out(info, "info") }?;
        infos::free(*h)?;
        *h = abi::MPI_INFO_NULL;
        Ok(())
    }
}
