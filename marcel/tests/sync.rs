//! Mutex, Condvar, Semaphore, Barrier: correctness from user threads, OS threads and both mixed,
//! timed waits, and no lost wake-ups under ping-pong.

use marcel::Runtime;
use marcel::sync::{Barrier, Condvar, Mutex, Semaphore};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::time::{Duration, Instant};

fn rt(lwps: usize) -> Runtime {
    Runtime::builder().lwps(lwps).ignore_env().build().expect("runtime")
}

#[test]
fn mutex_counts_exactly_with_user_and_os_threads() {
    let rt = rt(2);
    let m = Arc::new(Mutex::new(0u64));
    let os: Vec<_> = (0..2)
        .map(|_| {
            let m = m.clone();
            std::thread::spawn(move || {
                for _ in 0..20_000 {
                    *m.lock() += 1;
                }
            })
        })
        .collect();
    let m2 = m.clone();
    rt.block_on(move || {
        let hs: Vec<_> = (0..64)
            .map(|_| {
                let m = m2.clone();
                marcel::spawn(move || {
                    for i in 0..1000 {
                        let mut g = m.lock();
                        *g += 1;
                        if i % 7 == 0 {
                            marcel::yield_now(); // hold the lock across a switch
                        }
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    });
    for t in os {
        t.join().unwrap();
    }
    assert_eq!(*m.lock(), 40_000 + 64_000);
}

#[test]
fn mutex_blocks_only_the_user_thread() {
    // One LWP: a thread waiting for the lock must let the holder run, or this deadlocks.
    let rt = rt(1);
    rt.block_on(|| {
        let m = Arc::new(Mutex::new(()));
        let g = m.lock();
        let m2 = m.clone();
        let waiter = marcel::spawn(move || drop(m2.lock()));
        marcel::yield_now(); // the waiter runs and blocks
        assert!(!waiter.is_finished());
        drop(g);
        waiter.join().unwrap();
    });
}

#[test]
fn try_lock_and_get_mut() {
    let mut m = Mutex::new(5);
    {
        let g = m.try_lock().unwrap();
        assert!(m.try_lock().is_none());
        drop(g);
    }
    *m.get_mut() += 1;
    assert_eq!(m.into_inner(), 6);
}

#[test]
fn mutex_is_fair_enough_under_contention() {
    // Two threads on one LWP hammer the lock; neither may starve.
    let rt = rt(1);
    let counts = rt.block_on(|| {
        let m = Arc::new(Mutex::new([0u32; 2]));
        let stop = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..2)
            .map(|i| {
                let (m, stop) = (m.clone(), stop.clone());
                marcel::spawn(move || {
                    while stop.load(Relaxed) == 0 {
                        let mut g = m.lock();
                        g[i] += 1;
                        if g[i] >= 5000 {
                            stop.store(1, Relaxed);
                        }
                        marcel::yield_now();
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        *m.lock()
    });
    assert!(counts[0] > 1000 && counts[1] > 1000, "{counts:?}");
}

#[test]
fn condvar_producer_consumer_no_lost_wakeups() {
    let rt = rt(2);
    let q = Arc::new((Mutex::new(Vec::<u32>::new()), Condvar::new()));
    let got = rt.block_on(move || {
        let consumers: Vec<_> = (0..4)
            .map(|_| {
                let q = q.clone();
                marcel::spawn(move || {
                    let mut n = 0u64;
                    loop {
                        let mut g = q.0.lock();
                        q.1.wait_while(&mut g, |v| v.is_empty());
                        let x = g.pop().unwrap();
                        drop(g);
                        if x == u32::MAX {
                            return n;
                        }
                        n += x as u64;
                    }
                })
            })
            .collect();
        for i in 0..20_000u32 {
            q.0.lock().push(i);
            q.1.notify_one();
        }
        for _ in 0..4 {
            q.0.lock().insert(0, u32::MAX);
            q.1.notify_all();
        }
        consumers.into_iter().map(|c| c.join().unwrap()).sum::<u64>()
    });
    assert_eq!(got, (0..20_000u64).sum());
}

#[test]
fn condvar_timeouts() {
    let rt = rt(1);
    rt.block_on(|| {
        let m = Mutex::new(false);
        let cv = Condvar::new();
        let mut g = m.lock();
        let t = Instant::now();
        let r = cv.wait_for(&mut g, Duration::from_millis(20));
        assert!(r.timed_out());
        assert!(t.elapsed() >= Duration::from_millis(19));
        let r = cv.wait_while_for(&mut g, |ready| !*ready, Duration::from_millis(10));
        assert!(r.timed_out());
    });
    // Same from an OS thread.
    let m = Mutex::new(());
    let cv = Condvar::new();
    let mut g = m.lock();
    assert!(cv.wait_for(&mut g, Duration::from_millis(5)).timed_out());
}

#[test]
fn condvar_wakes_os_thread_from_user_thread() {
    let rt = rt(1);
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let p2 = pair.clone();
    let os = std::thread::spawn(move || {
        let mut g = p2.0.lock();
        p2.1.wait_while(&mut g, |ready| !*ready);
    });
    std::thread::sleep(Duration::from_millis(10));
    let p3 = pair.clone();
    rt.block_on(move || {
        *p3.0.lock() = true;
        p3.1.notify_all();
    });
    os.join().unwrap();
}

#[test]
fn semaphore_bounds_concurrency_and_times_out() {
    let rt = rt(2);
    let sem = Arc::new(Semaphore::new(3));
    let inside = Arc::new(AtomicUsize::new(0));
    let max = Arc::new(AtomicUsize::new(0));
    let (s2, i2, m2) = (sem.clone(), inside.clone(), max.clone());
    rt.block_on(move || {
        let hs: Vec<_> = (0..100)
            .map(|_| {
                let (s, i, m) = (s2.clone(), i2.clone(), m2.clone());
                marcel::spawn(move || {
                    s.acquire();
                    let now = i.fetch_add(1, SeqCst) + 1;
                    m.fetch_max(now, SeqCst);
                    marcel::yield_now();
                    i.fetch_sub(1, SeqCst);
                    s.release();
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    });
    assert!(max.load(SeqCst) <= 3 && max.load(SeqCst) >= 1);
    assert_eq!(sem.available_permits(), 3);
    let empty = Semaphore::new(0);
    let t = Instant::now();
    assert!(!empty.acquire_timeout(Duration::from_millis(10)));
    assert!(t.elapsed() >= Duration::from_millis(9));
    empty.release();
    assert!(empty.try_acquire());
}

#[test]
fn barrier_has_one_leader_per_round() {
    let rt = rt(2);
    let b = Arc::new(Barrier::new(8));
    let leaders = Arc::new(AtomicUsize::new(0));
    let (b2, l2) = (b.clone(), leaders.clone());
    rt.block_on(move || {
        let hs: Vec<_> = (0..8)
            .map(|_| {
                let (b, l) = (b2.clone(), l2.clone());
                marcel::spawn(move || {
                    for _ in 0..100 {
                        if b.wait().is_leader() {
                            l.fetch_add(1, SeqCst);
                        }
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    });
    assert_eq!(leaders.load(SeqCst), 100);
}

#[test]
fn ping_pong_across_lwps_loses_no_wakeup() {
    let rt = rt(2);
    let n = 20_000;
    rt.block_on(move || {
        let a = Arc::new(Semaphore::new(0));
        let b = Arc::new(Semaphore::new(0));
        let (a2, b2) = (a.clone(), b.clone());
        let pong = marcel::spawn_on(1, move || {
            for _ in 0..n {
                a2.acquire();
                b2.release();
            }
        });
        let ping = marcel::spawn_on(0, move || {
            for _ in 0..n {
                a.release();
                b.acquire();
            }
        });
        ping.join().unwrap();
        pong.join().unwrap();
    });
}
