//! MPI windows (one-sided communication, MPI 4.0 chapter 12), the objects: every flavour's
//! constructor ([`Win::create`], [`Win::allocate`], [`Win::allocate_shared`],
//! [`Win::create_dynamic`]), what each member exposed, shared segments and their queries,
//! attached memory, names and hints, and [`Window<T>`] for typed Rust use.
//!
//! Files: `create` (the collective constructors and where the memory lives), `window` (the
//! object and its queries), `segment` (the memfd mapping of shared windows), `fdpass` (its fd
//! passed over a Unix socket), `dynamic` (attached regions), `hints` (info keys), `typed`.
//! The operations: `ops` (origin side: a call becomes records), `sync` (the epochs), `origin`
//! (batches, lazy locks, counts), `wire` (the records), `service` (nmad's active-message
//! handler, answer slots), `bulk` (large transfers as nmad messages beside their records),
//! `fast` (the fast path's hot calls: lock states in atomics), `target` (records applied to
//! memory: the shared state; `target_apply` the bounds and data movement, `target_large` the
//! target's side of large transfers), `shape` (a target datatype as its
//! origin described it), `lock` (the reader/writer queue), `notify`.
//!
//! Operations travel as nmad active messages (large puts, gets and accumulates as nmad messages
//! beside them) and are applied by whichever thread runs nmad's progression, so a passive
//! target needs no MPI call of its own. It must not reach into nmad's drivers.

mod bulk;
pub(crate) mod create;
mod direct;
mod dynamic;
mod epoch;
mod fast;
mod hints;
mod lock;
mod notify;
mod ops;
mod origin;
mod service;
mod shape;
mod shm;
mod sync;
mod target;
mod target_apply;
mod target_large;
#[cfg(test)]
mod tests;
mod ticket;
mod typed;
#[cfg(test)]
mod typed_tests;
mod window;
mod wire;

pub use epoch::Epoch;
pub use hints::{AccumulateOps, AccumulateOrdering, WinHints};
pub use lock::LockKind;
pub use ops::{At, Buf};
pub use sync::mode;
pub use typed::Window;
pub use window::{Exposure, Flavor, Win};
