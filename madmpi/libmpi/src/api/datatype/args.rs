//! The C arguments of the datatype calls that `check` does not cover: input arrays sized by a
//! count, datatype arrays and names (block lengths of either width are `count`'s).
//!
//! Each check fails with the class MPICH 4.0.2 gives (a null array `MPI_ERR_ARG`, a negative
//! block length `MPI_ERR_COUNT`, a bad handle `MPI_ERR_TYPE`). Owns these checks only; it must not
//! build types.

use crate::state::State;
use madmpi::abi;
use madmpi::datatype::Datatype;
use madmpi::error::Error;
use std::ffi::{CStr, c_char};

/// The `n` elements of the input array `p` (MPI's `const T array[]`): `MPI_ERR_ARG` if it is
/// null or misaligned while `n > 0`. With `n == 0` the pointer is not used (it may be null).
///
/// # Safety
/// A non-null, aligned `p` must be valid for reads of `n` `T`s, not written during `'a`.
pub(super) unsafe fn input<'a, T>(p: *const T, n: usize, what: &str) -> Result<&'a [T], Error> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() || !p.is_aligned() {
        return Err(Error::arg(format!("{what} ({p:p}) is a null or misaligned pointer")));
    }
    // SAFETY: non-null and aligned; valid for `n` elements by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// The `n` elements of the output array `p`: as [`input`], for writes.
///
/// # Safety
/// A non-null, aligned `p` must be valid for writes of `n` `T`s, not accessed otherwise during
/// `'a`.
pub(super) unsafe fn output<'a, T>(p: *mut T, n: usize, what: &str) -> Result<&'a mut [T], Error> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() || !p.is_aligned() {
        return Err(Error::arg(format!("{what} ({p:p}) is a null or misaligned pointer")));
    }
    // SAFETY: non-null and aligned; valid for `n` elements by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// The number of elements of an array sized by a count already checked non-negative.
pub(super) fn len(count: i64) -> usize {
    usize::try_from(count).unwrap_or(0)
}

/// Address displacements (`MPI_Aint`, an `i64` on the LP64 targets of MPICH's ABI), as the
/// engine takes them.
pub(super) fn addresses(v: &[abi::Aint]) -> Vec<i64> {
    v.to_vec()
}

/// The datatypes of an array of handles: `MPI_ERR_TYPE` for the first invalid one.
pub(super) fn datatypes(st: &State, handles: &[abi::Datatype]) -> Result<Vec<Datatype>, Error> {
    handles
        .iter()
        .enumerate()
        .map(|(i, &h)| {
            st.datatype(h).map_err(|e| Error::datatype(format!("array_of_types[{i}]: {}", e.message())))
        })
        .collect()
}

/// A name argument: at most `MPI_MAX_OBJECT_NAME - 1` bytes are kept (as MPICH does); bytes that
/// are not UTF-8 become U+FFFD. `MPI_ERR_ARG` if null.
///
/// # Safety
/// A non-null `p` must point to a NUL-terminated string.
pub(super) unsafe fn name(p: *const c_char) -> Result<String, Error> {
    if p.is_null() {
        return Err(Error::arg("the name is a null pointer"));
    }
    // SAFETY: a NUL-terminated string (the caller's contract).
    let bytes = unsafe { CStr::from_ptr(p) }.to_bytes();
    let keep = bytes.len().min(abi::MPI_MAX_OBJECT_NAME as usize - 1);
    Ok(String::from_utf8_lossy(&bytes[..keep]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use madmpi::error::ErrorClass;
    use std::ffi::c_int;

    #[test]
    fn arrays_lengths_and_names() {
        let v = [1, 2, 3];
        // SAFETY: `v` has 3 elements; null pointers with n == 0 are not read; null with n > 0
        // is rejected before use.
        unsafe {
            assert_eq!(input(v.as_ptr(), 3, "v").unwrap(), &v);
            assert!(input::<c_int>(std::ptr::null(), 0, "v").unwrap().is_empty());
            assert_eq!(input::<c_int>(std::ptr::null(), 1, "v").unwrap_err().class(), ErrorClass::Arg);
            assert_eq!(output::<c_int>(std::ptr::null_mut(), 2, "v").unwrap_err().class(), ErrorClass::Arg);
            assert_eq!(name(std::ptr::null()).unwrap_err().class(), ErrorClass::Arg);
            let long = std::ffi::CString::new("x".repeat(300)).unwrap();
            assert_eq!(name(long.as_ptr()).unwrap().len(), 127);
        }
        assert_eq!(len(-1), 0);
    }
}
