//! The receiving half: hands units over in order, exactly once; keeps those that arrive early
//! (within the window) until the hole before them is filled; drops duplicates and what lies
//! beyond the window; and says when an ACK is owed — at once for a hole, a duplicate (its
//! sender may have missed our ACK) or a unit beyond the window, otherwise after
//! [`Config::ack_every`] units or [`Config::ack_delay_us`].

use super::{Ack, Config, MAX_RANGES, Micros, Stats};
use std::collections::VecDeque;
use std::sync::Arc;

/// What became of an arriving unit.
#[derive(Debug, PartialEq, Eq)]
pub enum Arrival<U> {
    /// The next in order: hand it over, then whatever [`Receiver::pop_ready`] gives.
    Deliver(U),
    /// Early: kept until the hole before it is filled.
    Held,
    /// Already had it: dropped.
    Duplicate,
    /// Further ahead than the window allows: dropped.
    BeyondWindow,
}

pub struct Receiver<U> {
    cfg: Config,
    stats: Arc<Stats>,
    /// Every unit below it was handed over.
    next: u64,
    /// `held[i]` is unit `next + i` if it arrived (`held[0]`, the hole, never has).
    held: VecDeque<Option<U>>,
    /// In-order units not yet acknowledged, since `owed_since`.
    owed: u32,
    owed_since: Micros,
    /// An ACK must go at once.
    urgent: bool,
    echo: Option<u32>,
    /// The latest unit held early (its range goes in every ACK).
    latest: u64,
}

impl<U> Receiver<U> {
    pub fn new(cfg: Config, stats: Arc<Stats>) -> Receiver<U> {
        Receiver {
            cfg,
            stats,
            next: 0,
            held: VecDeque::new(),
            owed: 0,
            owed_since: 0,
            urgent: false,
            echo: None,
            latest: 0,
        }
    }

    /// The next unit expected.
    pub fn next(&self) -> u64 {
        self.next
    }

    /// Takes unit `seq`, stamped `stamp` by its sender, who may ask for an ACK at once
    /// (`ack_now`: its window is full, or it waits for this unit's acknowledgement).
    pub fn on_data(&mut self, seq: u64, stamp: u32, ack_now: bool, unit: U, now: Micros) -> Arrival<U> {
        self.urgent |= ack_now;
        let Some(off) = seq.checked_sub(self.next) else {
            Stats::add(&self.stats.duplicates, 1);
            self.urgent = true;
            return Arrival::Duplicate;
        };
        if off >= u64::from(self.cfg.window) {
            Stats::add(&self.stats.beyond_window, 1);
            self.urgent = true;
            return Arrival::BeyondWindow;
        }
        let off = off as usize;
        if off == 0 {
            if matches!(self.held.front(), Some(Some(_))) {
                // Kept already, not popped yet: `pop_ready` hands it over.
                Stats::add(&self.stats.duplicates, 1);
                return Arrival::Duplicate;
            }
            self.held.pop_front();
            self.next += 1;
            self.echo = Some(stamp);
            self.owe(now);
            // A hole filled while others remain: tell the sender at once.
            self.urgent |= self.held.iter().skip(1).any(Option::is_some);
            return Arrival::Deliver(unit);
        }
        if self.held.len() <= off {
            self.held.resize_with(off + 1, || None);
        }
        self.urgent = true;
        if self.held[off].is_some() {
            Stats::add(&self.stats.duplicates, 1);
            return Arrival::Duplicate;
        }
        self.held[off] = Some(unit);
        self.latest = seq;
        Arrival::Held
    }

    /// The next held unit now in order, if any (call until `None` after a `Deliver`).
    pub fn pop_ready(&mut self, now: Micros) -> Option<U> {
        let unit = self.held.front_mut()?.take()?;
        self.held.pop_front();
        self.next += 1;
        self.owe(now);
        Some(unit)
    }

    fn owe(&mut self, now: Micros) {
        if self.owed == 0 {
            self.owed_since = now;
        }
        self.owed += 1;
    }

    /// When an ACK is owed (a time at or before now: at once), `None` if none is.
    pub fn ack_due(&self) -> Option<Micros> {
        if self.urgent || self.owed >= self.cfg.ack_every {
            Some(0)
        } else if self.owed > 0 {
            Some(self.owed_since + self.cfg.ack_delay_us)
        } else {
            None
        }
    }

    /// In-order units not acknowledged yet, and since when (`None`: nothing owed).
    pub fn owed(&self) -> Option<(u32, Micros)> {
        (self.owed > 0).then_some((self.owed, self.owed_since))
    }

    /// The ACK taken last did not go (its packet was refused): owe one again, at once.
    pub fn ack_lost(&mut self) {
        self.urgent = true;
        self.owed = self.owed.max(1);
    }

    /// The ACK to send now (alone or carried by data); nothing is owed afterwards.
    pub fn take_ack(&mut self) -> Ack {
        let mut ack = Ack::new(self.next, self.echo.take());
        let (mut lowest, mut latest) = (Vec::new(), None);
        let mut start = None;
        for (i, h) in self.held.iter().chain([&None]).enumerate() {
            let seq = self.next + i as u64;
            match (h.is_some(), start) {
                (true, None) => start = Some(seq),
                (false, Some(s)) => {
                    start = None;
                    if (s..seq).contains(&self.latest) {
                        latest = Some((s, seq));
                    }
                    if lowest.len() < MAX_RANGES {
                        lowest.push((s, seq));
                    } else if latest.is_some() {
                        break;
                    }
                }
                _ => {}
            }
        }
        if let Some(l) = latest
            && !lowest.contains(&l)
        {
            lowest[MAX_RANGES - 1] = l; // above every other one
        }
        for (s, e) in lowest {
            ack.push_range(s, e);
        }
        if ack.has_gap() {
            Stats::add(&self.stats.nacks_sent, 1);
        }
        self.owed = 0;
        self.urgent = false;
        ack
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rx() -> Receiver<u64> {
        Receiver::new(
            Config { window: 8, ack_every: 2, ack_delay_us: 100, ..Config::default() },
            Arc::default(),
        )
    }

    #[test]
    fn units_come_out_in_order_once_and_acks_show_the_holes() {
        let mut r = rx();
        assert_eq!(r.on_data(0, 11, false, 0, 5), Arrival::Deliver(0));
        assert_eq!(r.ack_due(), Some(105), "one in order: delayed");
        assert_eq!(r.on_data(2, 13, false, 2, 6), Arrival::Held);
        assert_eq!(r.on_data(4, 15, false, 4, 6), Arrival::Held);
        assert_eq!(r.on_data(4, 15, false, 4, 6), Arrival::Duplicate);
        assert_eq!(r.ack_due(), Some(0), "a hole: at once");
        let a = r.take_ack();
        assert_eq!((a.next, a.echo, a.ranges()), (1, Some(11), &[(2, 3), (4, 5)][..]));
        assert_eq!(r.ack_due(), None);
        assert_eq!(r.on_data(9, 1, false, 9, 7), Arrival::BeyondWindow);
        assert_eq!(r.on_data(0, 1, false, 0, 7), Arrival::Duplicate);
        r.take_ack();
        assert_eq!(r.on_data(1, 12, false, 1, 8), Arrival::Deliver(1));
        assert_eq!(r.pop_ready(8), Some(2));
        assert_eq!(r.pop_ready(8), None, "3 is missing");
        assert_eq!(r.next(), 3);
        let a = r.take_ack();
        assert_eq!((a.next, a.echo, a.ranges()), (3, Some(12), &[(4, 5)][..]));
        assert_eq!(r.on_data(3, 14, false, 3, 9), Arrival::Deliver(3));
        assert_eq!(r.pop_ready(9), Some(4));
        assert_eq!(r.pop_ready(9), None);
        let a = r.take_ack();
        assert_eq!((a.next, a.ranges().len()), (5, 0));
    }
}
