//! Persistent requests (`MPI_Send_init`, `MPI_Ssend_init`, `MPI_Recv_init`): the checked
//! arguments of an operation, kept in the request so that each `MPI_Start` starts it again.
//! Partitioned requests (`MPI_Psend_init`, `MPI_Precv_init`) keep madmpi's channel, which
//! starts its own operations.
//!
//! Owns starting persistent operations; it must not complete them (see `completion`) nor
//! check their arguments (the `api` layer does, once, at init).

use crate::requests::ReqEntry;
use madmpi::error::Error;
use madmpi::p2p::{From, Rank, Tag};
use madmpi::request::{Mode, RawRequest};
use std::sync::Arc;

/// The operation a persistent request starts.
pub(crate) enum Persistent {
    Send {
        data: nmad::Data,
        dest: Rank,
        tag: i32,
        mode: Mode,
    },
    Recv {
        data: nmad::Data,
        from: From,
        tag: Tag,
    },
    /// A partitioned send or receive (its semantics are madmpi's).
    Partitioned(madmpi::partitioned::Channel),
}

impl ReqEntry {
    /// Checks that this is an inactive persistent request (`MPI_Start`'s `MPI_ERR_REQUEST`s).
    pub(crate) fn check_startable(&self) -> Result<&Persistent, Error> {
        let Some(p) = &self.persistent else {
            return Err(Error::request("not a persistent request (only those can be started)"));
        };
        if self.op().is_some() {
            return Err(Error::request("the persistent request is already active"));
        }
        Ok(p)
    }

    /// `MPI_Start`: starts the operation of this inactive persistent request.
    ///
    /// # Safety
    /// The buffer given at init must be valid (readable for a send, writable for a receive)
    /// until the operation completes: MPI's contract for persistent requests.
    pub(crate) unsafe fn start(&self) -> Result<(), Error> {
        let comm = &self.comm.comm;
        let raw = match self.check_startable()? {
            // SAFETY: the caller's contract.
            Persistent::Send { data, dest, tag, mode } => unsafe {
                RawRequest::isend(comm, data.clone(), *dest, *tag, *mode)
            },
            // SAFETY: as above.
            Persistent::Recv { data, from, tag } => unsafe {
                RawRequest::irecv(comm, data.clone(), *from, *tag)
            },
            Persistent::Partitioned(channel) => Ok(channel.start()),
        }?;
        self.set_op(Some(Arc::new(raw)));
        Ok(())
    }
}
