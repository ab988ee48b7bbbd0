//! PIOMan: the I/O event manager. It centralizes the progression of every pending request and
//! chooses, per CPU load, between polling and interrupt-style blocking waits.
//!
//! A *source* (a driver instance: one per NIC, not per request) registers an *ltask* with a
//! `poll` and, if it has one, a way to wait for its next event without spinning
//! ([`BlockingWait`]). Pioman then polls it at the right moments:
//! - **under marcel**: on idle LWPs (an idle core polls as long as the policy allows), at context
//!   switches (rate-limited), at the scheduler's periodic tick;
//! - **without marcel** (a plain pthread or C program, e.g. MPI + OpenMP): from progression threads,
//!   one per NUMA node, pinned, that poll while a core is idle and otherwise sleep in the sources'
//!   blocking waits or until the next tick;
//! - **in waiting threads**: [`Pioman::wait`] drives progress itself, then — as the [`Policy`]
//!   says — sleeps in the sources' blocking waits inside `marcel::blocking` (its LWP's other user
//!   threads keep running on a spare kernel thread) or parks until someone else completes it.
//!
//! Completion is signalled through [`Cond`], a bit mask whose signaller never touches it after
//! setting the bits, so a waiter may free it at once.
//!
//! ```
//! use pioman::{Cond, Pioman, Poll, PollCtx, Source};
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicU32, Ordering};
//!
//! /// A source completing a request after three polls.
//! struct Countdown { left: AtomicU32, done: Arc<Cond> }
//! impl Source for Countdown {
//!     fn name(&self) -> &str { "countdown" }
//!     fn poll(&self, _: &mut PollCtx) -> Poll {
//!         if self.left.fetch_sub(1, Ordering::Relaxed) == 1 { self.done.signal(1); Poll::Done } else { Poll::Idle }
//!     }
//! }
//!
//! let pio = Pioman::builder().without_marcel().build().unwrap();
//! let done = Arc::new(Cond::new());
//! pio.register(Arc::new(Countdown { left: AtomicU32::new(3), done: done.clone() }), Default::default()).unwrap();
//! pio.wait(&done, 1);
//! ```
//!
//! Observation: [`Pioman::stats`] (counters and latency histograms per source) and the
//! [`observe`] hooks (blocking waits as they begin and end), which madmpi's MPI_T shows.
//!
//! Configuration (builder values win): `PIOMAN_POLICY` (`poll`, `block`, `timer`, `adaptive`
//! (default), or a name registered with [`policy::register`]), `PIOMAN_TICK_US` (default 1000),
//! `PIOMAN_TICK_SLACK_US` (how late a progression thread's tick may come, to share an interrupt
//! the CPU takes anyway: default 4 ms, or four ticks when less; 0 for the kernel's 50 µs),
//! `PIOMAN_SPIN_US` (waiters' spin before sleeping, default 100), `PIOMAN_THREADS` (progression
//! threads without marcel: `0`, or a count; default one per NUMA node), `PIOMAN_THREAD_NICE`
//! (the nice value of a progression thread pinned to the application's one CPU, where allowed;
//! default -10, 0 keeps the process's), `PIOMAN_STATS=path` (JSON
//! statistics written when the instance shuts down or the process exits; instance `k > 0` writes
//! `path.k`).

pub mod clock;
mod cond;
mod engine;
pub mod eventfd;
mod handover_alarm;
mod hooks;
mod loom;
mod ltask;
mod machine;
pub mod observe;
mod own_cpu;
pub mod policy;
mod source;
pub mod stats;
mod threads;
mod timer_slack;
mod waiters;
mod waitset;
mod watch;

pub use cond::Cond;
pub use ltask::{LTASK_CANCELLED, LTASK_DONE};
pub use own_cpu::CONTENDED_HOLD;
pub use policy::{AfterSpin, IdleAction, MachineState, Policy, WaitPlan};
pub use source::{Binding, BlockingWait, Context, Hints, Kind, Options, Poll, PollCtx, Source};
pub use stats::{HistogramSnapshot, Snapshot, SourceSnapshot};

use engine::{Inner, PolicyCell};
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// Configures a [`Pioman`].
#[derive(Default)]
pub struct Builder {
    policy: Option<Arc<dyn Policy>>,
    marcel: Option<Option<marcel::Handle>>,
    threads: Option<usize>,
    tick: Option<Duration>,
    stats_path: Option<Option<PathBuf>>,
    switch_stride: Option<u64>,
}

impl Builder {
    /// The policy (else `PIOMAN_POLICY`, else adaptive).
    pub fn policy(mut self, p: Arc<dyn Policy>) -> Self {
        self.policy = Some(p);
        self
    }
    /// Runs under this marcel runtime (default: the caller's, if it runs in one).
    pub fn marcel(mut self, h: marcel::Handle) -> Self {
        self.marcel = Some(Some(h));
        self
    }
    /// Runs without marcel even if the caller is in a marcel runtime.
    pub fn without_marcel(mut self) -> Self {
        self.marcel = Some(None);
        self
    }
    /// Progression threads (per NUMA node by default; 0 for none). Under marcel they only do
    /// background blocking waits.
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = Some(n);
        self
    }
    /// Tick period (ticks poll under the `timer` policy and bound every sleep).
    pub fn tick(mut self, d: Duration) -> Self {
        self.tick = Some(d);
        self
    }
    /// Where to write the JSON statistics at shutdown (else `PIOMAN_STATS`).
    pub fn stats_path(mut self, p: Option<PathBuf>) -> Self {
        self.stats_path = Some(p);
        self
    }
    /// Poll at every n-th context switch when the policy polls at switches (default 16).
    pub fn switch_stride(mut self, n: u64) -> Self {
        self.switch_stride = Some(n);
        self
    }

    /// Starts the instance. Installs the workspace's logging backend if the program has none
    /// (`pm2_log::init`).
    pub fn build(self) -> io::Result<Pioman> {
        pm2_log::init();
        let invalid = |m: String| io::Error::new(io::ErrorKind::InvalidInput, m);
        let policy = match self.policy {
            Some(p) => p,
            None => policy::from_env().map_err(invalid)?,
        };
        let tick =
            match self.tick {
                Some(t) => t,
                None => match std::env::var("PIOMAN_TICK_US") {
                    Ok(v) => Duration::from_micros(v.trim().parse().map_err(|_| {
                        invalid(format!("pioman: PIOMAN_TICK_US={v:?}: expected microseconds"))
                    })?),
                    Err(_) => Duration::from_millis(1),
                },
            };
        if tick < Duration::from_micros(50) {
            return Err(invalid("pioman: the tick must be at least 50 µs".into()));
        }
        let threads = match self.threads {
            Some(n) => n,
            None => match std::env::var("PIOMAN_THREADS") {
                Ok(v) => v
                    .trim()
                    .parse()
                    .map_err(|_| invalid(format!("pioman: PIOMAN_THREADS={v:?}: expected a count")))?,
                Err(_) => machine::topology().numa_nodes().max(1),
            },
        };
        let marcel = match self.marcel {
            Some(m) => m,
            None => marcel::Handle::current(),
        };
        let id = NEXT_ID.fetch_add(1, Relaxed);
        // An explicit path is used as is; the environment's is shared by every instance of the
        // process, so instance k > 0 adds ".k".
        let stats_path = match self.stats_path {
            Some(p) => p,
            None => std::env::var_os("PIOMAN_STATS")
                .map(PathBuf::from)
                .map(|p| if id == 0 { p } else { PathBuf::from(format!("{}.{id}", p.display())) }),
        };
        let inner =
            Arc::new(Inner::new(id, policy, marcel, tick, self.switch_stride.unwrap_or(16), stats_path)?);
        let mut background = Vec::new();
        let nodes = machine::topology().numa_nodes().max(1);
        for k in 0..threads {
            let node = k % nodes;
            let mut cpus = threads::cpus_of_node(node);
            if cpus.is_empty() {
                cpus = marcel::topology::allowed_cpus().to_vec();
            }
            let scope = machine::Scope { cpu: None, numa: Some(node), any: true };
            let i2 = inner.clone();
            background.push(
                std::thread::Builder::new()
                    .name(format!("pioman-node{node}"))
                    .spawn(move || threads::progression_main(i2, scope, cpus))?,
            );
        }
        let hook = inner.marcel.as_ref().map(|h| {
            h.add_hooks(
                Arc::new(hooks::Hooks(inner.clone())),
                marcel::HookMask { idle: true, switch: true, tick: Some(tick) },
            )
        });
        let owner = Arc::new(Owner {
            inner: inner.clone(),
            background: Mutex::new(background),
            hook,
            core_threads: Mutex::new(Vec::new()),
        });
        live().lock().unwrap().push(Arc::downgrade(&owner));
        register_exit_dump();
        Ok(Pioman { inner, owner })
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// A running event manager. Clones share it; the last clone dropped shuts it down.
#[derive(Clone)]
pub struct Pioman {
    inner: Arc<Inner>,
    owner: Arc<Owner>,
}

/// Shuts the engine down when the last user handle goes (background threads hold only `Inner`).
struct Owner {
    inner: Arc<Inner>,
    background: Mutex<Vec<std::thread::JoinHandle<()>>>,
    core_threads: Mutex<Vec<(usize, std::thread::JoinHandle<()>)>>,
    hook: Option<marcel::HookId>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Owner {
    fn shutdown(&self) {
        if self.inner.shutdown.swap(true, SeqCst) {
            return;
        }
        if let (Some(h), Some(id)) = (&self.inner.marcel, self.hook) {
            h.remove_hooks(id);
        }
        self.inner.poke();
        let mut hs: Vec<_> = self.background.lock().unwrap().drain(..).collect();
        hs.extend(self.core_threads.lock().unwrap().drain(..).map(|(_, h)| h));
        // The last handle may be dropped by one of these threads itself (a source's poll that
        // frees the last communicator): that thread ends by itself once it sees the flag, and
        // joining it from itself would fail.
        let me = std::thread::current().id();
        for h in hs.into_iter().filter(|h| h.thread().id() != me) {
            let _ = h.join();
        }
        dump_stats(&self.inner);
    }
}

impl Pioman {
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// An instance with the defaults and the environment's settings.
    pub fn new() -> io::Result<Pioman> {
        Builder::default().build()
    }

    /// Registers a progression source. Its blocking wait (if any, and if `opts.may_block`) joins
    /// the blocking waits of the contexts that may poll it.
    pub fn register(&self, source: Arc<dyn Source>, opts: Options) -> io::Result<LtaskHandle> {
        let custom = opts.may_block && source.blocking() == BlockingWait::Custom;
        let lt = self.inner.register(source, opts)?;
        if custom {
            let scope = match opts.binding {
                Binding::Core(c) => machine::Scope::of_cpu(c),
                Binding::Numa(n) => machine::Scope { cpu: None, numa: Some(n), any: false },
                Binding::Anywhere => machine::Scope::ANYWHERE,
            };
            let (i2, l2) = (self.inner.clone(), lt.clone());
            let h = std::thread::Builder::new()
                .name(format!("pioman-wait{}", lt.id))
                .spawn(move || threads::custom_wait_main(i2, l2, scope))?;
            self.owner.background.lock().unwrap().push(h);
        }
        if let (Binding::Core(c), None) = (opts.binding, &self.inner.marcel) {
            self.ensure_core_thread(c)?;
        }
        Ok(LtaskHandle { lt, inner: Arc::downgrade(&self.inner) })
    }

    /// Without marcel, tasks bound to a core get a progression thread pinned there.
    fn ensure_core_thread(&self, cpu: usize) -> io::Result<()> {
        let mut cts = self.owner.core_threads.lock().unwrap();
        if cts.iter().any(|(c, _)| *c == cpu) {
            return Ok(());
        }
        let i2 = self.inner.clone();
        let scope = machine::Scope { cpu: Some(cpu), numa: None, any: false };
        let h = std::thread::Builder::new()
            .name(format!("pioman-cpu{cpu}"))
            .spawn(move || threads::progression_main(i2, scope, vec![cpu]))?;
        cts.push((cpu, h));
        Ok(())
    }

    /// Polls, once, every task the calling context may poll. Returns how many found something.
    pub fn progress(&self) -> usize {
        let scope = match marcel::current_lwp() {
            Some(v) if v < self.inner.vp_scopes.len() => self.inner.vp_scopes[v],
            _ => machine::Scope::here(),
        };
        self.inner.progress(Context::Explicit, scope, false, None).0
    }

    /// Whether the calling thread's last progress pass (here or in a wait) found a source being
    /// polled by another context. A caller looping on nonblocking tests should then yield its
    /// CPU: with more threads than cores, that context may have been preempted in the middle of
    /// its poll, and nobody else can poll the source until it runs again.
    pub fn progress_was_contended() -> bool {
        engine::last_progress_contended()
    }

    /// Whether the calling thread is one of pioman's progression threads (a source's `arm` may
    /// ask its peers to wake such a sleeper less often than a thread waiting in the library).
    pub fn in_progression_thread() -> bool {
        threads::in_progression_thread()
    }

    /// Whether an application thread waits in the library now (spinning on the sources or
    /// sleeping). A waiter that goes to sleep while another context sleeps in the sources'
    /// fds pokes it, so that a source armed for urgent events only, because nobody waited, is
    /// re-armed.
    pub fn application_waiting(&self) -> bool {
        self.inner.application_waiting()
    }

    /// Waits until some bit of `mask` is set in `cond`, driving progress as the policy says.
    pub fn wait(&self, cond: &Cond, mask: u32) {
        self.inner.wait(cond, mask);
    }

    /// Like [`Pioman::wait`], for at most `timeout`. Returns whether the condition holds.
    pub fn wait_timeout(&self, cond: &Cond, mask: u32, timeout: Duration) -> bool {
        self.inner.wait_until(cond, mask, Instant::now().checked_add(timeout), None, None)
    }

    /// Like [`Pioman::wait`], polling `first` — the task of the source the waiter waits on —
    /// several times between two rounds over every task: an arrival there is seen within one
    /// poll of that source, not one round. A reentrant source is probed between those polls
    /// ([`Source::probe`]) and polled when its probe says so: an arrival is then seen within
    /// one probe. The polls count in the task's statistics as a waiter's; the policy still
    /// decides how long to spin and when to sleep.
    pub fn wait_polling(&self, cond: &Cond, mask: u32, first: &Poller) {
        self.inner.wait_until(cond, mask, None, Some(&first.0), None);
    }

    /// [`Pioman::wait_polling`] with the waiter's own look at what it waits on: the waiter calls
    /// `quick` (`None`: nothing there; `Some(found)`: it polled) instead of `first`'s probe and
    /// poll — a narrower poll (one peer's link, say) that skips the source's general work — for
    /// its first microsecond before anything else (unless oversubscribed or other threads wait),
    /// then between its rounds over every task. The polls count as `first`'s; the policy
    /// decides how long to spin and when to sleep.
    pub fn wait_polling_with(
        &self,
        cond: &Cond,
        mask: u32,
        first: &Poller,
        quick: &mut dyn FnMut() -> Option<bool>,
    ) {
        self.inner.wait_until(cond, mask, None, Some(&first.0), Some(quick));
    }

    /// Changes the policy at run time.
    pub fn set_policy(&self, p: Arc<dyn Policy>) {
        self.inner.policy.store(Arc::new(PolicyCell(p)));
        self.inner.poke();
    }

    pub fn policy_name(&self) -> String {
        self.inner.policy().name().to_string()
    }

    /// Says whether more processes of the job run on this machine than it has cores (the
    /// communication layer knows: nmad sets it from the launcher's local rank count); policies
    /// see it in [`MachineState::oversubscribed`].
    pub fn set_oversubscribed(&self, yes: bool) {
        self.inner.oversubscribed.store(yes, std::sync::atomic::Ordering::Relaxed);
    }

    /// What the policy would see now from the calling thread.
    pub fn machine_state(&self) -> MachineState {
        self.inner.machine(marcel::current_lwp())
    }

    pub fn under_marcel(&self) -> bool {
        self.inner.marcel.is_some()
    }

    /// Counters and histograms of every source (finished ones are folded in by name).
    pub fn stats(&self) -> Snapshot {
        self.inner.stats()
    }

    /// Stops the progression threads and marcel hooks, and writes the statistics if asked.
    /// Idempotent; also done when the last handle is dropped.
    pub fn shutdown(&self) {
        self.owner.shutdown();
    }
}

/// A registered task. Dropping the handle leaves the task registered (until it reports
/// [`Poll::Done`], is cancelled or pioman shuts down).
pub struct LtaskHandle {
    lt: Arc<ltask::Ltask>,
    inner: Weak<Inner>,
}

/// A task a waiting thread polls first ([`Pioman::wait_polling`]); it does not keep the task
/// registered (a removed task is simply not polled).
#[derive(Clone)]
pub struct Poller(Arc<ltask::Ltask>);

impl LtaskHandle {
    /// What waiting threads give [`Pioman::wait_polling`] to poll this task first.
    pub fn poller(&self) -> Poller {
        Poller(self.lt.clone())
    }

    /// Asks for the task to stop; returns at once. See [`LtaskHandle::remove`].
    pub fn cancel(&self) {
        match self.inner.upgrade() {
            Some(inner) => {
                inner.cancel(&self.lt);
            }
            None => {
                let _ = self.lt.state.cancel();
            }
        }
    }

    /// Cancels the task and returns once no poll of it runs or will run (the source may then be
    /// freed). Must not be called from the task's own poll.
    pub fn remove(self) {
        match self.inner.upgrade() {
            Some(inner) => inner.remove(&self.lt),
            None => {
                let _ = self.lt.state.cancel();
            }
        }
    }

    /// Waits for the task to finish; returns `LTASK_DONE` or `LTASK_CANCELLED`.
    pub fn wait(&self) -> u32 {
        if let Some(inner) = self.inner.upgrade() {
            inner.wait(&self.lt.completion, LTASK_DONE | LTASK_CANCELLED);
        } else {
            while !self.lt.state.is_finished() {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        self.lt.completion.get()
    }

    pub fn is_finished(&self) -> bool {
        self.lt.state.is_finished()
    }

    /// The task's completion condition (bits `LTASK_DONE` / `LTASK_CANCELLED`).
    pub fn completion(&self) -> &Cond {
        &self.lt.completion
    }

    pub fn stats(&self) -> SourceSnapshot {
        self.lt.stats.snapshot(self.lt.source.name())
    }
}

fn live() -> &'static Mutex<Vec<Weak<Owner>>> {
    static L: Mutex<Vec<Weak<Owner>>> = Mutex::new(Vec::new());
    &L
}

fn dump_stats(inner: &Inner) {
    let Some(path) = &inner.stats_path else { return };
    let json = inner.stats().to_json();
    if let Err(e) = std::fs::write(path, serde_json::to_vec_pretty(&json).unwrap_or_default()) {
        log::error!("cannot write statistics to {}: {e}", path.display());
    }
}

/// Instances still alive at process exit write their statistics then.
fn register_exit_dump() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    extern "C" fn at_exit() {
        let owners: Vec<_> =
            live().lock().map(|l| l.iter().filter_map(Weak::upgrade).collect()).unwrap_or_default();
        for o in owners {
            dump_stats(&o.inner);
        }
    }
    ONCE.call_once(|| {
        if std::env::var_os("PIOMAN_STATS").is_some() {
            // SAFETY: registers a plain extern "C" fn with no captured state.
            unsafe { libc::atexit(at_exit) };
        }
    });
}
