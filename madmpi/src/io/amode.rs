//! The access mode of `MPI_File_open`, checked once: an [`Amode`] can only be made by
//! [`Amode::new`], so every layer below takes it as valid.

use crate::error::{Error, Result};

/// A valid access mode (MPICH's `MPI_MODE_*` bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Amode(i32);

impl Amode {
    pub const CREATE: i32 = 1;
    pub const RDONLY: i32 = 2;
    pub const WRONLY: i32 = 4;
    pub const RDWR: i32 = 8;
    pub const DELETE_ON_CLOSE: i32 = 16;
    pub const UNIQUE_OPEN: i32 = 32;
    pub const EXCL: i32 = 64;
    pub const APPEND: i32 = 128;
    pub const SEQUENTIAL: i32 = 256;
    const ALL: i32 = 511;

    /// Checks MPI's rules: exactly one of RDONLY, WRONLY, RDWR; not RDONLY with CREATE or
    /// EXCL; not RDWR with SEQUENTIAL; no unknown bit.
    pub fn new(bits: i32) -> Result<Amode> {
        let bad = |why: &str| Err(Error::amode(format!("access mode {bits:#x}: {why}")));
        if bits & !Self::ALL != 0 {
            return bad("unknown bits");
        }
        let access = [Self::RDONLY, Self::WRONLY, Self::RDWR].iter().filter(|&&b| bits & b != 0).count();
        if access != 1 {
            return bad("exactly one of MPI_MODE_RDONLY, MPI_MODE_WRONLY and MPI_MODE_RDWR is required");
        }
        if bits & Self::RDONLY != 0 && bits & (Self::CREATE | Self::EXCL) != 0 {
            return bad("MPI_MODE_RDONLY with MPI_MODE_CREATE or MPI_MODE_EXCL");
        }
        if bits & Self::RDWR != 0 && bits & Self::SEQUENTIAL != 0 {
            return bad("MPI_MODE_RDWR with MPI_MODE_SEQUENTIAL");
        }
        Ok(Amode(bits))
    }

    /// The bits (`MPI_File_get_amode`).
    pub fn bits(self) -> i32 {
        self.0
    }

    pub fn has(self, bit: i32) -> bool {
        self.0 & bit != 0
    }

    pub fn can_read(self) -> bool {
        !self.has(Self::WRONLY)
    }

    pub fn can_write(self) -> bool {
        !self.has(Self::RDONLY)
    }

    /// The flags of `open(2)`.
    pub(super) fn open_flags(self) -> i32 {
        let mut f = if self.has(Self::RDWR) {
            libc::O_RDWR
        } else if self.has(Self::WRONLY) {
            libc::O_WRONLY
        } else {
            libc::O_RDONLY
        };
        if self.has(Self::CREATE) {
            f |= libc::O_CREAT;
        }
        if self.has(Self::EXCL) {
            f |= libc::O_EXCL;
        }
        f | libc::O_CLOEXEC
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorClass;

    #[test]
    fn modes_mpi_forbids_are_amode_errors() {
        for ok in [2, 4, 8, 8 | 1, 4 | 1 | 64, 2 | 256, 4 | 128 | 16 | 32] {
            assert_eq!(Amode::new(ok).map(Amode::bits).ok(), Some(ok), "{ok:#x}");
        }
        for bad in [0, 2 | 4, 2 | 1, 2 | 64, 8 | 256, 1, 4 | 1024, -1] {
            assert_eq!(Amode::new(bad).unwrap_err().class(), ErrorClass::Amode, "{bad:#x}");
        }
    }
}
