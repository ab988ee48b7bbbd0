//! Buffered sends: `MPI_Buffer_attach`, `MPI_Buffer_detach`, `MPI_Bsend`, `MPI_Ibsend`. The
//! message is packed into the attached buffer (its size plus `MPI_BSEND_OVERHEAD` bytes) and
//! sent from there; the call returns at once. Errors not tied to a communicator (attach,
//! detach) go to `MPI_COMM_WORLD`'s handler.

use super::p2p::send_args;
use crate::check;
use crate::errors::{On, Outcome};
use crate::export::export;
use crate::state::state;
use madmpi::abi;
use madmpi::error::Error;
use madmpi::request::RawRequest;
use std::ffi::{c_int, c_void};

/// `MPI_Bsend`, and `MPI_Ibsend` when `request` is given (its request is complete at once:
/// the message was copied away, as in MPICH).
///
/// # Safety
/// The send buffer is readable during the call; `request`, if given, as `check::out`.
#[allow(clippy::too_many_arguments)]
unsafe fn bsend(
    op: &str,
    buf: *const c_void,
    count: c_int,
    datatype: abi::Datatype,
    dest: c_int,
    tag: c_int,
    comm: abi::Comm,
    request: Option<*mut abi::Request>,
) -> Outcome {
    let st = state()?;
    let c = st.comm(comm)?;
    // SAFETY: the buffer is read during this call only (the message is copied).
    let s = unsafe { send_args(&st, &c, buf, count, datatype, dest, tag) }?;
    // SAFETY: the caller's contract.
    let request = request.map(|r| unsafe { check::out(r, "request") }).transpose().on(&c)?;
    // SAFETY: as above.
    unsafe { c.comm.bsend_data(op, &s.data, s.dest, s.tag) }.on(&c)?;
    if let Some(request) = request {
        *request = st.add_request(RawRequest::completed(&c.comm), &c).on(&c)?;
    }
    Ok(())
}

export! {
    /// `MPI_Bsend`: an `MPI_ERR_BUFFER` if no buffer is attached or the message does not fit.
    fn MPI_Bsend / PMPI_Bsend(
        buf: *const c_void,
        count: c_int,
        datatype: abi::Datatype,
        dest: c_int,
        tag: c_int,
        comm: abi::Comm,
    ) {
        // SAFETY: MPI's contract for sends.
        unsafe { bsend("MPI_Bsend", buf, count, datatype, dest, tag, comm, None) }
    }

    /// `MPI_Ibsend`.
    fn MPI_Ibsend / PMPI_Ibsend(
        buf: *const c_void,
        count: c_int,
        datatype: abi::Datatype,
        dest: c_int,
        tag: c_int,
        comm: abi::Comm,
        request: *mut abi::Request,
    ) {
        // SAFETY: MPI's contract for sends; `request` is an output argument.
        unsafe { bsend("MPI_Ibsend", buf, count, datatype, dest, tag, comm, Some(request)) }
    }

    /// `MPI_Buffer_attach`: as MPICH, a null buffer or a negative size is `MPI_ERR_ARG`, a
    /// buffer smaller than `MPI_BSEND_OVERHEAD` or a second buffer `MPI_ERR_BUFFER`.
    fn MPI_Buffer_attach / PMPI_Buffer_attach(buffer: *mut c_void, size: c_int) {
        let st = state()?;
        if buffer.is_null() {
            return Err(Error::arg("the buffer is a null pointer").into());
        }
        let Ok(size) = usize::try_from(size) else {
            return Err(Error::arg(format!("negative size ({size})")).into());
        };
        if size < abi::MPI_BSEND_OVERHEAD as usize {
            return Err(Error::buffer(format!(
                "a buffer of {size} bytes is smaller than MPI_BSEND_OVERHEAD ({})",
                abi::MPI_BSEND_OVERHEAD
            ))
            .into());
        }
        // SAFETY: MPI's contract: the buffer is the library's until it is detached.
        unsafe { st.world.comm.bsend_pool().attach(buffer.cast(), size) }?;
        Ok(())
    }

    /// `MPI_Buffer_detach`: waits until the buffered messages are sent, then returns the
    /// buffer's address through `buffer_addr` (a `void **` in disguise, as MPI specifies) and
    /// its size; with no buffer attached, `NULL` and 0 (as MPICH).
    fn MPI_Buffer_detach / PMPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) {
        let st = state()?;
        // SAFETY: an output argument: the address of a `void *` (MPI's contract).
        let addr = unsafe { check::out(buffer_addr.cast::<*mut c_void>(), "buffer_addr") }?;
        // SAFETY: an output argument.
        let size = unsafe { check::out(size, "size") }?;
        let (p, n) = st.world.comm.bsend_pool().detach().unwrap_or((std::ptr::null_mut(), 0));
        *addr = p.cast();
        *size = c_int::try_from(n).expect("attached with an int size");
        Ok(())
    }
}
