//! Generalized requests (MPI 4.0 §13.2) and MPICH's extensions of them (`MPIX_Grequest_start`,
//! request classes): requests whose operation the program runs itself and ends with
//! `MPI_Grequest_complete`, from any thread.
//!
//! The program gives callbacks ([`Callbacks`]); MPI calls them as §13.2 says:
//! - `query` when a completion is reported (`MPI_Wait`/`MPI_Test` and their multiple forms,
//!   `MPI_Request_get_status` of a completed request): it fills the status, and its error is the
//!   request's;
//! - `free` once, when the request goes: at the wait or test that reports its completion (after
//!   `query`), or, after `MPI_Request_free`, in whichever of `MPI_Request_free` and
//!   `MPI_Grequest_complete` comes last ([`Generalized::release`], [`Generalized::complete`]);
//! - `cancel` at `MPI_Cancel`, told whether the request already completed.
//!
//! With MPICH's extensions, `poll` and `wait` let MPI drive an operation that progresses only
//! when asked: `MPI_Test` (and every wait, between progress passes) calls `poll`; `MPI_Wait`
//! calls `wait` once before anything else. An error of either is kept and reported with the
//! completion (after `query`'s).
//!
//! Completion is a pioman condition signalled by `complete`, so a thread blocked in `MPI_Wait`
//! sleeps until then (no polling loop) unless the request has a `poll` callback, which must be
//! called to make progress.
//!
//! Owns the life of a generalized request (completed, freed by the program, freed by MPI) and
//! when each callback runs; it must not know handles nor C (the C library wraps C functions
//! into [`Callbacks`]). No lock is held while a callback runs: callbacks may call MPI.

use crate::abi::{self, Status};
use crate::error::{Error, Result};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// The condition bit of a completed generalized request (nmad's, so waits look alike).
const COMPLETED: u32 = nmad::COMPLETED;

/// Polls of a `poll` callback before a wait starts napping between polls.
const SPIN_POLLS: u32 = 64;
/// The longest nap between two polls of a `poll` callback.
const LONGEST_NAP: Duration = Duration::from_millis(1);

/// What the program gave: its callbacks and their extra state.
pub trait Callbacks: Send + Sync {
    /// Fills `status` (prefilled as an empty one) for a completion being reported.
    fn query(&self, status: &mut Status) -> Result<()>;
    /// Frees the program's resources (called once).
    fn free(&self) -> Result<()>;
    /// Starts cancelling; `complete`: `MPI_Grequest_complete` was already called.
    fn cancel(&self, complete: bool) -> Result<()>;
    /// MPICH's `poll_fn`: `None` if the request has none.
    fn poll(&self, _status: &mut Status) -> Option<Result<()>> {
        None
    }
    /// Whether there is a `poll_fn` (the request then progresses only when polled).
    fn polls(&self) -> bool {
        false
    }
    /// MPICH's `wait_fn` (for this request alone, timeout 0): `None` if the request has none.
    fn wait(&self, _status: &mut Status) -> Option<Result<()>> {
        None
    }
}

/// Where a generalized request is in its life.
#[derive(Default)]
struct Life {
    /// `MPI_Grequest_complete` was called.
    completed: bool,
    /// The program freed its handle (`MPI_Request_free`).
    released: bool,
    /// `free` ran.
    freed: bool,
    /// The first error of `poll` or `wait`.
    progress_error: Option<Error>,
    /// Conditions of waits on several requests, signalled at completion too.
    watchers: Vec<Arc<pioman::Cond>>,
}

/// A generalized request.
pub struct Generalized {
    callbacks: Box<dyn Callbacks>,
    done: pioman::Cond,
    life: Mutex<Life>,
}

impl Generalized {
    /// A running generalized request (`MPI_Grequest_start`).
    pub fn new(callbacks: Box<dyn Callbacks>) -> Generalized {
        Generalized { callbacks, done: pioman::Cond::new(), life: Mutex::new(Life::default()) }
    }

    fn life(&self) -> std::sync::MutexGuard<'_, Life> {
        self.life.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `MPI_Grequest_complete`: wakes the waiters. `Ok(true)` if the program had freed the
    /// request: `free` ran here and the request is gone. Completing again does nothing (as in
    /// MPICH, which does not check).
    pub fn complete(&self) -> Result<bool> {
        let run_free = {
            let mut life = self.life();
            if life.completed {
                return Ok(false);
            }
            life.completed = true;
            let run = life.released && !life.freed;
            life.freed |= run;
            (run, std::mem::take(&mut life.watchers))
        };
        let (run_free, watchers) = run_free;
        self.done.signal(COMPLETED);
        watchers.iter().for_each(|w| w.signal(COMPLETED));
        if run_free {
            self.callbacks.free()?;
        }
        Ok(run_free)
    }

    /// `MPI_Request_free`: `None` if the request has not completed (it stays until
    /// [`Generalized::complete`], which then frees it); else `free` ran here, with its result.
    pub fn release(&self) -> Option<Result<()>> {
        {
            let mut life = self.life();
            life.released = true;
            if !life.completed || life.freed {
                return if life.completed { Some(Ok(())) } else { None };
            }
            life.freed = true;
        }
        Some(self.callbacks.free())
    }

    /// `MPI_Cancel`: runs `cancel`, telling it whether the request completed.
    pub fn cancel(&self) -> Result<()> {
        let completed = self.life().completed;
        self.callbacks.cancel(completed)
    }

    /// Signals `cond` too at completion (at once if completed), until [`Generalized::unwatch`].
    pub(crate) fn watch(&self, cond: &Arc<pioman::Cond>) {
        let mut life = self.life();
        if life.completed {
            drop(life);
            cond.signal(COMPLETED);
        } else {
            life.watchers.push(cond.clone());
        }
    }

    pub(crate) fn unwatch(&self, cond: &Arc<pioman::Cond>) {
        self.life().watchers.retain(|w| !Arc::ptr_eq(w, cond));
    }

    /// Whether the request progresses only when polled (it has a `poll` callback).
    pub(crate) fn polls(&self) -> bool {
        self.callbacks.polls()
    }

    /// Whether `MPI_Grequest_complete` was called.
    pub fn is_complete(&self) -> bool {
        self.done.test(COMPLETED)
    }

    /// The condition signalled at completion.
    pub fn cond(&self) -> &pioman::Cond {
        &self.done
    }

    /// Calls `poll` once if the request has one and has not completed (a test's progress).
    pub fn poke(&self) {
        if self.is_complete() {
            return;
        }
        let mut scratch = empty_status();
        if let Some(Err(e)) = self.callbacks.poll(&mut scratch) {
            self.life().progress_error.get_or_insert(e);
        }
    }

    /// Waits for `MPI_Grequest_complete`: calls `wait` first if there is one; then, with a
    /// `poll`, polls between progress passes and naps; else sleeps on the condition.
    pub fn wait(&self, pio: &pioman::Pioman) {
        if self.is_complete() {
            return;
        }
        let mut scratch = empty_status();
        if let Some(Err(e)) = self.callbacks.wait(&mut scratch) {
            self.life().progress_error.get_or_insert(e);
        }
        if !self.callbacks.polls() {
            pio.wait(&self.done, COMPLETED);
            return;
        }
        let mut nap = Duration::from_micros(10);
        for round in 0u32.. {
            self.poke();
            if self.is_complete() {
                return;
            }
            if round < SPIN_POLLS {
                pio.progress();
            } else {
                pio.wait_timeout(&self.done, COMPLETED, nap);
                nap = (nap * 2).min(LONGEST_NAP);
            }
        }
    }

    /// Reports the completion: `query` fills `status` (prefilled as empty); with `finishing`
    /// (a wait or test that ends the request), `free` runs after it. The first error of
    /// `query`, `poll`/`wait`, `free`.
    pub fn report(&self, status: &mut Status, finishing: bool) -> Result<()> {
        *status = empty_status();
        let queried = self.callbacks.query(status);
        let progress = self.life().progress_error.clone();
        let freed = if finishing && !std::mem::replace(&mut self.life().freed, true) {
            self.callbacks.free()
        } else {
            Ok(())
        };
        queried.and(progress.map_or(Ok(()), Err)).and(freed)
    }
}

/// The status `query` starts from (MPICH's initial request status): nothing received, not
/// cancelled, source and tag `MPI_UNDEFINED`, no error.
pub fn empty_status() -> Status {
    Status { source: abi::MPI_UNDEFINED, tag: abi::MPI_UNDEFINED, ..Status::default() }
}

#[cfg(test)]
mod tests;
