//! `std` or `loom` synchronization types, so that madmpi's lock-free and wake-up protocols (the
//! completion accounting of collective schedules, `coll::rounds`; a file's worker queue,
//! `io::queue`) are model-checked as they are (`RUSTFLAGS="--cfg loom" cargo test -p madmpi
//! --lib loom`).

#[cfg(loom)]
pub(crate) use loom::sync::atomic;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic;

#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::thread;
#[cfg(not(loom))]
pub(crate) use std::thread;
