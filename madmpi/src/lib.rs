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
//! - [`tools`]: MPI_T, the tools information interface (control and performance variables,
//!   categories, events over pioman's and nmad's counters and hooks);
//! - [`grequest`]: generalized requests; [`partitioned`]: partitioned communication; both are
//!   request kinds of their own ([`request_kinds`]);
//! - [`topo`]: process topologies (Cartesian, graph, distributed graph) and the
//!   neighbourhood collectives;
//! - [`memory`]: `MPI_Alloc_mem`/`MPI_Free_mem` blocks and their registry;
//! - [`request`]: one request type for every kind of operation (point-to-point, collective,
//!   send-receive), and the operations the C library runs, starts once or keeps as persistent
//!   templates (`request::operation`);
//! - [`tags`]: how MPI traffic is laid out in nmad's 64-bit tags; `internal` collectives and
//!   `context` ids for communicator creation;
//! - [`comm`]: communicators; [`intercomm`]: intercommunicators (create, from groups, merge,
//!   split, create); `comm_ctor`: `MPI_Comm_create_group` and `MPI_Comm_idup`;
//! - [`coll`]: the collectives (schedules run by an engine in the background; `coll::inter` for
//!   intercommunicators).
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
mod comm_ctor;
pub mod completion;
mod context;
pub mod datatype;
pub mod dynamic;
pub mod error;
pub mod ft;
pub mod grequest;
pub mod group;
mod group_context;
pub mod info;
pub mod intercomm;
mod internal;
mod loom;
pub mod memory;
pub mod mprobe;
pub mod op;
pub mod p2p;
pub mod partitioned;
mod process;
pub mod request;
pub mod request_kinds;
pub mod session;
pub mod tags;
pub mod tools;
pub mod topo;
pub mod typed;
pub mod universe;
