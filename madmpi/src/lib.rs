//! MadMPI, the MPI layer (being written: issue 6).
//!
//! It will own the MPI semantics: a Rust API and an MPICH-ABI-compatible C library (`mpi.h`,
//! `libmpi.so`) with communicators mapped to nmad sessions, datatypes, groups, error handlers and
//! MPI_THREAD_MULTIPLE; later collectives and MPI-3 one-sided operations.
//!
//! - [`abi`] holds the MPICH 4.0 ABI facts (handle values and encoding, `MPI_Status`, special
//!   constants) that `include/mpi.h` states for C.
//!
//! It must not reach into drivers or strategies: it talks to nmad's interfaces only.
pub mod abi;
mod context;
mod internal;
pub mod tags;
pub mod attr;
pub mod error;
pub mod group;
//!
//! So far: [`datatype`], the datatype engine (constructors, attributes, flattening into nmad
//! layouts, pack/unpack).
pub mod datatype;
