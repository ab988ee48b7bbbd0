//! Waking a poller asleep on the wait fd for a deadline that appeared after it went to sleep.
//!
//! A context that sleeps sets the driver's timer fd for the earliest protocol deadline it saw
//! (a retransmission, a probe, a delayed ACK). A send made meanwhile by another thread can
//! arm an earlier one (the first unit in flight arms its probe timeout): that thread must then
//! ring the doorbell, or the retransmission would wait for whatever wakes the sleeper next.
//! The sleeper publishes the deadline it sleeps until, then looks at the links' deadlines
//! again; the sender publishes its deadline, then reads the sleeper's, each side with a SeqCst
//! fence between its store and its load, so one of the two sees the other. A lock orders sleepers among themselves (the
//! last one to leave clears the published deadline).
//!
//! It owns the published deadline and the sleepers' count; it does not touch the fds.

use crate::loom::Mutex;
use crate::loom::atomic::{AtomicU64, Ordering::SeqCst, fence};
use crate::reliable::Micros;

/// No deadline.
pub const NEVER: Micros = u64::MAX;

pub struct Alarm {
    /// Sleepers, and the earliest deadline one of them sleeps until.
    sleepers: Mutex<(u32, Micros)>,
    /// That deadline, published; 0 with nobody asleep (no deadline is earlier: nobody to ring).
    until: AtomicU64,
}

impl Alarm {
    pub fn new() -> Alarm {
        Alarm { sleepers: Mutex::new((0, NEVER)), until: AtomicU64::new(0) }
    }

    /// A context goes to sleep until `due`; `earliest` gives the links' deadlines now. Returns
    /// `false` if one earlier than `due` appeared (do not sleep). Paired with one
    /// [`Alarm::woke`] whatever it returns.
    pub fn sleep(&self, due: Micros, earliest: impl Fn() -> Micros) -> bool {
        {
            let mut s = self.sleepers.lock().unwrap();
            s.0 += 1;
            s.1 = s.1.min(due);
            self.until.store(s.1, SeqCst);
        }
        fence(SeqCst);
        earliest() >= due
    }

    pub fn woke(&self) {
        let mut s = self.sleepers.lock().unwrap();
        s.0 -= 1;
        if s.0 == 0 {
            s.1 = NEVER;
            self.until.store(0, SeqCst);
        }
    }

    /// A deadline `due` was just published: whether a sleeper must be rung for it.
    pub fn must_ring(&self, due: Micros) -> bool {
        fence(SeqCst);
        due < self.until.load(SeqCst)
    }
}

#[cfg(all(test, loom))]
mod tests {
    use super::*;
    use loom::sync::Arc;
    use loom::sync::atomic::AtomicBool;

    /// A sender publishing an earlier deadline while a poller goes to sleep: either the poller
    /// sees it and stays awake, or the sender rings.
    #[test]
    fn loom_an_earlier_deadline_never_goes_unnoticed() {
        loom::model(|| {
            let alarm = Arc::new(Alarm::new());
            let link_due = Arc::new(AtomicU64::new(NEVER));
            let rung = Arc::new(AtomicBool::new(false));
            let sender = {
                let (alarm, link_due, rung) = (alarm.clone(), link_due.clone(), rung.clone());
                loom::thread::spawn(move || {
                    link_due.store(5, SeqCst);
                    if alarm.must_ring(5) {
                        rung.store(true, SeqCst);
                    }
                })
            };
            let slept = alarm.sleep(10, || link_due.load(SeqCst));
            sender.join().unwrap();
            assert!(!slept || rung.load(SeqCst), "the sleeper missed a deadline nobody rang for");
            alarm.woke();
        });
    }

    /// The last of two sleepers to leave clears the deadline; one that stays keeps it.
    #[test]
    fn loom_a_sleeper_leaving_does_not_unarm_another() {
        loom::model(|| {
            let alarm = Arc::new(Alarm::new());
            let other = {
                let alarm = alarm.clone();
                loom::thread::spawn(move || {
                    alarm.sleep(20, || NEVER);
                    alarm.woke();
                })
            };
            assert!(alarm.sleep(10, || NEVER));
            assert!(alarm.must_ring(9), "a deadline before ours rings while we sleep");
            other.join().unwrap();
            assert!(alarm.must_ring(9));
            alarm.woke();
            assert!(!alarm.must_ring(9), "nobody asleep");
        });
    }
}
