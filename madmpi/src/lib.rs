//! MadMPI, the MPI layer: the MPI semantics behind a Rust API and behind the MPICH-ABI C library
//! (`mpi.h`, `libmpi.so`, in `libmpi/`, which only checks arguments and converts handles).
//! Communicators are nmad sessions; every operation is progressed by pioman in the background;
//! every call is MPI_THREAD_MULTIPLE-safe.
//!
//! By concern, from the bottom up (a module imports only modules listed before it, or beside it
//! on its line; `tests/layering.rs` checks that no two modules import each other, directly or
//! in a cycle):
//! - the ABI and plain data: [`abi`] (MPICH 4.0's handle values and encoding, `MPI_Status`,
//!   constants, which `include/mpi.h` states for C), [`datatype`] (constructors, flattening into
//!   nmad layouts, pack/unpack, external32, darray, f90 types, the Rust types that map to them),
//!   [`error`] (classes, codes, user classes, handlers), [`op`] (reduction operations),
//!   [`group`], [`info`] (info objects, `MPI_INFO_ENV`, hints, thread levels), [`attr`]
//!   (keyvals, attribute caching), [`grequest`] (generalized requests' callbacks), `node_shm`
//!   (memory segments the processes of a node share, and their passing);
//! - [`comm`]: communicators (context ids agreed over a parent or over a group alone, the small
//!   collectives creation needs, the message envelope and nmad tag layout, the runtime the
//!   communicators of a process share, and the slots where the features above keep their state:
//!   the communicator imports none of them);
//! - [`request`]: one request type for every kind of operation, waits on several; the kinds run
//!   by other modules (collectives, partitioned, generalized) are handed to it as
//!   [`request::Pending`];
//! - operations: [`p2p`] (blocking, typed, buffered, matched probes), [`coll`] (every
//!   collective: schedules run by an engine in the background), [`partitioned`], [`topo`]
//!   (process topologies and their neighbourhoods), [`rma`] (windows for one-sided
//!   communication), [`operation`] (what one call of the C
//!   library runs, starts once or keeps as a persistent template);
//! - communicators made otherwise: `comm_ctor` (`MPI_Comm_create_group`, `MPI_Comm_idup`),
//!   [`intercomm`] (and the `split` and `create` that take either kind), [`ft`] (ULFM),
//!   [`dynamic`] (spawn, ports, names, join);
//! - [`io`]: MPI-IO (files, views, independent, collective and nonblocking access over the
//!   collectives and windows above);
//! - [`tools`]: MPI_T (control and performance variables, categories and events over pioman's and
//!   nmad's counters and hooks);
//! - the environment: [`env`](mod@env) (`MPI_Init`'s world, the runtime it shares with sessions and
//!   assembles from the features, `MPI_Alloc_mem`), [`session`] (MPI 4.0 sessions).
//!
//! It must not reach into drivers or strategies: it talks to nmad's interfaces only.

pub mod abi;
pub mod attr;
pub mod coll;
pub mod comm;
mod comm_ctor;
pub mod datatype;
pub mod dynamic;
pub mod env;
pub mod error;
pub mod ft;
pub mod grequest;
pub mod group;
pub mod info;
pub mod intercomm;
pub mod io;
mod loom;
mod node_shm;
pub mod op;
pub mod operation;
pub mod p2p;
pub mod partitioned;
pub mod request;
pub mod rma;
pub mod session;
#[cfg(test)]
mod testing;
pub mod tools;
pub mod topo;
