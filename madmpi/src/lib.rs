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
//!   `context` ids for communicator creation; `group_context`: ids agreed over a group alone;
//! - `process`: the runtime shared by the world model and [`session`]s (MPI 4.0 sessions);
//! - [`ft`]: fault tolerance (ULFM: revoke, shrink, agree, failure acknowledgement).
//!
//! It must not reach into drivers or strategies: it talks to nmad's interfaces only.

pub mod abi;
pub mod attr;
pub mod bsend;
pub mod coll;
pub mod comm;
pub mod completion;
mod context;
pub mod datatype;
pub mod error;
pub mod ft;
pub mod group;
mod group_context;
pub mod info;
mod internal;
mod loom;
pub mod mprobe;
pub mod op;
pub mod p2p;
mod process;
pub mod request;
pub mod session;
pub mod tags;
pub mod typed;
pub mod universe;
