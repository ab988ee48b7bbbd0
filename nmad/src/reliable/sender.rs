//! The sending half: numbers units, keeps each until acknowledged, decides what goes next (a
//! unit found lost first, then new ones within the windows), and re-sends on evidence of loss.
//!
//! A unit is lost when three units sent after it have arrived while it has not (selective ACK
//! ranges), or when one sent after it arrived and 9/8 of a round trip has passed since it went
//! (RACK's time rule: small windows have no three later units). When ACKs stop coming — the
//! last units or their ACKs lost — a probe timeout (`rtt`'s RTO, doubled per consecutive
//! expiry) sends up to two units regardless of the window, new ones or the oldest
//! unacknowledged, to draw an ACK; only the third expiry in a row counts as congestion. A loss
//! halves the congestion window once per window of data (recovery ends when everything sent
//! before it is acknowledged). The window grows by one unit per acknowledged unit below the
//! threshold (slow start) and by one per window above it.

use super::{Ack, Config, Micros, Rtt, Stats};
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

/// Units sent after a missing one that must have arrived before it is declared lost.
const DUP_THRESHOLD: usize = 3;
/// Units a probe timeout may send beyond the window.
const PROBES: u32 = 2;
/// Consecutive probe timeouts that mean the path is congested (or the peer gone).
const PERSISTENT: u32 = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Unsent,
    Flight,
    /// The peer has it (above a hole); kept until the cumulative point passes it.
    Sacked,
    /// Waits in `lost` to be sent again.
    Lost,
}

struct Slot<U> {
    unit: U,
    sent_at: Micros,
    state: State,
}

/// What to put on the wire now: unit `seq` (see [`Sender::unit`]), stamped with `stamp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit {
    pub seq: u64,
    pub retransmit: bool,
    /// The sender's clock, for the receiver to echo (never 0, which means "no stamp").
    pub stamp: u32,
    /// The window is full after it: the receiver should acknowledge at once, not after its
    /// ACK delay (a small window would otherwise wait for that delay every round trip).
    pub ack_now: bool,
}

/// An ACK that cannot be right: it acknowledges units never sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckError {
    pub acked: u64,
    pub sent: u64,
}

impl std::fmt::Display for AckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "acknowledgement of unit {} when only {} were sent", self.acked, self.sent)
    }
}

/// The clock stamp of `now` (the low 32 bits, never 0).
pub fn stamp(now: Micros) -> u32 {
    (now as u32) | 1
}

pub struct Sender<U> {
    cfg: Config,
    stats: Arc<Stats>,
    /// The oldest unit not cumulatively acknowledged: `slots[0]`.
    base: u64,
    slots: VecDeque<Slot<U>>,
    /// The first unit never sent (all before it went at least once).
    unsent: u64,
    /// Units to send again, oldest loss first (entries whose unit arrived meanwhile are skipped).
    lost: VecDeque<u64>,
    in_flight: u32,
    cwnd: u32,
    /// Growth above the threshold, in acknowledged units (one more unit per window's worth).
    grown: u32,
    ssthresh: u32,
    /// In recovery until the cumulative point reaches this.
    recovery_end: Option<u64>,
    rtt: Rtt,
    /// The latest send time among the units known to have arrived.
    rack_sent: Micros,
    /// When a unit overtaken by a later one becomes lost by the time rule.
    loss_at: Option<Micros>,
    pto_at: Option<Micros>,
    /// Consecutive probe timeouts.
    ptos: u32,
    /// Units the last probe timeout still lets through beyond the window.
    probes: u32,
    /// When the cumulative point last moved (or units started waiting for it).
    progress_at: Micros,
    /// Units acknowledged selectively (holes below them).
    sacked: usize,
    /// A unit went again since nothing was last in flight: send order no longer follows
    /// sequence order. With neither this nor a selective ACK no unit can be overtaken, and the
    /// loss scan is skipped (it walks the whole window, at every ACK).
    resent: bool,
}

impl<U> Sender<U> {
    pub fn new(cfg: Config, stats: Arc<Stats>) -> Sender<U> {
        Sender {
            cfg,
            stats,
            base: 0,
            slots: VecDeque::new(),
            unsent: 0,
            lost: VecDeque::new(),
            in_flight: 0,
            cwnd: cfg.initial_cwnd.max(cfg.min_cwnd),
            grown: 0,
            ssthresh: cfg.window,
            recovery_end: None,
            rtt: Rtt::new(cfg.min_rto_us, cfg.max_rto_us, cfg.initial_rto_us),
            rack_sent: 0,
            loss_at: None,
            pto_at: None,
            ptos: 0,
            probes: 0,
            progress_at: 0,
            sacked: 0,
            resent: false,
        }
    }

    /// Never sends further ahead of the cumulative point than `window` units (the peer's
    /// receive window, or what its socket buffer holds), nor lets the congestion window grow
    /// past it.
    pub fn limit_window(&mut self, window: u32) {
        self.cfg.window = self.cfg.window.min(window).max(1);
        self.ssthresh = self.ssthresh.min(self.cfg.window);
        self.cwnd = self.cwnd.min(self.cfg.window).max(self.cfg.min_cwnd.min(self.cfg.window));
    }

    /// Queues `unit`; returns its sequence number.
    pub fn push(&mut self, unit: U, now: Micros) -> u64 {
        if self.slots.is_empty() {
            self.progress_at = now;
        }
        self.slots.push_back(Slot { unit, sent_at: 0, state: State::Unsent });
        self.base + self.slots.len() as u64 - 1
    }

    /// Units kept: queued or not yet acknowledged.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Units queued and never sent.
    pub fn unsent(&self) -> usize {
        (self.base + self.slots.len() as u64 - self.unsent) as usize
    }

    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    pub fn cwnd(&self) -> u32 {
        self.cwnd
    }

    pub fn rtt(&self) -> &Rtt {
        &self.rtt
    }

    /// The unit `seq` (kept: between the cumulative point and the last pushed).
    pub fn unit(&self, seq: u64) -> &U {
        &self.slots[(seq - self.base) as usize].unit
    }

    /// Every unit kept, oldest first (to release them when the link fails).
    pub fn drain(&mut self) -> impl Iterator<Item = U> + '_ {
        self.lost.clear();
        self.in_flight = 0;
        self.pto_at = None;
        self.loss_at = None;
        self.unsent = self.base + self.slots.len() as u64;
        self.base = self.unsent;
        self.sacked = 0;
        self.slots.drain(..).map(|s| s.unit)
    }

    /// The next unit to put on the wire, if the windows allow one (or a probe is due): a lost
    /// unit first, then the oldest never sent, then (probing) the oldest unacknowledged. The
    /// caller sends it at once.
    pub fn next_transmit(&mut self, now: Micros) -> Option<Transmit> {
        let probing = self.probes > 0;
        if !probing && self.in_flight >= self.cwnd {
            return None;
        }
        let t = self
            .retransmit_lost(now)
            .or_else(|| self.send_new(now))
            .or_else(|| if probing { self.probe_oldest(now) } else { None });
        if t.is_some() && probing {
            self.probes -= 1;
        } else if t.is_none() {
            self.probes = 0;
        }
        t
    }

    fn retransmit_lost(&mut self, now: Micros) -> Option<Transmit> {
        while let Some(seq) = self.lost.pop_front() {
            let Some(i) = seq.checked_sub(self.base) else { continue };
            let s = &mut self.slots[i as usize];
            if s.state != State::Lost {
                continue;
            }
            s.state = State::Flight;
            s.sent_at = now;
            self.in_flight += 1;
            self.resent = true;
            Stats::add(&self.stats.retransmits, 1);
            return Some(self.sent(seq, true, now));
        }
        None
    }

    fn send_new(&mut self, now: Micros) -> Option<Transmit> {
        let next = self.base + self.slots.len() as u64;
        if self.unsent == next || self.unsent - self.base >= u64::from(self.cfg.window) {
            return None;
        }
        let seq = self.unsent;
        self.unsent += 1;
        let s = &mut self.slots[(seq - self.base) as usize];
        s.state = State::Flight;
        s.sent_at = now;
        self.in_flight += 1;
        Some(self.sent(seq, false, now))
    }

    /// A probe: the oldest unit still in flight, sent again.
    fn probe_oldest(&mut self, now: Micros) -> Option<Transmit> {
        let i = self.slots.iter().position(|s| s.state == State::Flight)?;
        self.slots[i].sent_at = now;
        self.resent = true;
        Stats::add(&self.stats.retransmits, 1);
        Some(self.sent(self.base + i as u64, true, now))
    }

    fn sent(&mut self, seq: u64, retransmit: bool, now: Micros) -> Transmit {
        if self.pto_at.is_none() {
            self.pto_at = Some(now + self.rtt.rto_backed_off(self.ptos));
        }
        Transmit { seq, retransmit, stamp: stamp(now), ack_now: self.in_flight >= self.cwnd }
    }

    /// Takes an ACK: releases the units it acknowledges cumulatively (oldest first, to
    /// `release`), marks those it acknowledges selectively, finds the lost ones, adjusts the
    /// windows and the timers. Returns how many units were newly acknowledged.
    pub fn on_ack(&mut self, ack: &Ack, now: Micros, mut release: impl FnMut(U)) -> Result<usize, AckError> {
        let beyond = ack.ranges().last().map_or(ack.next, |r| r.1.max(ack.next));
        if beyond > self.unsent {
            return Err(AckError { acked: beyond, sent: self.unsent });
        }
        if ack.has_gap() {
            Stats::add(&self.stats.nacks_received, 1);
        }
        let mut delivered = 0;
        let progress = ack.next > self.base;
        while self.base < ack.next {
            let s = self.slots.pop_front().expect("below `unsent`");
            self.base += 1;
            self.sacked -= usize::from(s.state == State::Sacked);
            delivered += self.arrived(s.state, s.sent_at);
            release(s.unit);
        }
        for &(start, end) in ack.ranges() {
            for seq in start.max(self.base)..end {
                let i = (seq - self.base) as usize;
                let (st, sent_at) = (self.slots[i].state, self.slots[i].sent_at);
                if matches!(st, State::Flight | State::Lost) {
                    delivered += self.arrived(st, sent_at);
                    self.slots[i].state = State::Sacked;
                    self.sacked += 1;
                }
            }
        }
        if progress {
            if let Some(echo) = ack.echo {
                let rtt = u64::from(stamp(now).wrapping_sub(echo));
                if rtt < 1 << 31 {
                    self.rtt.sample(rtt);
                    self.stats.rtt_us.store(rtt, Relaxed);
                }
            }
            self.progress_at = now;
            if self.recovery_end.is_some_and(|e| self.base >= e) {
                self.recovery_end = None;
            }
        }
        if self.in_flight == 0 && self.lost.is_empty() {
            self.resent = false;
        }
        let lost = if delivered > 0 { self.detect_losses(now) } else { 0 };
        if lost == 0 && self.recovery_end.is_none() {
            self.grow(delivered as u32);
        }
        if delivered > 0 {
            self.ptos = 0;
            self.pto_at =
                (self.in_flight > 0 || !self.lost.is_empty()).then(|| now + self.rtt.rto_backed_off(0));
        }
        self.stats.cwnd.store(u64::from(self.cwnd), Relaxed);
        Ok(delivered)
    }

    /// A unit in `state`, sent at `sent_at`, arrived: 1 if it counts as newly delivered.
    fn arrived(&mut self, state: State, sent_at: Micros) -> usize {
        match state {
            State::Flight => {
                self.in_flight -= 1;
                self.rack_sent = self.rack_sent.max(sent_at);
                1
            }
            State::Lost => 1, // its queued retransmission is skipped
            State::Sacked => 0,
            State::Unsent => unreachable!("acknowledgements are checked against `unsent`"),
        }
    }

    fn grow(&mut self, delivered: u32) {
        if self.cwnd < self.ssthresh {
            self.cwnd = (self.cwnd + delivered).min(self.ssthresh);
        } else {
            self.grown += delivered;
            while self.grown >= self.cwnd {
                self.grown -= self.cwnd;
                self.cwnd += 1;
            }
        }
        self.cwnd = self.cwnd.min(self.cfg.window);
    }

    /// Halves the window, once per window of data.
    fn on_loss(&mut self) {
        if self.recovery_end.is_none() {
            self.ssthresh = (self.cwnd / 2).max(self.cfg.min_cwnd);
            self.cwnd = self.ssthresh;
            self.grown = 0;
            self.recovery_end = Some(self.unsent);
        }
    }

    /// Marks lost every unit in flight overtaken by [`DUP_THRESHOLD`] units sent after it, or
    /// by one such unit 9/8 of a round trip ago (one pass from the newest, keeping the latest
    /// send times among the arrived units above); sets the time rule's timer for the others.
    fn detect_losses(&mut self, now: Micros) -> usize {
        let rtt = self.rtt.smoothed().max(self.rtt.latest());
        let wait = if rtt == 0 { self.rtt.rto() } else { rtt + rtt / 8 };
        let mut latest = [0 as Micros; DUP_THRESHOLD]; // descending
        let mut seen = 0;
        let mut marked = Vec::new();
        self.loss_at = None;
        if self.sacked == 0 && !self.resent {
            return 0; // units arrive in the order they went: none overtaken
        }
        let sent = (self.unsent - self.base) as usize;
        for (i, s) in self.slots.range_mut(..sent).enumerate().rev() {
            match s.state {
                State::Sacked => {
                    seen += 1;
                    if let Some(p) = latest.iter().position(|&t| s.sent_at > t) {
                        latest.copy_within(p..DUP_THRESHOLD - 1, p + 1);
                        latest[p] = s.sent_at;
                    }
                }
                State::Flight if self.rack_sent > s.sent_at => {
                    let by_count = seen >= DUP_THRESHOLD && latest[DUP_THRESHOLD - 1] >= s.sent_at;
                    if by_count || now >= s.sent_at + wait {
                        s.state = State::Lost;
                        marked.push(self.base + i as u64);
                    } else {
                        let at = s.sent_at + wait;
                        self.loss_at = Some(self.loss_at.map_or(at, |l| l.min(at)));
                    }
                }
                _ => {}
            }
        }
        self.in_flight -= marked.len() as u32;
        self.lost.extend(marked.iter().rev());
        if !marked.is_empty() {
            self.on_loss();
        }
        marked.len()
    }

    /// When a timer expires (`None`: none armed).
    pub fn deadline(&self) -> Option<Micros> {
        match (self.pto_at, self.loss_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Fires the timers that expired: the time rule's (units overtaken long enough are lost),
    /// the probe timeout (up to two units go beyond the window; at the third
    /// expiry in a row every unit in flight for two round trips is lost and the window drops
    /// to its floor). Returns whether one fired.
    pub fn on_timer(&mut self, now: Micros) -> bool {
        let mut fired = false;
        if self.loss_at.is_some_and(|t| now >= t) {
            self.detect_losses(now);
            fired = true;
        }
        if self.pto_at.is_some_and(|t| now >= t) {
            fired = true;
            Stats::add(&self.stats.timeouts, 1);
            self.ptos += 1;
            self.probes = PROBES;
            if self.ptos >= PERSISTENT {
                self.persistent_congestion(now);
            }
            self.pto_at = (!self.slots.is_empty()).then(|| now + self.rtt.rto_backed_off(self.ptos));
        }
        fired
    }

    fn persistent_congestion(&mut self, now: Micros) {
        // Units sent within two round trips may still be on their way.
        let recent = now.saturating_sub(2 * self.rtt.smoothed());
        let base = self.base;
        let mut lost = Vec::new();
        for (i, s) in self.slots.iter_mut().enumerate() {
            if s.state == State::Flight && s.sent_at <= recent {
                s.state = State::Lost;
                lost.push(base + i as u64);
            }
        }
        self.in_flight -= lost.len() as u32;
        self.lost.extend(lost);
        self.ssthresh = (self.cwnd / 2).max(self.cfg.min_cwnd);
        self.cwnd = self.cfg.min_cwnd;
        self.grown = 0;
        self.recovery_end = Some(self.unsent);
    }

    /// The state in a few numbers, for a report on a stalled link.
    pub fn describe(&self) -> String {
        let lost_slots = self.slots.iter().filter(|s| s.state == State::Lost).count();
        let sacked = self.slots.iter().filter(|s| s.state == State::Sacked).count();
        format!(
            "oldest unacknowledged {}, {} kept, {} unsent, {} in flight, {} lost ({} queued), {} acknowledged above, window {}/{}, rtt {} us, {} probe timeouts in a row",
            self.base,
            self.slots.len(),
            self.unsent(),
            self.in_flight,
            lost_slots,
            self.lost.len(),
            sacked,
            self.cwnd,
            self.cfg.window,
            self.rtt.smoothed(),
            self.ptos
        )
    }

    /// How long units have waited for the cumulative point to move (0 with nothing sent and
    /// unacknowledged): a peer silent for too long is lost.
    pub fn silent_for(&self, now: Micros) -> Micros {
        if self.slots.is_empty() || self.unsent == self.base {
            0
        } else {
            now.saturating_sub(self.progress_at)
        }
    }
}
