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
//!   classes; `persistent`: starting persistent requests; `completion`: reporting completed
//!   requests (statuses, `MPI_ERR_IN_STATUS`) and waiting on several;
//! - `errors`: error handlers and the path of a failure to the code a call returns;
//! - `check`: argument validation; `status`: writing `MPI_Status`;
//! - [`api`]: the exported functions, by chapter of the standard.

pub mod api;
mod check;
mod comms;
mod completion;
mod datatypes;
mod errors;
mod export;
mod messages;
mod persistent;
mod requests;
mod state;
mod status;
mod table;
