//! The MPICH 4.0 binary interface, as numbers: predefined handle values, the handle bit
//! encoding, the `MPI_Status` layout and the special constants (ranks, tags, thread levels,
//! keyvals, buffer lengths, sentinel addresses).
//!
//! It owns the facts that programs compiled against MPICH's `mpi.h` have baked into their
//! binaries, and the scheme for the handles MadMPI itself creates ([`encode_user_handle`]).
//! `include/mpi.h` states the same facts for C; `tests/abi.rs` checks every constant of
//! [`C_CONSTANTS`], the status layout and the header against MPICH's own header.
//!
//! Files: this one (the handle types), `constants` (every constant, listed for the check),
//! `handles` (the bit encoding of handles, MPICH's and MadMPI's own), `status` (`MPI_Status`).
//!
//! It must not hold behaviour or object tables, and not the numbers that other modules own
//! even though they are in `mpi.h`: error classes (error handling) and datatype combiners,
//! array orders and type classes (datatypes).
//!
//! # Handle encoding (MPICH's)
//!
//! A handle is a C `int`, read as 32 bits:
//!
//! | bits  | meaning |
//! |-------|---------|
//! | 31-30 | [`HandleKind`]: invalid 0 (the `*_NULL` handles), builtin 1, direct 2, indirect 3 |
//! | 29-26 | [`ObjectType`]: communicator 1, group 2, datatype 3, ... request 11 |
//! | 25-0  | depends on the kind and object, see below |
//!
//! Builtin datatypes keep their size in bytes in bits 15-8 ([`builtin_datatype_size`]).
//! Builtin keyvals keep the object type they apply to in bits 25-22 ([`keyval_target`]).
//! The pair datatypes other than `MPI_2INT` are *direct* handles 0 to 4 of MPICH's datatype
//! table, which is why user handles skip the low indices ([`USER_INDEX_BASE`]).

use core::ffi::{c_int, c_long};

/// Any MPI object handle: `MPI_Comm`, `MPI_Datatype`, ... are all `int` in MPICH's ABI.
pub type Handle = c_int;
/// `MPI_Comm`.
pub type Comm = Handle;
/// `MPI_Group`.
pub type Group = Handle;
/// `MPI_Datatype`.
pub type Datatype = Handle;
/// `MPI_Request`.
pub type Request = Handle;
/// `MPI_Message` (a request in MPICH: it shares `MPI_REQUEST_NULL`'s value).
pub type Message = Handle;
/// `MPI_Op`.
pub type Op = Handle;
/// `MPI_Errhandler`.
pub type Errhandler = Handle;
/// `MPI_Info`.
pub type Info = Handle;
/// `MPI_Win`.
pub type Win = Handle;
/// `MPI_Session`.
pub type Session = Handle;
/// `MPI_Aint`: `long` on x86-64 Linux.
pub type Aint = c_long;
/// `MPI_Offset`: `long` in MPICH's x86-64 build (not `long long`).
pub type Offset = c_long;
/// `MPI_Count`: `long` in MPICH's x86-64 build (not `long long`).
pub type Count = c_long;
/// `MPI_Fint`, a Fortran `INTEGER`.
pub type Fint = c_int;

mod constants;
mod handles;
mod status;
#[cfg(test)]
mod tests;

pub use constants::*;
pub use handles::*;
pub use status::Status;
