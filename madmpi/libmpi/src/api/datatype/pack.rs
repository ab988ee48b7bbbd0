//! `MPI_Pack`, `MPI_Unpack`, `MPI_Pack_size`, `MPI_Get_count`, `MPI_Get_elements(_x)`, and
//! their large-count `_c` forms (one body each, generic over `CInt`).
//!
//! The pack calls check in MPICH 4.0.2's order (communicator, counts and sizes, position,
//! datatype, buffers) and report to the communicator's error handler. Where MPICH checks
//! nothing and overruns memory, these calls fail instead: a negative position or one beyond the
//! buffer, or data that does not fit, is `MPI_ERR_TRUNCATE` (the engine's class; MPICH 4.0.2
//! writes past the buffer), a null buffer with data `MPI_ERR_ARG` (MPICH crashes). A result too
//! large for the `int` form is `MPI_UNDEFINED`, as MPICH gives. Owns the C side of these calls
//! only.

use crate::api::family::widths;
use crate::check;
use crate::check::CInt;
use crate::errors::{On, Outcome};
use crate::state::state;
use madmpi::abi;
use madmpi::datatype::Datatype;
use madmpi::error::Error;
use std::ffi::c_void;

/// A user buffer the type map addresses: null is `MPI_ERR_ARG` when bytes would be accessed
/// from it (not for `MPI_BOTTOM` with a type of absolute addresses, whose data starts away
/// from 0).
pub(super) fn user_buffer(buf: *const c_void, bytes: usize, ty: &Datatype, what: &str) -> Result<(), Error> {
    if buf.is_null() && bytes > 0 && (ty.as_predefined().is_some() || ty.true_lb() == 0) {
        return Err(Error::arg(format!("{what} is a null pointer for {bytes} bytes of data")));
    }
    Ok(())
}

/// The size of a packed buffer: `MPI_ERR_ARG` if negative.
pub(super) fn buffer_size<C: CInt>(n: C, what: &str) -> Result<usize, Error> {
    usize::try_from(n.wide()).map_err(|_| Error::arg(format!("negative {what} ({n})")))
}

/// A position in a packed buffer: `MPI_ERR_TRUNCATE` if negative (MPICH does not check).
pub(super) fn position_of<C: CInt>(p: C, size: usize) -> Result<usize, Error> {
    usize::try_from(p.wide())
        .map_err(|_| Error::truncate(format!("negative position ({p}) in a {size}-byte buffer")))
}

/// A position after packing, `at <= size` where `size` came from an argument of this width.
pub(super) fn position_back<C: CInt>(at: usize) -> C {
    i64::try_from(at).ok().and_then(C::narrow).expect("within the buffer size given in this width")
}

/// The received byte count of a status (a negative count, never written by MPI, reads as
/// "more than anything").
fn received(status: &abi::Status) -> u64 {
    u64::try_from(status.count()).unwrap_or(u64::MAX)
}

/// `MPI_Pack(_c)`: `incount` elements at `inbuf` into `outbuf` from `*position`, which advances.
///
/// # Safety
/// MPI's contract: the type map of `incount` elements readable from `inbuf`, `outbuf` valid for
/// `outsize` bytes, `position` as [`check::out`].
unsafe fn pack<C: CInt>(
    inbuf: *const c_void,
    incount: C,
    datatype: abi::Datatype,
    outbuf: *mut c_void,
    outsize: C,
    position: *mut C,
    comm: abi::Comm,
) -> Outcome {
    let st = state()?;
    let c = st.comm(comm)?;
    let count = incount.count().on(&c)?;
    let ty = st.committed_datatype(datatype).on(&c)?;
    let outsize = buffer_size(outsize, "outsize").on(&c)?;
    // SAFETY: null and misaligned pointers are rejected before use; a valid one is readable and writable
    // (this function's `# Safety`).
    let position = unsafe { check::out(position, "position") }.on(&c)?;
    let n = ty.pack_size(count).map_err(Error::from).on(&c)?;
    user_buffer(inbuf, n, &ty, "inbuf").on(&c)?;
    if n == 0 {
        return Ok(());
    }
    if outbuf.is_null() {
        return Err(Error::arg(format!("outbuf is a null pointer for {n} bytes of data"))).on(&c);
    }
    let mut at = position_of(*position, outsize).on(&c)?;
    // SAFETY: `outbuf` is non-null and valid for `outsize` bytes of writes (the caller's
    // contract); the packed buffer is plain bytes, distinct from the data packed into it.
    let out = unsafe { std::slice::from_raw_parts_mut(outbuf.cast::<u8>(), outsize) };
    // SAFETY: the type map of `incount` elements addresses readable memory from `inbuf` (the
    // caller's contract), not overlapping `outbuf`.
    unsafe { ty.pack(inbuf.cast(), count, out, &mut at) }.map_err(Error::from).on(&c)?;
    *position = position_back(at);
    Ok(())
}

/// `MPI_Unpack(_c)`: `outcount` elements from `inbuf` at `*position`, which advances, into
/// `outbuf`.
///
/// # Safety
/// MPI's contract: `inbuf` valid for `insize` bytes, the type map of `outcount` elements
/// writable from `outbuf`, `position` as [`check::out`].
unsafe fn unpack<C: CInt>(
    inbuf: *const c_void,
    insize: C,
    position: *mut C,
    outbuf: *mut c_void,
    outcount: C,
    datatype: abi::Datatype,
    comm: abi::Comm,
) -> Outcome {
    let st = state()?;
    let c = st.comm(comm)?;
    let insize = buffer_size(insize, "insize").on(&c)?;
    // SAFETY: null and misaligned pointers are rejected before use; a valid one is readable and writable
    // (this function's `# Safety`).
    let position = unsafe { check::out(position, "position") }.on(&c)?;
    let count = outcount.count().on(&c)?;
    let ty = st.committed_datatype(datatype).on(&c)?;
    let n = ty.pack_size(count).map_err(Error::from).on(&c)?;
    user_buffer(outbuf, n, &ty, "outbuf").on(&c)?;
    if n == 0 {
        return Ok(());
    }
    if inbuf.is_null() {
        return Err(Error::arg(format!("inbuf is a null pointer for {n} bytes of data"))).on(&c);
    }
    let mut at = position_of(*position, insize).on(&c)?;
    // SAFETY: `inbuf` is non-null and valid for `insize` bytes of reads (the caller's contract),
    // not written while this call runs.
    let input = unsafe { std::slice::from_raw_parts(inbuf.cast::<u8>(), insize) };
    // SAFETY: the type map of `outcount` elements addresses writable memory from `outbuf` (the
    // caller's contract), not overlapping `inbuf`.
    unsafe { ty.unpack(input, &mut at, outbuf.cast(), count) }.map_err(Error::from).on(&c)?;
    *position = position_back(at);
    Ok(())
}

/// `MPI_Pack_size(_c)`: an upper bound of the bytes `MPI_Pack` writes (here exactly them).
///
/// # Safety
/// `size` as [`check::out`].
unsafe fn pack_size<C: CInt>(incount: C, datatype: abi::Datatype, comm: abi::Comm, size: *mut C) -> Outcome {
    let st = state()?;
    let c = st.comm(comm)?;
    let count = incount.count().on(&c)?;
    let ty = st.committed_datatype(datatype).on(&c)?;
    // SAFETY: null and misaligned pointers are rejected before use; a valid one is writable (this function's
    // `# Safety`).
    let size = unsafe { check::out(size, "size") }.on(&c)?;
    *size = C::or_undefined(ty.pack_size(count).ok().map(|n| n as u64));
    Ok(())
}

/// Which count of a status.
#[derive(Clone, Copy)]
enum Received {
    /// `MPI_Get_count`: whole elements of the type.
    Elements,
    /// `MPI_Get_elements`: basic elements.
    Basic,
}

/// `MPI_Get_count(_c)` and `MPI_Get_elements(_x, _c)`: `MPI_UNDEFINED` if the data is not a
/// whole number of what is counted, or beyond the output's width.
///
/// # Safety
/// `status` as [`check::status_in`], `count` as [`check::out`].
unsafe fn get_count<C: CInt>(
    what: Received,
    status: *const abi::Status,
    datatype: abi::Datatype,
    count: *mut C,
) -> Outcome {
    let st = state()?;
    // SAFETY: an input argument (the caller's contract).
    let status = unsafe { check::status_in(status) }?;
    let ty = match what {
        Received::Elements => st.datatype(datatype)?,
        Received::Basic => st.committed_datatype(datatype)?,
    };
    // SAFETY: null and misaligned pointers are rejected before use; a valid one is writable (this function's
    // `# Safety`).
    let count = unsafe { check::out(count, "count") }?;
    let bytes = received(status);
    *count = C::or_undefined(match what {
        Received::Elements => ty.get_count(bytes),
        Received::Basic => ty.get_elements(bytes),
    });
    Ok(())
}

widths! {
    /// `incount` elements at `inbuf` packed into `outbuf` from `*position`, which advances.
    (
        inbuf: *const c_void,
        incount: Count,
        datatype: abi::Datatype,
        outbuf: *mut c_void,
        outsize: Count,
        position: *mut Count,
        comm: abi::Comm,
    ) {
        // SAFETY: MPI_Pack's caller vouches for `incount` elements at `inbuf` and `outsize` bytes at
        // `outbuf`; the body checks the rest.
        unsafe { pack(inbuf, incount, datatype, outbuf, outsize, position, comm) }
    }
    int MPI_Pack / PMPI_Pack;
    large MPI_Pack_c / PMPI_Pack_c;

    /// `outcount` elements unpacked from `inbuf` at `*position`, which advances, into `outbuf`.
    (
        inbuf: *const c_void,
        insize: Count,
        position: *mut Count,
        outbuf: *mut c_void,
        outcount: Count,
        datatype: abi::Datatype,
        comm: abi::Comm,
    ) {
        // SAFETY: MPI_Unpack's caller vouches for `insize` bytes at `inbuf` and `outcount` elements at
        // `outbuf`; the body checks the rest.
        unsafe { unpack(inbuf, insize, position, outbuf, outcount, datatype, comm) }
    }
    int MPI_Unpack / PMPI_Unpack;
    large MPI_Unpack_c / PMPI_Unpack_c;

    /// An upper bound of the bytes `incount` elements take packed.
    (incount: Count, datatype: abi::Datatype, comm: abi::Comm, size: *mut Count) {
        // SAFETY: `size` is the caller's output (checked in the body).
        unsafe { pack_size(incount, datatype, comm, size) }
    }
    int MPI_Pack_size / PMPI_Pack_size;
    large MPI_Pack_size_c / PMPI_Pack_size_c;

    /// Whole elements of `datatype` received, else `MPI_UNDEFINED`.
    (status: *const abi::Status, datatype: abi::Datatype, count: *mut Count) {
        // SAFETY: `status` is the caller's received status and `count` its output; the body checks both.
        unsafe { get_count(Received::Elements, status, datatype, count) }
    }
    int MPI_Get_count / PMPI_Get_count;
    large MPI_Get_count_c / PMPI_Get_count_c;

    /// Basic elements received (`MPI_UNDEFINED` if the data ends inside one, or beyond an `int`
    /// in the `int` form).
    (status: *const abi::Status, datatype: abi::Datatype, count: *mut Count) {
        // SAFETY: `status` is the caller's received status and `count` its output; the body checks both.
        unsafe { get_count(Received::Basic, status, datatype, count) }
    }
    int MPI_Get_elements / PMPI_Get_elements;
    large MPI_Get_elements_x / PMPI_Get_elements_x, MPI_Get_elements_c / PMPI_Get_elements_c;
}

#[cfg(test)]
mod tests {
    use super::*;
    use madmpi::datatype::Predefined;
    use madmpi::error::ErrorClass;

    #[test]
    fn buffers_sizes_positions() {
        let int = Datatype::predefined(Predefined::Int);
        assert_eq!(user_buffer(std::ptr::null(), 4, &int, "b").unwrap_err().class(), ErrorClass::Arg);
        assert!(user_buffer(std::ptr::null(), 0, &int, "b").is_ok());
        let absolute = Datatype::hindexed(&[1], &[4096], &int).unwrap();
        assert!(user_buffer(std::ptr::null(), 4, &absolute, "b").is_ok());
        assert_eq!(buffer_size(-1, "outsize").unwrap_err().class(), ErrorClass::Arg);
        assert_eq!(buffer_size(1i64 << 40, "outsize").unwrap(), 1 << 40);
        assert_eq!(position_of(-1i64, 8).unwrap_err().class(), ErrorClass::Truncate);
        assert_eq!(position_of(3, 8).unwrap(), 3);
        assert_eq!(position_back::<i64>(1 << 33), 1 << 33);
    }
}
