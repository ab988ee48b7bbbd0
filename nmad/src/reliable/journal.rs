//! The sending half over several reliable rails (rail failover): every unit is numbered and
//! kept, with the rail it went on, until the receiver acknowledges it; when a rail fails, the
//! units it carried that are not acknowledged are sent again on another one, and the
//! receiving [`super::Receiver`] drops the copies that had arrived after all.
//!
//! Unlike [`super::Sender`], nothing is retransmitted on a timeout or a hole: each rail is
//! reliable and ordered by itself (tcp) and the rails overtake one another, so a hole only
//! means a slower rail. The journal never has more than the receiver's window outstanding.

use super::{Ack, Micros};
use std::collections::VecDeque;

/// One unit kept until acknowledged.
struct Kept<U> {
    unit: U,
    rail: usize,
    acked: bool,
    /// To be sent again (its rail failed).
    resend: bool,
}

pub struct Journal<U> {
    window: u64,
    /// Sequence number of `kept[0]`.
    base: u64,
    kept: VecDeque<Kept<U>>,
    /// Units marked for sending again, not resent yet.
    resends: usize,
    /// When the oldest unit still kept was sent.
    since: Micros,
}

impl<U> Journal<U> {
    /// A journal for a receiver that keeps `window` units beyond the next one it expects.
    pub fn new(window: u32) -> Journal<U> {
        Journal { window: u64::from(window.max(1)), base: 0, kept: VecDeque::new(), resends: 0, since: 0 }
    }

    /// The sequence number the next unit gets.
    pub fn next_seq(&self) -> u64 {
        self.base + self.kept.len() as u64
    }

    /// Whether a new unit may be sent now (the receiver's window is not full).
    pub fn has_room(&self) -> bool {
        (self.kept.len() as u64) < self.window
    }

    /// Units not acknowledged yet.
    pub fn len(&self) -> usize {
        self.kept.iter().filter(|k| !k.acked).count()
    }

    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    /// Units waiting to be sent again.
    pub fn resends(&self) -> usize {
        self.resends
    }

    /// Keeps `unit`, just sent on `rail` as [`Journal::next_seq`]; returns its number.
    pub fn push(&mut self, rail: usize, unit: U, now: Micros) -> u64 {
        debug_assert!(self.has_room());
        if self.kept.is_empty() {
            self.since = now;
        }
        self.kept.push_back(Kept { unit, rail, acked: false, resend: false });
        self.next_seq() - 1
    }

    /// How long the oldest unacknowledged unit has been kept (0 if none).
    pub fn oldest_age(&self, now: Micros) -> Micros {
        if self.kept.is_empty() { 0 } else { now.saturating_sub(self.since) }
    }

    /// The receiver's acknowledgement: every unit below `ack.next` and within its ranges is
    /// released (handed to `release`). Numbers beyond what was sent are ignored.
    pub fn on_ack(&mut self, ack: &Ack, now: Micros, mut release: impl FnMut(U)) {
        let end = self.next_seq();
        for &(s, e) in ack.ranges() {
            for seq in s.max(self.base)..e.min(end) {
                let k = &mut self.kept[(seq - self.base) as usize];
                if !k.acked {
                    k.acked = true;
                    self.resends -= usize::from(std::mem::take(&mut k.resend));
                }
            }
        }
        let upto = ack.next.min(end);
        let mut moved = false;
        while self.base < upto || self.kept.front().is_some_and(|k| k.acked) {
            let k = self.kept.pop_front().expect("kept below next_seq");
            self.base += 1;
            moved = true;
            if k.resend {
                self.resends -= 1;
            }
            release(k.unit);
        }
        if moved {
            self.since = now;
        }
    }

    /// Rail `rail` failed: its unacknowledged units are to be sent again. Returns how many.
    pub fn reroute(&mut self, rail: usize) -> usize {
        let mut n = 0;
        for k in self.kept.iter_mut().filter(|k| k.rail == rail && !k.acked && !k.resend) {
            k.resend = true;
            n += 1;
        }
        self.resends += n;
        n
    }

    /// The oldest unit to send again: its number and contents.
    pub fn next_resend(&self) -> Option<(u64, &U)> {
        if self.resends == 0 {
            return None;
        }
        let (i, k) = self.kept.iter().enumerate().find(|(_, k)| k.resend)?;
        Some((self.base + i as u64, &k.unit))
    }

    /// Unit `seq` went again, on `rail`.
    pub fn resent(&mut self, seq: u64, rail: usize) {
        if let Some(k) = seq.checked_sub(self.base).and_then(|i| self.kept.get_mut(i as usize))
            && std::mem::take(&mut k.resend)
        {
            k.rail = rail;
            self.resends -= 1;
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::reliable::{Arrival, Config, Receiver, Stats};
    use proptest::prelude::*;
    use std::sync::Arc;

    #[test]
    fn acknowledged_units_are_released_in_order_and_ranges_count() {
        let mut j = Journal::new(8);
        for i in 0..5 {
            assert_eq!(j.push(i % 2, i, 0), i as u64);
        }
        let mut ack = Ack::new(2, None);
        ack.push_range(3, 4);
        let mut out = Vec::new();
        j.on_ack(&ack, 1, |u| out.push(u));
        assert_eq!(out, [0, 1]);
        assert_eq!(j.len(), 2, "2 and 4 wait; 3 is acknowledged out of order");
        assert_eq!(j.reroute(0), 2, "units 2 and 4 went on rail 0");
        assert_eq!(j.next_resend().map(|(s, u)| (s, *u)), Some((2, 2)));
        j.resent(2, 1);
        assert_eq!(j.next_resend().map(|(s, _)| s), Some(4));
        j.on_ack(&Ack::new(5, None), 2, |u| out.push(u));
        assert_eq!(out, [0, 1, 2, 3, 4]);
        assert_eq!((j.resends(), j.is_empty()), (0, true));
    }

    #[test]
    fn the_window_bounds_what_is_outstanding() {
        let mut j = Journal::new(2);
        j.push(0, (), 0);
        j.push(0, (), 0);
        assert!(!j.has_room());
        j.on_ack(&Ack::new(1, None), 0, |_| {});
        assert!(j.has_room());
        j.on_ack(&Ack::new(99, None), 0, |_| {});
        assert_eq!(j.next_seq(), 2, "an ACK beyond what was sent releases what was");
    }

    /// Two ordered rails of different speeds; one fails after a random number of steps, losing
    /// what it had not delivered (and maybe delivering its last unit without the sender
    /// knowing): the receiver still gets every unit exactly once.
    fn run(seed: u64, units: u64, fail_at: u64, lat: [usize; 2]) -> Vec<u64> {
        let mut rng = seed | 1;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let cfg = Config { window: 64, ..Config::default() };
        let mut j: Journal<u64> = Journal::new(cfg.window);
        let mut r: Receiver<()> = Receiver::new(cfg, Arc::new(Stats::default()));
        // Per rail: units in flight, with the step they arrive at.
        let mut rails: [VecDeque<(u64, u64)>; 2] = [VecDeque::new(), VecDeque::new()];
        let mut down = [false; 2];
        let (mut sent, mut got, mut step) = (0, Vec::new(), 0);
        while got.len() < units as usize && step < 100_000 {
            step += 1;
            if step == fail_at {
                down[0] = true;
                // The rail's last unit may have arrived nonetheless.
                let keep = next() % 2 == 0;
                let last = rails[0].pop_back();
                rails[0].clear();
                if let (true, Some(u)) = (keep, last) {
                    rails[0].push_back((u.0, step));
                }
                j.reroute(0);
            }
            let live: Vec<usize> = (0..2).filter(|&i| !down[i]).collect();
            let rail = live[(next() % live.len() as u64) as usize];
            if let Some((seq, &u)) = j.next_resend() {
                rails[rail].push_back((u, step + lat[rail] as u64));
                j.resent(seq, rail);
            } else if sent < units && j.has_room() {
                j.push(rail, sent, 0);
                rails[rail].push_back((sent, step + lat[rail] as u64));
                sent += 1;
            }
            for q in rails.iter_mut() {
                while q.front().is_some_and(|&(_, at)| at <= step) {
                    let (u, _) = q.pop_front().unwrap();
                    match r.on_data(u, 0, false, (), 0) {
                        Arrival::Deliver(()) | Arrival::Held => got.push(u),
                        Arrival::Duplicate => {}
                        Arrival::BeyondWindow => panic!("unit {u} beyond the window"),
                    }
                    while r.pop_ready(0).is_some() {}
                }
            }
            if next() % 4 == 0 {
                j.on_ack(&r.take_ack(), 0, |_| {});
            }
        }
        got
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn every_unit_arrives_once_when_a_rail_fails(
            seed in any::<u64>(), units in 1u64..300, fail_at in 1u64..400, a in 1usize..20, b in 1usize..20,
        ) {
            let mut got = run(seed, units, fail_at, [a, b]);
            let n = got.len();
            got.sort_unstable();
            got.dedup();
            prop_assert_eq!(got.len(), n, "a unit arrived twice");
            prop_assert_eq!(got, (0..units).collect::<Vec<_>>());
        }
    }
}
