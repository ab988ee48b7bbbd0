//! The park permit of one user thread: the hand-off between a thread that parks and whoever
//! unparks it, which decides who puts the thread back on a run queue.
//!
//! Protocol (std's park semantics, split in two because a user thread cannot block itself: it
//! suspends, and its LWP finishes the park after the switch):
//! - the thread calls [`ParkState::try_consume_permit`]; if a permit was waiting it goes on;
//! - otherwise it suspends, and its LWP calls [`ParkState::commit_park`]: the thread is PARKED,
//!   unless an unpark arrived during the switch, in which case the LWP reschedules it at once;
//! - [`ParkState::unpark`] returns `true` exactly when the caller must reschedule the thread.
//!
//! A thread is therefore in at most one run queue, and no wake-up is lost. `tests::loom_*` check it.

use crate::loom::atomic::{AtomicU8, Ordering::*};

const EMPTY: u8 = 0;
const NOTIFIED: u8 = 1;
const PARKED: u8 = 2;

pub(crate) struct ParkState(AtomicU8);

impl ParkState {
    pub(crate) fn new() -> Self {
        ParkState(AtomicU8::new(EMPTY))
    }

    /// The thread itself, before suspending: consumes a pending permit. `true`: do not suspend.
    #[inline]
    pub(crate) fn try_consume_permit(&self) -> bool {
        // Load first: a failing CAS still costs a locked instruction, and usually no permit waits.
        self.0.load(Relaxed) == NOTIFIED && self.0.compare_exchange(NOTIFIED, EMPTY, Acquire, Relaxed).is_ok()
    }

    /// The LWP, after the thread suspended to park. `true`: the thread is parked and only an
    /// `unpark` may reschedule it. `false`: a permit arrived during the switch; it is consumed and
    /// the LWP must reschedule the thread itself.
    #[inline]
    pub(crate) fn commit_park(&self) -> bool {
        match self.0.compare_exchange(EMPTY, PARKED, AcqRel, Acquire) {
            Ok(_) => true,
            Err(_notified) => {
                self.0.store(EMPTY, Relaxed);
                false
            }
        }
    }

    /// Gives the thread a permit. `true`: the thread was parked, and the caller must now put it on
    /// a run queue (nobody else will).
    #[inline]
    pub(crate) fn unpark(&self) -> bool {
        let mut cur = self.0.load(Acquire);
        loop {
            let (next, reschedule) = match cur {
                EMPTY => (NOTIFIED, false),
                PARKED => (EMPTY, true),
                _ => return false, // already notified
            };
            match self.0.compare_exchange_weak(cur, next, AcqRel, Acquire) {
                Ok(_) => return reschedule,
                Err(actual) => cur = actual,
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn permit_before_park_is_consumed() {
        let p = ParkState::new();
        assert!(!p.unpark());
        assert!(p.try_consume_permit());
        assert!(!p.try_consume_permit());
    }

    #[test]
    fn unpark_after_commit_reschedules_once() {
        let p = ParkState::new();
        assert!(!p.try_consume_permit());
        assert!(p.commit_park());
        assert!(p.unpark());
        assert!(!p.unpark(), "second unpark only leaves a permit");
        assert!(p.try_consume_permit());
    }

    #[test]
    fn unpark_during_switch_makes_commit_fail() {
        let p = ParkState::new();
        assert!(!p.try_consume_permit());
        assert!(!p.unpark());
        assert!(!p.commit_park(), "LWP must reschedule");
        assert!(!p.try_consume_permit(), "permit was consumed by the reschedule");
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::sync::atomic::AtomicUsize;

    /// The parking side: the thread tries its permit, else "suspends" and its LWP commits the park
    /// (requeueing it if a permit came meanwhile). Returns whether it went on without suspending.
    fn park_once(st: &ParkState, queued: &AtomicUsize) -> bool {
        if st.try_consume_permit() {
            return true;
        }
        if !st.commit_park() {
            queued.fetch_add(1, SeqCst);
        }
        false
    }

    fn unparker(st: &Arc<ParkState>, queued: &Arc<AtomicUsize>) -> loom::thread::JoinHandle<()> {
        let (s2, q2) = (st.clone(), queued.clone());
        loom::thread::spawn(move || {
            if s2.unpark() {
                q2.fetch_add(1, SeqCst);
            }
        })
    }

    /// One parker (thread + its LWP) against one unparker: the thread ends up rescheduled exactly
    /// once (by the LWP or by the unparker), or consumed the permit without suspending.
    #[test]
    fn loom_park_unpark_handoff() {
        loom::model(|| {
            let st = Arc::new(ParkState::new());
            let queued = Arc::new(AtomicUsize::new(0));
            let u = unparker(&st, &queued);
            let ran_on = park_once(&st, &queued);
            u.join().unwrap();
            let q = queued.load(SeqCst);
            assert!(ran_on && q == 0 || !ran_on && q == 1, "ran_on={ran_on} queued={q}");
        });
    }

    /// Two unparkers race: still exactly one reschedule.
    #[test]
    fn loom_two_unparkers() {
        loom::model(|| {
            let st = Arc::new(ParkState::new());
            let queued = Arc::new(AtomicUsize::new(0));
            let us = [unparker(&st, &queued), unparker(&st, &queued)];
            let ran_on = park_once(&st, &queued);
            for u in us {
                u.join().unwrap();
            }
            let q = queued.load(SeqCst);
            assert!(q <= 1);
            assert!(ran_on || q == 1);
        });
    }
}
