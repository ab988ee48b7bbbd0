//! Receive-side enforcement of the unexpected-message budget: what one peer may make this
//! process hold.
//!
//! Every peer is granted `grant` bytes of eager credit (an eager message costs `len + 64`) and
//! `slots` rendezvous slots (a rendezvous request costs one); the credit comes back as its
//! messages are consumed (`Gate::owe`). An honest sender never has more outstanding, so the
//! receiver counts the same: each DATA or RDV chunk is charged on arrival and released where its
//! credit is owed back. Beyond what was granted, the peer is breaking the protocol:
//! - bytes or rendezvous requests beyond its credit;
//! - a sequence number outside the window `[expected, expected + grant / 64 + slots)` of its
//!   session (every message in between would still hold credit), or sent twice;
//! - messages for more than [`UNKNOWN_SESSIONS`] sessions this process has not created yet
//!   (their data is within the credit like any other; the bound caps the bookkeeping).
//!
//! The gate then fails as if the peer had died, the error is logged naming the peer, and what
//! the peer made this process hold is dropped (`Core::purge`). What it sent on a rail afterwards
//! is dropped unread.
//!
//! The bound, per peer, as counted in `Stats::unexpected_bytes`: `grant` bytes of eager messages
//! (payload + 64 each) plus `slots` rendezvous requests of at most [`RDV_FOOTPRINT`] bytes each
//! ([`per_peer`]), whether the messages wait unmatched, for an earlier sequence number, or for
//! their session. The memory behind it is larger by what the 64 bytes do not cover: a held
//! message's bookkeeping (about 100–200 bytes) and the rounding of payload buffers of 4 KiB and
//! more to a power of two (`buffers`): at most twice the count for large messages, about four
//! times for a flood of empty ones.
//!
//! Owns the per-peer counters and the bounds; the checks sit where arrivals are handled (core,
//! session), and this module touches neither matching nor delivery.

use super::gate::EAGER_OVERHEAD;
use super::wire::{MAX_RAIL_NAME, MAX_RDV_HEADER};
use crate::drivers::MAX_KEY;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};

/// Sessions not created here yet that one peer may have messages waiting for. A rank reaches
/// a new communicator's session after all its members agreed on it, so an honest peer is a few
/// sessions ahead at most.
pub(crate) const UNKNOWN_SESSIONS: u32 = 64;

/// What a waiting rendezvous request may hold: bookkeeping, the user header, the rail and key
/// of the sender's exposed memory.
pub(crate) const RDV_FOOTPRINT: u64 = 64 + (MAX_RDV_HEADER + MAX_RAIL_NAME + MAX_KEY) as u64;

/// The most a peer granted `grant` bytes and `slots` slots can make this process hold.
pub(crate) fn per_peer(grant: u64, slots: u64) -> u64 {
    grant.saturating_add(slots.saturating_mul(RDV_FOOTPRINT))
}

/// What one peer holds of the credit granted to it.
pub(crate) struct Allowance {
    grant: u64,
    slots: u64,
    /// How far ahead of the expected one a sequence number may be.
    window: u32,
    /// Charged on arrival, released when owed back.
    bytes_held: AtomicU64,
    slots_held: AtomicU64,
    /// Sessions not created here that hold messages of the peer (changed under the core's
    /// lock of those messages).
    unknown_sessions: AtomicU32,
}

impl Allowance {
    pub(crate) fn new(grant: u64, slots: u64) -> Allowance {
        Allowance {
            grant,
            slots,
            window: (grant / EAGER_OVERHEAD).saturating_add(slots).min(1 << 31) as u32,
            bytes_held: AtomicU64::new(0),
            slots_held: AtomicU64::new(0),
            unknown_sessions: AtomicU32::new(0),
        }
    }

    /// An eager message of `len` bytes arrived.
    #[inline]
    pub(crate) fn charge_eager(&self, len: usize) -> Result<(), String> {
        let cost = len as u64 + EAGER_OVERHEAD;
        // AcqRel: ordered with the releases whose credit the peer may be using now.
        let held = self.bytes_held.fetch_add(cost, AcqRel).saturating_add(cost);
        if held > self.grant {
            return Err(self.beyond_bytes(len, held));
        }
        Ok(())
    }

    #[cold]
    fn beyond_bytes(&self, len: usize, held: u64) -> String {
        format!(
            "a {len}-byte eager message brings what it holds here to {held} bytes, beyond its \
             credit of {}",
            self.grant
        )
    }

    /// A rendezvous request arrived.
    #[inline]
    pub(crate) fn charge_rdv(&self) -> Result<(), String> {
        let held = self.slots_held.fetch_add(1, AcqRel) + 1;
        if held > self.slots {
            return Err(format!("{held} rendezvous requests outstanding, beyond its {} slots", self.slots));
        }
        Ok(())
    }

    /// Credit owed back to the peer: its messages no longer count.
    #[inline]
    pub(crate) fn release(&self, bytes: u64, slots: u64) {
        if bytes != 0 {
            self.bytes_held.fetch_sub(bytes, AcqRel);
        }
        if slots != 0 {
            self.slots_held.fetch_sub(slots, AcqRel);
        }
    }

    /// Checks `seq` against the window starting at `expected`; `Ok(ahead)`.
    #[inline]
    pub(crate) fn check_seq(&self, seq: u32, expected: u32) -> Result<u32, String> {
        let ahead = seq.wrapping_sub(expected);
        if ahead >= self.window {
            return Err(format!(
                "sequence number {seq} is outside the window of {} from {expected}",
                self.window
            ));
        }
        Ok(ahead)
    }

    /// The peer sends for one more session not created here.
    pub(crate) fn enter_unknown_session(&self, session: u32) -> Result<(), String> {
        let n = self.unknown_sessions.fetch_add(1, Relaxed) + 1;
        if n > UNKNOWN_SESSIONS {
            return Err(format!(
                "messages for session {session}: {n} sessions not created here, beyond the \
                 {UNKNOWN_SESSIONS} allowed"
            ));
        }
        Ok(())
    }

    /// A session the peer sent for was created (or its messages dropped).
    pub(crate) fn leave_unknown_session(&self) {
        let _ = self.unknown_sessions.fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1));
    }

    /// Bytes and slots held now.
    #[cfg(test)]
    pub(crate) fn held(&self) -> (u64, u64) {
        (self.bytes_held.load(Relaxed), self.slots_held.load(Relaxed))
    }
}

#[cfg(all(test, not(loom)))]
#[path = "budget_tests.rs"]
mod tests;
