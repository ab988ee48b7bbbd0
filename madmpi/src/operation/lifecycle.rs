//! A request as an MPI program holds it: [`MpiRequest`] is either one operation (running, or
//! completed and not yet reported) or a persistent request, which is **inactive** until
//! `MPI_Start` starts its template ([`Persistent`]) and again once a completion call reported
//! the operation started (MPI 4.0 §3.9: its handle stays valid until `MPI_Request_free`).
//!
//! Owns the active/inactive life of persistent requests; it must not know handles (the C
//! library keeps these in its table) nor fill statuses.

use super::Persistent;
use crate::error::{Error, Result};
use crate::request::RawRequest;
use crate::request::recycle::{self, Spares};
use std::sync::{Arc, Mutex, PoisonError};

thread_local! {
    /// Allocations of operations given back ([`give_back`]), for the next ones.
    static OPS: Spares<RawRequest> = const { Spares::new() };
}

/// `raw` in an `Arc`, in an allocation given back earlier if this thread has one (what
/// [`give_back`] takes back).
pub fn shared(raw: RawRequest) -> Arc<RawRequest> {
    recycle::make_in(&OPS, raw)
}

/// Drops an operation a completion call reported; if this was its last holder, its allocation
/// serves this thread's next operation.
pub fn give_back(op: Arc<RawRequest>) {
    recycle::give_back_in(&OPS, op);
}

/// See the module docs.
pub struct MpiRequest {
    /// The operation, running or completed but not yet reported; `None` while a persistent
    /// request is inactive.
    current: Mutex<Option<Arc<RawRequest>>>,
    /// What a start starts: `Some` for persistent requests only.
    persistent: Option<Persistent>,
}

impl MpiRequest {
    /// The request of an operation started once (a nonblocking call).
    pub fn once(raw: RawRequest) -> MpiRequest {
        MpiRequest { current: Mutex::new(Some(shared(raw))), persistent: None }
    }

    /// The request of an operation started once, already shared (see [`shared`]).
    pub fn once_shared(op: Arc<RawRequest>) -> MpiRequest {
        MpiRequest { current: Mutex::new(Some(op)), persistent: None }
    }

    /// A new persistent request, inactive.
    pub fn persistent(p: Persistent) -> MpiRequest {
        MpiRequest { current: Mutex::new(None), persistent: Some(p) }
    }

    /// Takes the current operation out (an owner about to drop the request: see
    /// [`give_back`]).
    pub fn take_current(&mut self) -> Option<Arc<RawRequest>> {
        self.current.get_mut().unwrap_or_else(PoisonError::into_inner).take()
    }

    /// What a start starts (`None`: not a persistent request).
    pub fn template(&self) -> Option<&Persistent> {
        self.persistent.as_ref()
    }

    /// Whether it is persistent.
    pub fn is_persistent(&self) -> bool {
        self.persistent.is_some()
    }

    /// The current operation (`None`: an inactive persistent request).
    pub fn current(&self) -> Option<Arc<RawRequest>> {
        self.current.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Whether nothing runs: the operation completed, or the request is inactive.
    pub fn is_complete(&self) -> bool {
        self.current().is_none_or(|op| op.is_complete())
    }

    /// `MPI_ERR_REQUEST` unless this is an inactive persistent request (what `MPI_Start`
    /// checks of every request before starting any).
    pub fn check_startable(&self) -> Result<&Persistent> {
        let Some(p) = &self.persistent else {
            return Err(Error::request("not a persistent request (only those can be started)"));
        };
        if self.current().is_some() {
            return Err(Error::request("the persistent request is already active"));
        }
        Ok(p)
    }

    /// `MPI_Start`: starts the template of this inactive persistent request; it is active until
    /// [`MpiRequest::reported`].
    ///
    /// # Safety
    /// The memory given at init must be valid (readable for what is sent, writable for what is
    /// received) until the operation completes: MPI's contract for persistent requests.
    pub unsafe fn start(&self) -> Result<()> {
        // SAFETY: the memory stays valid until the operation completes (our contract), and the
        // request is inactive (checked), so its previous run completed and was reported.
        let raw = unsafe { self.check_startable()?.start() }?;
        let op = shared(raw);
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Some(op);
        Ok(())
    }

    /// A completion call reported the current operation: a persistent request becomes inactive
    /// (an operation started once is simply forgotten with the request).
    pub fn reported(&self) {
        if self.persistent.is_some() {
            let done = self.current.lock().unwrap_or_else(PoisonError::into_inner).take();
            drop(done); // outside the lock (a running operation's drop may wait)
        }
    }
}
