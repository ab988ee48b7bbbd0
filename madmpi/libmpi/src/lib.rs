//! `libmpi.so`: MadMPI's C library, the MPICH 4.0 binary interface over the madmpi Rust API.
//!
//! Programs compiled against `madmpi/include/mpi.h`, or against MPICH's own `mpi.h` and linked
//! with `-lmpich`, run on this library unchanged (it is also installed as `libmpich.so.12`).
//! The seam: this crate owns everything C sees (handles, pointers, status layout, error codes
//! and handlers, the `MPI_`/`PMPI_` symbol pairs) and nothing of MPI's semantics, which are
//! the `madmpi` crate's.
//!
//! Modules:
//! - `export`: the `export!` macro (`PMPI_X` under a panic guard, `MPI_X` forwarding to it);
//! - `state`: the global state (the universe after `MPI_Init`, the handle tables) and its
//!   lifecycle; `table`: the sharded handle tables;
//! - `comms`, `datatypes`, `requests`, `messages`: handles to objects, with their error
//!   classes (a request is madmpi's `MpiRequest`: persistent ones start and go inactive there);
//!   `completion`: reporting completed requests (statuses, `MPI_ERR_IN_STATUS`) and waiting on
//!   several;
//! - `grequests`: C callbacks of generalized requests and MPICH's request classes;
//! - `groups`: group handles; `attrs`: keyvals, attribute tables and C attribute callbacks;
//! - `infos`: info handles, in a table that outlives the MPI state (info objects work before
//!   `MPI_Init` and after `MPI_Finalize`);
//! - `errors`: the path of a failure to its error handler and the code a call returns;
//!   `errhandlers`: error handler handles (user handlers, reference counts);
//! - `sessions`: session handles (MPI 4.0), in a table that outlives the MPI state;
//! - `wins`: window handles, their error handlers, attributes and predefined attribute values;
//! - `files`: file handles (`MPI_File` is a pointer: looked up, never dereferenced), their error
//!   handlers and the default file handler; `datareps`: the C functions of user data
//!   representations;
//! - `recent`: each thread's recent window and communicator, which the hot calls reach without
//!   the state (no lock, no reference count);
//! - `check`: argument validation; `status`: writing `MPI_Status`;
//! - [`api`]: the exported functions, by chapter of the standard.

pub mod api;
mod attrs;
mod check;
mod comms;
mod completion;
mod datareps;
mod datatypes;
mod errhandlers;
mod errors;
mod export;
mod files;
mod grequests;
mod groups;
mod infos;
mod messages;
mod ops;
mod recent;
mod requests;
mod sessions;
mod state;
mod status;
mod table;
mod wins;
