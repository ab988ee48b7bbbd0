//! MadMPI, the MPI layer (not implemented yet: issue 6).
//!
//! It will own the MPI semantics: a Rust API and an MPICH-ABI-compatible C library (`mpi.h`,
//! `libmpi.so`) with communicators mapped to nmad sessions, datatypes, groups, error handlers and
//! MPI_THREAD_MULTIPLE; later collectives and MPI-3 one-sided operations.
//!
//! It must not reach into drivers or strategies: it talks to nmad's interfaces only.
//!
//! So far: [`datatype`], the datatype engine (constructors, attributes, flattening into nmad
//! layouts, pack/unpack).

pub mod datatype;
