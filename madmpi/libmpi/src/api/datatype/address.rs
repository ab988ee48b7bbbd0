//! Addresses: `MPI_Get_address`, and `MPI_Aint_add`/`MPI_Aint_diff`, the portable arithmetic
//! on them.
//!
//! An address is the location's integer value (MPICH's `MPI_Aint` is an `int64_t` holding the
//! pointer; `MPI_BOTTOM` is 0). `MPI_Aint_add` and `MPI_Aint_diff` return their result instead
//! of an error code and cannot fail: they wrap around like MPICH's C arithmetic would, without
//! its undefined behaviour. Owns these calls only.

use crate::check;
use crate::errors::Outcome;
use crate::export::export;
use madmpi::abi;
use std::ffi::c_void;

/// `MPI_Get_address` and `MPI_Address`: needs no initialized MPI (as in MPICH).
///
/// # Safety
/// `address` as [`check::out`].
pub(super) unsafe fn get_address(location: *const c_void, address: *mut abi::Aint) -> Outcome {
    // SAFETY: null and misaligned pointers are rejected before use; a valid one is writable (this function's
    // `# Safety`).
    let out = unsafe { check::out(address, "address") }?;
    *out = location.expose_provenance() as abi::Aint;
    Ok(())
}

export! {
    /// `MPI_Get_address`: the address of `location`, for displacements relative to `MPI_BOTTOM`.
    fn MPI_Get_address / PMPI_Get_address(location: *const c_void, address: *mut abi::Aint) {
        // SAFETY: `address` is the caller's output (checked in the body).
        unsafe { get_address(location, address) }
    }
}

/// `MPI_Aint_add`: `base + disp`, as an address.
#[unsafe(no_mangle)]
pub extern "C" fn PMPI_Aint_add(base: abi::Aint, disp: abi::Aint) -> abi::Aint {
    base.wrapping_add(disp)
}

/// The profiling entry point of [`PMPI_Aint_add`], which it calls.
#[unsafe(no_mangle)]
pub extern "C" fn MPI_Aint_add(base: abi::Aint, disp: abi::Aint) -> abi::Aint {
    PMPI_Aint_add(base, disp)
}

/// `MPI_Aint_diff`: `addr1 - addr2`, a displacement.
#[unsafe(no_mangle)]
pub extern "C" fn PMPI_Aint_diff(addr1: abi::Aint, addr2: abi::Aint) -> abi::Aint {
    addr1.wrapping_sub(addr2)
}

/// The profiling entry point of [`PMPI_Aint_diff`], which it calls.
#[unsafe(no_mangle)]
pub extern "C" fn MPI_Aint_diff(addr1: abi::Aint, addr2: abi::Aint) -> abi::Aint {
    PMPI_Aint_diff(addr1, addr2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_their_arithmetic() {
        let x = [0u64; 4];
        let (mut a, mut b) = (0, 0);
        // SAFETY: `a` and `b` are locals written once each.
        unsafe {
            assert!(get_address((&raw const x[0]).cast(), &mut a).is_ok());
            assert!(get_address((&raw const x[3]).cast(), &mut b).is_ok());
            assert!(get_address(std::ptr::null(), std::ptr::null_mut()).is_err());
        }
        assert_eq!(MPI_Aint_diff(b, a), 24);
        assert_eq!(MPI_Aint_add(a, 24), b);
        assert_eq!(MPI_Aint_add(abi::Aint::MAX, 1), abi::Aint::MIN, "wraps, never panics");
    }
}
