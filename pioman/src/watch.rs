//! Who sleeps in the sources' fds: one context per NUMA node (the *watcher*); the other blocked
//! waiters sleep on their own doorbells.
//!
//! When several threads block at once (MPI_THREAD_MULTIPLE with more threads than cores), letting
//! all of them sleep in the same level-triggered fds wakes them all at every event: each wakes,
//! re-arms, finds the source taken by another context, and sleeps again; under a loaded scheduler
//! every message then costs several context switches and the job crawls. With one watcher, an
//! event wakes one thread; it polls, and whoever's request it completes is woken through its
//! doorbell (the condition's wake table). A waiter that leaves hands the watch over: it rings one
//! passive sleeper, which takes the token.
//!
//! Hand-over protocol (loom-modelled below): the leaving watcher clears the token, then looks at
//! the passive list; a passive sleeper registers in the list, then tries the token. One of the two
//! sees the other: nobody stays asleep while the fds are unwatched.
//!
//! It owns the token and the list; it does not sleep or poll itself (the engine does).

use crate::loom::Mutex;
use crate::loom::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};

/// A way to wake a passive sleeper.
pub(crate) trait Bell {
    fn ring(&self);
}

impl Bell for std::sync::Arc<crate::waitset::Doorbell> {
    fn ring(&self) {
        crate::waitset::Doorbell::ring(self)
    }
}

/// The watch of one NUMA node's blocking-capable sources.
pub(crate) struct Watch<B> {
    taken: AtomicBool,
    passive: Mutex<Vec<(u64, B)>>,
    ids: AtomicU64,
}

/// A registration in the passive list, to pass back to [`Watch::leave_passive`].
pub(crate) struct Passive(u64);

impl<B: Bell + Clone> Watch<B> {
    pub(crate) fn new() -> Watch<B> {
        Watch { taken: AtomicBool::new(false), passive: Mutex::new(Vec::new()), ids: AtomicU64::new(0) }
    }

    /// Takes the watch if nobody holds it.
    pub(crate) fn try_take(&self) -> bool {
        !self.taken.load(SeqCst) && self.taken.compare_exchange(false, true, SeqCst, SeqCst).is_ok()
    }

    /// Gives the watch back. `hand_over`: ring one passive sleeper so that it becomes the watcher
    /// (a waiter leaving for good); a progression thread between two sleeps passes `false`, as it
    /// takes the watch again at once.
    pub(crate) fn release(&self, hand_over: bool) {
        self.taken.store(false, SeqCst);
        if hand_over {
            let bell = self.passive.lock().unwrap().first().map(|(_, b)| b.clone());
            if let Some(b) = bell {
                b.ring();
            }
        }
    }

    /// Registers `bell` as a passive sleeper; `Err(())` (not registered) if the watch was free
    /// and is now the caller's.
    pub(crate) fn enter_passive(&self, bell: B) -> Result<Passive, ()> {
        let id = self.ids.fetch_add(1, SeqCst);
        self.passive.lock().unwrap().push((id, bell));
        if self.try_take() {
            self.leave_passive(Passive(id));
            return Err(());
        }
        Ok(Passive(id))
    }

    /// Ends a passive sleep.
    pub(crate) fn leave_passive(&self, p: Passive) {
        self.passive.lock().unwrap().retain(|(id, _)| *id != p.0);
    }
}

/// A bell that counts its rings (tests and models).
#[cfg(test)]
#[derive(Clone)]
struct Count(Arc<crate::loom::atomic::AtomicUsize>);

#[cfg(all(test, loom))]
use loom::sync::Arc;
#[cfg(all(test, not(loom)))]
use std::sync::Arc;

#[cfg(test)]
impl Bell for Count {
    fn ring(&self) {
        self.0.fetch_add(1, SeqCst);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::atomic::AtomicUsize;

    /// A watcher leaves while another context goes to sleep passively: either the sleeper took
    /// the watch, or it was rung.
    #[test]
    fn loom_a_leaving_watcher_never_strands_a_passive_sleeper() {
        loom::model(|| {
            let w = Arc::new(Watch::<Count>::new());
            assert!(w.try_take());
            let rung = Arc::new(AtomicUsize::new(0));
            let w2 = w.clone();
            let bell = Count(rung.clone());
            // The sleeper registers and then sleeps (here: stays registered until the end).
            let t = loom::thread::spawn(move || w2.enter_passive(bell));
            w.release(true);
            match t.join().unwrap() {
                Err(()) => {} // it became the watcher
                Ok(p) => {
                    assert!(rung.load(SeqCst) > 0, "passive sleeper neither watching nor woken");
                    w.leave_passive(p);
                }
            }
        });
    }

    /// Two contexts race for a free watch: exactly one wins.
    #[test]
    fn loom_one_watcher_at_a_time() {
        loom::model(|| {
            let w = Arc::new(Watch::<Count>::new());
            let w2 = w.clone();
            let t = loom::thread::spawn(move || w2.try_take());
            let a = w.try_take();
            let b = t.join().unwrap();
            assert!(a ^ b);
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn hand_over_rings_the_first_passive_sleeper_only() {
        let w = Watch::<Count>::new();
        assert!(w.try_take() && !w.try_take());
        let (a, b) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let pa = w.enter_passive(Count(a.clone())).ok().unwrap();
        let pb = w.enter_passive(Count(b.clone())).ok().unwrap();
        w.release(false);
        assert_eq!((a.load(SeqCst), b.load(SeqCst)), (0, 0), "a silent release rings nobody");
        assert!(w.try_take());
        w.release(true);
        assert_eq!((a.load(SeqCst), b.load(SeqCst)), (1, 0));
        w.leave_passive(pa);
        assert!(w.try_take());
        w.release(true);
        assert_eq!((a.load(SeqCst), b.load(SeqCst)), (1, 1));
        w.leave_passive(pb);
        assert!(w.enter_passive(Count(a.clone())).is_err(), "a free watch is taken, not waited for");
        assert!(!w.try_take(), "and held");
    }
}
