//! The send side: a [`SendChannel`] (what `MPI_Psend_init` binds; it sends the handshake) and
//! the [`SendOp`] of each `MPI_Start`, whose partitions go as `MPI_Pready` marks them.
//!
//! A partition marked ready goes on the wire at once, as its own message: no waiting for the
//! last `MPI_Pready`, and no grouping of adjacent ready partitions, so that the receiver's
//! receives are fixed at its start (one per sender partition, straight into its buffer) and
//! `MPI_Parrived` needs no message headers. A program that wants fewer, larger messages uses
//! fewer partitions. `MPI_Pready_range` and `MPI_Pready_list` mark their partitions in turn.
//!
//! Owns the sender's partition messages; it must not touch handles (the C library's).

use super::Shared;
use super::geometry::{Geometry, sub_data};
use super::handshake::{self, Setup};
use super::marks::Marks;
use crate::comm::Rank;
use crate::comm::tags;
use crate::comm::{Comm, from_nmad};
use crate::error::{Error, Result};
use crate::request::Outcome;
use nmad::{Data, Event, SendMode};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// The next channel number this process gives a partitioned send (never 0: see
/// [`tags::partitioned_data`]).
static NEXT_CHANNEL: AtomicU32 = AtomicU32::new(1);

fn next_channel() -> u32 {
    loop {
        let c = NEXT_CHANNEL.fetch_add(1, Relaxed) & ((1 << tags::SEQ_BITS) - 1);
        if c != 0 {
            return c;
        }
    }
}

/// A partitioned send request (`MPI_Psend_init`), started again by each `MPI_Start`.
pub struct SendChannel {
    comm: Comm,
    /// The destination's world rank; `None` for `MPI_PROC_NULL`.
    dest: Option<u32>,
    data: Data,
    geometry: Geometry,
    channel: u32,
    _handshake: Option<HandshakeSend>,
}

/// The handshake send of a channel; the request first (dropping it waits for the send before
/// the bytes go).
struct HandshakeSend {
    _req: Pin<Box<nmad::Request>>,
    _bytes: Box<[u8; handshake::LEN]>,
}

// SAFETY: `data` describes the program's buffer, which MPI's contract keeps valid while the
// request exists; the rest is Send and Sync.
unsafe impl Send for SendChannel {}
// SAFETY: shared use only reads `data`'s description (the sends read the buffer); the rest is
// Sync.
unsafe impl Sync for SendChannel {}

impl SendChannel {
    /// `MPI_Psend_init`: `parts` partitions of `part_bytes` packed bytes each in `data`, for
    /// `dest` with `tag`; sends the handshake.
    ///
    /// # Safety
    /// `data` must stay valid for reads until the request is freed (MPI's contract).
    pub unsafe fn new(
        comm: &Comm,
        data: Data,
        geometry: Geometry,
        dest: Rank,
        tag: i32,
    ) -> Result<SendChannel> {
        crate::comm::check_tag("MPI_Psend_init", tag)?;
        let dest = match dest {
            Rank::Rank(r) => Some(comm.peer("MPI_Psend_init", r)?),
            Rank::ProcNull => None,
        };
        let channel = next_channel();
        let handshake = match dest {
            None => None,
            Some(d) => {
                let bytes = Box::new(Setup { channel, sender: geometry }.encode());
                let req = Box::pin(nmad::Request::new());
                // SAFETY: the bytes are boxed next to the request, which is dropped (waiting
                // for the send) before them.
                let hs = unsafe { Data::from_raw(bytes.as_ptr().cast_mut(), handshake::LEN) };
                let tag = tags::partitioned_setup(tag);
                // SAFETY: `hs` points into `bytes`, kept (after the request) in the channel; the
                // request stays pinned in its box until its drop waits for the send.
                unsafe { comm.session().isend(d, tag, hs, SendMode::default(), req.as_ref()) }
                    .map_err(from_nmad)?;
                Some(HandshakeSend { _req: req, _bytes: bytes })
            }
        };
        Ok(SendChannel { comm: comm.clone(), dest, data, geometry, channel, _handshake: handshake })
    }

    pub(crate) fn comm(&self) -> &Comm {
        &self.comm
    }

    /// `MPI_Start`: an operation with no partition ready yet.
    pub(crate) fn start(self: &Arc<Self>) -> SendOp {
        let shared = Shared::new(self.geometry.parts, Arc::new(pioman::Cond::new()));
        let monitor = shared.monitor(Event::SendCompleted);
        let reqs = (0..self.geometry.parts)
            .map(|_| {
                let mut r = Box::pin(nmad::Request::new());
                r.as_mut().set_monitor(Some(monitor.clone()));
                r
            })
            .collect();
        SendOp { channel: self.clone(), ready: Marks::new(self.geometry.parts), reqs, shared }
    }
}

/// One started partitioned send.
pub struct SendOp {
    channel: Arc<SendChannel>,
    ready: Marks,
    /// One per partition, submitted when it is marked ready.
    reqs: Box<[Pin<Box<nmad::Request>>]>,
    shared: Arc<Shared>,
}

impl SendOp {
    /// `MPI_Pready`: sends partition `k` now (once: marking it again does nothing, as in MPICH).
    pub fn pready(&self, k: usize) -> Result<()> {
        self.check(k)?;
        let ch = &self.channel;
        if !self.ready.mark(k) {
            return Ok(());
        }
        let Some(dest) = ch.dest else {
            self.shared.arrived();
            return Ok(());
        };
        let data = sub_data(&ch.data, ch.geometry.range(k));
        let tag = tags::partitioned_data(ch.channel, k as u32);
        // SAFETY: the buffer stays valid while the request exists (the channel's contract); the
        // request is pinned in `reqs`, which this operation keeps until it completes (its drop
        // waits), and it is submitted once (the mark above).
        unsafe { ch.comm.session().isend(dest, tag, data, SendMode::default(), self.reqs[k].as_ref()) }
            .map_err(from_nmad)
    }

    /// `MPI_ERR_OTHER` (MPICH's class) if there is no partition `k`.
    pub(crate) fn check(&self, k: usize) -> Result<()> {
        let parts = self.channel.geometry.parts;
        if k >= parts {
            return Err(Error::other(format!("partition {k} is outside 0..{parts}")));
        }
        Ok(())
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    pub(crate) fn wait(&self) {
        self.shared.wait(self.channel.comm.runtime_nmad().pioman());
        self.reqs.iter().for_each(|r| r.wait());
    }

    /// Once complete: the first failed partition's error, with a send's empty status.
    pub(crate) fn outcome(&self) -> Option<Outcome> {
        if !self.shared.is_complete() {
            return None;
        }
        let error = self.reqs.iter().find_map(|r| {
            r.wait(); // its monitor ran; its signal may not have yet
            r.result().and_then(|r| r.err()).map(from_nmad)
        });
        Some(Outcome { error, ..Outcome::DONE })
    }
}
