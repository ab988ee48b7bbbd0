//! Memory the processes of one node share: sealed memfd segments (`segment`) and their passing
//! from the process that made one to the others over an abstract Unix socket (`fdpass`). Shared
//! windows (`rma`) and the node-local collectives (`coll::shared`) lay out their own data in
//! them.
//!
//! Owns segments and the passing of their fds; it must not know what lives in them.

pub(crate) mod fdpass;
pub(crate) mod segment;
