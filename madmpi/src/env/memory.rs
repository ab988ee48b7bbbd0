//! `MPI_Alloc_mem` and `MPI_Free_mem`: memory the program asks MPI for, aligned for fast
//! transfers, and a registry of what was handed out so that freeing anything else is an error
//! instead of heap corruption.
//!
//! Every block is aligned to [`DEFAULT_ALIGNMENT`] (a cache line), or to the power of two the
//! `mpi_minimum_memory_alignment` hint asks for when larger (MPI 4.1's key; other hints, and
//! values that are not powers of two, are ignored, as hints may be). A zero-byte request gets a
//! distinct non-null pointer (as MPICH gives). This module owns the blocks and their registry;
//! it knows nothing of handles or error codes.

use crate::error::{Error, Result};
use crate::info::Info;
use std::alloc::Layout;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// The alignment of every block: a cache line (and enough for any C type and SIMD loads).
pub const DEFAULT_ALIGNMENT: usize = 64;

/// The largest alignment a hint may ask for (a huge page).
const MAX_ALIGNMENT: usize = 1 << 21;

/// The blocks handed out, by address, with the layout they were allocated with.
static BLOCKS: Mutex<Option<HashMap<usize, Layout>>> = Mutex::new(None);

/// The alignment for a block, from the hints.
fn alignment(hints: &Info) -> usize {
    hints
        .get_str("mpi_minimum_memory_alignment")
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|a| a.is_power_of_two() && *a <= MAX_ALIGNMENT)
        .map_or(DEFAULT_ALIGNMENT, |a| a.max(DEFAULT_ALIGNMENT))
}

/// `MPI_Alloc_mem`: a block of `size` bytes (`MPI_ERR_ARG` if negative, `MPI_ERR_NO_MEM` if the
/// system has no such memory).
pub fn alloc(size: i64, hints: &Info) -> Result<*mut u8> {
    let bytes = usize::try_from(size).map_err(|_| Error::arg(format!("negative size ({size})")))?;
    let layout = Layout::from_size_align(bytes.max(1), alignment(hints))
        .map_err(|_| Error::no_mem(format!("{bytes} bytes cannot be allocated")))?;
    // SAFETY: `layout` has a non-zero size.
    let p = unsafe { std::alloc::alloc(layout) };
    if p.is_null() {
        return Err(Error::no_mem(format!("out of memory: {bytes} bytes could not be allocated")));
    }
    let mut blocks = BLOCKS.lock().unwrap_or_else(PoisonError::into_inner);
    blocks.get_or_insert_with(HashMap::new).insert(p.expose_provenance(), layout);
    Ok(p)
}

/// `MPI_Free_mem`: frees the block at address `addr` that [`alloc`] gave; address 0 (a null
/// pointer) is nothing to free (as in MPICH); any other address is `MPI_ERR_ARG`, and nothing
/// is freed. Taking the address, not a pointer, says that nothing is read through it: the
/// block is found in the registry or the call fails.
pub fn free(addr: usize) -> Result<()> {
    if addr == 0 {
        return Ok(());
    }
    let layout = {
        let mut blocks = BLOCKS.lock().unwrap_or_else(PoisonError::into_inner);
        blocks.as_mut().and_then(|b| b.remove(&addr))
    };
    let layout = layout.ok_or_else(|| {
        Error::arg(format!("{addr:#x} was not allocated by MPI_Alloc_mem (or was already freed)"))
    })?;
    let p: *mut u8 = std::ptr::with_exposed_provenance_mut(addr);
    // SAFETY: `alloc` allocated this block at `addr` with `layout` and exposed its provenance
    // (the registry holds exactly such blocks); it left the registry above, so it is freed once.
    unsafe { std::alloc::dealloc(p, layout) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorClass;

    #[test]
    fn blocks_are_aligned_registered_and_freed_once() {
        let none = Info::new();
        let p = alloc(100, &none).unwrap();
        assert_eq!(p.addr() % DEFAULT_ALIGNMENT, 0);
        // SAFETY: 100 writable bytes.
        unsafe { std::ptr::write_bytes(p, 7, 100) };
        let q = alloc(0, &none).unwrap();
        assert!(!q.is_null() && q != p);
        assert_eq!(free(p.addr() + 1).unwrap_err().class(), ErrorClass::Arg, "not a block's start");
        free(p.addr()).unwrap();
        assert_eq!(free(p.addr()).unwrap_err().class(), ErrorClass::Arg, "a second free");
        free(q.addr()).unwrap();
        free(0).unwrap();
        let x = 0u8;
        assert_eq!(
            free((&raw const x).addr()).unwrap_err().class(),
            ErrorClass::Arg,
            "not from MPI_Alloc_mem"
        );
        assert_eq!(alloc(-1, &none).unwrap_err().class(), ErrorClass::Arg);
        assert_eq!(alloc(i64::MAX, &none).unwrap_err().class(), ErrorClass::NoMem);
    }

    #[test]
    fn the_alignment_hint_is_honoured_when_valid() {
        let hint = |v: &str| Info::from_pairs([("mpi_minimum_memory_alignment", v)]).unwrap();
        assert_eq!(alignment(&hint("4096")), 4096);
        assert_eq!(alignment(&hint("8")), DEFAULT_ALIGNMENT, "never below the default");
        assert_eq!(alignment(&hint("100")), DEFAULT_ALIGNMENT, "not a power of two: ignored");
        assert_eq!(alignment(&hint("junk")), DEFAULT_ALIGNMENT);
        let p = alloc(10, &hint("4096")).unwrap();
        assert_eq!(p.addr() % 4096, 0);
        free(p.addr()).unwrap();
    }
}
