//! Request handles: each nonblocking operation is a [`ReqEntry`] in the state's request table
//! until a completion call (`MPI_Wait`, `MPI_Test`...) or `MPI_Request_free` removes it. A
//! persistent request (`MPI_Send_init`...) stays in the table across its operations: it is
//! inactive until `MPI_Start`, and again once a completion call reported its operation.
//!
//! Entries are `Arc`s: a completion call clones one out of the table and waits with no lock
//! held (an entry's own lock is held only to read or replace its operation). `MPI_Request_free`
//! of an operation still running cannot drop it (dropping cancels an unmatched receive, or
//! blocks until a send is done), so it moves to the `detached` list, from which completed
//! entries are dropped at later frees and the rest at `MPI_Finalize`. A generalized request
//! freed before `MPI_Grequest_complete` stays in the table instead: the program completes it by
//! its handle, which then goes.
//!
//! [`COMPLETED`] is no table entry: the handle of every operation that completed before its call
//! returned (an `MPI_Isend` whose message left at once), which each completion call reports
//! complete with an empty status, and which `MPI_Request_free` or a completion call simply
//! forget. MPICH hands out such builtin requests too.
//!
//! The receives `MPI_Irecv`'s hot path posts live in the [`express`] table instead, which
//! hands the general path their entries on demand.
//!
//! Owns request handles and the life of freed requests; it must not fill statuses (see
//! `status`) nor start operations (madmpi's `MpiRequest` does, and keeps persistent requests
//! active or inactive).

pub(crate) mod express;

use crate::errors::{AsOwner, HandlerOwner};
use crate::state::State;
use express::EXPRESS;
use madmpi::abi::{self, Handle};
use madmpi::error::Error;
use madmpi::operation::MpiRequest;
use madmpi::operation::Persistent;
use madmpi::request::RawRequest;
use madmpi::request::recycle::{self, Spares};
use std::sync::{Arc, PoisonError};

thread_local! {
    /// Allocations of entries given back by completion calls ([`give_back`]), for the next.
    static ENTRIES: Spares<ReqEntry> = const { Spares::new() };
}

/// Drops the entry and operation of a request a completion call retired (out of the table,
/// reported); the allocations nobody else holds serve this thread's next requests.
pub(crate) fn give_back(mut entry: Arc<ReqEntry>, op: Arc<RawRequest>) {
    if let Some(e) = Arc::get_mut(&mut entry) {
        drop(e.req.take_current()); // its reference to `op`
        recycle::give_back_in(&ENTRIES, entry);
    }
    madmpi::operation::give_back(op);
}

/// The handle of any operation that completed before its call returned (see the module docs):
/// a builtin request handle in MPICH's encoding, which the table never makes.
pub(crate) const COMPLETED: Handle = 0x6c00_0000;

/// A request and the communicator (or window) whose error handler its errors go to.
pub(crate) struct ReqEntry {
    pub(crate) comm: Arc<dyn HandlerOwner>,
    /// The request (madmpi's: one operation, or a persistent request active or inactive).
    pub(crate) req: MpiRequest,
}

impl ReqEntry {
    /// An operation complete with nothing to report (what [`COMPLETED`] stands for), its
    /// errors (none can come) going to `world`'s handler.
    pub(crate) fn completed(world: &Arc<crate::comms::CommObj>) -> ReqEntry {
        ReqEntry { comm: world.clone(), req: MpiRequest::once(RawRequest::completed(&world.comm)) }
    }

    /// The current operation (`None`: an inactive persistent request).
    pub(crate) fn op(&self) -> Option<Arc<RawRequest>> {
        self.req.current()
    }

    /// Whether nothing runs: the operation completed, or the request is inactive.
    pub(crate) fn is_complete(&self) -> bool {
        self.req.is_complete()
    }
}

impl State {
    /// Stores a new (active, not persistent) request; its handle.
    pub(crate) fn add_request(&self, raw: RawRequest, comm: &impl AsOwner) -> Result<Handle, Error> {
        self.insert_request(ReqEntry { comm: comm.owner(), req: MpiRequest::once(raw) })
    }

    /// Stores a new inactive persistent request; its handle.
    pub(crate) fn add_persistent(&self, p: Persistent, comm: &impl AsOwner) -> Result<Handle, Error> {
        self.insert_request(ReqEntry { comm: comm.owner(), req: MpiRequest::persistent(p) })
    }

    fn insert_request(&self, entry: ReqEntry) -> Result<Handle, Error> {
        self.requests
            .insert(recycle::make_in(&ENTRIES, entry))
            .ok_or_else(|| Error::intern("too many live requests"))
    }

    /// The request of handle `h`; `Ok(None)` for `MPI_REQUEST_NULL`, `MPI_ERR_REQUEST` for
    /// anything that is not a live request handle.
    pub(crate) fn request(&self, h: Handle) -> Result<Option<Arc<ReqEntry>>, Error> {
        match h {
            abi::MPI_REQUEST_NULL => return Ok(None),
            COMPLETED => return Ok(Some(self.completed.clone())),
            _ => {}
        }
        let found = if express::is_express(h) { EXPRESS.promote(h) } else { self.requests.get(h) };
        match found {
            Some(e) => Ok(Some(e)),
            None => Err(Error::request(format!("invalid request handle {h:#x}"))),
        }
    }

    /// Takes request `h` out of its table (general or express).
    fn take_request(&self, h: Handle) -> Option<Arc<ReqEntry>> {
        if express::is_express(h) { EXPRESS.remove(h) } else { self.requests.remove(h) }
    }

    /// Forgets the completed request `h` (after its status was read).
    pub(crate) fn retire_request(&self, h: Handle) {
        if h == COMPLETED {
            return;
        }
        drop(self.take_request(h));
    }

    /// `MPI_Request_free`: forgets `h`; a running operation goes on, detached. A generalized
    /// request that has not completed stays until `MPI_Grequest_complete` frees it (the program
    /// still completes it by its handle); an active partitioned one cannot be freed.
    pub(crate) fn free_request(&self, h: Handle) -> Result<(), Error> {
        if h == COMPLETED {
            return Ok(());
        }
        if let Some(op) = self.request(h).ok().flatten().and_then(|e| e.op()) {
            if let Some(g) = op.generalized() {
                let Some(freed) = g.release() else { return Ok(()) };
                self.retire_request(h);
                return freed;
            }
            if op.partitioned().is_some() && !op.is_complete() {
                return Err(Error::request("an active partitioned request cannot be freed (MPI 4.0 §4.2.2)"));
            }
        }
        let entry =
            self.take_request(h).ok_or_else(|| Error::request(format!("invalid request handle {h:#x}")))?;
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
        all.append(&mut EXPRESS.drain());
        all.append(&mut self.detached.lock().unwrap_or_else(PoisonError::into_inner));
        all
    }
}
