//! MPICH's GPU support queries: `MPIX_GPU_query_support`, `MPIX_Query_cuda_support`,
//! `MPIX_Query_hip_support`, `MPIX_Query_ze_support`. MadMPI moves host memory only: every
//! answer is "not supported", so that a program stages device buffers through the host itself
//! instead of passing device pointers the library would read as host memory.
//!
//! The three `MPIX_Query_*_support` return the answer, not an error code, so they are defined
//! here by hand rather than through `export!`; they cannot fail nor panic.

use crate::check;
use crate::export::export;
use madmpi::error::Error;
use std::ffi::c_int;

/// `MPIX_GPU_SUPPORT_CUDA`, `MPIX_GPU_SUPPORT_ZE`, `MPIX_GPU_SUPPORT_HIP`.
const GPU_KINDS: [c_int; 3] = [0, 1, 2];

export! {
    /// `MPIX_GPU_query_support`: `is_supported` is 0 for every known device kind.
    fn MPIX_GPU_query_support / PMPIX_GPU_query_support(gpu_type: c_int, is_supported: *mut c_int) {
        if !GPU_KINDS.contains(&gpu_type) {
            return Err(Error::arg(format!("{gpu_type} is not an MPIX_GPU_SUPPORT_ device kind")).into());
        }
        // SAFETY: an output argument.
        *unsafe { check::out(is_supported, "is_supported") }? = 0;
        Ok(())
    }
}

/// Defines `MPIX_Query_X_support` (forwarding to `PMPIX_…`, as `export!` does) returning 0.
macro_rules! not_supported {
    ($($(#[$doc:meta])* $mpix:ident / $pmpix:ident;)*) => {$(
        $(#[$doc])*
        #[unsafe(no_mangle)]
        pub extern "C" fn $pmpix() -> c_int {
            0
        }

        #[doc = concat!("The profiling entry point of [`", stringify!($pmpix), "`], which it calls.")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $mpix() -> c_int {
            $pmpix()
        }
    )*};
}

not_supported! {
    /// `MPIX_Query_cuda_support`: 0, CUDA device memory is not supported.
    MPIX_Query_cuda_support / PMPIX_Query_cuda_support;
    /// `MPIX_Query_hip_support`: 0, HIP device memory is not supported.
    MPIX_Query_hip_support / PMPIX_Query_hip_support;
    /// `MPIX_Query_ze_support`: 0, Level Zero device memory is not supported.
    MPIX_Query_ze_support / PMPIX_Query_ze_support;
}
