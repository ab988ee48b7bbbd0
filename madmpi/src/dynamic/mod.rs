//! Dynamic process management (MPI 4.0 ch. 11): ports (`MPI_Open_port`, `MPI_Close_port`,
//! `MPI_Comm_accept`, `MPI_Comm_connect`), the launcher's name service (`MPI_Publish_name`,
//! `MPI_Lookup_name`, `MPI_Unpublish_name`), `MPI_Comm_join`, `MPI_Comm_disconnect`, and
//! `MPI_Comm_spawn`(`_multiple`) under madrun and Hydra.
//!
//! - `port`: the process's open ports and the port name grammar (what crosses the name service
//!   or the program's own channels is parsed as untrusted);
//! - `connect`: accept and connect: the two roots meet through the port, then build the
//!   intercommunicator as `MPI_Intercomm_create` does (`intercomm::intercomm_create`);
//! - `join`: the two processes meet over the program's socket instead;
//! - `spawn`: the parents accept on a port the children's world connects to from `MPI_Init`;
//! - `cards`: the groups' business cards, swapped in a meeting when the two jobs do not share
//!   a key/value store (Hydra);
//! - `names`: the name service (nmad's bootstrap, served by madrun or Hydra).
//!
//! Both sides must be processes of one job or of jobs it spawned: nmad connects only processes
//! that share the job key (madrun, or the parents under Hydra, give it to the jobs they spawn,
//! whose nmad peer ids follow the parents', `nmad::bootstrap::Universe`). A port name carries the key's public
//! fingerprint, so a port of another madrun's job is refused at once (`MPI_ERR_PORT`). A
//! connect waits until the port's process accepts, also when the port was closed meanwhile
//! (nothing answers for a closed port yet).
//!
//! Owns the port table and the meeting protocols; the intercommunicator itself is
//! `intercomm`'s, and this module must not touch nmad beyond sessions, the name service and
//! the cards it hands on.

mod cards;
mod connect;
mod join;
mod names;
mod port;
mod spawn;

pub use connect::{CONNECT_TIMEOUT_DEFAULT, CONNECT_TIMEOUT_VAR, accept, connect};
pub use join::join;
pub use names::{lookup_name, publish_name, unpublish_name};
pub use port::{PORT_NAME_MAX, close_port, open_port};
pub(crate) use spawn::connect_to_parents;
pub use spawn::{Command, spawn};

use crate::comm::internal::allreduce_and;
use crate::comm::{Comm, from_nmad};
use crate::error::Result;

/// `MPI_Comm_disconnect`'s synchronization (collective over both groups of an
/// intercommunicator, or the members of an intracommunicator): returns when every member has
/// called it, so that every message a member sent on `c` before has been sent. Requests still
/// pending complete normally afterwards, as after `MPI_Comm_free` (the caller then frees).
pub fn disconnect(c: &Comm) -> Result<()> {
    c.internal(|m| allreduce_and(m, 0, &mut [1]).map_err(from_nmad))
}

#[cfg(test)]
mod tests;
