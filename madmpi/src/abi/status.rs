//! `MPI_Status` with MPICH's layout.

use super::Count;
use core::ffi::c_int;

/// `MPI_Status`, with MPICH's layout (five `int`s; the C field names are in the docs).
///
/// The byte count is 63 bits wide: `count_lo` holds its low 32 bits, `count_hi_and_cancelled`
/// the rest shifted left by one, bit 0 of that field being the cancelled flag. Programs only
/// read it through `MPI_Get_count` and friends, but keeping MPICH's encoding keeps statuses
/// meaningful to tools that know it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Status {
    /// `count_lo`: low 32 bits of the received byte count.
    pub count_lo: c_int,
    /// `count_hi_and_cancelled`: high bits of the byte count, shifted left by one, and the
    /// cancelled flag in bit 0.
    pub count_hi_and_cancelled: c_int,
    /// `MPI_SOURCE`.
    pub source: c_int,
    /// `MPI_TAG`.
    pub tag: c_int,
    /// `MPI_ERROR`.
    pub error: c_int,
}

const _: () = assert!(size_of::<Status>() == 20 && align_of::<Status>() == 4);

impl Status {
    /// The received byte count.
    pub const fn count(&self) -> Count {
        let hi = (self.count_hi_and_cancelled as u32 >> 1) as u64;
        ((hi << 32) | self.count_lo as u32 as u64) as Count
    }

    /// Records a received byte count (non-negative), keeping the cancelled flag.
    pub fn set_count(&mut self, bytes: Count) {
        debug_assert!(bytes >= 0, "negative byte count {bytes}");
        let bytes = bytes as u64;
        self.count_lo = bytes as u32 as c_int;
        self.count_hi_and_cancelled =
            (self.count_hi_and_cancelled & 1) | (((bytes >> 32) as u32) << 1) as c_int;
    }

    /// Whether the request this status describes was cancelled.
    pub const fn cancelled(&self) -> bool {
        self.count_hi_and_cancelled & 1 != 0
    }

    /// Records whether the request was cancelled, keeping the byte count.
    pub fn set_cancelled(&mut self, cancelled: bool) {
        self.count_hi_and_cancelled = (self.count_hi_and_cancelled & !1) | cancelled as c_int;
    }
}
