//! MPI windows (one-sided communication, MPI 4.0 chapter 12), the objects: every flavour's
//! constructor ([`Win::create`], [`Win::allocate`], [`Win::allocate_shared`],
//! [`Win::create_dynamic`]), what each member exposed, shared segments and their queries,
//! attached memory, names and hints, and [`Window<T>`] for typed Rust use.
//!
//! Files: `create` (the collective constructors and where the memory lives), `window` (the
//! object and its queries), `segment` (the memfd mapping of shared windows), `fdpass` (its fd
//! passed over a Unix socket), `dynamic` (attached regions), `hints` (info keys), `typed`.
//!
//! Owns windows; the one-sided operations and synchronizations come later over nmad's
//! active messages and must find here what they need (every member's [`Exposure`], attached
//! regions, hints). It must not reach into nmad's drivers.

pub(crate) mod create;
mod dynamic;
mod fdpass;
mod hints;
mod segment;
#[cfg(test)]
mod tests;
mod typed;
mod window;

pub use hints::{AccumulateOps, AccumulateOrdering, WinHints};
pub use typed::Window;
pub use window::{Exposure, Flavor, Win};
