//! The request kinds that are neither one nmad operation nor a collective schedule: generalized
//! requests ([`crate::grequest`]) and the operations of partitioned requests
//! ([`crate::partitioned`]). A [`RawRequest`] holding one of them ([`Extra`]) forwards its
//! completion methods here.
//!
//! Owns the dispatch only; each kind's semantics are its module's.

use crate::grequest::Generalized;
use crate::partitioned::Operation;
use crate::request::{Outcome, RawRequest};
use std::sync::Arc;

/// A generalized request, or one started operation of a partitioned request.
pub enum Extra {
    Generalized(Generalized),
    Partitioned(Operation),
}

impl Extra {
    pub(crate) fn is_complete(&self) -> bool {
        match self {
            Extra::Generalized(g) => g.is_complete(),
            Extra::Partitioned(p) => p.is_complete(),
        }
    }

    pub(crate) fn cond(&self) -> &pioman::Cond {
        match self {
            Extra::Generalized(g) => g.cond(),
            Extra::Partitioned(p) => p.cond(),
        }
    }

    /// What a test does besides a progress pass: a generalized request's `poll`, a partitioned
    /// receive's posting of its receives once the sender's layout is known.
    pub(crate) fn poke(&self) {
        match self {
            Extra::Generalized(g) => g.poke(),
            Extra::Partitioned(p) => p.poke(),
        }
    }

    pub(crate) fn wait(&self, pio: &pioman::Pioman) {
        match self {
            Extra::Generalized(g) => g.wait(pio),
            Extra::Partitioned(p) => p.wait(),
        }
    }

    /// The outcome once complete. A generalized request's is the empty one: its status and
    /// error come from its `query` callback, which only [`Generalized::report`] calls (so that
    /// `query` runs once per reported completion).
    pub(crate) fn outcome(&self) -> Option<Outcome> {
        match self {
            Extra::Generalized(g) => g.is_complete().then_some(Outcome::DONE),
            Extra::Partitioned(p) => p.outcome(),
        }
    }
}

/// While a wait on several requests runs ([`crate::completion::wait_any_complete`]): a condition
/// that the generalized requests among them signal too when they complete, so that the wait
/// sleeps on it instead of napping on one request after another. Unwatched on drop.
pub(crate) struct Watch<'a> {
    cond: Arc<pioman::Cond>,
    watched: Vec<&'a Generalized>,
    /// Every request is a generalized one that needs no polling: sleeping until the condition
    /// is signalled misses nothing.
    covers_all: bool,
}

impl<'a> Watch<'a> {
    /// `None` if no request is a generalized one.
    pub(crate) fn new(reqs: &[&'a RawRequest]) -> Option<Watch<'a>> {
        let watched: Vec<&Generalized> = reqs.iter().filter_map(|r| r.generalized()).collect();
        if watched.is_empty() {
            return None;
        }
        let covers_all = watched.len() == reqs.len() && watched.iter().all(|g| !g.polls());
        let cond = Arc::new(pioman::Cond::new());
        watched.iter().for_each(|g| g.watch(&cond));
        Some(Watch { cond, watched, covers_all })
    }

    /// Sleeps until a watched request completes; for at most `nap` if other requests must be
    /// looked at too.
    pub(crate) fn nap(&self, pio: &pioman::Pioman, nap: std::time::Duration) {
        if self.covers_all {
            pio.wait(&self.cond, nmad::COMPLETED);
        } else {
            pio.wait_timeout(&self.cond, nmad::COMPLETED, nap);
        }
    }
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        self.watched.iter().for_each(|g| g.unwatch(&self.cond));
    }
}

impl RawRequest {
    /// A generalized request (`MPI_Grequest_start`); `comm` is the communicator whose
    /// progression engine its waits use.
    pub fn generalized_on(comm: &crate::comm::Comm, g: Generalized) -> RawRequest {
        RawRequest::with_extra(comm, Extra::Generalized(g))
    }

    /// The request of a started partitioned operation on `comm`.
    pub(crate) fn partitioned_on(comm: &crate::comm::Comm, op: Operation) -> RawRequest {
        RawRequest::with_extra(comm, Extra::Partitioned(op))
    }

    /// The generalized request, if this is one.
    pub fn generalized(&self) -> Option<&Generalized> {
        match self.extra()? {
            Extra::Generalized(g) => Some(g),
            Extra::Partitioned(_) => None,
        }
    }

    /// The started partitioned operation, if this is one.
    pub fn partitioned(&self) -> Option<&Operation> {
        match self.extra()? {
            Extra::Partitioned(p) => Some(p),
            Extra::Generalized(_) => None,
        }
    }

    /// What a test does besides a progress pass (see `Extra::poke`); nothing for other
    /// requests. The multiple tests and waits call it for each request.
    pub fn poke(&self) {
        if let Some(x) = self.extra() {
            x.poke();
        }
    }
}
