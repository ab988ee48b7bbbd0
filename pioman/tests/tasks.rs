//! Ltask life cycle and options: one-shot tasks, cancel and remove, a panicking source, custom
//! blocking waits, bindings, hints, policy changes at run time, and the statistics dump.

use pioman::eventfd::{EVENT, EventSource, notify};
use pioman::{
    Binding, BlockingWait, Cond, Context, Hints, Kind, Options, Pioman, Poll, PollCtx, Source, policy,
};
use pioman::{LTASK_CANCELLED, LTASK_DONE};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn os_pioman(p: &str) -> Pioman {
    Pioman::builder().policy(policy::by_name(p).unwrap()).without_marcel().build().unwrap()
}

/// Counts polls, and where they ran.
#[derive(Default)]
struct Counter {
    polls: AtomicU64,
    inside: AtomicUsize,
    cpus: Mutex<Vec<i32>>,
    contexts: Mutex<Vec<Context>>,
    slow: AtomicBool,
}

impl Source for Counter {
    fn name(&self) -> &str {
        "counter"
    }
    fn poll(&self, ctx: &mut PollCtx) -> Poll {
        assert_eq!(self.inside.fetch_add(1, SeqCst), 0, "poll ran twice at once");
        self.polls.fetch_add(1, Relaxed);
        // SAFETY: sched_getcpu has no preconditions.
        self.cpus.lock().unwrap().push(unsafe { libc::sched_getcpu() });
        self.contexts.lock().unwrap().push(ctx.context());
        if self.slow.load(Relaxed) {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.inside.fetch_sub(1, SeqCst);
        Poll::Idle
    }
}

#[test]
fn one_shot_runs_once_and_completes() {
    let pio = os_pioman("poll");
    let c = Arc::new(Counter::default());
    let h = pio.register(c.clone(), Options { kind: Kind::OneShot, ..Default::default() }).unwrap();
    assert_eq!(h.wait(), LTASK_DONE);
    assert!(h.is_finished());
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(c.polls.load(Relaxed), 1);
}

#[test]
fn remove_returns_once_no_poll_runs() {
    let pio = os_pioman("poll");
    let c = Arc::new(Counter::default());
    c.slow.store(true, Relaxed); // polls last 20 ms: remove will often find one running
    let h = pio.register(c.clone(), Options::default()).unwrap();
    std::thread::sleep(Duration::from_millis(30));
    h.remove();
    assert_eq!(c.inside.load(SeqCst), 0, "a poll still runs after remove returned");
    let n = c.polls.load(Relaxed);
    std::thread::sleep(Duration::from_millis(60));
    assert_eq!(c.polls.load(Relaxed), n, "polled after remove");
}

#[test]
fn cancel_reports_cancelled_and_unregisters() {
    let pio = os_pioman("timer");
    let c = Arc::new(Counter::default());
    let h = pio.register(c, Options::default()).unwrap();
    h.cancel();
    assert_eq!(h.wait(), LTASK_CANCELLED);
    // A cancelled eventfd source must stop waking blocking waiters: a waiter blocking on the
    // remaining sources (none) times out instead of spinning on the dead fd.
    let src = Arc::new(EventSource::new("dead").unwrap());
    let h = pio.register(src.clone(), Options::default()).unwrap();
    h.cancel();
    notify(src.fd()).unwrap(); // readable forever from now on
    pio.set_policy(policy::by_name("block").unwrap());
    let other = Cond::new();
    let t = Instant::now();
    assert!(!pio.wait_timeout(&other, 1, Duration::from_millis(30)));
    assert!(t.elapsed() >= Duration::from_millis(29));
    assert_eq!(pio.stats().sources.iter().find(|s| s.name == "dead").map_or(0, |s| s.polls), 0);
}

struct Panicky;
impl Source for Panicky {
    fn name(&self) -> &str {
        "panicky"
    }
    fn poll(&self, _: &mut PollCtx) -> Poll {
        panic!("driver bug")
    }
}

#[test]
fn a_panicking_source_is_cancelled_and_the_rest_goes_on() {
    let rt = marcel::Runtime::builder().lwps(1).ignore_env().build().unwrap();
    let pio = Pioman::builder().policy(policy::by_name("poll").unwrap()).marcel(rt.handle()).build().unwrap();
    let bad = pio.register(Arc::new(Panicky), Options::default()).unwrap();
    assert_eq!(bad.wait(), LTASK_CANCELLED);
    let src = Arc::new(EventSource::new("ok").unwrap());
    pio.register(src.clone(), Options::default()).unwrap();
    notify(src.fd()).unwrap();
    let (p2, s2) = (pio.clone(), src.clone());
    rt.block_on(move || p2.wait(s2.cond(), EVENT));
    assert_eq!(src.received(), 1);
}

/// A source waited for through its own blocking call (a futex-like flag).
struct Flag {
    word: AtomicU32,
    waits: AtomicU64,
    seen: AtomicU64,
    cond: Arc<Cond>,
}

impl Source for Flag {
    fn name(&self) -> &str {
        "flag"
    }
    fn poll(&self, _: &mut PollCtx) -> Poll {
        if self.word.swap(0, AcqRel) != 0 {
            self.seen.fetch_add(1, Relaxed);
            self.cond.signal(1);
            Poll::Progress
        } else {
            Poll::Idle
        }
    }
    fn blocking(&self) -> BlockingWait {
        BlockingWait::Custom
    }
    fn wait(&self, timeout: Option<Duration>) {
        self.waits.fetch_add(1, Relaxed);
        let end = Instant::now() + timeout.unwrap_or(Duration::from_secs(1));
        while self.word.load(Acquire) == 0 && Instant::now() < end {
            std::thread::sleep(Duration::from_micros(100));
        }
    }
}

#[test]
fn custom_blocking_waits_detect_events_in_the_background() {
    let pio = os_pioman("block");
    let f = Arc::new(Flag {
        word: AtomicU32::new(0),
        waits: AtomicU64::new(0),
        seen: AtomicU64::new(0),
        cond: Arc::new(Cond::new()),
    });
    pio.register(f.clone(), Options::default()).unwrap();
    for i in 1..=5 {
        f.word.store(1, Release);
        let t = Instant::now();
        while f.seen.load(Relaxed) < i {
            assert!(t.elapsed() < Duration::from_secs(2), "event {i} not detected");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    assert!(f.waits.load(Relaxed) > 0, "its own blocking wait was used");
}

#[test]
fn core_binding_is_honoured_without_marcel() {
    let cpu = *marcel::topology::allowed_cpus().last().unwrap();
    let pio = os_pioman("poll");
    let c = Arc::new(Counter::default());
    pio.register(c.clone(), Options { binding: Binding::Core(cpu), ..Default::default() }).unwrap();
    let t = Instant::now();
    while c.polls.load(Relaxed) < 100 {
        assert!(t.elapsed() < Duration::from_secs(2));
        std::thread::sleep(Duration::from_millis(1));
    }
    pio.shutdown();
    assert!(c.cpus.lock().unwrap().iter().all(|&x| x == cpu as i32), "polled off its core");
}

#[test]
fn core_binding_is_honoured_under_marcel_and_checked() {
    let cpus = marcel::topology::allowed_cpus();
    let rt = marcel::Runtime::builder().lwps(1).cpus(&cpus[..1]).ignore_env().build().unwrap();
    let pio = Pioman::builder().policy(policy::by_name("poll").unwrap()).marcel(rt.handle()).build().unwrap();
    let c = Arc::new(Counter::default());
    pio.register(c.clone(), Options { binding: Binding::Core(cpus[0]), ..Default::default() }).unwrap();
    let t = Instant::now();
    while c.polls.load(Relaxed) < 100 {
        assert!(t.elapsed() < Duration::from_secs(2));
        std::thread::sleep(Duration::from_millis(1));
    }
    pio.shutdown();
    assert!(c.cpus.lock().unwrap().iter().all(|&x| x == cpus[0] as i32));
    if cpus.len() > 1 {
        let pio = Pioman::builder().marcel(rt.handle()).build().unwrap();
        let e = pio.register(
            Arc::new(Counter::default()),
            Options { binding: Binding::Core(cpus[1]), ..Default::default() },
        );
        assert!(e.err().unwrap().to_string().contains("no marcel LWP"));
    }
    let e = os_pioman("poll").register(
        Arc::new(Counter::default()),
        Options { binding: Binding::Core(100_000), ..Default::default() },
    );
    assert!(e.is_err());
}

#[test]
fn prefers_blocking_sources_are_never_busy_polled() {
    let rt = marcel::Runtime::builder().lwps(2).ignore_env().build().unwrap();
    let pio =
        Pioman::builder().policy(policy::by_name("adaptive").unwrap()).marcel(rt.handle()).build().unwrap();
    let c = Arc::new(Counter::default());
    let hints = Hints { prefers_blocking: true, latency_critical: false };
    pio.register(c.clone(), Options { hints, ..Default::default() }).unwrap();
    std::thread::sleep(Duration::from_millis(50)); // idle LWPs would poll it busily if allowed
    pio.shutdown();
    let ctx = c.contexts.lock().unwrap();
    assert!(!ctx.is_empty(), "ticks poll it");
    assert!(ctx.iter().all(|c| *c != Context::Idle && *c != Context::Switch), "busy-polled: {ctx:?}");
}

#[test]
fn policy_changes_at_run_time_and_user_policies_register_by_name() {
    let pio = os_pioman("poll");
    assert_eq!(pio.policy_name(), "poll");
    pio.set_policy(policy::by_name("block").unwrap());
    assert_eq!(pio.policy_name(), "block");
    struct Lazy;
    impl pioman::Policy for Lazy {
        fn name(&self) -> &str {
            "lazy"
        }
        fn idle(&self, _: &pioman::MachineState) -> pioman::IdleAction {
            pioman::IdleAction::Sleep
        }
        fn poll_at_switch(&self, _: &pioman::MachineState) -> bool {
            false
        }
        fn poll_at_tick(&self, _: &pioman::MachineState) -> bool {
            true
        }
        fn wait(&self, _: &pioman::MachineState) -> pioman::WaitPlan {
            pioman::WaitPlan {
                spin: Duration::ZERO,
                yield_while_spinning: false,
                yield_cpu: false,
                then: pioman::AfterSpin::Park,
            }
        }
    }
    policy::register("lazy", || Arc::new(Lazy));
    let pio = os_pioman("lazy");
    let src = Arc::new(EventSource::new("e").unwrap());
    pio.register(src.clone(), Options::default()).unwrap();
    notify(src.fd()).unwrap();
    pio.wait(src.cond(), EVENT);
    assert!(src.stats_context_seen(&pio, Context::Tick) || src.received() == 1);
}

trait Seen {
    fn stats_context_seen(&self, pio: &Pioman, c: Context) -> bool;
}
impl Seen for EventSource {
    fn stats_context_seen(&self, pio: &Pioman, c: Context) -> bool {
        let i = [
            Context::Idle,
            Context::Switch,
            Context::Tick,
            Context::Waiter,
            Context::Blocking,
            Context::Explicit,
        ]
        .iter()
        .position(|x| *x == c)
        .unwrap();
        pio.stats().sources.iter().any(|s| s.useful_by_context[i] > 0)
    }
}

#[test]
fn statistics_are_written_as_json_at_shutdown() {
    let path = std::env::temp_dir().join(format!("pioman-stats-{}.json", std::process::id()));
    let pio = Pioman::builder()
        .policy(policy::by_name("poll").unwrap())
        .without_marcel()
        .stats_path(Some(path.clone()))
        .build()
        .unwrap();
    let src = Arc::new(EventSource::new("json-src").unwrap());
    let h = pio.register(src.clone(), Options::default()).unwrap();
    for _ in 0..10 {
        notify(src.fd()).unwrap();
        pio.wait(src.cond(), EVENT);
        src.cond().clear(EVENT);
    }
    h.remove(); // finished tasks still count
    pio.shutdown();
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    std::fs::remove_file(&path).ok();
    let s = &v["sources"][0];
    assert_eq!(v["policy"], "poll");
    assert_eq!(s["name"], "json-src");
    assert!(s["useful_polls"].as_u64().unwrap() >= 10, "{s}");
    assert!(s["detect_latency"]["count"].as_u64().unwrap() >= 10);
    assert!(s["detect_latency"]["p50_ns"].as_u64().is_some());
    assert!(s["polls"].as_u64().unwrap() >= s["useful_polls"].as_u64().unwrap());
}

#[test]
fn bad_configuration_is_a_clear_error() {
    let e = Pioman::builder().tick(Duration::from_micros(1)).without_marcel().build().err().unwrap();
    assert!(e.to_string().contains("tick"));
    let e = policy::by_name("fastest").err().unwrap();
    assert!(e.contains("unknown policy"));
}

/// A source whose producer signals the fd only while someone sleeps on it (like a shared-memory
/// ring): `arm` publishes "a signal is needed", `disarm` withdraws it.
struct Armed {
    word: AtomicU32,
    sleepers: AtomicU32,
    arms: AtomicU64,
    disarms: AtomicU64,
    seen: AtomicU64,
    fd: EventSource,
}

impl Armed {
    /// The producer: publish, then signal only if a context sleeps.
    fn produce(&self) {
        self.word.store(1, SeqCst);
        if self.sleepers.load(SeqCst) > 0 {
            notify(self.fd.fd()).unwrap();
        }
    }
}

impl Source for Armed {
    fn name(&self) -> &str {
        "armed"
    }
    fn poll(&self, _: &mut PollCtx) -> Poll {
        let mut b = [0u8; 8];
        // SAFETY: reading 8 bytes from our nonblocking eventfd into an 8-byte buffer.
        unsafe { libc::read(self.fd.fd(), b.as_mut_ptr().cast(), 8) };
        if self.word.swap(0, AcqRel) != 0 {
            self.seen.fetch_add(1, Relaxed);
            Poll::Progress
        } else {
            Poll::Idle
        }
    }
    fn blocking(&self) -> BlockingWait {
        BlockingWait::Fd(self.fd.fd())
    }
    fn arm(&self) -> bool {
        self.arms.fetch_add(1, Relaxed);
        self.sleepers.fetch_add(1, SeqCst);
        self.word.load(SeqCst) == 0
    }
    fn disarm(&self) {
        self.disarms.fetch_add(1, Relaxed);
        self.sleepers.fetch_sub(1, SeqCst);
    }
}

#[test]
fn sources_arm_their_wake_up_before_a_blocking_wait() {
    // A long tick: detection must come from the armed fd, not from the tick's poll.
    let pio = Pioman::builder()
        .policy(policy::by_name("block").unwrap())
        .without_marcel()
        .tick(Duration::from_secs(5))
        .build()
        .unwrap();
    let a = Arc::new(Armed {
        word: AtomicU32::new(0),
        sleepers: AtomicU32::new(0),
        arms: AtomicU64::new(0),
        disarms: AtomicU64::new(0),
        seen: AtomicU64::new(0),
        fd: EventSource::new("armed").unwrap(),
    });
    pio.register(a.clone(), Options::default()).unwrap();
    for i in 1..=5 {
        std::thread::sleep(Duration::from_millis(20)); // let the progression thread fall asleep
        let t = Instant::now();
        a.produce();
        while a.seen.load(Relaxed) < i {
            assert!(t.elapsed() < Duration::from_secs(2), "event {i} not detected");
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    pio.shutdown();
    assert!(a.arms.load(Relaxed) >= 5, "every sleep was armed");
    assert_eq!(a.arms.load(Relaxed), a.disarms.load(Relaxed), "every arm was disarmed");
}

/// Holds the last handle of its pioman and drops it from its own poll (as a collective's task
/// that frees the last communicator does).
#[derive(Default)]
struct DropsItsEngine {
    pio: Mutex<Option<Pioman>>,
    dropped: AtomicBool,
}

impl Source for DropsItsEngine {
    fn name(&self) -> &str {
        "drops-its-engine"
    }
    fn poll(&self, _: &mut PollCtx) -> Poll {
        let last = self.pio.lock().unwrap().take();
        if last.is_some() {
            drop(last); // shuts pioman down from one of its own threads
            self.dropped.store(true, SeqCst);
        }
        Poll::Idle
    }
}

#[test]
fn the_last_handle_dropped_by_a_progression_thread_shuts_down_cleanly() {
    let pio = os_pioman("poll");
    let s = Arc::new(DropsItsEngine::default());
    let _h = pio.register(s.clone(), Options::default()).unwrap();
    *s.pio.lock().unwrap() = Some(pio);
    let end = Instant::now() + Duration::from_secs(10);
    while !s.dropped.load(SeqCst) {
        assert!(Instant::now() < end, "the shutdown from a progression thread panicked (or never ran)");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Useful on every poll; signals `done` once polled for `run` (wall time) since its first poll.
struct Busy {
    first: Mutex<Option<Instant>>,
    run: Duration,
    done: Arc<Cond>,
}

impl Source for Busy {
    fn name(&self) -> &str {
        "busy"
    }
    fn poll(&self, _: &mut PollCtx) -> Poll {
        let first = *self.first.lock().unwrap().get_or_insert_with(Instant::now);
        if first.elapsed() >= self.run {
            self.done.signal(1);
        }
        Poll::Progress
    }
}

/// Spins 20 ms, then parks; counts the plans it gave (one per round of a wait).
#[derive(Default)]
struct ShortSpin {
    plans: AtomicUsize,
}

impl policy::Policy for ShortSpin {
    fn name(&self) -> &str {
        "short-spin"
    }
    fn idle(&self, _: &policy::MachineState) -> policy::IdleAction {
        policy::IdleAction::Sleep
    }
    fn poll_at_switch(&self, _: &policy::MachineState) -> bool {
        false
    }
    fn poll_at_tick(&self, _: &policy::MachineState) -> bool {
        false
    }
    fn wait(&self, _: &policy::MachineState) -> policy::WaitPlan {
        self.plans.fetch_add(1, SeqCst);
        policy::WaitPlan {
            spin: Duration::from_millis(20),
            yield_while_spinning: false,
            yield_cpu: false,
            then: policy::AfterSpin::Park,
        }
    }
}

/// A waiter whose own request does not come keeps spinning while its polls find other work
/// (a passive target's operations): waiting 60 ms on a condition that a busy source sets, with a
/// 20 ms spin, takes one round of spinning, not a spin, a park and more (each round asks the
/// policy for a plan). No timing is asserted: only how many rounds the wait took.
#[test]
fn a_waiter_spins_on_while_its_polls_are_useful() {
    let policy = Arc::new(ShortSpin::default());
    let pio = Pioman::builder().policy(policy.clone()).without_marcel().threads(0).build().unwrap();
    let done = Arc::new(Cond::new());
    let src = Arc::new(Busy { first: Mutex::new(None), run: Duration::from_millis(60), done: done.clone() });
    let h = pio.register(src, Options::default()).unwrap();
    pio.wait(&done, 1);
    assert_eq!(policy.plans.load(SeqCst), 1, "the waiter spun through the useful polls in one round");
    h.remove();
}

/// A source that signals `done` at its `fire`-th poll; reentrant or not, as it says.
struct Firing {
    reentrant: bool,
    fire: u64,
    polls: AtomicU64,
    inside: AtomicUsize,
    overlapped: AtomicBool,
    done: Arc<Cond>,
}

impl Source for Firing {
    fn name(&self) -> &str {
        "firing"
    }
    fn reentrant(&self) -> bool {
        self.reentrant
    }
    fn poll(&self, _: &mut PollCtx) -> Poll {
        if self.inside.fetch_add(1, SeqCst) > 0 {
            self.overlapped.store(true, SeqCst);
        }
        let n = self.polls.fetch_add(1, SeqCst) + 1;
        let found = n == self.fire;
        if found {
            self.done.signal(1);
        }
        self.inside.fetch_sub(1, SeqCst);
        if found { Poll::Progress } else { Poll::Idle }
    }
}

/// `wait_polling` returns once the waited-on source signals, and its polls count in the task's
/// statistics as a waiter's (the useful one too), whether the waiter polled the source directly
/// (reentrant) or through the run state; a source that is not reentrant is never polled twice at
/// once, even with a progression thread polling it too.
#[test]
fn a_waiter_polls_its_own_source_first_and_counts_it() {
    for reentrant in [true, false] {
        let pio = polling_without_marcel(1);
        let done = Arc::new(Cond::new());
        let src = Arc::new(Firing {
            reentrant,
            fire: 50,
            polls: AtomicU64::new(0),
            inside: AtomicUsize::new(0),
            overlapped: AtomicBool::new(false),
            done: done.clone(),
        });
        let h = pio.register(src.clone(), Options::default()).unwrap();
        pio.wait_polling(&done, 1, &h.poller());
        assert!(done.test(1));
        let st = h.stats();
        assert!(st.polls >= 50, "reentrant {reentrant}: {} polls counted", st.polls);
        assert!(st.useful_polls >= 1, "reentrant {reentrant}: the useful poll counted");
        if !reentrant {
            assert!(!src.overlapped.load(SeqCst), "a source that is not reentrant was polled twice at once");
        }
        h.remove();
        pio.shutdown();
    }
}

/// A pioman with the `poll` policy, `threads` progression threads and no marcel.
fn polling_without_marcel(threads: usize) -> Pioman {
    Pioman::builder()
        .policy(policy::by_name("poll").unwrap())
        .without_marcel()
        .threads(threads)
        .build()
        .unwrap()
}

/// A reentrant source whose probe says whether polling may find something: `ready`, or never.
struct Probed {
    probes: AtomicU64,
    polls: AtomicU64,
    ready: AtomicBool,
    /// The poll that signals whatever the probe says (0: only when ready).
    fire: u64,
    done: Arc<Cond>,
}

impl Probed {
    fn new(fire: u64, done: &Arc<Cond>) -> Arc<Probed> {
        Arc::new(Probed {
            probes: AtomicU64::new(0),
            polls: AtomicU64::new(0),
            ready: AtomicBool::new(false),
            fire,
            done: done.clone(),
        })
    }
}

impl Source for Probed {
    fn name(&self) -> &str {
        "probed"
    }
    fn reentrant(&self) -> bool {
        true
    }
    fn probe(&self) -> bool {
        self.probes.fetch_add(1, SeqCst);
        self.ready.load(SeqCst)
    }
    fn poll(&self, _: &mut PollCtx) -> Poll {
        let n = self.polls.fetch_add(1, SeqCst) + 1;
        if self.ready.load(SeqCst) || n == self.fire {
            self.done.signal(1);
            return Poll::Progress;
        }
        Poll::Idle
    }
}

/// A waiter probes its reentrant source between polls and polls it only when the probe says
/// so: while the probe says no, the source is polled once per round over every task (once per
/// 128 probes at most), and an event the probe missed is still found by such a round.
#[test]
fn a_waiter_polls_its_own_source_when_its_probe_says_so() {
    for fire in [0, 30] {
        let pio = polling_without_marcel(0);
        let done = Arc::new(Cond::new());
        let src = Probed::new(fire, &done);
        let h = pio.register(src.clone(), Options::default()).unwrap();
        let setter = (fire == 0).then(|| {
            let src = src.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                src.ready.store(true, SeqCst);
            })
        });
        pio.wait_polling(&done, 1, &h.poller());
        assert!(done.test(1));
        let (probes, polls) = (src.probes.load(SeqCst), src.polls.load(SeqCst));
        assert!(probes > 0, "fire {fire}: never probed");
        // Rounds poll once per 128 probes (and when a spin re-plans); the probe said yes at
        // most once before the signal.
        assert!(polls <= probes / 64 + 10, "fire {fire}: {polls} polls for {probes} probes");
        if fire != 0 {
            assert_eq!(polls, fire, "the event the probe missed was found by the rounds");
        }
        if let Some(t) = setter {
            t.join().unwrap();
        }
        h.remove();
        pio.shutdown();
    }
}

/// A waiter with its own look at what it waits on (`wait_polling_with`) calls it instead of the
/// source's probe and poll: an event there is found without polling the source, and counts as
/// the task's useful poll, in the first microsecond's spin as in the policy's (an oversubscribed
/// process has only the latter); an event the look never sees is still found by the rounds
/// over every task.
#[test]
fn a_waiter_looks_at_what_it_waits_on_first() {
    for (quick_finds, oversubscribed) in [(true, false), (false, false), (true, true)] {
        let case = format!("quick finds it: {quick_finds}, oversubscribed: {oversubscribed}");
        let pio = polling_without_marcel(0);
        pio.set_oversubscribed(oversubscribed);
        let done = Arc::new(Cond::new());
        let src = Probed::new(if quick_finds { 0 } else { 5 }, &done);
        let h = pio.register(src.clone(), Options::default()).unwrap();
        let mut looks = 0u64;
        let mut quick = || {
            looks += 1;
            match quick_finds {
                true if looks == 3 => {
                    done.signal(1);
                    Some(true)
                }
                true => Some(false),
                false => None,
            }
        };
        pio.wait_polling_with(&done, 1, &h.poller(), &mut quick);
        assert!(done.test(1));
        let polls = src.polls.load(SeqCst);
        if quick_finds {
            assert_eq!(looks, 3, "{case}: looked until found");
            assert_eq!(src.probes.load(SeqCst), 0, "{case}: the source's probe was used");
            let st = h.stats();
            assert!(st.useful_polls >= 1 && st.polls >= 3, "{case}: the looks count as polls: {st:?}");
        } else {
            assert!(looks > 0, "{case}: never looked");
            assert_eq!(polls, 5, "{case}: the rounds found what the look did not");
        }
        h.remove();
        pio.shutdown();
    }
}
