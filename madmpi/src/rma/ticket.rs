//! The FIFO reader/writer ticket lock of the intra-node fast path (Mellor-Crummey and Scott),
//! over two words in shared memory: requests and completions, each counting readers in its low
//! 32 bits and writers in its high 32 bits. A writer takes a ticket (the requests before it)
//! and enters once every earlier reader and writer completed; a reader enters once every
//! earlier writer completed. Entry is in request order between writers and readers, so a
//! writer waiting is never starved by readers arriving later.
//!
//! Owns the rule only; the words live in the window's control area (`shm`), and a loom model
//! checks mutual exclusion and progress under every interleaving.

use std::sync::atomic::Ordering::{self, *};

/// An atomic word: std's in shared memory, loom's in the model.
pub(crate) trait Word {
    fn fetch_add(&self, v: u64, o: Ordering) -> u64;
    fn load(&self, o: Ordering) -> u64;
    fn store(&self, v: u64, o: Ordering);
}

impl Word for std::sync::atomic::AtomicU64 {
    fn fetch_add(&self, v: u64, o: Ordering) -> u64 {
        self.fetch_add(v, o)
    }
    fn load(&self, o: Ordering) -> u64 {
        self.load(o)
    }
    fn store(&self, v: u64, o: Ordering) {
        self.store(v, o)
    }
}

#[cfg(loom)]
impl Word for loom::sync::atomic::AtomicU64 {
    fn fetch_add(&self, v: u64, o: Ordering) -> u64 {
        self.fetch_add(v, o)
    }
    fn load(&self, o: Ordering) -> u64 {
        self.load(o)
    }
    fn store(&self, v: u64, o: Ordering) {
        self.store(v, o)
    }
}

/// One reader, in the requests and completions words.
const READER: u64 = 1;
/// One writer.
const WRITER: u64 = 1 << 32;

/// A lock's two words.
pub(crate) struct Ticket<'a, W: Word> {
    pub(crate) requests: &'a W,
    pub(crate) done: &'a W,
}

impl<W: Word> Ticket<'_, W> {
    /// Takes the lock (`exclusive`: as a writer); `wait` spins or yields until its condition.
    pub(crate) fn lock(&self, exclusive: bool, wait: impl Fn(&dyn Fn() -> bool)) {
        // The first look is inline: an uncontended lock is one increment and one load.
        if exclusive {
            let ticket = self.requests.fetch_add(WRITER, Acquire);
            let ready = || self.done.load(Acquire) == ticket;
            if !ready() {
                wait(&ready);
            }
        } else {
            let ticket = self.requests.fetch_add(READER, Acquire);
            let ready = || self.done.load(Acquire) >> 32 == ticket >> 32;
            if !ready() {
                wait(&ready);
            }
        }
    }

    pub(crate) fn unlock(&self, exclusive: bool) {
        if exclusive {
            // Nobody else writes the completions while a writer holds the lock (readers before
            // it completed, later ones only wait): a plain store, not a locked instruction.
            self.done.store(self.done.load(Relaxed) + WRITER, Release);
        } else {
            self.done.fetch_add(READER, Release);
        }
    }
}

#[cfg(all(test, loom))]
mod model {
    use super::*;
    use loom::sync::Arc;
    use loom::sync::atomic::{AtomicU64, AtomicUsize};

    fn spin(ready: &dyn Fn() -> bool) {
        while !ready() {
            loom::thread::yield_now();
        }
    }

    /// Threads taking the lock `rounds` times each, exclusively where `kinds` says: never a
    /// reader inside with a writer nor two writers together, and everyone gets in every time
    /// (preemptions bounded: the spins make the full space too large).
    fn model(kinds: &'static [bool], rounds: usize, preemptions: usize) {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(preemptions);
        b.max_branches = 100_000;
        b.check(move || {
            let words = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
            // Readers inside (low bits) and writers inside (1 << 16 each).
            let inside = Arc::new(AtomicUsize::new(0));
            let threads: Vec<_> = kinds
                .iter()
                .map(|&exclusive| {
                    let (words, inside) = (words.clone(), inside.clone());
                    loom::thread::spawn(move || {
                        let t = Ticket { requests: &words.0, done: &words.1 };
                        for _ in 0..rounds {
                            t.lock(exclusive, spin);
                            let me = if exclusive { 1 << 16 } else { 1 };
                            let before = inside.fetch_add(me, SeqCst);
                            assert!(if exclusive { before == 0 } else { before < 1 << 16 }, "{before:#x}");
                            inside.fetch_sub(me, SeqCst);
                            t.unlock(exclusive);
                        }
                    })
                })
                .collect();
            threads.into_iter().for_each(|t| t.join().unwrap());
            assert_eq!(words.0.load(SeqCst), words.1.load(SeqCst), "every request completed");
        });
    }

    #[test]
    fn loom_ticket_lock_excludes_writers_and_admits_all() {
        model(&[true, false], 2, 2);
    }

    /// Two writers and a reader once each: a writer's unlock is a plain store of the
    /// completions, which nobody else may write meanwhile.
    #[test]
    fn loom_two_writers_and_a_reader_complete_in_turn() {
        model(&[true, false, true], 1, 1);
    }
}
