//! Scheduler costs, marcel beside the OS-thread equivalent in the same run:
//! spawn+join, yield ping-pong on one LWP, hand-off across two LWPs, mutex+condvar hand-off,
//! `blocking` overhead when the call does not block, and how soon other user threads resume once a
//! call really blocks.
//!
//! The timed loops are [`bench::sched`]'s (shared with `madbench`); the group and bench names
//! are what `sched-summary` reads back from `target/criterion`.

use bench::limits::AffinityGuard;
use bench::sched::{
    getppid_calls, marcel_mutex_handoff, marcel_park_pingpong, marcel_resume_after_block, marcel_spawn_join,
    marcel_yield, os_condvar_pingpong, os_resume_after_block, os_spawn_join, os_yield, runtime,
};
use bench::{pin_to, two_cpus};
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::*};
use std::time::{Duration, Instant};

fn spawn_join(c: &mut Criterion) {
    let mut g = c.benchmark_group("spawn_join");
    for lwps in [1, 2] {
        let rt = runtime(lwps);
        g.bench_function(format!("marcel_{lwps}lwp"), |b| b.iter_custom(|n| marcel_spawn_join(&rt, n)));
    }
    g.bench_function("std_thread", |b| b.iter_custom(os_spawn_join));
    g.finish();
}

/// Two threads on one core alternately giving it to each other; time per switch.
fn yield_one_core(c: &mut Criterion) {
    let mut g = c.benchmark_group("yield_pingpong_one_core");
    let rt = runtime(1);
    g.bench_function("marcel", |b| b.iter_custom(|n| marcel_yield(&rt, n)));
    drop(rt);
    let (cpu, _) = two_cpus();
    g.bench_function("os_sched_yield", |b| b.iter_custom(|n| os_yield(cpu, n)));
    g.finish();
}

/// Ping-pong between two threads on two cores: a park/unpark round trip for marcel (LWP 0 and 1),
/// a Mutex+Condvar round trip for OS threads pinned to two CPUs.
fn handoff_two_cores(c: &mut Criterion) {
    let mut g = c.benchmark_group("pingpong_two_cores");
    let rt = runtime(2);
    g.bench_function("marcel_park_unpark", |b| b.iter_custom(|n| marcel_park_pingpong(&rt, n)));
    drop(rt);
    let (c0, c1) = two_cpus();
    g.bench_function("os_condvar", |b| b.iter_custom(|n| os_condvar_pingpong(n, c0, c1)));
    g.finish();
}

/// Token passing through a Mutex + Condvar: marcel's (user threads on one LWP, and on two) and
/// std's (OS threads on one core, and on two); time per round trip.
fn mutex_handoff(c: &mut Criterion) {
    let mut g = c.benchmark_group("mutex_condvar_handoff");
    for lwps in [1, 2] {
        let rt = runtime(lwps);
        g.bench_function(format!("marcel_{lwps}lwp"), |b| b.iter_custom(|n| marcel_mutex_handoff(&rt, n)));
    }
    let (c0, c1) = two_cpus();
    for (label, other_cpu) in [("os_1core", c0), ("os_2cores", c1)] {
        g.bench_function(label, |b| b.iter_custom(|n| os_condvar_pingpong(n, c0, other_cpu)));
    }
    g.finish();
}

/// `marcel::blocking` around a system call that does not block, beside the bare call.
fn blocking_overhead(c: &mut Criterion) {
    let mut g = c.benchmark_group("blocking_call_not_blocking");
    let rt = runtime(1);
    g.bench_function("marcel_blocking_getppid", |b| b.iter_custom(|n| getppid_calls(&rt, true, n)));
    drop(rt);
    // The paper's design for comparison: wake a parked SCHED_IDLE spare on the same core before
    // every possibly-blocking call (only the caller's time is measured; between calls the caller
    // sleeps so that the spare goes back to sleep).
    let (cpu, _) = two_cpus();
    let word = Arc::new(AtomicU32::new(0));
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
    let affinity = AffinityGuard::save();
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
    drop(affinity);
    let rt = runtime(1);
    g.bench_function("bare_getppid_in_user_thread", |b| b.iter_custom(|n| getppid_calls(&rt, false, n)));
    g.finish();
}

/// How soon another user thread of the same core runs once a call inside `blocking` really
/// blocks (1 LWP: only a spare kernel thread can run it). The OS equivalent: two OS threads on one
/// core, the kernel switching to the runnable one when the other blocks.
fn resume_after_block(c: &mut Criterion) {
    let mut g = c.benchmark_group("resume_after_block");
    g.sample_size(30);
    let rt = runtime(1);
    g.bench_function("marcel_spare_rescue", |b| b.iter_custom(|n| marcel_resume_after_block(&rt, n)));
    drop(rt);
    let (cpu, _) = two_cpus();
    g.bench_function("os_switch_on_block", |b| b.iter_custom(|n| os_resume_after_block(cpu, n)));
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
