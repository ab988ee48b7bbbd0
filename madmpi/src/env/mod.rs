//! The MPI environment of a process (MPI 4.0 ch. 11, "Environmental Management"):
//! initialization and finalization of the world model (`universe`: `MPI_Init_thread` …
//! `MPI_Finalize`, the world and self communicators, wall-clock time), the process's runtime
//! that the world model and the sessions share (`process`), and the memory MPI allocates for
//! the program (`memory`: `MPI_Alloc_mem`).
//!
//! Owns the process's start and end; it sits above every feature (it starts them) and nothing
//! below it may import it. Sessions (MPI 4.0's other model) are [`crate::session`].

pub mod memory;
pub(crate) mod process;
pub mod universe;
