//! Requests: what a send or a receive in flight carries, embedded in memory the caller owns (no
//! allocation per message).
//!
//! A request is pinned while the core holds it. Its state has exactly one holder at a time: the
//! owner before submission and after completion; in between, whichever core structure holds it
//! (a session's posted list, a gate's send queue or rendezvous table), under that structure's
//! lock, or the one thread that took it out of there to finish it. Completion sets the status,
//! runs the request's monitor, then signals the condition — the last access by the core, after
//! which the owner may free the request at once.

use super::Core;
use crate::drivers::PeerId;
use crate::interfaces::data::Data;
use pioman::Cond;
use std::cell::UnsafeCell;
use std::fmt;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering::*};

/// Condition bit: the request is finished (successfully or not).
pub const COMPLETED: u32 = 1;
/// Condition bit: a receive was matched (its status is known); for receives posted without a
/// buffer, the message waits for [`crate::Session::unpack`].
pub const MATCHED: u32 = 2;
/// Condition bit: a peer was found failed while this receive from any source was posted (it
/// stays posted: a later message may still match it). The owner clears it before waiting again.
pub const PEER_LOST: u32 = 4;

/// Who sent what, once a receive matched.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Status {
    pub source: PeerId,
    pub tag: u64,
    /// The message's length (the sender's).
    pub len: u64,
    /// Bytes stored into the receive buffer (less than `len` when truncated).
    pub received: u64,
}

/// Why a request failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The message was longer than the receive buffer: the first `capacity` bytes were stored.
    Truncated {
        len: u64,
        capacity: u64,
    },
    /// The receive was cancelled before it matched.
    Cancelled,
    /// The peer died or its link failed.
    PeerFailed {
        peer: PeerId,
        reason: String,
    },
    /// The session was revoked (every member is told to stop using it): see
    /// [`crate::Session::revoke`].
    Revoked(String),
    /// A malformed packet, a failed remote read, or an unusable argument.
    Protocol(String),
    InvalidArgument(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated { len, capacity } => {
                write!(f, "message truncated: {len} bytes sent, {capacity} bytes of buffer")
            }
            Error::Cancelled => write!(f, "request cancelled"),
            Error::PeerFailed { peer, reason } => write!(f, "peer {peer} failed: {reason}"),
            Error::Revoked(m) => write!(f, "session revoked: {m}"),
            Error::Protocol(m) => write!(f, "protocol error: {m}"),
            Error::InvalidArgument(m) => write!(f, "invalid argument: {m}"),
        }
    }
}

impl std::error::Error for Error {}

/// Request-level events, for monitors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A send finished (its buffer is free).
    SendCompleted,
    /// A receive finished.
    RecvCompleted,
    /// A receive matched a message (its status is known; data may still be on its way).
    DataArrived,
}

/// A callback run by the progression context on a request's events, before the waiter is
/// woken. It must be quick and must not wait for other requests. Every submission the request
/// accepted (a send or receive call that did not refuse it as still in flight) completes exactly
/// once, errors included, so a monitor sees exactly one `SendCompleted` or `RecvCompleted` per
/// submission, always before the request's `test` turns true.
pub type Monitor = Arc<dyn Fn(Event, &Status) + Send + Sync>;

/// Where a request is in its life.
pub(crate) const IDLE: u8 = 0;
pub(crate) const ACTIVE: u8 = 1;

#[derive(Default)]
pub(crate) enum Kind {
    #[default]
    None,
    Send {
        session: u32,
        tag: u64,
        flags: u8,
    },
    Recv {
        /// Posted without a buffer: stop at "matched" (peek, then `unpack`).
        deferred: bool,
    },
}

/// The core's part of a request (see the module docs for who may touch it when).
#[derive(Default)]
pub(crate) struct State {
    pub(crate) kind: Kind,
    pub(crate) data: Data,
    pub(crate) seq: u32,
    /// For sends: bytes of the message the RDV carries for peeking.
    pub(crate) header_len: usize,
    /// Bytes stored so far into the receive buffer.
    pub(crate) received: u64,
    pub(crate) error: Option<Error>,
    /// A matched message waiting for a buffer (receives posted without one, matched probes).
    pub(crate) claimed: Option<Box<super::matching::Unexpected>>,
    /// Outstanding pieces (bulk sends, the final FIN or ACK) before completion.
    pub(crate) pending: u32,
    /// One of the `pending` pieces is a FIN (a rendezvous the receiver reads in part).
    pub(crate) awaits_fin: bool,
    pub(crate) monitor: Option<Monitor>,
    /// For rendezvous sends: the memory exposed for the receiver to read (its rail, and what the
    /// driver keeps until we complete).
    pub(crate) exposed: Option<(usize, crate::drivers::Exposed)>,
}

/// What only the owner touches: set when submitting, read when waiting or dropping.
#[derive(Default)]
struct Owner {
    core: Option<Arc<Core>>,
    /// For receives: their session (to cancel them).
    session: Option<Arc<super::session::SessionInner>>,
}

/// Source, tag and length of a matched message: written by the core before it signals
/// `MATCHED` (or `COMPLETED`), never after.
#[derive(Clone, Copy, Default)]
struct Matched {
    source: PeerId,
    tag: u64,
    len: u64,
}

/// A send or receive request. Create it, pin it, hand it to a session, then `wait`/`test`.
/// It may be reused once completed.
pub struct Request {
    cond: Cond,
    life: AtomicU8,
    owner: UnsafeCell<Owner>,
    matched: UnsafeCell<Matched>,
    state: UnsafeCell<State>,
    /// What a waiter polls first: the peer's driver when it polls cheaply (high 32 bits) and
    /// the peer (low 32), or [`NO_DRIVER`].
    first: AtomicUsize,
    _pinned: PhantomPinned,
}

thread_local! {
    /// The request this thread waits for in [`Request::wait`] (its address; 0: none).
    static WAITED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Marks the calling thread as waiting for a request until dropped (restoring what it waited
/// for before: a wait inside a wait).
struct Waiting(usize);

impl Waiting {
    fn on(r: &Request) -> Waiting {
        Waiting(WAITED.replace(r as *const Request as usize))
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        WAITED.set(self.0);
    }
}

/// Whether the calling thread is waiting for `req` (in [`Request::wait`] or
/// [`Request::wait_timeout`]): work it does for `req` is work its application waits for.
pub(crate) fn waited_here(req: ReqPtr) -> bool {
    WAITED.get() == req.0.as_ptr() as usize
}

/// No driver to poll first: waits go through pioman's rounds alone.
const NO_DRIVER: usize = usize::MAX;

// SAFETY: each cell has one writer at a time (module docs); the condition and the life word
// are atomics.
unsafe impl Send for Request {}
// SAFETY: as above.
unsafe impl Sync for Request {}

impl Default for Request {
    fn default() -> Self {
        Request::new()
    }
}

impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request").field("bits", &self.cond.get()).finish()
    }
}

impl Request {
    /// A request that is complete (like `MPI_REQUEST_NULL`) until submitted ([`Request::recycle`]
    /// makes a used one so again, field by field: keep the two in step).
    pub fn new() -> Request {
        let cond = Cond::new();
        cond.signal(COMPLETED);
        Request {
            cond,
            life: AtomicU8::new(IDLE),
            owner: UnsafeCell::new(Owner::default()),
            matched: UnsafeCell::new(Matched::default()),
            state: UnsafeCell::new(State::default()),
            first: AtomicUsize::new(NO_DRIVER),
            _pinned: PhantomPinned,
        }
    }

    /// Makes a completed (or never submitted) request as new, in place, for another operation
    /// (a pool's spare): what it held of its last one (its core and session, a claimed message,
    /// a monitor, an error) is dropped. `false`, nothing done, for a request in flight.
    pub fn recycle(self: Pin<&mut Self>) -> bool {
        if !self.test() {
            return false;
        }
        // SAFETY: nothing moves out of the pinned request: fields are reset in place. Complete,
        // it is the owner's alone (the core's last access was the signal `test` acquired).
        let this = unsafe { self.get_unchecked_mut() };
        *this.owner.get_mut() = Owner::default();
        *this.state.get_mut() = State::default();
        *this.matched.get_mut() = Matched::default();
        *this.life.get_mut() = IDLE;
        *this.first.get_mut() = NO_DRIVER;
        // A fresh condition: complete, and no waiter mark left by a past wait (which would
        // make every later signal look for sleepers).
        this.cond = Cond::new();
        this.cond.signal(COMPLETED);
        true
    }

    /// Whether the request completed (acquires its results).
    pub fn test(&self) -> bool {
        self.cond.test(COMPLETED)
    }

    /// Whether a receive has matched a message.
    pub fn matched(&self) -> bool {
        self.cond.test(MATCHED | COMPLETED)
    }

    /// The completion condition (for pioman waits, or to wait on several requests).
    pub fn cond(&self) -> &Cond {
        &self.cond
    }

    fn core(&self) -> Option<Arc<Core>> {
        self.core_ref().cloned()
    }

    /// [`Request::core`] borrowed (no reference count): valid while the owner does not submit
    /// the request again, which it cannot do during a call on `&self` of its own.
    fn core_ref(&self) -> Option<&Arc<Core>> {
        // SAFETY: the owner cell is only written by the owner when submitting; we are the owner.
        unsafe { (*self.owner.get()).core.as_ref() }
    }

    /// Waits for completion, driving progress through pioman as its policy says. Returns at
    /// once for a request never submitted.
    ///
    /// A request whose peer's driver polls cheaply (shared memory) has the waiter poll that
    /// driver directly between pioman's rounds: its arrival is seen within one short poll.
    pub fn wait(&self) {
        if self.test() {
            return;
        }
        let Some(c) = self.core_ref() else { return };
        let _waiting = Waiting::on(self);
        let first = self.first.load(Relaxed);
        let (driver, peer) = (first >> 32, first as PeerId);
        match (first != NO_DRIVER).then(|| c.poller(driver)).flatten() {
            Some(p) => {
                // Only the peer's link, first: no other peer's records, no connection.
                let mut quick = || c.poll_peer(driver, peer).map(|n| n > 0);
                c.pioman.wait_polling_with(&self.cond, COMPLETED, p, &mut quick)
            }
            _ => c.pioman.wait(&self.cond, COMPLETED),
        }
    }

    /// Makes waits poll driver `d` first, and its link to `peer` before anything else, for
    /// `Some((d, peer))` (see [`Request::wait`]).
    pub(crate) fn poll_first(&self, first: Option<(usize, PeerId)>) {
        self.first.store(first.map_or(NO_DRIVER, |(d, peer)| d << 32 | peer as usize), Relaxed);
    }

    /// [`Request::wait`] for at most `timeout`; returns whether the request completed.
    pub fn wait_timeout(&self, timeout: std::time::Duration) -> bool {
        if self.test() {
            return true;
        }
        let _waiting = Waiting::on(self);
        match self.core() {
            Some(c) => c.pioman.wait_timeout(&self.cond, COMPLETED, timeout) || self.test(),
            None => true, // never submitted: nothing to wait for
        }
    }

    /// Waits until a receive matched (or completed).
    pub fn wait_matched(&self) {
        if self.matched() {
            return;
        }
        if let Some(c) = self.core() {
            c.pioman.wait(&self.cond, COMPLETED | MATCHED);
        }
    }

    /// The outcome once completed: the status, or the error (a truncated receive reports
    /// `Error::Truncated`; its status is still in [`Request::status`]).
    pub fn result(&self) -> Option<Result<Status, Error>> {
        let status = self.status()?;
        if !self.test() {
            return None;
        }
        // SAFETY: completed: the owner holds the state again (the core's last access was the
        // signal, which `test` acquired).
        let st = unsafe { &*self.state.get() };
        Some(match &st.error {
            None => Ok(status),
            Some(e) => Err(e.clone()),
        })
    }

    /// Source, tag and length of a matched or completed receive (and what was received, once
    /// completed; 0 before).
    pub fn status(&self) -> Option<Status> {
        if !self.matched() {
            return None;
        }
        // SAFETY: written before MATCHED/COMPLETED, which `matched` acquired; never after.
        let m = unsafe { *self.matched.get() };
        let received = if self.test() {
            // SAFETY: completed: the owner holds the state.
            unsafe { (*self.state.get()).received }
        } else {
            0
        };
        Some(Status { source: m.source, tag: m.tag, len: m.len, received })
    }

    /// Sets a monitor for this request's events (call before submitting it).
    pub fn set_monitor(self: Pin<&mut Self>, monitor: Option<Monitor>) {
        // SAFETY: we only touch the state through the `&mut`; nothing is moved.
        let this = unsafe { self.get_unchecked_mut() };
        assert!(this.life.load(Acquire) == IDLE || this.test(), "set_monitor on a request in flight");
        this.state.get_mut().monitor = monitor;
    }

    // ------------------------------------------------------------ crate side

    /// In flight: submitted and not completed.
    pub(crate) fn life_active(&self) -> bool {
        self.life.load(Acquire) == ACTIVE && !self.test()
    }

    /// Makes the request active for a new operation.
    ///
    /// # Safety
    /// The caller is the owner and keeps the request pinned and alive until it completes.
    pub(crate) unsafe fn begin(
        self: Pin<&Self>,
        core: &Arc<Core>,
        session: Option<Arc<super::session::SessionInner>>,
    ) -> Result<ReqPtr, Error> {
        if self.life.compare_exchange(IDLE, ACTIVE, AcqRel, Acquire).is_err() && !self.test() {
            return Err(Error::InvalidArgument("the request is still in flight".into()));
        }
        self.cond.clear(COMPLETED | MATCHED | PEER_LOST);
        self.first.store(NO_DRIVER, Relaxed);
        let p = ReqPtr(NonNull::from(self.get_ref()));
        // SAFETY: we are the owner and the request is not in flight: every cell is ours.
        unsafe {
            *self.owner.get() = Owner { core: Some(core.clone()), session };
            *self.matched.get() = Matched::default();
            let st = p.state();
            let monitor = st.monitor.take();
            *st = State { monitor, ..State::default() };
        }
        Ok(p)
    }
}

impl Drop for Request {
    /// A request dropped in flight is cancelled if it is an unmatched receive, otherwise waited
    /// for: the core never touches freed memory.
    fn drop(&mut self) {
        if self.life.load(Acquire) != ACTIVE || self.test() {
            return;
        }
        let owner = std::mem::take(self.owner.get_mut());
        if let Some(session) = owner.session {
            // SAFETY: we are the owner; `self` is still valid.
            if unsafe { session.cancel_ptr(ReqPtr(NonNull::from(&*self))) } {
                return;
            }
        }
        if let Some(c) = owner.core {
            c.pioman.wait(&self.cond, COMPLETED);
        }
    }
}

/// A pointer to a request held by the core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReqPtr(NonNull<Request>);

// SAFETY: the pointee is Sync and stays alive while the core holds the pointer.
unsafe impl Send for ReqPtr {}
// SAFETY: as above.
unsafe impl Sync for ReqPtr {}

impl ReqPtr {
    pub(crate) fn of(r: &Request) -> ReqPtr {
        ReqPtr(NonNull::from(r))
    }

    /// # Safety
    /// The caller must be the request's current holder (module docs).
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn state<'a>(self) -> &'a mut State {
        // SAFETY: the request is alive (pinned until complete) and we are its only holder.
        unsafe { &mut *(*self.0.as_ptr()).state.get() }
    }

    /// Tells the waiter of a posted receive from any source that a peer failed (signals
    /// [`PEER_LOST`], completing nothing).
    ///
    /// # Safety
    /// Holder only (the structure holding the request stays locked during the call, so the
    /// owner cannot take it back and free it meanwhile).
    pub(crate) unsafe fn signal_peer_lost(self) {
        self.req().cond.signal(PEER_LOST);
    }

    fn req<'a>(self) -> &'a Request {
        // SAFETY: alive while the core holds it.
        unsafe { &*self.0.as_ptr() }
    }

    /// Records what matched a receive (once per submission, before any signal).
    ///
    /// # Safety
    /// Holder only.
    pub(crate) unsafe fn set_matched(self, source: PeerId, tag: u64, len: u64) {
        // SAFETY: the holder is the only writer, and nobody reads before MATCHED/COMPLETED.
        unsafe { *self.req().matched.get() = Matched { source, tag, len } };
    }

    fn status_now(self, st: &State) -> Status {
        // SAFETY: written by the holder (us) earlier.
        let m = unsafe { *self.req().matched.get() };
        Status { source: m.source, tag: m.tag, len: m.len, received: st.received }
    }

    /// Signals a receive matched (after `set_matched`): wakes `wait_matched`.
    ///
    /// # Safety
    /// Holder only.
    pub(crate) unsafe fn signal_matched(self) {
        // SAFETY: holder (caller's contract).
        let st = unsafe { self.state() };
        if let Some(m) = &st.monitor {
            m(Event::DataArrived, &self.status_now(st));
        }
        self.req().cond.signal(MATCHED);
    }

    /// Completes the request: runs its monitor, then signals — after which the request must not
    /// be touched.
    ///
    /// # Safety
    /// Holder only; never called twice for one submission.
    pub(crate) unsafe fn complete(self, error: Option<Error>) {
        // SAFETY: holder (caller's contract).
        let st = unsafe { self.state() };
        if st.error.is_none() {
            st.error = error;
        }
        let ev =
            if matches!(st.kind, Kind::Send { .. }) { Event::SendCompleted } else { Event::RecvCompleted };
        if let Some(m) = &st.monitor {
            m(ev, &self.status_now(st));
        }
        st.claimed = None;
        st.exposed = None;
        let req = self.req();
        req.cond.signal(COMPLETED | MATCHED);
    }
}
