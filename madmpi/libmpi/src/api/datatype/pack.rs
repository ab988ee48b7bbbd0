//! `MPI_Pack`, `MPI_Unpack`, `MPI_Pack_size`, `MPI_Get_elements` and `MPI_Get_elements_x`.
//!
//! The pack calls check in MPICH 4.0.2's order (communicator, counts and sizes, position,
//! datatype, buffers) and report to the communicator's error handler. Where MPICH checks
//! nothing and overruns memory, these calls fail instead: a negative position or one beyond the
//! buffer, or data that does not fit, is `MPI_ERR_TRUNCATE` (the engine's class; MPICH 4.0.2
//! writes past the buffer), a null buffer with data `MPI_ERR_ARG` (MPICH crashes). An `int`
//! result too large is `MPI_UNDEFINED`, as MPICH gives. Owns the C side of these calls only.

use crate::check;
use crate::errors::On;
use crate::export::export;
use crate::state::state;
use madmpi::abi;
use madmpi::datatype::Datatype;
use madmpi::error::Error;
use std::ffi::{c_int, c_void};

/// A user buffer the type map addresses: null is `MPI_ERR_ARG` when bytes would be accessed
/// from it (not for `MPI_BOTTOM` with a type of absolute addresses, whose data starts away
/// from 0).
fn user_buffer(buf: *const c_void, bytes: usize, ty: &Datatype, what: &str) -> Result<(), Error> {
    if buf.is_null() && bytes > 0 && (ty.as_predefined().is_some() || ty.true_lb() == 0) {
        return Err(Error::arg(format!("{what} is a null pointer for {bytes} bytes of data")));
    }
    Ok(())
}

/// The size of a packed buffer: `MPI_ERR_ARG` if negative.
fn buffer_size(n: c_int, what: &str) -> Result<usize, Error> {
    usize::try_from(n).map_err(|_| Error::arg(format!("negative {what} ({n})")))
}

/// A position in a packed buffer: `MPI_ERR_TRUNCATE` if negative (MPICH does not check).
fn position_of(p: c_int, size: usize) -> Result<usize, Error> {
    usize::try_from(p)
        .map_err(|_| Error::truncate(format!("negative position ({p}) in a {size}-byte buffer")))
}

/// Bytes of `count` elements of `ty`, as `MPI_Pack_size` and the pack calls see them.
fn packed_bytes(ty: &Datatype, count: i64) -> Result<usize, Error> {
    Ok(ty.pack_size(count)?)
}

/// An `int` result, `MPI_UNDEFINED` when unknown or too large (MPICH's answer).
fn int_or_undefined(v: Option<u64>) -> c_int {
    v.and_then(|n| c_int::try_from(n).ok()).unwrap_or(abi::MPI_UNDEFINED)
}

export! {
    /// `MPI_Pack`: `incount` elements at `inbuf` into `outbuf` from `*position`, which advances.
    fn MPI_Pack / PMPI_Pack(
        inbuf: *const c_void,
        incount: c_int,
        datatype: abi::Datatype,
        outbuf: *mut c_void,
        outsize: c_int,
        position: *mut c_int,
        comm: abi::Comm,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        let count = check::count(incount).on(&c)?;
        let ty = st.committed_datatype(datatype).on(&c)?;
        let outsize = buffer_size(outsize, "outsize").on(&c)?;
        // SAFETY: an in-out argument.
        let position = unsafe { check::out(position, "position") }.on(&c)?;
        let n = packed_bytes(&ty, count).on(&c)?;
        user_buffer(inbuf, n, &ty, "inbuf").on(&c)?;
        if n == 0 {
            return Ok(());
        }
        if outbuf.is_null() {
            return Err(Error::arg(format!("outbuf is a null pointer for {n} bytes of data"))).on(&c);
        }
        let mut at = position_of(*position, outsize).on(&c)?;
        // SAFETY: `outbuf` is non-null and valid for `outsize` bytes of writes (MPI's contract);
        // the packed buffer is plain bytes, distinct from the data packed into it.
        let out = unsafe { std::slice::from_raw_parts_mut(outbuf.cast::<u8>(), outsize) };
        // SAFETY: the type map of `incount` elements addresses readable memory from `inbuf`
        // (MPI's contract), not overlapping `outbuf`.
        unsafe { ty.pack(inbuf.cast(), count, out, &mut at) }.map_err(Error::from).on(&c)?;
        // `at <= outsize`, an int.
        *position = at as c_int;
        Ok(())
    }

    /// `MPI_Unpack`: `outcount` elements from `inbuf` at `*position`, which advances, into
    /// `outbuf`.
    fn MPI_Unpack / PMPI_Unpack(
        inbuf: *const c_void,
        insize: c_int,
        position: *mut c_int,
        outbuf: *mut c_void,
        outcount: c_int,
        datatype: abi::Datatype,
        comm: abi::Comm,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        let insize = buffer_size(insize, "insize").on(&c)?;
        // SAFETY: an in-out argument.
        let position = unsafe { check::out(position, "position") }.on(&c)?;
        let count = check::count(outcount).on(&c)?;
        let ty = st.committed_datatype(datatype).on(&c)?;
        let n = packed_bytes(&ty, count).on(&c)?;
        user_buffer(outbuf, n, &ty, "outbuf").on(&c)?;
        if n == 0 {
            return Ok(());
        }
        if inbuf.is_null() {
            return Err(Error::arg(format!("inbuf is a null pointer for {n} bytes of data"))).on(&c);
        }
        let mut at = position_of(*position, insize).on(&c)?;
        // SAFETY: `inbuf` is non-null and valid for `insize` bytes of reads (MPI's contract),
        // not written while this call runs.
        let input = unsafe { std::slice::from_raw_parts(inbuf.cast::<u8>(), insize) };
        // SAFETY: the type map of `outcount` elements addresses writable memory from `outbuf`
        // (MPI's contract), not overlapping `inbuf`.
        unsafe { ty.unpack(input, &mut at, outbuf.cast(), count) }.map_err(Error::from).on(&c)?;
        // `at <= insize`, an int.
        *position = at as c_int;
        Ok(())
    }

    /// `MPI_Pack_size`: an upper bound of the bytes `MPI_Pack` writes (here exactly them);
    /// `MPI_UNDEFINED` beyond an `int`, as MPICH.
    fn MPI_Pack_size / PMPI_Pack_size(incount: c_int, datatype: abi::Datatype, comm: abi::Comm, size: *mut c_int) {
        let st = state()?;
        let c = st.comm(comm)?;
        let count = check::count(incount).on(&c)?;
        let ty = st.committed_datatype(datatype).on(&c)?;
        // SAFETY: an output argument.
        let size = unsafe { check::out(size, "size") }.on(&c)?;
        *size = int_or_undefined(ty.pack_size(count).ok().map(|n| n as u64));
        Ok(())
    }

    /// `MPI_Get_elements`: basic elements received (`MPI_UNDEFINED` if the data ends inside
    /// one, or beyond an `int`).
    fn MPI_Get_elements / PMPI_Get_elements(status: *const abi::Status, datatype: abi::Datatype, count: *mut c_int) {
        let st = state()?;
        // SAFETY: an input argument (MPI's contract).
        let status = unsafe { check::status_in(status) }?;
        let ty = st.committed_datatype(datatype)?;
        // SAFETY: an output argument.
        let count = unsafe { check::out(count, "count") }?;
        *count = int_or_undefined(ty.get_elements(u64::try_from(status.count()).unwrap_or(u64::MAX)));
        Ok(())
    }

    /// `MPI_Get_elements_x`.
    fn MPI_Get_elements_x / PMPI_Get_elements_x(status: *const abi::Status, datatype: abi::Datatype, count: *mut abi::Count) {
        let st = state()?;
        // SAFETY: an input argument (MPI's contract).
        let status = unsafe { check::status_in(status) }?;
        let ty = st.committed_datatype(datatype)?;
        // SAFETY: an output argument.
        let count = unsafe { check::out(count, "count") }?;
        let n = ty.get_elements(u64::try_from(status.count()).unwrap_or(u64::MAX));
        *count = n.and_then(|n| abi::Count::try_from(n).ok()).unwrap_or(abi::Count::from(abi::MPI_UNDEFINED));
        Ok(())
    }
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
        assert_eq!(position_of(-1, 8).unwrap_err().class(), ErrorClass::Truncate);
        assert_eq!(position_of(3, 8).unwrap(), 3);
        assert_eq!(int_or_undefined(Some(1 << 31)), abi::MPI_UNDEFINED);
        assert_eq!(int_or_undefined(None), abi::MPI_UNDEFINED);
        assert_eq!(int_or_undefined(Some(5)), 5);
    }
}
