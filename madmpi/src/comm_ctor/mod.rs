//! Communicator constructors that are not collective over the whole parent in call order:
//! `MPI_Comm_create_group` (`group`: collective over the group's members only, told apart by
//! the program's tag) and `MPI_Comm_idup` (`idup`: runs in the background, its request
//! completing when the new communicator is ready).
//!
//! Owns these two constructions; the agreement is `context`'s, the communicator `comm`'s. It
//! must not touch a communicator's state beyond [`crate::comm::Comm`]'s crate API.

mod group;
mod idup;

pub(crate) use group::create_in;
