//! Argument checks shared by the exported functions, each failing with the error class MPI
//! (and MPICH) gives that argument: counts `MPI_ERR_COUNT`, ranks `MPI_ERR_RANK`, tags
//! `MPI_ERR_TAG`, a null buffer with data `MPI_ERR_BUFFER`, null or misaligned output pointers
//! `MPI_ERR_ARG`; string arguments are read with a bound ([`c_string`]). Handles are checked where they are resolved (`comms`, `datatypes`,
//! `requests`). Callers run the checks in the order of the function's parameters, after the
//! communicator, as MPICH does.
//!
//! Owns these checks; it must not resolve handles or communicate.

use madmpi::abi::{self, Status};
use madmpi::comm::Comm;
use madmpi::comm::tags::TAG_UB;
use madmpi::datatype::Datatype;
use madmpi::error::Error;
use madmpi::p2p::{From, Rank, Tag};
use std::ffi::{c_char, c_int, c_void};

/// A C integer argument of either width: `int` in the MPI-3 calls, `MPI_Count` and `MPI_Aint`
/// (both `int64_t` in MPICH's ABI) in their large-count `_c` forms (MPI 4.0). A call with both
/// forms has one body generic over it (see `api::family`). A result that does not fit the `int`
/// form's output is `MPI_UNDEFINED`, as MPI says for counts and sizes.
pub(crate) trait CInt: Copy + Into<i64> + std::fmt::Display {
    /// Whether this is the `_c` forms' `MPI_Count`.
    const LARGE: bool;

    /// `v` in this width, if it fits.
    fn narrow(v: i64) -> Option<Self>;

    /// The value, widened.
    fn wide(self) -> i64 {
        self.into()
    }

    /// A non-negative element count: `MPI_ERR_COUNT` if negative.
    fn count(self) -> Result<i64, Error> {
        let n = self.wide();
        if n < 0 {
            return Err(Error::count(format!("negative count ({self})")));
        }
        Ok(n)
    }

    /// A count or size result: `MPI_UNDEFINED` when `v` is unknown or does not fit.
    fn or_undefined(v: Option<u64>) -> Self {
        v.and_then(|n| i64::try_from(n).ok())
            .and_then(Self::narrow)
            .or_else(|| Self::narrow(i64::from(abi::MPI_UNDEFINED)))
            .expect("MPI_UNDEFINED fits every width")
    }

    /// A type built by a constructor of this width (marked when built by a `_c` form).
    fn built(t: Datatype) -> Datatype {
        if Self::LARGE { t.with_large_counts() } else { t }
    }
}

impl CInt for c_int {
    const LARGE: bool = false;
    fn narrow(v: i64) -> Option<Self> {
        c_int::try_from(v).ok()
    }
}

impl CInt for abi::Count {
    const LARGE: bool = true;
    fn narrow(v: i64) -> Option<Self> {
        Some(v)
    }
}

/// A non-negative element count, of either width (`MPI_ERR_COUNT` if negative).
pub(crate) fn count(n: impl CInt) -> Result<i64, Error> {
    n.count()
}

/// A displacement (in elements or bytes), of either width.
pub(crate) fn displacement(d: impl CInt) -> Result<isize, Error> {
    let d: i64 = d.into();
    isize::try_from(d).map_err(|_| Error::arg(format!("displacement {d} out of the address space")))
}

/// A destination: a rank of `comm` or `MPI_PROC_NULL`.
pub(crate) fn dest(comm: &Comm, r: c_int) -> Result<Rank, Error> {
    match r {
        abi::MPI_PROC_NULL => Ok(Rank::ProcNull),
        _ => Ok(Rank::Rank(rank_in(comm, r)?)),
    }
}

/// A source: a rank of `comm`, `MPI_ANY_SOURCE` or `MPI_PROC_NULL`.
pub(crate) fn source(comm: &Comm, r: c_int) -> Result<From, Error> {
    match r {
        abi::MPI_PROC_NULL => Ok(From::ProcNull),
        abi::MPI_ANY_SOURCE => Ok(From::Any),
        _ => Ok(From::Rank(rank_in(comm, r)?)),
    }
}

/// A rank point-to-point names (of the remote group on an intercommunicator).
fn rank_in(comm: &Comm, r: c_int) -> Result<u32, Error> {
    u32::try_from(r)
        .ok()
        .filter(|&r| r < comm.peer_size())
        .ok_or_else(|| Error::rank(format!("invalid rank {r} (communicator of size {})", comm.peer_size())))
}

/// The tag of a send: `0..=MPI_TAG_UB`.
pub(crate) fn send_tag(t: c_int) -> Result<i32, Error> {
    if !(0..=TAG_UB).contains(&t) {
        return Err(Error::tag(format!("invalid tag {t} (tags are 0 to {TAG_UB})")));
    }
    Ok(t)
}

/// The tag of a receive or probe: `0..=MPI_TAG_UB` or `MPI_ANY_TAG`.
pub(crate) fn recv_tag(t: c_int) -> Result<Tag, Error> {
    match t {
        abi::MPI_ANY_TAG => Ok(Tag::Any),
        _ => send_tag(t).map(Tag::Tag),
    }
}

/// A communication buffer: null is an error when it would be read or written at offset zero,
/// that is when there is data and the type's first byte is at its start. A null buffer with a
/// type of absolute addresses (`MPI_BOTTOM`, true lower bound not 0) is fine.
pub(crate) fn buffer(buf: *const c_void, count: i64, ty: &Datatype) -> Result<(), Error> {
    if buf.is_null() && count > 0 && ty.size() > 0 && (ty.as_predefined().is_some() || ty.true_lb() == 0) {
        return Err(Error::buffer(format!("null buffer for {count} elements")));
    }
    Ok(())
}

/// An output argument the call writes one `T` to: `MPI_ERR_ARG` if null or misaligned.
///
/// # Safety
/// A non-null, aligned `p` must be valid for writes of a `T` for `'a` (the caller's promise,
/// as MPI states for output arguments).
pub(crate) unsafe fn out<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T, Error> {
    if p.is_null() {
        return Err(Error::arg(format!("{what} is a null pointer")));
    }
    if !p.is_aligned() {
        return Err(Error::arg(format!("{what} ({p:p}) is misaligned")));
    }
    // SAFETY: non-null and aligned; valid for writes by the caller's contract.
    Ok(unsafe { &mut *p })
}

/// An array argument of `n > 0` elements the call reads and writes: `MPI_ERR_ARG` if null or
/// misaligned.
///
/// # Safety
/// A non-null, aligned `p` must be valid for reads and writes of `n` `T`s for `'a`.
pub(crate) unsafe fn array<'a, T>(p: *mut T, n: usize, what: &str) -> Result<&'a mut [T], Error> {
    if p.is_null() || !p.is_aligned() {
        return Err(Error::arg(format!("{what} ({p:p}) is a null or misaligned pointer")));
    }
    // SAFETY: non-null and aligned; valid for `n` elements by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// An input array of `n` elements the call only reads: `MPI_ERR_ARG` if null or misaligned;
/// with `n == 0` nothing is read and any pointer (null too) gives an empty slice.
///
/// # Safety
/// For `n > 0`, a non-null, aligned `p` must be valid for reads of `n` `T`s for `'a`.
pub(crate) unsafe fn array_in<'a, T>(p: *const T, n: usize, what: &str) -> Result<&'a [T], Error> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() || !p.is_aligned() {
        return Err(Error::arg(format!("{what} ({p:p}) is a null or misaligned pointer")));
    }
    // SAFETY: non-null and aligned; valid for `n` elements by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// A string argument read at most `max + 1` bytes far: `None` if `p` is null, `Some(Err(()))`
/// if the string is longer than `max` bytes, else its bytes (the NUL not included). A string
/// too long is never read to its end.
///
/// # Safety
/// A non-null `p` must point to a NUL-terminated string valid for reads for `'a`.
pub(crate) unsafe fn c_string<'a>(p: *const c_char, max: usize) -> Option<Result<&'a [u8], ()>> {
    if p.is_null() {
        return None;
    }
    let mut n = 0;
    loop {
        // SAFETY: `p + n` is within the string: every byte before it is not its NUL.
        if unsafe { *p.add(n) } == 0 {
            break;
        }
        if n == max {
            return Some(Err(()));
        }
        n += 1;
    }
    // SAFETY: the `n` bytes before the NUL, read above.
    Some(Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), n) }))
}

/// A status argument: `None` for `MPI_STATUS_IGNORE`; `MPI_ERR_ARG` if null or misaligned.
///
/// # Safety
/// As [`out`].
pub(crate) unsafe fn status<'a>(p: *mut Status) -> Result<Option<&'a mut Status>, Error> {
    if p as usize == abi::MPI_STATUS_IGNORE {
        return Ok(None);
    }
    // SAFETY: the caller's contract.
    unsafe { out(p, "the status") }.map(Some)
}

/// A status argument that is read (`MPI_Get_count`): `MPI_STATUS_IGNORE` cannot be read.
///
/// # Safety
/// A non-null, aligned `p` other than `MPI_STATUS_IGNORE` must be valid for reads for `'a`.
pub(crate) unsafe fn status_in<'a>(p: *const Status) -> Result<&'a Status, Error> {
    if p as usize == abi::MPI_STATUS_IGNORE {
        return Err(Error::arg("MPI_STATUS_IGNORE is no status to read"));
    }
    if p.is_null() || !p.is_aligned() {
        return Err(Error::arg(format!("the status ({p:p}) is a null or misaligned pointer")));
    }
    // SAFETY: non-null, aligned, not the sentinel; valid for reads by the caller's contract.
    Ok(unsafe { &*p })
}

#[cfg(test)]
mod tests {
    use super::*;
    use madmpi::datatype::Predefined;
    use madmpi::error::ErrorClass;

    #[test]
    fn counts_tags_and_buffers() {
        assert_eq!(count(0).unwrap(), 0);
        assert_eq!(count(-1).unwrap_err().class(), ErrorClass::Count);
        assert_eq!(send_tag(TAG_UB).unwrap(), TAG_UB);
        assert_eq!(send_tag(-1).unwrap_err().class(), ErrorClass::Tag);
        assert_eq!(recv_tag(abi::MPI_ANY_TAG).unwrap(), Tag::Any);
        assert_eq!(recv_tag(-2).unwrap_err().class(), ErrorClass::Tag);
        let int = Datatype::predefined(Predefined::Int);
        let null = std::ptr::null();
        assert_eq!(buffer(null, 1, &int).unwrap_err().class(), ErrorClass::Buffer);
        assert!(buffer(null, 0, &int).is_ok());
        // MPI_BOTTOM with absolute addresses: a type whose data starts away from 0.
        let at = Datatype::hindexed(&[1], &[4096], &int).unwrap();
        assert!(buffer(null, 1, &at).is_ok());
    }

    #[test]
    fn output_pointers() {
        let mut x = 0i32;
        // SAFETY: `x` is a valid i32.
        unsafe { *out(&mut x, "x").unwrap() = 5 };
        assert_eq!(x, 5);
        // SAFETY: null and misaligned pointers are rejected before any use.
        unsafe {
            assert_eq!(out::<i32>(std::ptr::null_mut(), "x").unwrap_err().class(), ErrorClass::Arg);
            let odd = (&mut x as *mut i32).cast::<u8>().add(1).cast::<i32>();
            assert_eq!(out(odd, "x").unwrap_err().class(), ErrorClass::Arg);
            assert!(status(abi::MPI_STATUS_IGNORE as *mut Status).unwrap().is_none());
            assert!(array_in::<i32>(std::ptr::null(), 0, "a").unwrap().is_empty());
            assert_eq!(array_in::<i32>(std::ptr::null(), 1, "a").unwrap_err().class(), ErrorClass::Arg);
            assert_eq!(array_in(&x, 1, "a").unwrap(), [5]);
            assert_eq!(status(std::ptr::null_mut()).unwrap_err().class(), ErrorClass::Arg);
            assert_eq!(c_string(c"abc".as_ptr(), 3), Some(Ok(&b"abc"[..])));
            assert_eq!(c_string(c"abcd".as_ptr(), 3), Some(Err(())));
            assert_eq!(c_string(c"".as_ptr(), 0), Some(Ok(&b""[..])));
            assert_eq!(c_string(std::ptr::null(), 3), None);
            assert_eq!(
                status_in(abi::MPI_STATUS_IGNORE as *const Status).unwrap_err().class(),
                ErrorClass::Arg
            );
        }
    }
}
