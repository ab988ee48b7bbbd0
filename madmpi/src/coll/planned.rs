//! Collectives planned and not yet started: a [`Planned`] is a schedule built for one rank
//! (its algorithm chosen), bound to the caller's memory, with its reduction. A nonblocking call
//! starts it once as the communicator's next collective; a persistent one (`MPI_Bcast_init`...,
//! MPI 4.0) becomes a [`Persistent`], which reserves its collective number at init and runs the
//! same schedule again at each start.
//!
//! Why one number for every run: every member makes its init calls in the same order (they are
//! collective), so the reserved numbers agree; a run's messages are told apart from the next
//! run's by order alone, since a run is complete locally before the request may start again
//! and nmad delivers the messages between two ranks with one tag in the order they were sent
//! (MPICH's persistent collectives also reuse one tag).
//!
//! Owns planned and persistent collectives; it must not choose algorithms (see `raw`).

use super::bound::{Bind, Reducer};
use super::engine::{Exec, Handle};
use super::inline;
use super::node_local::SharedCall;
use super::schedule::Schedule;
use crate::comm::Comm;
use crate::error::Result;
use crate::request::{Outcome, RawRequest};
use std::sync::Arc;

/// A collective ready to start: see the module docs.
pub struct Planned {
    comm: Comm,
    sched: Arc<Schedule>,
    bind: Bind,
    reducer: Option<Reducer>,
    /// The call as the node-local path would run it, blocking (`None`: it never would).
    shared: Option<SharedCall>,
}

// SAFETY: the pointers in `bind` are only addresses here: nothing dereferences them before a
// start, whose caller promises they are valid; the rest (communicator, schedule, operation and
// datatype handles) is `Send + Sync` data.
unsafe impl Send for Planned {}
// SAFETY: as for `Send`: shared access never reads through the pointers.
unsafe impl Sync for Planned {}

impl Planned {
    pub(super) fn new(comm: &Comm, sched: Arc<Schedule>, bind: Bind, reducer: Option<Reducer>) -> Planned {
        Planned { comm: comm.clone(), sched, bind, reducer, shared: None }
    }

    /// The same, which a blocking start may run node-locally as `call` (`coll::shared`).
    pub(super) fn with_shared(mut self, call: SharedCall) -> Planned {
        self.shared = Some(call);
        self
    }

    /// Starts it as the communicator's next collective (a blocking or nonblocking call).
    ///
    /// # Safety
    /// The memory bound at planning must stay valid (inputs readable, outputs writable) and
    /// untouched by others until the request completes.
    pub unsafe fn start(self) -> Result<RawRequest> {
        let seq = self.comm.next_coll_seq();
        // SAFETY: the memory contract is this function's own, passed on.
        let exec = unsafe { Exec::start(&self.comm, seq, self.sched, self.bind, self.reducer) }?;
        Ok(RawRequest::collective(&self.comm, Handle(exec)))
    }

    /// Runs it as the communicator's next collective, to the end, in the calling thread (a
    /// blocking call): its outcome.
    ///
    /// # Safety
    /// The memory bound at planning must stay valid (inputs readable, outputs writable) and
    /// untouched by others until this returns.
    pub unsafe fn run(self) -> Result<Outcome> {
        if let Some(call) = &self.shared
            // SAFETY: the memory contract is this function's own, passed on.
            && let Some(done) = unsafe { self.comm.run_shared(call, self.reducer.as_ref()) }
        {
            return Ok(Outcome { error: done.err(), ..Outcome::DONE });
        }
        let seq = self.comm.next_coll_seq();
        // SAFETY: the memory contract is this function's own, passed on.
        let error = unsafe { inline::run(&self.comm, seq, self.sched, self.bind, self.reducer) }?;
        Ok(Outcome { error, ..Outcome::DONE })
    }

    /// Makes it persistent: takes its collective number now (init is where the members agree
    /// on an order), for every start.
    pub fn persist(self) -> Persistent {
        Persistent { seq: self.comm.next_coll_seq(), plan: self }
    }
}

/// A persistent collective: a [`Planned`] with its collective number.
pub struct Persistent {
    plan: Planned,
    seq: u64,
}

impl Persistent {
    /// Runs the collective once more.
    ///
    /// # Safety
    /// As [`Planned::start`]; and the previous run has completed (MPI lets an active
    /// persistent request be started again only once it completed).
    pub unsafe fn start(&self) -> Result<RawRequest> {
        let p = &self.plan;
        let reducer = p.reducer.as_ref().map(|r| Reducer { op: r.op.clone(), dtype: r.dtype.clone() });
        // SAFETY: the memory contract is this function's own; a fresh copy of the schedule
        // runs on fresh temporaries, and the number is unused by any running schedule since
        // the previous run completed.
        let exec = unsafe { Exec::start(&p.comm, self.seq, p.sched.clone(), p.bind, reducer) }?;
        Ok(RawRequest::collective(&p.comm, Handle(exec)))
    }

    /// The communicator it runs on.
    pub fn comm(&self) -> &Comm {
        &self.plan.comm
    }
}
