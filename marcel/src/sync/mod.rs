//! Blocking primitives for user threads: they block only the calling user thread (its LWP runs
//! other threads meanwhile); called from a plain OS thread, they block that OS thread. User and OS
//! threads can share them. No poisoning: a panic while holding a lock releases it.
//!
//! All are built on one `wait_queue::WaitQueue` per object; their wake protocols are loom-checked
//! (`cargo test` with `--cfg loom`, see the README).

mod barrier;
mod condvar;
mod mutex;
mod semaphore;
pub(crate) mod wait_queue;
pub(crate) mod waiter;

pub use barrier::{Barrier, BarrierWaitResult};
pub use condvar::{Condvar, WaitTimeoutResult};
pub use mutex::{Mutex, MutexGuard};
pub use semaphore::Semaphore;
