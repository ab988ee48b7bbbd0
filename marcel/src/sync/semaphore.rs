//! A counting semaphore that blocks only the calling user thread. A release hands its permit
//! directly to the oldest waiter, so waiters are served in order.

use super::wait_queue::{Wait, WaitQueue};
use crate::loom::atomic::{AtomicUsize, Ordering::*};
use std::time::{Duration, Instant};

const GRANTED: usize = 1;

pub struct Semaphore {
    permits: AtomicUsize,
    queue: WaitQueue,
}

impl Semaphore {
    pub fn new(permits: usize) -> Semaphore {
        Semaphore { permits: AtomicUsize::new(permits), queue: WaitQueue::new() }
    }

    pub fn try_acquire(&self) -> bool {
        let mut p = self.permits.load(Relaxed);
        while p > 0 {
            match self.permits.compare_exchange_weak(p, p - 1, Acquire, Relaxed) {
                Ok(_) => return true,
                Err(x) => p = x,
            }
        }
        false
    }

    pub fn acquire(&self) {
        self.acquire_until(None);
    }

    /// Returns false if no permit came within `timeout`.
    pub fn acquire_timeout(&self, timeout: Duration) -> bool {
        self.acquire_until(Instant::now().checked_add(timeout))
    }

    fn acquire_until(&self, deadline: Option<Instant>) -> bool {
        loop {
            if self.try_acquire() {
                return true;
            }
            match self.queue.wait(0, || self.permits.load(Relaxed) == 0, || {}, |_| {}, deadline) {
                Wait::Notified(GRANTED) => {
                    crate::loom::atomic::fence(Acquire);
                    return true;
                }
                Wait::TimedOut => return false,
                Wait::Notified(_) | Wait::Invalid => {}
            }
        }
    }

    /// Returns one permit: to the oldest waiter if any, else to the count.
    pub fn release(&self) {
        self.queue.notify_one(|u| {
            if u.woke {
                GRANTED
            } else {
                self.permits.fetch_add(1, Release);
                0
            }
        });
    }

    pub fn available_permits(&self) -> usize {
        self.permits.load(Relaxed)
    }
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semaphore").field("permits", &self.available_permits()).finish()
    }
}
