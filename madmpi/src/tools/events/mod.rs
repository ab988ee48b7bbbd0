//! Events (MPI 4.0 §15.3.8): what the runtime reports as it happens, delivered to the tools'
//! callbacks.
//!
//! - [`types`]: the event types and sources, and how pioman's and nmad's events become
//!   instances;
//! - [`registrations`]: event handles, their callbacks per safety level and dropped handlers;
//! - [`delivery`]: from the firing thread to the callbacks without blocking the hot path.
//!
//! The path of an instance: pioman or nmad fires its hook (one relaxed load when nobody
//! listens); the observer installed here stamps the instance and `try_send`s it into a bounded
//! queue (no lock, no wait; when the queue is full the instance is counted as dropped); a
//! pioman task polls the queue (from idle cores, progression threads or waiting threads) and
//! calls the callbacks there, outside any lock of the runtime. That context is another thread
//! than the program's, hence `MPI_T_CB_REQUIRE_THREAD_SAFE`: a registration's callback for that
//! level (or the stricter async-signal-safe one) is called; one with only weaker callbacks
//! cannot be served and its instances are reported to its dropped handler.
//!
//! Owns event types, registrations and delivery; the runtime only fires its hooks.

pub mod delivery;
pub mod registrations;
pub mod types;

pub use types::{Element, EventSource, EventType, Instance};
