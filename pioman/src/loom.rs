//! `std` or `loom` synchronization types, so that the ltask state machine and the condition are
//! model-checked as they are (`RUSTFLAGS="--cfg loom" cargo test -p pioman --lib loom`).

#[cfg(loom)]
pub(crate) use loom::sync::Mutex;
#[cfg(loom)]
pub(crate) use loom::sync::atomic;
#[cfg(not(loom))]
pub(crate) use std::sync::Mutex;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic;
