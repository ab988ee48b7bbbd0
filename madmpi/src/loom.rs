//! `std` or `loom` synchronization types, so that madmpi's lock-free protocols (the completion
//! accounting of collective schedules, `coll::rounds`) are model-checked as they are
//! (`RUSTFLAGS="--cfg loom" cargo test -p madmpi --lib loom`).

#[cfg(loom)]
pub(crate) use loom::sync::atomic;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic;
