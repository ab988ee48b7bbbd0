//! The request kinds that are not one nmad operation: operations that complete on their own,
//! run by the module that knows them ([`Pending`]: a collective schedule, a started partitioned
//! operation, a generalized request). A [`RawRequest`] holding one forwards its completion
//! methods to it, so the request layer stays below the features that make such requests.
//!
//! Generalized requests (`crate::grequest`, below the requests) are the kind this module
//! implements itself, with the condition a wait on several requests sleeps on while some of
//! them are generalized ([`Watch`]).
//!
//! Owns the dispatch only; each kind's semantics are its module's.

use super::{Outcome, RawRequest};
use crate::comm::Comm;
use crate::grequest::Generalized;
use std::any::Any;
use std::sync::Arc;

/// An operation that completes on its own, which a request stands for.
pub trait Pending: Any + Send + Sync {
    fn is_complete(&self) -> bool;

    /// The condition signalled with `nmad::COMPLETED` at completion.
    fn cond(&self) -> &pioman::Cond;

    /// What a test does besides a progress pass: a generalized request's `poll`, a partitioned
    /// receive's posting of its receives once the sender's layout is known; nothing by default.
    fn poke(&self) {}

    /// Waits until complete, through `pio` (the request's progression engine) if it needs one.
    fn wait(&self, pio: &pioman::Pioman);

    /// The outcome once complete.
    fn outcome(&self) -> Option<Outcome>;

    /// Itself, for the modules that look at their own kind (`RawRequest::pending`).
    fn as_any(&self) -> &dyn Any;
}

impl Pending for Generalized {
    fn is_complete(&self) -> bool {
        Generalized::is_complete(self)
    }

    fn cond(&self) -> &pioman::Cond {
        Generalized::cond(self)
    }

    fn poke(&self) {
        Generalized::poke(self)
    }

    fn wait(&self, pio: &pioman::Pioman) {
        Generalized::wait(self, pio)
    }

    /// The empty outcome: a generalized request's status and error come from its `query`
    /// callback, which only [`Generalized::report`] calls (so that `query` runs once per
    /// reported completion).
    fn outcome(&self) -> Option<Outcome> {
        Generalized::is_complete(self).then_some(Outcome::DONE)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// While a wait on several requests runs ([`super::completion::wait_any_complete`]): a
/// condition that the generalized requests among them signal too when they complete, so that
/// the wait sleeps on it instead of napping on one request after another. Unwatched on drop.
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
    pub fn generalized_on(comm: &Comm, g: Generalized) -> RawRequest {
        RawRequest::with_pending(comm, Box::new(g))
    }

    /// The generalized request, if this is one.
    pub fn generalized(&self) -> Option<&Generalized> {
        self.pending()?.as_any().downcast_ref()
    }

    /// What a test does besides a progress pass (see [`Pending::poke`]); nothing for other
    /// requests. The multiple tests and waits call it for each request.
    pub fn poke(&self) {
        if let Some(p) = self.pending() {
            p.poke();
        }
    }
}
