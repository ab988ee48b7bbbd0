//! Creating, entering and shutting down a runtime; the [`Handle`] through which plain OS threads
//! (and pioman) spawn threads, register hooks and query scheduler state.

use crate::config::Requested;
use crate::hooks::{HookId, HookMask, SchedHooks};
use crate::sched::ownership::Phase;
use crate::sched::{self, Shared, monitor, vp::Vp};
use crate::stack::StackPool;
use crate::thread::JoinHandle;
use crate::topology::Topology;
use crossbeam_deque::Steal;
use std::cell::RefCell;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Configures a [`Runtime`]. Values set here win over the `MARCEL_*` environment variables,
/// which win over the defaults (see the crate docs).
#[derive(Clone, Debug, Default)]
pub struct Builder {
    req: Requested,
}

impl Builder {
    /// Number of LWPs (kernel threads running user threads). Default: one per allowed core.
    pub fn lwps(mut self, n: usize) -> Self {
        self.req.lwps = Some(n);
        self
    }
    /// OS CPUs the LWPs may use. Default: every CPU the process may run on.
    pub fn cpus(mut self, cpus: &[usize]) -> Self {
        self.req.cpus = Some(cpus.to_vec());
        self
    }
    /// Usable stack bytes per user thread (a guard zone is added below).
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.req.stack_size = Some(bytes);
        self
    }
    /// How long a user thread may run without a switch point while others wait on its LWP.
    pub fn quantum(mut self, q: Duration) -> Self {
        self.req.quantum = Some(q);
        self
    }
    /// How long an idle LWP looks for work (and polls idle hooks) before sleeping.
    pub fn idle_spin(mut self, d: Duration) -> Self {
        self.req.idle_spin = Some(d);
        self
    }
    /// Whether LWPs are pinned to their core.
    pub fn pin(mut self, yes: bool) -> Self {
        self.req.pin = Some(yes);
        self
    }
    /// Whether blocking calls are watched by per-core SCHED_IDLE sentinels (else only by the
    /// monitor, within two quanta).
    pub fn sentinel(mut self, yes: bool) -> Self {
        self.req.sentinel = Some(yes);
        self
    }
    /// Idle spare kernel threads kept for rescues; more exit.
    pub fn max_idle_spares(mut self, n: usize) -> Self {
        self.req.max_idle_spares = Some(n);
        self
    }
    /// Prefix of the kernel threads' names.
    pub fn thread_name(mut self, name: &str) -> Self {
        self.req.thread_name = Some(name.into());
        self
    }
    /// Do not read `MARCEL_*` variables.
    pub fn ignore_env(mut self) -> Self {
        self.req.ignore_env = true;
        self
    }

    /// Starts the runtime: one pinned kernel thread per LWP, plus the monitor. Installs the
    /// workspace's logging backend if the program has none (`pm2_log::init`).
    pub fn build(self) -> io::Result<Runtime> {
        pm2_log::init();
        let config = self.req.resolve()?;
        let machine = detected_topology();
        let topology = match &config.cpus {
            Some(c) => machine
                .restrict(c)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("marcel: {e}")))?,
            None => machine.clone(),
        };
        let cores = topology.cores();
        let n = config.lwps.unwrap_or(cores.len());
        let vps: Vec<Vp> = (0..n)
            .map(|i| {
                let core = cores[i % cores.len()].clone();
                let mut order: Vec<usize> = (0..n).filter(|&j| j != i).collect();
                order.sort_by_key(|&j| (topology.distance(core.index, cores[j % cores.len()].index), j));
                Vp::new(i, core, order)
            })
            .collect();
        crate::stack::install_overflow_handler();
        crate::stack::set_thread_describer(crate::thread::describe_current);
        let shared = Arc::new(Shared {
            stacks: StackPool::new(config.stack_size, config.guard_size),
            spares: sched::rescue::Spares::new(config.max_idle_spares),
            sleepers: sched::sleepers::Sleepers::new(n),
            monitor: monitor::Monitor::new(),
            hooks: crate::hooks::Hooks::new(),
            global: crossbeam_deque::Injector::new(),
            vps: vps.into_boxed_slice(),
            topology,
            config,
            shutdown: AtomicBool::new(false),
            stack_pressure: AtomicBool::new(false),
            sentinel_refused: AtomicBool::new(false),
            live: AtomicUsize::new(0),
            spawned: AtomicU64::new(0),
            kernel_threads: Mutex::new(Vec::new()),
        });
        let rt = Runtime { shared: shared.clone(), stopped: false };
        for v in 0..n {
            shared.start_kernel_thread(Some((v, 0)))?;
        }
        let s2 = shared.clone();
        let name = format!("{}-monitor", shared.config.thread_name);
        let h = std::thread::Builder::new().name(name.clone()).spawn(move || monitor::monitor_main(s2))?;
        shared.kernel_threads.lock().unwrap().push((name, h));
        Ok(rt)
    }
}

fn detected_topology() -> &'static Topology {
    static T: OnceLock<Topology> = OnceLock::new();
    T.get_or_init(|| {
        // Read the allowed CPUs before any LWP pins itself (it would narrow the answer).
        let _ = crate::topology::allowed_cpus();
        Topology::detect()
    })
}

/// A running scheduler. Dropping it shuts it down (see [`Runtime::shutdown_timeout`]).
pub struct Runtime {
    shared: Arc<Shared>,
    stopped: bool,
}

/// A cloneable reference to a runtime, usable from any thread.
#[derive(Clone)]
pub struct Handle {
    pub(crate) shared: Arc<Shared>,
}

thread_local! {
    static ENTERED: RefCell<Vec<Handle>> = const { RefCell::new(Vec::new()) };
}

/// Returned by [`Runtime::enter`]; leaving restores the previous context.
pub struct EnterGuard {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Drop for EnterGuard {
    fn drop(&mut self) {
        ENTERED.with(|e| e.borrow_mut().pop());
    }
}

impl Runtime {
    /// A builder with default settings.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// A runtime with default settings.
    pub fn new() -> io::Result<Runtime> {
        Builder::default().build()
    }

    pub fn handle(&self) -> Handle {
        Handle { shared: self.shared.clone() }
    }

    /// Makes `marcel::spawn` on this OS thread target this runtime until the guard drops.
    pub fn enter(&self) -> EnterGuard {
        ENTERED.with(|e| e.borrow_mut().push(self.handle()));
        EnterGuard { _not_send: std::marker::PhantomData }
    }

    /// Runs `f` on a user thread and blocks the calling OS thread until it returns. A panic in
    /// `f` is resumed in the caller.
    pub fn block_on<F, R>(&self, f: F) -> R
    where
        F: FnOnce() -> R + Send,
        R: Send,
    {
        self.handle().block_on(f)
    }

    /// See [`Handle::spawn`].
    pub fn spawn<F, T>(&self, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.handle().spawn(f)
    }

    /// Stops the runtime: LWPs stop at their next switch point, threads still queued or blocked
    /// never run again and are reported on stderr; then every kernel thread is joined. Gives up
    /// after `timeout` on kernel threads still busy (a thread that never yields, a call that never
    /// returns), names them in the error, and leaves them running.
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Result<(), ShutdownError> {
        self.stop(Some(timeout))
    }

    fn stop(&mut self, timeout: Option<Duration>) -> Result<(), ShutdownError> {
        if self.stopped {
            return Ok(());
        }
        self.stopped = true;
        let rt = &*self.shared;
        if !crate::sched::context::lwp_ptr().is_null()
            && crate::sched::current_task().is_some_and(|t| Arc::ptr_eq(&t.hdr.rt, &self.shared))
        {
            log::warn!("a runtime cannot be shut down from one of its own user threads; it is leaked");
            return Err(ShutdownError { stuck: vec!["the calling user thread".into()] });
        }
        rt.shutdown.store(true, SeqCst);
        for vp in rt.vps.iter() {
            vp.parker.unpark();
        }
        rt.spares.wake_all();
        sched::rescue::wake_sentinels(rt);
        rt.monitor.kick();
        let start = Instant::now();
        let mut warned = start;
        let mut stuck = Vec::new();
        loop {
            let mut threads = rt.kernel_threads.lock().unwrap();
            let (done, busy): (Vec<_>, Vec<_>) = threads.drain(..).partition(|(_, h)| h.is_finished());
            *threads = busy;
            drop(threads);
            for (_, h) in done {
                let _ = h.join();
            }
            // Spares started while we waited (rescues in flight) must be woken too.
            rt.spares.wake_all();
            let threads = rt.kernel_threads.lock().unwrap();
            if threads.is_empty() {
                break;
            }
            let names: Vec<String> = threads.iter().map(|(n, _)| n.clone()).collect();
            drop(threads);
            if timeout.is_some_and(|t| start.elapsed() >= t) {
                stuck = names;
                break;
            }
            if warned.elapsed() >= Duration::from_secs(2) {
                log::warn!("shutdown waits for kernel threads still running user code: {}", names.join(", "));
                warned = Instant::now();
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        if stuck.is_empty() {
            self.report_abandoned();
            Ok(())
        } else {
            log::warn!("shutdown gave up on kernel threads still busy: {}", stuck.join(", "));
            Err(ShutdownError { stuck })
        }
    }

    /// After every kernel thread stopped: drops the queues (abandoning started coroutines) and
    /// reports the user threads that never finished.
    fn report_abandoned(&self) {
        let rt = &*self.shared;
        let mut queued = Vec::new();
        let mut take = |t: sched::Task| {
            queued.push(match &t.hdr.name {
                Some(n) => format!("{} \"{}\"", t.hdr.id, n),
                None => t.hdr.id.to_string(),
            });
            t.hdr.abandon();
        };
        for vp in rt.vps.iter() {
            // SAFETY: every kernel thread of the runtime has exited: nobody holds the VP.
            let owned = unsafe { vp.owned() };
            while let Some(t) = owned.local.pop() {
                take(t);
            }
            while let Some(t) = owned.pinned.pop_front() {
                take(t);
            }
            while let Some(t) = owned.starved.pop_front() {
                take(t);
            }
            let mut stacks = std::mem::take(&mut owned.stacks);
            rt.stacks.put_batch(&mut stacks);
            while let Steal::Success(t) = vp.inbox.steal() {
                take(t);
            }
        }
        while let Steal::Success(t) = rt.global.steal() {
            take(t);
        }
        // Sleeping threads hold their task through a timer; dropping them breaks the reference
        // cycle task -> runtime (they are counted as blocked below).
        for w in rt.monitor.take_timers() {
            if let crate::sync::waiter::Waiter::User(t) = w {
                t.hdr.abandon();
            }
        }
        let live = rt.live.load(SeqCst);
        if live > 0 {
            let shown: Vec<&str> = queued.iter().take(16).map(|s| s.as_str()).collect();
            log::warn!(
                "runtime shut down with {live} unfinished (detached) user thread(s): {} runnable{}{}, {} blocked; they will not run again",
                queued.len(),
                if shown.is_empty() { "" } else { ": " },
                shown.join(", "),
                live.saturating_sub(queued.len()),
            );
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        let _ = self.stop(None);
    }
}

/// Kernel threads that did not stop in time.
#[derive(Debug)]
pub struct ShutdownError {
    pub stuck: Vec<String>,
}

impl std::fmt::Display for ShutdownError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "marcel: kernel threads still busy at shutdown: {}", self.stuck.join(", "))
    }
}

impl std::error::Error for ShutdownError {}

/// A snapshot of one VP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VpState {
    /// What its holder does.
    pub phase: Phase,
    /// User threads waiting to run there.
    pub ready: usize,
    /// User-thread switches so far.
    pub switches: u64,
    /// OS CPU it runs on.
    pub os_cpu: usize,
    /// Kernel threads running user threads on this core without holding the VP (hogs handed off,
    /// rescued callers finishing their run): competition for the core that `ready` does not show.
    pub detached: usize,
}

/// Counters since the runtime started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub spawned: u64,
    pub live: usize,
    pub switches: u64,
    pub steals: u64,
    pub parks: u64,
    /// Blocking calls whose VP a spare took over.
    pub rescues: u64,
    /// VPs taken from a user thread that ran past the quantum while others waited.
    pub hog_handoffs: u64,
    /// Kernel threads started for LWPs (initial holders and spares).
    pub kernel_threads: usize,
}

impl Handle {
    /// The runtime of the calling user thread, or the one entered on this OS thread.
    pub fn current() -> Option<Handle> {
        if let Some(t) = crate::sched::context::identity_task() {
            return Some(Handle { shared: t.hdr.rt.clone() });
        }
        ENTERED.with(|e| e.borrow().last().cloned())
    }

    /// Spawns a user thread. From a plain OS thread it goes to the shared queue.
    pub fn spawn<F, T>(&self, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        crate::thread::Builder::new().spawn_in(self, f)
    }

    /// Spawns a user thread bound to LWP `vp` (it never runs elsewhere). Panics if out of range.
    pub fn spawn_on<F, T>(&self, vp: usize, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        crate::thread::Builder::new().on(vp).spawn_in(self, f)
    }

    /// See [`Runtime::block_on`].
    pub fn block_on<F, R>(&self, f: F) -> R
    where
        F: FnOnce() -> R + Send,
        R: Send,
    {
        struct SendPtr<R>(*mut Option<R>);
        // SAFETY: the pointer is only written by the user thread and read after `join`.
        unsafe impl<R: Send> Send for SendPtr<R> {}
        let mut out: Option<R> = None;
        let slot = SendPtr(&mut out as *mut Option<R>);
        let run: Box<dyn FnOnce() + Send + '_> = Box::new(move || {
            let s = slot;
            let r = f();
            // SAFETY: `out` lives on the caller's frame, which waits for this thread in `join`.
            unsafe { *s.0 = Some(r) };
        });
        // SAFETY: we wait below for the thread to finish before returning or unwinding, so the
        // borrowed data the closure captures (including `out`) outlives its use; the lifetime is
        // only erased to satisfy `spawn`'s 'static bound.
        let run: Box<dyn FnOnce() + Send + 'static> = unsafe { std::mem::transmute(run) };
        match self.spawn(run).join() {
            Ok(()) => out.expect("block_on result"),
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }

    pub fn add_hooks(&self, hooks: Arc<dyn SchedHooks>, mask: HookMask) -> HookId {
        let id = self.shared.hooks.add(hooks, mask);
        self.shared.monitor.kick(); // a new tick period
        id
    }

    pub fn remove_hooks(&self, id: HookId) -> bool {
        self.shared.hooks.remove(id)
    }

    /// Wakes every sleeping LWP so that it runs its idle hooks again (an event manager got new work
    /// to poll). Cheap for LWPs that do not sleep.
    pub fn wake_idle_lwps(&self) {
        for v in self.shared.vps.iter() {
            v.parker.unpark();
        }
    }

    pub fn num_lwps(&self) -> usize {
        self.shared.vps.len()
    }

    /// LWPs with nothing to run (searching or sleeping).
    pub fn idle_lwps(&self) -> usize {
        self.shared.vps.iter().filter(|v| v.owner.load().phase() == Phase::Idle).count()
    }

    /// LWPs whose user thread is inside `marcel::blocking`.
    pub fn blocking_lwps(&self) -> usize {
        self.shared.vps.iter().filter(|v| v.owner.load().phase() == Phase::Blocking).count()
    }

    /// Threads waiting on LWP `vp`'s queues.
    pub fn ready_len(&self, vp: usize) -> usize {
        self.shared.vps[vp].ready_len()
    }

    /// Threads waiting anywhere (every LWP and the shared queue).
    pub fn total_ready(&self) -> usize {
        self.shared.vps.iter().map(|v| v.ready_len()).sum::<usize>() + self.shared.global.len()
    }

    pub fn vp_state(&self, vp: usize) -> VpState {
        let v = &self.shared.vps[vp];
        let w = v.owner.load();
        VpState {
            phase: w.phase(),
            ready: v.ready_len(),
            switches: w.seq(),
            os_cpu: v.core.os_cpu,
            detached: v.stats.detached.load(Relaxed).max(0) as usize,
        }
    }

    pub fn stats(&self) -> Stats {
        let rt = &*self.shared;
        let sum = |f: fn(&crate::sched::vp::VpStats) -> &AtomicU64| {
            rt.vps.iter().map(|v| f(&v.stats).load(Relaxed)).sum()
        };
        Stats {
            spawned: rt.spawned.load(Relaxed) + sum(|s| &s.spawned),
            live: rt.live.load(Relaxed),
            switches: rt.vps.iter().map(|v| v.owner.load().seq()).sum(),
            steals: sum(|s| &s.steals),
            parks: sum(|s| &s.parks),
            rescues: sum(|s| &s.rescues),
            hog_handoffs: sum(|s| &s.hog_handoffs),
            kernel_threads: rt.spares.created.load(Relaxed),
        }
    }

    /// The topology the runtime uses (restricted to its CPUs).
    pub fn topology(&self) -> &Topology {
        &self.shared.topology
    }

    /// The configured quantum (hog bound).
    pub fn quantum(&self) -> Duration {
        self.shared.config.quantum
    }
}
