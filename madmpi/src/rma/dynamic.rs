//! The memory attached to a dynamic window (`MPI_Win_attach`, `MPI_Win_detach`): disjoint
//! address ranges of this process, by start address, so an operation's target range can later
//! be checked against them (it must lie inside one).
//!
//! Owns the set of regions and the overlap rule; it must not touch the memory.

use crate::error::{Error, Result};
use std::collections::BTreeMap;

/// Attached regions: start address → length in bytes.
#[derive(Debug, Default)]
pub(crate) struct Regions(BTreeMap<usize, usize>);

impl Regions {
    /// `MPI_Win_attach`: `MPI_ERR_RMA_ATTACH` if `[base, base + len)` overlaps an attached
    /// region (MPI forbids it) or wraps around the address space. An empty region is accepted
    /// and kept (it can be detached), as MPICH does.
    pub(crate) fn attach(&mut self, base: usize, len: usize) -> Result<()> {
        let end = base
            .checked_add(len)
            .ok_or_else(|| Error::rma_attach(format!("{len} bytes at {base:#x} wrap around memory")))?;
        if self.0.contains_key(&base) {
            return Err(Error::rma_attach(format!(
                "{len} bytes at {base:#x} overlap the memory attached there"
            )));
        }
        let before = self.0.range(..base).next_back().filter(|&(&b, &l)| b + l > base);
        let after = self.0.range(base..).next().filter(|&(&b, _)| b < end);
        if let Some((&b, &l)) = before.or(after) {
            return Err(Error::rma_attach(format!(
                "{len} bytes at {base:#x} overlap the attached {l} bytes at {b:#x}"
            )));
        }
        self.0.insert(base, len);
        Ok(())
    }

    /// `MPI_Win_detach`: the region attached at `base` (`MPI_ERR_RMA_ATTACH` if none starts
    /// there, as MPICH reports).
    pub(crate) fn detach(&mut self, base: usize) -> Result<usize> {
        self.0.remove(&base).ok_or_else(|| Error::rma_attach(format!("no memory is attached at {base:#x}")))
    }

    /// Whether `[addr, addr + len)` lies inside one attached region.
    pub(crate) fn covers(&self, addr: usize, len: usize) -> bool {
        let Some(end) = addr.checked_add(len) else { return false };
        self.0.range(..=addr).next_back().is_some_and(|(&b, &l)| end <= b + l)
    }
}
