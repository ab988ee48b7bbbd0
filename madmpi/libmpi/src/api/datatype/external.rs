//! `MPI_Pack_external`, `MPI_Unpack_external` and `MPI_Pack_external_size`, with their `_c`
//! forms (one body each, generic over the width of the element count).
//!
//! The data representation is always "external32" (the engine's `external32`): MPI requires no
//! other, and MPICH 4.0.2 ignores the `datarep` string too (a program passing "native" gets
//! external32 bytes from both); a null `datarep` is `MPI_ERR_ARG`. Errors go to
//! `MPI_COMM_WORLD`'s handler (no communicator is involved). Checks are those of `MPI_Pack`
//! (see [`super::pack`]): no write past a buffer, `MPI_ERR_TRUNCATE` instead. Owns the C side of
//! these calls only.

use super::pack::{buffer_size, position_back, position_of, user_buffer};
use crate::api::family::widths;
use crate::check;
use crate::check::CInt;
use crate::errors::Outcome;
use crate::state::state;
use madmpi::abi;
use madmpi::error::Error;
use std::ffi::{c_char, c_void};

/// The `datarep` argument: anything but null (see the module's documentation).
fn datarep(p: *const c_char) -> Result<(), Error> {
    if p.is_null() {
        return Err(Error::arg("datarep is a null pointer (\"external32\" expected)"));
    }
    Ok(())
}

/// `MPI_Pack_external(_c)`.
///
/// # Safety
/// MPI's contract: the type map of `incount` elements readable from `inbuf`, `outbuf` valid for
/// `outsize` bytes, `position` as [`check::out`].
unsafe fn pack_external<C: CInt>(
    rep: *const c_char,
    inbuf: *const c_void,
    incount: C,
    datatype: abi::Datatype,
    outbuf: *mut c_void,
    outsize: i64,
    position: *mut i64,
) -> Outcome {
    let st = state()?;
    datarep(rep)?;
    let count = incount.count()?;
    let ty = st.committed_datatype(datatype)?;
    let outsize = buffer_size(outsize, "outsize")?;
    // SAFETY: null and misaligned pointers are rejected before use; a valid one is readable and writable
    // (this function's `# Safety`).
    let position = unsafe { check::out(position, "position") }?;
    let n =
        usize::try_from(ty.external32_size(count)?).map_err(|_| Error::arg("the packed size overflows"))?;
    user_buffer(inbuf, n, &ty, "inbuf")?;
    if n == 0 {
        return Ok(());
    }
    if outbuf.is_null() {
        return Err(Error::arg(format!("outbuf is a null pointer for {n} bytes of data")).into());
    }
    let mut at = position_of(*position, outsize)?;
    // SAFETY: `outbuf` is non-null and valid for `outsize` bytes of writes (the caller's
    // contract); the packed buffer is plain bytes, distinct from the data packed into it.
    let out = unsafe { std::slice::from_raw_parts_mut(outbuf.cast::<u8>(), outsize) };
    // SAFETY: the type map of `incount` elements addresses readable memory from `inbuf` (the
    // caller's contract), not overlapping `outbuf`.
    unsafe { ty.pack_external32(inbuf.cast(), count, out, &mut at) }?;
    *position = position_back(at);
    Ok(())
}

/// `MPI_Unpack_external(_c)`.
///
/// # Safety
/// MPI's contract: `inbuf` valid for `insize` bytes, the type map of `outcount` elements
/// writable from `outbuf`, `position` as [`check::out`].
unsafe fn unpack_external<C: CInt>(
    rep: *const c_char,
    inbuf: *const c_void,
    insize: i64,
    position: *mut i64,
    outbuf: *mut c_void,
    outcount: C,
    datatype: abi::Datatype,
) -> Outcome {
    let st = state()?;
    datarep(rep)?;
    let insize = buffer_size(insize, "insize")?;
    // SAFETY: null and misaligned pointers are rejected before use; a valid one is readable and writable
    // (this function's `# Safety`).
    let position = unsafe { check::out(position, "position") }?;
    let count = outcount.count()?;
    let ty = st.committed_datatype(datatype)?;
    let n =
        usize::try_from(ty.external32_size(count)?).map_err(|_| Error::arg("the packed size overflows"))?;
    user_buffer(outbuf, n, &ty, "outbuf")?;
    if n == 0 {
        return Ok(());
    }
    if inbuf.is_null() {
        return Err(Error::arg(format!("inbuf is a null pointer for {n} bytes of data")).into());
    }
    let mut at = position_of(*position, insize)?;
    // SAFETY: `inbuf` is non-null and valid for `insize` bytes of reads (the caller's contract),
    // not written while this call runs.
    let input = unsafe { std::slice::from_raw_parts(inbuf.cast::<u8>(), insize) };
    // SAFETY: the type map of `outcount` elements addresses writable memory from `outbuf` (the
    // caller's contract), not overlapping `inbuf`.
    unsafe { ty.unpack_external32(input, &mut at, outbuf.cast(), count) }?;
    *position = position_back(at);
    Ok(())
}

/// `MPI_Pack_external_size(_c)`: the exact size in external32.
///
/// # Safety
/// `size` as [`check::out`].
unsafe fn pack_external_size<C: CInt>(
    rep: *const c_char,
    incount: C,
    datatype: abi::Datatype,
    size: *mut i64,
) -> Outcome {
    let st = state()?;
    datarep(rep)?;
    let count = incount.count()?;
    let ty = st.committed_datatype(datatype)?;
    // SAFETY: null and misaligned pointers are rejected before use; a valid one is writable (this function's
    // `# Safety`).
    let size = unsafe { check::out(size, "size") }?;
    *size = i64::try_from(ty.external32_size(count)?).map_err(|_| Error::arg("the packed size overflows"))?;
    Ok(())
}

widths! {
    /// `incount` elements at `inbuf` in external32 into `outbuf` from `*position`, which
    /// advances.
    (
        datarep_: *const c_char,
        inbuf: *const c_void,
        incount: Count,
        datatype: abi::Datatype,
        outbuf: *mut c_void,
        outsize: abi::Aint,
        position: *mut abi::Aint,
    ) {
        // SAFETY: the caller vouches for `incount` elements at `inbuf` and `outsize` bytes at `outbuf`; the
        // body checks the rest.
        unsafe { pack_external(datarep_, inbuf, incount, datatype, outbuf, outsize, position) }
    }
    int MPI_Pack_external / PMPI_Pack_external;
    large MPI_Pack_external_c / PMPI_Pack_external_c;

    /// `outcount` elements in external32 from `inbuf` at `*position`, which advances, into
    /// `outbuf`.
    (
        datarep_: *const c_char,
        inbuf: *const c_void,
        insize: abi::Aint,
        position: *mut abi::Aint,
        outbuf: *mut c_void,
        outcount: Count,
        datatype: abi::Datatype,
    ) {
        // SAFETY: the caller vouches for `insize` bytes at `inbuf` and `outcount` elements at `outbuf`; the
        // body checks the rest.
        unsafe { unpack_external(datarep_, inbuf, insize, position, outbuf, outcount, datatype) }
    }
    int MPI_Unpack_external / PMPI_Unpack_external;
    large MPI_Unpack_external_c / PMPI_Unpack_external_c;

    /// The exact size of `incount` elements in external32.
    (datarep_: *const c_char, incount: Count, datatype: abi::Datatype, size: *mut abi::Aint) {
        // SAFETY: `size` is the caller's output (checked in the body).
        unsafe { pack_external_size(datarep_, incount, datatype, size) }
    }
    int MPI_Pack_external_size / PMPI_Pack_external_size;
    large MPI_Pack_external_size_c / PMPI_Pack_external_size_c;
}
