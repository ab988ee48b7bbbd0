//! The lock-free state of a started partitioned operation: one flag per partition (marked ready
//! by `MPI_Pready` on the sender, arrived by a receive's monitor on the receiver) and the
//! countdown of partition messages still to complete, whose last arrival signals the operation's
//! condition.
//!
//! Who touches it: any number of program threads marking partitions at once
//! (`MPI_THREAD_MULTIPLE`), nmad monitors in progression contexts counting completions, and
//! waiters reading. A partition is marked once (`swap`: the first marker sends it; a second
//! `MPI_Pready` of the same partition does nothing, as in MPICH); the countdown reaches zero once,
//! and the thread that takes it there signals. Release/acquire pairs make what a marker or
//! completer did before visible to whoever sees the flag or the zero (the receiver's data before
//! `MPI_Parrived` says true).
//!
//! Owns these atomics; it must not know what a partition holds. Model-checked with loom
//! (`tests::loom_*`).

use crate::loom::atomic::{AtomicBool, AtomicUsize, Ordering::*};

/// One flag per partition.
pub(crate) struct Marks {
    flags: Box<[AtomicBool]>,
}

impl Marks {
    pub(crate) fn new(n: usize) -> Marks {
        Marks { flags: (0..n).map(|_| AtomicBool::new(false)).collect() }
    }

    /// Marks partition `k`; `true` for the first mark.
    pub(crate) fn mark(&self, k: usize) -> bool {
        !self.flags[k].swap(true, AcqRel)
    }

    /// Whether every partition of `range` is marked.
    pub(crate) fn all(&self, range: std::ops::Range<usize>) -> bool {
        self.flags[range].iter().all(|f| f.load(Acquire))
    }
}

/// Events still awaited.
pub(crate) struct Countdown {
    left: AtomicUsize,
}

impl Countdown {
    pub(crate) fn new(n: usize) -> Countdown {
        Countdown { left: AtomicUsize::new(n) }
    }

    /// One awaited event happened; `true` for the last one (its caller signals).
    pub(crate) fn arrive(&self) -> bool {
        let before = self.left.fetch_sub(1, AcqRel);
        debug_assert!(before > 0, "more arrivals than awaited");
        before == 1
    }

    pub(crate) fn is_done(&self) -> bool {
        self.left.load(Acquire) == 0
    }
}

#[cfg(all(test, loom))]
mod tests {
    use super::*;
    use loom::sync::Arc;
    use loom::sync::atomic::AtomicU32;

    /// Two threads mark partitions 0 and 1 of a send, both try partition 1 again (`MPI_Pready`
    /// twice), and every first mark "sends", whose completion arrives: each partition is sent
    /// once, and exactly one arrival is the last, after every send.
    #[test]
    fn loom_marks_send_each_partition_once_and_the_last_arrival_is_seen_once() {
        loom::model(|| {
            let marks = Arc::new(Marks::new(2));
            let left = Arc::new(Countdown::new(2));
            let sent = Arc::new(AtomicU32::new(0));
            let lasts = Arc::new(AtomicU32::new(0));
            let threads: Vec<_> = [0usize, 1]
                .into_iter()
                .map(|k| {
                    let (marks, left, sent, lasts) =
                        (marks.clone(), left.clone(), sent.clone(), lasts.clone());
                    loom::thread::spawn(move || {
                        for p in [k, 1] {
                            if marks.mark(p) {
                                sent.fetch_add(1, Relaxed);
                                if left.arrive() {
                                    assert_eq!(sent.load(Relaxed), 2, "the last arrival follows every send");
                                    lasts.fetch_add(1, Relaxed);
                                }
                            }
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
            assert_eq!((sent.load(Relaxed), lasts.load(Relaxed)), (2, 1));
            assert!(marks.all(0..2) && left.is_done());
        });
    }

    /// A receive's monitor writes the data then marks the partition; a thread polling
    /// `MPI_Parrived` that sees the mark sees the data.
    #[test]
    fn loom_an_arrived_partition_shows_its_data() {
        loom::model(|| {
            let marks = Arc::new(Marks::new(1));
            let data = Arc::new(AtomicU32::new(0));
            let (m2, d2) = (marks.clone(), data.clone());
            let monitor = loom::thread::spawn(move || {
                d2.store(42, Relaxed);
                m2.mark(0);
            });
            if marks.all(0..1) {
                assert_eq!(data.load(Relaxed), 42);
            }
            monitor.join().unwrap();
        });
    }
}
