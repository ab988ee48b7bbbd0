//! A small lock for hot, short critical sections (the shm driver's send side and poll state, the
//! MPI library's express request slots): taken with one compare-and-swap, released with a plain
//! store. `std::sync::Mutex` releases with an atomic swap, a second full barrier on x86 on
//! every send, every poll, every request.
//!
//! Critical sections must be short (at most one 64 KiB copy), so waiters spin, then yield. It
//! owns only the lock word; no poisoning (a guard dropped by a panic releases the lock, and its
//! users keep their data consistent at every step).

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering::*};

pub struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the lock gives one thread at a time access to `value`, so sharing the lock only moves
// `T` between threads.
unsafe impl<T: Send> Sync for SpinLock<T> {}

pub struct Guard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> SpinLock<T> {
    pub const fn new(value: T) -> SpinLock<T> {
        SpinLock { locked: AtomicBool::new(false), value: UnsafeCell::new(value) }
    }

    pub fn try_lock(&self) -> Option<Guard<'_, T>> {
        self.locked.compare_exchange(false, true, Acquire, Relaxed).ok().map(|_| Guard { lock: self })
    }

    pub fn lock(&self) -> Guard<'_, T> {
        let mut spins = 0u32;
        loop {
            if let Some(g) = self.try_lock() {
                return g;
            }
            while self.locked.load(Relaxed) {
                spins += 1;
                if spins < 200 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
    }
}

impl<T: Default> Default for SpinLock<T> {
    fn default() -> Self {
        SpinLock::new(T::default())
    }
}

impl<T> Deref for Guard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock: no other reference to the value exists.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for Guard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as above, and `&mut self` makes this reference unique.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for Guard<'_, T> {
    fn drop(&mut self) {
        self.lock.locked.store(false, Release);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn excludes_and_releases() {
        let l = SpinLock::new(0u64);
        let g = l.lock();
        assert!(l.try_lock().is_none(), "held");
        drop(g);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        *l.lock() += 1;
                    }
                });
            }
        });
        assert_eq!(*l.try_lock().unwrap(), 40_000);
    }
}
