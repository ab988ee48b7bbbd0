//! The receive side: a [`RecvChannel`] (what `MPI_Precv_init` binds; it posts the handshake
//! receive) and the [`RecvOp`] of each `MPI_Start`, which posts one receive per sender
//! partition, straight into the part of the buffer that partition covers, as soon as the
//! sender's cut is known: at the start from the second one on, at the first test, wait or
//! `MPI_Parrived` that finds the handshake arrived on the first (messages that came before
//! wait in nmad's unexpected queue).
//!
//! Owns the receiver's partition receives and arrival flags; it must not touch handles.

use super::Shared;
use super::geometry::{Geometry, sub_data};
use super::handshake::{self, Setup};
use crate::comm::tags;
use crate::comm::{Comm, from_nmad};
use crate::comm::{From, Status};
use crate::error::{Error, Result};
use crate::request::Outcome;
use nmad::{Data, Event, Source, TagMatch};
use std::cell::UnsafeCell;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// The handshake receive of a channel; the request first (dropping it cancels or waits before
/// the bytes go).
struct HandshakeRecv {
    req: Pin<Box<nmad::Request>>,
    bytes: Box<UnsafeCell<[u8; handshake::LEN]>>,
}

/// A partitioned receive request (`MPI_Precv_init`), started again by each `MPI_Start`.
pub struct RecvChannel {
    comm: Comm,
    /// The source: its rank in the communicator and its world rank; `None` for `MPI_PROC_NULL`.
    source: Option<(u32, u32)>,
    tag: i32,
    data: Data,
    geometry: Geometry,
    handshake: Option<HandshakeRecv>,
    /// The handshake, once arrived and checked.
    setup: OnceLock<Result<Setup>>,
}

// SAFETY: `data` describes the program's buffer, valid while the request exists (MPI's
// contract); the handshake bytes are written by nmad until its request completes and only read
// after that (`setup`, which `test` orders after the write).
unsafe impl Send for RecvChannel {}
// SAFETY: shared use is reads of `data`'s description and of the handshake bytes once
// complete; the rest (OnceLock, nmad requests) is Sync.
unsafe impl Sync for RecvChannel {}

impl RecvChannel {
    /// `MPI_Precv_init`: `parts` partitions of `part_bytes` packed bytes in `data`, from
    /// `source` with `tag`; posts the handshake receive.
    ///
    /// # Safety
    /// `data` must stay valid for writes until the request is freed (MPI's contract).
    pub unsafe fn new(
        comm: &Comm,
        data: Data,
        geometry: Geometry,
        source: From,
        tag: i32,
    ) -> Result<RecvChannel> {
        crate::comm::check_tag("MPI_Precv_init", tag)?;
        let source = match source {
            From::Rank(r) => Some((r, comm.peer("MPI_Precv_init", r)?)),
            From::ProcNull => None,
            From::Any => return Err(Error::rank("MPI_ANY_SOURCE cannot receive a partitioned message")),
        };
        let handshake = match source {
            None => None,
            Some((_, world)) => {
                let hs = HandshakeRecv {
                    req: Box::pin(nmad::Request::new()),
                    bytes: Box::new(UnsafeCell::new([0; handshake::LEN])),
                };
                // SAFETY: the bytes are boxed next to the request, dropped after it (which
                // cancels or waits); the request stays pinned in its box.
                unsafe {
                    let d = Data::from_raw(hs.bytes.get().cast(), handshake::LEN);
                    let m = TagMatch::exact(tags::partitioned_setup(tag));
                    comm.session().irecv(Source::Rank(world), m, d, hs.req.as_ref())
                }
                .map_err(from_nmad)?;
                Some(hs)
            }
        };
        Ok(RecvChannel { comm: comm.clone(), source, tag, data, geometry, handshake, setup: OnceLock::new() })
    }

    pub(crate) fn comm(&self) -> &Comm {
        &self.comm
    }

    pub(crate) fn parts(&self) -> usize {
        self.geometry.parts
    }

    /// The sender's handshake if it arrived.
    fn setup(&self) -> Option<&Result<Setup>> {
        if let Some(s) = self.setup.get() {
            return Some(s);
        }
        let hs = self.handshake.as_ref()?;
        let r = hs.req.result()?;
        Some(self.setup.get_or_init(|| {
            let st = r.map_err(from_nmad)?;
            // SAFETY: the receive completed (`result` acquired its signal): nmad no longer
            // writes the bytes.
            let bytes = unsafe { &*hs.bytes.get() };
            Setup::decode(bytes, st.len, &self.geometry)
        }))
    }

    /// `MPI_Start`: posts the partition receives if the sender's cut is known.
    pub(crate) fn start(self: &Arc<Self>) -> RecvOp {
        let op = RecvOp {
            channel: self.clone(),
            done: Arc::new(pioman::Cond::new()),
            posted: OnceLock::new(),
            posting: Mutex::new(()),
        };
        if self.source.is_none() {
            op.done.signal(super::COMPLETED);
        }
        op.advance();
        op
    }
}

/// The receives of one started operation.
struct Posted {
    sender: Geometry,
    shared: Arc<Shared>,
    /// One per sender partition.
    reqs: Box<[Pin<Box<nmad::Request>>]>,
}

/// One started partitioned receive.
pub struct RecvOp {
    channel: Arc<RecvChannel>,
    done: Arc<pioman::Cond>,
    /// Set once the receives are posted, or the handshake failed.
    posted: OnceLock<Result<Posted>>,
    /// Held by the thread posting the receives.
    posting: Mutex<()>,
}

impl RecvOp {
    /// Posts the receives if the sender's cut became known (once).
    pub(crate) fn advance(&self) {
        if self.posted.get().is_some() {
            return;
        }
        let Some(setup) = self.channel.setup() else { return };
        let _one = self.posting.lock().unwrap_or_else(PoisonError::into_inner);
        if self.posted.get().is_some() {
            return;
        }
        let posted = setup.clone().map(|s| self.post(s));
        if posted.is_err() {
            self.done.signal(super::COMPLETED);
        }
        let _ = self.posted.set(posted);
    }

    fn post(&self, setup: Setup) -> Posted {
        let ch = &self.channel;
        let (_, world) = ch.source.expect("a handshake came: not MPI_PROC_NULL");
        let shared = Shared::new(setup.sender.parts, self.done.clone());
        let reqs: Box<[_]> = (0..setup.sender.parts)
            .map(|k| {
                let mut req = Box::pin(nmad::Request::new());
                req.as_mut().set_monitor(Some(shared.monitor_at(Event::RecvCompleted, k)));
                let data = sub_data(&ch.data, setup.sender.range(k));
                let tag = TagMatch::exact(tags::partitioned_data(setup.channel, k as u32));
                // SAFETY: the buffer stays valid while the request exists (the channel's
                // contract); the request is pinned in its box, kept in `Posted` until this
                // operation goes (its drop cancels or waits). A refused receive completes with
                // its error (its monitor counts it), which the outcome reports.
                let _ = unsafe { ch.comm.session().irecv(Source::Rank(world), tag, data, req.as_ref()) };
                req
            })
            .collect();
        Posted { sender: setup.sender, shared, reqs }
    }

    pub(crate) fn cond(&self) -> &pioman::Cond {
        &self.done
    }

    pub(crate) fn is_complete(&self) -> bool {
        self.advance();
        self.done.test(super::COMPLETED)
    }

    /// `MPI_Parrived`: whether every byte of partition `j` is in the buffer.
    pub fn parrived(&self, j: usize) -> Result<bool> {
        let parts = self.channel.parts();
        if j >= parts {
            return Err(Error::other(format!("partition {j} is outside 0..{parts}")));
        }
        if self.channel.source.is_none() {
            return Ok(true);
        }
        let arrived = || {
            self.advance();
            match self.posted.get() {
                None => Ok(false),
                Some(Err(e)) => Err(e.clone()),
                Some(Ok(p)) => Ok(p.shared.arrived_all(self.channel.geometry.overlapping(j, &p.sender))),
            }
        };
        if arrived()? {
            return Ok(true);
        }
        self.channel.comm.runtime_nmad().pioman().progress();
        let now = arrived()?;
        if !now {
            crate::request::found_nothing();
        }
        Ok(now)
    }

    pub(crate) fn wait(&self) {
        let pio = self.channel.comm.runtime_nmad().pioman();
        if let Some(hs) = &self.channel.handshake {
            hs.req.wait();
        }
        self.advance();
        if !self.done.test(super::COMPLETED) {
            pio.wait(&self.done, super::COMPLETED);
        }
    }

    /// Once complete: the status (the source, the tag, every byte), or the first error.
    pub(crate) fn outcome(&self) -> Option<Outcome> {
        if !self.is_complete() {
            return None;
        }
        let ch = &self.channel;
        let Some((rank, _)) = ch.source else { return Some(Outcome::DONE) };
        let posted = match self.posted.get()? {
            Ok(p) => p,
            Err(e) => return Some(Outcome { error: Some(e.clone()), ..Outcome::DONE }),
        };
        let error = posted.reqs.iter().find_map(|r| {
            r.wait(); // its monitor ran; its signal may not have yet
            r.result().and_then(|r| r.err()).map(from_nmad)
        });
        let status = Status { source: Some(rank), tag: ch.tag, bytes: ch.geometry.total() as u64 };
        Some(Outcome { status, error, cancelled: false })
    }
}
