//! Errors of the datatype engine, tagged with the MPI error class they stand for.
//!
//! The class numbers themselves belong to the C binding (they differ between MPI
//! implementations); this file only says which class each error means.

use std::fmt;

/// Which MPI error class an error maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// `MPI_ERR_COUNT`: a negative count or block length.
    Count,
    /// `MPI_ERR_ARG`: an invalid argument (array lengths, subarray bounds, order...).
    Arg,
    /// `MPI_ERR_TYPE`: the datatype cannot be used so (not committed, predefined...).
    Type,
    /// `MPI_ERR_TRUNCATE`: a pack or unpack buffer is too small.
    Truncate,
    /// A size, extent or offset overflows 64 bits (or the address space): `MPI_ERR_ARG` in C.
    Overflow,
    /// `MPI_ERR_CONVERSION`: a value has no external32 representation (a `long` beyond 32 bits).
    Conversion,
    /// `MPI_ERR_OTHER`: what MPICH reports so (no Fortran kind of that precision, an `int` query
    /// of a large-count type).
    Other,
}

/// A datatype error: its class and a message for `MPI_Error_string`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeError {
    pub kind: ErrorKind,
    pub msg: String,
}

impl TypeError {
    pub(crate) fn new(kind: ErrorKind, msg: impl Into<String>) -> TypeError {
        TypeError { kind, msg: msg.into() }
    }
    pub(crate) fn count(msg: impl Into<String>) -> TypeError {
        TypeError::new(ErrorKind::Count, msg)
    }
    pub(crate) fn arg(msg: impl Into<String>) -> TypeError {
        TypeError::new(ErrorKind::Arg, msg)
    }
    pub(crate) fn ty(msg: impl Into<String>) -> TypeError {
        TypeError::new(ErrorKind::Type, msg)
    }
    pub(crate) fn other(msg: impl Into<String>) -> TypeError {
        TypeError::new(ErrorKind::Other, msg)
    }
    pub(crate) fn overflow() -> TypeError {
        TypeError::new(ErrorKind::Overflow, "datatype size, extent or displacement overflows")
    }
}

impl fmt::Display for TypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.kind, self.msg)
    }
}

impl std::error::Error for TypeError {}

/// Results of the datatype engine.
pub type Result<T> = std::result::Result<T, TypeError>;

/// Checked arithmetic that reports [`ErrorKind::Overflow`].
pub(crate) trait Checked: Sized {
    fn add_(self, o: Self) -> Result<Self>;
    fn sub_(self, o: Self) -> Result<Self>;
    fn mul_(self, o: Self) -> Result<Self>;
}

macro_rules! checked {
    ($($t:ty),*) => {$(
        impl Checked for $t {
            fn add_(self, o: Self) -> Result<Self> {
                self.checked_add(o).ok_or_else(TypeError::overflow)
            }
            fn sub_(self, o: Self) -> Result<Self> {
                self.checked_sub(o).ok_or_else(TypeError::overflow)
            }
            fn mul_(self, o: Self) -> Result<Self> {
                self.checked_mul(o).ok_or_else(TypeError::overflow)
            }
        }
    )*};
}
checked!(i64, u64, usize, isize);

/// `u64` → `i64`, or an overflow error.
pub(crate) fn to_i64(v: u64) -> Result<i64> {
    i64::try_from(v).map_err(|_| TypeError::overflow())
}
