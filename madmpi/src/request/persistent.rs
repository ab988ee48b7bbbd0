//! Persistent requests (`MPI_Send_init`, `MPI_Bsend_init`, `MPI_Recv_init`..., and MPI 4.0's
//! persistent collectives `MPI_Bcast_init`...): the template of an operation, checked once at
//! init, that each start turns into a running [`RawRequest`]. Whoever holds the template (the C
//! library's request handle) keeps it inactive between a reported completion and the next start.
//!
//! Owns what a start does for each kind; it must not check arguments (init's callers do) nor
//! track whether a request is active (the handle's owner does).

use super::{Mode, RawRequest};
use crate::coll::raw;
use crate::comm::Comm;
use crate::error::Result;
use crate::p2p::{From, Rank, Tag};
use nmad::Data;

/// What a persistent request starts.
pub enum Persistent {
    /// A standard, ready (a standard send, as MPI allows) or synchronous send.
    Send { comm: Comm, data: Data, dest: Rank, tag: i32, mode: Mode },
    /// A buffered send: each start copies the message into the attached buffer.
    Bsend { comm: Comm, data: Data, dest: Rank, tag: i32 },
    /// A receive.
    Recv { comm: Comm, data: Data, from: From, tag: Tag },
    /// A collective, planned at init.
    Collective(raw::Persistent),
}

impl Persistent {
    /// Starts the operation again.
    ///
    /// # Safety
    /// The memory given at init must be valid (readable for sends, writable for receives and
    /// collective outputs) until the returned request completes, and the previous run of this
    /// request must have completed.
    pub unsafe fn start(&self) -> Result<RawRequest> {
        match self {
            // SAFETY: `data` is readable until the request completes (our contract).
            Persistent::Send { comm, data, dest, tag, mode } => unsafe {
                RawRequest::isend(comm, data.clone(), *dest, *tag, *mode)
            },
            Persistent::Bsend { comm, data, dest, tag } => {
                // SAFETY: `data` is readable now (our contract); it is copied before this returns.
                unsafe { comm.bsend_data("MPI_Start", data, *dest, *tag) }?;
                Ok(RawRequest::completed(comm))
            }
            // SAFETY: `data` is writable until the request completes (our contract).
            Persistent::Recv { comm, data, from, tag } => unsafe {
                RawRequest::irecv(comm, data.clone(), *from, *tag)
            },
            // SAFETY: the collective's memory and previous run are as our contract says.
            Persistent::Collective(c) => unsafe { c.start() },
        }
    }
}
