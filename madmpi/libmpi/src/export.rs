//! How a function is exported to C: [`export!`] turns a Rust body into the `PMPI_X` symbol
//! (the implementation, run under [`guard`]) and the `MPI_X` symbol (which only forwards to
//! `PMPI_X`, so a profiling library may interpose `MPI_X` and still reach us through `PMPI_X`).
//!
//! No panic crosses the C ABI: [`guard`] catches it and raises `MPI_ERR_INTERN` through the
//! error handler, like any other error. The library never calls its own exported symbols, so
//! an interposed `MPI_X` sees exactly the program's calls.
//!
//! Owns the calling convention and the panic boundary; it must not know any MPI function.

use crate::errors::{Fail, Outcome, panic_error, raise};
use std::ffi::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// `MPI_SUCCESS`.
pub(crate) const SUCCESS: c_int = 0;

/// Runs the body of the exported function `func` and returns its code: `MPI_SUCCESS`, or what
/// the error handler made of the failure (a panic is an `MPI_ERR_INTERN` failure).
#[inline]
pub(crate) fn guard(func: &'static str, body: impl FnOnce() -> Outcome) -> c_int {
    let r = catch_unwind(AssertUnwindSafe(body));
    if let Ok(Ok(())) = r {
        // Nothing to drop: spares the hot calls the drop glue of the error types.
        std::mem::forget(r);
        return SUCCESS;
    }
    failure(func, r)
}

/// The code of a failed call, from its error handler.
#[cold]
#[inline(never)]
fn failure(func: &'static str, failed: std::thread::Result<Outcome>) -> c_int {
    let run = || match failed {
        Ok(Ok(())) => SUCCESS,
        Ok(Err(fail)) => raise(func, fail),
        Err(payload) => raise(func, Fail::from(panic_error(&*payload))),
    };
    // Raising cannot reasonably panic, but nothing may unwind into C even then.
    catch_unwind(AssertUnwindSafe(run)).unwrap_or(madmpi::error::ErrorClass::Intern.code())
}

/// Runs the body of an exported MPI_T function and returns its code: MPI_T functions return
/// their `MPI_T_ERR_*` code and never call an error handler (MPI 4.0 §15.3.4); a panic is
/// `MPI_ERR_INTERN`.
pub(crate) fn guard_tools(body: impl FnOnce() -> madmpi::tools::TResult<()>) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => SUCCESS,
        Ok(Err(e)) => e.code(),
        Err(_) => madmpi::error::ErrorClass::Intern.code(),
    }
}

/// Defines exported functions: `fn MPI_X / PMPI_X(args) { body }`, the body returning an
/// [`Outcome`]. Bodies run inside `PMPI_X` under [`guard`]. After `tools:`, MPI_T functions,
/// whose bodies return a `madmpi::tools::TResult<()>` and run under [`guard_tools`].
macro_rules! export {
    (tools: $(
        $(#[$doc:meta])*
        fn $mpi:ident / $pmpi:ident ($($arg:ident: $ty:ty),* $(,)?) $body:block
    )*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// Called from C as MPI specifies: every pointer argument is valid for what the call
        /// reads or writes through it (null pointers are reported as errors).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $pmpi($($arg: $ty),*) -> ::std::ffi::c_int {
            $crate::export::guard_tools(move || -> ::madmpi::tools::TResult<()> { $body })
        }

        #[doc = concat!("The profiling entry point of [`", stringify!($pmpi), "`], which it calls.")]
        ///
        /// # Safety
        #[doc = concat!("As [`", stringify!($pmpi), "`].")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $mpi($($arg: $ty),*) -> ::std::ffi::c_int {
            // SAFETY: the caller's contract is PMPI_X's, passed on unchanged.
            unsafe { $pmpi($($arg),*) }
        }
    )*};
    ($(
        $(#[$doc:meta])*
        fn $mpi:ident / $pmpi:ident ($($arg:ident: $ty:ty),* $(,)?) $body:block
    )*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// Called from C as MPI specifies: every pointer argument is valid for what the call
        /// reads or writes through it (null and misaligned pointers are reported as errors).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $pmpi($($arg: $ty),*) -> ::std::ffi::c_int {
            $crate::export::guard(stringify!($mpi), move || -> $crate::errors::Outcome { $body })
        }

        #[doc = concat!("The profiling entry point of [`", stringify!($pmpi), "`], which it calls.")]
        ///
        /// # Safety
        #[doc = concat!("As [`", stringify!($pmpi), "`].")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $mpi($($arg: $ty),*) -> ::std::ffi::c_int {
            // SAFETY: the caller's contract is PMPI_X's, passed on unchanged.
            unsafe { $pmpi($($arg),*) }
        }
    )*};
}

pub(crate) use export;
