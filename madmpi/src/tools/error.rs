//! The return codes of the tools interface: MPI_T functions return them and never call an error
//! handler (MPI 4.0 §15.3.4). Values are MPICH 4.0's.

use std::fmt;

/// Why an MPI_T call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TError {
    /// An argument is invalid (a null output pointer, a negative length): `MPI_ERR_ARG`.
    Arg,
    Memory,
    NotInitialized,
    CannotInit,
    InvalidIndex,
    InvalidHandle,
    OutOfHandles,
    OutOfSessions,
    InvalidSession,
    CvarSetNotNow,
    CvarSetNever,
    PvarNoStartstop,
    PvarNoWrite,
    PvarNoAtomic,
    InvalidName,
    Invalid,
    NotSupported,
}

impl TError {
    /// The `MPI_T_ERR_*` code (or `MPI_ERR_ARG`).
    pub const fn code(self) -> i32 {
        match self {
            TError::Arg => 12,
            TError::Memory => 59,
            TError::NotInitialized => 60,
            TError::CannotInit => 61,
            TError::InvalidIndex => 62,
            TError::InvalidHandle => 64,
            TError::OutOfHandles => 65,
            TError::OutOfSessions => 66,
            TError::InvalidSession => 67,
            TError::CvarSetNotNow => 68,
            TError::CvarSetNever => 69,
            TError::PvarNoStartstop => 70,
            TError::PvarNoWrite => 71,
            TError::PvarNoAtomic => 72,
            TError::InvalidName => 73,
            TError::Invalid => 74,
            TError::NotSupported => 78,
        }
    }
}

impl fmt::Display for TError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?} (MPI_T error code {})", self.code())
    }
}

impl std::error::Error for TError {}

pub type TResult<T> = std::result::Result<T, TError>;
