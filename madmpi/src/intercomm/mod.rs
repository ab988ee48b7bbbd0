//! Intercommunicators: two disjoint groups, each member's point-to-point ranks naming the other
//! (remote) group, in one context shared by both.
//!
//! - `create`: `MPI_Intercomm_create` (the local leaders talk over a peer communicator with the
//!   program's tag) and `MPI_Intercomm_create_from_groups` (no parent: the local groups are made
//!   in the world's session, told apart by the string tag);
//! - `derive`: what is made from an intercommunicator: `MPI_Intercomm_merge`, and
//!   `MPI_Comm_split` and `MPI_Comm_create` as MPI 4.0 defines them there (`MPI_Comm_dup` is
//!   [`Comm::dup`], the same for both kinds);
//! - `both`: [`Comm::split`], [`Comm::split_shared_opt`] and [`Comm::create`], which take
//!   either kind.
//!
//! The state is [`Comm`]'s (its remote group). The members of both groups take part in the
//! internal operations of an intercommunicator, ordered the same at all of them (the group of
//! the lower leader first, `Comm::is_low_group`), and agree on a context id free at every one
//! of them. Owns the intercommunicator constructors; it must not run collectives of the program
//! (the collective layer does, `coll::inter`).

mod both;
mod create;
mod derive;

pub use create::{LeaderLink, create_from_groups, intercomm_create};
pub use derive::{create, merge, split};

use crate::comm::Comm;
use crate::error::{Error, Result};

/// `MPI_ERR_COMM` unless `c` is an intercommunicator.
fn inter(call: &str, c: &Comm) -> Result<()> {
    if c.is_inter() { Ok(()) } else { Err(Error::comm(format!("{call}: not an intercommunicator"))) }
}

#[cfg(test)]
mod tests;
