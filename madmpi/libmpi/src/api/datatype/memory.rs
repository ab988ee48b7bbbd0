//! `MPI_Alloc_mem` and `MPI_Free_mem` (with the datatypes because the issue's "datatypes and
//! memory" chapter groups them; the blocks are `madmpi::env::memory`'s).
//!
//! `info` carries hints (`MPI_INFO_NULL`: none; a freed or invalid handle is `MPI_ERR_INFO`);
//! `baseptr` is a `void *` received through a `void *` argument, as MPI's C binding has it.
//! Errors go to `MPI_COMM_WORLD`'s handler; the calls work before `MPI_Init` too (the registry
//! is the process's). Owns the C side of these calls only.

use crate::check;
use crate::export::export;
use crate::infos;
use madmpi::abi;
use std::ffi::c_void;

export! {
    /// `MPI_Alloc_mem`: `size` bytes, aligned to a cache line or to the
    /// `mpi_minimum_memory_alignment` hint (`MPI_ERR_NO_MEM` when the memory is not there).
    fn MPI_Alloc_mem / PMPI_Alloc_mem(size: abi::Aint, info: abi::Info, baseptr: *mut c_void) {
        let hints = infos::hints(info)?;
        // SAFETY: an output argument (a `void *`, MPI's contract).
        let out = unsafe { check::out(baseptr.cast::<*mut c_void>(), "baseptr") }?;
        *out = madmpi::env::memory::alloc(size, &hints)?.cast();
        Ok(())
    }

    /// `MPI_Free_mem`: frees a block of `MPI_Alloc_mem` (`MPI_ERR_ARG` for any other pointer;
    /// null is accepted, as MPICH).
    fn MPI_Free_mem / PMPI_Free_mem(base: *mut c_void) {
        madmpi::env::memory::free(base.addr())?;
        Ok(())
    }
}
