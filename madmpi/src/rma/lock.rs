//! A window's passive-target lock at its target: shared and exclusive holders and a FIFO queue
//! of waiting requests (the paper's reader/writer queue). A request is granted at once only if
//! nobody waits before it and it is compatible with the holders; a release grants from the
//! front of the queue while it can, so once a writer waits, later readers queue behind it and
//! a stream of readers cannot starve it.
//!
//! Owns the grant rule only (pure state, no waiting, no messages).

use std::collections::VecDeque;

/// A lock's kind (`MPI_LOCK_SHARED`, `MPI_LOCK_EXCLUSIVE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockKind {
    Shared,
    Exclusive,
}

/// The holders and the queue; requesters are window ranks.
#[derive(Debug, Default)]
pub(crate) struct LockQueue {
    readers: u32,
    writer: bool,
    waiting: VecDeque<(u32, LockKind)>,
}

impl LockQueue {
    fn fits(&self, kind: LockKind) -> bool {
        match kind {
            LockKind::Shared => !self.writer,
            LockKind::Exclusive => !self.writer && self.readers == 0,
        }
    }

    fn hold(&mut self, kind: LockKind) {
        match kind {
            LockKind::Shared => self.readers += 1,
            LockKind::Exclusive => self.writer = true,
        }
    }

    /// `who` asks for the lock: whether it holds it now (else it waits in the queue).
    pub(crate) fn request(&mut self, who: u32, kind: LockKind) -> bool {
        if self.waiting.is_empty() && self.fits(kind) {
            self.hold(kind);
            return true;
        }
        self.waiting.push_back((who, kind));
        false
    }

    /// A holder of `kind` releases it: the requesters granted now, in queue order.
    pub(crate) fn release(&mut self, kind: LockKind) -> Vec<(u32, LockKind)> {
        match kind {
            LockKind::Shared => self.readers = self.readers.saturating_sub(1),
            LockKind::Exclusive => self.writer = false,
        }
        let mut granted = Vec::new();
        while let Some(&(who, k)) = self.waiting.front() {
            if !self.fits(k) {
                break;
            }
            self.waiting.pop_front();
            self.hold(k);
            granted.push((who, k));
        }
        granted
    }
}

#[cfg(test)]
mod tests {
    use super::LockKind::{Exclusive, Shared};
    use super::*;

    #[test]
    fn readers_share_and_a_writer_waits_for_them() {
        let mut q = LockQueue::default();
        assert!(q.request(1, Shared));
        assert!(q.request(2, Shared));
        assert!(!q.request(3, Exclusive));
        assert_eq!(q.release(Shared), vec![]);
        assert_eq!(q.release(Shared), vec![(3, Exclusive)]);
    }

    #[test]
    fn a_waiting_writer_is_not_starved_by_later_readers() {
        let mut q = LockQueue::default();
        assert!(q.request(1, Shared));
        assert!(!q.request(2, Exclusive));
        assert!(!q.request(3, Shared), "a reader queues behind the waiting writer");
        assert!(!q.request(4, Shared));
        assert_eq!(q.release(Shared), vec![(2, Exclusive)]);
        assert_eq!(q.release(Exclusive), vec![(3, Shared), (4, Shared)], "the readers behind it together");
    }
}
