//! The engine: the registry of ltasks, `progress` (one pass over the tasks a context may poll),
//! and the ways a thread waits for a condition.
//!
//! It owns no thread itself: marcel's hooks (`hooks.rs`) and progression threads (`threads.rs`)
//! call in. It must not know what a source does: it sees `Source` and `Policy` only.

use crate::clock;
use crate::cond::{Cond, Wake};
use crate::handover_alarm::HandoverAlarm;
use crate::ltask::{Cancel, Ended, LTASK_CANCELLED, LTASK_DONE, Ltask, State};
use crate::machine::{self, Scope};
use crate::observe::Event;
use crate::own_cpu;
use crate::policy::{AfterSpin, MachineState, Policy};
use crate::source::{Binding, BlockingWait, Context, Options, Poll, PollCtx, Source};
use crate::stats::{Snapshot, SourceStats, context_index};
use crate::waiters::{Kind as WaitKind, Waiters};
use crate::waitset::{Doorbell, ScopeSets, WaitSet};
use crate::watch::Watch;
use arc_swap::ArcSwap;
use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The policy in force (a sized wrapper for ArcSwap).
pub(crate) struct PolicyCell(pub(crate) Arc<dyn Policy>);

pub(crate) struct Inner {
    pub(crate) id: u64,
    tasks: ArcSwap<Vec<Arc<Ltask>>>,
    registry: Mutex<()>,
    next_task: AtomicU64,
    pub(crate) policy: ArcSwap<PolicyCell>,
    pub(crate) marcel: Option<marcel::Handle>,
    /// Scope of each marcel LWP.
    pub(crate) vp_scopes: Vec<Scope>,
    pub(crate) sets: ScopeSets,
    waitsets: Mutex<HashMap<Scope, Vec<WaitSet>>>,
    pub(crate) tick: Duration,
    pub(crate) shutdown: AtomicBool,
    /// Per NUMA node, the waiters spinning on its sources or sleeping in their blocking waits
    /// (progression threads rest while they cover the sources), and the handover.
    waiters: Vec<Waiters>,
    /// Per NUMA node, the alarm the last waiter to leave arms for a progression thread that
    /// asked for the handover.
    handover_alarms: Vec<HandoverAlarm>,
    /// Per NUMA node, who sleeps in the sources' fds (the other blocked contexts sleep on their
    /// doorbells).
    watches: Vec<Watch<Arc<Doorbell>>>,
    /// When (`clock::now_ns`) a waiter of each node last spun: between two waits of a busy
    /// ping-pong the spinning count is briefly zero, and a progression thread starting to spin then
    /// would steal a core from the application for a whole slice.
    last_spin_ns: Vec<AtomicU64>,
    /// When a waiter of each node last left a wait (spinning or sleeping): a progression thread
    /// alone on the application's CPU takes the sources over only once the application has
    /// been out of the library a while (see `threads`).
    last_wait_ns: Vec<AtomicU64>,
    /// Cached `poll_at_switch` decision (refreshed at ticks: the switch hook must stay cheap).
    pub(crate) switch_poll: AtomicBool,
    /// Per-LWP switch counters (the switch hook polls every `switch_stride` switches).
    pub(crate) switch_counts: Vec<crossbeam_utils::CachePadded<AtomicU64>>,
    pub(crate) switch_stride: u64,
    /// Progression threads to poke when something changes (registration, shutdown).
    pub(crate) pokes: Mutex<Vec<std::thread::Thread>>,
    /// Doorbells of progression threads' wait sets (poked too: they may sleep in epoll).
    pub(crate) poke_bells: Mutex<Vec<Arc<crate::waitset::Doorbell>>>,
    pub(crate) stats_path: Option<std::path::PathBuf>,
    /// More processes of the job share this machine than it has cores (told by the
    /// communication layer; see `MachineState::oversubscribed`).
    pub(crate) oversubscribed: AtomicBool,
    /// Time contexts spent asleep in the sources' blocking waits, in ns (summed over contexts).
    blocked_ns: AtomicU64,
    /// Statistics of finished tasks, folded by source name.
    retired: Mutex<Vec<crate::stats::SourceSnapshot>>,
}

thread_local! {
    /// Whether this thread's last progress pass found a task being polled by another context.
    static CONTENDED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the calling thread's last progress pass found a source busy in another context (see
/// [`crate::Pioman::progress_was_contended`]).
pub(crate) fn last_progress_contended() -> bool {
    CONTENDED.get()
}

/// Poll rounds between two clock reads while a waiter spins.
const CLOCK_EVERY: u32 = 16;

/// Polls of a waiter's own source between two rounds over every task (see `wait_until`): a
/// round costs about as much as this many direct polls of one shared-memory source.
pub(crate) const FIRST_POLLS: u32 = 8;

/// Probes of a waiter's own reentrant source between two rounds over every task, at most (a
/// round ends after [`FIRST_POLLS`] polls too): a probe of a shared-memory source costs a few
/// dozen instructions, a round about 1,000, and an arrival during a round waits for it.
pub(crate) const FIRST_PROBES: u32 = 128;

/// How long a waiter looks at its own reentrant source before it enters the general loop (see
/// `Inner::pre_spin`): a reply on shared memory comes within this, and the general loop's set-up
/// (the caller's scope, the machine state, the policy's plan, the waiter counts: ~900
/// instructions) costs about as much as the whole receive it waits for.
const PRE_SPIN_NS: u64 = 1_000;

/// A waiter's polls of a reentrant source outside the run state, counted locally and added to
/// the task's statistics once per spin.
#[derive(Default)]
struct DirectPolls {
    polls: u64,
    useful: u64,
}

impl DirectPolls {
    /// Polls `lt`'s source directly (a panic there cancels the task, as in `run_one`); whether
    /// it found something. An ended task's source is still polled: the waiter's request may
    /// depend on it (see `Source::reentrant`).
    fn poll(&mut self, lt: &Arc<Ltask>) -> bool {
        let p = guarded_poll(lt, &mut PollCtx { event_at: None, kind: Context::Waiter });
        self.polls += 1;
        let found = p != Poll::Idle;
        self.useful += u64::from(found);
        found
    }

    /// Probes `lt`'s source (see `Source::probe`); a panic there cancels the task as a poll's
    /// would, and says "poll it" (the poll then finds the task cancelled).
    fn probe(&mut self, lt: &Arc<Ltask>) -> bool {
        guarded(lt, "probe", || lt.source.probe(), true)
    }

    /// Runs the waiter's own look `q` at `lt`'s source (a panic there cancels the task as a
    /// poll's would): `None` if it did not poll, else whether its poll found something.
    fn quick(&mut self, lt: &Ltask, q: &mut (dyn FnMut() -> Option<bool> + '_)) -> Option<bool> {
        let found = guarded(lt, "poll", q, None)?;
        self.polls += 1;
        self.useful += u64::from(found);
        Some(found)
    }

    /// One look at `lt`'s source for a waiter: its own ([`DirectPolls::quick`]) if it has one,
    /// else the source's probe, then its poll if the probe says so. `None` if it did not
    /// poll, else whether the poll found something.
    fn look(&mut self, lt: &Arc<Ltask>, quick: Quick<'_, '_>) -> Option<bool> {
        match quick {
            Some(q) => self.quick(lt, q),
            None => self.probe(lt).then(|| self.poll(lt)),
        }
    }

    fn record(&self, lt: &Ltask) {
        if self.polls == 0 {
            return;
        }
        let st = &lt.stats;
        st.direct_polls.fetch_add(self.polls, Relaxed);
        if self.useful > 0 {
            st.useful_polls.fetch_add(self.useful, Relaxed);
            st.by_context[context_index(Context::Waiter)].fetch_add(self.useful, Relaxed);
        }
    }
}

/// Polls `lt`'s source: a panicking source must not take a marcel LWP, a progression thread or a
/// waiter down with it — its task is cancelled and the poll counts as idle.
fn guarded_poll(lt: &Ltask, pctx: &mut PollCtx) -> Poll {
    guarded(lt, "poll", || lt.source.poll(pctx), Poll::Idle)
}

/// Runs `call` (the source's `what`), or cancels `lt`'s task if it panics and answers
/// `panicked`.
#[inline]
fn guarded<T>(lt: &Ltask, what: &str, call: impl FnOnce() -> T, panicked: T) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(call)) {
        Ok(v) => v,
        Err(_) => {
            log::error!("source {:?} panicked in {what}; its task is cancelled", lt.source.name());
            let _ = lt.state.cancel();
            panicked
        }
    }
}

/// What a waiter polls first, if anything: the task of the source it waits on.
pub(crate) type First<'a> = Option<&'a Arc<Ltask>>;

/// The waiter's own look at what it waits on, used instead of its source's probe and poll (see
/// [`crate::Pioman::wait_polling_with`]).
pub(crate) type Quick<'a, 'f> = Option<&'a mut (dyn FnMut() -> Option<bool> + 'f)>;

impl Inner {
    pub(crate) fn new(
        id: u64,
        policy: Arc<dyn Policy>,
        marcel: Option<marcel::Handle>,
        tick: Duration,
        switch_stride: u64,
        stats_path: Option<std::path::PathBuf>,
    ) -> io::Result<Inner> {
        let vp_scopes: Vec<Scope> = match &marcel {
            Some(h) => (0..h.num_lwps()).map(|v| Scope::of_cpu(h.vp_state(v).os_cpu)).collect(),
            None => Vec::new(),
        };
        let nodes = machine::topology().numa_nodes().max(1);
        Ok(Inner {
            id,
            tasks: ArcSwap::from_pointee(Vec::new()),
            registry: Mutex::new(()),
            next_task: AtomicU64::new(1),
            policy: ArcSwap::from_pointee(PolicyCell(policy)),
            switch_counts: (0..vp_scopes.len())
                .map(|_| crossbeam_utils::CachePadded::new(AtomicU64::new(0)))
                .collect(),
            marcel,
            vp_scopes,
            sets: ScopeSets::new()?,
            waitsets: Mutex::new(HashMap::new()),
            tick,
            shutdown: AtomicBool::new(false),
            waiters: (0..nodes).map(|_| Waiters::default()).collect(),
            handover_alarms: (0..nodes).map(|_| HandoverAlarm::new()).collect::<io::Result<_>>()?,
            watches: (0..nodes).map(|_| Watch::new()).collect(),
            last_spin_ns: (0..nodes).map(|_| AtomicU64::new(0)).collect(),
            last_wait_ns: (0..nodes).map(|_| AtomicU64::new(0)).collect(),
            switch_poll: AtomicBool::new(false),
            switch_stride: switch_stride.max(1),
            pokes: Mutex::new(Vec::new()),
            poke_bells: Mutex::new(Vec::new()),
            stats_path,
            oversubscribed: AtomicBool::new(false),
            blocked_ns: AtomicU64::new(0),
            retired: Mutex::new(Vec::new()),
        })
    }

    pub(crate) fn policy(&self) -> Arc<dyn Policy> {
        self.policy.load().0.clone()
    }

    /// What the policy sees, from LWP `vp` (marcel) or from the calling thread.
    pub(crate) fn machine(&self, vp: Option<usize>) -> MachineState {
        self.machine_seen(vp, true)
    }

    /// [`Self::machine`], re-reading the kernel's counts only if `refresh` (see
    /// `machine::os_state`).
    fn machine_seen(&self, vp: Option<usize>, refresh: bool) -> MachineState {
        let mut m = match &self.marcel {
            Some(h) => machine::marcel_state(h, vp),
            None => machine::os_state(refresh),
        };
        m.oversubscribed = self.oversubscribed.load(Relaxed);
        m
    }

    // ---------------------------------------------------------------- registry

    pub(crate) fn register(&self, source: Arc<dyn Source>, opts: Options) -> io::Result<Arc<Ltask>> {
        match opts.binding {
            Binding::Core(c) if !marcel::topology::allowed_cpus().contains(&c) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("pioman: CPU {c} is not available"),
                ));
            }
            Binding::Numa(n) if n >= machine::topology().numa_nodes().max(1) => {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("pioman: no NUMA node {n}")));
            }
            // Under marcel, bound tasks are polled by the LWPs of their core or node only.
            Binding::Core(c) if self.marcel.is_some() && !self.vp_scopes.iter().any(|s| s.cpu == Some(c)) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "pioman: no marcel LWP runs on CPU {c}, so nothing could poll a task bound there"
                    ),
                ));
            }
            _ => {}
        }
        let lt = Arc::new(Ltask {
            id: self.next_task.fetch_add(1, Relaxed),
            source,
            opts,
            state: State::new(),
            completion: Cond::new(),
            stats: SourceStats::default(),
        });
        if let Some(fd) = blocking_fd(&lt) {
            self.sets.add(opts.binding, fd)?;
        }
        let _g = self.registry.lock().unwrap();
        let mut v: Vec<Arc<Ltask>> = (**self.tasks.load()).clone();
        v.push(lt.clone());
        self.tasks.store(Arc::new(v));
        drop(_g);
        self.poke();
        Ok(lt)
    }

    /// Drops a finished task from the registry.
    fn retire(&self, lt: &Ltask) {
        let _g = self.registry.lock().unwrap();
        let old = self.tasks.load();
        if !old.iter().any(|t| t.id == lt.id) {
            return; // already retired
        }
        let v: Vec<Arc<Ltask>> = old.iter().filter(|t| t.id != lt.id).cloned().collect();
        self.tasks.store(Arc::new(v));
        drop(_g);
        if let Some(fd) = blocking_fd(lt) {
            self.sets.remove(lt.opts.binding, fd);
        }
        let snap = lt.stats.snapshot(lt.source.name());
        let mut r = self.retired.lock().unwrap();
        match r.iter_mut().find(|s| s.name == snap.name) {
            Some(s) => s.merge(&snap),
            None => r.push(snap),
        }
    }

    /// Asks `lt` to stop; returns at once. Returns whether a poll of it may still be running.
    pub(crate) fn cancel(&self, lt: &Arc<Ltask>) -> bool {
        match lt.state.cancel() {
            Cancel::Now => {
                lt.finish(Ended::Cancelled);
                self.retire(lt); // its fd must leave the epoll sets: nobody will read it any more
                false
            }
            Cancel::Requested => true, // the running poll finishes the cancel and retires it
            Cancel::AlreadyFinished => false,
        }
    }

    /// Cancels `lt` and returns once no poll of it runs or will run.
    pub(crate) fn remove(&self, lt: &Arc<Ltask>) {
        if self.cancel(lt) {
            self.wait(&lt.completion, LTASK_DONE | LTASK_CANCELLED);
        }
    }

    /// Wakes the progression threads and idle marcel LWPs so that they look at the registry and
    /// policy again.
    /// Whether an application thread waits in the library (spinning or sleeping), on any node.
    pub(crate) fn application_waiting(&self) -> bool {
        self.waiters.iter().any(|w| w.any(WaitKind::Spin) || w.any(WaitKind::Block))
    }

    pub(crate) fn poke(&self) {
        for t in self.pokes.lock().unwrap().iter() {
            t.unpark();
        }
        for b in self.poke_bells.lock().unwrap().iter() {
            b.ring();
        }
        if let Some(h) = &self.marcel {
            h.wake_idle_lwps();
        }
    }

    /// The alarm of `node`'s handover (see `handover_alarm`).
    pub(crate) fn handover_alarm(&self, node: usize) -> &HandoverAlarm {
        &self.handover_alarms[node.min(self.handover_alarms.len() - 1)]
    }

    /// A progression thread of `node` is about to sleep because waiters cover its sources: asks
    /// the last one to wake it (arming its alarm) when it leaves the library. `false` if nobody
    /// waits any more (then nobody will: do not wait for them).
    pub(crate) fn ask_handover(&self, node: usize) -> bool {
        self.waiters.get(node).is_some_and(Waiters::ask_handover)
    }

    /// Whether the handover asked by [`Inner::ask_handover`] is still to come.
    pub(crate) fn handover_pending(&self, node: usize) -> bool {
        self.waiters.get(node).is_some_and(Waiters::pending)
    }

    /// Whether the handover asked by [`Inner::ask_handover`] came (a waiter took the request).
    pub(crate) fn handed_over(&self, node: usize) -> bool {
        self.waiters.get(node).is_some_and(Waiters::handed_over)
    }

    /// Whether any task may be polled from `scope`.
    pub(crate) fn has_tasks_in(&self, scope: Scope) -> bool {
        self.tasks.load().iter().any(|t| scope.allows(t.opts.binding))
    }

    /// Whether a source of `scope` can be waited for in a blocking call.
    pub(crate) fn has_blocking_sources(&self, scope: Scope) -> bool {
        self.tasks.load().iter().any(|t| scope.allows(t.opts.binding) && blocking_fd(t).is_some())
    }

    /// Arms the blocking-fd sources of `scope` before a sleep in their fds, then sleeps with
    /// `sleep` unless one of them already has an event. Returns `sleep`'s result, or `true`
    /// (an event is there) without sleeping.
    pub(crate) fn sleep_armed(&self, scope: Scope, sleep: impl FnOnce() -> bool) -> bool {
        let tasks = self.tasks.load();
        let mut armed = 0;
        let mut ready = false;
        for t in tasks.iter().filter(|t| scope.allows(t.opts.binding) && blocking_fd(t).is_some()) {
            armed += 1;
            if !t.source.arm() {
                ready = true;
                break;
            }
        }
        let woke = ready || {
            crate::observe::EVENTS
                .fire(|| Event::BlockingWaitBegin { instance: self.id, sources: armed as u32 });
            let t0 = clock::now_ns();
            let woke = sleep();
            let slept_ns = clock::now_ns().saturating_sub(t0);
            self.blocked_ns.fetch_add(slept_ns, Relaxed);
            crate::observe::EVENTS.fire(|| Event::BlockingWaitEnd { instance: self.id, woke, slept_ns });
            woke
        };
        for t in tasks.iter().filter(|t| scope.allows(t.opts.binding) && blocking_fd(t).is_some()).take(armed)
        {
            t.source.disarm();
        }
        woke
    }

    // ---------------------------------------------------------------- progress

    /// One pass over the tasks `scope` may poll. `busy`: the context is a busy-poll (idle loop,
    /// context switch), which skips inactive sources and those the policy keeps off busy polling.
    /// Returns (useful polls, tasks that were candidates).
    pub(crate) fn progress(
        &self,
        ctx: Context,
        scope: Scope,
        busy: bool,
        m: Option<&MachineState>,
    ) -> (usize, usize) {
        let tasks = self.tasks.load();
        let policy = if busy { Some(self.policy()) } else { None };
        let mut useful = 0;
        let mut candidates = 0;
        let mut contended = false;
        // One clock read per round, not per task: it costs as much as an idle poll.
        let now_ns = if tasks.is_empty() { 0 } else { crate::clock::now_ns() };
        for lt in tasks.iter() {
            if !scope.allows(lt.opts.binding) {
                continue;
            }
            if let (Some(p), Some(m)) = (&policy, m)
                && (!lt.source.is_active() || !p.busy_poll_allowed(lt.opts.hints, m))
            {
                continue;
            }
            candidates += 1;
            match self.run_one(lt, ctx, now_ns) {
                Some(found) => useful += found as usize,
                None => contended = true,
            }
        }
        CONTENDED.set(contended);
        (useful, candidates)
    }

    /// Polls one task if nobody else does. Returns whether the poll found something, or `None`
    /// if another context was polling it.
    fn run_one(&self, lt: &Arc<Ltask>, ctx: Context, now_ns: u64) -> Option<bool> {
        if !lt.state.try_begin_run() {
            return None;
        }
        let mut pctx = PollCtx { event_at: None, kind: ctx };
        let p = guarded_poll(lt, &mut pctx);
        let st = &lt.stats;
        // Only the context running the task writes these (the run state excludes the others):
        // plain stores, no read-modify-write on every idle poll.
        st.polls.store(st.polls.load(Relaxed) + 1, Relaxed);
        let prev = st.last_poll_ns.load(Relaxed);
        st.last_poll_ns.store(now_ns.max(prev), Relaxed);
        if p != Poll::Idle {
            st.useful_polls.fetch_add(1, Relaxed);
            st.by_context[context_index(ctx)].fetch_add(1, Relaxed);
            if prev != 0 {
                st.poll_gap.record(Duration::from_nanos(now_ns.saturating_sub(prev)));
            }
            if let Some(t) = pctx.event_at {
                st.detect.record(t.elapsed());
            }
        }
        let ended = lt.state.end_run(lt.finished_by(p));
        if ended != Ended::Again {
            lt.finish(ended);
            self.retire(lt);
        }
        Some(p != Poll::Idle)
    }

    // ---------------------------------------------------------------- waiting

    /// The scope of the calling context: its marcel LWP, or the CPU it runs on.
    fn caller_scope(&self) -> (Scope, Option<usize>) {
        match marcel::current_lwp() {
            Some(v) if self.marcel.is_some() && v < self.vp_scopes.len() => (self.vp_scopes[v], Some(v)),
            _ => (Scope::here(), None),
        }
    }

    /// Waits until some bit of `mask` is set in `cond`, as the policy says: spin while driving
    /// progress, then sleep in the sources' blocking waits or park.
    pub(crate) fn wait(&self, cond: &Cond, mask: u32) {
        self.wait_until(cond, mask, None, None, None);
    }

    /// Like `wait`, giving up at `deadline`. Returns whether the condition holds.
    ///
    /// Each round asks the policy for a plan (the machine changes while we wait): spin while
    /// driving progress, then sleep for at most a tick, in the sources' blocking waits or parked.
    ///
    /// `first`, if given, is the task of what the waiter waits on: the spin polls it
    /// [`FIRST_POLLS`] times between two rounds over every task (directly if its source is
    /// reentrant, when its probe says so, probing it up to [`FIRST_PROBES`] times), so that an
    /// arrival there is seen within one poll or probe rather than one round.
    pub(crate) fn wait_until(
        &self,
        cond: &Cond,
        mask: u32,
        deadline: Option<Instant>,
        first: First<'_>,
        mut quick: Quick<'_, '_>,
    ) -> bool {
        if cond.test(mask) {
            return true;
        }
        if let Some(lt) = first
            && deadline.is_none()
            && self.pre_spin(cond, mask, lt, quick.as_deref_mut())
        {
            return true;
        }
        let (scope, vp) = self.caller_scope();
        let r = self.wait_rounds(cond, mask, deadline, scope, vp, first, quick);
        self.left_library(self.node_index(scope));
        r
    }

    /// The waiter's first [`PRE_SPIN_NS`]: looks at its own source `lt` ([`DirectPolls::look`])
    /// and nothing else; whether the condition came. Only for a reentrant source (polled
    /// without the run state), a process with a core of its own and a thread alone waiting (an
    /// oversubscribed process, or threads that may share a CPU, leave the choice to spin at all
    /// to the policy). The policy decides everything past it: a spin this short is what any plan
    /// starts with.
    fn pre_spin(&self, cond: &Cond, mask: u32, lt: &Arc<Ltask>, mut quick: Quick<'_, '_>) -> bool {
        if !lt.source.reentrant() || self.oversubscribed.load(Relaxed) {
            return false;
        }
        // Counted as spinning: a progression thread stands back (it would take the source's
        // poll lock and make our probes fail).
        let node = if self.waiters.len() == 1 { 0 } else { self.node_index(self.caller_scope().0) };
        let waiters = &self.waiters[node];
        if waiters.waiting() > 0 {
            // Other threads wait too: they may share our CPU; the policy decides.
            return false;
        }
        waiters.enter(WaitKind::Spin);
        let mut direct = DirectPolls::default();
        let end = crate::clock::now_ns() + PRE_SPIN_NS;
        let mut round = 0u32;
        let came = loop {
            direct.look(lt, quick.as_deref_mut());
            if cond.test(mask) {
                break true;
            }
            round = round.wrapping_add(1);
            if round.is_multiple_of(CLOCK_EVERY) && crate::clock::now_ns() >= end {
                break false;
            }
            std::hint::spin_loop();
        };
        direct.record(lt);
        waiters.leave(WaitKind::Spin);
        if came {
            self.left_library(node);
        }
        came
    }

    /// A wait on NUMA node `node` ends: the application leaves the library.
    fn left_library(&self, node: usize) {
        self.last_wait_ns[node].store(crate::clock::now_ns(), Relaxed);
        if self.waiters[node].left_library() {
            // The progression thread that asked takes the sources over once the application
            // stayed out (see `handover_alarm`).
            self.handover_alarms[node].arm(crate::threads::APP_QUIET);
        }
    }

    #[allow(clippy::too_many_arguments)] // one wait's state, passed once
    fn wait_rounds(
        &self,
        cond: &Cond,
        mask: u32,
        deadline: Option<Instant>,
        scope: Scope,
        vp: Option<usize>,
        first: First<'_>,
        mut quick: Quick<'_, '_>,
    ) -> bool {
        // The run-queue delay at the previous re-plan (read only once a spin ran out: the fast
        // path makes no system call), and whether this round follows one.
        let mut run_delay: Option<u64> = None;
        let mut replan = false;
        loop {
            if cond.test(mask) {
                return true;
            }
            let mut machine = self.machine_seen(vp, replan);
            if self.marcel.is_none() {
                let w = &self.waiters[self.node_index(scope)];
                own_cpu::fill(&mut machine, replan, w.waiting(), w.spinning());
            }
            let plan = self.policy.load().0.wait(&machine);
            let q = quick.as_deref_mut();
            if let Some(r) = self.spin(cond, mask, scope, &plan, deadline, first, q, machine.waiters_only) {
                return r;
            }
            let slept = match plan.then {
                AfterSpin::Replan => {
                    run_delay = own_cpu::note_run_delay(run_delay);
                    replan = true;
                    None
                }
                AfterSpin::Block if self.has_blocking_sources(scope) => {
                    self.sleep_blocking(cond, mask, scope, deadline)
                }
                _ => self.sleep_parked(cond, mask, scope, deadline),
            };
            if let Some(r) = slept {
                return r;
            }
        }
    }

    /// The spin phase: `Some(result)` if the condition (or the deadline) came. The spin time
    /// counts from the last useful poll: a waiter that serves traffic keeps spinning.
    ///
    /// The clock is read every [`CLOCK_EVERY`] rounds only: spin and deadline may overshoot by
    /// that many poll rounds (microseconds).
    #[allow(clippy::too_many_arguments)] // one wait's state, passed once per spin phase
    fn spin(
        &self,
        cond: &Cond,
        mask: u32,
        scope: Scope,
        plan: &crate::policy::WaitPlan,
        deadline: Option<Instant>,
        first: First<'_>,
        mut quick: Quick<'_, '_>,
        plan_shares: bool,
    ) -> Option<bool> {
        let in_user_thread = marcel::current_lwp().is_some();
        let spin_ns = plan.spin.as_nanos() as u64;
        let mut spin_end = crate::clock::now_ns() + spin_ns;
        let node = self.node_index(scope);
        let waiters = &self.waiters[node];
        waiters.enter(WaitKind::Spin);
        // A short (or no) spin reads the clock every round, and so does one that yields the CPU
        // (a yield may last a whole time slice).
        let os_yield = plan.yield_cpu && !in_user_thread;
        let clock_every = if plan.spin < Duration::from_micros(20) || os_yield { 1 } else { CLOCK_EVERY };
        let mut round = 0u32;
        let reentrant = first.is_some_and(|lt| lt.source.reentrant());
        let mut direct = DirectPolls::default();
        let spins_on = plan.then == AfterSpin::Replan;
        let spun = 'spin: loop {
            let mut useful = 0;
            if let Some(first) = first {
                if reentrant {
                    let mut polls = 0;
                    for _ in 0..FIRST_PROBES {
                        if let Some(found) = direct.look(first, quick.as_deref_mut()) {
                            useful += usize::from(found);
                            polls += 1;
                        }
                        if cond.test(mask) {
                            break 'spin Some(true);
                        }
                        if polls == FIRST_POLLS {
                            break;
                        }
                    }
                } else {
                    let now_ns = crate::clock::now_ns();
                    for _ in 0..FIRST_POLLS {
                        useful += usize::from(self.run_one(first, Context::Waiter, now_ns) == Some(true));
                        if cond.test(mask) {
                            break 'spin Some(true);
                        }
                    }
                }
            }
            useful += self.progress(Context::Waiter, scope, false, None).0;
            if cond.test(mask) {
                break Some(true);
            }
            if useful > 0 && spin_ns > 0 {
                // Traffic for others (a passive target's operations, unexpected messages) keeps
                // coming: the spin lasts until it has been quiet for the whole spin time, so the
                // next arrival needs no kernel wake-up.
                spin_end = crate::clock::now_ns() + spin_ns;
            }
            // Reading the clock costs as much as an empty poll round: look every few rounds.
            round = round.wrapping_add(1);
            if round.is_multiple_of(clock_every) {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    break Some(false);
                }
                if crate::clock::now_ns() >= spin_end {
                    break None;
                }
                if spins_on && !plan_shares && waiters.waiting() > 1 {
                    // Another thread came to wait: re-plan (it may want our CPU; a plan made
                    // for our other waiters already shares it with them).
                    break None;
                }
            }
            if plan.yield_while_spinning && in_user_thread {
                marcel::yield_now();
            } else if os_yield {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        };
        if let Some(lt) = first {
            direct.record(lt);
        }
        if plan.spin > Duration::ZERO {
            self.last_spin_ns[node].store(crate::clock::now_ns(), Relaxed);
        }
        if waiters.leave(WaitKind::Spin) && spun.is_none() && plan.spin > Duration::ZERO && !spins_on {
            self.poke(); // a progression thread that stood back must poll again
        }
        spun
    }

    /// Sleeps (for at most a tick) in the sources' blocking waits — inside `marcel::blocking` for a
    /// user thread, so its LWP's other threads go on — polling after each wake-up; a doorbell wakes
    /// it when another context completes the request. `Some(result)` if done or past `deadline`.
    ///
    /// Only one context per node sleeps in the fds (see `watch.rs`); if another holds the watch,
    /// this one sleeps on its doorbell, rung when its request completes or the watch is handed
    /// over to it.
    fn sleep_blocking(
        &self,
        cond: &Cond,
        mask: u32,
        scope: Scope,
        deadline: Option<Instant>,
    ) -> Option<bool> {
        let ws = match self.take_waitset(scope) {
            Ok(ws) => ws,
            Err(e) => {
                // Every wait retries: say it once per interval.
                static NO_WAITSET: pm2_log::RateLimited = pm2_log::RateLimited::new(Duration::from_secs(5));
                NO_WAITSET.note(|n| {
                    log::warn!("cannot build a wait set ({e}); parking instead{}", pm2_log::repeats(n))
                });
                return self.sleep_parked(cond, mask, scope, deadline);
            }
        };
        let node = self.node_index(scope);
        let watch = &self.watches[node];
        self.waiters[node].enter(WaitKind::Block);
        let round_end = Instant::now() + self.tick;
        let mut watching = watch.try_take();
        if !watching {
            // The context sleeping in the fds may be a progression thread that armed its
            // sources for urgent events only (nobody was waiting: `Pioman::application_waiting`);
            // it re-arms for everything once poked. After our count went up: no wake is lost.
            self.poke();
        }
        let r = marcel::blocking(|| {
            loop {
                if cond.test(mask) {
                    return Some(true);
                }
                let now = Instant::now();
                if deadline.is_some_and(|d| now >= d) || self.shutdown.load(Relaxed) {
                    return Some(cond.test(mask));
                }
                if now >= round_end {
                    return None; // re-plan
                }
                let timeout = deadline.map_or(round_end, |d| d.min(round_end)).saturating_duration_since(now);
                watching = watching || watch.try_take();
                cond.sleep_until(mask, Wake::Doorbell(ws.doorbell.clone()), || {
                    if !watching {
                        match watch.enter_passive(ws.doorbell.clone()) {
                            Ok(p) => {
                                ws.wait_doorbell(Some(timeout));
                                watch.leave_passive(p);
                                return;
                            }
                            Err(()) => watching = true,
                        }
                    }
                    let woke = self.sleep_armed(scope, || ws.wait(Some(timeout)));
                    self.note_blocking_wait(scope, woke);
                });
                let (useful, _) = self.progress(Context::Blocking, scope, false, None);
                if useful == 0 && !cond.test(mask) {
                    // A source said it had work, yet no poll could do it: another context holds
                    // it, perhaps preempted in the middle of its poll (more threads than cores).
                    // Give it the CPU rather than spin through arm and poll until it runs again.
                    std::thread::yield_now();
                }
            }
        });
        if watching {
            watch.release(true);
        }
        self.waiters[node].leave(WaitKind::Block);
        self.put_waitset(ws);
        r
    }

    /// The watch of NUMA node `node`'s sources (progression threads take it too).
    pub(crate) fn watch(&self, node: usize) -> &Watch<Arc<Doorbell>> {
        &self.watches[node.min(self.watches.len() - 1)]
    }

    /// Counts a blocking wait (and whether an event ended it) on the blocking-capable sources of
    /// `scope`.
    pub(crate) fn note_blocking_wait(&self, scope: Scope, woke: bool) {
        for t in self.tasks.load().iter() {
            if scope.allows(t.opts.binding) && blocking_fd(t).is_some() {
                t.stats.blocking_waits.fetch_add(1, Relaxed);
                if woke {
                    t.stats.wakeups.fetch_add(1, Relaxed);
                }
            }
        }
    }

    /// Parks for at most a tick (someone else completes the request and wakes us), then polls once
    /// as a safety net. `Some(result)` if done or past `deadline`.
    fn sleep_parked(&self, cond: &Cond, mask: u32, scope: Scope, deadline: Option<Instant>) -> Option<bool> {
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) || self.shutdown.load(Relaxed) {
            return Some(cond.test(mask));
        }
        let timeout = deadline.map_or(self.tick, |d| d.saturating_duration_since(now).min(self.tick));
        cond.sleep_until(mask, Wake::Thread(marcel::current()), || marcel::park_timeout(timeout));
        self.progress(Context::Waiter, scope, false, None);
        cond.test(mask).then_some(true)
    }

    pub(crate) fn take_waitset(&self, scope: Scope) -> io::Result<WaitSet> {
        if let Some(ws) = self.waitsets.lock().unwrap().get_mut(&scope).and_then(|v| v.pop()) {
            return Ok(ws);
        }
        WaitSet::new(&self.sets, scope)
    }

    pub(crate) fn put_waitset(&self, ws: WaitSet) {
        self.waitsets.lock().unwrap().entry(ws.scope).or_default().push(ws);
    }

    fn node_index(&self, scope: Scope) -> usize {
        scope.numa.unwrap_or(0).min(self.waiters.len() - 1)
    }

    /// Whether a waiter covers the blocking-capable sources of NUMA node `node` right now.
    pub(crate) fn waiter_blocks_on(&self, node: usize) -> bool {
        self.waiters.get(node).is_some_and(|w| w.any(WaitKind::Block))
    }

    /// When a waiter of NUMA node `node` last left the library (`clock::now_ns`; 0: never).
    pub(crate) fn last_wait_exit(&self, node: usize) -> u64 {
        self.last_wait_ns.get(node).map_or(0, |t| t.load(Relaxed))
    }

    /// Whether a waiter spin-polls the sources of NUMA node `node` now, or did within a tick.
    pub(crate) fn waiter_spins_on(&self, node: usize) -> bool {
        let now = crate::clock::now_ns();
        self.waiter_spinning(node)
            || self.last_spin_ns.get(node).is_some_and(|t| {
                let t = t.load(Relaxed);
                t != 0 && now.saturating_sub(t) < self.tick.as_nanos() as u64
            })
    }

    /// Whether a waiter spin-polls the sources of NUMA node `node` now.
    pub(crate) fn waiter_spinning(&self, node: usize) -> bool {
        self.waiters.get(node).is_some_and(|w| w.any(WaitKind::Spin))
    }

    /// How long until NUMA node `node` will have had no waiting thread (spinning or sleeping)
    /// for `window`: all of `window` while one waits, zero once none did for that long.
    pub(crate) fn waiters_quiet_in(&self, node: usize, window: Duration) -> Duration {
        if self.waiter_spinning(node) || self.waiter_blocks_on(node) {
            return window;
        }
        let now = crate::clock::now_ns();
        let last = self.last_wait_ns.get(node).map_or(0, |t| t.load(Relaxed));
        let since = now.saturating_sub(last);
        match window.as_nanos() as u64 {
            w if last != 0 && since < w => Duration::from_nanos(w - since),
            _ => Duration::ZERO,
        }
    }

    // ---------------------------------------------------------------- stats

    pub(crate) fn stats(&self) -> Snapshot {
        let mut sources: Vec<crate::stats::SourceSnapshot> = self.retired.lock().unwrap().clone();
        for t in self.tasks.load().iter() {
            let snap = t.stats.snapshot(t.source.name());
            match sources.iter_mut().find(|s| s.name == snap.name) {
                Some(s) => s.merge(&snap),
                None => sources.push(snap),
            }
        }
        Snapshot {
            instance: self.id,
            policy: self.policy().name().to_string(),
            blocked_ns: self.blocked_ns.load(Relaxed),
            sources,
        }
    }
}

/// The fd pioman may wait on for this task, if any.
fn blocking_fd(lt: &Ltask) -> Option<std::os::fd::RawFd> {
    match (lt.opts.may_block, lt.source.blocking()) {
        (true, BlockingWait::Fd(fd)) => Some(fd),
        _ => None,
    }
}
