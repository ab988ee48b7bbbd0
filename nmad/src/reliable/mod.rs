//! Reliable, ordered delivery over a channel that drops, duplicates, reorders and delays: the
//! PM/UDP protocol (`../shared/seeds/003`), done better.
//!
//! PM/UDP numbers each receiver's messages consecutively, keeps every message until it is
//! acknowledged, re-sends on a NACK or a timeout, drops old numbers (acknowledging again) and,
//! at a gap, NACKs and drops everything after it until the hole is filled (go-back-N); it limits
//! the messages in flight, shrinks that window on a NACK and grows it back with ACKs, and
//! compresses ACKs. Here:
//! - the receiver keeps out-of-order units within its window and says which it has
//!   (*selective* acknowledgement: [`Ack`] carries ranges), so a loss costs one unit's
//!   retransmission, not the rest of the window;
//! - the retransmission timeout follows measured round trips ([`Rtt`]: every data unit carries
//!   the sender's clock and the ACK echoes it, so retransmitted units give samples too);
//! - a gap is NACKed at once (an ACK whose ranges show the hole) and the sender re-sends a unit
//!   once three units sent after it have arrived, without waiting for the timer;
//! - ACKs are cumulative and delayed a little (every [`Config::ack_every`] units, or after
//!   [`Config::ack_delay_us`]), so a reply going the other way can carry them.
//!
//! Sans I/O: the caller moves the bytes and tells the time (microseconds of any monotonic
//! clock). [`Sender`] and [`Receiver`] are one direction each; a link holds one of each. The
//! udp driver runs them per link (`drivers/udp`). Across reliable rails (rail failover), a gate
//! pairs a [`Journal`] (units kept until acknowledged, re-sent on another rail when theirs fails)
//! with the same [`Receiver`] (duplicates dropped) and [`Ack`]s (`core/gate/failover.rs`). This module
//! owns no socket, thread or lock, and knows nothing of what a unit holds.

mod ack;
mod journal;
mod receiver;
mod rtt;
mod sender;
mod stats;

#[cfg(test)]
mod sim_tests;

pub use ack::{Ack, MAX_RANGES};
pub use journal::Journal;
pub use receiver::{Arrival, Receiver};
pub use rtt::Rtt;
pub use sender::{AckError, Sender, Transmit};
pub use stats::{Stats, StatsSnapshot};

/// Microseconds of the caller's monotonic clock.
pub type Micros = u64;

/// The protocol's tunables (both directions of a link use the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Units the receiver keeps beyond the next one it expects; the sender never sends further
    /// ahead than this.
    pub window: u32,
    /// The congestion window's start and floor, in units.
    pub initial_cwnd: u32,
    pub min_cwnd: u32,
    /// Acknowledge after this many in-order units at once.
    pub ack_every: u32,
    /// Or after this long (the first unacknowledged unit's arrival).
    pub ack_delay_us: u64,
    /// The retransmission timeout's floor and ceiling.
    pub min_rto_us: u64,
    pub max_rto_us: u64,
    /// The timeout before any round trip was measured.
    pub initial_rto_us: u64,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            window: 1024,
            initial_cwnd: 64,
            min_cwnd: 4,
            ack_every: 8,
            ack_delay_us: 200,
            min_rto_us: 500,
            max_rto_us: 1_000_000,
            initial_rto_us: 20_000,
        }
    }
}
