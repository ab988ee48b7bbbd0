//! Observation hooks: a tool (madmpi's MPI_T events) learns what the engine does as it happens,
//! without pioman knowing the tool.
//!
//! A [`Hook`] holds at most one observer. Firing costs one relaxed load while nobody observes;
//! the observer runs on the firing thread, inside the engine, so it must not block nor call back
//! into pioman (push the event somewhere and return). [`Hook`] is generic so that the crates
//! above (nmad) hook their own events the same way.
//!
//! Owns the hooks and pioman's event type; it must not interpret events.

use arc_swap::ArcSwapOption;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::*};

/// A function called with each event fired.
pub type Observer<E> = Arc<dyn Fn(&E) + Send + Sync>;

/// A sized holder for an [`Observer`] (`ArcSwapOption` needs a sized pointee).
struct Slot<E>(Observer<E>);

/// Where events of type `E` go: nowhere, or to one observer.
pub struct Hook<E> {
    on: AtomicBool,
    observer: ArcSwapOption<Slot<E>>,
}

impl<E> Hook<E> {
    pub const fn new() -> Self {
        Hook { on: AtomicBool::new(false), observer: ArcSwapOption::const_empty() }
    }

    /// Installs `observer` (replacing any other), or removes it with `None`.
    pub fn set(&self, observer: Option<Observer<E>>) {
        self.on.store(observer.is_some(), SeqCst);
        self.observer.store(observer.map(|o| Arc::new(Slot(o))));
    }

    /// Whether someone observes (events are built only then).
    #[inline]
    pub fn observed(&self) -> bool {
        self.on.load(Relaxed)
    }

    /// Gives the event `make` builds to the observer, if there is one.
    #[inline]
    pub fn fire(&self, make: impl FnOnce() -> E) {
        if self.observed() {
            self.fire_slow(make());
        }
    }

    #[cold]
    fn fire_slow(&self, event: E) {
        if let Some(slot) = self.observer.load().as_ref() {
            (slot.0)(&event);
        }
    }
}

impl<E> Default for Hook<E> {
    fn default() -> Self {
        Self::new()
    }
}

/// What the engine reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A context is about to sleep in the sources' blocking waits; `sources` of them are armed.
    BlockingWaitBegin { instance: u64, sources: u32 },
    /// It woke up: by an event (`woke`) or at its timeout, after `slept_ns`.
    BlockingWaitEnd { instance: u64, woke: bool, slept_ns: u64 },
}

/// pioman's events, from every instance of the process.
pub static EVENTS: Hook<Event> = Hook::new();

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn fires_only_while_observed() {
        let hook: Hook<u32> = Hook::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let built = AtomicBool::new(false);
        hook.fire(|| {
            built.store(true, SeqCst);
            1
        });
        assert!(!built.load(SeqCst), "no event is built while nobody observes");
        let s2 = seen.clone();
        hook.set(Some(Arc::new(move |e: &u32| s2.lock().unwrap().push(*e))));
        hook.fire(|| 2);
        hook.set(None);
        hook.fire(|| 3);
        assert_eq!(*seen.lock().unwrap(), vec![2]);
    }
}
