//! A session: an independent matching space (madmpi maps each communicator to one). It owns the
//! posted receives, the unexpected messages and the per-peer sequence order of its messages, and
//! the session monitors. It does not move data: matched messages go to `deliver`.
//!
//! Order: every message carries its sequence number on (peer, session). A message that arrives
//! early (multi-rail) waits in a reorder buffer; matching happens strictly in sequence order, so
//! MPI's non-overtaking rule holds whatever the rails do.

use super::Core;
use super::deliver;
use super::gate::Gate;
use super::matching::{Body, Matching, Remote, Unexpected};
use super::payload::Payload;
use super::request::{Error, ReqPtr, Status};
use super::wire::{FLAG_SYNC, MsgHeader};
use crate::drivers::PeerId;
use smallvec::SmallVec;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

/// A DATA or RDV chunk on its way to matching (borrowing the packet, or owned when it must wait).
#[derive(Debug)]
pub(crate) struct Incoming<'a> {
    pub(crate) from: PeerId,
    pub(crate) h: MsgHeader,
    pub(crate) body: InBody<'a>,
}

#[derive(Debug)]
pub(crate) enum InBody<'a> {
    Data { cookie: u64, payload: Payload<'a> },
    Rdv { total: u64, cookie: u64, header: Cow<'a, [u8]>, remote: Option<Remote> },
}

impl Incoming<'_> {
    pub(crate) fn into_owned(self) -> Incoming<'static> {
        let body = match self.body {
            InBody::Data { cookie, payload } => InBody::Data { cookie, payload: payload.into_owned() },
            InBody::Rdv { total, cookie, header, remote } => {
                InBody::Rdv { total, cookie, header: Cow::Owned(header.into_owned()), remote }
            }
        };
        Incoming { from: self.from, h: self.h, body }
    }

    fn into_unexpected(self) -> Unexpected {
        let body = match self.body {
            InBody::Data { cookie, payload } => Body::Eager {
                data: payload.keep(),
                sync_cookie: (self.h.flags & FLAG_SYNC != 0).then_some(cookie),
            },
            InBody::Rdv { total, cookie, header, remote } => {
                Body::Rdv { total, cookie, header: header.into_owned(), remote }
            }
        };
        Unexpected { source: self.from, tag: self.h.tag, arrival: 0, body }
    }

    /// Memory it takes while waiting (for the budget; as [`Unexpected::footprint`]).
    pub(crate) fn footprint(&self) -> u64 {
        64 + match &self.body {
            InBody::Data { payload, .. } => payload.len() as u64,
            InBody::Rdv { header, remote, .. } => {
                header.len() as u64 + remote.as_ref().map_or(0, Remote::footprint)
            }
        }
    }
}

/// Called on unexpected messages matching a filter (after they are stored: the callback may post
/// the receive for it).
pub type SessionMonitor = Arc<dyn Fn(&crate::Session, &Status) + Send + Sync>;

struct MonitorEntry {
    id: u64,
    source: Option<PeerId>,
    tag: u64,
    mask: u64,
    cb: SessionMonitor,
}

#[derive(Default)]
struct Order {
    expected: u32,
    early: BTreeMap<u32, Incoming<'static>>,
}

struct State {
    m: Matching<ReqPtr>,
    order: Vec<Order>,
    closed: bool,
    /// Why the session was revoked: receives and sends fail, arrivals are dropped.
    revoked: Option<String>,
}

pub(crate) struct SessionInner {
    pub(crate) id: u32,
    pub(crate) core: Arc<Core>,
    state: Mutex<State>,
    /// Set once `state.revoked` is: the express send reads it without the lock.
    is_revoked: AtomicBool,
    monitors: RwLock<Vec<MonitorEntry>>,
    next_monitor: AtomicU64,
}

impl SessionInner {
    pub(crate) fn new(id: u32, core: Arc<Core>) -> SessionInner {
        let order =
            core.take_order(id).into_iter().map(|expected| Order { expected, ..Order::default() }).collect();
        SessionInner {
            id,
            core,
            state: Mutex::new(State { m: Matching::new(), order, closed: false, revoked: None }),
            is_revoked: AtomicBool::new(false),
            monitors: RwLock::new(Vec::new()),
            next_monitor: AtomicU64::new(1),
        }
    }

    /// A message arrives from its gate: match it in sequence order or keep it. `Err`: its
    /// sequence number breaks the protocol (see `budget`); nothing was kept.
    #[inline(always)]
    pub(crate) fn deliver(self: &Arc<Self>, gate: &Gate, inc: Incoming<'_>) -> Result<(), String> {
        let core = &*self.core;
        let from = inc.from;
        let mut guard = self.state.lock().unwrap();
        let st = &mut *guard;
        if st.order.len() <= from as usize {
            st.order.resize_with(from as usize + 1, Order::default);
        }
        let ord = &mut st.order[from as usize];
        if gate.allowance.check_seq(inc.h.seq, ord.expected)? != 0 {
            match ord.early.entry(inc.h.seq) {
                Entry::Vacant(v) => {
                    core.budget_add(inc.footprint());
                    v.insert(inc.into_owned());
                }
                Entry::Occupied(_) => return Err(format!("sequence number {} sent twice", inc.h.seq)),
            }
            return Ok(());
        }
        // The usual arrival: in order, nothing early behind it, its receive posted. Delivered
        // as soon as the lock is dropped, with nothing gathered on the way.
        if ord.early.is_empty()
            && st.revoked.is_none()
            && let Some(req) = st.m.arrive(from, inc.h.tag)
        {
            ord.expected = ord.expected.wrapping_add(1);
            drop(guard);
            // SAFETY: taken out of the posted list: we hold it.
            unsafe { deliver::matched(core, gate, req, inc) };
            return Ok(());
        }
        self.deliver_in_order(guard, gate, inc);
        Ok(())
    }

    /// [`SessionInner::deliver`] past its usual case: `inc` (the expected sequence number) and
    /// the early arrivals it releases, matched, stored or dropped (revoked session) in order.
    fn deliver_in_order(self: &Arc<Self>, mut guard: MutexGuard<'_, State>, gate: &Gate, inc: Incoming<'_>) {
        let core = &*self.core;
        let from = inc.from;
        // Usually one message, matched or stored: no allocation for that.
        let mut matched: SmallVec<[(ReqPtr, Incoming<'_>); 2]> = SmallVec::new();
        let mut stored: SmallVec<[Status; 2]> = SmallVec::new();
        let mut dropped: SmallVec<[deliver::Dropped; 1]> = SmallVec::new();
        {
            let st = &mut *guard;
            let mut cur = inc;
            loop {
                let ord = &mut st.order[from as usize];
                ord.expected = ord.expected.wrapping_add(1);
                // On a revoked session an arrival is counted (the order stays right), then
                // dropped: nobody may receive it (its sender is settled with below).
                if st.revoked.is_some() {
                    dropped.push(deliver::Dropped::of_arrival(&cur));
                } else {
                    match st.m.arrive(from, cur.h.tag) {
                        Some(req) => matched.push((req, cur)),
                        None => {
                            let u = cur.into_unexpected();
                            core.budget_add(u.footprint());
                            // Counted before it can be matched (a reader seeing it matched sees it counted).
                            core.counters.unexpected_messages.fetch_add(1, Relaxed);
                            stored.push(Status { source: from, tag: u.tag, len: u.len(), received: 0 });
                            st.m.store(u);
                        }
                    }
                }
                let ord = &mut st.order[from as usize];
                let next = if ord.early.is_empty() { None } else { ord.early.remove(&ord.expected) };
                match next {
                    Some(next) => {
                        core.budget_sub(next.footprint());
                        cur = next;
                    }
                    None => break,
                }
            }
        }
        drop(guard);
        for (req, inc) in matched {
            // SAFETY: taken out of the posted list: we hold it.
            unsafe { deliver::matched(core, gate, req, inc) };
        }
        for d in dropped {
            deliver::refuse(core, gate, d);
        }
        if !stored.is_empty() {
            for s in &stored {
                crate::observe::EVENTS.fire(|| crate::observe::Event::Unexpected {
                    session: self.id,
                    source: s.source,
                    tag: s.tag,
                    len: s.len,
                });
            }
            self.fire_monitors(&stored);
        }
    }

    fn fire_monitors(self: &Arc<Self>, stored: &[Status]) {
        let mons = self.monitors.read().unwrap();
        if mons.is_empty() {
            return;
        }
        let cbs: Vec<(SessionMonitor, Status)> = stored
            .iter()
            .flat_map(|s| {
                mons.iter()
                    .filter(|m| m.source.is_none_or(|p| p == s.source) && (s.tag ^ m.tag) & m.mask == 0)
                    .map(|m| (m.cb.clone(), *s))
            })
            .collect();
        drop(mons);
        let handle = crate::Session(self.clone());
        for (cb, s) in cbs {
            cb(&handle, &s);
        }
    }

    /// Posts a receive (its state set up by the caller), or matches it with an unexpected message.
    ///
    /// # Safety
    /// `req` is an active receive request the caller holds.
    pub(crate) unsafe fn post(
        self: &Arc<Self>,
        req: ReqPtr,
        source: Option<PeerId>,
        tag: u64,
        mask: u64,
    ) -> Result<(), Error> {
        let core = &*self.core;
        let gate = source.map(|p| core.gate_ref(p)).transpose()?;
        let u = {
            let mut st = self.state.lock().unwrap();
            if st.closed {
                return Err(Error::InvalidArgument(format!("session {} is closed", self.id)));
            }
            if let Some(why) = &st.revoked {
                return Err(Error::Revoked(why.clone()));
            }
            // A lost peer's messages that arrived before it was declared lost are still
            // received; only a receive nothing can match fails. Checked under the session lock:
            // `Gate::fail` sets the failure before it fails the posted receives under this
            // lock, so either it finds this receive posted or this check sees the failure.
            match gate.as_ref().and_then(|g| g.failure()) {
                Some(e) => match st.m.take_unexpected(source, tag, mask) {
                    Some(u) => Some(u),
                    None => return Err(e),
                },
                None => st.m.post(req, source, tag, mask),
            }
        };
        if let Some(u) = u {
            core.budget_sub(u.footprint());
            let gate = match gate {
                Some(g) => g,
                None => core.gate_ref(u.source)?,
            };
            // SAFETY: not posted: we still hold it.
            unsafe { deliver::unexpected(core, &gate, req, u) };
        } else if let Some(g) = gate {
            // Posted: a peer never connected to must be reachable for its death to be noticed.
            g.connect_for_receive(core);
        }
        Ok(())
    }

    /// Takes the earliest matching unexpected message (matched probe).
    pub(crate) fn take_unexpected(&self, source: Option<PeerId>, tag: u64, mask: u64) -> Option<Unexpected> {
        let u = self.state.lock().unwrap().m.take_unexpected(source, tag, mask)?;
        self.core.budget_sub(u.footprint());
        Some(u)
    }

    pub(crate) fn probe(&self, source: Option<PeerId>, tag: u64, mask: u64) -> Option<Status> {
        let st = self.state.lock().unwrap();
        st.m.probe(source, tag, mask).map(|u| Status {
            source: u.source,
            tag: u.tag,
            len: u.len(),
            received: 0,
        })
    }

    /// Cancels a posted receive. Returns whether it was still posted (it completes as cancelled).
    ///
    /// # Safety
    /// `req` is a live request of this session.
    pub(crate) unsafe fn cancel_ptr(&self, req: ReqPtr) -> bool {
        let removed = self.state.lock().unwrap().m.cancel(req);
        if removed {
            // SAFETY: removed from the posted list: we hold it.
            unsafe { req.complete(Some(Error::Cancelled)) };
        }
        removed
    }

    /// Fails the receives posted for `peer` specifically; those posted for any source stay
    /// posted (another peer may still send) but their waiters are told ([`super::request::PEER_LOST`]:
    /// madmpi decides whether the loss concerns them, as ULFM's `MPIX_ERR_PROC_FAILED_PENDING`).
    pub(crate) fn fail_posted_for(&self, peer: PeerId, err: &Error) {
        let reqs = {
            let mut st = self.state.lock().unwrap();
            for r in st.m.posted_any() {
                // SAFETY: posted: the session holds it, and keeps its lock while signalling.
                unsafe { r.signal_peer_lost() };
            }
            st.m.drain_posted_for(peer)
        };
        for r in reqs {
            // SAFETY: drained from the posted list: we hold them.
            unsafe { r.complete(Some(err.clone())) };
        }
    }

    /// Drops the messages of `peer` (it broke the protocol): unmatched, or waiting for an
    /// earlier sequence number. Returns their footprint.
    pub(crate) fn purge(&self, peer: PeerId) -> u64 {
        let mut st = self.state.lock().unwrap();
        let mut bytes: u64 = st.m.drain_unexpected_from(peer).iter().map(Unexpected::footprint).sum();
        if let Some(o) = st.order.get_mut(peer as usize) {
            bytes += o.early.values().map(Incoming::footprint).sum::<u64>();
            o.early.clear();
        }
        bytes
    }

    /// Closes the session: posted receives complete as cancelled, unexpected messages are dropped.
    pub(crate) fn close(&self) {
        let (reqs, dropped) = {
            let mut st = self.state.lock().unwrap();
            st.closed = true;
            let reqs = st.m.drain_all_posted();
            let mut bytes = 0;
            while let Some(u) = st.m.take_unexpected(None, 0, 0) {
                bytes += u.footprint();
            }
            for o in &mut st.order {
                bytes += o.early.values().map(Incoming::footprint).sum::<u64>();
                o.early.clear();
            }
            self.core.save_order(self.id, st.order.iter().map(|o| o.expected).collect());
            (reqs, bytes)
        };
        self.core.budget_sub(dropped);
        for r in reqs {
            // SAFETY: drained: we hold them.
            unsafe { r.complete(Some(Error::Cancelled)) };
        }
    }

    /// Revokes the session: its posted receives complete with [`Error::Revoked`], its
    /// unexpected messages are dropped, and from now on receives and sends fail at once and
    /// arrivals are dropped. A dropped message's sender gets its credit back, and is told if it
    /// waits for an answer (`deliver::refuse`: a rendezvous or synchronous send fails as revoked
    /// there). Idempotent (the first reason stays).
    pub(crate) fn revoke(&self, reason: &str) {
        let (reqs, unexpected, err) = {
            let mut st = self.state.lock().unwrap();
            if st.revoked.is_some() {
                return;
            }
            st.revoked = Some(reason.to_string());
            self.is_revoked.store(true, Relaxed);
            let reqs = st.m.drain_all_posted();
            let mut unexpected = Vec::new();
            while let Some(u) = st.m.take_unexpected(None, 0, 0) {
                unexpected.push(u);
            }
            (reqs, unexpected, Error::Revoked(reason.to_string()))
        };
        self.core.budget_sub(unexpected.iter().map(Unexpected::footprint).sum());
        for u in &unexpected {
            if let Ok(g) = self.core.gate(u.source) {
                deliver::refuse(&self.core, &g, deliver::Dropped::of_unexpected(u));
            }
        }
        for r in reqs {
            // SAFETY: drained from the posted list: we hold them.
            unsafe { r.complete(Some(err.clone())) };
        }
    }

    /// Whether the session was revoked (a relaxed read: a send racing the revocation may go,
    /// as one just before it would).
    pub(crate) fn is_revoked(&self) -> bool {
        self.is_revoked.load(Relaxed)
    }

    /// Why the session was revoked, if it was.
    pub(crate) fn revoked(&self) -> Option<String> {
        self.state.lock().unwrap().revoked.clone()
    }

    pub(crate) fn add_monitor(&self, source: Option<PeerId>, tag: u64, mask: u64, cb: SessionMonitor) -> u64 {
        let id = self.next_monitor.fetch_add(1, Relaxed);
        self.monitors.write().unwrap().push(MonitorEntry { id, source, tag, mask, cb });
        id
    }

    pub(crate) fn remove_monitor(&self, id: u64) -> bool {
        let mut m = self.monitors.write().unwrap();
        let n = m.len();
        m.retain(|e| e.id != id);
        m.len() != n
    }

    pub(crate) fn unexpected_len(&self) -> usize {
        self.state.lock().unwrap().m.unexpected_len()
    }
}
