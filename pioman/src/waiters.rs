//! Who waits in the library on a NUMA node now — spinning on its sources, or sleeping in their
//! blocking waits — and the *handover*: a progression thread that stands back while waiters
//! cover the sources asks the last waiter to leave to wake it (the engine arms the thread's
//! alarm: `handover_alarm`), so that it takes the sources over once the application has left
//! the library, not at its next tick (which a passive
//! target's first operation would otherwise wait for).
//!
//! The protocol is a store-then-load on each side, all sequentially consistent (see
//! `after_decrement` for how the loom model sees it): a waiter leaving the library has
//! decremented its count, then reads both counts and the request; the progression thread stores
//! the request, then reads both counts. Either the thread sees nobody and does not park for
//! them, or a last waiter sees the request and wakes it (two waiters leaving together may both
//! see themselves last; the request is taken once). Moving from spinning to sleeping is not
//! leaving: only the end of a wait hands over. It owns these words; who is woken, how, and when
//! a wait ends, are the engine's business.

use crate::loom::atomic::{AtomicBool, AtomicUsize, Ordering::*, fence};

/// Orders a waiter's decrement before its reads. The decrement is a sequentially consistent
/// read-modify-write: the memory model orders it before the later sequentially consistent loads
/// already (and on x86 it is a full barrier), so production code needs no fence on this path,
/// taken at every wait's end. Loom models sequentially consistent accesses as acquire/release
/// only (its fences fully): the model needs the fence spelled out.
#[inline]
fn after_decrement() {
    #[cfg(loom)]
    fence(SeqCst);
}

/// Which kind of wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Spin,
    Block,
}

#[derive(Default)]
pub(crate) struct Waiters {
    spinning: AtomicUsize,
    blocking: AtomicUsize,
    handover: AtomicBool,
}

impl Waiters {
    fn count(&self, kind: Kind) -> &AtomicUsize {
        match kind {
            Kind::Spin => &self.spinning,
            Kind::Block => &self.blocking,
        }
    }

    pub(crate) fn enter(&self, kind: Kind) {
        self.count(kind).fetch_add(1, SeqCst);
    }

    /// A waiter stops waiting this way (it may wait the other way next, still in the library):
    /// `true` if it was the last of its kind.
    pub(crate) fn leave(&self, kind: Kind) -> bool {
        self.count(kind).fetch_sub(1, SeqCst) == 1
    }

    /// A waiter that left ([`Waiters::leave`]) returns to the application: `true` when nobody
    /// waits any more and a progression thread asked for the handover (the caller wakes it;
    /// once per request).
    pub(crate) fn left_library(&self) -> bool {
        after_decrement();
        self.spinning.load(SeqCst) == 0
            && self.blocking.load(SeqCst) == 0
            && self.handover.load(SeqCst)
            && self.handover.swap(false, SeqCst)
    }

    /// How many spin now.
    pub(crate) fn spinning(&self) -> usize {
        self.spinning.load(Relaxed)
    }

    /// How many wait now, spinning or sleeping.
    pub(crate) fn waiting(&self) -> usize {
        self.spinning.load(Relaxed) + self.blocking.load(Relaxed)
    }

    pub(crate) fn any(&self, kind: Kind) -> bool {
        self.count(kind).load(Acquire) > 0
    }

    /// A progression thread is about to sleep because waiters cover the sources: asks the last
    /// one to wake it. `false` if nobody waits any more (nobody would: do not sleep for them;
    /// a waiter that left meanwhile may still wake it once, spuriously).
    pub(crate) fn ask_handover(&self) -> bool {
        self.handover.store(true, SeqCst);
        fence(SeqCst); // rare (at most once per tick): spelled out, as loom needs it
        if self.spinning.load(SeqCst) > 0 || self.blocking.load(SeqCst) > 0 {
            return true;
        }
        self.handover.store(false, Relaxed);
        false
    }

    /// Whether a request is still pending (not taken by a leaving waiter, not withdrawn).
    pub(crate) fn pending(&self) -> bool {
        self.handover.load(Acquire)
    }

    /// After an asked sleep: whether the last waiter took the request (the application left
    /// the library), rather than the sleep timing out. Withdraws a request still pending.
    pub(crate) fn handed_over(&self) -> bool {
        !self.handover.swap(false, AcqRel)
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    fn leaves(w: &Waiters, kind: Kind) -> bool {
        w.leave(kind);
        w.left_library()
    }

    /// A progression thread that parks for waiters is always unparked by the last to leave,
    /// whichever kinds they are, and exactly once.
    #[test]
    fn loom_a_parked_thread_is_unparked_once_by_the_last_waiter() {
        for kinds in [[Kind::Spin, Kind::Spin], [Kind::Spin, Kind::Block]] {
            loom::model(move || {
                let w = Arc::new(Waiters::default());
                kinds.iter().for_each(|&k| w.enter(k));
                let ts: Vec<_> = kinds
                    .iter()
                    .map(|&k| {
                        let w = w.clone();
                        loom::thread::spawn(move || leaves(&w, k))
                    })
                    .collect();
                let parks = w.ask_handover();
                let unparks = ts.into_iter().map(|t| t.join().unwrap()).filter(|&u| u).count();
                // A request withdrawn because everybody had left may still have been taken:
                // one spurious unpark (the thread's next park ends early), never a lost one.
                if parks {
                    assert_eq!(unparks, 1, "parked, unparked {unparks} times");
                } else {
                    assert!(unparks <= 1, "not parked, unparked {unparks} times");
                }
                if parks {
                    assert!(w.handed_over(), "the request was taken");
                }
            });
        }
    }

    /// A waiter that has not left keeps the thread parked: the request stays pending.
    #[test]
    fn loom_a_waiter_still_inside_never_hands_over() {
        loom::model(|| {
            let w = Arc::new(Waiters::default());
            w.enter(Kind::Block);
            w.enter(Kind::Spin);
            let t = {
                let w = w.clone();
                loom::thread::spawn(move || leaves(&w, Kind::Spin))
            };
            let parks = w.ask_handover();
            assert!(parks, "a waiter is inside");
            assert!(!t.join().unwrap(), "the blocking waiter is still inside");
            assert!(!w.handed_over());
        });
    }
}
