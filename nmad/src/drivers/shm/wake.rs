//! Counting the contexts that sleep on the driver's eventfd, and raising the rings' flags while
//! any does.
//!
//! Several contexts may arm at once, each arm paired with one disarm. The flags of the rings
//! (consumer `sleeping`, producer `waiting`) are set by every arm and cleared only when the last
//! sleeper leaves; a lock orders arms, disarms and new rings, so a disarm never clears the flags
//! a later arm relies on. The arm then fences (SeqCst) and looks at the rings: the peer publishes
//! (or releases), fences, then reads the flag, so one of the two sees the other.
//!
//! It owns the count and the list of rings to flag; it does not touch the eventfd (the caller
//! resets it before every arm).

use crate::loom::Mutex;
use crate::loom::atomic::{Ordering, fence};

/// What the wake protocol needs from a link.
pub(crate) trait Sleeper {
    /// Raise (or clear) the flags asking the peer to signal us.
    fn set_asleep(&self, on: bool);
    /// Something arrived, or space the link waited for was freed (after the fence).
    fn ready(&self) -> bool;
}

struct State<R> {
    count: u32,
    rings: Vec<R>,
}

/// The sleepers of one driver and the links they watch.
pub(crate) struct Sleepers<R> {
    state: Mutex<State<R>>,
}

impl<R: Sleeper> Sleepers<R> {
    pub(crate) fn new() -> Sleepers<R> {
        Sleepers { state: Mutex::new(State { count: 0, rings: Vec::new() }) }
    }

    /// A new link to watch (flagged at once if a context sleeps).
    pub(crate) fn add(&self, r: R) {
        let mut s = self.state.lock().unwrap();
        if s.count > 0 {
            r.set_asleep(true);
        }
        s.rings.push(r);
    }

    /// Stops watching the links `keep` rejects.
    pub(crate) fn retain(&self, keep: impl FnMut(&R) -> bool) {
        self.state.lock().unwrap().rings.retain(keep);
    }

    /// A context is about to sleep. Returns `false` if a link is already ready.
    pub(crate) fn arm(&self) -> bool {
        let mut s = self.state.lock().unwrap();
        s.count += 1;
        for r in &s.rings {
            r.set_asleep(true);
        }
        fence(Ordering::SeqCst);
        !s.rings.iter().any(|r| r.ready())
    }

    /// Ends one [`Sleepers::arm`].
    pub(crate) fn disarm(&self) {
        let mut s = self.state.lock().unwrap();
        s.count = s.count.saturating_sub(1);
        if s.count == 0 {
            for r in &s.rings {
                r.set_asleep(false);
            }
        }
    }
}
