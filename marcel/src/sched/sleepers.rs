//! Which VPs are idle, and the protocol that keeps a runnable thread from waiting while a VP
//! sleeps (no lost wake-up).
//!
//! An idle VP first *searches* (spins over the queues and the idle hooks), then *sleeps* on its
//! parker. Whoever makes a thread runnable in a shared queue calls [`Sleepers::notify_one`], which
//! wakes a sleeping VP only if nobody is searching: a searcher will find the thread.
//!
//! The race: a VP decides to sleep while a thread is queued. The sleeper registers (SeqCst), then
//! re-checks the queues; the notifier queues, then (SeqCst fence) reads the counters. In the
//! single total order one of them sees the other. `loom_tests` checks it with real queues.

use crate::loom::Mutex;
use crate::loom::atomic::{AtomicUsize, Ordering::*, fence};

pub(crate) struct Sleepers {
    searching: AtomicUsize,
    sleeping: AtomicUsize,
    list: Mutex<Vec<usize>>,
}

impl Sleepers {
    pub(crate) fn new(n: usize) -> Self {
        Sleepers {
            searching: AtomicUsize::new(0),
            sleeping: AtomicUsize::new(0),
            list: Mutex::new(Vec::with_capacity(n)),
        }
    }

    /// A VP starts looking for work.
    #[inline]
    pub(crate) fn begin_search(&self) {
        self.searching.fetch_add(1, SeqCst);
    }

    /// A searching VP found work. If it was the last searcher and more work may be waiting
    /// (`more`), wake a sleeper so that someone keeps looking (returns the VP to unpark).
    #[inline]
    pub(crate) fn found_work(&self, more: bool) -> Option<usize> {
        if self.searching.fetch_sub(1, SeqCst) == 1 && more { self.pop_sleeper() } else { None }
    }

    /// A searching VP gives up and goes to sleep: it is registered *before* it stops searching,
    /// and must re-check every queue after this returns, before it parks.
    pub(crate) fn sleep(&self, vp: usize) {
        {
            let mut l = self.list.lock().unwrap();
            l.push(vp);
            self.sleeping.fetch_add(1, SeqCst);
        }
        self.searching.fetch_sub(1, SeqCst);
        fence(SeqCst);
    }

    /// A VP that registered with `sleep` is running again (it found work on its re-check, or was
    /// woken). Removes it from the list if a notifier did not already.
    pub(crate) fn awake(&self, vp: usize) {
        let mut l = self.list.lock().unwrap();
        if let Some(i) = l.iter().position(|&v| v == vp) {
            l.swap_remove(i);
            self.sleeping.fetch_sub(1, SeqCst);
        }
    }

    /// Called after making a thread runnable in a queue any VP may take from. Returns the VP the
    /// caller must unpark, if one must be woken.
    #[inline]
    pub(crate) fn notify_one(&self) -> Option<usize> {
        fence(SeqCst);
        if self.searching.load(SeqCst) != 0 || self.sleeping.load(SeqCst) == 0 {
            return None;
        }
        self.pop_sleeper()
    }

    fn pop_sleeper(&self) -> Option<usize> {
        let mut l = self.list.lock().unwrap();
        let v = l.pop()?;
        self.sleeping.fetch_sub(1, SeqCst);
        Some(v)
    }

    /// VPs registered as sleeping.
    pub(crate) fn sleeping(&self) -> usize {
        self.sleeping.load(Relaxed)
    }

    /// VPs searching for work.
    pub(crate) fn searching(&self) -> usize {
        self.searching.load(Relaxed)
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::loom::atomic::AtomicU32;
    use crate::parker::Parker;
    use loom::sync::Arc;

    /// One idle VP against one producer that queues a thread: the VP always ends up with it (a lost
    /// wake-up would leave the VP parked forever, which loom reports as a deadlock). The queue is
    /// an atomic slot written with Release and read with Acquire, like crossbeam's deque (a lock
    /// here would hide missing fences).
    #[test]
    fn loom_no_lost_wakeup() {
        loom::model(|| {
            let s = Arc::new(Sleepers::new(1));
            let slot = Arc::new(AtomicU32::new(0));
            let parker = Arc::new(Parker::new());
            let (s2, q2, p2) = (s.clone(), slot.clone(), parker.clone());
            let producer = loom::thread::spawn(move || {
                q2.store(7, Release);
                if let Some(0) = s2.notify_one() {
                    p2.unpark();
                }
            });
            // The idle VP (index 0).
            let take = || match slot.load(Acquire) {
                0 => None,
                v => slot.compare_exchange(v, 0, AcqRel, Acquire).ok(),
            };
            s.begin_search();
            let got = loop {
                if let Some(t) = take() {
                    let _ = s.found_work(false);
                    break t;
                }
                s.sleep(0);
                if let Some(t) = take() {
                    s.awake(0);
                    break t;
                }
                parker.park(None);
                s.awake(0);
                s.begin_search();
            };
            assert_eq!(got, 7);
            producer.join().unwrap();
        });
    }
}
