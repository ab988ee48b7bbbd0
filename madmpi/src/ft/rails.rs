//! Rail failover as the application sees it: which rails reach a member of a communicator, which
//! of them are up and in use, and how many rail failures and re-admissions happened. nmad does
//! the failing over (`nmad::core::gate::failover`: a job carries on over the surviving rails
//! and the fallback network); these only report it, so that a program can, say, checkpoint
//! when its fast network degrades. Each transition is also an MPI_T event (`nmad_rail_down`,
//! `nmad_rail_up`) and a log line.

use crate::comm::Comm;
use crate::error::{Error, ErrorClass, Result};

pub use nmad::RailStatus;

/// The rails to rank `rank` of `comm` (of its remote group, for an intercommunicator), lowest
/// latency first.
pub fn of(comm: &Comm, rank: u32) -> Result<Vec<RailStatus>> {
    let peer = comm.world_rank(rank).ok_or_else(|| {
        Error::new(
            ErrorClass::Rank,
            format!("invalid rank {rank} (communicator of size {})", comm.peer_size()),
        )
    })?;
    comm.runtime_nmad().rail_status(peer).map_err(crate::comm::from_nmad)
}

/// Rails failed and rails re-admitted so far, over every peer of this process.
pub fn transitions(comm: &Comm) -> (u64, u64) {
    comm.runtime_nmad().rail_transitions()
}
