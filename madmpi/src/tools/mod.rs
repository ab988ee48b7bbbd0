//! MPI_T, the tools information interface (MPI 4.0 ch. 15): how a tool, or a user studying
//! progression policies, reads and tunes the running stack without recompiling.
//!
//! - [`cvars`]: control variables — every `MARCEL_`, `PIOMAN_`, `NMAD_` and `MADMPI_` setting
//!   and `PM2_LOG` with its value in force; `PIOMAN_POLICY` and the collective choices are writable at run time;
//! - [`pvars`]: performance variables — pioman's polls, waits and detection latencies, nmad's
//!   flow control and traffic per driver — with sessions and handles;
//! - [`events`]: blocking waits, unexpected messages, rendezvous and credit stalls as they
//!   happen, delivered to callbacks;
//! - [`categories`], [`enums`], [`kinds`] (the vocabulary and MPICH's values), [`error`] (the
//!   `MPI_T_ERR_*` codes), [`registry`](mod@registry) (everything, indexed).
//!
//! The interface works before `MPI_Init` and after `MPI_Finalize` ([`init`] and [`finalize`] are
//! reference counted and independent of MPI's): the stack is then read from the environment, and
//! its counters read 0 (`runtime` is attached by [`crate::env::universe`] while MPI runs).
//!
//! Owns the variables' descriptions and semantics; the C handles and string rules are libmpi's.
//! It reads pioman and nmad through their public snapshots and hooks only.

pub mod categories;
pub mod cvars;
pub mod enums;
pub mod error;
pub mod events;
pub mod kinds;
pub mod pvars;
pub mod registry;
pub(crate) mod runtime;

pub use error::{TError, TResult};
pub use registry::registry;

use std::sync::atomic::{AtomicU32, Ordering::SeqCst};

/// Open `MPI_T_init_thread` calls not yet matched by `MPI_T_finalize`.
static OPEN: AtomicU32 = AtomicU32::new(0);

/// `MPI_T_init_thread`: every thread level is provided (the interface is thread-safe). Returns
/// the level provided: the one required.
pub fn init(required: crate::info::Threading) -> crate::info::Threading {
    OPEN.fetch_add(1, SeqCst);
    // Building the registry now keeps the first query from paying for it.
    let _ = registry();
    required
}

/// `MPI_T_finalize`: `NotInitialized` without a matching `init`.
pub fn finalize() -> TResult<()> {
    OPEN.fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1)).map(drop).map_err(|_| TError::NotInitialized)
}

/// `Ok` while the interface is initialized (every other MPI_T call needs it).
pub fn check_initialized() -> TResult<()> {
    if OPEN.load(SeqCst) > 0 { Ok(()) } else { Err(TError::NotInitialized) }
}

/// MPI runs on `nm` from now on (at initialization): the variables read it, the event delivery
/// starts if a callback is registered.
pub(crate) fn attach(nm: &nmad::Nmad) {
    runtime::attach(nm);
    events::delivery::runtime_changed();
}

/// No runtime any more (before `MPI_Finalize` shuts nmad down).
pub(crate) fn detach() {
    runtime::detach();
    events::delivery::runtime_changed();
}

#[cfg(test)]
mod tests;
