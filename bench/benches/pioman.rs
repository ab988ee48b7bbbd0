//! PIOMan benchmarks.
//!
//! - `pioman_overhead`: one process, an eventfd ping-pong between two pinned threads. The detecting
//!   side reads the eventfd directly (busy poll, the baseline) or waits through pioman under each
//!   policy, with and without marcel: the cost pioman adds (the paper's Table 2).
//! - `reactivity`: two processes. This process pings; a receiver child (this binary, re-executed)
//!   detects the ping through pioman while 0, 1, 2 or 4 busy compute threads per core run beside
//!   it (marcel user threads, or OS threads), and pongs. Criterion times the round trip; the child
//!   reports its exact one-way detection latency (events carry their send time), its CPU time per
//!   message and the share of computation it lost against a baseline it measured first. A plain
//!   blocking `read` in the receiver is the reference.
//!
//! A summary table is printed at the end and written to `bench-results/pioman.json`.

use bench::{
    blocking_read, criterion_median_ns, eventfd, human_ns, pin_to, process_cpu_time, spin_read, two_cpus,
};
use criterion::Criterion;
use pioman::eventfd::{EVENT, EventSource, notify};
use pioman::{Options, Pioman, policy};
use std::io::{BufRead, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::time::{Duration, Instant};

const POLICIES: [&str; 4] = ["poll", "block", "timer", "adaptive"];
const COMPUTE_PER_CORE: [usize; 4] = [0, 1, 2, 4];
const RECEIVER_ENV: &str = "PIOMAN_BENCH_RECEIVER";

// ------------------------------------------------------------------ overhead (one process)

/// How the detecting thread of the one-process ping-pong waits.
#[derive(Clone, Copy)]
enum Detector {
    Direct,
    Pioman { policy: &'static str, marcel: bool },
}

fn overhead(c: &mut Criterion) {
    let mut g = c.benchmark_group("pioman_overhead");
    let (c0, c1) = two_cpus();
    let cases = [
        ("direct_busy_poll", Detector::Direct),
        ("pioman_poll_os", Detector::Pioman { policy: "poll", marcel: false }),
        ("pioman_block_os", Detector::Pioman { policy: "block", marcel: false }),
        ("pioman_adaptive_os", Detector::Pioman { policy: "adaptive", marcel: false }),
        ("pioman_poll_marcel", Detector::Pioman { policy: "poll", marcel: true }),
        ("pioman_block_marcel", Detector::Pioman { policy: "block", marcel: true }),
        ("pioman_adaptive_marcel", Detector::Pioman { policy: "adaptive", marcel: true }),
    ];
    for (name, det) in cases {
        let ping = eventfd();
        let pong = eventfd();
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        // The detecting side, on the second CPU.
        let (rt, pio) = match det {
            Detector::Direct => (None, None),
            Detector::Pioman { policy, marcel } => {
                let rt = marcel
                    .then(|| marcel::Runtime::builder().lwps(1).cpus(&[c1]).ignore_env().build().unwrap());
                let b = Pioman::builder().policy(policy::by_name(policy).unwrap()).threads(if marcel {
                    0
                } else {
                    1
                });
                let pio = match &rt {
                    Some(rt) => b.marcel(rt.handle()).build().unwrap(),
                    None => b.without_marcel().build().unwrap(),
                };
                (rt, Some(pio))
            }
        };
        let detector: Box<dyn FnOnce() + Send> = match &pio {
            None => Box::new(move || {
                pin_to(c1);
                while !s2.load(Relaxed) {
                    spin_read(ping);
                    notify(pong).unwrap();
                }
            }),
            Some(pio) => {
                // SAFETY: `ping` is an open eventfd we hand over to the source for good.
                let src = Arc::new(EventSource::from_fd(unsafe { OwnedFd::from_raw_fd(ping) }, "ping"));
                pio.register(src.clone(), Options::default()).unwrap();
                let pio = pio.clone();
                Box::new(move || {
                    pin_to(c1);
                    while !s2.load(Relaxed) {
                        pio.wait(src.cond(), EVENT);
                        src.cond().clear(EVENT);
                        notify(pong).unwrap();
                    }
                })
            }
        };
        let th = match &rt {
            Some(rt) => {
                let h = rt.spawn(detector);
                Box::new(move || h.join().unwrap()) as Box<dyn FnOnce()>
            }
            None => {
                let h = std::thread::spawn(detector);
                Box::new(move || h.join().unwrap()) as Box<dyn FnOnce()>
            }
        };
        pin_to(c0);
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let t = Instant::now();
                for _ in 0..iters {
                    notify(ping).unwrap();
                    spin_read(pong);
                }
                t.elapsed()
            })
        });
        stop.store(true, Relaxed);
        notify(ping).unwrap();
        th();
        drop(pio);
        drop(rt);
        bench::close(pong);
        if matches!(det, Detector::Direct) {
            bench::close(ping);
        }
    }
    g.finish();
}

// ------------------------------------------------------------------ reactivity (two processes)

/// What the receiver child reports at the end.
#[derive(Debug, Default, Clone)]
struct ReceiverReport {
    messages: u64,
    cpu_per_message_ns: f64,
    detect_p50_ns: Option<u64>,
    /// Share of the computation lost during the ping-pong.
    compute_loss: Option<f64>,
    /// Core time the computation lost per message.
    lost_per_message_ns: Option<f64>,
}

/// The child process: detects pings (fd from the environment), pongs, with `k` compute threads per
/// core; reports on stdout when stdin says "stop".
fn receiver_main(cfg: &str) {
    let parts: Vec<&str> = cfg.split(',').collect();
    let (kind, pol, k, ping, pong) = (
        parts[0],
        parts[1],
        parts[2].parse::<usize>().unwrap(),
        parts[3].parse::<i32>().unwrap(),
        parts[4].parse::<i32>().unwrap(),
    );
    let cores = marcel::topology::allowed_cpus().len();
    let work = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let rt = (kind == "marcel").then(|| marcel::Runtime::builder().lwps(cores).ignore_env().build().unwrap());
    // Compute threads: count units of work (about 1 µs each).
    let compute = |work: Arc<AtomicU64>, stop: Arc<AtomicBool>| {
        move || {
            let mut x = 1u64;
            while !stop.load(Relaxed) {
                for i in 0..300 {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
                }
                work.fetch_add(1, Relaxed);
            }
        }
    };
    let mut joins: Vec<Box<dyn FnOnce()>> = Vec::new();
    for _ in 0..k * cores {
        let f = compute(work.clone(), stop.clone());
        match &rt {
            Some(rt) => {
                let h = rt.spawn(f);
                joins.push(Box::new(move || h.join().unwrap()));
            }
            None => {
                let h = std::thread::spawn(f);
                joins.push(Box::new(move || h.join().unwrap()));
            }
        }
    }
    // Baseline compute rate, before any communication.
    let baseline = (k > 0).then(|| {
        let (w0, t0) = (work.load(Relaxed), Instant::now());
        std::thread::sleep(Duration::from_millis(300));
        (work.load(Relaxed) - w0) as f64 / t0.elapsed().as_secs_f64()
    });
    let pio = (pol != "raw").then(|| {
        let b = Pioman::builder().policy(policy::by_name(pol).unwrap());
        match &rt {
            Some(rt) => b.marcel(rt.handle()).build().unwrap(),
            None => b.without_marcel().build().unwrap(),
        }
    });
    // SAFETY: the ping eventfd was inherited for this purpose; the source owns it from now on.
    let src = Arc::new(EventSource::from_fd(unsafe { OwnedFd::from_raw_fd(ping) }, "ping"));
    if let Some(p) = &pio {
        p.register(src.clone(), Options::default()).unwrap();
    }
    let quit = Arc::new(AtomicBool::new(false));
    let handled = Arc::new(AtomicU64::new(0));
    let (q2, h2, s2, p2) = (quit.clone(), handled.clone(), src.clone(), pio.clone());
    let receive = move || {
        while !q2.load(Relaxed) {
            match &p2 {
                Some(p) => {
                    p.wait(s2.cond(), EVENT);
                    s2.cond().clear(EVENT);
                }
                None => {
                    blocking_read(s2.fd());
                }
            }
            h2.fetch_add(1, Relaxed);
            notify(pong).unwrap();
        }
    };
    let receiver: Box<dyn FnOnce()> = match &rt {
        Some(rt) => {
            let h = rt.spawn(receive);
            Box::new(move || h.join().unwrap())
        }
        None => {
            let h = std::thread::spawn(receive);
            Box::new(move || h.join().unwrap())
        }
    };
    // Ready: tell the parent, then measure until it says stop.
    let (w0, t0, cpu0) = (work.load(Relaxed), Instant::now(), process_cpu_time());
    println!("ready");
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).unwrap();
    let elapsed = t0.elapsed().as_secs_f64();
    let (w1, cpu1) = (work.load(Relaxed), process_cpu_time());
    quit.store(true, Relaxed);
    notify(src.fd()).unwrap(); // unblock the receiver one last time
    receiver();
    stop.store(true, Relaxed);
    for j in joins {
        j();
    }
    let messages = handled.load(Relaxed).saturating_sub(1).max(1);
    let detect = pio.as_ref().and_then(|p| p.stats().sources.first().and_then(|s| s.detect.quantile_ns(0.5)));
    let loss = baseline.map(|b| (1.0 - ((w1 - w0) as f64 / elapsed) / b).max(0.0));
    let report = serde_json::json!({
        "messages": messages,
        "cpu_per_message_ns": (cpu1 - cpu0).as_nanos() as f64 / messages as f64,
        "detect_p50_ns": detect,
        "compute_loss": loss,
        "lost_per_message_ns": loss.map(|l| l * cores as f64 * elapsed * 1e9 / messages as f64),
    });
    println!("{report}");
    drop(pio);
    drop(rt);
}

struct Child {
    proc: std::process::Child,
    out: std::io::BufReader<std::process::ChildStdout>,
}

fn start_receiver(kind: &str, pol: &str, k: usize, ping: i32, pong: i32) -> Child {
    let mut proc = Command::new(std::env::current_exe().unwrap())
        .env(RECEIVER_ENV, format!("{kind},{pol},{k},{ping},{pong}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("receiver process");
    let mut out = std::io::BufReader::new(proc.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready", "receiver failed to start");
    Child { proc, out }
}

fn stop_receiver(mut c: Child) -> ReceiverReport {
    writeln!(c.proc.stdin.as_mut().unwrap(), "stop").unwrap();
    let mut line = String::new();
    c.out.read_line(&mut line).unwrap();
    c.proc.wait().unwrap();
    let v: serde_json::Value = serde_json::from_str(line.trim()).unwrap_or_default();
    ReceiverReport {
        messages: v["messages"].as_u64().unwrap_or(0),
        cpu_per_message_ns: v["cpu_per_message_ns"].as_f64().unwrap_or(0.0),
        detect_p50_ns: v["detect_p50_ns"].as_u64(),
        compute_loss: v["compute_loss"].as_f64(),
        lost_per_message_ns: v["lost_per_message_ns"].as_f64(),
    }
}

fn reactivity(c: &mut Criterion, reports: &mut Vec<(String, ReceiverReport)>) {
    let mut g = c.benchmark_group("reactivity");
    g.sample_size(10).warm_up_time(Duration::from_millis(200)).measurement_time(Duration::from_millis(800));
    let mut configs: Vec<(&str, &str, usize)> = Vec::new();
    for k in COMPUTE_PER_CORE {
        configs.push(("os", "raw", k));
        for kind in ["marcel", "os"] {
            for p in POLICIES {
                configs.push((kind, p, k));
            }
        }
    }
    for (kind, pol, k) in configs {
        let name = format!("{kind}_{pol}_{k}perCore");
        let ping = eventfd();
        let pong = eventfd();
        let child = start_receiver(kind, pol, k, ping, pong);
        g.bench_function(&name, |b| {
            b.iter_custom(|iters| {
                let t = Instant::now();
                for _ in 0..iters {
                    notify(ping).unwrap();
                    blocking_read(pong);
                }
                t.elapsed()
            })
        });
        reports.push((name, stop_receiver(child)));
        bench::close(ping);
        bench::close(pong);
    }
    g.finish();
}

fn summary(reports: &[(String, ReceiverReport)]) {
    println!(
        "\nreactivity: round trip = criterion median (pinger and receiver); detect = receiver's one-way"
    );
    println!(
        "detection latency p50 (from the event's send time); cpu/msg = receiver CPU per message (no compute"
    );
    println!(
        "threads); lost/msg = core time the computation lost per message, against the receiver's own baseline"
    );
    println!(
        "{:<28} {:>12} {:>12} {:>12} {:>12}",
        "config", "round trip", "detect p50", "cpu/msg", "lost/msg"
    );
    let mut rows = Vec::new();
    for (name, r) in reports {
        let rt = criterion_median_ns(None, "reactivity", name);
        println!(
            "{:<28} {:>12} {:>12} {:>12} {:>12}",
            name,
            rt.map_or("-".into(), human_ns),
            r.detect_p50_ns.map_or("-".into(), |n| human_ns(n as f64)),
            if name.ends_with("_0perCore") { human_ns(r.cpu_per_message_ns) } else { "-".into() },
            r.lost_per_message_ns.map_or("-".into(), human_ns),
        );
        rows.push(serde_json::json!({
            "bench": "reactivity", "config": name, "round_trip_median_ns": rt, "messages": r.messages,
            "detect_p50_ns": r.detect_p50_ns, "cpu_per_message_ns": r.cpu_per_message_ns,
            "compute_loss": r.compute_loss, "compute_lost_per_message_ns": r.lost_per_message_ns,
        }));
    }
    println!("\noverhead (one process, median round trip):");
    for n in [
        "direct_busy_poll",
        "pioman_poll_os",
        "pioman_block_os",
        "pioman_adaptive_os",
        "pioman_poll_marcel",
        "pioman_block_marcel",
        "pioman_adaptive_marcel",
    ] {
        let v = criterion_median_ns(None, "pioman_overhead", n);
        let base = criterion_median_ns(None, "pioman_overhead", "direct_busy_poll");
        println!(
            "{:<28} {:>12} {:>9}",
            n,
            v.map_or("-".into(), human_ns),
            match (v, base) {
                (Some(a), Some(b)) => format!("{:.2}x", a / b),
                _ => "-".into(),
            }
        );
        rows.push(serde_json::json!({"bench": "pioman_overhead", "config": n, "round_trip_median_ns": v, "baseline_ns": base}));
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join("bench-results");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join("pioman.json"), serde_json::to_vec_pretty(&rows).unwrap());
}

fn main() {
    pm2_log::init();
    if let Ok(cfg) = std::env::var(RECEIVER_ENV) {
        receiver_main(&cfg);
        return;
    }
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(20)
        .configure_from_args();
    let mut reports = Vec::new();
    overhead(&mut c);
    reactivity(&mut c, &mut reports);
    c.final_summary();
    summary(&reports);
}
