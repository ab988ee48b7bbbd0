//! Progression threads: pioman's own kernel threads.
//!
//! - One per NUMA node (pinned to the node's CPUs) by default. Without marcel they are the whole
//!   progression engine: they poll while a core is idle, otherwise sleep in the sources' blocking
//!   waits (or until the next tick), as the policy says, and run the tick. Under marcel they only
//!   do background blocking waits, when the policy says block and no waiting thread already sleeps
//!   on the node's sources (idle LWPs, switches and ticks do the rest).
//!
//!   While the application waits in the library (it polls the sources itself) a progression
//!   thread stands back; the last waiter to leave hands the sources over (it arms the thread's
//!   alarm, at most once per tick, less while the application keeps coming back at once:
//!   `waiters.rs`, `handover_alarm.rs`, `stand_back`), and once the application has stayed out
//!   [`APP_QUIET`], the thread serves the sources until a waiter is back: a passive target's
//!   operations do not each wait for the next tick.
//! - One per core that has tasks bound to it, without marcel (pinned there).
//! - One per source with a custom blocking wait (it cannot be multiplexed in epoll).

use crate::engine::Inner;
use crate::ltask::Ltask;
use crate::machine::Scope;
use crate::policy::IdleAction;
use crate::source::Context;
use crate::timer_slack::until_tick;
use crate::waitset::WaitSet;
use std::sync::Arc;
use std::sync::atomic::Ordering::*;
use std::time::{Duration, Instant};

/// How long a polling progression thread spins before looking at the machine state again.
const POLL_SLICE: Duration = Duration::from_micros(200);

/// How long the application must have been out of the library before a progression thread on
/// its one CPU polls on through a burst ([`poll_burst`]): an application that waited this
/// recently polls itself, and a burst would only take its CPU (a 1-thread message rate halved).
/// (Re-checking every 200 µs whether the application left, to take over its sources sooner than
/// the next tick, was tried and dropped: intra-node fetch_op and compare_and_swap epochs and
/// small round trips got slower in some runs.)
pub(crate) const APP_QUIET: Duration = Duration::from_micros(200);

/// How long a progression thread on the application's one CPU polls on after its last useful
/// poll before it sleeps in the sources' fds again ([`poll_burst`]). Every microsecond of it is
/// taken from a computing application: at 30 µs, one message arriving during a short epoch of
/// intra-node atomics (the next synchronization's, sent early) made its fetch_op and
/// compare_and_swap 3–4× slower in one run of five; the pieces of a transfer come closer.
const BURST_QUIET: Duration = Duration::from_micros(5);

thread_local! {
    /// This thread is one of pioman's progression threads.
    static PROGRESSION_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the calling thread as one of pioman's for its life (a waiter does not leave its CPU
/// to it: `own_cpu`).
struct OurThread;

impl OurThread {
    fn begin() -> OurThread {
        PROGRESSION_THREAD.set(true);
        crate::own_cpu::note_pioman_thread();
        OurThread
    }
}

impl Drop for OurThread {
    fn drop(&mut self) {
        crate::own_cpu::forget_pioman_thread();
    }
}

/// Whether the calling thread is one of pioman's progression threads.
pub(crate) fn in_progression_thread() -> bool {
    PROGRESSION_THREAD.get()
}

pub(crate) fn pin_to(cpus: &[usize]) {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it; sched_setaffinity(0) targets the
    // calling thread and only reads the set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// What a node or core progression thread does of the policy's idle answer: under marcel the
/// idle LWPs poll, not it; alone on the application's one CPU it never polls (see
/// `progression_main`).
fn idle_action(policy: IdleAction, under_marcel: bool, shares_one_cpu: bool) -> IdleAction {
    match policy {
        IdleAction::Poll if under_marcel => IdleAction::Sleep,
        IdleAction::Poll if shares_one_cpu => IdleAction::Block,
        a => a,
    }
}

/// The nice value of a progression thread that shares its only CPU with the application
/// (`PIOMAN_THREAD_NICE`, default -10; 0 leaves it alone).
fn thread_nice() -> i32 {
    std::env::var("PIOMAN_THREAD_NICE").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(-10)
}

/// Gives the calling progression thread a higher scheduling weight (a lower nice value), where
/// the process may (root, `CAP_SYS_NICE` or `RLIMIT_NICE`): on a core shared with a computing
/// application thread, the kernel then lets each wake-up of this thread (a message for a passive
/// target) preempt the computation at once, instead of after the computation's time slice once
/// this thread has used its fair share. It never busy-polls there, so the weight only makes its
/// short bursts prompt.
fn raise_priority() {
    let nice = thread_nice();
    if nice == 0 {
        return;
    }
    // SAFETY: gettid and setpriority have no memory preconditions; PRIO_PROCESS with a thread
    // id changes that thread only (Linux).
    let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, nice) };
    if r != 0 {
        log::debug!(
            "progression thread keeps its priority (nice {nice} refused: {})",
            std::io::Error::last_os_error()
        );
    }
    shorten_slice(nice);
}

/// The time slice a progression thread on the application's one CPU asks for
/// (`PIOMAN_THREAD_SLICE_US`; 0, the default, leaves the kernel's). Off by default: with a
/// 100 µs slice every tcp message's wake-up of this thread preempted the application, and the
/// 0-byte tcp latency went from 6.1–7.8 to 8.8–9.1 µs; a passive target that computes gets its
/// operations served sooner with it.
fn thread_slice() -> Duration {
    let us = std::env::var("PIOMAN_THREAD_SLICE_US").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    Duration::from_micros(us)
}

/// `struct sched_attr` of `sched_setattr(2)` (its first version, 48 bytes).
#[repr(C)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

/// Asks for a short time slice (EEVDF kernels, 6.6 and later): a waking task with a shorter
/// slice than the running one preempts it at once instead of when the runner's slice ends, so
/// a message for a passive target that computes is served in microseconds rather than after up
/// to a slice of the computation (a few milliseconds). Older kernels ignore the slice.
fn shorten_slice(nice: i32) {
    let slice = thread_slice();
    if slice.is_zero() {
        return;
    }
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        policy: libc::SCHED_OTHER as u32,
        flags: 0,
        nice,
        priority: 0,
        runtime: slice.as_nanos() as u64,
        deadline: 0,
        period: 0,
    };
    // SAFETY: sched_setattr reads `size` bytes of a valid, initialized sched_attr; pid 0 is the
    // calling thread.
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0u32) };
    if r != 0 {
        log::debug!("progression thread keeps its time slice ({})", std::io::Error::last_os_error());
    }
}

/// CPUs of NUMA node `n` that the process may use.
pub(crate) fn cpus_of_node(n: usize) -> Vec<usize> {
    crate::machine::topology()
        .cores()
        .iter()
        .filter(|c| c.numa_node == n)
        .flat_map(|c| c.pus.clone())
        .collect()
}

/// The loop of a node or core progression thread.
pub(crate) fn progression_main(inner: Arc<Inner>, scope: Scope, cpus: Vec<usize>) {
    let _ours = OurThread::begin();
    pin_to(&cpus);
    inner.pokes.lock().unwrap().push(std::thread::current());
    let node = scope.numa.unwrap_or(0);
    let ws = match inner.take_waitset(scope) {
        Ok(ws) => ws,
        Err(e) => {
            log::warn!("progression thread cannot build its wait set ({e}); it polls at ticks only");
            return tick_only(inner, scope);
        }
    };
    inner.poke_bells.lock().unwrap().push(ws.doorbell.clone());
    let under_marcel = inner.marcel.is_some();
    // Pinned to the one CPU of the process's own threads (a rank bound to a core): polling there
    // only takes the core from the application, which either computes (and, CFS being fair, our
    // later wake-ups would then wait for its time slice: milliseconds for a passive target) or
    // waits in MPI and polls itself. Such a thread blocks instead.
    let shares_one_cpu = cpus.len() <= 1;
    if shares_one_cpu {
        raise_priority();
    }
    // Alone on the application's CPU (and not under marcel, whose idle LWPs poll).
    let burst = shares_one_cpu && !under_marcel;
    let mut next_tick = Instant::now() + inner.tick;
    // This thread served traffic since a waiting thread was last seen in the library: the
    // application has left it. It then stands back only for a waiter in the library *now*, not
    // for one that spun within the last tick: a passive target's next operation would otherwise
    // wait for the next tick too (8 B lock+put, then get, measured 0.6 + 1.07 ms), and so would
    // each step of a large transfer after a wake-up that found nothing.
    let mut served = false;
    // The application's last exit from the library when `served` was set: a later one means it
    // came back meanwhile (a ping-pong), and the sources are its own again.
    let mut served_mark = 0;
    let mut handover = Handover { from: Instant::now(), gap: 1 };
    while !inner.shutdown.load(Relaxed) {
        if !served && inner.waiter_spinning(node) {
            // The application polls every source itself right now: neither the machine's state
            // nor a tick's poll is of use, and each would take the spinner's CPU (a rank pinned
            // to one core shares it with us) just when a message may arrive.
            served |= stand_back(&inner, &ws, node, next_tick, &mut handover);
            if Instant::now() >= next_tick {
                next_tick = Instant::now() + inner.tick;
            }
            continue;
        }
        let m = inner.machine(None);
        let p = inner.policy();
        let action = idle_action(p.idle(&m), under_marcel, shares_one_cpu);
        if served && served_mark == 0 {
            served_mark = inner.last_wait_exit(node);
        }
        if inner.waiter_spinning(node)
            || inner.waiter_blocks_on(node)
            || inner.last_wait_exit(node) != served_mark
        {
            served = false;
            served_mark = 0;
        }
        let app_polls = !served && inner.waiter_spins_on(node);
        match action {
            IdleAction::Poll if app_polls || inner.waiter_blocks_on(node) => {
                // A waiting thread polls these sources itself, or sleeps in their fds: do not
                // compete with it. Detecting the event first would gain nothing (the waiter needs
                // a wake-up either way) and, on a shared core, would keep the CPU from the woken
                // waiter until this thread's time slice ends (a rank pinned to one core measured
                // 200 µs per message instead of 30). The last waiter to leave unparks us (the
                // handover, `stand_back`).
                served |= stand_back(&inner, &ws, node, next_tick, &mut handover);
            }
            IdleAction::Poll => {
                let end = Instant::now() + POLL_SLICE;
                while Instant::now() < end && !inner.shutdown.load(Relaxed) {
                    let (useful, candidates) = inner.progress(Context::Idle, scope, true, Some(&m));
                    served |= useful > 0 && inner.waiters_quiet_in(node, APP_QUIET).is_zero();
                    if candidates == 0 {
                        let left = next_tick.saturating_duration_since(Instant::now());
                        until_tick(inner.tick, || std::thread::park_timeout(left));
                        break;
                    }
                    if useful > 0 {
                        // Whoever this progress woke may share our core: let it run now.
                        std::thread::yield_now();
                    }
                    std::hint::spin_loop();
                }
            }
            // Background blocking waits only when no waiting thread covers the node's sources
            // (sleeping in them, or spinning on them): a second sleeper would only add wake-ups.
            IdleAction::Block
                if !inner.waiter_blocks_on(node)
                    && !app_polls
                    && inner.has_blocking_sources(scope)
                    && inner.watch(node).try_take() =>
            {
                let woke = inner.sleep_armed(scope, || {
                    until_tick(inner.tick, || {
                        ws.wait(Some(next_tick.saturating_duration_since(Instant::now())))
                    })
                });
                // Waiters that came meanwhile sleep passively: hand them the watch.
                inner.watch(node).release(inner.waiter_blocks_on(node));
                inner.note_blocking_wait(scope, woke);
                let (useful, _) = inner.progress(Context::Blocking, scope, false, None);
                served |= useful > 0;
                if useful > 0 && burst && inner.waiters_quiet_in(node, APP_QUIET).is_zero() {
                    poll_burst(&inner, scope);
                }
            }
            _ => served |= stand_back(&inner, &ws, node, next_tick, &mut handover),
        }
        if !under_marcel && Instant::now() >= next_tick {
            if p.poll_at_tick(&m) {
                // Traffic a tick finds is the application's own if it was in the library lately
                // (a ping-pong between two ticks): only an absent application's makes it ours.
                let useful = inner.progress(Context::Tick, scope, false, None).0 > 0;
                served |= useful && inner.waiters_quiet_in(node, APP_QUIET).is_zero();
            }
            next_tick = Instant::now() + inner.tick;
        } else if under_marcel && Instant::now() >= next_tick {
            next_tick = Instant::now() + inner.tick;
        }
    }
    inner.put_waitset(ws);
}

/// When a progression thread asks the application's waiters for the handover (see `stand_back`).
struct Handover {
    /// Not before this.
    from: Instant,
    /// Ticks between asks: doubled (up to [`HANDOVER_GAP_MAX`]) each time the application came
    /// back within [`APP_QUIET`], reset when it stayed out.
    gap: u32,
}

/// Most ticks between two asks: a ping-pong (back in the library at once every time) costs one
/// alarm and wake-up per this many ticks, and an application that leaves for good waits at most
/// for the next tick's own poll anyway.
const HANDOVER_GAP_MAX: u32 = 32;

/// Sleeps until the next tick while the application waits in the library (or the policy says
/// sleep), asking the waiters for the handover (see [`Handover`]): `true` when the last one left
/// the library (arming our alarm, or before we asked) and the application then stayed out
/// [`APP_QUIET`] — the sources are ours to serve, whenever traffic comes. A ping-pong's
/// application is back in the library by then (taking its sources at once, armed in their fds,
/// cost every shm message about a microsecond), and even asking at every tick cost its 0-byte
/// latency 5–10 %.
fn stand_back(inner: &Inner, ws: &WaitSet, node: usize, next_tick: Instant, h: &mut Handover) -> bool {
    let left = || next_tick.saturating_duration_since(Instant::now());
    if Instant::now() < h.from {
        until_tick(inner.tick, || std::thread::park_timeout(left()));
        return false;
    }
    if inner.ask_handover(node) {
        // Other pokes (a spinning waiter going to sleep, a registration) do not end the wait:
        // only the last waiter's leaving (its alarm), the tick or shutdown do.
        loop {
            until_tick(inner.tick, || inner.handover_alarm(node).wait(&ws.doorbell, left()));
            if !inner.handover_pending(node) {
                break;
            }
            if Instant::now() >= next_tick || inner.shutdown.load(Relaxed) {
                if !inner.handed_over(node) {
                    h.from = next_tick;
                    return false;
                }
                break;
            }
        }
    }
    let quiet = inner.waiters_quiet_in(node, APP_QUIET);
    if !quiet.is_zero() {
        std::thread::park_timeout(quiet.min(left()));
    }
    let out = inner.waiters_quiet_in(node, APP_QUIET).is_zero();
    h.gap = if out { 1 } else { (h.gap * 2).min(HANDOVER_GAP_MAX) };
    h.from = next_tick + inner.tick * (h.gap - 1);
    out
}

/// Polls on while polls are useful, until none was for [`BURST_QUIET`]: a transfer that
/// arrives in pieces (a rendezvous, a passive target's stream of operations) is served without
/// a kernel wake-up per piece, each of which would preempt the application's computation.
fn poll_burst(inner: &Inner, scope: Scope) {
    let node = scope.numa.unwrap_or(0);
    let mut last_useful = Instant::now();
    while last_useful.elapsed() < BURST_QUIET && !inner.shutdown.load(Relaxed) {
        if !inner.waiters_quiet_in(node, APP_QUIET).is_zero() {
            return; // the application is in the library (or just was): it polls them itself
        }
        if inner.progress(Context::Blocking, scope, false, None).0 > 0 {
            last_useful = Instant::now();
        }
        std::hint::spin_loop();
    }
}

fn tick_only(inner: Arc<Inner>, scope: Scope) {
    PROGRESSION_THREAD.set(true);
    while !inner.shutdown.load(Relaxed) {
        until_tick(inner.tick, || std::thread::park_timeout(inner.tick));
        inner.progress(Context::Tick, scope, false, None);
    }
}

/// Waits in one source's own blocking call while the policy says block, then polls; ends with
/// the task.
pub(crate) fn custom_wait_main(inner: Arc<Inner>, lt: Arc<Ltask>, scope: Scope) {
    let _ours = OurThread::begin();
    inner.pokes.lock().unwrap().push(std::thread::current());
    while !inner.shutdown.load(Relaxed) && !lt.state.is_finished() {
        let m = inner.machine(None);
        if inner.policy().idle(&m) == IdleAction::Block && lt.state.try_begin_block() {
            lt.stats.blocking_waits.fetch_add(1, Relaxed);
            until_tick(inner.tick, || lt.source.wait(Some(inner.tick)));
            lt.state.end_block();
            inner.progress(Context::Blocking, scope, false, None);
        } else {
            until_tick(inner.tick, || std::thread::park_timeout(inner.tick));
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_progression_thread_on_the_applications_one_cpu_blocks_instead_of_polling() {
        use IdleAction::*;
        assert_eq!(idle_action(Poll, false, true), Block);
        assert_eq!(idle_action(Poll, false, false), Poll, "several CPUs: it may poll an idle one");
        assert_eq!(idle_action(Poll, true, true), Sleep, "under marcel the idle LWPs poll");
        assert_eq!(idle_action(Block, false, true), Block);
        assert_eq!(idle_action(Sleep, false, true), Sleep);
    }
}
