//! The scheduler: virtual processors, the kernel threads that hold them, and the entry points the
//! rest of marcel uses to make user threads runnable, park them and switch.
//!
//! Layout: `task` (a user thread), `vp` (a core's queues), `ownership` (who holds a VP),
//! `park_state` (a thread's park permit), `sleepers` (idle VPs), `lwp` (the kernel-thread loop),
//! `rescue` (`blocking`, sentinels, spare kernel threads), `monitor` (timers, hogs, ticks),
//! `crate::hooks` (callbacks for pioman). This module owns no policy of its own beyond queue choice.

pub(crate) mod context;
pub(crate) mod lwp;
pub(crate) mod monitor;
pub(crate) mod ownership;
pub(crate) mod park_state;
pub(crate) mod rescue;
pub(crate) mod sleepers;
pub(crate) mod task;
pub(crate) mod vp;

use crate::config::Config;
use crate::stack::StackPool;
use crate::topology::Topology;
use context::Lwp;
use crossbeam_deque::Injector;
use ownership::Phase;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex};
use std::time::Instant;
pub(crate) use task::Task;
use task::{Entry, Header, Switch, UThread};

/// Everything the kernel threads of one runtime share.
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) topology: Topology,
    pub(crate) vps: Box<[vp::Vp]>,
    pub(crate) global: Injector<Task>,
    pub(crate) sleepers: sleepers::Sleepers,
    pub(crate) spares: rescue::Spares,
    pub(crate) monitor: monitor::Monitor,
    pub(crate) hooks: crate::hooks::Hooks,
    pub(crate) stacks: StackPool,
    pub(crate) shutdown: AtomicBool,
    /// Some thread could not get a stack (see `lwp::starve`).
    pub(crate) stack_pressure: AtomicBool,
    /// The kernel refused SCHED_IDLE for sentinels: rescues rely on the monitor.
    pub(crate) sentinel_refused: AtomicBool,
    /// User threads spawned and not yet finished.
    pub(crate) live: AtomicUsize,
    pub(crate) spawned: AtomicU64,
    /// Every kernel thread started for this runtime, joined at shutdown.
    pub(crate) kernel_threads: Mutex<Vec<(String, std::thread::JoinHandle<()>)>>,
}

static NEXT_THREAD_ID: AtomicU64 = AtomicU64::new(1);

/// Kernel threads per runtime (holders, spares, sentinels, monitor), as Go caps its Ms: past this,
/// a blocked call's LWP waits for the call to return instead of getting a spare.
const MAX_KERNEL_THREADS: usize = 4096;

pub(crate) fn next_thread_id() -> u64 {
    NEXT_THREAD_ID.fetch_add(1, Relaxed)
}

impl Shared {
    #[inline]
    pub(crate) fn is_shutdown(&self) -> bool {
        self.shutdown.load(Relaxed)
    }

    /// Wakes an idle VP if a runnable thread may otherwise wait while one sleeps.
    #[inline]
    pub(crate) fn notify_idle(&self) {
        if let Some(v) = self.sleepers.notify_one() {
            self.vps[v].parker.unpark();
        }
    }

    /// Makes sure VP `v` looks at its inbox soon.
    pub(crate) fn wake_vp(&self, v: usize) {
        let vp = &self.vps[v];
        vp.parker.unpark();
        if vp.owner.load().phase() == Phase::Blocking {
            rescue::poke_sentinel(vp);
        }
    }

    /// Starts a kernel thread that will adopt `order` (a VP and its orphan sequence) or, with
    /// `None`, wait in the spare pool.
    pub(crate) fn start_kernel_thread(self: &Arc<Self>, order: Option<(usize, u64)>) -> std::io::Result<()> {
        let mut threads = self.kernel_threads.lock().unwrap();
        // Reap spares that exited (idle pool full), so the list does not grow without bound.
        let (done, live): (Vec<_>, Vec<_>) = threads.drain(..).partition(|(_, h)| h.is_finished());
        *threads = live;
        for (_, h) in done {
            let _ = h.join();
        }
        if threads.len() >= MAX_KERNEL_THREADS {
            return Err(std::io::Error::other(format!(
                "marcel: {MAX_KERNEL_THREADS} kernel threads already; blocking calls now wait for their LWP"
            )));
        }
        drop(threads);
        let rt = self.clone();
        let name = match order {
            Some((v, _)) => format!("{}-lwp{v}", self.config.thread_name),
            None => format!("{}-spare", self.config.thread_name),
        };
        let h = std::thread::Builder::new()
            .name(name.clone())
            .stack_size(256 << 10)
            .spawn(move || lwp::kernel_thread_main(rt, order))?;
        self.kernel_threads.lock().unwrap().push((name, h));
        self.spares.created.fetch_add(1, Relaxed);
        Ok(())
    }
}

/// Spawns a user thread on `rt`, bound to VP `bound` if given.
pub(crate) fn spawn<F, T>(
    rt: &Arc<Shared>,
    f: F,
    name: Option<Box<str>>,
    bound: Option<usize>,
) -> (Task, *mut Option<task::ThreadResult<T>>)
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let t = Arc::new(UThread {
        hdr: Header::new(next_thread_id(), name, rt.clone(), bound),
        body: Entry::new(f),
    });
    let result = t.body.result.get();
    let task: Task = t;
    rt.live.fetch_add(1, Relaxed);
    schedule_inner(task.clone(), true);
    (task, result)
}

/// Makes a runnable thread wait for an LWP: on the caller's own VP when it holds one of the same
/// runtime (cheapest, and cache-warm), else in its bound VP's inbox or the global queue.
pub(crate) fn schedule(task: Task) {
    schedule_inner(task, false)
}

/// `new`: a freshly spawned thread (counted in the statistics).
#[inline]
fn schedule_inner(task: Task, new: bool) {
    let l = context::lwp_ptr();
    if !l.is_null() {
        // SAFETY: a registered LWP record lives as long as its kernel thread runs marcel code.
        let lwp = unsafe { &*l };
        if let Some(v) = lwp.vp.get()
            && Arc::ptr_eq(&lwp.rt, &task.hdr.rt)
            && task.hdr.bound.is_none_or(|b| b == v)
        {
            match push_on_held_vp(lwp, v, task, new) {
                Ok(()) => return,
                Err(t) => {
                    if new {
                        t.hdr.rt.spawned.fetch_add(1, Relaxed);
                    }
                    return push_remote(t);
                }
            }
        }
    }
    if new {
        task.hdr.rt.spawned.fetch_add(1, Relaxed);
    }
    push_remote(task)
}

fn push_on_held_vp(lwp: &Lwp, v: usize, task: Task, new: bool) -> Result<(), Task> {
    let rt = &*lwp.rt;
    let vp = &rt.vps[v];
    let unbound = task.hdr.bound.is_none();
    // From a user thread, lock the queues against a concurrent hog hand-off (User -> Sched). In
    // scheduler context (hooks) the holder is in Sched or Idle phase: nobody can take the VP.
    let user_seq = (!lwp.current.get().is_null()).then(|| lwp.seq.get());
    if let Some(seq) = user_seq
        && vp.owner.lock_queues(seq).is_err()
    {
        lwp.vp.set(None); // taken away while this thread ran: we hold nothing now
        return Err(task);
    }
    // SAFETY: we hold the VP and its queues are ours (phase Sched or Idle).
    unsafe { vp.owned().push(vp, task) };
    if new {
        // Only the holder writes its VP's counter: no read-modify-write needed.
        vp.stats.spawned.store(vp.stats.spawned.load(Relaxed) + 1, Relaxed);
    }
    if let Some(seq) = user_seq {
        vp.owner.set(Phase::User, seq);
    }
    // With a single VP, the caller holds it: nobody else could take the thread.
    if unbound && rt.vps.len() > 1 {
        rt.notify_idle();
    }
    Ok(())
}

fn push_remote(task: Task) {
    let rt = task.hdr.rt.clone();
    match task.hdr.bound {
        Some(b) => {
            rt.vps[b].inbox.push(task);
            rt.wake_vp(b);
        }
        None => {
            rt.global.push(task);
            rt.notify_idle();
        }
    }
}

/// Gives a permit to `task`, rescheduling it if it was parked.
pub(crate) fn unpark_task(task: Task) {
    if task.hdr.park.unpark() {
        schedule(task);
    }
}

/// The user thread running on this kernel thread (not inside `blocking`), if any.
pub(crate) fn current_task() -> Option<Task> {
    let l = context::lwp_ptr();
    if l.is_null() {
        return None;
    }
    // SAFETY: see `schedule`; `current` points to the Task the LWP loop holds while running it.
    unsafe {
        let t = (*l).current.get();
        if t.is_null() { None } else { Some((*t).clone()) }
    }
}

/// Whether the caller is a user thread that may suspend (false on OS threads and inside
/// `blocking`, where marcel's primitives block the kernel thread instead).
#[inline]
pub(crate) fn in_user_thread() -> bool {
    !context::current_header().is_null()
}

/// Parks the calling user thread until unparked or `deadline`.
pub(crate) fn park_user(deadline: Option<Instant>) {
    let h = context::current_header();
    debug_assert!(!h.is_null());
    // SAFETY: non-null: the header of the task this kernel thread runs, kept alive by the LWP loop.
    let hdr = unsafe { &*h };
    if hdr.park.try_consume_permit() {
        return;
    }
    match deadline {
        None => {
            // SAFETY: we are this user thread.
            unsafe { hdr.suspend(Switch::Park) }
        }
        Some(d) => {
            if d <= Instant::now() {
                return;
            }
            let me = current_task().expect("in a user thread");
            let key = hdr.rt.monitor.add_timer(d, crate::sync::waiter::Waiter::User(me));
            // SAFETY: we are this user thread.
            unsafe { hdr.suspend(Switch::Park) };
            hdr.rt.monitor.cancel_timer(key);
        }
    }
}

/// Gives the LWP to the next ready user thread (an OS thread yields its core instead).
#[inline]
pub(crate) fn yield_now() {
    let h = context::current_header();
    if h.is_null() {
        std::thread::yield_now();
        return;
    }
    // SAFETY: non-null current header: we are that user thread, on its coroutine stack.
    unsafe { (*h).suspend(Switch::Yield) }
}
