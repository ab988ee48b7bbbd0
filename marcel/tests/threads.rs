//! The user-thread API: spawn/join, panics, binding, identity, locals, sleep, park, entry points.

use marcel::{Runtime, sync::Mutex};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::time::{Duration, Instant};

fn rt(lwps: usize) -> Runtime {
    Runtime::builder().lwps(lwps).ignore_env().build().expect("runtime")
}

#[test]
fn spawn_join_returns_values() {
    let rt = rt(2);
    let sum = rt.block_on(|| {
        let hs: Vec<_> = (0..1000u64).map(|i| marcel::spawn(move || i * 2)).collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
    });
    assert_eq!(sum, 999_000);
}

#[test]
fn join_reports_panic_with_message() {
    let rt = rt(1);
    let err = rt.block_on(|| marcel::spawn(|| -> u32 { panic!("boom {}", 7) }).join().unwrap_err());
    assert_eq!(err.message(), Some("boom 7"));
    // The runtime keeps working after a panic.
    assert_eq!(rt.block_on(|| marcel::spawn(|| 5).join().unwrap()), 5);
}

#[test]
fn block_on_resumes_panic_in_caller() {
    let rt = rt(1);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rt.block_on(|| panic!("inner"))));
    assert!(r.is_err());
}

#[test]
fn block_on_may_borrow_the_callers_stack() {
    let rt = rt(2);
    let mut v = vec![1, 2, 3];
    rt.block_on(|| v.push(4));
    assert_eq!(v, [1, 2, 3, 4]);
}

#[test]
fn spawn_from_plain_os_threads_and_enter() {
    let rt = rt(2);
    let h = rt.handle();
    let ts: Vec<_> = (0..4)
        .map(|i| {
            let h = h.clone();
            std::thread::spawn(move || h.spawn(move || i + 1).join().unwrap())
        })
        .collect();
    assert_eq!(ts.into_iter().map(|t| t.join().unwrap()).sum::<i32>(), 10);
    let _g = rt.enter();
    assert_eq!(marcel::spawn(|| 3).join().unwrap(), 3);
}

#[test]
#[should_panic(expected = "outside a marcel runtime")]
fn spawn_outside_runtime_panics_clearly() {
    let _ = marcel::spawn(|| 1);
}

#[test]
fn spawn_on_binds_to_one_lwp() {
    let rt = rt(2);
    let seen = rt.block_on(|| {
        let hs: Vec<_> = (0..2)
            .map(|vp| {
                marcel::spawn_on(vp, move || {
                    let mut where_ = Vec::new();
                    for _ in 0..200 {
                        where_.push(marcel::current_lwp());
                        marcel::yield_now();
                    }
                    where_
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
    });
    for (vp, w) in seen.iter().enumerate() {
        assert!(w.iter().all(|x| *x == Some(vp)), "thread bound to {vp} ran on {w:?}");
    }
}

#[test]
#[should_panic(expected = "spawn_on(5)")]
fn spawn_on_out_of_range_panics() {
    let rt = rt(1);
    rt.handle().spawn_on(5, || ());
}

#[test]
fn identity_and_names() {
    let rt = rt(1);
    let (a, b, name, user) = rt.block_on(|| {
        let t = marcel::thread::Builder::new().name("worker").spawn(|| {
            let me = marcel::current();
            (me.id(), me.name().map(String::from), me.is_user())
        });
        let expected = t.thread().id();
        let (id, name, user) = t.join().unwrap();
        (expected, id, name, user)
    });
    assert_eq!(a, b);
    assert_eq!(name.as_deref(), Some("worker"));
    assert!(user);
    assert!(!marcel::current().is_user());
    assert_ne!(marcel::current().id(), a);
    assert_eq!(marcel::current().id(), marcel::current().id(), "OS thread ids are stable");
}

marcel::user_local! {
    static COUNTER: std::cell::Cell<u32> = std::cell::Cell::new(0);
    static TRACE: Mutex<Vec<u32>> = Mutex::new(Vec::new());
}

#[test]
fn user_locals_follow_the_user_thread() {
    let rt = rt(2);
    let results = rt.block_on(|| {
        let hs: Vec<_> = (0..50u32)
            .map(|i| {
                marcel::spawn(move || {
                    for _ in 0..=i {
                        COUNTER.with(|c| c.set(c.get() + 1));
                        marcel::yield_now(); // may migrate between LWPs
                    }
                    TRACE.with(|t| t.lock().push(i));
                    (COUNTER.with(|c| c.get()), TRACE.with(|t| t.lock().clone()))
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
    });
    for (i, (count, trace)) in results.into_iter().enumerate() {
        assert_eq!(count, i as u32 + 1);
        assert_eq!(trace, vec![i as u32]);
    }
    // OS threads get their own value.
    COUNTER.with(|c| c.set(41));
    assert_eq!(std::thread::spawn(|| COUNTER.with(|c| c.get())).join().unwrap(), 0);
    assert_eq!(COUNTER.with(|c| c.get()), 41);
}

struct DropFlag(Arc<AtomicUsize>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

marcel::user_local! {
    static GUARD: std::cell::RefCell<Option<DropFlag>> = std::cell::RefCell::new(None);
}

#[test]
fn user_locals_are_dropped_before_join_returns() {
    let rt = rt(1);
    let drops = Arc::new(AtomicUsize::new(0));
    let d2 = drops.clone();
    let after_join = rt.block_on(move || {
        let d3 = d2.clone();
        marcel::spawn(move || GUARD.with(|g| *g.borrow_mut() = Some(DropFlag(d3)))).join().unwrap();
        d2.load(SeqCst)
    });
    assert_eq!(after_join, 1);
}

#[test]
fn sleep_blocks_only_the_user_thread() {
    let rt = rt(1);
    let (slept, others_ran) = rt.block_on(|| {
        let ran = Arc::new(AtomicUsize::new(0));
        let r2 = ran.clone();
        let sleeper = marcel::spawn(move || {
            let t = Instant::now();
            marcel::sleep(Duration::from_millis(50));
            (t.elapsed(), r2.load(SeqCst))
        });
        let workers: Vec<_> = (0..100)
            .map(|_| {
                let r = ran.clone();
                marcel::spawn(move || {
                    r.fetch_add(1, SeqCst);
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        sleeper.join().unwrap()
    });
    assert!(slept >= Duration::from_millis(50), "slept only {slept:?}");
    assert!(slept < Duration::from_secs(2), "slept {slept:?}");
    assert_eq!(others_ran, 100, "the single LWP ran the others while the sleeper slept");
}

#[test]
fn park_unpark_and_park_timeout() {
    let rt = rt(2);
    rt.block_on(|| {
        let flag = Arc::new(AtomicUsize::new(0));
        let f2 = flag.clone();
        let parked = marcel::spawn(move || {
            while f2.load(SeqCst) == 0 {
                marcel::park();
            }
        });
        marcel::sleep(Duration::from_millis(5));
        flag.store(1, SeqCst);
        parked.thread().unpark();
        parked.join().unwrap();
        // A permit given before park makes park return at once.
        marcel::current().unpark();
        let t = Instant::now();
        marcel::park();
        assert!(t.elapsed() < Duration::from_millis(500));
        let t = Instant::now();
        marcel::park_timeout(Duration::from_millis(20));
        assert!(t.elapsed() >= Duration::from_millis(19));
    });
}

#[test]
fn yield_is_fifo_on_one_lwp() {
    let rt = rt(1);
    let order = rt.block_on(|| {
        let log = Arc::new(Mutex::new(Vec::new()));
        let hs: Vec<_> = (0..3)
            .map(|i| {
                let log = log.clone();
                marcel::spawn_on(0, move || {
                    for round in 0..3 {
                        log.lock().push((round, i));
                        marcel::yield_now();
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        Arc::try_unwrap(log).unwrap().into_inner()
    });
    let expected: Vec<_> = (0..3).flat_map(|r| (0..3).map(move |i| (r, i))).collect();
    assert_eq!(order, expected);
}

#[test]
fn idle_lwps_sleep_and_wake_for_work() {
    let rt = rt(2);
    let h = rt.handle();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(h.idle_lwps(), 2);
    assert!(h.stats().parks >= 2, "idle LWPs went to sleep: {:?}", h.stats());
    // Work spawned from an OS thread wakes a sleeping LWP.
    assert_eq!(h.spawn(|| 9).join().unwrap(), 9);
}

#[test]
fn bad_environment_is_a_clear_error() {
    // Builder values do not read the environment, so test the parser through a child-free path:
    let e = Runtime::builder().lwps(0).ignore_env().build().err().expect("0 LWPs is an error");
    assert!(e.to_string().contains("at least 1"), "{e}");
    let e = Runtime::builder().cpus(&[4096]).ignore_env().build().err().expect("absent CPU is an error");
    assert!(e.to_string().starts_with("marcel:"), "{e}");
}

#[test]
fn more_lwps_than_cores_is_allowed() {
    let n = marcel::topology::allowed_cpus().len() * 2;
    let rt = rt(n);
    assert_eq!(rt.handle().num_lwps(), n);
    let done = rt.block_on(move || {
        let hs: Vec<_> = (0..n).map(|v| marcel::spawn_on(v, move || v)).collect();
        hs.into_iter().map(|h| h.join().unwrap()).filter(|v| *v < n).count()
    });
    assert_eq!(done, n);
}

#[test]
fn self_join_is_a_clear_panic_not_a_deadlock() {
    let rt = rt(1);
    let panicked = rt.block_on(|| {
        let slot: Arc<Mutex<Option<marcel::JoinHandle<()>>>> = Arc::new(Mutex::new(None));
        let verdict = Arc::new(AtomicUsize::new(0));
        let (s2, v2) = (slot.clone(), verdict.clone());
        let h = marcel::spawn(move || {
            let me = loop {
                if let Some(me) = s2.lock().take() {
                    break me;
                }
                marcel::yield_now();
            };
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| me.join()));
            v2.store(if r.is_err() { 1 } else { 2 }, SeqCst);
        });
        *slot.lock() = Some(h);
        while verdict.load(SeqCst) == 0 {
            marcel::sleep(Duration::from_millis(1));
        }
        verdict.load(SeqCst)
    });
    assert_eq!(panicked, 1, "joining itself must panic");
}
