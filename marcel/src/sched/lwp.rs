//! The loop of a kernel thread (LWP): hold a VP and run its user threads; when the VP is lost
//! (rescued during a blocking call, or handed off from a hog), become a spare and wait for
//! another VP to adopt.
//!
//! Scheduler code touches a VP's owned queues only in the `Sched` and `Idle` phases, which only the
//! holder leaves; while a user thread runs (`User`), the VP may be taken away, and the holder
//! learns it with a failed CAS when the thread switches out.

use super::context::{self, Lwp};
use super::ownership::Phase;
use super::task::{Switch, Task};
use super::vp::{Owned, Vp};
use super::{Shared, push_remote};
use crate::hooks::IdleVerdict;
use crate::stack::PooledStack;
use crossbeam_deque::Steal;
use std::sync::Arc;
use std::sync::atomic::Ordering::*;
use std::time::Instant;

/// Global queue is looked at first every this many switches (fairness against a busy local queue).
const GLOBAL_CHECK_INTERVAL: u32 = 61;
/// How often an idle VP holding stack-starved threads looks for freed stacks.
const STARVED_RECHECK: std::time::Duration = std::time::Duration::from_millis(1);

pub(crate) fn kernel_thread_main(rt: Arc<Shared>, order: Option<(usize, u64)>) {
    // A panic here is a marcel bug: the VP it held would stay taken and its threads stranded, so
    // fail loudly rather than hang.
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| lwp_main(rt, order))).is_err() {
        log::error!("internal error in a kernel thread (see the panic above); aborting");
        std::process::abort();
    }
}

fn lwp_main(rt: Arc<Shared>, mut order: Option<(usize, u64)>) {
    crate::stack::ensure_altstack();
    let lwp = Lwp::new(rt.clone());
    let _registered = context::enter(&lwp);
    let slot = Arc::new(super::rescue::SpareSlot::new());
    loop {
        if let Some((v, seq)) = order.take()
            && rt.vps[v].owner.adopt(seq)
        {
            lwp.vp.set(Some(v));
            lwp.seq.set(seq);
            if rt.config.pin {
                crate::sys::pin_current_to(rt.vps[v].core.os_cpu);
            }
            hold(&lwp, v);
        }
        if rt.is_shutdown() {
            break;
        }
        match rt.spares.wait(&rt, &slot) {
            Some(o) => order = Some(o),
            None => break,
        }
    }
}

/// Runs VP `v`'s threads until the VP is lost or the runtime shuts down.
fn hold(lwp: &Lwp, v: usize) {
    let rt = &*lwp.rt;
    let vp = &rt.vps[v];
    let mut seq = lwp.seq.get();
    loop {
        // Phase Sched(seq): the owned part is ours.
        let task = match next_task(rt, vp) {
            Some(t) => t,
            None => match idle(rt, vp, seq) {
                Some(t) => t,
                None => return give_up(lwp, vp, seq),
            },
        };
        if rt.is_shutdown() {
            // SAFETY: phase Sched, we hold the VP.
            unsafe { vp.owned().push(vp, task) };
            return give_up(lwp, vp, seq);
        }
        let stack = if task.hdr.started() {
            None
        } else {
            // SAFETY: phase Sched, we hold the VP.
            match unsafe { vp.owned() }.take_stack(&rt.stacks) {
                Ok(s) => Some(s),
                Err(e) => {
                    starve(rt, vp, task, e);
                    continue;
                }
            }
        };
        if rt.hooks.has_switch() {
            rt.hooks.run_switch(v);
        }
        vp.owner.set(Phase::User, seq);
        lwp.seq.set(seq);
        lwp.current.set(&task);
        // SAFETY: we took `task` from a run queue, so no other kernel thread runs it.
        let (why, stack) = unsafe { task.hdr.run(&task.body, stack) };
        lwp.current.set(std::ptr::null());
        let kept = lwp.vp.get() == Some(v)
            && match vp.owner.end_user_run(lwp.seq.get()) {
                Ok(s) => {
                    seq = s;
                    true
                }
                Err(_) => false,
            };
        if kept {
            // SAFETY: end_user_run succeeded: phase Sched, we hold the VP.
            after_run(rt, Some((vp, unsafe { vp.owned() })), task, why, stack);
        } else {
            // The run ended detached from the VP (counted by whoever took the VP away).
            vp.stats.detached.fetch_sub(1, Relaxed);
            lwp.vp.set(None);
            after_run(rt, None, task, why, stack);
            return;
        }
    }
}

/// No stack can be mapped for a new thread (the kernel's limit on memory maps): it waits,
/// unstarted, until stacks come back; the runtime warns once.
#[cold]
fn starve(rt: &Shared, vp: &Vp, task: Task, e: crate::stack::StackError) {
    if !rt.stack_pressure.swap(true, Relaxed) {
        log::warn!("{e}. New user threads now wait for a running one to finish.");
    }
    // SAFETY: phase Sched, we hold the VP.
    unsafe { vp.owned() }.starved.push_back(task);
}

fn give_up(lwp: &Lwp, vp: &Vp, seq: u64) {
    vp.owner.release(seq);
    lwp.vp.set(None);
}

/// Requeues, parks or retires a thread that switched out; `held` is the VP if still held.
fn after_run(
    rt: &Shared,
    held: Option<(&Vp, &mut Owned)>,
    task: Task,
    why: Switch,
    stack: Option<PooledStack>,
) {
    match why {
        Switch::Yield => requeue(held, task),
        Switch::Park => {
            if !task.hdr.park.commit_park() {
                requeue(held, task);
            }
        }
        Switch::Exit => {
            if let Some(s) = stack {
                match held {
                    Some((_, owned)) => owned.give_stack(&rt.stacks, s),
                    None => rt.stacks.put(s),
                }
            }
        }
    }
}

fn requeue(held: Option<(&Vp, &mut Owned)>, task: Task) {
    match held {
        Some((vp, owned)) if task.hdr.bound.is_none_or(|b| b == vp.index) => owned.push(vp, task),
        _ => push_remote(task),
    }
}

/// The next thread from this VP's queues, the global queue, or another VP's (holder only).
#[inline]
fn next_task(rt: &Shared, vp: &Vp) -> Option<Task> {
    // SAFETY: called by the holder in phase Sched or Idle.
    let owned = unsafe { vp.owned() };
    owned.tick = owned.tick.wrapping_add(1);
    if !owned.starved.is_empty() && owned.stack_available(&rt.stacks) {
        return owned.starved.pop_front();
    }
    if owned.tick % GLOBAL_CHECK_INTERVAL == 0 {
        owned.drain_inbox(vp);
        if let Some(t) = steal_global(rt, owned) {
            return Some(t);
        }
    }
    if let Some(t) = owned.pop(vp) {
        return Some(t);
    }
    find_more(rt, vp, owned)
}

fn steal_global(rt: &Shared, owned: &mut Owned) -> Option<Task> {
    loop {
        match rt.global.steal_batch_and_pop(&owned.local) {
            Steal::Success(t) => return Some(t),
            Steal::Empty => return None,
            Steal::Retry => continue,
        }
    }
}

/// Own queues (an idle hook may have made threads runnable there), inbox, global queue, then
/// stealing from the nearest VPs first.
fn find_more(rt: &Shared, vp: &Vp, owned: &mut Owned) -> Option<Task> {
    if let Some(t) = owned.pop(vp) {
        return Some(t);
    }
    if owned.drain_inbox(vp)
        && let Some(t) = owned.pop(vp)
    {
        return Some(t);
    }
    if let Some(t) = steal_global(rt, owned) {
        return Some(t);
    }
    for &u in &vp.steal_order {
        loop {
            match rt.vps[u].stealer.steal_batch_and_pop(&owned.local) {
                Steal::Success(t) => {
                    vp.stats.steals.fetch_add(1, Relaxed);
                    return Some(t);
                }
                Steal::Empty => break,
                Steal::Retry => continue,
            }
        }
    }
    None
}

/// No work: search (spinning, running idle hooks) for the configured time, then sleep until woken.
/// Returns a thread to run, or `None` on shutdown.
fn idle(rt: &Shared, vp: &Vp, seq: u64) -> Option<Task> {
    vp.owner.set(Phase::Idle, seq);
    let spin = rt.config.idle_spin;
    loop {
        rt.sleepers.begin_search();
        let mut since = Instant::now();
        let mut sleep_for;
        loop {
            if rt.is_shutdown() {
                let _ = rt.sleepers.found_work(false);
                return None;
            }
            // SAFETY: phase Idle, we hold the VP.
            if let Some(t) = find_more(rt, vp, unsafe { vp.owned() }) {
                if let Some(w) = rt.sleepers.found_work(!rt.global.is_empty() || vp.has_waiting_work()) {
                    rt.vps[w].parker.unpark();
                }
                return Some(leave_idle(rt, vp, seq, t));
            }
            let verdict = if rt.hooks.has_idle() { rt.hooks.run_idle(vp.index) } else { IdleVerdict::Sleep };
            match verdict {
                IdleVerdict::Progress => since = Instant::now(),
                IdleVerdict::KeepPolling => {}
                IdleVerdict::Sleep | IdleVerdict::SleepFor(_) => {
                    if since.elapsed() >= spin {
                        sleep_for = match verdict {
                            IdleVerdict::SleepFor(d) => Some(d),
                            _ => None,
                        };
                        break;
                    }
                }
            }
            std::hint::spin_loop();
        }
        // SAFETY: phase Idle, we hold the VP.
        let owned = unsafe { vp.owned() };
        if rt.stack_pressure.load(Relaxed) {
            owned.spill_stacks(&rt.stacks); // others may be starved of stacks
            if !owned.starved.is_empty() {
                if owned.stack_available(&rt.stacks)
                    && let Some(t) = owned.starved.pop_front()
                {
                    let _ = rt.sleepers.found_work(false);
                    return Some(leave_idle(rt, vp, seq, t));
                }
                // Stacks come back when threads exit elsewhere: look again soon.
                sleep_for = Some(sleep_for.unwrap_or(STARVED_RECHECK).min(STARVED_RECHECK));
            }
        }
        rt.sleepers.sleep(vp.index);
        // SAFETY: phase Idle, we hold the VP.
        if let Some(t) = find_more(rt, vp, unsafe { vp.owned() }) {
            rt.sleepers.awake(vp.index);
            return Some(leave_idle(rt, vp, seq, t));
        }
        if rt.is_shutdown() {
            rt.sleepers.awake(vp.index);
            return None;
        }
        vp.stats.parks.fetch_add(1, Relaxed);
        vp.parker.park(sleep_for);
        rt.sleepers.awake(vp.index);
    }
}

/// Leaves the idle phase with a thread to run, and makes sure the monitor (which may have gone to
/// sleep while every VP was idle) watches this VP again: it bounds hogs and rescues blocked calls.
#[inline]
fn leave_idle(rt: &Shared, vp: &Vp, seq: u64, t: Task) -> Task {
    vp.owner.set(Phase::Sched, seq);
    rt.monitor.vp_woke();
    t
}
