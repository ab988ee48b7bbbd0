//! `MPI_Pcontrol`, the profiling interface's hook: a profiling library that interposes
//! `MPI_Pcontrol` reads the level; the MPI library itself does nothing with it (the standard
//! says so, and MPICH returns at once too).
//!
//! ABI: C declares `int MPI_Pcontrol(const int level, ...)`. Stable Rust cannot define a
//! variadic function, so this one takes `level` only. That is call-compatible on x86-64
//! System V: the caller passes `level` in `%edi` and the variadic arguments in further
//! registers or on its own stack, cleaned up by itself, and sets `%al` to the number of vector
//! registers used, which a non-variadic callee ignores. A function that took the level only
//! can therefore be called with any variadic tail; it never reads it.

use crate::export::export;
use std::ffi::c_int;

export! {
    /// `MPI_Pcontrol`: returns `MPI_SUCCESS` (see the module docs for the variadic tail).
    fn MPI_Pcontrol / PMPI_Pcontrol(_level: c_int) {
        Ok(())
    }
}
