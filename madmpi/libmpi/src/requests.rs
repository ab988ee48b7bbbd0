//! Request handles: each nonblocking operation is a [`ReqEntry`] in the state's request table
//! until a completion call (`MPI_Wait`, `MPI_Test`...) or `MPI_Request_free` removes it. A
//! persistent request (`MPI_Send_init`...) stays in the table across its operations: it is
//! inactive until `MPI_Start`, and again once a completion call reported its operation.
//!
//! Entries are `Arc`s: a completion call clones one out of the table and waits with no lock
//! held (an entry's own lock is held only to read or replace its operation). `MPI_Request_free`
//! of an operation still running cannot drop it (dropping cancels an unmatched receive, or
//! blocks until a send is done), so it moves to the `detached` list, from which completed
//! entries are dropped at later frees and the rest at `MPI_Finalize`.
//!
//! Owns request handles, the active/inactive state of persistent requests and the life of freed
//! requests; it must not fill statuses (see `status`) nor start operations (see `persistent`).

use crate::comms::CommObj;
use crate::state::State;
use madmpi::abi::{self, Handle};
use madmpi::error::Error;
use madmpi::request::RawRequest;
use madmpi::request::operation::Persistent;
use std::sync::{Arc, Mutex, PoisonError};

/// A request and the communicator whose error handler its errors go to.
pub(crate) struct ReqEntry {
    pub(crate) comm: Arc<CommObj>,
    /// The operation, running or completed but not yet reported; `None` while a persistent
    /// request is inactive.
    op: Mutex<Option<Arc<RawRequest>>>,
    /// What `MPI_Start` starts: `Some` for persistent requests only.
    pub(crate) persistent: Option<Persistent>,
}

impl ReqEntry {
    /// The current operation (`None`: an inactive persistent request).
    pub(crate) fn op(&self) -> Option<Arc<RawRequest>> {
        self.op.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Makes `op` the current operation (`None`: the request becomes inactive).
    pub(crate) fn set_op(&self, op: Option<Arc<RawRequest>>) {
        let old = std::mem::replace(&mut *self.op.lock().unwrap_or_else(PoisonError::into_inner), op);
        drop(old); // outside the lock (a running operation's drop may wait)
    }

    /// Whether nothing runs: the operation completed, or the request is inactive.
    pub(crate) fn is_complete(&self) -> bool {
        self.op().is_none_or(|op| op.is_complete())
    }
}

impl State {
    /// Stores a new (active, not persistent) request; its handle.
    pub(crate) fn add_request(&self, raw: RawRequest, comm: &Arc<CommObj>) -> Result<Handle, Error> {
        self.insert_request(ReqEntry {
            comm: comm.clone(),
            op: Mutex::new(Some(Arc::new(raw))),
            persistent: None,
        })
    }

    /// Stores a new inactive persistent request; its handle.
    pub(crate) fn add_persistent(&self, p: Persistent, comm: &Arc<CommObj>) -> Result<Handle, Error> {
        self.insert_request(ReqEntry { comm: comm.clone(), op: Mutex::new(None), persistent: Some(p) })
    }

    fn insert_request(&self, entry: ReqEntry) -> Result<Handle, Error> {
        self.requests.insert(Arc::new(entry)).ok_or_else(|| Error::intern("too many live requests"))
    }

    /// The request of handle `h`; `Ok(None)` for `MPI_REQUEST_NULL`, `MPI_ERR_REQUEST` for
    /// anything that is not a live request handle.
    pub(crate) fn request(&self, h: Handle) -> Result<Option<Arc<ReqEntry>>, Error> {
        if h == abi::MPI_REQUEST_NULL {
            return Ok(None);
        }
        match self.requests.get(h) {
            Some(e) => Ok(Some(e)),
            None => Err(Error::request(format!("invalid request handle {h:#x}"))),
        }
    }

    /// Forgets the completed request `h` (after its status was read).
    pub(crate) fn retire_request(&self, h: Handle) {
        drop(self.requests.remove(h));
    }

    /// `MPI_Request_free`: forgets `h`; a running operation goes on, detached.
    pub(crate) fn free_request(&self, h: Handle) -> Result<(), Error> {
        let entry = self
            .requests
            .remove(h)
            .ok_or_else(|| Error::request(format!("invalid request handle {h:#x}")))?;
        let mut detached = self.detached.lock().unwrap_or_else(PoisonError::into_inner);
        let done: Vec<Arc<ReqEntry>> = {
            let (done, running) = detached.drain(..).partition(|e: &Arc<ReqEntry>| e.is_complete());
            *detached = running;
            done
        };
        if !entry.is_complete() {
            detached.push(entry);
        }
        drop(detached);
        drop(done); // outside the lock
        Ok(())
    }

    /// Every request still known (at `MPI_Finalize`), detached ones included.
    pub(crate) fn take_all_requests(&self) -> Vec<Arc<ReqEntry>> {
        let mut all = self.requests.drain();
        all.append(&mut self.detached.lock().unwrap_or_else(PoisonError::into_inner));
        all
    }
}
