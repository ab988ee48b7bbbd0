//! Job tools: how the processes of a job are started and find each other.
//!
//! - [`pmi`]: the PMI client (PMI-1 as MPICH's Hydra serves it, PMI-2 as Slurm's `srun
//!   --mpi=pmi2` serves it, singleton) and the wire formats it shares with madrun's server;
//! - [`admission`]: how listening sockets admit strangers (whole-handshake deadlines, a pool
//!   that evicts the oldest unauthenticated connection, rate-limited rejection logs);
//! - [`secret`]: the job key and the handshake every connection between processes of a job proves
//!   it with;
//! - [`launcher`]: the `madrun` launcher (local and remote ranks, PMI server, I/O and signal
//!   forwarding, failure reporting) — `src/bin/madrun.rs` is its command line;
//! - [`ccwrap`]: the compiler wrappers `mpicc` and `mpicxx` (`src/bin/mpicc.rs`,
//!   `src/bin/mpicxx.rs`), which find madmpi's header and library in the build or installed tree.
//!
//! This crate must not depend on the communication layers: nmad's bootstrap uses it, not the
//! other way round.

pub mod admission;
pub mod ccwrap;
pub mod launcher;
pub mod pmi;
pub mod secret;
pub mod unix_socket;
