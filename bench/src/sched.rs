//! Scheduler costs, marcel beside the OS-thread equivalent, timed without criterion for
//! `madbench` ([`measure`]).
//!
//! The kernels time `iters` operations and return the time they measured (criterion's
//! `iter_custom` shape, like [`crate::limits`]); they follow `benches/sched.rs` operation for
//! operation. A kernel that pins the calling OS thread restores its previous affinity before
//! returning.

use crate::limits::{AffinityGuard, samples, stat_of};
use crate::record::{Impl, Measurement};
use crate::{close, pin_to, pipe, read_byte, two_cpus, write_byte};
use marcel::Runtime;
use marcel::sync::{Condvar, Mutex};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// A marcel runtime of `lwps` LWPs, ignoring the `MARCEL_*` environment.
pub fn runtime(lwps: usize) -> Runtime {
    Runtime::builder().lwps(lwps).ignore_env().build().expect("marcel runtime")
}

/// `iters` user-thread spawns, each joined before the next.
pub fn marcel_spawn_join(rt: &Runtime, iters: u64) -> Duration {
    rt.block_on(|| {
        let t = Instant::now();
        for i in 0..iters {
            black_box(marcel::spawn(move || i).join().unwrap());
        }
        t.elapsed()
    })
}

/// `iters` OS-thread spawns, each joined before the next.
pub fn os_spawn_join(iters: u64) -> Duration {
    let t = Instant::now();
    for i in 0..iters {
        black_box(std::thread::spawn(move || i).join().unwrap());
    }
    t.elapsed()
}

/// Two user threads on LWP 0 yielding to each other: `iters` switches (rounded up to even).
pub fn marcel_yield(rt: &Runtime, iters: u64) -> Duration {
    rt.block_on(|| {
        let n = iters.div_ceil(2);
        let t = Instant::now();
        let a = marcel::spawn_on(0, move || (0..n).for_each(|_| marcel::yield_now()));
        let b = marcel::spawn_on(0, move || (0..n).for_each(|_| marcel::yield_now()));
        a.join().unwrap();
        b.join().unwrap();
        t.elapsed()
    })
}

/// Two OS threads pinned to `cpu` calling `sched_yield`: `iters` switches (rounded up to even).
pub fn os_yield(cpu: usize, iters: u64) -> Duration {
    let _affinity = AffinityGuard::save();
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
    t.elapsed()
}

/// `iters` park/unpark round trips between a user thread on LWP 0 and one on LWP 1.
pub fn marcel_park_pingpong(rt: &Runtime, iters: u64) -> Duration {
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
}

/// `iters` round trips of a token between two OS threads pinned to `c0` (the caller) and `c1`
/// through a std Mutex + Condvar (the OS-thread baseline of the hand-off benchmarks).
pub fn os_condvar_pingpong(iters: u64, c0: usize, c1: usize) -> Duration {
    let _affinity = AffinityGuard::save();
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
    e
}

/// `iters` round trips of a token through marcel's Mutex + Condvar between a user thread on
/// LWP 0 and one on the runtime's last LWP (the same one with a single LWP).
pub fn marcel_mutex_handoff(rt: &Runtime, iters: u64) -> Duration {
    let last = rt.handle().num_lwps() - 1;
    rt.block_on(move || {
        let p = Arc::new((Mutex::new(0u64), Condvar::new()));
        let p2 = p.clone();
        let other = marcel::spawn_on(last, move || {
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
}

/// `iters` calls of `getppid` (a system call that never blocks), inside `marcel::blocking` if
/// `wrapped`, bare otherwise; both from a user thread of `rt`.
pub fn getppid_calls(rt: &Runtime, wrapped: bool, iters: u64) -> Duration {
    rt.block_on(move || {
        let t = Instant::now();
        if wrapped {
            for _ in 0..iters {
                // SAFETY: getppid has no preconditions.
                black_box(marcel::blocking(|| unsafe { libc::getppid() }));
            }
        } else {
            for _ in 0..iters {
                // SAFETY: getppid has no preconditions.
                black_box(unsafe { libc::getppid() });
            }
        }
        t.elapsed()
    })
}

/// How soon another user thread of the same LWP runs once a call inside `blocking` really
/// blocks (a pipe read), summed over `iters` trials (`rt` should have one LWP: only a spare
/// kernel thread can run the other user thread).
pub fn marcel_resume_after_block(rt: &Runtime, iters: u64) -> Duration {
    rt.block_on(move || {
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
}

/// The OS equivalent of [`marcel_resume_after_block`]: two OS threads pinned to `cpu`, the
/// kernel switching to the spinning one when the other blocks in a pipe read.
pub fn os_resume_after_block(cpu: usize, iters: u64) -> Duration {
    let _affinity = AffinityGuard::save();
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let (r, w) = pipe();
        let epoch = Instant::now();
        let t0 = Arc::new(AtomicU64::new(u64::MAX));
        let ready = Arc::new(AtomicBool::new(false));
        let (t0c, readyc) = (t0.clone(), ready.clone());
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
        close(r);
        close(w);
    }
    total
}

/// The cases of [`measure`], in order.
pub const CASES: [&str; 7] = [
    "spawn+join",
    "yield-switch",
    "pingpong-2cores",
    "mutex-handoff-1core",
    "mutex-handoff-2cores",
    "blocking-call",
    "resume-after-block",
];

/// Scheduler costs as `madbench` records (`bench` = `sched`, transport `-`, size 0, unit ns per
/// operation), one `Impl::Madmpi` (marcel) and one `Impl::Os` record per case:
///
/// | case | marcel | OS | operation |
/// |------|--------|----|-----------|
/// | `spawn+join` | user thread, 1 LWP | `std::thread` | spawn + join |
/// | `yield-switch` | two user threads, 1 LWP | two threads pinned to one CPU, `sched_yield` | one switch |
/// | `pingpong-2cores` | park/unpark, LWPs 0 and 1 | Mutex + Condvar, two CPUs | round trip |
/// | `mutex-handoff-1core` | marcel Mutex + Condvar, 1 LWP | std's, both threads on one CPU | round trip |
/// | `mutex-handoff-2cores` | marcel's, 2 LWPs | std's, two CPUs | round trip |
/// | `blocking-call` | `marcel::blocking(getppid)` | bare `getppid` (both in a user thread) | one call |
/// | `resume-after-block` | another user thread runs once `blocking(read)` blocks, 1 LWP (spare rescue) | the kernel switches to another thread of the CPU | one resume |
///
/// The OS threads use the first two CPUs this process may use; the calling thread's affinity is
/// restored afterwards. Every case gets fresh runtimes, shut down before the OS side runs (idle
/// LWPs would compete with it). Each figure is the median, min and max over `reps` batches (see
/// [`crate::limits::samples`]). About 2.5 s with `reps` 5, 0.2 s quick (on 2 cores).
pub fn measure(reps: u32, quick: bool, progress: &mut dyn FnMut(&str)) -> Vec<Measurement> {
    let _affinity = AffinityGuard::save();
    let (c0, c1) = two_cpus();
    let mut out = Vec::new();
    for case in CASES {
        progress(&format!("sched: {case}"));
        let lwps = if matches!(case, "pingpong-2cores" | "mutex-handoff-2cores") { 2 } else { 1 };
        let rt = runtime(lwps);
        let ours = match case {
            "spawn+join" => samples(reps, quick, |n| marcel_spawn_join(&rt, n)),
            "yield-switch" => samples(reps, quick, |n| marcel_yield(&rt, n)),
            "pingpong-2cores" => samples(reps, quick, |n| marcel_park_pingpong(&rt, n)),
            "mutex-handoff-1core" | "mutex-handoff-2cores" => {
                samples(reps, quick, |n| marcel_mutex_handoff(&rt, n))
            }
            "blocking-call" => samples(reps, quick, |n| getppid_calls(&rt, true, n)),
            "resume-after-block" => samples(reps, quick, |n| marcel_resume_after_block(&rt, n)),
            _ => unreachable!("{case}"),
        };
        // The bare call runs in a user thread too, as in the criterion bench.
        let bare = (case == "blocking-call").then(|| samples(reps, quick, |n| getppid_calls(&rt, false, n)));
        if let Err(e) = rt.shutdown_timeout(Duration::from_secs(5)) {
            progress(&format!("sched {case}: {e}"));
        }
        let os = match case {
            "spawn+join" => samples(reps, quick, os_spawn_join),
            "yield-switch" => samples(reps, quick, |n| os_yield(c0, n)),
            "pingpong-2cores" | "mutex-handoff-2cores" => {
                samples(reps, quick, |n| os_condvar_pingpong(n, c0, c1))
            }
            "mutex-handoff-1core" => samples(reps, quick, |n| os_condvar_pingpong(n, c0, c0)),
            "blocking-call" => bare.unwrap_or_default(),
            "resume-after-block" => samples(reps, quick, |n| os_resume_after_block(c0, n)),
            _ => unreachable!("{case}"),
        };
        for (imp, v) in [(Impl::Madmpi, ours), (Impl::Os, os)] {
            match stat_of(v, |ns| ns) {
                Some(stat) => out.push(Measurement::new("sched", case, imp, "-", 0, stat, "ns")),
                None => progress(&format!("sched {case} {}: no finite sample", imp.label())),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_run_reports_every_case_for_both_sides() {
        let _serial = crate::limits::TIMING_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        let mut notes = Vec::new();
        let ms = measure(1, true, &mut |s| notes.push(s.to_string()));
        for case in CASES {
            for imp in [Impl::Madmpi, Impl::Os] {
                let m = ms
                    .iter()
                    .find(|m| m.case == case && m.imp == imp)
                    .unwrap_or_else(|| panic!("{case} {imp:?} missing; notes: {notes:?}"));
                assert_eq!(
                    (m.bench.as_str(), m.transport.as_str(), m.size, m.unit.as_str()),
                    ("sched", "-", 0, "ns")
                );
                let s = m.stat;
                assert!(s.median.is_finite() && s.median > 0.0, "{case} {imp:?}: {s:?}");
                assert!(s.min <= s.median && s.median <= s.max, "{case} {imp:?}: {s:?}");
            }
        }
        assert_eq!(ms.len(), 2 * CASES.len());
    }
}
