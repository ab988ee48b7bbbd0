//! Scheduler hooks: how an I/O event manager (pioman) gets the CPU at the right moments, and the
//! scheduler-state queries it bases its poll-or-block decisions on.
//!
//! Three moments, as in PIOMan: an LWP about to go idle ([`SchedHooks::idle`], may poll as long as
//! it likes: the core has nothing else to do), every user-thread context switch
//! ([`SchedHooks::switch`], must stay cheap: it is on the switch path), and a periodic tick
//! ([`SchedHooks::tick`], run by the runtime's monitor thread, so it runs even when every core
//! computes). Hooks run on marcel's kernel threads, outside any user thread: they must not call
//! blocking marcel primitives (use `try_lock`-style calls). A hook that panics is reported and
//! unregistered.
//!
//! Registration is copy-on-write: the switch path reads one atomic flag, and a snapshot only when
//! some hook wants switches.

use arc_swap::ArcSwap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What an idle hook found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IdleVerdict {
    /// Something progressed (e.g. a request completed and threads were woken): the LWP looks at
    /// its queues again and keeps calling the hook while idle.
    Progress,
    /// Nothing yet, but keep polling: the LWP must not go to sleep.
    KeepPolling,
    /// Nothing to poll: the LWP may sleep (after its configured spin time) until woken.
    #[default]
    Sleep,
    /// The LWP may sleep, but for at most this long before calling the hook again.
    SleepFor(Duration),
}

/// Callbacks an event manager registers with a runtime. Every method has a do-nothing default;
/// say which ones you implement with [`HookMask`].
pub trait SchedHooks: Send + Sync + 'static {
    /// LWP `vp` has no thread to run.
    fn idle(&self, vp: usize) -> IdleVerdict {
        let _ = vp;
        IdleVerdict::Sleep
    }
    /// LWP `vp` is about to run its next user thread. Keep it to a few nanoseconds when idle.
    fn switch(&self, vp: usize) {
        let _ = vp;
    }
    /// Periodic tick, from the monitor thread.
    fn tick(&self) {}
}

/// Which callbacks a registration wants, and the tick period.
#[derive(Clone, Copy, Debug, Default)]
pub struct HookMask {
    pub idle: bool,
    pub switch: bool,
    pub tick: Option<Duration>,
}

/// Identifies a registration, for [`crate::Handle::remove_hooks`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HookId(u64);

#[derive(Default)]
pub(crate) struct HookSet {
    idle: Vec<Arc<dyn SchedHooks>>,
    switch: Vec<Arc<dyn SchedHooks>>,
    tick: Vec<Arc<dyn SchedHooks>>,
    pub(crate) tick_period: Option<Duration>,
}

type Registration = (HookId, Arc<dyn SchedHooks>, HookMask);

pub(crate) struct Hooks {
    snapshot: ArcSwap<HookSet>,
    any_idle: AtomicBool,
    any_switch: AtomicBool,
    registered: Mutex<Vec<Registration>>,
    next_id: AtomicU64,
}

impl Hooks {
    pub(crate) fn new() -> Self {
        Hooks {
            snapshot: ArcSwap::from_pointee(HookSet::default()),
            any_idle: AtomicBool::new(false),
            any_switch: AtomicBool::new(false),
            registered: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1),
        }
    }

    pub(crate) fn add(&self, h: Arc<dyn SchedHooks>, mask: HookMask) -> HookId {
        let id = HookId(self.next_id.fetch_add(1, Relaxed));
        let mut reg = self.registered.lock().unwrap();
        reg.push((id, h, mask));
        self.publish(&reg);
        id
    }

    pub(crate) fn remove(&self, id: HookId) -> bool {
        let mut reg = self.registered.lock().unwrap();
        let before = reg.len();
        reg.retain(|(i, _, _)| *i != id);
        self.publish(&reg);
        reg.len() != before
    }

    fn publish(&self, reg: &[Registration]) {
        let mut set = HookSet::default();
        for (_, h, m) in reg {
            if m.idle {
                set.idle.push(h.clone());
            }
            if m.switch {
                set.switch.push(h.clone());
            }
            if let Some(p) = m.tick {
                set.tick.push(h.clone());
                set.tick_period = Some(set.tick_period.map_or(p, |q| q.min(p)));
            }
        }
        self.any_idle.store(!set.idle.is_empty(), Release);
        self.any_switch.store(!set.switch.is_empty(), Release);
        self.snapshot.store(Arc::new(set));
    }

    #[inline]
    pub(crate) fn has_switch(&self) -> bool {
        self.any_switch.load(Relaxed)
    }

    #[inline]
    pub(crate) fn has_idle(&self) -> bool {
        self.any_idle.load(Relaxed)
    }

    pub(crate) fn run_switch(&self, vp: usize) {
        for h in self.snapshot.load().switch.iter() {
            self.guarded(h, || h.switch(vp));
        }
    }

    /// Runs one hook; a panicking hook is reported and unregistered, so that it cannot take an LWP
    /// (and every user thread queued on it) down with it.
    fn guarded<R: Default>(&self, h: &Arc<dyn SchedHooks>, f: impl FnOnce() -> R) -> R {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            Ok(r) => r,
            Err(_) => {
                log::error!("a scheduler hook panicked; it is unregistered");
                let mut reg = self.registered.lock().unwrap();
                reg.retain(|(_, r, _)| !Arc::ptr_eq(r, h));
                self.publish(&reg);
                R::default()
            }
        }
    }

    /// Combines verdicts: any progress wins, then keep-polling, then the shortest sleep.
    pub(crate) fn run_idle(&self, vp: usize) -> IdleVerdict {
        let mut out = IdleVerdict::Sleep;
        for h in self.snapshot.load().idle.iter() {
            out = match (out, self.guarded(h, || h.idle(vp))) {
                (IdleVerdict::Progress, _) | (_, IdleVerdict::Progress) => IdleVerdict::Progress,
                (IdleVerdict::KeepPolling, _) | (_, IdleVerdict::KeepPolling) => IdleVerdict::KeepPolling,
                (IdleVerdict::SleepFor(a), IdleVerdict::SleepFor(b)) => IdleVerdict::SleepFor(a.min(b)),
                (IdleVerdict::SleepFor(a), _) | (_, IdleVerdict::SleepFor(a)) => IdleVerdict::SleepFor(a),
                _ => IdleVerdict::Sleep,
            };
        }
        out
    }

    pub(crate) fn tick_period(&self) -> Option<Duration> {
        self.snapshot.load().tick_period
    }

    pub(crate) fn run_tick(&self) {
        for h in self.snapshot.load().tick.iter() {
            self.guarded(h, || h.tick());
        }
    }
}
