//! MadMPI, the MPI layer: the MPI semantics behind a Rust API and behind the MPICH-ABI C library
//! (`mpi.h`, `libmpi.so`, in `libmpi/`, which only checks arguments and converts handles).
//! Communicators are nmad sessions; every operation is progressed by pioman in the background;
//! every call is MPI_THREAD_MULTIPLE-safe.
//!
//! By concern:
//! - the ABI: [`abi`] (MPICH 4.0's handle values and encoding, `MPI_Status`, constants, which
//!   `include/mpi.h` states for C), [`tags`] (how MPI traffic is laid out in nmad's 64-bit tags);
//! - the environment: [`universe`] (`MPI_Init`'s world), [`session`] (MPI 4.0 sessions), both over
//!   `process` (the one runtime they share); [`info`] (info objects, `MPI_INFO_ENV`, hints);
//!   [`error`] (classes, codes, user classes, handlers); [`attr`] (keyvals, attribute caching);
//! - data: [`datatype`] (constructors, flattening into nmad layouts, pack/unpack, external32,
//!   darray, f90 types), [`memory`] (`MPI_Alloc_mem` blocks), [`op`] (reduction operations);
//! - groups and communicators: [`group`], [`comm`], `context` and `group_context` (context ids
//!   agreed over a parent or over a group alone), `internal` (the small collectives creation
//!   needs), [`intercomm`], `comm_ctor` (`MPI_Comm_create_group`, `MPI_Comm_idup`), [`topo`]
//!   (process topologies), [`dynamic`] (spawn, ports, names, join), [`ft`] (ULFM);
//! - operations: [`p2p`], [`typed`], [`bsend`], [`mprobe`], [`request`] (one request type for
//!   every kind of operation, and the operations the C library runs, starts once or keeps as
//!   persistent templates), [`completion`] (waits on several), [`grequest`] and [`partitioned`]
//!   (request kinds of their own, [`request_kinds`]), [`coll`] (every collective: schedules run
//!   by an engine in the background);
//! - [`tools`]: MPI_T (control and performance variables, categories and events over pioman's and
//!   nmad's counters and hooks).
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
