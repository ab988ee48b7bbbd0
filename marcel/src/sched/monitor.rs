//! The monitor: one normal-priority kernel thread per runtime (like Go's sysmon) that owns what
//! needs a clock:
//! - timers (`sleep`, timed waits): it wakes the threads whose deadline passed;
//! - the hog bound: a VP seen running the same user thread (same owner word) at two checks one
//!   quantum apart while other threads wait for it is handed to a spare kernel thread; the hog
//!   keeps its kernel thread, which the OS then time-shares with the spare. Waiting threads thus
//!   run again within two quanta plus a wake-up;
//! - the rescue backstop: the same rule for a VP stuck `Blocking` (in case its sentinel could not
//!   run), and re-sending an adopter for a VP left orphaned;
//! - starting spare kernel threads (sentinels cannot: their threads would inherit idle priority);
//! - the periodic tick hook.
//!
//! It sleeps without a deadline when every VP is idle and no timer or tick is pending.

use super::Shared;
use super::ownership::{Phase, Word};
use crate::loom::atomic::{AtomicBool, Ordering::*, fence};
use crate::sync::waiter::Waiter;
use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A pending timer, to cancel it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct TimerKey(Instant, u64);

#[derive(Default)]
struct State {
    timers: BTreeMap<TimerKey, Waiter>,
    next_timer: u64,
    /// Adoptions nobody could take (no idle spare): start a kernel thread for each.
    adoptions: Vec<(usize, u64)>,
    /// Start one idle spare.
    want_spare: bool,
}

pub(crate) struct Monitor {
    state: Mutex<State>,
    cv: Condvar,
    /// Waiting without a deadline (every VP idle): a VP waking up must kick it.
    asleep: AtomicBool,
}

impl Monitor {
    pub(crate) fn new() -> Self {
        Monitor { state: Mutex::new(State::default()), cv: Condvar::new(), asleep: AtomicBool::new(false) }
    }

    pub(crate) fn add_timer(&self, deadline: Instant, w: Waiter) -> TimerKey {
        let mut st = self.state.lock().unwrap();
        st.next_timer += 1;
        let key = TimerKey(deadline, st.next_timer);
        let earliest = st.timers.keys().next().is_none_or(|k| key < *k);
        st.timers.insert(key, w);
        drop(st);
        if earliest {
            self.cv.notify_one();
        }
        key
    }

    pub(crate) fn cancel_timer(&self, key: TimerKey) {
        self.state.lock().unwrap().timers.remove(&key);
    }

    /// Shutdown: the sleeping threads' timers will never fire.
    pub(crate) fn take_timers(&self) -> Vec<Waiter> {
        std::mem::take(&mut self.state.lock().unwrap().timers).into_values().collect()
    }

    /// Asks for a kernel thread: to adopt `order`, or (None) to wait as an idle spare.
    pub(crate) fn request_spare(&self, order: Option<(usize, u64)>) {
        let mut st = self.state.lock().unwrap();
        match order {
            Some(o) => st.adoptions.push(o),
            None => st.want_spare = true,
        }
        drop(st);
        self.cv.notify_one();
    }

    /// A VP left its idle phase (its phase word is already updated): make sure the monitor
    /// watches again. Hand-shake with `may_sleep`: each side publishes, fences, then reads the
    /// other's word, so either the monitor sees the busy VP or the VP sees the monitor asleep.
    #[inline]
    pub(crate) fn vp_woke(&self) {
        if self.vp_must_kick() {
            self.kick();
        }
    }

    #[inline]
    fn vp_must_kick(&self) -> bool {
        fence(SeqCst);
        self.asleep.load(Relaxed)
    }

    /// The monitor is about to sleep without a deadline: publishes it, then checks that no VP became
    /// busy meanwhile (`any_active`). Returns whether it may sleep.
    fn may_sleep(&self, any_active: impl Fn() -> bool) -> bool {
        self.asleep.store(true, Relaxed);
        fence(SeqCst);
        if any_active() {
            self.asleep.store(false, Relaxed);
            return false;
        }
        true
    }

    pub(crate) fn kick(&self) {
        let _g = self.state.lock().unwrap();
        self.cv.notify_one();
    }
}

pub(crate) fn monitor_main(rt: Arc<Shared>) {
    let mon = &rt.monitor;
    let quantum = rt.config.quantum;
    let mut seen: Vec<Word> = rt.vps.iter().map(|v| v.owner.load()).collect();
    let mut next_check = Instant::now() + quantum;
    let mut next_tick: Option<Instant> = None;
    let mut spare_error_reported = false;
    loop {
        let mut due = Vec::new();
        let (adoptions, want_spare) = {
            let mut st = mon.state.lock().unwrap();
            loop {
                if rt.is_shutdown() {
                    return;
                }
                let now = Instant::now();
                if st.timers.keys().next().is_some_and(|k| k.0 <= now)
                    || !st.adoptions.is_empty()
                    || st.want_spare
                    || now >= next_check
                    || next_tick.is_some_and(|t| now >= t)
                {
                    break;
                }
                let active = rt.vps.iter().any(|v| v.owner.load().phase() != Phase::Idle);
                if !active {
                    // Nothing to watch: checks restart one quantum after a VP wakes.
                    next_check = now + quantum;
                }
                next_tick = match (rt.hooks.tick_period(), next_tick) {
                    (Some(p), None) => Some(now + p),
                    (Some(_), t) => t,
                    (None, _) => None,
                };
                let deadline =
                    [st.timers.keys().next().map(|k| k.0), active.then_some(next_check), next_tick]
                        .into_iter()
                        .flatten()
                        .min();
                if deadline.is_none()
                    && !mon.may_sleep(|| rt.vps.iter().any(|v| v.owner.load().phase() != Phase::Idle))
                {
                    continue;
                }
                st = match deadline {
                    Some(d) => mon.cv.wait_timeout(st, d.saturating_duration_since(now)).unwrap().0,
                    None => mon.cv.wait(st).unwrap(),
                };
                mon.asleep.store(false, Relaxed);
            }
            let now = Instant::now();
            while let Some(e) = st.timers.first_entry() {
                if e.key().0 > now {
                    break;
                }
                due.push(e.remove());
            }
            (std::mem::take(&mut st.adoptions), std::mem::replace(&mut st.want_spare, false))
        };
        for w in due {
            w.wake();
        }
        for o in adoptions {
            if let Err(e) = rt.start_kernel_thread(Some(o)) {
                // The VP stays orphaned; its former holder takes it back when its call returns.
                if !spare_error_reported {
                    log::warn!(
                        "cannot start a spare kernel thread ({e}); VP {} waits for its blocked call",
                        o.0
                    );
                    spare_error_reported = true;
                }
            }
        }
        if want_spare && rt.spares.idle_count() == 0 {
            let _ = rt.start_kernel_thread(None);
        }
        let now = Instant::now();
        if next_tick.is_some_and(|t| now >= t) {
            rt.hooks.run_tick();
            next_tick = rt.hooks.tick_period().map(|p| now + p);
        }
        if now >= next_check {
            check_vps(&rt, &mut seen);
            next_check = now + quantum;
        }
    }
}

/// The hog bound and the rescue backstop (see the module docs).
fn check_vps(rt: &Shared, seen: &mut [Word]) {
    let starving_global =
        !rt.global.is_empty() && rt.sleepers.sleeping() == 0 && rt.sleepers.searching() == 0;
    for (v, vp) in rt.vps.iter().enumerate() {
        let w = vp.owner.load();
        if w == seen[v] {
            match w.phase() {
                Phase::User | Phase::Blocking if vp.has_waiting_work() || starving_global => {
                    // A hog keeps running on the core after the hand-off: count it first, so that
                    // its kernel thread's decrement (at its next switch) never comes before.
                    let hog = w.phase() == Phase::User;
                    if hog {
                        vp.stats.detached.fetch_add(1, Relaxed);
                    }
                    match vp.owner.orphan(w) {
                        Some(seq) => {
                            let counter = if hog { &vp.stats.hog_handoffs } else { &vp.stats.rescues };
                            counter.fetch_add(1, Relaxed);
                            rt.spares.assign(rt, v, seq);
                        }
                        None if hog => {
                            vp.stats.detached.fetch_sub(1, Relaxed);
                        }
                        None => {}
                    }
                }
                Phase::Orphan if vp.has_waiting_work() => {
                    // The adopter sent last time never came: send another, an idle spare first
                    // (a new kernel thread may be refused while the system is short of
                    // threads or memory maps, and the VP would stay orphaned for good while
                    // the kernel thread that left it waits idle).
                    rt.spares.assign(rt, v, w.seq());
                }
                _ => {}
            }
        }
        seen[v] = vp.owner.load();
    }
}

/// How long the monitor lets a user thread run while others wait, by default.
pub(crate) const DEFAULT_QUANTUM: Duration = Duration::from_millis(10);

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::loom::atomic::AtomicU8;
    use loom::sync::Arc;

    /// The monitor going to sleep without a deadline against a VP leaving its idle phase: never both
    /// miss (the monitor asleep while a VP runs and nobody kicks it).
    #[test]
    fn loom_monitor_sleep_vs_vp_wake() {
        loom::model(|| {
            let mon = Arc::new(Monitor::new());
            let phase = Arc::new(AtomicU8::new(0)); // 0 idle, 1 busy
            let (m2, p2) = (mon.clone(), phase.clone());
            let vp = loom::thread::spawn(move || {
                p2.store(1, Relaxed); // stands for the owner word leaving Idle
                m2.vp_must_kick()
            });
            let slept = mon.may_sleep(|| phase.load(Relaxed) != 0);
            let kicked = vp.join().unwrap();
            assert!(!slept || kicked, "monitor asleep, VP busy, nobody kicked it");
        });
    }
}
