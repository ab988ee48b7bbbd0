//! The send/receive interface: nonblocking sends and receives on a session, probes, cancel,
//! receives that peek before providing a buffer, session monitors, and safe blocking and
//! scoped forms.
//!
//! The raw forms (`isend`, `irecv`, ...) take a pinned [`Request`] the caller owns (no
//! allocation per message) and a [`Data`] description; they are `unsafe` because the memory must
//! outlive the request. [`scope`] gives the same with borrowed slices, safely.

use crate::Session;
use crate::core::request::{Error, Kind, ReqPtr, Request, Status};
use crate::core::session::SessionMonitor;
use crate::core::wire::{FLAG_SYNC, MAX_RDV_HEADER};
use crate::drivers::PeerId;
use crate::interfaces::data::Data;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::pin::Pin;

/// Which senders a receive accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Any,
    Rank(PeerId),
}

impl Source {
    fn rank(self) -> Option<PeerId> {
        match self {
            Source::Any => None,
            Source::Rank(r) => Some(r),
        }
    }
}

/// Which tags a receive accepts: `(tag ^ self.tag) & self.mask == 0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TagMatch {
    pub tag: u64,
    pub mask: u64,
}

impl TagMatch {
    pub const ANY: TagMatch = TagMatch { tag: 0, mask: 0 };

    pub fn exact(tag: u64) -> TagMatch {
        TagMatch { tag, mask: u64::MAX }
    }
}

impl From<u64> for TagMatch {
    fn from(tag: u64) -> Self {
        TagMatch::exact(tag)
    }
}

/// How a send behaves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendMode {
    /// Complete only once the receiver matched the message (MPI_Ssend).
    pub sync: bool,
    /// Bytes at the start of a large message carried with its rendezvous request, so the
    /// receiver can peek at them before providing a buffer (at most 1 KiB).
    pub header_len: usize,
}

impl SendMode {
    pub const SYNC: SendMode = SendMode { sync: true, header_len: 0 };
}

impl Session {
    pub fn id(&self) -> u32 {
        self.0.id
    }

    /// The express send: `bytes` to `peer` with `tag`, sent before this returns, without a
    /// request, when nothing else waits for the peer and the message is small enough for one
    /// eager packet (the wire bytes are those of [`Session::isend`]'s). `false`: it did not go,
    /// nothing changed, send it with `isend` (which also reports a failed peer or session).
    pub fn send_now(&self, peer: PeerId, tag: u64, bytes: &[u8]) -> bool {
        let s = &*self.0;
        !s.is_revoked() && s.core.made_gate(peer).is_some_and(|g| g.send_now(&s.core, s.id, tag, bytes))
    }

    /// Starts sending `data` to `peer` with `tag`.
    ///
    /// # Safety
    /// `data` must stay valid and unchanged, and `req` pinned and alive, until `req` completes.
    pub unsafe fn isend(
        &self,
        peer: PeerId,
        tag: u64,
        data: Data,
        mode: SendMode,
        req: Pin<&Request>,
    ) -> Result<(), Error> {
        let core = &self.0.core;
        // SAFETY: the caller keeps the request pinned until it completes.
        let p = unsafe { req.begin(core, None)? };
        // Looked up once begun, so that a request refused here completes like any other (its
        // monitor runs: monitors see every submitted request complete exactly once).
        let gate = match self.0.revoked().map(Error::Revoked).map_or_else(|| core.gate(peer), Err) {
            Ok(g) => g,
            Err(e) => {
                // SAFETY: just begun: still ours.
                unsafe { p.complete(Some(e.clone())) };
                return Err(e);
            }
        };
        // SAFETY: just begun: we hold it until the gate takes it.
        let st = unsafe { p.state() };
        st.kind = Kind::Send { session: self.0.id, tag, flags: if mode.sync { FLAG_SYNC } else { 0 } };
        st.data = data;
        st.header_len = mode.header_len.min(MAX_RDV_HEADER);
        // SAFETY: we hold it; the gate takes it.
        let r = unsafe { gate.enqueue(core, p) };
        match &r {
            // SAFETY: the gate refused it: still ours.
            Err(e) => unsafe { p.complete(Some(e.clone())) },
            Ok(()) if !req.test() => req.poll_first(core.first_driver(peer)),
            Ok(()) => {}
        }
        r
    }

    /// Starts receiving into `data` a message from `source` whose tag matches `tag`.
    ///
    /// # Safety
    /// `data` must stay valid for writes, and `req` pinned and alive, until `req` completes.
    pub unsafe fn irecv(
        &self,
        source: Source,
        tag: impl Into<TagMatch>,
        data: Data,
        req: Pin<&Request>,
    ) -> Result<(), Error> {
        // SAFETY: forwarded contract.
        unsafe { self.post(source, tag.into(), Some(data), req) }
    }

    /// Posts a receive without a buffer: once it matched ([`Request::wait_matched`]), look at
    /// its status and [`Session::peek`] at its first bytes, then give the buffer with
    /// [`Session::unpack`].
    pub fn irecv_deferred(
        &self,
        source: Source,
        tag: impl Into<TagMatch>,
        req: Pin<&Request>,
    ) -> Result<(), Error> {
        // SAFETY: no memory is involved until `unpack`; the request's Drop cancels or waits, so
        // the core never touches it after it is freed.
        unsafe { self.post(source, tag.into(), None, req) }
    }

    unsafe fn post(
        &self,
        source: Source,
        tag: TagMatch,
        data: Option<Data>,
        req: Pin<&Request>,
    ) -> Result<(), Error> {
        let core = &self.0.core;
        // SAFETY: the caller keeps the request pinned until it completes.
        let p = unsafe { req.begin(core, Some(self.0.clone()))? };
        // SAFETY: just begun: ours.
        let st = unsafe { p.state() };
        st.kind = Kind::Recv { deferred: data.is_none() };
        st.data = data.unwrap_or_default();
        // SAFETY: ours; the session takes it.
        let r = unsafe { self.0.post(p, source.rank(), tag.tag, tag.mask) };
        match (&r, source.rank()) {
            // SAFETY: refused: still ours.
            (Err(e), _) => unsafe { p.complete(Some(e.clone())) },
            (Ok(()), Some(peer)) if !req.test() => req.poll_first(core.first_driver(peer)),
            (Ok(()), _) => {}
        }
        r
    }

    /// Copies the first bytes of the message a deferred receive (or matched probe) holds:
    /// the whole message if it came eagerly, else the header its sender attached. Returns the
    /// bytes copied.
    pub fn peek(&self, req: &Request, out: &mut [u8]) -> Result<usize, Error> {
        let p = claimed_of(req)?;
        use crate::core::matching::Body;
        // SAFETY: a matched deferred request is back with its owner (us) and not yet unpacked.
        let st = unsafe { p.state() };
        let Some(u) = &st.claimed else { return Err(Error::InvalidArgument("nothing to peek at".into())) };
        let src: &[u8] = match &u.body {
            Body::Eager { data, .. } => data,
            Body::Rdv { header, .. } => header,
        };
        let n = src.len().min(out.len());
        out[..n].copy_from_slice(&src[..n]);
        Ok(n)
    }

    /// Gives the buffer to a matched deferred receive (or a matched probe): the data arrives
    /// into it and the request completes.
    ///
    /// # Safety
    /// As [`Session::irecv`].
    pub unsafe fn unpack(&self, req: Pin<&Request>, data: Data) -> Result<(), Error> {
        let p = claimed_of(&req)?;
        // SAFETY: as in `peek`: the owner holds the matched request.
        let st = unsafe { p.state() };
        let Some(u) = st.claimed.take() else {
            return Err(Error::InvalidArgument("no message to unpack".into()));
        };
        st.data = data;
        let core = &self.0.core;
        let gate = core.gate(u.source)?;
        // SAFETY: ours; `consume` finishes or hands it to the core.
        unsafe { crate::core::deliver::consume(core, &gate, p, *u) };
        Ok(())
    }

    /// The status of the earliest unexpected message matching, without receiving it.
    pub fn iprobe(&self, source: Source, tag: impl Into<TagMatch>) -> Option<Status> {
        let t = tag.into();
        self.0.core.pioman.progress();
        self.0.probe(source.rank(), t.tag, t.mask)
    }

    /// Waits until a matching message is there; returns its status.
    pub fn probe(&self, source: Source, tag: impl Into<TagMatch>) -> Status {
        let t = tag.into();
        loop {
            if let Some(s) = self.iprobe(source, t) {
                return s;
            }
            marcel::yield_now();
        }
    }

    /// Takes the earliest matching unexpected message into `req` (a matched probe: MPI_Improbe);
    /// receive it with [`Session::unpack`]. Returns whether there was one.
    pub fn improbe(
        &self,
        source: Source,
        tag: impl Into<TagMatch>,
        req: Pin<&Request>,
    ) -> Result<bool, Error> {
        let t = tag.into();
        if req.life_active() {
            return Err(Error::InvalidArgument("the request is still in flight".into()));
        }
        self.0.core.pioman.progress();
        let Some(u) = self.0.take_unexpected(source.rank(), t.tag, t.mask) else { return Ok(false) };
        let core = &self.0.core;
        let gate = core.gate(u.source)?;
        // SAFETY: the request's Drop waits or cancels, so the core never outlives it; it is not
        // in flight (checked above), so `begin` succeeds and the message is not lost.
        let p = unsafe { req.begin(core, None)? };
        // SAFETY: ours.
        let st = unsafe { p.state() };
        st.kind = Kind::Recv { deferred: true };
        // SAFETY: ours; the claim hands it back to us at the signal.
        unsafe { crate::core::deliver::unexpected(core, &gate, p, u) };
        Ok(true)
    }

    /// Cancels a receive that has not matched yet; it completes with `Error::Cancelled`. Returns
    /// whether it was cancelled.
    pub fn cancel(&self, req: &Request) -> bool {
        // SAFETY: only a pointer comparison happens unless it is still posted in this session.
        unsafe { self.0.cancel_ptr(ReqPtr::of(req)) }
    }

    /// Calls `cb` for each unexpected message from `source` matching `tag` that arrives from now
    /// on, after it is stored (the callback may receive it). Returns an id for
    /// [`Session::unmonitor`].
    /// Revokes the session at this process: its posted receives complete with
    /// [`Error::Revoked`] (`reason`), later receives and sends fail at once, messages that
    /// arrive for it are dropped. Telling the other processes is the caller's business
    /// (madmpi's ULFM layer does). Pending sends already handed to a gate are not recalled.
    pub fn revoke(&self, reason: &str) {
        self.0.revoke(reason);
    }

    /// Why the session was revoked here, if it was.
    pub fn revoked(&self) -> Option<String> {
        self.0.revoked()
    }

    pub fn monitor(&self, source: Source, tag: impl Into<TagMatch>, cb: SessionMonitor) -> u64 {
        let t = tag.into();
        self.0.add_monitor(source.rank(), t.tag, t.mask, cb)
    }

    pub fn unmonitor(&self, id: u64) -> bool {
        self.0.remove_monitor(id)
    }

    /// Unexpected messages held now.
    pub fn unexpected_len(&self) -> usize {
        self.0.unexpected_len()
    }

    // ------------------------------------------------------------ safe forms

    /// Sends `buf` and waits until its memory is free.
    pub fn send(&self, peer: PeerId, tag: u64, buf: &[u8]) -> Result<(), Error> {
        self.send_mode(peer, tag, buf, SendMode::default())
    }

    /// Sends `buf` and waits until the receiver matched it.
    pub fn ssend(&self, peer: PeerId, tag: u64, buf: &[u8]) -> Result<(), Error> {
        self.send_mode(peer, tag, buf, SendMode::SYNC)
    }

    pub fn send_mode(&self, peer: PeerId, tag: u64, buf: &[u8], mode: SendMode) -> Result<(), Error> {
        if mode == SendMode::default() && self.send_now(peer, tag, buf) {
            return Ok(());
        }
        let req = std::pin::pin!(Request::new());
        // SAFETY: we wait for completion before returning; the buffer is only read.
        unsafe {
            self.isend(peer, tag, Data::from_raw(buf.as_ptr().cast_mut(), buf.len()), mode, req.as_ref())?
        };
        req.wait();
        req.result().expect("completed").map(|_| ())
    }

    /// Receives into `buf`; returns the status (`Error::Truncated` if the message was longer).
    pub fn recv(&self, source: Source, tag: impl Into<TagMatch>, buf: &mut [u8]) -> Result<Status, Error> {
        let req = std::pin::pin!(Request::new());
        // SAFETY: we wait for completion before returning.
        unsafe { self.irecv(source, tag, Data::from_raw(buf.as_mut_ptr(), buf.len()), req.as_ref())? };
        req.wait();
        req.result().expect("completed")
    }
}

fn claimed_of(req: &Request) -> Result<ReqPtr, Error> {
    if !req.matched() || req.test() {
        return Err(Error::InvalidArgument("the request has not matched, or already completed".into()));
    }
    Ok(ReqPtr::of(req))
}

/// Runs `f` with a [`Scope`] in which nonblocking operations borrow buffers safely: every
/// request started in the scope is finished (waited for, or cancelled if an unmatched receive)
/// before `scope` returns, even on panic.
pub fn scope<'env, T>(f: impl for<'s> FnOnce(&'s Scope<'s, 'env>) -> T) -> T {
    let s = Scope { reqs: RefCell::new(Vec::new()), _env: PhantomData, _scope: PhantomData };
    f(&s)
    // `s` drops here: each request's Drop waits or cancels.
}

/// See [`scope`].
pub struct Scope<'s, 'env: 's> {
    reqs: RefCell<Vec<Pin<Box<Request>>>>,
    _env: PhantomData<&'env mut &'env ()>,
    _scope: PhantomData<&'s mut &'s ()>,
}

impl<'s, 'env> Scope<'s, 'env> {
    fn new_request(&'s self) -> &'s Request {
        let b = Box::pin(Request::new());
        let r: *const Request = &*b;
        self.reqs.borrow_mut().push(b);
        // SAFETY: the box is never moved out nor dropped before the scope ends ('s), and its
        // heap memory does not move when the vector grows.
        unsafe { &*r }
    }

    fn pinned(r: &'s Request) -> Pin<&'s Request> {
        // SAFETY: the request lives in a pinned box owned by the scope.
        unsafe { Pin::new_unchecked(r) }
    }

    pub fn isend(
        &'s self,
        session: &Session,
        peer: PeerId,
        tag: u64,
        buf: &'env [u8],
        mode: SendMode,
    ) -> Result<&'s Request, Error> {
        let r = self.new_request();
        // SAFETY: `buf` outlives the scope, which finishes the request before ending.
        unsafe {
            session.isend(
                peer,
                tag,
                Data::from_raw(buf.as_ptr().cast_mut(), buf.len()),
                mode,
                Self::pinned(r),
            )?
        };
        Ok(r)
    }

    pub fn irecv(
        &'s self,
        session: &Session,
        source: Source,
        tag: impl Into<TagMatch>,
        buf: &'env mut [u8],
    ) -> Result<&'s Request, Error> {
        let r = self.new_request();
        // SAFETY: as above; the buffer is borrowed mutably for 'env.
        unsafe { session.irecv(source, tag, Data::from_raw(buf.as_mut_ptr(), buf.len()), Self::pinned(r))? };
        Ok(r)
    }
}
