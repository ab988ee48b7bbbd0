//! A condition variable for [`super::Mutex`] that blocks only the calling user thread.
//!
//! A waiter is queued *before* its mutex is released, so a notifier that takes the mutex after
//! it cannot miss it.

use super::mutex::MutexGuard;
use super::wait_queue::{Wait, WaitQueue};
use std::time::{Duration, Instant};

#[derive(Default)]
pub struct Condvar {
    queue: WaitQueue,
}

/// Whether a timed wait returned because time ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitTimeoutResult(bool);

impl WaitTimeoutResult {
    pub fn timed_out(&self) -> bool {
        self.0
    }
}

impl Condvar {
    pub fn new() -> Condvar {
        Condvar { queue: WaitQueue::new() }
    }

    /// Releases the guard's mutex, blocks until notified (or spuriously), and locks it again.
    pub fn wait<T: ?Sized>(&self, guard: &mut MutexGuard<'_, T>) {
        self.wait_until_internal(guard, None);
    }

    /// Waits while `condition` holds.
    pub fn wait_while<T: ?Sized>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        mut condition: impl FnMut(&mut T) -> bool,
    ) {
        while condition(&mut *guard) {
            self.wait(guard);
        }
    }

    /// Like `wait`, for at most `timeout`.
    pub fn wait_for<T: ?Sized>(&self, guard: &mut MutexGuard<'_, T>, timeout: Duration) -> WaitTimeoutResult {
        self.wait_until_internal(guard, Instant::now().checked_add(timeout))
    }

    /// Waits while `condition` holds, for at most `timeout` in all.
    pub fn wait_while_for<T: ?Sized>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        mut condition: impl FnMut(&mut T) -> bool,
        timeout: Duration,
    ) -> WaitTimeoutResult {
        let deadline = Instant::now().checked_add(timeout);
        while condition(&mut *guard) {
            if self.wait_until_internal(guard, deadline).timed_out() {
                return WaitTimeoutResult(condition(&mut *guard));
            }
        }
        WaitTimeoutResult(false)
    }

    fn wait_until_internal<T: ?Sized>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        deadline: Option<Instant>,
    ) -> WaitTimeoutResult {
        let m = guard.mutex;
        // SAFETY: the guard proves we hold the lock; we take it back before returning, so the
        // guard is valid again when the caller next uses it.
        let r = self.queue.wait(0, || true, || unsafe { m.raw_unlock() }, |_| {}, deadline);
        m.raw_lock();
        WaitTimeoutResult(r == Wait::TimedOut)
    }

    /// Wakes one waiter, if any. Returns whether one was woken.
    pub fn notify_one(&self) -> bool {
        self.queue.notify_one(|_| 0)
    }

    /// Wakes every waiter. Returns how many.
    pub fn notify_all(&self) -> usize {
        self.queue.notify_all(0)
    }
}

impl std::fmt::Debug for Condvar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Condvar").finish_non_exhaustive()
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::Mutex;
    use loom::sync::Arc;

    /// A waiter and a notifier: the waiter always sees the flag (no lost wake-up: loom would report
    /// a deadlock with the waiter parked forever).
    #[test]
    fn loom_condvar_notify_one() {
        loom::model(|| {
            let p = Arc::new((Mutex::new(false), Condvar::new()));
            let p2 = p.clone();
            let t = loom::thread::spawn(move || {
                *p2.0.lock() = true;
                p2.1.notify_one();
            });
            let mut g = p.0.lock();
            while !*g {
                p.1.wait(&mut g);
            }
            drop(g);
            t.join().unwrap();
        });
    }

    /// Notify outside the lock, two waiters and notify_all.
    #[test]
    fn loom_condvar_notify_all_outside_lock() {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(2);
        b.check(|| {
            let p = Arc::new((Mutex::new(false), Condvar::new()));
            let waiters: Vec<_> = (0..2)
                .map(|_| {
                    let p = p.clone();
                    loom::thread::spawn(move || {
                        let mut g = p.0.lock();
                        while !*g {
                            p.1.wait(&mut g);
                        }
                    })
                })
                .collect();
            *p.0.lock() = true;
            p.1.notify_all();
            for w in waiters {
                w.join().unwrap();
            }
        });
    }
}
