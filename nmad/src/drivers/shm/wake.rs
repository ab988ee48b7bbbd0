//! Counting the contexts that sleep on the driver's eventfd, and raising the rings' flags while
//! any does.
//!
//! Several contexts may arm at once, each arm paired with one disarm of the same kind
//! ([`Sleep::Any`]: a thread waiting in the library; [`Sleep::Urgent`]: a progression thread,
//! which peers wake only for records someone waits for). The flags of the rings (consumer
//! `sleeping`, the most demanding kind among the sleepers; producer `waiting`) are set by every
//! arm and lowered only when the last sleeper of a kind leaves; a lock orders arms, disarms and
//! new rings, so a disarm never lowers the flags a later arm relies on. The arm then fences (SeqCst) and looks at the rings: the peer publishes
//! (or releases), fences, then reads the flag, so one of the two sees the other.
//!
//! It owns the count and the list of rings to flag; it does not touch the eventfd (the caller
//! resets it before every arm).

use super::ring::Sleep;
use crate::loom::Mutex;
use crate::loom::atomic::{Ordering, fence};

/// What the wake protocol needs from a link.
pub(crate) trait Sleeper {
    /// Raise (or clear, with [`Sleep::Awake`]) the flags asking the peer to signal us.
    fn set_asleep(&self, how: Sleep);
    /// Something arrived, or space the link waited for was freed (after the fence).
    fn ready(&self) -> bool;
}

struct State<R> {
    /// Sleepers of each kind ([`Sleep::Urgent`], [`Sleep::Any`]).
    urgent: u32,
    any: u32,
    rings: Vec<R>,
}

impl<R> State<R> {
    /// What the rings' flags say for the sleepers counted.
    fn how(&self) -> Sleep {
        if self.any > 0 {
            Sleep::Any
        } else if self.urgent > 0 {
            Sleep::Urgent
        } else {
            Sleep::Awake
        }
    }

    fn count(&mut self, how: Sleep) -> &mut u32 {
        match how {
            Sleep::Urgent => &mut self.urgent,
            _ => &mut self.any,
        }
    }
}

/// The sleepers of one driver and the links they watch.
pub(crate) struct Sleepers<R> {
    state: Mutex<State<R>>,
}

impl<R: Sleeper> Sleepers<R> {
    pub(crate) fn new() -> Sleepers<R> {
        Sleepers { state: Mutex::new(State { urgent: 0, any: 0, rings: Vec::new() }) }
    }

    /// A new link to watch (flagged at once if a context sleeps).
    pub(crate) fn add(&self, r: R) {
        let mut s = self.state.lock().unwrap();
        let how = s.how();
        if how != Sleep::Awake {
            r.set_asleep(how);
        }
        s.rings.push(r);
    }

    /// Stops watching the links `keep` rejects.
    pub(crate) fn retain(&self, keep: impl FnMut(&R) -> bool) {
        self.state.lock().unwrap().rings.retain(keep);
    }

    /// A context is about to sleep, woken by peers as `how` says ([`Sleep::Any`] or
    /// [`Sleep::Urgent`]). Returns `false` if a link is already ready.
    pub(crate) fn arm(&self, how: Sleep) -> bool {
        let mut s = self.state.lock().unwrap();
        *s.count(how) += 1;
        let flags = s.how();
        for r in &s.rings {
            r.set_asleep(flags);
        }
        fence(Ordering::SeqCst);
        !s.rings.iter().any(|r| r.ready())
    }

    /// Ends one [`Sleepers::arm`] of the same kind.
    pub(crate) fn disarm(&self, how: Sleep) {
        let mut s = self.state.lock().unwrap();
        let before = s.how();
        let n = s.count(how);
        *n = n.saturating_sub(1);
        let after = s.how();
        if after != before {
            for r in &s.rings {
                r.set_asleep(after);
            }
        }
    }
}
