//! Counters of the protocol's work, shared by every link of a driver (relaxed atomics: they are
//! read for reports, nothing synchronizes on them).

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

#[derive(Debug, Default)]
pub struct Stats {
    /// Units sent again (after a NACK or a timeout).
    pub retransmits: AtomicU64,
    /// Retransmission timeouts that expired.
    pub timeouts: AtomicU64,
    /// ACKs sent that showed a hole, and received.
    pub nacks_sent: AtomicU64,
    pub nacks_received: AtomicU64,
    /// ACKs sent alone (not carried by data).
    pub acks_sent: AtomicU64,
    /// Units that arrived twice, or beyond the receiver's window, and were dropped.
    pub duplicates: AtomicU64,
    pub beyond_window: AtomicU64,
    /// The last round trip measured and congestion window set (by whichever link last did).
    pub rtt_us: AtomicU64,
    pub cwnd: AtomicU64,
}

/// A copy of [`Stats`] at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    pub retransmits: u64,
    pub timeouts: u64,
    pub nacks_sent: u64,
    pub nacks_received: u64,
    pub acks_sent: u64,
    pub duplicates: u64,
    pub beyond_window: u64,
    pub rtt_us: u64,
    pub cwnd: u64,
}

impl Stats {
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Relaxed);
    }

    pub fn snapshot(&self) -> StatsSnapshot {
        let g = |c: &AtomicU64| c.load(Relaxed);
        StatsSnapshot {
            retransmits: g(&self.retransmits),
            timeouts: g(&self.timeouts),
            nacks_sent: g(&self.nacks_sent),
            nacks_received: g(&self.nacks_received),
            acks_sent: g(&self.acks_sent),
            duplicates: g(&self.duplicates),
            beyond_window: g(&self.beyond_window),
            rtt_us: g(&self.rtt_us),
            cwnd: g(&self.cwnd),
        }
    }
}
