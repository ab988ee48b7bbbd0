//! Scheduler costs, marcel beside the OS-thread equivalent in the same run:
//! spawn+join, yield ping-pong on one LWP, hand-off across two LWPs, mutex+condvar hand-off,
//! `blocking` overhead when the call does not block, and how soon other user threads resume once a
//! call really blocks.

use bench::{close, pin_to, pipe, read_byte, two_cpus, write_byte};
use criterion::{Criterion, criterion_group, criterion_main};
use marcel::Runtime;
use marcel::sync::{Condvar, Mutex};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

fn runtime(lwps: usize) -> Runtime {
    Runtime::builder().lwps(lwps).ignore_env().build().expect("marcel runtime")
}

fn spawn_join(c: &mut Criterion) {
    let mut g = c.benchmark_group("spawn_join");
    for lwps in [1, 2] {
        let rt = runtime(lwps);
        g.bench_function(format!("marcel_{lwps}lwp"), |b| {
            b.iter_custom(|iters| {
                rt.block_on(|| {
                    let t = Instant::now();
                    for i in 0..iters {
                        black_box(marcel::spawn(move || i).join().unwrap());
                    }
                    t.elapsed()
                })
            })
        });
    }
    g.bench_function("std_thread", |b| b.iter(|| black_box(std::thread::spawn(|| 1u64).join().unwrap())));
    g.finish();
}

/// Two threads on one core alternately giving it to each other; time per switch.
fn yield_one_core(c: &mut Criterion) {
    let mut g = c.benchmark_group("yield_pingpong_one_core");
    let rt = runtime(1);
    g.bench_function("marcel", |b| {
        b.iter_custom(|iters| {
            rt.block_on(|| {
                let n = iters.div_ceil(2);
                let t = Instant::now();
                let a = marcel::spawn_on(0, move || (0..n).for_each(|_| marcel::yield_now()));
                let bb = marcel::spawn_on(0, move || (0..n).for_each(|_| marcel::yield_now()));
                a.join().unwrap();
                bb.join().unwrap();
                t.elapsed()
            })
        })
    });
    drop(rt);
    let (cpu, _) = two_cpus();
    g.bench_function("os_sched_yield", |b| {
        b.iter_custom(|iters| {
            let n = iters.div_ceil(2);
            let go = Arc::new(Barrier::new(2));
            let g2 = go.clone();
            let other = std::thread::spawn(move || {
                pin_to(cpu);
                g2.wait();
                (0..n).for_each(|_| std::thread::yield_now());
            });
            pin_to(cpu);
            go.wait();
            let t = Instant::now();
            (0..n).for_each(|_| std::thread::yield_now());
            other.join().unwrap();
            let e = t.elapsed();
            pin_to_all();
            e
        })
    });
    g.finish();
}

fn pin_to_all() {
    // SAFETY: as in `pin_to`, with every allowed CPU.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in marcel::topology::allowed_cpus() {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Ping-pong between two threads on two cores: a park/unpark round trip for marcel (LWP 0 and 1),
/// a Mutex+Condvar round trip for OS threads pinned to two CPUs.
fn handoff_two_cores(c: &mut Criterion) {
    let mut g = c.benchmark_group("pingpong_two_cores");
    let rt = runtime(2);
    g.bench_function("marcel_park_unpark", |b| {
        b.iter_custom(|iters| {
            rt.block_on(|| {
                let turn = Arc::new(AtomicU64::new(0));
                let (t1, t2) = (turn.clone(), turn.clone());
                let (tx, rx) = std::sync::mpsc::channel::<marcel::Thread>();
                let pong = marcel::spawn_on(1, move || {
                    let ping = rx.recv().unwrap();
                    for i in 0..iters {
                        while t1.load(Acquire) != 2 * i + 1 {
                            marcel::park();
                        }
                        t1.store(2 * i + 2, Release);
                        ping.unpark();
                    }
                });
                let pong_t = pong.thread();
                let ping = marcel::spawn_on(0, move || {
                    let t = Instant::now();
                    for i in 0..iters {
                        t2.store(2 * i + 1, Release);
                        pong_t.unpark();
                        while t2.load(Acquire) != 2 * i + 2 {
                            marcel::park();
                        }
                    }
                    t.elapsed()
                });
                tx.send(ping.thread()).unwrap();
                let e = ping.join().unwrap();
                pong.join().unwrap();
                e
            })
        })
    });
    drop(rt);
    let (c0, c1) = two_cpus();
    g.bench_function("os_condvar", |b| b.iter_custom(|iters| os_condvar_pingpong(iters, c0, c1)));
    g.finish();
}

/// `iters` round trips of a token between two OS threads pinned to `c0` and `c1` through a std
/// Mutex + Condvar (the OS-thread baseline of the hand-off benchmarks).
fn os_condvar_pingpong(iters: u64, c0: usize, c1: usize) -> Duration {
    let p = Arc::new((std::sync::Mutex::new(0u64), std::sync::Condvar::new()));
    let p2 = p.clone();
    let other = std::thread::spawn(move || {
        pin_to(c1);
        for i in 0..iters {
            let mut g = p2.0.lock().unwrap();
            while *g != 2 * i + 1 {
                g = p2.1.wait(g).unwrap();
            }
            *g += 1;
            p2.1.notify_one();
        }
    });
    pin_to(c0);
    let t = Instant::now();
    for i in 0..iters {
        let mut g = p.0.lock().unwrap();
        *g = 2 * i + 1;
        p.1.notify_one();
        while *g != 2 * i + 2 {
            g = p.1.wait(g).unwrap();
        }
    }
    let e = t.elapsed();
    other.join().unwrap();
    pin_to_all();
    e
}

/// Token passing through a Mutex + Condvar: marcel's (user threads on one LWP, and on two) and
/// std's (OS threads on one core, and on two); time per round trip.
fn mutex_handoff(c: &mut Criterion) {
    let mut g = c.benchmark_group("mutex_condvar_handoff");
    for lwps in [1, 2] {
        let rt = runtime(lwps);
        g.bench_function(format!("marcel_{lwps}lwp"), |b| {
            b.iter_custom(|iters| {
                rt.block_on(|| {
                    let p = Arc::new((Mutex::new(0u64), Condvar::new()));
                    let p2 = p.clone();
                    let other = marcel::spawn_on(lwps - 1, move || {
                        for i in 0..iters {
                            let mut g = p2.0.lock();
                            p2.1.wait_while(&mut g, |v| *v != 2 * i + 1);
                            *g += 1;
                            p2.1.notify_one();
                        }
                    });
                    let me = marcel::spawn_on(0, move || {
                        let t = Instant::now();
                        for i in 0..iters {
                            let mut g = p.0.lock();
                            *g = 2 * i + 1;
                            p.1.notify_one();
                            p.1.wait_while(&mut g, |v| *v != 2 * i + 2);
                        }
                        t.elapsed()
                    });
                    let e = me.join().unwrap();
                    other.join().unwrap();
                    e
                })
            })
        });
    }
    let (c0, c1) = two_cpus();
    for (label, other_cpu) in [("os_1core", c0), ("os_2cores", c1)] {
        g.bench_function(label, |b| b.iter_custom(|iters| os_condvar_pingpong(iters, c0, other_cpu)));
    }
    g.finish();
}

/// `marcel::blocking` around a system call that does not block, beside the bare call.
fn blocking_overhead(c: &mut Criterion) {
    let mut g = c.benchmark_group("blocking_call_not_blocking");
    let rt = runtime(1);
    g.bench_function("marcel_blocking_getppid", |b| {
        b.iter_custom(|iters| {
            rt.block_on(|| {
                let t = Instant::now();
                for _ in 0..iters {
                    // SAFETY: getppid has no preconditions.
                    black_box(marcel::blocking(|| unsafe { libc::getppid() }));
                }
                t.elapsed()
            })
        })
    });
    drop(rt);
    // The paper's design for comparison: wake a parked SCHED_IDLE spare on the same core before
    // every possibly-blocking call (only the caller's time is measured; between calls the caller
    // sleeps so that the spare goes back to sleep).
    let (cpu, _) = two_cpus();
    let word = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (w2, s2) = (word.clone(), stop.clone());
    let spare = std::thread::spawn(move || {
        pin_to(cpu);
        bench::set_sched_idle();
        while !s2.load(Acquire) {
            if w2.swap(0, AcqRel) == 0 {
                bench::futex_wait(&w2, 0, Some(Duration::from_millis(50)));
            }
        }
    });
    pin_to(cpu);
    g.bench_function("eager_wake_idle_spare_then_getppid", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                std::thread::sleep(Duration::from_micros(50));
                let t = Instant::now();
                word.store(1, Release);
                bench::futex_wake(&word);
                // SAFETY: getppid has no preconditions.
                black_box(unsafe { libc::getppid() });
                total += t.elapsed();
            }
            total
        })
    });
    stop.store(true, Release);
    bench::futex_wake(&word);
    spare.join().unwrap();
    pin_to_all();
    let rt = runtime(1);
    g.bench_function("bare_getppid_in_user_thread", |b| {
        b.iter_custom(|iters| {
            rt.block_on(|| {
                let t = Instant::now();
                for _ in 0..iters {
                    // SAFETY: getppid has no preconditions.
                    black_box(unsafe { libc::getppid() });
                }
                t.elapsed()
            })
        })
    });
    g.finish();
}

/// How soon another user thread of the same core runs once a call inside `blocking` really
/// blocks (1 LWP: only a spare kernel thread can run it). The OS equivalent: two OS threads on one
/// core, the kernel switching to the runnable one when the other blocks.
fn resume_after_block(c: &mut Criterion) {
    let mut g = c.benchmark_group("resume_after_block");
    g.sample_size(30);
    let rt = runtime(1);
    g.bench_function("marcel_spare_rescue", |b| {
        b.iter_custom(|iters| {
            rt.block_on(|| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let (r, w) = pipe();
                    let t0 = Arc::new(AtomicU64::new(0));
                    let epoch = Instant::now();
                    let t0r = t0.clone();
                    let reader = marcel::spawn(move || {
                        marcel::blocking(|| {
                            t0r.store(epoch.elapsed().as_nanos() as u64, Release);
                            read_byte(r);
                        })
                    });
                    let other = marcel::spawn(move || {
                        let t1 = epoch.elapsed().as_nanos() as u64;
                        write_byte(w);
                        Duration::from_nanos(t1.saturating_sub(t0.load(Acquire)))
                    });
                    total += other.join().unwrap();
                    reader.join().unwrap();
                    close(r);
                    close(w);
                }
                total
            })
        })
    });
    drop(rt);
    let (cpu, _) = two_cpus();
    g.bench_function("os_switch_on_block", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (r, w) = pipe();
                let epoch = Instant::now();
                let t0 = Arc::new(AtomicU64::new(u64::MAX));
                let ready = Arc::new(AtomicBool::new(false));
                let (t0c, readyc) = (t0.clone(), ready.clone());
                // The other thread spins on the same core: the kernel runs it once the reader blocks.
                let other = std::thread::spawn(move || {
                    pin_to(cpu);
                    readyc.store(true, Release);
                    let start = loop {
                        let s = t0c.load(Acquire);
                        if s != u64::MAX {
                            break s;
                        }
                        std::hint::spin_loop();
                    };
                    let t1 = epoch.elapsed().as_nanos() as u64;
                    write_byte(w);
                    Duration::from_nanos(t1.saturating_sub(start))
                });
                pin_to(cpu);
                while !ready.load(Acquire) {
                    std::thread::yield_now();
                }
                t0.store(epoch.elapsed().as_nanos() as u64, Release);
                read_byte(r);
                total += other.join().unwrap();
                pin_to_all();
                close(r);
                close(w);
            }
            total
        })
    });
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(40)
}

criterion_group! {
    name = sched;
    config = config();
    targets = spawn_join, yield_one_core, handoff_two_cores, mutex_handoff, blocking_overhead, resume_after_block
}
criterion_main!(sched);
