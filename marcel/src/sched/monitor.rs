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
use crate::sync::waiter::Waiter;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering::*};
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

    /// A VP left a sleep: make sure the monitor watches again.
    #[inline]
    pub(crate) fn vp_woke(&self) {
        if self.asleep.load(Relaxed) {
            self.kick();
        }
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
                mon.asleep.store(deadline.is_none(), SeqCst);
                // Re-check after publishing `asleep` (a VP that woke just before must be seen).
                if deadline.is_none() && rt.vps.iter().any(|v| v.owner.load().phase() != Phase::Idle) {
                    mon.asleep.store(false, SeqCst);
                    continue;
                }
                st = match deadline {
                    Some(d) => mon.cv.wait_timeout(st, d.saturating_duration_since(now)).unwrap().0,
                    None => mon.cv.wait(st).unwrap(),
                };
                mon.asleep.store(false, SeqCst);
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
                    eprintln!(
                        "marcel: cannot start a spare kernel thread ({e}); VP {} waits for its blocked call",
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
                    // The adopter sent last time never came: send another.
                    rt.monitor.state.lock().unwrap().adoptions.push((v, w.seq()));
                }
                _ => {}
            }
        }
        seen[v] = vp.owner.load();
    }
}

/// How long the monitor lets a user thread run while others wait, by default.
pub(crate) const DEFAULT_QUANTUM: Duration = Duration::from_millis(10);
