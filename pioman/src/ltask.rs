//! Ltasks: a registered source and the state machine that serializes its polls.
//!
//! State bits: RUNNING (a context is inside `poll`), BLOCKED (a context waits for its event),
//! CANCEL_REQ (cancel asked while running), DONE and CANCELLED (terminal). Rules, checked by
//! `loom_tests`:
//! - a poll runs only after a successful `try_begin_run`, so never twice at once;
//! - exactly one transition reaches a terminal state, and whoever makes it signals the task's
//!   completion condition (no lost completion);
//! - a cancel that finds the task running only leaves CANCEL_REQ: the runner finishes the cancel
//!   when its poll returns, so `remove` can wait until no poll runs any more.

use crate::cond::Cond;
use crate::loom::atomic::{AtomicU32, Ordering::*};
use crate::source::{Options, Poll, Source};
use crate::stats::SourceStats;
use std::sync::Arc;

const RUNNING: u32 = 1;
const DONE: u32 = 2;
const CANCELLED: u32 = 4;
const CANCEL_REQ: u32 = 8;
const BLOCKED: u32 = 16;
const TERMINAL: u32 = DONE | CANCELLED;

/// Bits of an ltask's completion condition.
pub const LTASK_DONE: u32 = 1;
pub const LTASK_CANCELLED: u32 = 2;

/// What the end of a run decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Schedulable again.
    Again,
    /// Reached DONE (the caller signals completion).
    Done,
    /// Reached CANCELLED (a cancel arrived during the run; the caller signals).
    Cancelled,
}

/// What a cancel did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cancel {
    /// Cancelled now (the caller signals).
    Now,
    /// The task is running: its runner will finish the cancel.
    Requested,
    /// Already finished.
    AlreadyFinished,
}

#[derive(Debug)]
pub(crate) struct State(AtomicU32);

impl State {
    pub(crate) fn new() -> Self {
        State(AtomicU32::new(0))
    }

    /// Takes the right to poll. Fails if someone polls, or the task is finished or being cancelled.
    #[inline]
    pub(crate) fn try_begin_run(&self) -> bool {
        let mut s = self.0.load(Relaxed);
        loop {
            if s & (RUNNING | TERMINAL | CANCEL_REQ) != 0 {
                return false;
            }
            match self.0.compare_exchange_weak(s, s | RUNNING, Acquire, Relaxed) {
                Ok(_) => return true,
                Err(x) => s = x,
            }
        }
    }

    /// Gives the right back after a poll that returned `finished` (true for Done or a one-shot).
    /// A completed poll wins over a concurrent cancel: its completion is not lost.
    pub(crate) fn end_run(&self, finished: bool) -> Ended {
        let mut s = self.0.load(Relaxed);
        loop {
            debug_assert!(s & RUNNING != 0);
            let (next, ended) = if finished {
                ((s & !(RUNNING | CANCEL_REQ)) | DONE, Ended::Done)
            } else if s & CANCEL_REQ != 0 {
                ((s & !(RUNNING | CANCEL_REQ)) | CANCELLED, Ended::Cancelled)
            } else {
                (s & !RUNNING, Ended::Again)
            };
            match self.0.compare_exchange_weak(s, next, Release, Relaxed) {
                Ok(_) => return ended,
                Err(x) => s = x,
            }
        }
    }

    pub(crate) fn cancel(&self) -> Cancel {
        let mut s = self.0.load(Relaxed);
        loop {
            let (next, r) = if s & TERMINAL != 0 {
                return Cancel::AlreadyFinished;
            } else if s & RUNNING != 0 {
                (s | CANCEL_REQ, Cancel::Requested)
            } else {
                (s | CANCELLED, Cancel::Now)
            };
            match self.0.compare_exchange_weak(s, next, AcqRel, Relaxed) {
                Ok(_) => return r,
                Err(x) => s = x,
            }
        }
    }

    /// Takes the right to wait for the source's event (one waiter per task at a time).
    pub(crate) fn try_begin_block(&self) -> bool {
        let mut s = self.0.load(Relaxed);
        loop {
            if s & (BLOCKED | TERMINAL) != 0 {
                return false;
            }
            match self.0.compare_exchange_weak(s, s | BLOCKED, Acquire, Relaxed) {
                Ok(_) => return true,
                Err(x) => s = x,
            }
        }
    }

    pub(crate) fn end_block(&self) {
        self.0.fetch_and(!BLOCKED, Release);
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.0.load(Acquire) & TERMINAL != 0
    }
}

/// A registered source with its options, state and counters.
pub(crate) struct Ltask {
    pub(crate) id: u64,
    pub(crate) source: Arc<dyn Source>,
    pub(crate) opts: Options,
    pub(crate) state: State,
    /// LTASK_DONE / LTASK_CANCELLED once finished.
    pub(crate) completion: Cond,
    pub(crate) stats: SourceStats,
}

impl Ltask {
    /// Finishes a cancel or a completion: signals once.
    pub(crate) fn finish(&self, ended: Ended) {
        match ended {
            Ended::Done => self.completion.signal(LTASK_DONE),
            Ended::Cancelled => self.completion.signal(LTASK_CANCELLED),
            Ended::Again => {}
        }
    }

    /// Maps a poll result to "finished" for this task's kind.
    pub(crate) fn finished_by(&self, p: Poll) -> bool {
        p == Poll::Done || self.opts.kind == crate::source::Kind::OneShot
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn run_and_finish() {
        let s = State::new();
        assert!(s.try_begin_run());
        assert!(!s.try_begin_run(), "no second runner");
        assert_eq!(s.end_run(false), Ended::Again);
        assert!(s.try_begin_run());
        assert_eq!(s.end_run(true), Ended::Done);
        assert!(!s.try_begin_run());
        assert_eq!(s.cancel(), Cancel::AlreadyFinished);
    }

    #[test]
    fn cancel_while_running_is_finished_by_the_runner() {
        let s = State::new();
        assert!(s.try_begin_run());
        assert_eq!(s.cancel(), Cancel::Requested);
        assert!(!s.try_begin_run());
        assert_eq!(s.end_run(false), Ended::Cancelled);
        assert!(s.is_finished());
    }

    #[test]
    fn completion_wins_over_concurrent_cancel() {
        let s = State::new();
        assert!(s.try_begin_run());
        assert_eq!(s.cancel(), Cancel::Requested);
        assert_eq!(s.end_run(true), Ended::Done);
    }

    #[test]
    fn one_blocker_at_a_time() {
        let s = State::new();
        assert!(s.try_begin_block());
        assert!(!s.try_begin_block());
        s.end_block();
        assert!(s.try_begin_block());
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::atomic::AtomicUsize;

    /// Two pollers and a canceller on a repeat task whose second successful poll reports Done:
    /// never two polls at once, exactly one terminal signal, and a waiter on the completion
    /// condition always wakes.
    #[test]
    fn loom_ltask_runs_cancel_completion() {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(3);
        b.check(|| {
            let st = Arc::new(State::new());
            let cond = Arc::new(Cond::new());
            let inside = Arc::new(AtomicUsize::new(0));
            let polls = Arc::new(AtomicUsize::new(0));
            let signals = Arc::new(AtomicUsize::new(0));
            let finish = {
                let (cond, signals) = (cond.clone(), signals.clone());
                move |e: Ended| {
                    if e != Ended::Again {
                        signals.fetch_add(1, SeqCst);
                        cond.signal(if e == Ended::Done { LTASK_DONE } else { LTASK_CANCELLED });
                    }
                }
            };
            let mut hs = Vec::new();
            for _ in 0..2 {
                let (st, inside, polls, finish) = (st.clone(), inside.clone(), polls.clone(), finish.clone());
                hs.push(loom::thread::spawn(move || {
                    for _ in 0..2 {
                        if st.try_begin_run() {
                            assert_eq!(inside.fetch_add(1, SeqCst), 0, "two polls at once");
                            let n = polls.fetch_add(1, SeqCst) + 1;
                            inside.fetch_sub(1, SeqCst);
                            finish(st.end_run(n >= 2));
                        }
                    }
                }));
            }
            let (st2, f2) = (st.clone(), finish.clone());
            hs.push(loom::thread::spawn(move || {
                if st2.cancel() == Cancel::Now {
                    f2(Ended::Cancelled);
                }
            }));
            for h in hs {
                h.join().unwrap();
            }
            // Whatever happened, the task is finished (cancel makes sure) and signalled once.
            assert!(st.is_finished());
            assert_eq!(signals.load(SeqCst), 1);
            while !cond.test(LTASK_DONE | LTASK_CANCELLED) {
                cond.sleep_until(
                    LTASK_DONE | LTASK_CANCELLED,
                    crate::cond::Wake::Loom(loom::thread::current()),
                    loom::thread::park,
                );
            }
        });
    }
}
