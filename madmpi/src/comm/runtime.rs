//! What every communicator of a process shares: nmad, the context ids in use, this process's
//! node, the counts of creations collective over a group alone, and the process-wide state of
//! the features above ([`Extensions`], typed by each feature), with the features' hooks on the
//! communicators' lives ([`Lifecycle`]) and the rule receives from any source follow
//! ([`AnySourceRule`]).
//!
//! Owns the runtime's fields; it must not name a feature above the communicator: they attach
//! their state and hooks here when the runtime is assembled (`env::process`).

use super::Comm;
use super::context::ContextIds;
use super::ext::Extensions;
use super::group_context::Occurrences;
use crate::error::{Error, Result};
use nmad::Nmad;
use std::sync::Arc;

/// What a feature does as communicators come and go (fault tolerance: a monitor on every
/// communicator's session, and the state it kept per context id to forget).
pub(crate) trait Lifecycle: Send + Sync {
    /// `comm` was just made, over a new session.
    fn made(&self, comm: &Comm);
    /// The communicator with context `id` (not a predefined one) is being freed, before its
    /// session closes and its id is released.
    fn freed(&self, rt: &Runtime, id: u32);
}

/// What every communicator of a process shares.
pub(crate) struct Runtime {
    pub(crate) nm: Nmad,
    pub(crate) ids: ContextIds,
    /// Identifies this process's node (`MPI_COMM_TYPE_SHARED`): a hash of nmad's node id.
    pub(crate) node: u64,
    /// Creations collective over a group alone, counted per key.
    pub(crate) group_ops: Occurrences,
    /// The features' process-wide state.
    ext: Extensions,
    /// The features' hooks, called in this order.
    lifecycle: Vec<Box<dyn Lifecycle>>,
    any_source: Option<Box<dyn AnySourceRule>>,
}

/// What may stop a wait for a receive from `MPI_ANY_SOURCE` before it matches (fault
/// tolerance: a member known failed and not acknowledged, ULFM's `MPIX_ERR_PROC_FAILED_PENDING`).
pub(crate) trait AnySourceRule: Send + Sync {
    /// Waits until `req`, a receive from any source on `comm`, completes, or returns the
    /// error that stops the wait (the request still pending).
    fn wait(&self, comm: &Comm, req: &nmad::Request) -> Result<()>;
    /// The error that stops a wait on an incomplete receive from any source on `comm` now.
    fn stopped(&self, comm: &Comm) -> Option<Error>;
}

impl Runtime {
    pub(crate) fn new(
        nm: Nmad,
        lifecycle: Vec<Box<dyn Lifecycle>>,
        any_source: Option<Box<dyn AnySourceRule>>,
    ) -> Arc<Runtime> {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        nmad::drivers::node_id().hash(&mut h);
        Arc::new(Runtime {
            nm,
            ids: ContextIds::default(),
            node: h.finish(),
            group_ops: Default::default(),
            ext: Extensions::default(),
            lifecycle,
            any_source,
        })
    }

    /// Waits for `req`, a receive from any source on `comm`, under the features' rule (without
    /// one, returns at once: the caller waits).
    pub(crate) fn wait_any_source(&self, comm: &Comm, req: &nmad::Request) -> Result<()> {
        self.any_source.as_ref().map_or(Ok(()), |r| r.wait(comm, req))
    }

    /// The features' error for an incomplete receive from any source on `comm`, if any.
    pub(crate) fn any_source_stopped(&self, comm: &Comm) -> Option<Error> {
        self.any_source.as_ref().and_then(|r| r.stopped(comm))
    }

    /// The features' process-wide state.
    pub(crate) fn extensions(&self) -> &Extensions {
        &self.ext
    }

    pub(super) fn lifecycle(&self) -> impl Iterator<Item = &dyn Lifecycle> {
        self.lifecycle.iter().map(|l| &**l)
    }
}
