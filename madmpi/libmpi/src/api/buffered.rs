//! The buffer of buffered sends: `MPI_Buffer_attach(_c)`, `MPI_Buffer_detach(_c)` (the sends
//! themselves are in [`p2p`](super::p2p)). Errors go to `MPI_COMM_WORLD`'s handler (no
//! communicator is involved).

use crate::check::{self, CInt};
use crate::errors::Outcome;
use crate::export::export;
use crate::state::state;
use madmpi::abi;
use madmpi::error::Error;
use std::ffi::{c_int, c_void};

/// `MPI_Buffer_attach` of either width: as MPICH, a null buffer or a negative size is
/// `MPI_ERR_ARG`, a buffer smaller than `MPI_BSEND_OVERHEAD` or a second buffer
/// `MPI_ERR_BUFFER`.
///
/// # Safety
/// `buffer` holds `size` bytes that are the library's until detached (MPI's contract).
unsafe fn attach(buffer: *mut c_void, size: impl CInt) -> Outcome {
    let st = state()?;
    if buffer.is_null() {
        return Err(Error::arg("the buffer is a null pointer").into());
    }
    let size: i64 = size.into();
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
    // SAFETY: the buffer is the library's until it is detached (the caller's contract).
    unsafe { st.world.comm.bsend_pool().attach(buffer.cast(), size) }?;
    Ok(())
}

/// `MPI_Buffer_detach` of either width: waits until the buffered messages are sent, then
/// returns the buffer's address through `buffer_addr` (a `void **` in disguise, as MPI
/// specifies) and its size; with no buffer attached, `NULL` and 0 (as MPICH). A size that
/// does not fit `N` (an `int` for a buffer attached with `MPI_Buffer_attach_c`) is
/// `MPI_ERR_COUNT`, the buffer detached all the same.
///
/// # Safety
/// `buffer_addr` and `size` are output arguments (MPI's contract).
unsafe fn detach<N: CInt + TryFrom<usize>>(buffer_addr: *mut c_void, size: *mut N) -> Outcome {
    let st = state()?;
    // SAFETY: an output argument: the address of a `void *` (the caller's contract).
    let addr = unsafe { check::out(buffer_addr.cast::<*mut c_void>(), "buffer_addr") }?;
    // SAFETY: an output argument (the caller's contract).
    let size = unsafe { check::out(size, "size") }?;
    let (p, n) = st.world.comm.bsend_pool().detach().unwrap_or((std::ptr::null_mut(), 0));
    *addr = p.cast();
    *size = N::try_from(n).map_err(|_| Error::count(format!("the detached size {n} does not fit an int")))?;
    Ok(())
}

export! {
    /// `MPI_Buffer_attach`.
    fn MPI_Buffer_attach / PMPI_Buffer_attach(buffer: *mut c_void, size: c_int) {
        // SAFETY: MPI's contract on the buffer.
        unsafe { attach(buffer, size) }
    }

    /// `MPI_Buffer_attach_c`.
    fn MPI_Buffer_attach_c / PMPI_Buffer_attach_c(buffer: *mut c_void, size: abi::Count) {
        // SAFETY: MPI's contract on the buffer.
        unsafe { attach(buffer, size) }
    }

    /// `MPI_Buffer_detach`.
    fn MPI_Buffer_detach / PMPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) {
        // SAFETY: MPI's contract on the output arguments.
        unsafe { detach(buffer_addr, size) }
    }

    /// `MPI_Buffer_detach_c`.
    fn MPI_Buffer_detach_c / PMPI_Buffer_detach_c(buffer_addr: *mut c_void, size: *mut abi::Count) {
        // SAFETY: MPI's contract on the output arguments.
        unsafe { detach(buffer_addr, size) }
    }
}
