//! A mutual-exclusion lock that blocks only the calling user thread.
//!
//! State word: LOCKED, and PARKED (some waiter may sleep in the queue). Unlocking wakes one
//! waiter and lets it compete (throughput); a waiter that lost that race once is handed the lock
//! directly at the next unlock, so nobody starves.

use super::wait_queue::{Wait, WaitQueue};
use crate::loom::UnsafeCell;
use crate::loom::atomic::{AtomicU8, Ordering::*};
use std::ops::{Deref, DerefMut};

const LOCKED: u8 = 1;
const PARKED: u8 = 2;
const HANDOFF: usize = 1;
/// Spins before queueing: only useful when the holder runs on another LWP.
const SPINS: u32 = 40;

pub struct Mutex<T: ?Sized> {
    state: AtomicU8,
    queue: WaitQueue,
    data: UnsafeCell<T>,
}

// SAFETY: the lock gives exclusive access to `data`; T: Send is enough, as for std's Mutex.
unsafe impl<T: ?Sized + Send> Send for Mutex<T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send> Sync for Mutex<T> {}

#[must_use = "the lock is released when the guard drops"]
pub struct MutexGuard<'a, T: ?Sized> {
    pub(crate) mutex: &'a Mutex<T>,
}

// SAFETY: a guard only gives access to T, like std's guard (Sync when T is Sync).
unsafe impl<T: ?Sized + Sync> Sync for MutexGuard<'_, T> {}

impl<T> Mutex<T> {
    pub fn new(value: T) -> Mutex<T> {
        Mutex { state: AtomicU8::new(0), queue: WaitQueue::new(), data: UnsafeCell::new(value) }
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Mutex::new(T::default())
    }
}

impl<T: ?Sized> Mutex<T> {
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.raw_lock();
        MutexGuard { mutex: self }
    }

    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        let mut s = self.state.load(Relaxed);
        while s & LOCKED == 0 {
            match self.state.compare_exchange_weak(s, s | LOCKED, Acquire, Relaxed) {
                Ok(_) => return Some(MutexGuard { mutex: self }),
                Err(x) => s = x,
            }
        }
        None
    }

    pub fn is_locked(&self) -> bool {
        self.state.load(Relaxed) & LOCKED != 0
    }

    #[inline]
    pub(crate) fn raw_lock(&self) {
        if self.state.compare_exchange_weak(0, LOCKED, Acquire, Relaxed).is_err() {
            self.lock_slow();
        }
    }

    #[cold]
    fn lock_slow(&self) {
        let mut spins = 0;
        let mut bounced = 0usize;
        loop {
            let s = self.state.load(Relaxed);
            if s & LOCKED == 0 {
                if self.state.compare_exchange_weak(s, s | LOCKED, Acquire, Relaxed).is_ok() {
                    return;
                }
                continue;
            }
            if s & PARKED == 0 {
                if spins < SPINS {
                    spins += 1;
                    crate::loom::spin_hint();
                    continue;
                }
                if self.state.compare_exchange_weak(s, s | PARKED, Relaxed, Relaxed).is_err() {
                    continue;
                }
            }
            let validate = || self.state.load(Relaxed) == LOCKED | PARKED;
            match self.queue.wait(bounced, validate, || {}, |_| {}, None) {
                Wait::Notified(HANDOFF) => {
                    // The unlocker kept the lock held for us; pair with its Release.
                    crate::loom::atomic::fence(Acquire);
                    return;
                }
                Wait::Notified(_) => {
                    bounced += 1;
                    spins = 0;
                }
                Wait::Invalid | Wait::TimedOut => {}
            }
        }
    }

    /// # Safety
    /// The caller holds the lock (through a guard it forgets, or a Condvar wait).
    #[inline]
    pub(crate) unsafe fn raw_unlock(&self) {
        if self.state.compare_exchange(LOCKED, 0, Release, Relaxed).is_err() {
            self.unlock_slow();
        }
    }

    #[cold]
    fn unlock_slow(&self) {
        self.queue.notify_one(|u| {
            if u.woke && u.tag > 0 {
                // Hand the lock over: it stays LOCKED, now owned by the woken waiter.
                self.state.store(if u.more { LOCKED | PARKED } else { LOCKED }, Release);
                HANDOFF
            } else {
                self.state.store(if u.more { PARKED } else { 0 }, Release);
                0
            }
        });
    }

    pub fn get_mut(&mut self) -> &mut T {
        // SAFETY: `&mut self` proves nobody else can access the data.
        self.data.with_mut(|p| unsafe { &mut *p })
    }
}

impl<T> Mutex<T> {
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves we hold the lock.
        self.mutex.data.with(|p| unsafe { &*p })
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard proves we hold the lock, and `&mut self` that this is the only access.
        self.mutex.data.with_mut(|p| unsafe { &mut *p })
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        // SAFETY: the guard proves we hold the lock.
        unsafe { self.mutex.raw_unlock() }
    }
}

impl<T: ?Sized + std::fmt::Debug> std::fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.try_lock() {
            Some(g) => f.debug_struct("Mutex").field("data", &&*g).finish(),
            None => f.debug_struct("Mutex").field("data", &"<locked>").finish(),
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    /// Two threads increment under the lock; with the spin phase skipped quickly under loom, the
    /// queue/park/hand-off paths are explored. A lost wake-up shows as a loom deadlock.
    #[test]
    fn loom_mutex_two_threads() {
        loom::model(|| {
            let m = Arc::new(Mutex::new(0u32));
            let m2 = m.clone();
            let t = loom::thread::spawn(move || {
                *m2.lock() += 1;
            });
            *m.lock() += 1;
            t.join().unwrap();
            assert_eq!(*m.lock(), 2);
        });
    }

    /// Three contenders (bounded preemptions keep the state space tractable).
    #[test]
    fn loom_mutex_three_threads() {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(2);
        b.check(|| {
            let m = Arc::new(Mutex::new(0u32));
            let ts: Vec<_> = (0..2)
                .map(|_| {
                    let m = m.clone();
                    loom::thread::spawn(move || {
                        *m.lock() += 1;
                    })
                })
                .collect();
            *m.lock() += 1;
            for t in ts {
                t.join().unwrap();
            }
            assert_eq!(*m.lock(), 3);
        });
    }
}
