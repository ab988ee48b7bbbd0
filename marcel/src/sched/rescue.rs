//! Spare kernel-thread rescue: `marcel::blocking(|| call())` lets the other user threads of a core
//! keep running while `call` blocks its kernel thread.
//!
//! Waking a parked thread costs the waker about 4 µs here, far more than a system call that does
//! not block, so the rescue is lazy and detection is left to the kernel:
//! 1. `blocking` marks the VP `Blocking` (one CAS) and runs the call on the same kernel thread.
//! 2. A *sentinel* per core, pinned there at SCHED_IDLE priority, spins on `sched_yield` while it is
//!    armed; the kernel runs it only when the core has nothing else to run, i.e. when the caller
//!    really blocked. If it then sees the same `Blocking` word on both sides of a yield and the VP
//!    has threads waiting, it orphans the VP and hands it to a *spare* kernel thread.
//! 3. The spare (normal priority, so a rescued run queue never runs at idle priority) pins itself
//!    to the core and adopts the VP. When the call returns, the caller's kernel thread finds the VP
//!    gone: its user thread goes on running there until its next switch point, then is queued
//!    like any runnable thread, and that kernel thread joins the spare pool.
//!
//! If the call returns before anyone adopted the VP, the caller simply takes it back.
//!
//! The sentinel disarms when its VP goes idle and naps (timed) when it has watched the same
//! state for a while; `blocking` re-arms it with a futex wake only then. The monitor is the
//! backstop: a VP seen `Blocking` with waiting threads at two consecutive checks is rescued even
//! without a sentinel (e.g. where SCHED_IDLE is refused).
//!
//! Inside the call the caller behaves as a plain OS thread: marcel primitives block the kernel
//! thread (there is no VP to give back), and threads it wakes go to shared queues.

use super::Shared;
use super::context::{self, Lwp};
use super::ownership::{Phase, Word};
use super::vp::Vp;
use crate::loom::atomic::AtomicU32;
use crate::parker::Parker;
use crate::sys;
use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Runs `f`, which may block its kernel thread, without stalling the other user threads of the
/// caller's core: if `f` blocks, a spare kernel thread takes over the core's run queue.
///
/// Called from a plain OS thread (or nested), it just runs `f`. Inside `f`, the caller behaves as
/// an OS thread: marcel's Mutex, Condvar, `sleep`, `yield_now` and `join` block or yield the
/// kernel thread.
pub fn blocking<R>(f: impl FnOnce() -> R) -> R {
    let l = context::lwp_ptr();
    if l.is_null() {
        return f();
    }
    // SAFETY: a registered LWP record lives on this kernel thread's stack while it runs marcel code,
    // and `f` runs on this same kernel thread (no switch point can move us: see below).
    let lwp = unsafe { &*l };
    let (Some(v), false) = (lwp.vp.get(), lwp.current.get().is_null()) else {
        return f();
    };
    let rt = lwp.rt.clone();
    let vp = &rt.vps[v];
    let seq = lwp.seq.get();
    let current = lwp.current.replace(std::ptr::null());
    lwp.blocking.set(current);
    if vp.owner.enter_blocking(seq).is_err() {
        // Handed off as a hog an instant ago: we already hold no VP.
        lwp.vp.set(None);
        let r = f();
        lwp.current.set(lwp.blocking.replace(std::ptr::null()));
        return r;
    }
    lwp.vp.set(None);
    arm(&rt, vp);
    struct Leave<'a> {
        lwp: &'a Lwp,
        vp: &'a Vp,
        v: usize,
        seq: u64,
    }
    impl Drop for Leave<'_> {
        fn drop(&mut self) {
            match self.vp.owner.leave_blocking(self.seq) {
                Ok(s) => {
                    self.lwp.vp.set(Some(self.v));
                    self.lwp.seq.set(s);
                }
                // A spare holds the VP now; this thread finishes its run beside it.
                Err(_) => {
                    self.vp.stats.detached.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
            self.lwp.current.set(self.lwp.blocking.replace(std::ptr::null()));
        }
    }
    let _leave = Leave { lwp, vp, v, seq };
    f()
}

const SPINNING: u32 = 0;
const NAPPING: u32 = 1;
const OFF: u32 = 2;
/// How long a napping sentinel first sleeps before looking again; the nap doubles while nothing
/// changes, up to `MAX_NAP` (a new blocking call or a queued thread wakes it at once anyway).
const NAP: Duration = Duration::from_micros(200);
const MAX_NAP: Duration = Duration::from_millis(10);
/// Observations of an unchanged VP before the sentinel naps.
const PATIENCE: u32 = 256;

/// The per-core watcher (see the module docs).
pub(crate) struct Sentinel {
    state: AtomicU32,
}

impl Sentinel {
    fn new() -> Self {
        Sentinel { state: AtomicU32::new(SPINNING) }
    }

    /// After the caller published `Blocking` (an RMW): `true` if the sentinel rests and must be
    /// woken (it is marked spinning already).
    #[inline]
    fn arm(&self) -> bool {
        self.state.swap(SPINNING, AcqRel) != SPINNING
    }

    /// `true` if the sentinel naps and must be woken (a thread was queued on its blocked VP).
    fn poke(&self) -> bool {
        self.state.load(SeqCst) == NAPPING && self.state.swap(SPINNING, SeqCst) == NAPPING
    }

    /// The sentinel goes to rest (`OFF`: until armed; `NAPPING`: timed). Hand-shake with `arm`:
    /// both sides swap `state` (an RMW), so one swap reads the other's value and synchronizes
    /// with it. If the holder's came first, its `Blocking` (published before) happens-before our
    /// read of the owner word below and we stay up; if ours came first, the holder reads the rest
    /// state and wakes us.
    fn rest(&self, owner: &super::ownership::Ownership, how: u32) {
        self.state.swap(how, AcqRel);
        let w: Word = owner.load();
        if how == OFF && w.phase() == Phase::Blocking {
            self.state.swap(SPINNING, AcqRel);
        }
    }
}

/// Makes sure VP `vp`'s sentinel watches it (after the caller published `Blocking`, SeqCst).
fn arm(rt: &Arc<Shared>, vp: &Vp) {
    if !rt.config.sentinel || rt.sentinel_refused.load(Relaxed) {
        return;
    }
    let s = vp.sentinel.get_or_init(|| start_sentinel(rt, vp.index));
    if s.arm() {
        wake(&s.state);
    }
}

/// Wakes VP `vp`'s sentinel if it naps (a thread was queued on a VP whose holder blocks).
pub(crate) fn poke_sentinel(vp: &Vp) {
    if let Some(s) = vp.sentinel.get()
        && s.poke()
    {
        wake(&s.state);
    }
}

#[cfg(not(loom))]
fn wake(state: &AtomicU32) {
    sys::futex_wake(state, 1);
}

#[cfg(not(loom))]
fn wait(state: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    sys::futex_wait(state, expected, timeout);
}

// Under loom only the protocol functions above are modelled; the sentinel thread never runs.
#[cfg(loom)]
fn wake(_: &AtomicU32) {}

#[cfg(loom)]
fn wait(_: &AtomicU32, _: u32, _: Option<Duration>) {}

fn start_sentinel(rt: &Arc<Shared>, v: usize) -> Arc<Sentinel> {
    let s = Arc::new(Sentinel::new());
    // Have a spare ready before the first rescue (the sentinel cannot create one: a thread it
    // created would inherit its idle priority).
    if rt.spares.idle_count() == 0 {
        let _ = rt.start_kernel_thread(None);
    }
    let (rt2, s2) = (rt.clone(), s.clone());
    let name = format!("{}-sentinel{v}", rt.config.thread_name);
    match std::thread::Builder::new()
        .name(name.clone())
        .stack_size(64 << 10)
        .spawn(move || sentinel_main(rt2, v, s2))
    {
        Ok(h) => rt.kernel_threads.lock().unwrap().push((name, h)),
        Err(e) => log::warn!(
            "cannot start the sentinel of VP {v} ({e}); blocking calls there are rescued by the monitor only"
        ),
    }
    s
}

fn sentinel_main(rt: Arc<Shared>, v: usize, s: Arc<Sentinel>) {
    let vp = &rt.vps[v];
    if rt.config.pin {
        sys::pin_current_to(vp.core.os_cpu);
    }
    if let Err(e) = sys::set_current_sched_idle() {
        if !rt.sentinel_refused.swap(true, Relaxed) {
            log::warn!(
                "SCHED_IDLE refused for blocking-call sentinels ({e}); blocking calls are rescued by the monitor only, within two quanta"
            );
        }
        return;
    }
    let mut last = vp.owner.load();
    let mut unchanged = 0u32;
    let mut nap = NAP;
    loop {
        if rt.is_shutdown() {
            return;
        }
        match s.state.load(SeqCst) {
            OFF => {
                wait(&s.state, OFF, None);
                continue;
            }
            NAPPING => {
                wait(&s.state, NAPPING, Some(nap));
                nap = (nap * 2).min(MAX_NAP);
                let _ = s.state.compare_exchange(NAPPING, SPINNING, SeqCst, SeqCst);
                continue;
            }
            _ => {}
        }
        let w = vp.owner.load();
        if w == last {
            unchanged = unchanged.saturating_add(1);
        } else {
            unchanged = 0;
            nap = NAP;
            last = w;
        }
        match w.phase() {
            Phase::Blocking
                if vp.has_waiting_work() || (!rt.global.is_empty() && rt.sleepers.sleeping() == 0) =>
            {
                // We run, so the core had nothing better to do: the caller is probably blocked.
                // Confirm across a yield (a runnable caller would get the core back).
                sys::sched_yield();
                if vp.owner.load() == w
                    && let Some(seq) = vp.owner.orphan(w)
                {
                    vp.stats.rescues.fetch_add(1, Relaxed);
                    rt.spares.assign(&rt, v, seq);
                }
            }
            Phase::Idle => s.rest(&vp.owner, OFF),
            _ if unchanged > PATIENCE => s.rest(&vp.owner, NAPPING),
            _ => sys::sched_yield(),
        }
    }
}

/// The pool of kernel threads without a VP.
pub(crate) struct Spares {
    idle: Mutex<Vec<Arc<SpareSlot>>>,
    /// Kernel threads ever started for LWPs (holders and spares).
    pub(crate) created: AtomicUsize,
    max_idle: usize,
}

pub(crate) struct SpareSlot {
    parker: Parker,
    order: Mutex<Option<(usize, u64)>>,
}

impl SpareSlot {
    pub(crate) fn new() -> Self {
        SpareSlot { parker: Parker::new(), order: Mutex::new(None) }
    }
}

impl Spares {
    pub(crate) fn new(max_idle: usize) -> Self {
        Spares { idle: Mutex::new(Vec::new()), created: AtomicUsize::new(0), max_idle }
    }

    pub(crate) fn idle_count(&self) -> usize {
        self.idle.lock().unwrap().len()
    }

    /// Sends a spare to adopt VP `v` (orphaned with `seq`); asks the monitor to start one if the
    /// pool is empty (and to refill it when this takes the last one).
    pub(crate) fn assign(&self, rt: &Shared, v: usize, seq: u64) {
        let (slot, now_empty) = {
            let mut idle = self.idle.lock().unwrap();
            let s = idle.pop();
            (s, idle.is_empty())
        };
        match slot {
            Some(slot) => {
                *slot.order.lock().unwrap() = Some((v, seq));
                slot.parker.unpark();
                if now_empty {
                    rt.monitor.request_spare(None);
                }
            }
            None => rt.monitor.request_spare(Some((v, seq))),
        }
    }

    /// A kernel thread without a VP waits here for an adoption order. `None`: exit (shutdown, or
    /// enough idle spares already).
    pub(crate) fn wait(&self, rt: &Shared, slot: &Arc<SpareSlot>) -> Option<(usize, u64)> {
        {
            let mut idle = self.idle.lock().unwrap();
            if idle.len() >= self.max_idle {
                return None;
            }
            idle.push(slot.clone());
        }
        loop {
            if let Some(o) = slot.order.lock().unwrap().take() {
                return Some(o);
            }
            if rt.is_shutdown() {
                return None;
            }
            slot.parker.park(None);
        }
    }

    /// Shutdown: wakes every idle spare so that it exits.
    pub(crate) fn wake_all(&self) {
        for s in self.idle.lock().unwrap().iter() {
            s.parker.unpark();
        }
    }
}

/// Wakes every sentinel (shutdown).
pub(crate) fn wake_sentinels(rt: &Shared) {
    for vp in rt.vps.iter() {
        if let Some(s) = vp.sentinel.get() {
            s.state.store(SPINNING, SeqCst);
            wake(&s.state);
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sched::ownership::Ownership;
    use loom::sync::Arc;

    /// A holder enters `blocking` and arms the sentinel while the sentinel, seeing its VP idle,
    /// goes to rest: the sentinel never ends up asleep (OFF) with nobody waking it.
    #[test]
    fn loom_sentinel_arming() {
        loom::model(|| {
            let owner = Arc::new(Ownership::new_orphan());
            assert!(owner.adopt(0));
            owner.set(Phase::Idle, 0);
            let s = Arc::new(Sentinel::new());
            let (o2, s2) = (owner.clone(), s.clone());
            let holder = loom::thread::spawn(move || {
                o2.set(Phase::User, 0);
                o2.enter_blocking(0).unwrap();
                s2.arm()
            });
            s.rest(&owner, OFF);
            let woke = holder.join().unwrap();
            assert!(woke || s.state.load(SeqCst) != OFF, "sentinel asleep and never woken");
        });
    }
}
