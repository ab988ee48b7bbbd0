//! Running a schedule in the background (nonblocking and persistent collectives): an [`Exec`]
//! holds a schedule bound to memory ([`Bound`]), posts each round's transfers once the rounds it
//! depends on are done, runs local operations, and signals its condition when the last round is
//! done (or, after an error, once nothing it posted is in flight any more). Blocking calls run
//! their schedules inline instead (`inline`).
//!
//! Who advances it: the thread that starts it (the first rounds are posted before the call
//! returns), then whoever polls the process's collective progress source
//! ([`crate::request::background`]): every nmad request of a schedule carries a monitor that only
//! counts the completion and queues the schedule there; the source's poll calls
//! [`Exec::step`]. See the module docs of `coll` for why monitors do not advance schedules
//! themselves.
//!
//! Owns background execution state; it must not choose algorithms.

use super::bound::{Bind, Bound, Host, Reducer};
use super::rounds::{Advance, Rounds};
use super::schedule::Schedule;
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::loom::atomic::AtomicUsize;
use crate::request::background::{self, Progress};
use crate::request::{Outcome, Pending, RawRequest};
use nmad::{Event, Monitor};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard};

/// Condition bit of a finished schedule (the same as nmad's, so waits look alike).
pub(crate) const COMPLETED: u32 = nmad::COMPLETED;

struct State {
    rounds: Rounds<Pin<Box<nmad::Request>>>,
    error: Option<Error>,
    finished: bool,
}

/// A schedule bound to memory and running.
pub(crate) struct Exec {
    bound: Bound,
    state: Mutex<State>,
    /// In the progress source's queue.
    pub(super) queued: AtomicBool,
    /// Completions reported by monitors (see `rounds`).
    events: AtomicUsize,
    monitor: Monitor,
    progress: Arc<Progress>,
    done: pioman::Cond,
    result: Mutex<Option<Error>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl background::Advance for Exec {
    fn queued(&self) -> &AtomicBool {
        &self.queued
    }

    fn advance(self: Arc<Self>) -> bool {
        self.step()
    }
}

impl Exec {
    /// Starts `sched` on `comm` as collective number `seq`, over `bind`: allocates the
    /// temporaries, posts what can start, and returns the running schedule.
    ///
    /// # Safety
    /// `bind`'s memory must stay valid (the input for reads, the output for writes and reads)
    /// and not be touched by anyone else until the schedule finishes (its condition is
    /// signalled).
    pub(crate) unsafe fn start(
        comm: &Comm,
        seq: u64,
        sched: Arc<Schedule>,
        bind: Bind,
        reducer: Option<Reducer>,
    ) -> Result<Arc<Exec>> {
        let progress = background::of(comm.runtime())?;
        // SAFETY: our contract, passed on.
        let bound = unsafe { Bound::new(comm, seq, sched, bind, reducer) }?;
        let state = State {
            rounds: Rounds::new(bound.sched.rounds.iter().map(|r| r.deps.as_slice())),
            error: None,
            finished: false,
        };
        let done = pioman::Cond::new();
        let exec = Arc::new_cyclic(|weak: &std::sync::Weak<Exec>| {
            let weak = weak.clone();
            let monitor: Monitor = Arc::new(move |ev, _| {
                if ev == Event::DataArrived {
                    return;
                }
                if let Some(e) = weak.upgrade() {
                    e.events.fetch_add(1, SeqCst);
                    // A completion inside this schedule's own advance (an eager send done as it
                    // is posted) is seen by that advance, which loops or reports it: queuing
                    // it would only wake a sleeping progression thread for nothing.
                    if ADVANCING.get() != Arc::as_ptr(&e) {
                        e.progress.push(&e);
                    }
                }
            });
            Exec {
                bound,
                state: Mutex::new(state),
                queued: AtomicBool::new(false),
                events: AtomicUsize::new(0),
                monitor,
                progress,
                done,
                result: Mutex::new(None),
            }
        });
        if exec.step() {
            exec.progress.push(&exec);
        }
        Ok(exec)
    }

    pub(crate) fn is_complete(&self) -> bool {
        self.done.test(COMPLETED)
    }

    pub(crate) fn cond(&self) -> &pioman::Cond {
        &self.done
    }

    pub(crate) fn pioman(&self) -> &pioman::Pioman {
        self.bound.comm.runtime_nmad().pioman()
    }

    /// The error it ended with, once finished (`Some(None)`: success).
    pub(crate) fn outcome(&self) -> Option<Option<Error>> {
        self.is_complete().then(|| lock(&self.result).clone())
    }

    /// Advances the schedule as far as it can go now. Returns `true` if it must be advanced
    /// again soon: a monitor reported a completion whose request has not signalled yet.
    pub(crate) fn step(self: &Arc<Self>) -> bool {
        let mut guard = lock(&self.state);
        let _advancing = Advancing::enter(self);
        let st = &mut *guard;
        if st.finished {
            return false;
        }
        let mut host =
            Host { bound: &self.bound, monitor: Some(&self.monitor), error: &mut st.error, pool: None };
        match st.rounds.advance(&mut host, &self.events) {
            Advance::Running(again) => again,
            Advance::Finished => {
                st.finished = true;
                *lock(&self.result) = st.error.take();
                drop(guard);
                // Last access by the engine for the waiter: it may drop its handle now.
                self.done.signal(COMPLETED);
                false
            }
        }
    }
}

thread_local! {
    /// The schedule this thread is advancing (under its state lock), if any.
    static ADVANCING: std::cell::Cell<*const Exec> = const { std::cell::Cell::new(std::ptr::null()) };
}

/// Marks this thread as advancing a schedule until dropped (nested advances restore the outer).
struct Advancing(*const Exec);

impl Advancing {
    fn enter(e: &Arc<Exec>) -> Advancing {
        Advancing(ADVANCING.replace(Arc::as_ptr(e)))
    }
}

impl Drop for Advancing {
    fn drop(&mut self) {
        ADVANCING.set(self.0);
    }
}

/// A running collective, as a request holds it: dropping it waits for the schedule to finish
/// (collectives cannot be cancelled, and the schedule uses the request's borrowed buffers).
pub struct Handle(pub(crate) Arc<Exec>);

impl Handle {
    pub(crate) fn is_complete(&self) -> bool {
        self.0.is_complete()
    }

    pub(crate) fn cond(&self) -> &pioman::Cond {
        self.0.cond()
    }

    /// Waits until finished, driving progress as pioman's policy says.
    pub(crate) fn wait(&self) {
        if !self.0.is_complete() {
            self.0.pioman().wait(self.0.cond(), COMPLETED);
        }
    }

    pub(crate) fn outcome(&self) -> Option<Option<Error>> {
        self.0.outcome()
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.wait();
    }
}

/// A collective's request holds its handle: the schedule's completion stands for the nmad
/// request's.
impl Pending for Handle {
    fn is_complete(&self) -> bool {
        Handle::is_complete(self)
    }

    fn cond(&self) -> &pioman::Cond {
        Handle::cond(self)
    }

    fn wait(&self, _pio: &pioman::Pioman) {
        Handle::wait(self)
    }

    fn outcome(&self) -> Option<Outcome> {
        Handle::outcome(self).map(|error| Outcome { error, ..Outcome::DONE })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl RawRequest {
    /// The request of a running collective operation.
    pub(crate) fn collective(comm: &Comm, h: Handle) -> RawRequest {
        RawRequest::with_pending(comm, Box::new(h))
    }
}
