//! NewMadeleine, the communication core.
//!
//! Layout (the tree shows the architecture):
//! - [`drivers`] move bytes: `self`, `shm`, `tcp` behind the [`drivers::Driver`] trait (seam 1);
//! - `strategies` decide what goes on the wire for each peer (seam 2);
//! - `core` owns gates (peers), sessions, matching, the eager and rendezvous protocols;
//! - `interfaces` are what upper layers use (`sendrecv`, data descriptions).
//!
//! It must not know about MPI objects (communicators, datatypes): those belong to madmpi.

pub mod drivers;
mod loom;
