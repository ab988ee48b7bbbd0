//! Who holds a virtual processor (VP): the one word that lets a spare kernel thread take over a
//! core's run queue from a kernel thread that blocked in a system call or hogs the core.
//!
//! A VP (one per core: run queues, stack cache, parker) is held by exactly one kernel thread at a
//! time; only the holder touches its owner-only parts. The word packs a phase and a sequence
//! number that changes at every user-thread switch and every change of holder:
//!
//! | phase      | meaning                                        | who may leave it                   |
//! |------------|------------------------------------------------|------------------------------------|
//! | `Sched`    | holder is in scheduler code (queues in use)    | holder only                        |
//! | `User`     | holder runs a user thread                      | holder; monitor (hog) → `Orphan`   |
//! | `Blocking` | holder's user thread is in `marcel::blocking`  | holder; sentinel/monitor → `Orphan`|
//! | `Idle`     | holder found no work (spinning or parked)      | holder only                        |
//! | `Orphan`   | nobody holds it; one adopter was sent for it   | adopter (spare or returning holder)|
//!
//! Taking a VP away (`User`/`Blocking` → `Orphan`) is a CAS on the exact word the taker observed, so
//! it fails if the holder switched threads or returned meanwhile; the holder's own transitions out
//! of `User`/`Blocking` are CASes too, so holder and taker never both believe they hold the VP.
//! Every successful transition bumps nothing but the sequence where noted; `Orphan` always gets a
//! fresh sequence so that a stale adoption order cannot succeed.

use crate::loom::atomic::{AtomicU64, Ordering::*};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// The holder is choosing the next user thread.
    Sched = 0,
    /// The holder runs a user thread.
    User = 1,
    /// The holder's user thread is inside `marcel::blocking`; a spare may adopt the VP.
    Blocking = 2,
    /// The holder found nothing to run (it polls or sleeps).
    Idle = 3,
    /// Nobody holds the VP; a spare kernel thread was sent to adopt it.
    Orphan = 4,
}

const PHASE_BITS: u32 = 3;
const PHASE_MASK: u64 = (1 << PHASE_BITS) - 1;

/// A decoded owner word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Word(u64);

impl Word {
    #[inline]
    pub(crate) fn new(phase: Phase, seq: u64) -> Word {
        Word((seq << PHASE_BITS) | phase as u64)
    }
    #[inline]
    pub(crate) fn phase(self) -> Phase {
        match self.0 & PHASE_MASK {
            0 => Phase::Sched,
            1 => Phase::User,
            2 => Phase::Blocking,
            3 => Phase::Idle,
            _ => Phase::Orphan,
        }
    }
    #[inline]
    pub(crate) fn seq(self) -> u64 {
        self.0 >> PHASE_BITS
    }
}

pub(crate) struct Ownership(AtomicU64);

impl Ownership {
    /// A VP nobody holds yet, waiting for its first adopter with sequence 0.
    pub(crate) fn new_orphan() -> Self {
        Ownership(AtomicU64::new(Word::new(Phase::Orphan, 0).0))
    }

    #[inline]
    pub(crate) fn load(&self) -> Word {
        Word(self.0.load(Acquire))
    }

    /// Holder only, from `Sched` or `Idle` (nobody else writes then).
    #[inline]
    pub(crate) fn set(&self, phase: Phase, seq: u64) {
        self.0.store(Word::new(phase, seq).0, Release);
    }

    /// Holder only, after a user thread switched out: `User(seq)` → `Sched(seq + 1)`.
    /// `Err` means the VP was taken away while the thread ran (hog hand-off).
    #[inline]
    pub(crate) fn end_user_run(&self, seq: u64) -> Result<u64, Word> {
        self.cas(Word::new(Phase::User, seq), Word::new(Phase::Sched, seq + 1)).map(|_| seq + 1)
    }

    /// Holder's user thread about to touch the owned queues (spawn, wake-up): `User(seq)` →
    /// `Sched(seq)`, undone with `set(User, seq)`. `Err`: the VP was taken away meanwhile.
    #[inline]
    pub(crate) fn lock_queues(&self, seq: u64) -> Result<(), Word> {
        self.cas(Word::new(Phase::User, seq), Word::new(Phase::Sched, seq))
    }

    /// Holder's user thread entering `blocking`: `User(seq)` → `Blocking(seq)`.
    #[inline]
    pub(crate) fn enter_blocking(&self, seq: u64) -> Result<(), Word> {
        self.cas(Word::new(Phase::User, seq), Word::new(Phase::Blocking, seq))
    }

    /// Holder's user thread leaving `blocking`. `Ok(seq)`: it still holds the VP (possibly taken
    /// back from `Orphan` before any spare adopted it; the sequence may then have changed).
    /// `Err`: a spare adopted the VP; the caller goes on without one.
    #[inline]
    pub(crate) fn leave_blocking(&self, seq: u64) -> Result<u64, Word> {
        match self.cas(Word::new(Phase::Blocking, seq), Word::new(Phase::User, seq)) {
            Ok(()) => Ok(seq),
            Err(w) if w.phase() == Phase::Orphan => {
                let s = w.seq();
                self.cas(w, Word::new(Phase::User, s)).map(|()| s)
            }
            Err(w) => Err(w),
        }
    }

    /// Sentinel or monitor: takes the VP away from a holder observed as `seen` (`User` or
    /// `Blocking`). On success returns the orphan sequence the adopter must present.
    #[inline]
    pub(crate) fn orphan(&self, seen: Word) -> Option<u64> {
        debug_assert!(matches!(seen.phase(), Phase::User | Phase::Blocking));
        let seq = seen.seq() + 1;
        self.cas(seen, Word::new(Phase::Orphan, seq)).ok().map(|()| seq)
    }

    /// Adopter: `Orphan(seq)` → `Sched(seq)`. Fails if the order is stale or the former holder
    /// took the VP back first.
    #[inline]
    pub(crate) fn adopt(&self, seq: u64) -> bool {
        self.cas(Word::new(Phase::Orphan, seq), Word::new(Phase::Sched, seq)).is_ok()
    }

    /// Holder giving the VP up on shutdown.
    pub(crate) fn release(&self, seq: u64) {
        self.set(Phase::Orphan, seq + 1);
    }

    #[inline]
    fn cas(&self, from: Word, to: Word) -> Result<(), Word> {
        self.0.compare_exchange(from.0, to.0, AcqRel, Acquire).map(|_| ()).map_err(Word)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn holder_cycle() {
        let o = Ownership::new_orphan();
        assert!(o.adopt(0));
        o.set(Phase::User, 0);
        assert_eq!(o.end_user_run(0), Ok(1));
        o.set(Phase::User, 1);
        o.enter_blocking(1).unwrap();
        assert_eq!(o.leave_blocking(1), Ok(1));
    }

    #[test]
    fn rescued_blocking_call_loses_vp() {
        let o = Ownership::new_orphan();
        assert!(o.adopt(0));
        o.set(Phase::User, 0);
        o.enter_blocking(0).unwrap();
        let seen = o.load();
        let s = o.orphan(seen).unwrap();
        assert!(o.adopt(s));
        assert!(o.leave_blocking(0).is_err());
    }

    #[test]
    fn returning_holder_beats_slow_adopter() {
        let o = Ownership::new_orphan();
        assert!(o.adopt(0));
        o.set(Phase::User, 0);
        o.enter_blocking(0).unwrap();
        let s = o.orphan(o.load()).unwrap();
        assert_eq!(o.leave_blocking(0), Ok(s));
        assert!(!o.adopt(s), "stale adoption order");
        assert_eq!(o.end_user_run(s), Ok(s + 1));
    }

    #[test]
    fn hog_handoff_is_seen_at_next_switch() {
        let o = Ownership::new_orphan();
        assert!(o.adopt(0));
        o.set(Phase::User, 7);
        let s = o.orphan(o.load()).unwrap();
        assert!(o.end_user_run(7).is_err());
        assert!(o.adopt(s));
    }

    #[test]
    fn stale_observation_cannot_orphan() {
        let o = Ownership::new_orphan();
        assert!(o.adopt(0));
        o.set(Phase::User, 3);
        let seen = o.load();
        assert_eq!(o.end_user_run(3), Ok(4));
        assert!(o.orphan(seen).is_none());
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::sync::atomic::AtomicUsize;

    /// A holder leaves `blocking` while a sentinel orphans the VP and a spare adopts it: exactly one
    /// of them ends up holding the VP, and the holder-only data is never touched by both.
    #[test]
    fn loom_blocking_rescue_race() {
        loom::model(|| {
            let o = Arc::new(Ownership::new_orphan());
            assert!(o.adopt(0));
            o.set(Phase::User, 0);
            o.enter_blocking(0).unwrap();
            let holders = Arc::new(AtomicUsize::new(0));
            let (o2, h2) = (o.clone(), holders.clone());
            let rescuer = loom::thread::spawn(move || {
                let seen = o2.load();
                if seen.phase() == Phase::Blocking {
                    if let Some(s) = o2.orphan(seen) {
                        if o2.adopt(s) {
                            h2.fetch_add(1, SeqCst);
                        }
                    }
                }
            });
            if o.leave_blocking(0).is_ok() {
                holders.fetch_add(1, SeqCst);
            }
            rescuer.join().unwrap();
            assert_eq!(holders.load(SeqCst), 1);
        });
    }

    /// A hog hand-off racing with the holder's own switch: exactly one holder afterwards.
    #[test]
    fn loom_hog_handoff_race() {
        loom::model(|| {
            let o = Arc::new(Ownership::new_orphan());
            assert!(o.adopt(0));
            o.set(Phase::User, 5);
            let holders = Arc::new(AtomicUsize::new(0));
            let (o2, h2) = (o.clone(), holders.clone());
            let monitor = loom::thread::spawn(move || {
                let seen = o2.load();
                if seen.phase() == Phase::User {
                    if let Some(s) = o2.orphan(seen) {
                        if o2.adopt(s) {
                            h2.fetch_add(1, SeqCst);
                        }
                    }
                }
            });
            if o.end_user_run(5).is_ok() {
                holders.fetch_add(1, SeqCst);
            }
            monitor.join().unwrap();
            assert_eq!(holders.load(SeqCst), 1);
        });
    }
}
