//! Communicator handles: `MPI_COMM_WORLD` and `MPI_COMM_SELF` (fixed objects of the state) and
//! the communicators the library creates (a [`Table`](crate::table::Table)), each with its
//! error handler.
//!
//! The two predefined communicators' error handlers live in statics rather than in the state:
//! errors raised before `MPI_Init` or after `MPI_Finalize` still go to `MPI_COMM_WORLD`'s
//! handler (fatal before `MPI_Init`, whatever the program last set after `MPI_Finalize`).
//!
//! Owns the mapping from communicator handles to [`CommObj`]s; it must not run communication.

use crate::errors::ErrhandlerCell;
use crate::state::State;
use madmpi::abi::{self, Handle};
use madmpi::comm::Comm;
use madmpi::error::Error;
use std::sync::{Arc, LazyLock};

/// A communicator as the C library sees it.
pub(crate) struct CommObj {
    pub(crate) comm: Comm,
    pub(crate) errhandler: Arc<ErrhandlerCell>,
}

static WORLD_ERRHANDLER: LazyLock<Arc<ErrhandlerCell>> = LazyLock::new(|| Arc::new(ErrhandlerCell::new()));
static SELF_ERRHANDLER: LazyLock<Arc<ErrhandlerCell>> = LazyLock::new(|| Arc::new(ErrhandlerCell::new()));

/// `MPI_COMM_WORLD`'s error handler, which also handles errors tied to no valid communicator.
pub(crate) fn world_errhandler() -> &'static ErrhandlerCell {
    &WORLD_ERRHANDLER
}

impl CommObj {
    /// The object of `MPI_COMM_WORLD` over `comm`.
    pub(crate) fn world(comm: Comm) -> Arc<CommObj> {
        Arc::new(CommObj { comm, errhandler: WORLD_ERRHANDLER.clone() })
    }

    /// The object of `MPI_COMM_SELF` over `comm`.
    pub(crate) fn self_comm(comm: Comm) -> Arc<CommObj> {
        Arc::new(CommObj { comm, errhandler: SELF_ERRHANDLER.clone() })
    }
}

impl State {
    /// The communicator of handle `h`: `MPI_ERR_COMM` for `MPI_COMM_NULL` and anything that is
    /// not a live communicator handle.
    pub(crate) fn comm(&self, h: Handle) -> Result<Arc<CommObj>, Error> {
        match h {
            abi::MPI_COMM_WORLD => Ok(self.world.clone()),
            abi::MPI_COMM_SELF => Ok(self.self_comm.clone()),
            abi::MPI_COMM_NULL => Err(Error::comm("null communicator (MPI_COMM_NULL)")),
            _ => self.comms.get(h).ok_or_else(|| Error::comm(format!("invalid communicator handle {h:#x}"))),
        }
    }
}
