//! Scheduler hooks for pioman: idle, switch and tick callbacks, and scheduler-state queries.

use marcel::{HookMask, IdleVerdict, Runtime, SchedHooks, VpPhase};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Counting {
    idle: AtomicU64,
    switch: AtomicU64,
    tick: AtomicU64,
    verdict: AtomicUsize, // 0 Sleep, 1 KeepPolling
}

impl SchedHooks for Counting {
    fn idle(&self, _vp: usize) -> IdleVerdict {
        self.idle.fetch_add(1, Relaxed);
        if self.verdict.load(Relaxed) == 1 { IdleVerdict::KeepPolling } else { IdleVerdict::Sleep }
    }
    fn switch(&self, _vp: usize) {
        self.switch.fetch_add(1, Relaxed);
    }
    fn tick(&self) {
        self.tick.fetch_add(1, Relaxed);
    }
}

fn wait_until(d: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < d {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    f()
}

#[test]
fn idle_switch_and_tick_hooks_run() {
    let rt = Runtime::builder().lwps(2).ignore_env().build().unwrap();
    let h = rt.handle();
    let c = Arc::new(Counting::default());
    let id =
        h.add_hooks(c.clone(), HookMask { idle: true, switch: true, tick: Some(Duration::from_millis(2)) });
    rt.block_on(|| {
        for _ in 0..100 {
            marcel::yield_now();
        }
    });
    assert!(c.switch.load(Relaxed) >= 100, "switch hook: {}", c.switch.load(Relaxed));
    assert!(
        wait_until(Duration::from_secs(2), || c.tick.load(Relaxed) >= 5),
        "ticks: {}",
        c.tick.load(Relaxed)
    );
    assert!(c.idle.load(Relaxed) > 0);
    assert!(h.remove_hooks(id));
    let (s, t) = (c.switch.load(Relaxed), c.tick.load(Relaxed));
    rt.block_on(marcel::yield_now);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(c.switch.load(Relaxed), s);
    assert!(c.tick.load(Relaxed) <= t + 1);
}

#[test]
fn keep_polling_keeps_idle_lwps_awake() {
    let rt = Runtime::builder().lwps(1).ignore_env().build().unwrap();
    let h = rt.handle();
    std::thread::sleep(Duration::from_millis(20));
    let c = Arc::new(Counting::default());
    c.verdict.store(1, Relaxed);
    h.add_hooks(c.clone(), HookMask { idle: true, ..Default::default() });
    rt.block_on(|| ()); // wakes the LWP, which then polls
    let parks = h.stats().parks;
    let before = c.idle.load(Relaxed);
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(h.stats().parks, parks, "an LWP told to keep polling must not sleep");
    assert!(c.idle.load(Relaxed) > before + 100, "polled {} times", c.idle.load(Relaxed) - before);
    c.verdict.store(0, Relaxed);
    assert!(wait_until(Duration::from_secs(2), || h.stats().parks > parks));
}

#[test]
fn scheduler_state_queries() {
    let rt = Runtime::builder().lwps(2).ignore_env().build().unwrap();
    let h = rt.handle();
    assert_eq!(h.num_lwps(), 2);
    assert!(wait_until(Duration::from_secs(2), || h.idle_lwps() == 2));
    assert_eq!(h.vp_state(0).phase, VpPhase::Idle);
    let (tx, rx) = std::sync::mpsc::channel();
    let h2 = h.clone();
    let hog = h.spawn_on(0, move || {
        // Queue threads behind us on LWP 0, then report what the queries say.
        let ws: Vec<_> = (0..5).map(|_| marcel::spawn_on(0, || ())).collect();
        tx.send((h2.ready_len(0), h2.vp_state(0).phase, h2.idle_lwps())).unwrap();
        ws
    });
    let (ready, phase, idle) = rx.recv().unwrap();
    assert_eq!(ready, 5);
    assert_eq!(phase, VpPhase::User);
    assert!(idle <= 1);
    for w in hog.join().unwrap() {
        w.join().unwrap();
    }
    assert_eq!(h.total_ready(), 0);
    assert!(!h.topology().cores().is_empty());
}

struct Panicky(AtomicU64);
impl SchedHooks for Panicky {
    fn switch(&self, _vp: usize) {
        if self.0.fetch_add(1, Relaxed) == 3 {
            panic!("hook bug");
        }
    }
}

#[test]
fn a_panicking_hook_is_unregistered_and_the_runtime_goes_on() {
    let rt = Runtime::builder().lwps(1).ignore_env().build().unwrap();
    let p = Arc::new(Panicky(AtomicU64::new(0)));
    rt.handle().add_hooks(p.clone(), HookMask { switch: true, ..Default::default() });
    let n = rt.block_on(|| {
        let hs: Vec<_> = (0..50).map(|i| marcel::spawn(move || i)).collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum::<i32>()
    });
    assert_eq!(n, (0..50).sum());
    assert_eq!(p.0.load(Relaxed), 4, "called until it panicked, then never again");
}

/// The pattern of an event manager: a user thread parks waiting for an event; the idle hook of its
/// (otherwise idle) LWP detects the event and unparks it; the thread must run at once.
struct Waker {
    parked: std::sync::Mutex<Option<marcel::Thread>>,
    event: std::sync::atomic::AtomicBool,
}

impl SchedHooks for Waker {
    fn idle(&self, _vp: usize) -> IdleVerdict {
        if self.event.swap(false, SeqCst)
            && let Some(t) = self.parked.lock().unwrap().take()
        {
            t.unpark();
            return IdleVerdict::Progress;
        }
        IdleVerdict::KeepPolling
    }
}

#[test]
fn a_thread_unparked_by_the_idle_hook_runs() {
    let rt = Runtime::builder().lwps(1).ignore_env().build().unwrap();
    let w = Arc::new(Waker {
        parked: std::sync::Mutex::new(None),
        event: std::sync::atomic::AtomicBool::new(false),
    });
    rt.handle().add_hooks(w.clone(), HookMask { idle: true, ..Default::default() });
    for _ in 0..100 {
        let w2 = w.clone();
        let h = rt.spawn(move || {
            *w2.parked.lock().unwrap() = Some(marcel::current());
            w2.event.store(true, SeqCst);
            let t = Instant::now();
            while w2.parked.lock().unwrap().is_some() {
                marcel::park();
            }
            t.elapsed()
        });
        assert!(h.join().unwrap() < Duration::from_secs(2));
    }
}
