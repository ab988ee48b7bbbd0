//! MadMPI, the MPI layer (being written: issue 6).
//!
//! It owns the MPI semantics: a Rust API and an MPICH-ABI-compatible C library (`mpi.h`,
//! `libmpi.so`) with communicators mapped to nmad sessions, datatypes, groups, error handlers and
//! MPI_THREAD_MULTIPLE; later collectives and MPI-3 one-sided operations.
//!
//! So far:
//! - [`abi`]: the MPICH 4.0 ABI facts (handle values and encoding, `MPI_Status`, special
//!   constants) that `include/mpi.h` states for C;
//! - [`datatype`]: the datatype engine (constructors, attributes, flattening into nmad layouts,
//!   pack/unpack, element counts);
//! - [`group`], [`error`] (classes, message-carrying codes, error handler registry), [`attr`]
//!   (keyvals and attribute caching);
//! - [`info`]: info objects, `MPI_INFO_ENV`'s contents and the communicator hints;
//! - [`tags`]: how MPI traffic is laid out in nmad's 64-bit tags; `internal` collectives and
//!   `context` ids for communicator creation.
//!
//! It must not reach into drivers or strategies: it talks to nmad's interfaces only.

pub mod abi;
pub mod attr;
pub mod bsend;
pub mod coll;
pub mod comm;
mod comm_ctor;
pub mod completion;
mod context;
pub mod datatype;
pub mod dynamic;
pub mod error;
pub mod group;
pub mod info;
pub mod intercomm;
mod internal;
mod loom;
pub mod mprobe;
pub mod op;
pub mod p2p;
pub mod request;
pub mod tags;
pub mod typed;
pub mod universe;
