//! Clean shutdown: every kernel thread joined, unfinished (detached) threads reported, and a
//! bounded shutdown that names kernel threads still busy.

use marcel::Runtime;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::time::{Duration, Instant};

/// Kernel threads of this process whose name starts with `prefix`.
fn kernel_threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
        .filter(|c| c.starts_with(prefix))
        .count()
}

#[test]
fn drop_joins_every_kernel_thread_even_with_blocked_threads() {
    let rt = Runtime::builder().lwps(2).thread_name("sd1").ignore_env().build().unwrap();
    let m = Arc::new(marcel::sync::Mutex::new(()));
    let held = m.lock();
    let m2 = m.clone();
    rt.block_on(move || {
        // Detached threads: one blocked on the mutex forever, some runnable, one in a rescue.
        drop(marcel::spawn(move || drop(m2.lock())));
        for _ in 0..5 {
            drop(marcel::spawn(|| {
                loop {
                    marcel::yield_now();
                }
            }));
        }
        marcel::blocking(|| std::thread::sleep(Duration::from_millis(5)));
    });
    assert!(kernel_threads_named("sd1-") >= 3);
    let t = Instant::now();
    drop(rt);
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(kernel_threads_named("sd1-"), 0, "no leaked LWP, spare, sentinel or monitor");
    drop(held);
}

#[test]
fn shutdown_timeout_names_a_busy_kernel_thread() {
    let rt = Runtime::builder().lwps(1).thread_name("sd2").ignore_env().build().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let started = Arc::new(AtomicBool::new(false));
    let st2 = started.clone();
    drop(rt.spawn(move || {
        st2.store(true, SeqCst);
        while !s2.load(Relaxed) {
            std::hint::spin_loop();
        }
    }));
    while !started.load(SeqCst) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let err = rt.shutdown_timeout(Duration::from_millis(100)).unwrap_err();
    assert!(err.stuck.iter().any(|n| n.starts_with("sd2-lwp0")), "{err}");
    // The hog ends: its kernel thread sees the shutdown at its next switch point and exits.
    stop.store(true, Relaxed);
    let t = Instant::now();
    while kernel_threads_named("sd2-") > 0 {
        assert!(t.elapsed() < Duration::from_secs(5), "kernel thread left behind");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn runtimes_can_be_created_and_dropped_repeatedly() {
    for _ in 0..20 {
        let rt = Runtime::builder().lwps(2).thread_name("sd3").ignore_env().build().unwrap();
        assert_eq!(rt.block_on(|| marcel::spawn(|| 1).join().unwrap()), 1);
    }
    assert_eq!(kernel_threads_named("sd3-"), 0);
}
