//! The protocol under a simulated channel that drops, duplicates, reorders and delays units and
//! ACKs on a seeded schedule: everything arrives exactly once and in order, for thousands of
//! schedules; a loss costs about one retransmission (selective ACKs), not a window's worth.

use super::{Ack, Arrival, Config, Micros, Receiver, Sender, Stats};
use proptest::prelude::*;
use std::sync::Arc;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() % 1_000_000) as f64 / 1e6 < p
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
}

/// A lossy one-way channel: each item is dropped, duplicated, and delayed by a base latency
/// plus a random jitter (which reorders items).
struct Channel<T> {
    queue: Vec<(Micros, T)>,
    drop: f64,
    dup: f64,
    latency: Micros,
    jitter: Micros,
    dropped: u64,
}

impl<T: Clone> Channel<T> {
    fn new(drop: f64, dup: f64, latency: Micros, jitter: Micros) -> Channel<T> {
        Channel { queue: Vec::new(), drop, dup, latency, jitter, dropped: 0 }
    }

    fn send(&mut self, rng: &mut Rng, t: T, now: Micros) {
        if rng.chance(self.drop) {
            self.dropped += 1;
            return;
        }
        if rng.chance(self.dup) {
            self.queue.push((now + self.latency + rng.below(self.jitter + 1), t.clone()));
        }
        self.queue.push((now + self.latency + rng.below(self.jitter + 1), t));
    }

    fn due(&mut self, now: Micros) -> Vec<T> {
        self.queue.sort_by_key(|(at, _)| *at);
        let n = self.queue.iter().take_while(|(at, _)| *at <= now).count();
        self.queue.drain(..n).map(|(_, t)| t).collect()
    }
}

struct Outcome {
    stats: super::StatsSnapshot,
    data_dropped: u64,
    elapsed: Micros,
}

/// Sends `n` units through channels with the given faults; panics unless each arrives exactly
/// once, in order, within a simulated minute.
fn run(seed: u64, drop: f64, dup: f64, jitter: Micros, n: u64, cfg: Config) -> Outcome {
    let mut rng = Rng(seed | 1);
    let stats = Arc::new(Stats::default());
    let mut tx: Sender<u64> = Sender::new(cfg, stats.clone());
    let mut rx: Receiver<u64> = Receiver::new(cfg, stats.clone());
    let mut data: Channel<(u64, u32, bool, u64)> = Channel::new(drop, dup, 20, jitter);
    let mut acks: Channel<Ack> = Channel::new(drop, dup, 20, jitter);
    let (mut now, mut pushed, mut out) = (0, 0u64, 0u64);
    let mut released = 0u64;
    loop {
        while pushed < n && tx.len() < 2 * cfg.window as usize {
            tx.push(pushed, now);
            pushed += 1;
        }
        while let Some(t) = tx.next_transmit(now) {
            data.send(&mut rng, (t.seq, t.stamp, t.ack_now, *tx.unit(t.seq)), now);
        }
        for (seq, stamp, ack_now, unit) in data.due(now) {
            assert_eq!(seq, unit, "the channel carries units whole");
            if let Arrival::Deliver(u) = rx.on_data(seq, stamp, ack_now, unit, now) {
                assert_eq!(u, out, "in order, exactly once");
                out += 1;
                while let Some(u) = rx.pop_ready(now) {
                    assert_eq!(u, out, "in order, exactly once");
                    out += 1;
                }
            }
        }
        if rx.ack_due().is_some_and(|t| t <= now) {
            acks.send(&mut rng, rx.take_ack(), now);
        }
        for a in acks.due(now) {
            tx.on_ack(&a, now, |u| {
                assert_eq!(u, released, "released oldest first, once");
                released += 1;
            })
            .expect("acks name units sent");
        }
        tx.on_timer(now);
        if out == n && tx.is_empty() {
            break;
        }
        assert!(now < 60_000_000, "stuck: {out} of {n} delivered, {released} released (seed {seed})");
        now += 1 + rng.below(10);
    }
    assert_eq!(released, n);
    Outcome { stats: stats.snapshot(), data_dropped: data.dropped, elapsed: now }
}

fn small() -> Config {
    Config { window: 64, initial_cwnd: 8, min_cwnd: 2, ack_every: 4, ..Config::default() }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn every_unit_arrives_once_in_order_whatever_the_channel_does(
        seed in any::<u64>(),
        drop in 0.0..0.3f64,
        dup in 0.0..0.2f64,
        jitter in 0u64..300,
        n in 1u64..300,
        tiny_window in any::<bool>(),
    ) {
        let cfg = if tiny_window { Config { window: 4, initial_cwnd: 2, min_cwnd: 1, ..small() } } else { small() };
        run(seed, drop, dup, jitter, n, cfg);
    }
}

#[test]
fn a_clean_channel_costs_no_retransmission() {
    let o = run(7, 0.0, 0.0, 0, 20_000, Config::default());
    assert_eq!((o.stats.retransmits, o.stats.timeouts, o.stats.nacks_sent), (0, 0, 0));
    assert!(o.stats.acks_sent == 0, "the driver counts the ACKs it sends");
}

#[test]
fn a_loss_costs_about_one_retransmission_not_a_window() {
    for seed in 1..=5 {
        let o = run(seed, 0.05, 0.0, 0, 20_000, Config::default());
        // Lost ACKs and lost retransmissions add a little; go-back-N would re-send a window.
        assert!(
            o.stats.retransmits <= o.data_dropped * 3 / 2 + 20,
            "seed {seed}: {} retransmissions for {} lost units ({:?})",
            o.stats.retransmits,
            o.data_dropped,
            o.stats
        );
        assert!(o.stats.nacks_sent > 0 && o.stats.nacks_received > 0);
        assert!(o.elapsed < 2_000_000, "seed {seed}: {} µs for 20,000 units", o.elapsed);
    }
}

#[test]
fn the_timeout_adapts_to_the_measured_round_trip() {
    let stats = Arc::new(Stats::default());
    let mut tx: Sender<()> = Sender::new(Config::default(), stats);
    let mut now = 1_000;
    for _ in 0..50 {
        tx.push((), now);
        let t = tx.next_transmit(now).unwrap();
        now += 30; // a 30 µs round trip
        let mut a = Ack::new(t.seq + 1, Some(t.stamp));
        a.echo = Some(t.stamp);
        tx.on_ack(&a, now, |_| ()).unwrap();
    }
    assert_eq!(tx.rtt().smoothed(), 30);
    assert_eq!(tx.rtt().rto(), Config::default().min_rto_us, "a loopback round trip: the floor");
    // An ACK of something never sent is refused.
    assert!(tx.on_ack(&Ack::new(1_000, None), now, |_| ()).is_err());
}
