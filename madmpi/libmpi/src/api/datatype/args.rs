//! The C arguments of the datatype calls that `check` does not cover: input arrays sized by a
//! count, block lengths, datatype arrays and names.
//!
//! Each check fails with the class MPICH 4.0.2 gives (a null array `MPI_ERR_ARG`, a negative
//! block length `MPI_ERR_COUNT`, a bad handle `MPI_ERR_TYPE`). Owns these checks only; it must not
//! build types.

use crate::state::State;
use madmpi::abi;
use madmpi::datatype::Datatype;
use madmpi::error::Error;
use std::ffi::{CStr, c_char, c_int};

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

/// Block lengths: `MPI_ERR_COUNT` for a negative one.
pub(super) fn blocklengths(bls: &[c_int]) -> Result<Vec<i64>, Error> {
    bls.iter()
        .enumerate()
        .map(|(i, &b)| {
            if b < 0 {
                Err(Error::count(format!("negative block length {b} at index {i}")))
            } else {
                Ok(i64::from(b))
            }
        })
        .collect()
}

/// Integer displacements, widened.
pub(super) fn ints(v: &[c_int]) -> Vec<i64> {
    v.iter().map(|&x| i64::from(x)).collect()
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

/// A count result as a C `int`: `MPI_ERR_COUNT` if it does not fit.
pub(super) fn to_int(v: usize, what: &str) -> Result<c_int, Error> {
    c_int::try_from(v).map_err(|_| Error::count(format!("{what} ({v}) does not fit in an int")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use madmpi::error::ErrorClass;

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
        assert_eq!(blocklengths(&[1, -1]).unwrap_err().class(), ErrorClass::Count);
        assert_eq!(blocklengths(&[0, 2]).unwrap(), vec![0, 2]);
        assert_eq!(to_int(1 << 40, "n").unwrap_err().class(), ErrorClass::Count);
        assert_eq!(len(-1), 0);
    }
}
