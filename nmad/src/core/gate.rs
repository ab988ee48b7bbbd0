//! A gate: everything about one peer — its rails, what waits to be sent to it, the sends waiting
//! for its answers, the large receives it feeds, and the flow-control credit both ways.
//!
//! Sending: messages wait in order in `Out::msgs` (sequence numbers per session assigned when
//! queued), control chunks in `Out::control`. [`Gate::flush`] asks the strategy for a packet
//! plan, builds the packet (headers in a reused buffer, payloads as iovec segments pointing at
//! user memory), and offers it to the rail's link; only when the link takes it are the chunks
//! committed (so a busy link changes nothing). The gate lock is per peer: no lock is global.
//!
//! Flow control: an eager message costs the sender `len + 64` bytes of the credit the receiver
//! granted; without enough credit a message goes as a rendezvous request (which costs one slot);
//! without a slot it waits. The receiver returns credit as messages are consumed, piggy-backed
//! on any packet to the peer or, past a threshold, in a packet of its own, and fails a peer that
//! sends beyond it (`Gate::allowance`, see `budget`).

mod am_out;
mod connect_on_receive;
mod eager_now;
pub(crate) mod failover;
pub(crate) mod write_rdv;

use super::Core;
use super::budget::Allowance;
use super::request::{Error, Kind, ReqPtr};
use super::slab::Slab;
use super::wire::{self, Encoder, FLAG_READ, FLAG_SYNC, MsgHeader, Piece};
use crate::drivers::{
    Access, BulkHeader, Exposed, LargePath, Link, MAX_EXPOSED_SEGMENTS, PeerId, Segment, Sent,
};
use crate::observe::Event;
use crate::strategies::{Plan, RailInfo, Strategy};
use eager_now::Now;
use rustc_hash::FxHashMap as HashMap;
use smallvec::SmallVec;
use std::collections::VecDeque;

/// Sends completed by one flush (usually one or a few: kept inline, no allocation).
type Completed = SmallVec<[ReqPtr; 4]>;
use std::io::{self, IoSlice};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex, OnceLock};

/// Credit an eager message costs beyond its payload (its share of headers and bookkeeping).
pub(crate) const EAGER_OVERHEAD: u64 = 64;

/// One way to the peer: a driver, and the link once connected.
pub(crate) struct Rail {
    pub(crate) driver: usize,
    pub(crate) info: RailInfo,
    card: String,
    peer: PeerId,
    /// The links the rail had, each set once and never replaced, so that the send paths read
    /// the current one (`links[current]`) without a lock; a rail failover re-admits after a
    /// failure gets the next slot ([`Rail::readmit`]).
    links: [OnceLock<Arc<dyn Link>>; LINKS_PER_RAIL],
    current: AtomicUsize,
    /// Held while connecting, so that one link is made.
    connecting: Mutex<()>,
    /// Its driver reported the link failed (after delivering what the peer had sent through it),
    /// or failover declared it failed.
    down: AtomicBool,
    /// Used only while every other rail is down (`NMAD_FALLBACK`).
    pub(crate) fallback: bool,
}

impl Rail {
    pub(crate) fn new(driver: usize, info: RailInfo, card: String, peer: PeerId) -> Rail {
        Rail {
            driver,
            info,
            card,
            peer,
            links: Default::default(),
            current: AtomicUsize::new(0),
            connecting: Mutex::new(()),
            down: AtomicBool::new(false),
            fallback: false,
        }
    }

    /// A rail used only while every other one is down.
    pub(crate) fn into_fallback(self) -> Rail {
        Rail { fallback: true, ..self }
    }

    /// The link, connecting on first use (lazily: no n² connections at start-up).
    #[inline]
    pub(crate) fn link(&self, core: &Core) -> io::Result<&Arc<dyn Link>> {
        match self.slot().get() {
            Some(l) => Ok(l),
            None => self.connect(core),
        }
    }

    #[inline]
    fn slot(&self) -> &OnceLock<Arc<dyn Link>> {
        // Masked, not bounds-checked: `current` stays below the (power of two) slot count.
        &self.links[self.current.load(Acquire) & (LINKS_PER_RAIL - 1)]
    }

    /// [`Rail::link`] the first time: connects (once, whoever else asks meanwhile).
    #[cold]
    #[inline(never)]
    fn connect(&self, core: &Core) -> io::Result<&Arc<dyn Link>> {
        let _connecting = self.connecting.lock().unwrap();
        if let Some(l) = self.slot().get() {
            return Ok(l);
        }
        let d = &core.drivers[self.driver];
        let new = marcel::blocking(|| d.connect(self.peer, &self.card))?;
        Ok(self.slot().get_or_init(|| new))
    }

    /// The link if there is one (no connecting).
    pub(crate) fn linked(&self) -> Option<&Arc<dyn Link>> {
        self.slot().get()
    }

    /// Uses a link the peer opened, unless we have one already; `true` if it re-admits this
    /// failed rail ([`Rail::readmit`], if `may_readmit`: on a failover gate).
    pub(crate) fn adopt(&self, link: Arc<dyn Link>, may_readmit: bool) -> bool {
        if may_readmit && self.down.load(SeqCst) {
            return self.readmit(link);
        }
        let _connecting = self.connecting.lock().unwrap();
        let _ = self.slot().set(link);
        false
    }

    /// A failed rail comes back with `link`, a new connection (ours or the peer's): `false` if
    /// the rail is up, or has been re-admitted as often as it can be.
    pub(crate) fn readmit(&self, link: Arc<dyn Link>) -> bool {
        let _connecting = self.connecting.lock().unwrap();
        let next = self.current.load(Acquire) + 1;
        if !self.down.load(SeqCst) || next >= LINKS_PER_RAIL || self.links[next].set(link).is_err() {
            return false;
        }
        self.current.store(next, Release);
        self.down.store(false, SeqCst);
        true
    }

    pub(crate) fn is_down(&self) -> bool {
        self.down.load(Relaxed)
    }

    /// The driver and business card to connect with (a failover probe).
    pub(crate) fn card(&self) -> &str {
        &self.card
    }
}

/// Links a rail may have over a job: the first, then one per re-admission after a failure (a
/// power of two: see `Rail::slot`).
const LINKS_PER_RAIL: usize = 16;
const _: () = assert!(LINKS_PER_RAIL.is_power_of_two());

/// Why a packet could not go.
pub(super) enum SendError {
    /// The link failed: its driver reports it (`Sink::link_failed`) once it has delivered what
    /// the peer sent before, so only the gate's sending side is down until then.
    Link(io::Error),
    /// No link could be made, the driver is shut down, or a bug: nothing more will come from
    /// the driver, and the gate fails at once.
    Gate(io::Error),
}

impl SendError {
    /// Classifies an error of `Link::try_send` or `Link::send_bulk`.
    pub(super) fn of_link(e: io::Error) -> SendError {
        match e.kind() {
            // A refused call (our bug) or a driver shut down: no failure report will follow.
            io::ErrorKind::InvalidInput | io::ErrorKind::NotConnected => SendError::Gate(e),
            _ => SendError::Link(e),
        }
    }
}

/// Control chunks waiting to go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Control {
    Rtr {
        cookie: u64,
        recv_cookie: u64,
        accepted: u64,
        pieces: Vec<(usize, u64, u64)>,
    },
    Fin(u64),
    /// Ready to be written: receive `recv_cookie` exposed the first `written` bytes of its
    /// buffer through `rail`, giving `key`.
    Rtw {
        cookie: u64,
        recv_cookie: u64,
        accepted: u64,
        written: u64,
        rail: usize,
        key: Vec<u8>,
    },
    /// The data of receive `recv_cookie` is written (see `write_rdv`).
    Written(u64),
    Ack(u64),
    /// The message of send `cookie` was dropped unmatched (see `deliver::refuse`).
    Nak(u64),
    /// An active message (its credit taken when it was admitted: `am_out`).
    Am(am_out::AmOut),
    /// Our rail `.0` to the peer failed (rail failover).
    RailDown(usize),
}

impl Control {
    fn wire_size(&self) -> usize {
        match self {
            Control::Rtr { pieces, .. } => 1 + 40 + pieces.len() * (1 + wire::MAX_RAIL_NAME + 20),
            Control::Rtw { key, .. } => 1 + 40 + 1 + wire::MAX_RAIL_NAME + 2 + key.len(),
            Control::Fin(_) | Control::Written(_) | Control::Ack(_) | Control::Nak(_) => 11,
            Control::Am(am) => am.wire_size(),
            Control::RailDown(_) => 2 + wire::MAX_RAIL_NAME,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Proto {
    Eager,
    Rdv,
}

/// A piece of the packet being built: header bytes (a range of `Out::hdr`) or user memory.
#[derive(Clone, Copy)]
enum Part {
    Hdr(usize, usize),
    Mem(Segment),
}

/// The send side of a gate (under the gate lock).
pub(crate) struct Out {
    control: VecDeque<Control>,
    /// Active messages waiting for credit.
    ams: VecDeque<am_out::AmOut>,
    msgs: VecDeque<ReqPtr>,
    next_seq: SeqNumbers,
    /// Eager credit (bytes) and rendezvous slots the peer granted us.
    credit: u64,
    slots: u64,
    /// Sends waiting for an answer (RTR, FIN, ACK) or for their bulk data to leave, by cookie.
    sends: Slab<ReqPtr>,
    // Scratch space reused by every packet.
    hdr: Vec<u8>,
    parts: Vec<Part>,
    segs: Vec<Segment>,
    iov: Vec<IoSlice<'static>>,
    flat: Vec<u8>,
    cookies: Vec<u64>,
    ctrl_sizes: Vec<usize>,
    msg_sizes: Vec<usize>,
    protos: Vec<Proto>,
    rails: Vec<RailInfo>,
    /// Messages wait for credit (set at the first planning that finds none, for counting
    /// stalls once).
    stalled: bool,
    /// Rail failover's sending side (gates with several network rails).
    outbox: Option<Box<failover::Outbox>>,
    /// Rails whose send failed during this flush, and why (handled once the lock is released).
    lost_rails: Vec<(usize, String)>,
    /// The latency path's packet headers (`eager_now.rs`), written in place.
    small: wire::Small,
}

impl Out {
    /// The registered send `cookie` that the peer's `answer` (an RTR, an RTW) names, if the
    /// `accepted` bytes fit its message.
    fn answered(&mut self, cookie: u64, accepted: u64, answer: &str) -> Result<ReqPtr, String> {
        let Some(&mut req) = self.sends.get_mut(cookie) else {
            return Err(format!("{answer} for unknown send {cookie:#x}"));
        };
        // SAFETY: registered sends are held by the gate; the caller holds its lock.
        let len = unsafe { req.state() }.data.len();
        if accepted > len as u64 {
            return Err(format!("{answer} accepts {accepted} bytes of a {len}-byte message"));
        }
        Ok(req)
    }
}

/// The next sequence number of each session's messages to the peer: indexed by id for the ids
/// the sessions table holds directly (grown to the largest used), the others in a map.
#[derive(Default)]
struct SeqNumbers {
    direct: Vec<u32>,
    others: HashMap<u32, u32>,
}

impl SeqNumbers {
    /// Session `session`'s next number, to read and advance.
    #[inline]
    fn of(&mut self, session: u32) -> &mut u32 {
        let i = session as usize;
        if i < self.direct.len() {
            return &mut self.direct[i];
        }
        self.of_new(session)
    }

    #[cold]
    fn of_new(&mut self, session: u32) -> &mut u32 {
        if session >= super::sessions::DIRECT {
            return self.others.entry(session).or_insert(0);
        }
        self.direct.resize(session as usize + 1, 0);
        &mut self.direct[session as usize]
    }
}

/// A large message being received into a posted buffer, by receive cookie.
pub(crate) struct LargeRecv {
    pub(crate) req: ReqPtr,
    pub(crate) accepted: u64,
    pub(crate) received: u64,
    /// The part of the buffer the sender was asked to write (an RTW was sent), until WRITTEN.
    pub(crate) writing: Option<write_rdv::Writing>,
    /// This process is reading its share of a written rendezvous (outside the table's lock).
    pub(crate) reading: bool,
    /// On a failover gate: the pieces asked for and the bytes that arrived.
    pub(crate) track: Option<Box<failover::Track>>,
}

pub(crate) struct Gate {
    pub(crate) peer: PeerId,
    /// Sorted by latency (rail 0 is the lowest).
    pub(crate) rails: Vec<Rail>,
    pub(crate) out: Mutex<Out>,
    pub(crate) large_in: Mutex<Slab<LargeRecv>>,
    /// Credit to give back to the peer (bytes, slots).
    pub(crate) owed_bytes: AtomicU64,
    pub(crate) owed_slots: AtomicU64,
    /// Owed credit past which it goes back in a packet of its own.
    pub(crate) owed_threshold: u64,
    /// What the peer holds of the credit we granted it (checked on arrival).
    pub(crate) allowance: Allowance,
    pub(crate) eager_limit: usize,
    /// The peer is lost: everything it sent before has been delivered, every request involving
    /// it fails.
    pub(crate) failed: OnceLock<String>,
    /// Sending to the peer failed on a link whose failure its driver has yet to report: sends
    /// fail, receives wait for the report (what the peer sent may still be in the link).
    send_failed: OnceLock<String>,
    /// The system refused a remote read from this peer: use bulk transfers.
    pub(crate) no_remote_read: AtomicBool,
    pub(crate) backlogged: AtomicBool,
    /// A rail has had a link (so a posted receive need not connect: `connect_for_receive`).
    pub(crate) linked_once: AtomicBool,
    /// Rail failover (gates with several network rails: [`failover::Failover::wanted`]).
    pub(crate) failover: Option<Box<failover::Failover>>,
}

impl Gate {
    /// `credit`/`slots`: what the peer grants us (from its card); `grant`: the bytes and slots
    /// we grant it; `failover`: the heartbeat timings, for a gate that fails over between its
    /// rails.
    pub(crate) fn new(
        peer: PeerId,
        rails: Vec<Rail>,
        (credit, slots): (u64, u64),
        grant: (u64, u64),
        eager_cap: usize,
        failover: Option<failover::Timings>,
    ) -> Gate {
        let failover = failover.map(|t| Box::new(failover::Failover::new(rails.len(), t)));
        let eager_limit = rails
            .iter()
            .map(|r| r.info.caps.eager_limit.min(r.info.room().saturating_sub(wire::MAX_HEADER + 16)))
            .map(|limit| limit.min(wire::MAX_DATA))
            .min()
            .unwrap_or(0)
            .min(eager_cap);
        let infos = rails.iter().map(|r| r.info.clone()).collect();
        Gate {
            peer,
            rails,
            out: Mutex::new(Out {
                control: VecDeque::new(),
                ams: VecDeque::new(),
                msgs: VecDeque::new(),
                next_seq: SeqNumbers::default(),
                credit,
                slots,
                sends: Slab::default(),
                hdr: Vec::with_capacity(4096),
                parts: Vec::new(),
                segs: Vec::new(),
                iov: Vec::new(),
                flat: Vec::new(),
                cookies: Vec::new(),
                ctrl_sizes: Vec::new(),
                msg_sizes: Vec::new(),
                protos: Vec::new(),
                rails: infos,
                stalled: false,
                outbox: failover.is_some().then(|| Box::new(failover::Outbox::new())),
                lost_rails: Vec::new(),
                small: wire::Small::new(),
            }),
            large_in: Mutex::new(Slab::default()),
            owed_bytes: AtomicU64::new(0),
            owed_slots: AtomicU64::new(0),
            owed_threshold: (grant.0 / 4).max(1),
            allowance: Allowance::new(grant.0, grant.1),
            eager_limit,
            failed: OnceLock::new(),
            send_failed: OnceLock::new(),
            no_remote_read: AtomicBool::new(false),
            backlogged: AtomicBool::new(false),
            linked_once: AtomicBool::new(false),
            failover,
        }
    }

    pub(crate) fn rail_by_driver(&self, driver: usize) -> Option<&Rail> {
        self.rails.iter().find(|r| r.driver == driver)
    }

    pub(super) fn rail_by_name(&self, name: &[u8]) -> Option<usize> {
        self.rails.iter().position(|r| r.info.name.as_bytes() == name)
    }

    /// The peer is lost (see [`Gate::fail`]).
    pub(crate) fn failure(&self) -> Option<Error> {
        self.failed.get().map(|r| Error::PeerFailed { peer: self.peer, reason: r.clone() })
    }

    /// Nothing can be sent to the peer any more: it is lost, or a link to it failed.
    fn send_failure(&self) -> Option<Error> {
        let r = self.failed.get().or_else(|| self.send_failed.get())?;
        Some(Error::PeerFailed { peer: self.peer, reason: r.clone() })
    }

    /// Queues a send (its state is set up by the caller) and assigns its sequence number.
    ///
    /// # Safety
    /// `req` is an active send request the caller holds; it passes to the gate.
    pub(crate) unsafe fn enqueue(&self, core: &Core, req: ReqPtr) -> Result<(), Error> {
        let failed = {
            let mut out = self.out.lock().unwrap();
            if let Some(e) = self.send_failure() {
                return Err(e);
            }
            // SAFETY: we hold the request (caller's contract).
            let st = unsafe { req.state() };
            let Kind::Send { session, .. } = st.kind else { unreachable!("enqueue of a receive") };
            let seq = out.next_seq.of(session);
            st.seq = *seq;
            *seq = seq.wrapping_add(1);
            // SAFETY: we hold the request and the gate lock.
            let failed = match unsafe { self.eager_now(core, &mut out, req) } {
                Ok(Now::Sent) => {
                    drop(out);
                    // SAFETY: never queued: we still hold it.
                    unsafe { req.complete(None) };
                    return Ok(());
                }
                Ok(Now::NotNow) => None,
                Err(e) => Some(e),
            };
            out.msgs.push_back(req);
            failed
        };
        match failed {
            // Both complete every queued request, this one included, with the error.
            Some(e) => self.send_error(core, e),
            None => self.flush(core),
        }
        Ok(())
    }

    /// Queues a control chunk and sends what can go (nothing, once sending to the peer failed).
    pub(crate) fn control(&self, core: &Core, c: Control) {
        {
            let mut out = self.out.lock().unwrap();
            if self.send_failure().is_some() {
                return;
            }
            out.control.push_back(c);
        }
        self.flush(core);
    }

    /// Whether something handed to this gate or its links has yet to leave the process: control
    /// chunks (answers the peer waits for) or a link's pending output. Flushes first.
    pub(crate) fn output_pending(&self, core: &Core) -> bool {
        self.flush(core);
        if self.send_failure().is_some() {
            return false;
        }
        {
            let out = self.out.lock().unwrap();
            // On a failover gate a packet is ours until acknowledged: its rail may still fail.
            if !out.control.is_empty() || out.outbox.as_ref().is_some_and(|ob| ob.unacknowledged() > 0) {
                return true;
            }
        }
        self.rails.iter().any(|r| r.linked().is_some_and(|l| l.sending()))
    }

    /// What [`Gate::output_pending`] waits for, for the report of a finalize that gave up.
    pub(crate) fn describe_pending(&self) -> String {
        let out = self.out.lock().unwrap();
        let mut what = Vec::new();
        if !out.control.is_empty() {
            what.push(format!("{} control chunks", out.control.len()));
        }
        if let Some(ob) = &out.outbox {
            what.push(format!("{} packets unacknowledged", ob.unacknowledged()));
        }
        for r in &self.rails {
            if r.linked().is_some_and(|l| l.sending()) {
                what.push(format!("{} sending", r.info.name));
            }
        }
        format!("peer {}: {}", self.peer, what.join(", "))
    }

    /// Sends as many packets as the links take.
    pub(crate) fn flush(&self, core: &Core) {
        self.flush_with(core, &*core.strategy);
    }

    /// `flush` with a given strategy.
    pub(crate) fn flush_with(&self, core: &Core, strategy: &dyn Strategy) {
        let mut completed: Completed = SmallVec::new();
        let mut error = None;
        {
            let mut out = self.out.lock().unwrap();
            if self.send_failure().is_some() {
                return;
            }
            self.plan_rails(&mut out);
            loop {
                match self.send_one(core, strategy, &mut out, &mut completed) {
                    Ok(true) => continue,
                    Ok(false) => break,
                    Err(e) => {
                        error = Some(e);
                        break;
                    }
                }
            }
        }
        // The failure completes what is still queued with the error; the sends of the packets
        // that went before it complete normally.
        if let Some(e) = error {
            self.send_error(core, e);
        }
        if self.failover.is_some() {
            let (lost, sent) = {
                let mut out = self.out.lock().unwrap();
                let sent = out.outbox.as_mut().map_or(0, |ob| std::mem::take(&mut ob.journaled));
                (std::mem::take(&mut out.lost_rails), sent)
            };
            for (rail, why) in lost {
                self.rail_failed(core, rail, &why);
            }
            failover::test_cut_after(core, self, failover::Step::Packet, sent);
        }
        for r in completed {
            // SAFETY: taken out of the queue by `send_one`: we hold it.
            unsafe { r.complete(None) };
        }
    }

    /// Builds and offers one packet. `Ok(false)`: nothing (more) can go now.
    fn send_one(
        &self,
        core: &Core,
        strategy: &dyn Strategy,
        out: &mut Out,
        completed: &mut Completed,
    ) -> Result<bool, SendError> {
        let o = &mut *out;
        if let Some(r) = self.resend_one(core, o) {
            return r;
        }
        o.ctrl_sizes.clear();
        o.ctrl_sizes.extend(o.control.iter().map(Control::wire_size));
        self.plan_messages(core, o);
        let owed = (self.owed_bytes.load(Relaxed), self.owed_slots.load(Relaxed));
        let credit_due = self.credit_due(owed);
        let ack_due = self.failover.as_ref().is_some_and(|f| f.ack_due(failover::now_us()));
        // The peer's window is full: only an acknowledgement may go (no chunk, no credit: they
        // would have to be numbered) until it acknowledges ours.
        let room = self.journal_has_room(o);
        if !room && !ack_due {
            return Ok(false);
        }
        let plan = if o.ctrl_sizes.is_empty() && o.msg_sizes.is_empty() || !room {
            if !credit_due && !ack_due {
                return Ok(false);
            }
            match crate::strategies::first_free(&o.rails) {
                Some(rail) => Plan { rail, control: 0, messages: 0 },
                None => return Ok(false),
            }
        } else {
            match strategy.pack(&o.ctrl_sizes, &o.msg_sizes, &o.rails) {
                Some(p) => self.sanitize(p, o),
                None => return Ok(false),
            }
        };
        let link = self.rails[plan.rail].link(core).map_err(SendError::Gate)?;
        let (taken, numbered, acked) = self.build(core, o, &plan, room).map_err(SendError::Gate)?;
        let urgent = self.urgent(o, &plan, taken);
        let send = |p: &[IoSlice<'_>]| if urgent { link.try_send(p) } else { link.try_send_lazy(p) };
        let sent = if self.rails[plan.rail].info.caps.iovec {
            send(&o.iov)
        } else {
            o.flat.clear();
            for s in &o.iov {
                o.flat.extend_from_slice(s);
            }
            send(&[IoSlice::new(&o.flat)])
        };
        let bytes = o.iov.iter().map(|s| s.len()).sum::<usize>();
        if matches!(sent, Ok(Sent::Done)) {
            self.journal(o, plan.rail, numbered);
        }
        o.iov.clear(); // the slices borrowed `hdr` and user memory only for the send
        match sent {
            Ok(Sent::Done) => {
                core.counters.sent(self.rails[plan.rail].driver, bytes);
                core.packets.fetch_add(1, Relaxed);
                core.chunks.fetch_add((plan.control + plan.messages) as u64, Relaxed);
                self.commit(core, o, &plan, completed);
                Ok(true)
            }
            Ok(Sent::Busy) if acked => {
                self.ack_not_sent();
                self.sent_busy(core, o, &plan, taken)
            }
            Ok(Sent::Busy) => self.sent_busy(core, o, &plan, taken),
            Err(e) if self.failover.is_some() => {
                // Another rail may carry it: nothing went, the queues stay as they were.
                self.unbuild(o, taken);
                if acked {
                    self.ack_not_sent();
                }
                o.lost_rails.push((plan.rail, format!("sending failed: {e}")));
                o.rails[plan.rail].busy = true;
                Ok(o.rails.iter().any(|r| !r.busy))
            }
            Err(e) => {
                // Nothing went: the queues stay as they were (the failure drains them).
                self.unbuild(o, taken);
                Err(SendError::of_link(e))
            }
        }
    }

    /// The link refused the packet of `plan`: nothing changes but the rail counts as busy.
    fn sent_busy(&self, core: &Core, o: &mut Out, plan: &Plan, taken: (u64, u64)) -> Result<bool, SendError> {
        self.unbuild(o, taken);
        o.rails[plan.rail].busy = true;
        self.note_backlog(core);
        Ok(o.rails.iter().any(|r| !r.busy))
    }

    /// A packet built did not go: the credit it carried is owed again and its sends forget the
    /// cookies it gave them (the queues are as they were).
    fn unbuild(&self, o: &mut Out, taken: (u64, u64)) {
        self.owed_bytes.fetch_add(taken.0, Relaxed);
        self.owed_slots.fetch_add(taken.1, Relaxed);
        for c in o.cookies.drain(..) {
            o.sends.remove(c);
        }
    }

    /// A link refused a packet: the gate is retried after the drivers' next poll.
    fn note_backlog(&self, core: &Core) {
        if !self.backlogged.swap(true, AcqRel) {
            core.backlog.push(self.peer);
        }
    }

    /// Decides, in order, how each waiting message goes (eager or rendezvous) with the credit
    /// left, stopping at the first that cannot go yet (later ones must not overtake it).
    fn plan_messages(&self, core: &Core, o: &mut Out) {
        o.msg_sizes.clear();
        o.protos.clear();
        let (mut credit, mut slots) = (o.credit, o.slots);
        // No packet holds more than the largest room: looking further is wasted work.
        let horizon = o.rails.iter().map(RailInfo::room).max().unwrap_or(0);
        let mut planned = 0;
        for &req in &o.msgs {
            if planned > horizon {
                break;
            }
            // SAFETY: queued requests are held by the gate; we hold the gate lock.
            let st = unsafe { req.state() };
            let len = st.data.len();
            let cost = len as u64 + EAGER_OVERHEAD;
            if len <= self.eager_limit && credit >= cost {
                o.stalled = false;
                credit -= cost;
                o.protos.push(Proto::Eager);
                o.msg_sizes.push(wire::MAX_HEADER + 10 + len);
                planned += wire::MAX_HEADER + 10 + len;
            } else if slots > 0 {
                o.stalled = false;
                slots -= 1;
                o.protos.push(Proto::Rdv);
                let hl = st.header_len.min(len).min(wire::MAX_RDV_HEADER);
                let size = wire::MAX_HEADER + 30 + hl + wire::MAX_RAIL_NAME + crate::drivers::MAX_KEY;
                o.msg_sizes.push(size);
                planned += size;
            } else {
                if !o.stalled {
                    o.stalled = true;
                    core.counters.credit_stalls.fetch_add(1, Relaxed);
                    crate::observe::EVENTS.fire(|| Event::CreditStall { peer: self.peer });
                }
                break;
            }
        }
    }

    /// Keeps a strategy's plan within what is waiting and non-empty.
    fn sanitize(&self, mut p: Plan, o: &Out) -> Plan {
        p.rail = p.rail.min(self.rails.len() - 1);
        p.control = p.control.min(o.ctrl_sizes.len());
        p.messages = p.messages.min(o.msg_sizes.len());
        if p.control + p.messages == 0 {
            if o.ctrl_sizes.is_empty() {
                p.messages = 1;
            } else {
                p.control = 1;
            }
        }
        let room = o.rails[p.rail].room();
        while p.control + p.messages > 1
            && o.ctrl_sizes[..p.control].iter().chain(&o.msg_sizes[..p.messages]).sum::<usize>() > room
        {
            if p.messages > 0 {
                p.messages -= 1;
            } else {
                p.control -= 1;
            }
        }
        p
    }

    /// Exposes `mem` for the peer to read through the first rail that can, if any: the rail's
    /// name and what it gave.
    ///
    /// # Safety
    /// `mem` must stay valid and unchanged while the [`Exposed`] lives.
    unsafe fn expose(&self, core: &Core, mem: &[Segment]) -> Option<(usize, Exposed)> {
        if self.no_remote_read.load(Relaxed) {
            return None;
        }
        let i = self.rails.iter().position(|r| r.info.caps.large == LargePath::ReadRemote)?;
        let link = self.rails[i].link(core).ok()?;
        // SAFETY: the caller's contract.
        let e = unsafe { link.expose(mem, Access::Read) }.ok()?;
        (e.key().len() <= crate::drivers::MAX_KEY && !e.key().is_empty()).then_some((i, e))
    }

    /// Whether owing the peer `owed` (bytes, slots) calls for giving it back now, in a packet of
    /// its own if need be: the peer may be running short.
    pub(crate) fn credit_due(&self, owed: (u64, u64)) -> bool {
        owed.0 >= self.owed_threshold || owed.1 >= 16
    }

    /// Whether the packet of `plan` (carrying `taken` credit back) holds something the peer's
    /// progress depends on — a control chunk, credit that was due, a rendezvous request, a
    /// synchronous send, a message whose request is watched (a collective's schedule, a
    /// partitioned transfer) — rather than plain eager data and a little credit, which a peer
    /// asleep in its progression thread may read later (`Link::try_send_lazy`).
    fn urgent(&self, o: &Out, plan: &Plan, taken: (u64, u64)) -> bool {
        plan.control > 0
            || self.credit_due(taken)
            || (0..plan.messages).any(|i| {
                // SAFETY: queued: the gate holds it, and the caller holds the gate lock.
                let st = unsafe { o.msgs[i].state() };
                let sync = matches!(st.kind, Kind::Send { flags, .. } if flags & FLAG_SYNC != 0);
                o.protos[i] == Proto::Rdv || sync || st.monitor.is_some()
            })
    }

    /// Encodes the packet of `plan` into `o.hdr`/`o.iov`; `room`: the failover journal may take
    /// a numbered packet (always, without failover). Returns the credit it carries back, and on
    /// a failover gate whether it is numbered (kept until acknowledged) and whether it carries
    /// an acknowledgement.
    fn build(
        &self,
        core: &Core,
        o: &mut Out,
        plan: &Plan,
        room: bool,
    ) -> io::Result<((u64, u64), bool, bool)> {
        o.hdr.clear();
        o.parts.clear();
        o.cookies.clear();
        o.hdr.push(wire::VERSION);
        // Credit travels only in numbered packets: not while the peer's window is full.
        let taken =
            if room { (self.owed_bytes.swap(0, Relaxed), self.owed_slots.swap(0, Relaxed)) } else { (0, 0) };
        let numbered = self.failover.is_some() && (plan.control + plan.messages > 0 || taken != (0, 0));
        let acked = self.failover_head(o, numbered);
        let mut mark = 0;
        for c in o.control.iter().take(plan.control) {
            let mut e = Encoder(&mut o.hdr);
            match c {
                Control::Rtr { cookie, recv_cookie, accepted, pieces } => {
                    let pieces: Vec<Piece<'_>> = pieces
                        .iter()
                        .map(|&(rail, offset, len)| Piece {
                            rail: self.rails[rail].info.name.as_bytes(),
                            offset,
                            len,
                        })
                        .collect();
                    e.rtr(*cookie, *recv_cookie, *accepted, &pieces);
                }
                Control::Rtw { cookie, recv_cookie, accepted, written, rail, key } => {
                    let remote = wire::RemoteMem { rail: self.rails[*rail].info.name.as_bytes(), key };
                    e.rtw(*cookie, *recv_cookie, *accepted, *written, remote);
                }
                Control::Fin(c) => e.fin(*c),
                Control::Written(c) => e.written(*c),
                Control::Ack(c) => e.ack(*c),
                Control::Nak(c) => e.nak(*c),
                Control::Am(am) => {
                    e.am(am.handler, &am.header, am.payload.len());
                    o.hdr.extend_from_slice(&am.payload);
                }
                Control::RailDown(rail) => e.rail_down(self.rails[*rail].info.name.as_bytes()),
            }
        }
        for i in 0..plan.messages {
            let req = o.msgs[i];
            // SAFETY: queued: the gate holds it, and we hold the gate lock.
            let st = unsafe { req.state() };
            let Kind::Send { session, tag, flags, .. } = st.kind else {
                unreachable!("a receive in the send queue")
            };
            let len = st.data.len();
            match o.protos[i] {
                Proto::Eager => {
                    let flags = flags & FLAG_SYNC;
                    let cookie = if flags != 0 { o.sends.insert(req) } else { 0 };
                    if flags != 0 {
                        o.cookies.push(cookie);
                    }
                    Encoder(&mut o.hdr).data(&MsgHeader { flags, session, tag, seq: st.seq }, len, cookie);
                    o.parts.push(Part::Hdr(mark, o.hdr.len()));
                    mark = o.hdr.len();
                    o.segs.clear();
                    st.data.segments(0..len, &mut o.segs);
                    o.parts.extend(o.segs.iter().map(|&s| Part::Mem(s)));
                }
                Proto::Rdv => {
                    let cookie = o.sends.insert(req);
                    o.cookies.push(cookie);
                    let mut head = [0u8; wire::MAX_RDV_HEADER];
                    let hl = st.header_len.min(len).min(wire::MAX_RDV_HEADER);
                    // SAFETY: the send's memory is readable until it completes (Data contract).
                    unsafe { st.data.pack(0, &mut head[..hl]) };
                    st.exposed = None;
                    if st.data.block_count(0..len) <= MAX_EXPOSED_SEGMENTS {
                        o.segs.clear();
                        st.data.segments(0..len, &mut o.segs);
                        // SAFETY: a queued send's memory stays readable and unchanged until it
                        // completes (Data contract), and completing drops the exposure.
                        st.exposed = unsafe { self.expose(core, &o.segs) };
                    }
                    let remote = st.exposed.as_ref().map(|(rail, e)| wire::RemoteMem {
                        rail: self.rails[*rail].info.name.as_bytes(),
                        key: e.key(),
                    });
                    let flags = (flags & FLAG_SYNC) | if remote.is_some() { FLAG_READ } else { 0 };
                    let h = MsgHeader { flags, session, tag, seq: st.seq };
                    Encoder(&mut o.hdr).rdv(&h, len as u64, cookie, &head[..hl], remote);
                }
            }
        }
        if taken != (0, 0) {
            Encoder(&mut o.hdr).credit(taken.0, taken.1);
        }
        if o.hdr.len() > mark {
            o.parts.push(Part::Hdr(mark, o.hdr.len()));
        }
        let total: usize =
            o.parts.iter().map(|p| if let Part::Hdr(a, b) = p { b - a } else { 0 }).sum::<usize>()
                + o.parts.iter().map(|p| if let Part::Mem(s) = p { s.len } else { 0 }).sum::<usize>();
        if total > self.rails[plan.rail].info.caps.max_packet {
            // Nothing goes: the queues must stay as they were (the caller fails the gate).
            self.unbuild(o, taken);
            if acked {
                self.ack_not_sent();
            }
            return Err(io::Error::other(format!(
                "packet of {total} bytes exceeds the rail's maximum (a bug)"
            )));
        }
        debug_assert!(o.iov.is_empty());
        for p in &o.parts {
            let slice: &[u8] = match *p {
                Part::Hdr(a, b) => &o.hdr[a..b],
                // SAFETY: user memory of a queued send, readable until it completes (Data contract).
                Part::Mem(s) => unsafe { std::slice::from_raw_parts(s.ptr, s.len) },
            };
            // SAFETY: the 'static lifetime is a lie confined to this packet: `iov` is cleared
            // right after the send, before `hdr` changes or the send can complete.
            o.iov.push(IoSlice::new(unsafe { std::mem::transmute::<&[u8], &'static [u8]>(slice) }));
        }
        Ok((taken, numbered, acked))
    }

    /// The link took the packet: the chunks in it leave the queues.
    fn commit(&self, core: &Core, o: &mut Out, plan: &Plan, completed: &mut Completed) {
        o.control.drain(..plan.control);
        for i in 0..plan.messages {
            let req = o.msgs.pop_front().expect("planned message");
            // SAFETY: the gate holds it; we hold the gate lock.
            let st = unsafe { req.state() };
            match o.protos[i] {
                Proto::Eager => {
                    o.credit -= st.data.len() as u64 + EAGER_OVERHEAD;
                    let Kind::Send { flags, .. } = st.kind else { unreachable!() };
                    if flags & FLAG_SYNC == 0 {
                        completed.push(req);
                    }
                    core.counters.eager_sent.fetch_add(1, Relaxed);
                }
                Proto::Rdv => {
                    o.slots -= 1;
                    core.counters.rdv_sent.fetch_add(1, Relaxed);
                    let len = st.data.len() as u64;
                    crate::observe::EVENTS.fire(|| Event::RendezvousStarted { peer: self.peer, len });
                }
            }
        }
        o.cookies.clear();
    }

    // ------------------------------------------------------------ answers from the peer

    /// The peer is ready for the data of send `cookie`: `pieces` say which bytes go on which
    /// rail, to its receive `recv_cookie`.
    pub(crate) fn on_rtr(
        &self,
        core: &Core,
        cookie: u64,
        recv_cookie: u64,
        accepted: u64,
        pieces: &[Piece<'_>],
    ) -> Result<(), String> {
        let mut done = None;
        let mut skipped = Vec::new();
        let lost = {
            let mut out = self.out.lock().unwrap();
            let o = &mut *out;
            let req = o.answered(cookie, accepted, "ready-to-receive")?;
            // SAFETY: registered sends are held by the gate; we hold its lock.
            let st = unsafe { req.state() };
            let failover = self.failover.is_some();
            if failover && !pieces.is_empty() && !st.awaits_fin {
                // Sent memory is kept until the receiver says it has everything: a failed rail's
                // bytes may be asked for again.
                st.awaits_fin = true;
                st.pending += 1;
            }
            for p in pieces {
                let rail = self.rail_by_name(p.rail).unwrap_or(0);
                if failover && self.rails[rail].is_down() {
                    // Failed here and not (yet) at the receiver, or re-admitted there first: the
                    // receiver asks again for it once it knows (told below). Sent on another rail,
                    // it could go on one the receiver already gave up on, and be lost unasked.
                    if !skipped.contains(&rail) {
                        skipped.push(rail);
                    }
                    continue;
                }
                let link = self.rails[rail]
                    .link(core)
                    .map_err(|e| format!("rail {}: {e}", self.rails[rail].info.name))?;
                o.segs.clear();
                st.data.segments(p.offset as usize..(p.offset + p.len) as usize, &mut o.segs);
                let hdr = BulkHeader { cookie: recv_cookie, offset: p.offset, len: p.len };
                // SAFETY: the send's memory stays valid until it completes, which waits for
                // every bulk_sent (or a failure).
                match unsafe { link.send_bulk(hdr, &o.segs, cookie) } {
                    Ok(()) => {}
                    Err(e) if failover => {
                        o.lost_rails.push((rail, format!("bulk send failed: {e}")));
                        continue;
                    }
                    Err(e) => return Err(format!("bulk send: {e}")),
                }
                core.counters.sent(self.rails[rail].driver, p.len as usize);
                st.pending += 1;
                Self::piece_started(o, cookie, rail);
            }
            if st.pending == 0 {
                done = o.sends.remove(cookie);
            }
            std::mem::take(&mut o.lost_rails)
        };
        if let Some(r) = done {
            // SAFETY: removed from the table: we hold it.
            unsafe { r.complete(None) };
        }
        for (rail, why) in lost {
            self.rail_failed(core, rail, &why);
        }
        for rail in skipped {
            self.control(core, Control::RailDown(rail));
        }
        if self.failover.is_some() && !pieces.is_empty() {
            failover::test_cut(core, self, failover::Step::PieceStarted);
        }
        Ok(())
    }

    /// A piece of send `cookie` is done (bulk data left, or a write the peer asked for): the
    /// send completes with its last.
    pub(crate) fn on_piece_done(&self, core: &Core, cookie: u64, driver: usize) {
        if self.failover.is_some() {
            failover::test_cut(core, self, failover::Step::PieceSent);
        }
        let done = {
            let mut out = self.out.lock().unwrap();
            if self.failover.is_some() {
                let rail = self.rails.iter().position(|r| r.driver == driver);
                if !rail.is_some_and(|rail| Self::piece_left(&mut out, cookie, rail)) {
                    return;
                }
            }
            let Some(&mut req) = out.sends.get_mut(cookie) else { return };
            // SAFETY: registered: held by the gate, under its lock.
            let st = unsafe { req.state() };
            st.pending = st.pending.saturating_sub(1);
            if st.pending > 0 {
                return;
            }
            out.sends.remove(cookie)
        };
        if let Some(r) = done {
            // SAFETY: removed: we hold it.
            unsafe { r.complete(None) };
        }
    }

    /// FIN (the peer read the data) or ACK (a synchronous eager send matched).
    pub(crate) fn on_answer(&self, core: &Core, cookie: u64) -> Result<(), String> {
        if self.failover.is_some() {
            failover::test_cut(core, self, failover::Step::FinReceived);
        }
        let r = {
            let mut out = self.out.lock().unwrap();
            let Some(&mut req) = out.sends.get_mut(cookie) else {
                return Err(format!("answer for unknown send {cookie:#x}"));
            };
            // SAFETY: registered sends are held by the gate; we hold its lock.
            let st = unsafe { req.state() };
            if st.pending > 0 {
                // A FIN among other pieces: the receiver's share of a written rendezvous.
                if !st.awaits_fin {
                    return Err(format!("answer for send {cookie:#x} whose data is on its way"));
                }
                st.awaits_fin = false;
                st.pending -= 1;
                if st.pending > 0 {
                    return Ok(());
                }
            }
            out.sends.remove(cookie)
        };
        if let Some(r) = r {
            // SAFETY: removed: we hold it.
            unsafe { r.complete(None) };
        }
        Ok(())
    }

    /// NAK: the peer dropped the message of send `cookie` unmatched (its session was revoked
    /// there): the send fails with [`Error::Revoked`]. Refused for a send whose bulk data is on
    /// its way (the driver still reads its memory; an honest peer never refuses one it answered).
    pub(crate) fn on_refused(&self, cookie: u64) -> Result<(), String> {
        let r = {
            let mut out = self.out.lock().unwrap();
            let Some(&mut req) = out.sends.get_mut(cookie) else {
                return Err(format!("refusal of unknown send {cookie:#x}"));
            };
            // SAFETY: registered sends are held by the gate; we hold its lock.
            if unsafe { req.state() }.pending > 0 {
                return Err(format!("refusal of send {cookie:#x} whose data is on its way"));
            }
            out.sends.remove(cookie)
        };
        if let Some(r) = r {
            let why = format!("peer {} dropped the message: the session was revoked there", self.peer);
            // SAFETY: removed: we hold it.
            unsafe { r.complete(Some(Error::Revoked(why))) };
        }
        Ok(())
    }

    /// Credit returned by the peer.
    pub(crate) fn add_credit(&self, core: &Core, bytes: u64, slots: u64) {
        let waiting = {
            let mut out = self.out.lock().unwrap();
            out.credit = out.credit.saturating_add(bytes);
            out.slots = out.slots.saturating_add(slots);
            am_out::admit_ams(&mut out);
            !out.msgs.is_empty() || !out.control.is_empty()
        };
        // Credit arrives with almost every packet of a ping-pong: flush only if something waits
        // for it (what we owe the peer is flushed where it is counted).
        if waiting {
            self.flush(core);
        }
    }

    /// Credit we owe the peer (a message it sent was consumed); sent back when due.
    pub(crate) fn owe(&self, core: &Core, bytes: u64, slots: u64) {
        // Released before the credit can go back (the peer may use it at once).
        self.allowance.release(bytes, slots);
        let b = self.owed_bytes.fetch_add(bytes, Relaxed) + bytes;
        let s = self.owed_slots.fetch_add(slots, Relaxed) + slots;
        if self.credit_due((b, s)) {
            self.flush(core);
        }
    }

    /// A send failed: the whole gate fails, or only its sending side when the link's driver
    /// will report the failure after delivering what the peer sent (see [`SendError`]).
    fn send_error(&self, core: &Core, e: SendError) {
        match e {
            SendError::Gate(e) => self.fail(core, &format!("sending failed: {e}")),
            SendError::Link(e) => self.send_broken(core, &format!("sending failed: {e}")),
        }
    }

    /// The link of rail `driver` failed, as its driver reports after delivering what the peer
    /// sent through it. The peer is lost once every connected rail is down; until then only
    /// sending stops (the other rails may still hold its data).
    pub(crate) fn link_failed(&self, core: &Core, driver: usize, reason: &str) {
        if self.failover.is_some()
            && let Some(i) = self.rails.iter().position(|r| r.driver == driver)
        {
            if self.rails[i].linked().is_some_and(|l| !l.is_broken()) {
                // About a link the rail replaced (re-admitted since): the one in use works.
                log::debug!(
                    "rank {}: stale failure report for rail {}: {reason}",
                    core.rank,
                    self.rails[i].info.name
                );
                return;
            }
            return self.rail_failed(core, i, reason);
        }
        if let Some(r) = self.rail_by_driver(driver) {
            r.down.store(true, SeqCst);
        }
        // SeqCst: of two rails reported at once, at least one report sees both down.
        let all_down = self.rails.iter().all(|r| r.down.load(SeqCst) || r.linked().is_none());
        if all_down {
            self.fail(core, reason);
        } else {
            self.send_broken(core, reason);
        }
    }

    /// Sending to the peer is impossible, but what it sent may still be in a link: the messages
    /// waiting to go fail now; sends waiting for the peer's answer (which may be in the link
    /// too) and receives from it wait for [`Gate::fail`].
    pub(crate) fn send_broken(&self, core: &Core, reason: &str) {
        if self.failed.get().is_some() || self.send_failed.set(reason.to_string()).is_err() {
            return;
        }
        if !core.finalizing.load(Relaxed) {
            log::error!("rank {}: cannot send to peer {}: {reason}", core.rank, self.peer);
        }
        // Under the gate lock: `enqueue` checks the failure under it, so every send either
        // sees it or is queued before and drained here.
        let reqs: Vec<ReqPtr> = {
            let mut out = self.out.lock().unwrap();
            out.control.clear();
            out.msgs.drain(..).collect()
        };
        let err = Error::PeerFailed { peer: self.peer, reason: reason.to_string() };
        for r in reqs {
            // SAFETY: taken out of the queue: we hold them.
            unsafe { r.complete(Some(err.clone())) };
        }
    }

    /// The peer broke the protocol (see `budget`): it is reported, fails as a dead peer would
    /// (its links closed: it sees them fail), and what it made this process hold is dropped.
    pub(crate) fn violation(&self, core: &Core, what: &str) {
        if self.failed.get().is_some() {
            return;
        }
        log::error!(
            "nmad: rank {}: peer {} broke the protocol: {what}; its connection is failed and \
             what it sent is dropped",
            core.rank,
            self.peer
        );
        self.fail(core, &format!("protocol violation: {what}"));
        core.purge(self);
    }

    /// The peer is gone, and what it sent before has been delivered: its links are closed, every
    /// request involving it fails, and so does every receive from it posted later (unless a
    /// message it sent matches).
    pub(crate) fn fail(&self, core: &Core, reason: &str) {
        if self.failed.set(reason.to_string()).is_err() {
            return;
        }
        if !core.finalizing.load(Relaxed) {
            log::error!("rank {}: lost peer {}: {reason}", core.rank, self.peer);
        }
        // Nothing more is taken from the peer (`on_packet` drops it): cut it off, so that it
        // learns it is failed (a peer that broke the protocol stops waiting for credit) and its
        // drivers read nothing more from it.
        let links: Vec<Arc<dyn Link>> = self.rails.iter().filter_map(|r| r.linked().cloned()).collect();
        links.iter().for_each(|l| l.close());
        let mut reqs: Vec<ReqPtr> = Vec::new();
        {
            let mut out = self.out.lock().unwrap();
            reqs.extend(out.msgs.drain(..));
            reqs.extend(out.sends.drain());
            out.control.clear();
        }
        // A receive whose own share of a written rendezvous is being read is completed by its
        // reader, which finds it gone (`write_rdv::read_share`).
        let drained = self.large_in.lock().unwrap().drain();
        reqs.extend(drained.into_iter().filter(|l| !l.reading).map(|l| l.req));
        core.peers_lost.fetch_add(1, Release);
        let err = self.failure().expect("just set");
        for r in reqs {
            // SAFETY: taken out of the gate's structures: we hold them.
            unsafe { r.complete(Some(err.clone())) };
        }
        core.fail_posted_for(self.peer, &err);
    }
}

#[cfg(test)]
#[path = "strategy_golden.rs"]
mod golden;
