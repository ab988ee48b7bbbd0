//! A queue that polling loops can check without taking its lock (they run millions of times a
//! second and it is almost always empty).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex};

pub(crate) struct WorkQueue<T> {
    q: Mutex<VecDeque<T>>,
    /// Shared with the driver tasks' probes ([`WorkQueue::length`]), which must not hold the
    /// core.
    len: Arc<AtomicUsize>,
}

impl<T> Default for WorkQueue<T> {
    fn default() -> Self {
        WorkQueue { q: Mutex::new(VecDeque::new()), len: Arc::new(AtomicUsize::new(0)) }
    }
}

impl<T> WorkQueue<T> {
    pub(crate) fn push(&self, v: T) {
        let mut q = self.q.lock().unwrap();
        q.push_back(v);
        self.len.store(q.len(), Release);
    }

    pub(crate) fn pop(&self) -> Option<T> {
        if self.is_empty() {
            return None;
        }
        let mut q = self.q.lock().unwrap();
        let v = q.pop_front();
        self.len.store(q.len(), Release);
        v
    }

    pub(crate) fn take_all(&self) -> VecDeque<T> {
        if self.is_empty() {
            return VecDeque::new();
        }
        let mut q = self.q.lock().unwrap();
        self.len.store(0, Release);
        std::mem::take(&mut *q)
    }

    /// Lock-free; may be stale by one concurrent push or pop.
    pub(crate) fn is_empty(&self) -> bool {
        self.len.load(Acquire) == 0
    }

    /// The queue's length, to read without the queue (as [`WorkQueue::is_empty`] reads it).
    pub(crate) fn length(&self) -> Arc<AtomicUsize> {
        self.len.clone()
    }
}
