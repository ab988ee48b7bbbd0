//! Rail failover (S-MPI, `../shared/seeds/002`, done better): a gate with several network rails
//! keeps working when some of them fail.
//!
//! - Every packet that carries anything but acknowledgements is numbered (a SEQ chunk first) and
//!   kept in a [`Journal`] until the peer's gate acknowledges it (GACK chunks, carried by any
//!   packet going back, or alone when owed for a while). When a rail fails, what it carried and
//!   is not acknowledged goes again on a surviving rail; the peer's [`Receiver`] drops the
//!   packets that had arrived after all (data and control alike: a CREDIT or an RTR never counts
//!   twice).
//! - A rendezvous resumes from what arrived: the receiver keeps, per large receive, the pieces it
//!   asked for and the byte ranges that arrived ([`Track`]); when a rail fails it asks the
//!   sender again, in a new RTR on the survivors, for the bytes of that rail's pieces that did
//!   not arrive, and tells the sender (FIN) once everything did. The sender keeps its memory
//!   until then, and forgets the pieces the failed rail was still sending. The races S-MPI's
//!   restart protocol handles fall out of this: a receive that had everything asks for nothing
//!   (its FIN, if lost with the rail, goes again from the journal); a piece reported failed at
//!   the sender but received is not asked for; a piece an RTR puts on a rail the sender found
//!   failed (the receiver has not learnt it yet, or re-admitted the rail first) is not sent:
//!   the sender tells the receiver the rail is down, and the receiver asks again for the piece
//!   on its survivors (sent elsewhere by the sender, it could go on a rail the receiver had
//!   already given up on, and never be asked for again). A piece on a rail that is up at the
//!   sender goes there even if the sender would not choose it (a fallback).
//! - A silent rail (no error: a pulled cable) is found by heartbeats: while the gate has traffic
//!   outstanding, a rail on which nothing arrived (and whose sent bytes the peer's transport did
//!   not acknowledge further: TCP's count) for [`Timings::heartbeat_us`] gets a PING,
//!   which the peer answers by a PONG on the same rail from its driver's progression. A rail
//!   whose oldest unanswered PING is older than [`Timings::dead_after_us`] while another rail
//!   delivered something after that PING is declared failed (closed). A peer that answers on no
//!   rail fails no rail (it may only be starved of CPU); if no packet comes from it on any rail
//!   for [`Timings::peer_silent_us`] while traffic is outstanding (its kernel's TCP
//!   acknowledgements do not count here), the peer is lost (every link cut, or the peer
//!   stopped), named in the report. A process that was itself stopped judges nothing on the
//!   tick it resumes.
//! - Whichever side finds a rail failed tells the other (RAILDOWN, on a survivor), which stops
//!   using it at once: a loud failure seen by one side needs no heartbeat on the other.
//! - A failed rail is probed (a new connection, on a thread of its own) every
//!   [`Timings::probe_us`]; when one succeeds, ours or the peer's, the rail is re-admitted with
//!   the new link and the strategy plans over it again (S-MPI never used a failed rail again).
//! - A fallback rail (`NMAD_FALLBACK`) carries traffic only while every other rail is down.
//!
//! Only gates with two or more network rails (`Failover::wanted`) have any of this: a single
//! rail or a shared-memory gate pays nothing (one `None` test where a packet arrives).
//!
//! Owns the journal, the duplicate filter, heartbeats and the resume bookkeeping; it must not
//! touch matching or the request queues (the gate's own code does, under its locks).

use super::{Control, Gate, LargeRecv, Out, Rail, SendError};
use crate::core::Core;
use crate::core::request::ReqPtr;
use crate::core::wire::{self, Encoder};
use crate::drivers::{LargePath, Sent};
use crate::observe::Event;
use crate::reliable::{Arrival, Config, Journal, Micros, Receiver, Stats};
use crate::strategies::{RailInfo, Split};
use rustc_hash::FxHashMap as HashMap;
use smallvec::SmallVec;
use std::io::IoSlice;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex};

/// Packets outstanding at most (the receiver's duplicate filter keeps this many beyond its
/// next expected packet).
const WINDOW: u32 = 4096;
/// Acknowledge after this many packets, or after [`ACK_DELAY_US`].
const ACK_EVERY: u32 = 32;
const ACK_DELAY_US: Micros = 1000;

/// Rail failover's timings, µs [`NMAD_HEARTBEAT_MS`, default 10; `NMAD_RAIL_DEAD_MS`, default
/// 50; `NMAD_PEER_SILENT_MS`, default 10,000; `NMAD_RAIL_PROBE_MS`, default 1,000]: a rail
/// nothing arrived on for `heartbeat_us` is pinged; one whose ping went unanswered for
/// `dead_after_us` while another rail delivered is failed; a peer that answers on no rail for
/// `peer_silent_us` while traffic is outstanding is lost (every rail cut, or the peer stopped);
/// a failed rail is probed every `probe_us` and re-admitted when a connection succeeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timings {
    pub heartbeat_us: Micros,
    pub dead_after_us: Micros,
    pub peer_silent_us: Micros,
    /// How often a failed rail is probed (a new connection tried) for re-admission.
    pub probe_us: Micros,
}

impl Default for Timings {
    fn default() -> Timings {
        Timings {
            heartbeat_us: 10_000,
            dead_after_us: 50_000,
            peer_silent_us: 10_000_000,
            probe_us: 1_000_000,
        }
    }
}

impl Timings {
    pub fn from_env() -> Result<Timings, String> {
        let ms = |name: &str, default: u64| -> Result<u64, String> {
            match std::env::var(name) {
                Ok(v) => v
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("{name}={v:?}: expected milliseconds (> 0)")),
                Err(_) => Ok(default),
            }
        };
        Ok(Timings {
            heartbeat_us: ms("NMAD_HEARTBEAT_MS", 10)? * 1000,
            dead_after_us: ms("NMAD_RAIL_DEAD_MS", 50)? * 1000,
            peer_silent_us: ms("NMAD_PEER_SILENT_MS", 10_000)? * 1000,
            probe_us: ms("NMAD_RAIL_PROBE_MS", 1000)? * 1000,
        })
    }
}

/// The caller's clock for the protocol, µs.
pub(crate) fn now_us() -> Micros {
    pioman::clock::now_ns() / 1000
}

/// What this process knows of one rail's liveness.
#[derive(Default)]
struct Watch {
    /// When something last arrived on it, or the peer's transport acknowledged more of what we
    /// sent (the path works).
    heard: AtomicU64,
    /// When a packet last arrived on it (the peer's process works: a stopped process's kernel
    /// still acknowledges).
    spoke: AtomicU64,
    /// When the oldest PING not answered yet was sent (0: none).
    pinged: AtomicU64,
    /// When a PING last went.
    last_ping: AtomicU64,
    /// The link's acknowledged bytes at the last tick ([`crate::drivers::Link::acknowledged`]).
    acked: AtomicU64,
    /// When the rail failed, or was last probed, while down.
    probed: AtomicU64,
    /// A probe (a connection attempt) is running.
    probing: std::sync::atomic::AtomicBool,
}

impl Watch {
    /// Liveness starts afresh at `now` (nothing owed, nothing silent).
    fn restart(&self, now: Micros) {
        self.heard.store(now, Relaxed);
        self.spoke.store(now, Relaxed);
        self.pinged.store(0, Relaxed);
    }
}

/// A gate's failover state outside the send lock.
pub(crate) struct Failover {
    /// Arrivals: the duplicate filter, the acknowledgements owed, and the packets that came
    /// early (a re-sent packet overtaken by later ones on the other rail), kept until the hole
    /// before them is filled. A packet in order is not copied (`None`).
    rx: Mutex<Receiver<Option<Box<[u8]>>>>,
    /// Held while packets are handed over, so that they are in their numbers' order even when
    /// two rails are polled at once (an active-message stream has no other ordering).
    delivery: Mutex<()>,
    watch: Box<[Watch]>,
    timings: Timings,
    pub(crate) stats: Arc<Stats>,
}

/// The sending side's part, under the gate lock (in `Out`).
pub(crate) struct Outbox {
    journal: Journal<Box<[u8]>>,
    /// Packets journaled since the last flush ended (for the test hook's `packet` step).
    pub(super) journaled: u64,
    /// Rendezvous sends with bulk pieces in flight: per send cookie, the rail of each piece its
    /// driver has not reported sent.
    pieces: HashMap<u64, SmallVec<[usize; 4]>>,
}

impl Outbox {
    pub(crate) fn new() -> Outbox {
        Outbox { journal: Journal::new(WINDOW), journaled: 0, pieces: HashMap::default() }
    }

    /// Packets sent and not acknowledged yet.
    pub(crate) fn unacknowledged(&self) -> usize {
        self.journal.len()
    }
}

/// A large receive on a failover gate: the pieces asked for, and the byte ranges that arrived.
pub(crate) struct Track {
    pub(crate) sender_cookie: u64,
    /// (rail, offset, len)
    pub(crate) pieces: Vec<(usize, u64, u64)>,
    /// Sorted, disjoint, not adjacent.
    got: Vec<(u64, u64)>,
}

impl Track {
    pub(crate) fn new(sender_cookie: u64, pieces: Vec<(usize, u64, u64)>) -> Track {
        Track { sender_cookie, pieces, got: Vec::new() }
    }

    /// Bytes `start..end` arrived; returns how many of them are new.
    pub(crate) fn add(&mut self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        let new = (end - start) - self.overlap(start, end);
        let i = self.got.partition_point(|&(_, e)| e < start);
        let mut j = i;
        let (mut s, mut e) = (start, end);
        while j < self.got.len() && self.got[j].0 <= end {
            s = s.min(self.got[j].0);
            e = e.max(self.got[j].1);
            j += 1;
        }
        self.got.splice(i..j, [(s, e)]);
        new
    }

    fn overlap(&self, start: u64, end: u64) -> u64 {
        self.got.iter().map(|&(s, e)| e.min(end).saturating_sub(s.max(start))).sum()
    }

    /// The ranges of `start..end` that have not arrived.
    pub(crate) fn missing(&self, start: u64, end: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut at = start;
        for &(s, e) in &self.got {
            if e <= at {
                continue;
            }
            if s >= end {
                break;
            }
            if s > at {
                out.push((at, s));
            }
            at = e;
        }
        if at < end {
            out.push((at, end));
        }
        out
    }
}

impl Failover {
    /// Whether a gate over `rails` gets failover (when the configuration has it on): two or
    /// more rails, every one a network driver's (data sent as bulk, not read from the peer's
    /// memory).
    pub(crate) fn wanted(rails: &[Rail]) -> bool {
        rails.len() >= 2
            && rails.iter().all(|r| r.info.caps.large == LargePath::Bulk && r.info.name != "self")
    }

    pub(crate) fn new(rails: usize, timings: Timings) -> Failover {
        let stats = Arc::new(Stats::default());
        let cfg =
            Config { window: WINDOW, ack_every: ACK_EVERY, ack_delay_us: ACK_DELAY_US, ..Config::default() };
        let now = now_us();
        let watch: Box<[Watch]> = (0..rails).map(|_| Watch::default()).collect();
        watch.iter().for_each(|w| {
            w.heard.store(now, Relaxed);
            w.spoke.store(now, Relaxed);
        });
        let rx = Mutex::new(Receiver::new(cfg, stats.clone()));
        Failover { rx, delivery: Mutex::new(()), watch, timings, stats }
    }

    /// Something arrived on rail `rail`.
    #[inline]
    pub(crate) fn heard(&self, rail: usize, now: Micros) {
        if let Some(w) = self.watch.get(rail) {
            w.spoke.store(now, Relaxed);
            self.path_works(rail, now);
        }
    }

    /// Rail `rail` carries what we send (something arrived, or the peer's transport
    /// acknowledged more): a PING it owed is answered.
    fn path_works(&self, rail: usize, now: Micros) {
        if let Some(w) = self.watch.get(rail) {
            w.heard.store(now, Relaxed);
            let p = w.pinged.load(Relaxed);
            if p != 0 && now >= p {
                w.pinged.store(0, Relaxed);
            }
        }
    }

    /// Packet `n` (`bytes`) arrived: `deliver` gets it, then every packet kept early that it
    /// lets through, in their numbers' order; a packet ahead of a hole is kept (copied) for
    /// later, one that came twice is dropped. Returns how many packets `deliver` got.
    pub(crate) fn arrived(&self, n: u64, bytes: &[u8], mut deliver: impl FnMut(&[u8])) -> usize {
        let _in_order = self.delivery.lock().unwrap();
        let now = now_us();
        let kept: Vec<Box<[u8]>> = {
            let mut rx = self.rx.lock().unwrap();
            let early = n > rx.next();
            if !matches!(rx.on_data(n, 0, false, early.then(|| Box::from(bytes)), now), Arrival::Deliver(_)) {
                return 0;
            }
            // Taken out at once, so that an acknowledgement taken meanwhile sees no hole filled
            // and not yet counted; early packets were copied when they came (`Some`).
            std::iter::from_fn(|| rx.pop_ready(now)).flatten().collect()
        };
        // `rx` is not held while packets are handed over: their chunks may flush, which takes it.
        deliver(bytes);
        kept.iter().for_each(|p| deliver(p));
        1 + kept.len()
    }

    /// Whether an acknowledgement should go now, in a packet of its own if need be.
    pub(crate) fn ack_due(&self, now: Micros) -> bool {
        let rx = self.rx.lock().unwrap();
        rx.owed().is_some_and(|(n, since)| n >= ACK_EVERY || now.saturating_sub(since) >= ACK_DELAY_US)
    }
}

impl Gate {
    /// Whether rail `i` may carry traffic: not down, and not a fallback while another rail is up.
    pub(crate) fn usable(&self, i: usize) -> bool {
        let r = &self.rails[i];
        !r.down.load(Relaxed)
            && (!r.fallback || self.rails.iter().all(|o| o.fallback || o.down.load(Relaxed)))
    }

    /// The rails a large message may be split over, with their indices: on a failover gate
    /// those that may carry traffic now, otherwise all.
    pub(crate) fn split_rails(&self) -> (Vec<usize>, Vec<RailInfo>) {
        let failover = self.failover.is_some();
        let idx: Vec<usize> = (0..self.rails.len()).filter(|&i| !failover || self.usable(i)).collect();
        let idx = if idx.is_empty() { vec![0] } else { idx };
        let infos = idx.iter().map(|&i| self.rails[i].info.clone()).collect();
        (idx, infos)
    }

    /// Marks the rails that may not carry traffic as busy for this round of planning.
    pub(super) fn plan_rails(&self, o: &mut Out) {
        if self.failover.is_none() {
            o.rails.iter_mut().for_each(|r| r.busy = false);
            return;
        }
        for i in 0..o.rails.len() {
            o.rails[i].busy = !self.usable(i);
        }
    }

    /// The first chunks of a packet on a failover gate (after the version byte): its number if
    /// it carries more than acknowledgements (`numbered`), and the acknowledgement we owe.
    pub(super) fn failover_head(&self, o: &mut Out, numbered: bool) -> bool {
        let (Some(f), Some(ob)) = (&self.failover, &o.outbox) else { return false };
        if numbered {
            Encoder(&mut o.hdr).seq(ob.journal.next_seq());
        }
        let mut rx = f.rx.lock().unwrap();
        if rx.owed().is_some() {
            let ack = rx.take_ack();
            Encoder(&mut o.hdr).gate_ack(&ack);
            return true;
        }
        false
    }

    /// The packet of `o.iov`, just sent on `rail`: kept until acknowledged if `numbered`.
    pub(super) fn journal(&self, o: &mut Out, rail: usize, numbered: bool) {
        if !numbered {
            return;
        }
        let Some(ob) = o.outbox.as_mut() else { return };
        let mut bytes = Vec::with_capacity(o.iov.iter().map(|s| s.len()).sum());
        o.iov.iter().for_each(|s| bytes.extend_from_slice(s));
        ob.journal.push(rail, bytes.into_boxed_slice(), now_us());
        ob.journaled += 1;
    }

    /// A packet whose acknowledgement did not go (refused or failed): owe it again.
    pub(super) fn ack_not_sent(&self) {
        if let Some(f) = &self.failover {
            f.rx.lock().unwrap().ack_lost();
        }
    }

    /// Whether the journal lets a new numbered packet go.
    pub(super) fn journal_has_room(&self, o: &Out) -> bool {
        o.outbox.as_ref().is_none_or(|ob| ob.journal.has_room())
    }

    /// Sends again the oldest packet whose rail failed, on a usable rail: `None` if there is
    /// none; else whether planning may go on.
    pub(super) fn resend_one(&self, core: &Core, o: &mut Out) -> Option<Result<bool, SendError>> {
        let ob = o.outbox.as_mut()?;
        let (seq, unit) = ob.journal.next_resend()?;
        let Some(rail) = crate::strategies::first_free(&o.rails) else { return Some(Ok(false)) };
        let link = match self.rails[rail].link(core) {
            Ok(l) => l,
            Err(e) => return Some(Err(SendError::Gate(e))),
        };
        match link.try_send(&[IoSlice::new(unit)]) {
            Ok(Sent::Done) => {
                let len = unit.len();
                ob.journal.resent(seq, rail);
                Stats::add(&self.failover.as_ref().expect("outbox").stats.retransmits, 1);
                core.counters.sent(self.rails[rail].driver, len);
                Some(Ok(true))
            }
            Ok(Sent::Busy) => {
                o.rails[rail].busy = true;
                self.note_backlog(core);
                Some(Ok(o.rails.iter().any(|r| !r.busy)))
            }
            Err(e) => {
                o.lost_rails.push((rail, format!("sending failed: {e}")));
                o.rails[rail].busy = true;
                Some(Ok(o.rails.iter().any(|r| !r.busy)))
            }
        }
    }

    /// The peer acknowledged packets.
    pub(crate) fn on_gate_ack(&self, core: &Core, ack: &crate::reliable::Ack) {
        let freed = {
            let mut out = self.out.lock().unwrap();
            let Some(ob) = out.outbox.as_mut() else { return };
            let full = !ob.journal.has_room() || ob.journal.resends() > 0;
            ob.journal.on_ack(ack, now_us(), drop);
            full && ob.journal.has_room()
        };
        if freed {
            self.flush(core);
        }
    }

    /// A bulk piece of send `cookie` was sent on rail `rail`: no longer in flight there.
    /// `false` if it was not counted in flight (its rail failed first: the failure discounted it,
    /// and a driver may still report a piece it finished writing before).
    pub(super) fn piece_left(o: &mut Out, cookie: u64, rail: usize) -> bool {
        let Some(ob) = o.outbox.as_mut() else { return true };
        let Some(rails) = ob.pieces.get_mut(&cookie) else { return false };
        let Some(at) = rails.iter().position(|&r| r == rail) else { return false };
        rails.swap_remove(at);
        if rails.is_empty() {
            ob.pieces.remove(&cookie);
        }
        true
    }

    /// A bulk piece of send `cookie` starts on rail `rail`.
    pub(super) fn piece_started(o: &mut Out, cookie: u64, rail: usize) {
        if let Some(ob) = o.outbox.as_mut() {
            ob.pieces.entry(cookie).or_default().push(rail);
        }
    }

    /// Rail `i` failed (its driver said so, a send on it failed, or it fell silent). If another
    /// rail may carry the traffic, the gate goes on over it; otherwise the peer is lost.
    pub(crate) fn rail_failed(&self, core: &Core, i: usize, reason: &str) {
        let rail = &self.rails[i];
        if rail.down.swap(true, SeqCst) {
            return;
        }
        if let Some(l) = rail.linked() {
            l.close();
        }
        let survivors: Vec<&str> = (0..self.rails.len())
            .filter(|&j| self.usable(j))
            .map(|j| self.rails[j].info.name.as_str())
            .collect();
        if survivors.is_empty() || self.failed.get().is_some() {
            self.fail(core, &format!("{}: {reason} (no rail left)", rail.info.name));
            return;
        }
        if !core.finalizing.load(Relaxed) {
            log::warn!(
                "rank {}: rail {} to peer {} failed: {reason}; traffic goes on over {}",
                core.rank,
                rail.info.name,
                self.peer,
                survivors.join(", ")
            );
        }
        core.rails_down.fetch_add(1, Relaxed);
        crate::observe::EVENTS.fire(|| Event::RailDown { peer: self.peer, driver: rail.driver as u32 });
        if let Some(w) = self.failover.as_ref().and_then(|f| f.watch.get(i)) {
            w.probed.store(now_us(), Relaxed);
        }
        let done = self.forget_pieces_on(i);
        for r in done {
            // SAFETY: removed from the sends table: we hold it.
            unsafe { r.complete(None) };
        }
        for c in self.resume_receives(core, i) {
            self.control(core, c);
        }
        // The peer stops using it at once (it would otherwise find out by its own means).
        self.control(core, Control::RailDown(i));
    }

    /// Failed rail `i` carries traffic again (`why`: who connected): its liveness starts
    /// afresh and the strategy plans over it again.
    pub(crate) fn rail_back(&self, core: &Core, i: usize, why: &str) {
        let Some(f) = &self.failover else { return };
        let now = now_us();
        let w = &f.watch[i];
        w.restart(now);
        if !core.finalizing.load(Relaxed) {
            log::warn!(
                "rank {}: rail {} to peer {} is back ({why})",
                core.rank,
                self.rails[i].info.name,
                self.peer
            );
        }
        core.rails_up.fetch_add(1, Relaxed);
        crate::observe::EVENTS
            .fire(|| Event::RailUp { peer: self.peer, driver: self.rails[i].driver as u32 });
        self.flush(core);
    }

    /// Tries, on a thread of its own (a connection to a dead network takes seconds to fail),
    /// to connect failed rail `i` again, re-admitting it on success; or connects fallback rail
    /// `i` for the first time.
    fn probe(self: &Arc<Self>, core: &Arc<Core>, i: usize) {
        let Some(w) = self.failover.as_ref().map(|f| &f.watch[i]) else { return };
        if w.probing.swap(true, Relaxed) {
            return;
        }
        let (gate, core2) = (self.clone(), core.clone());
        let spawned = std::thread::Builder::new().name("nmad-probe".into()).spawn(move || {
            let rail = &gate.rails[i];
            let driver = &core2.drivers[rail.driver];
            if !rail.is_down() {
                // A fallback connected ahead of need (its first link, as a send would make it).
                let _ = rail.link(&core2);
            } else if let Ok(link) = driver.connect(gate.peer, rail.card())
                && rail.readmit(link)
            {
                // (A connection made when the peer's re-admitted the rail first is left open, not
                // closed: closing a link cuts every connection to the peer through that driver.)
                gate.rail_back(&core2, i, "a probe connected");
            }
            if let Some(f) = &gate.failover {
                f.watch[i].probed.store(now_us(), Relaxed);
                f.watch[i].probing.store(false, Relaxed);
            }
        });
        if spawned.is_err() {
            w.probing.store(false, Relaxed);
        }
    }

    /// The peer found our rail `name` to it failed.
    pub(crate) fn on_rail_down(&self, core: &Core, name: &[u8]) {
        if let Some(i) = self.rail_by_name(name) {
            self.rail_failed(core, i, "the peer found it failed");
        }
    }

    /// The sending side of a failed rail: its packets are to go again, and its bulk pieces are
    /// no longer awaited. Returns the sends that completed by it (the receiver's FIN came).
    fn forget_pieces_on(&self, i: usize) -> Vec<ReqPtr> {
        let mut out = self.out.lock().unwrap();
        let o = &mut *out;
        let Some(ob) = o.outbox.as_mut() else { return Vec::new() };
        ob.journal.reroute(i);
        let mut done = Vec::new();
        let mut emptied = Vec::new();
        for (&cookie, rails) in ob.pieces.iter_mut() {
            let before = rails.len();
            rails.retain(|r| *r != i);
            let lost = (before - rails.len()) as u32;
            if rails.is_empty() {
                emptied.push(cookie);
            }
            if lost == 0 {
                continue;
            }
            let Some(&mut req) = o.sends.get_mut(cookie) else { continue };
            // SAFETY: registered sends are held by the gate; we hold its lock.
            let st = unsafe { req.state() };
            st.pending = st.pending.saturating_sub(lost);
            if st.pending == 0 {
                done.extend(o.sends.remove(cookie));
            }
        }
        for c in emptied {
            ob.pieces.remove(&c);
        }
        done
    }

    /// The receiving side of a failed rail: for each large receive, the bytes its pieces on
    /// that rail did not bring, asked for again on the usable rails.
    fn resume_receives(&self, core: &Core, i: usize) -> Vec<Control> {
        let (idx, infos) = self.split_rails();
        let mut large = self.large_in.lock().unwrap();
        let mut asks = Vec::new();
        for (recv_cookie, l) in large.iter_mut() {
            let LargeRecv { accepted, track: Some(t), .. } = l else { continue };
            let lost: Vec<(u64, u64)> = t
                .pieces
                .iter()
                .filter(|p| p.0 == i)
                .flat_map(|&(_, off, len)| t.missing(off, off + len))
                .collect();
            t.pieces.retain(|p| p.0 != i);
            if lost.is_empty() {
                continue;
            }
            let mut pieces = Vec::new();
            for (start, end) in lost {
                let split = core.strategy.split(end - start, &infos).into_iter();
                let split = split.map(|p| Split { offset: start + p.offset, ..p });
                pieces.extend(
                    split.filter(|p| p.len > 0).map(|p| (idx[p.rail.min(idx.len() - 1)], p.offset, p.len)),
                );
            }
            if pieces.len() > wire::MAX_PIECES {
                // Too scattered to split: one rail carries the span that holds every lost range.
                let (s, e) = (pieces[0].1, pieces.iter().map(|p| p.1 + p.2).max().unwrap_or(0));
                pieces = vec![(idx[0], s, e - s)];
            }
            t.pieces.extend(pieces.iter().copied());
            asks.push(Control::Rtr { cookie: t.sender_cookie, recv_cookie, accepted: *accepted, pieces });
        }
        asks
    }

    /// The peer's PING on rail `rail`: answered on it (not journaled; lost answers are asked
    /// again by the next PING).
    pub(crate) fn on_heartbeat(&self, rail: usize, ping: bool) {
        if !ping {
            return;
        }
        if let Some(l) = self.rails.get(rail).and_then(|r| r.linked()) {
            let _ = l.try_send(&[IoSlice::new(&wire::PONG_PACKET)]);
        }
    }

    /// Periodic work (the core's failover monitor): owed acknowledgements, heartbeats on rails
    /// nothing arrived on lately, and silent rails declared failed.
    pub(crate) fn failover_tick(self: &Arc<Self>, core: &Arc<Core>, now: Micros, resumed: bool) {
        let Some(f) = &self.failover else { return };
        if self.failed.get().is_some() {
            return;
        }
        if resumed {
            // This process was stopped or starved, not the rails: what it did not hear
            // meanwhile proves nothing.
            f.watch.iter().for_each(|w| w.restart(now));
        }
        for (j, w) in f.watch.iter().enumerate() {
            if self.rails[j].down.load(Relaxed)
                && now.saturating_sub(w.probed.load(Relaxed)) >= f.timings.probe_us
            {
                self.probe(core, j);
            }
        }
        if f.ack_due(now) {
            self.flush(core);
        }
        let active = {
            let out = self.out.lock().unwrap();
            out.outbox.as_ref().is_some_and(|ob| !ob.journal.is_empty() || !ob.pieces.is_empty())
                || !out.sends.is_empty()
        } || !self.large_in.lock().unwrap().is_empty();
        // A fallback rail is connected (on a thread: a connection takes a handshake) once the
        // gate has traffic, and pinged like the others: when the preferred rails fall silent
        // together, it is the witness that the peer still answers.
        for (j, r) in self.rails.iter().enumerate() {
            if active && r.fallback && r.linked().is_none() && !r.is_down() {
                self.probe(core, j);
            }
        }
        let hb = f.timings.heartbeat_us;
        let live = |j: usize| !self.rails[j].down.load(Relaxed) && self.rails[j].linked().is_some();
        if !active {
            // Nothing awaited: silence is normal. Rails count as heard now, pings as answered.
            for (j, w) in f.watch.iter().enumerate() {
                if live(j) {
                    w.restart(now);
                }
            }
            return;
        }
        // A rail whose sent bytes the peer keeps acknowledging is alive, even if nothing comes
        // back on it (a long bulk transfer one way: a PING would queue behind it).
        for (j, w) in f.watch.iter().enumerate() {
            if let Some(acked) = self.rails[j].linked().and_then(|l| l.acknowledged())
                && acked != w.acked.swap(acked, Relaxed)
            {
                f.path_works(j, now);
            }
        }
        let mut silent = None;
        let mut last_heard = 0;
        for (j, w) in f.watch.iter().enumerate() {
            if live(j) {
                last_heard = last_heard.max(w.spoke.load(Relaxed));
            }
        }
        if last_heard != 0 && now.saturating_sub(last_heard) >= f.timings.peer_silent_us {
            let rails: Vec<String> = (0..self.rails.len())
                .map(|j| {
                    let r = &self.rails[j];
                    let state = if live(j) {
                        "silent"
                    } else if r.is_down() {
                        "failed"
                    } else {
                        "unused"
                    };
                    format!("{} {state}", r.info.name)
                })
                .collect();
            let why = format!(
                "nothing arrived on any rail for {} ms while traffic was outstanding (every link cut, or the \
                 peer stopped; rails: {})",
                (now - last_heard) / 1000,
                rails.join(", ")
            );
            return self.fail(core, &why);
        }
        for (j, w) in f.watch.iter().enumerate() {
            if !live(j) {
                continue;
            }
            let heard = w.heard.load(Relaxed);
            if now.saturating_sub(heard) >= hb && now.saturating_sub(w.last_ping.load(Relaxed)) >= hb {
                let link = self.rails[j].linked().expect("live");
                if let Ok(Sent::Done) = link.try_send(&[IoSlice::new(&wire::PING_PACKET)]) {
                    w.last_ping.store(now, Relaxed);
                    let _ = w.pinged.compare_exchange(0, now, Relaxed, Relaxed);
                }
            }
            let p = w.pinged.load(Relaxed);
            if p != 0 && now.saturating_sub(p) >= f.timings.dead_after_us {
                let sibling_spoke =
                    (0..f.watch.len()).any(|k| k != j && live(k) && f.watch[k].heard.load(Relaxed) > p);
                if sibling_spoke {
                    silent = Some((j, now - p));
                }
            }
        }
        if let Some((j, quiet)) = silent {
            let why =
                format!("silent for {} ms (no answer to heartbeats) while other rails answer", quiet / 1000);
            self.rail_failed(core, j, &why);
        }
    }
}

/// A step of the rendezvous on a failover gate where a test may cut a rail ([`test_cut`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The receiver asked for the data (RTR queued).
    RtrSent,
    /// The sender handed a bulk piece to a rail's driver.
    PieceStarted,
    /// The sender's driver finished sending a piece (it may not have arrived).
    PieceSent,
    /// The receiver has every byte, before its FIN goes.
    DataComplete,
    /// The sender took the receiver's FIN.
    FinReceived,
    /// A numbered packet left (any traffic: "cut after the N-th packet").
    Packet,
}

impl Step {
    fn name(self) -> &'static str {
        match self {
            Step::RtrSent => "rtr-sent",
            Step::PieceStarted => "piece-started",
            Step::PieceSent => "piece-sent",
            Step::DataComplete => "data-complete",
            Step::FinReceived => "fin-received",
            Step::Packet => "packet",
        }
    }
}

/// Test hook: `NMAD_TEST_CUT=STEP[:N]` (STEP one of [`Step`]'s names) fails rail 0 of the gate
/// where STEP happens in this process for the N-th time (default 1), as a failure of that rail
/// would (its link closed: the peer sees it fail too): the tests of the restart races use it.
/// Nothing else reads it; a gate without failover never calls it.
pub(crate) fn test_cut(core: &Core, gate: &Gate, step: Step) {
    test_cut_after(core, gate, step, 1);
}

/// [`test_cut`] for `times` occurrences of `step` at once.
pub(crate) fn test_cut_after(core: &Core, gate: &Gate, step: Step, times: u64) {
    if times == 0 {
        return;
    }
    static WHEN: std::sync::OnceLock<Option<(String, u64)>> = std::sync::OnceLock::new();
    static SEEN: AtomicU64 = AtomicU64::new(0);
    let when = WHEN.get_or_init(|| {
        let v = std::env::var("NMAD_TEST_CUT").ok()?;
        let (name, n) = v.split_once(':').map_or((v.as_str(), "1"), |(a, b)| (a, b));
        Some((name.to_string(), n.parse::<u64>().unwrap_or(1).max(1)))
    });
    if let Some((name, n)) = when
        && name == step.name()
        && let old = SEEN.fetch_add(times, Relaxed)
        && (old..old + times).contains(&(*n - 1))
    {
        gate.rail_failed(core, 0, &format!("cut by the test hook NMAD_TEST_CUT={name}:{n}"));
    }
}

/// Starts the thread that runs [`Gate::failover_tick`] on every failover gate, every half
/// heartbeat, if this process has two or more network drivers (else no gate can fail over). A
/// thread of its own: heartbeats must go and silent rails be found while every application
/// thread computes and whatever pioman's policy does.
pub(crate) fn start_monitor(core: &Arc<Core>) -> std::io::Result<()> {
    let network =
        core.drivers.iter().filter(|d| d.caps().large == LargePath::Bulk && d.name() != "self").count();
    let Some(timings) = core.config.failover.filter(|_| network >= 2) else { return Ok(()) };
    let weak = Arc::downgrade(core);
    let period = std::time::Duration::from_micros((timings.heartbeat_us / 2).max(1000));
    std::thread::Builder::new().name("nmad-failover".into()).spawn(move || {
        let mut last = now_us();
        loop {
            std::thread::sleep(period);
            let Some(core) = weak.upgrade() else { return };
            if core.stopped.load(Relaxed) {
                return;
            }
            let now = now_us();
            // Woken far later than asked: the process was stopped (SIGSTOP) or starved.
            let resumed = now.saturating_sub(last) > 4 * period.as_micros() as u64;
            last = now;
            for peer in 0..core.gates.len() as u32 {
                if let Some(g) = core.made_gate(peer)
                    && g.failover.is_some()
                {
                    g.failover_tick(&core, now, resumed);
                }
            }
        }
    })?;
    Ok(())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_track_counts_new_bytes_once_and_names_the_missing_ones() {
        let mut t = Track::new(1, vec![(0, 0, 100), (1, 100, 100)]);
        assert_eq!(t.add(0, 10), 10);
        assert_eq!(t.add(20, 30), 10);
        assert_eq!(t.add(5, 25), 10, "only 10..20 is new");
        assert_eq!(t.missing(0, 100), vec![(30, 100)]);
        assert_eq!(t.add(100, 150), 50);
        assert_eq!(t.missing(0, 200), vec![(30, 100), (150, 200)]);
        assert_eq!(t.add(30, 100), 70);
        assert_eq!(t.add(0, 150), 0);
        assert_eq!(t.missing(0, 150), vec![]);
        assert_eq!(t.got, vec![(0, 150)]);
    }
}
