//! Observability: per-source counters and detection-latency histograms, as a snapshot through the
//! API and as JSON at exit when `PIOMAN_STATS=path` is set.
//!
//! Two latencies per source: `detect` — from the event to its detection, when the source knows when
//! its event happened (`PollCtx::event_at`); and `poll_gap` — for a poll that found something, the
//! time since the previous poll of that source (an upper bound of the detection delay when polling).
//! Histograms have log2 buckets in nanoseconds; updates are relaxed atomic adds (no locks).

use crate::source::Context;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Sub-buckets per power of two (3 bits of mantissa: ±6 % around a bucket's midpoint).
const SUB: usize = 8;
/// Durations up to 2^40 ns (18 minutes); longer ones land in the last bucket.
const BUCKETS: usize = SUB + (40 - 3) * SUB;

/// The bucket of `ns`: exact below 8 ns, then 8 buckets per power of two.
fn bucket_of(ns: u64) -> usize {
    if ns < SUB as u64 {
        return ns as usize;
    }
    let e = 63 - ns.leading_zeros() as usize; // >= 3
    let m = ((ns >> (e - 3)) & 7) as usize;
    (SUB + (e - 3) * SUB + m).min(BUCKETS - 1)
}

/// The [low, high) range of bucket `i`, in ns.
fn bucket_range(i: usize) -> (u64, u64) {
    if i < SUB {
        return (i as u64, i as u64 + 1);
    }
    let e = (i - SUB) / SUB + 3;
    let m = ((i - SUB) % SUB) as u64;
    ((8 + m) << (e - 3), (9 + m) << (e - 3))
}

/// A lock-free histogram of durations (log-linear buckets).
#[derive(Debug)]
pub struct Histogram {
    buckets: [AtomicU64; BUCKETS],
    sum_ns: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { buckets: std::array::from_fn(|_| AtomicU64::new(0)), sum_ns: AtomicU64::new(0) }
    }
}

impl Histogram {
    pub fn record(&self, d: Duration) {
        let ns = d.as_nanos().min(u64::MAX as u128) as u64;
        self.buckets[bucket_of(ns)].fetch_add(1, Relaxed);
        self.sum_ns.fetch_add(ns, Relaxed);
    }

    pub fn snapshot(&self) -> HistogramSnapshot {
        HistogramSnapshot {
            counts: self.buckets.iter().map(|b| b.load(Relaxed)).collect(),
            sum_ns: self.sum_ns.load(Relaxed),
        }
    }
}

/// Counts per bucket: exact below 8 ns, then 8 buckets per power of two.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HistogramSnapshot {
    pub counts: Vec<u64>,
    pub sum_ns: u64,
}

impl HistogramSnapshot {
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Quantile `q` (0..=1), in ns: the midpoint of the bucket holding it (within ±6 %). None when
    /// empty.
    pub fn quantile_ns(&self, q: f64) -> Option<u64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let target = ((n as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= target {
                let (lo, hi) = bucket_range(i);
                return Some((lo + hi) / 2);
            }
        }
        None
    }

    pub fn mean_ns(&self) -> Option<f64> {
        let n = self.count();
        (n > 0).then(|| self.sum_ns as f64 / n as f64)
    }

    fn to_json(&self) -> serde_json::Value {
        // Only the non-empty buckets, as [low_ns, high_ns, count].
        let buckets: Vec<_> = self
            .counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| {
                let (lo, hi) = bucket_range(i);
                serde_json::json!([lo, hi, c])
            })
            .collect();
        serde_json::json!({
            "count": self.count(),
            "mean_ns": self.mean_ns(),
            "p50_ns": self.quantile_ns(0.5),
            "p99_ns": self.quantile_ns(0.99),
            "buckets": buckets,
        })
    }
}

/// Counters of one source (one ltask).
#[derive(Debug, Default)]
pub struct SourceStats {
    pub(crate) polls: AtomicU64,
    /// Polls by waiters outside the run state (reentrant sources, `Pioman::wait_polling`),
    /// added in batches: `polls` has a single writer at a time and no read-modify-write.
    pub(crate) direct_polls: AtomicU64,
    pub(crate) useful_polls: AtomicU64,
    pub(crate) blocking_waits: AtomicU64,
    pub(crate) wakeups: AtomicU64,
    pub(crate) by_context: [AtomicU64; 6],
    pub(crate) detect: Histogram,
    pub(crate) poll_gap: Histogram,
    /// Monotonic ns ([`crate::clock::now_ns`]) of the last poll, for `poll_gap`.
    pub(crate) last_poll_ns: AtomicU64,
}

pub(crate) fn context_index(c: Context) -> usize {
    match c {
        Context::Idle => 0,
        Context::Switch => 1,
        Context::Tick => 2,
        Context::Waiter => 3,
        Context::Blocking => 4,
        Context::Explicit => 5,
    }
}

const CONTEXT_NAMES: [&str; 6] = ["idle", "switch", "tick", "waiter", "blocking", "explicit"];

/// A copy of one source's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceSnapshot {
    pub name: String,
    pub polls: u64,
    /// Polls that found something.
    pub useful_polls: u64,
    /// Blocking waits entered for this source.
    pub blocking_waits: u64,
    /// Blocking waits that ended with an event (not a timeout).
    pub wakeups: u64,
    /// Useful polls by context: idle, switch, tick, waiter, blocking, explicit.
    pub useful_by_context: [u64; 6],
    pub detect: HistogramSnapshot,
    pub poll_gap: HistogramSnapshot,
}

impl HistogramSnapshot {
    /// Adds another histogram's counts.
    pub fn merge(&mut self, o: &HistogramSnapshot) {
        if self.counts.len() < o.counts.len() {
            self.counts.resize(o.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.sum_ns += o.sum_ns;
    }
}

impl SourceSnapshot {
    /// Adds another snapshot's counters (used to fold finished tasks of the same name).
    pub fn merge(&mut self, o: &SourceSnapshot) {
        self.polls += o.polls;
        self.useful_polls += o.useful_polls;
        self.blocking_waits += o.blocking_waits;
        self.wakeups += o.wakeups;
        for (a, b) in self.useful_by_context.iter_mut().zip(o.useful_by_context) {
            *a += b;
        }
        self.detect.merge(&o.detect);
        self.poll_gap.merge(&o.poll_gap);
    }
}

impl SourceStats {
    pub(crate) fn snapshot(&self, name: &str) -> SourceSnapshot {
        SourceSnapshot {
            name: name.to_string(),
            polls: self.polls.load(Relaxed) + self.direct_polls.load(Relaxed),
            useful_polls: self.useful_polls.load(Relaxed),
            blocking_waits: self.blocking_waits.load(Relaxed),
            wakeups: self.wakeups.load(Relaxed),
            useful_by_context: std::array::from_fn(|i| self.by_context[i].load(Relaxed)),
            detect: self.detect.snapshot(),
            poll_gap: self.poll_gap.snapshot(),
        }
    }
}

/// Everything, for `Pioman::stats` and the JSON dump.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Which instance (0 for the first of the process).
    pub instance: u64,
    pub policy: String,
    /// Time contexts spent asleep in the sources' blocking waits (summed over contexts), in ns.
    pub blocked_ns: u64,
    pub sources: Vec<SourceSnapshot>,
}

impl Snapshot {
    pub fn to_json(&self) -> serde_json::Value {
        let sources: Vec<_> = self
            .sources
            .iter()
            .map(|s| {
                let by_ctx: serde_json::Map<String, serde_json::Value> = CONTEXT_NAMES
                    .iter()
                    .zip(s.useful_by_context)
                    .map(|(n, v)| (n.to_string(), serde_json::Value::from(v)))
                    .collect();
                serde_json::json!({
                    "name": s.name,
                    "polls": s.polls,
                    "useful_polls": s.useful_polls,
                    "blocking_waits": s.blocking_waits,
                    "wakeups": s.wakeups,
                    "useful_polls_by_context": by_ctx,
                    "detect_latency": s.detect.to_json(),
                    "poll_gap": s.poll_gap.to_json(),
                })
            })
            .collect();
        serde_json::json!({
            "pid": std::process::id(),
            "instance": self.instance,
            "policy": self.policy,
            "blocked_ns": self.blocked_ns,
            "sources": sources,
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_within_a_sixteenth() {
        for ns in (0..5000u64).chain([1 << 20, 123_456_789, 1 << 39]) {
            let (lo, hi) = bucket_range(bucket_of(ns));
            assert!(lo <= ns && ns < hi, "{ns} in [{lo}, {hi})");
            assert!((hi - lo) as f64 <= (lo.max(8) as f64) / 8.0 + 1.0, "bucket too wide at {ns}");
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn histogram_quantiles() {
        let h = Histogram::default();
        for ns in [0u64, 1, 3, 1000, 1500, 1_000_000] {
            h.record(Duration::from_nanos(ns));
        }
        let s = h.snapshot();
        assert_eq!(s.count(), 6);
        assert_eq!(s.quantile_ns(0.0001), Some(0));
        let p100 = s.quantile_ns(1.0).unwrap() as f64;
        assert!((p100 - 1e6).abs() / 1e6 < 0.07, "{p100}");
        let p50 = s.quantile_ns(0.5).unwrap();
        assert!((3..=4).contains(&p50), "{p50}");
        assert!(s.mean_ns().unwrap() > 160_000.0);
        let j = Snapshot { instance: 0, policy: "poll".into(), blocked_ns: 0, sources: vec![] }.to_json();
        assert_eq!(j["policy"], "poll");
    }
}
