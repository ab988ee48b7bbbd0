//! nmad's events, for tools that watch the protocol as it runs (madmpi's MPI_T events): fired
//! through a [`pioman::observe::Hook`], which costs one relaxed load while nobody observes.
//!
//! Owns the event type and the hook; the protocol code fires them where the event happens.

use pioman::observe::Hook;

/// What the core reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A message arrived before its receive was posted and was stored (`len` bytes of payload).
    Unexpected { session: u32, source: u32, tag: u64, len: u64 },
    /// A send of `len` bytes to `peer` went as a rendezvous request (too large for the eager
    /// limit, or not enough credit).
    RendezvousStarted { peer: u32, len: u64 },
    /// Sends to `peer` wait: no eager credit nor rendezvous slot is left (counted once per
    /// stall, not per retry).
    CreditStall { peer: u32 },
    /// The rail of driver `driver` (an index into the instance's drivers) to `peer` failed;
    /// traffic goes on over the others (rail failover).
    RailDown { peer: u32, driver: u32 },
    /// That rail came back (a probe connected, or the peer did) and carries traffic again.
    RailUp { peer: u32, driver: u32 },
}

/// Events of every nmad instance of the process.
pub static EVENTS: Hook<Event> = Hook::new();
