//! Operations checked and ready to start: an [`Operation`] is what one call of the C binding
//! does (a send, a receive, a send-receive, a planned collective), built once from its checked
//! arguments and then **run** (a blocking call), **started** once (a nonblocking call, its
//! [`RawRequest`] returned) or made a [`Persistent`] template (`MPI_Send_init`,
//! `MPI_Bsend_init`..., MPI 4.0's `MPI_Bcast_init`...) that each `MPI_Start` starts again.
//! Every form of a call shares that one path, whatever its count type.
//!
//! Owns what running and starting each kind of operation does; it must not check arguments
//! (the callers do, before building one) nor track whether a persistent request is active
//! (the handle's owner does).

use super::{Mode, Outcome, RawRequest};
use crate::coll::raw;
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::p2p::{From, Rank, Tag};
use nmad::Data;

/// One call's operation, its arguments checked.
pub enum Operation {
    /// A standard, ready (a standard send, as MPI allows) or synchronous send; `call` names it
    /// in errors.
    Send { comm: Comm, call: &'static str, data: Data, dest: Rank, tag: i32, mode: Mode },
    /// A buffered send: the message is copied into the attached buffer.
    Bsend { comm: Comm, call: &'static str, data: Data, dest: Rank, tag: i32 },
    /// A receive.
    Recv { comm: Comm, call: &'static str, data: Data, from: From, tag: Tag },
    /// A send and a receive together (`MPI_Sendrecv`, `MPI_Isendrecv`).
    SendRecv { comm: Comm, send: Data, dest: Rank, send_tag: i32, recv: Data, from: From, recv_tag: Tag },
    /// A send-receive in one buffer (`MPI_Sendrecv_replace`, `MPI_Isendrecv_replace`).
    SendRecvReplace { comm: Comm, data: Data, dest: Rank, send_tag: i32, from: From, recv_tag: Tag },
    /// A collective, planned.
    Collective(raw::Planned),
}

impl Operation {
    /// Starts it (a nonblocking call).
    ///
    /// # Safety
    /// The memory it was built on must be valid (readable for what is sent, writable for what
    /// is received) until the returned request completes (or is dropped).
    pub unsafe fn start(self) -> Result<RawRequest> {
        match self {
            // SAFETY: the memory contract is ours, passed on.
            Operation::Collective(p) => unsafe { p.start() },
            // SAFETY: as above.
            point => unsafe { point.start_point() },
        }
    }

    /// Runs it to completion (a blocking call): its outcome (a truncated receive's status with
    /// its error).
    ///
    /// # Safety
    /// The memory it was built on must be valid until this returns.
    pub unsafe fn run(self) -> Result<Outcome> {
        match self {
            Operation::Send { comm, call, data, dest, tag, mode } => {
                // SAFETY: `data` is readable until this returns (our contract).
                unsafe { comm.send_data(call, data, dest, tag, mode) }?;
                Ok(Outcome::DONE)
            }
            Operation::Recv { comm, call, data, from, tag } => {
                // SAFETY: `data` is writable until this returns (our contract).
                unsafe { comm.recv_data(call, data, from, tag) }
            }
            other => {
                // SAFETY: the request is waited for before this returns (our contract covers
                // that long), and waited for by its drop if `wait` does not return normally.
                let r = unsafe { other.start() }?;
                let _ = r.wait();
                r.outcome().ok_or_else(|| Error::intern("a waited-for request is not complete"))
            }
        }
    }

    /// Makes it a persistent request's template (a collective takes its number now).
    pub fn persist(self) -> Persistent {
        match self {
            Operation::Collective(p) => Persistent::Collective(p.persist()),
            point => Persistent::Point(point),
        }
    }

    /// Starts a point-to-point operation (a collective here is an internal error: it is started
    /// by value, or made persistent first).
    ///
    /// # Safety
    /// As [`Operation::start`].
    unsafe fn start_point(&self) -> Result<RawRequest> {
        match self {
            // SAFETY: `data` is readable until the request completes (our contract).
            Operation::Send { comm, data, dest, tag, mode, .. } => unsafe {
                RawRequest::isend(comm, data.clone(), *dest, *tag, *mode)
            },
            Operation::Bsend { comm, call, data, dest, tag } => {
                // SAFETY: `data` is readable now (our contract); it is copied before this returns.
                unsafe { comm.bsend_data(call, data, *dest, *tag) }?;
                Ok(RawRequest::completed(comm))
            }
            // SAFETY: `data` is writable until the request completes (our contract).
            Operation::Recv { comm, data, from, tag, .. } => unsafe {
                RawRequest::irecv(comm, data.clone(), *from, *tag)
            },
            // SAFETY: `send` readable and `recv` writable until the request completes (ours).
            Operation::SendRecv { comm, send, dest, send_tag, recv, from, recv_tag } => unsafe {
                RawRequest::isendrecv(comm, send.clone(), *dest, *send_tag, recv.clone(), *from, *recv_tag)
            },
            // SAFETY: `data` readable now and writable until the request completes (ours).
            Operation::SendRecvReplace { comm, data, dest, send_tag, from, recv_tag } => unsafe {
                RawRequest::isendrecv_replace(comm, data.clone(), *dest, *send_tag, *from, *recv_tag)
            },
            Operation::Collective(_) => Err(Error::intern("a planned collective started by reference")),
        }
    }
}

/// What a persistent request starts, again and again.
pub enum Persistent {
    Point(Operation),
    Collective(raw::Persistent),
}

impl Persistent {
    /// Starts the operation again.
    ///
    /// # Safety
    /// As [`Operation::start`]; and the previous run of this request has completed.
    pub unsafe fn start(&self) -> Result<RawRequest> {
        match self {
            // SAFETY: the memory contract is ours, passed on.
            Persistent::Point(op) => unsafe { op.start_point() },
            // SAFETY: as above, and the previous run completed (ours).
            Persistent::Collective(c) => unsafe { c.start() },
        }
    }
}
