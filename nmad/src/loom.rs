//! `std` or `loom` synchronization types, so that nmad's lock-free protocols (the shared-memory
//! ring and its sleep/wake flag) are model-checked as they are
//! (`RUSTFLAGS="--cfg loom" cargo test -p nmad --lib loom`).

#[cfg(loom)]
#[allow(unused_imports)]
pub(crate) use loom::sync::Mutex;
#[cfg(loom)]
#[allow(unused_imports)]
pub(crate) use loom::sync::atomic;
#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use std::sync::Mutex;
#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use std::sync::atomic;
