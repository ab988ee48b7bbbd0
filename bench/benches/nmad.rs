//! nmad benchmarks: ping-pong latency and streaming bandwidth between two processes, 0 B–16 MiB,
//! per driver (shm, tcp) and strategy (default, aggreg, split_balance), beside the physical
//! limits measured in the same run (a cache line bouncing between the same two cores, memcpy,
//! the kernel's cross-memory copy `process_vm_readv`, a raw TCP ping-pong and stream over
//! loopback, both ends polling).
//!
//! This binary is both the conductor and the ranks: the conductor measures the limits, then
//! starts a two-rank job of itself per configuration through madrun's launcher (in-process);
//! rank 0 drives criterion (`iter_custom`) while rank 1 echoes, pinned to the two cores the
//! limits used. Each job writes its medians to a file the conductor reads. A table is printed
//! and everything is written to `bench-results/nmad.json`. The ranks wait by polling
//! (`PIOMAN_POLICY=poll`, no progression thread), as MPI libraries do in such benchmarks.
//!
//! Filter with the first argument (`cargo bench --bench nmad -- shm`): only configurations whose
//! name contains it run.

use bench::limits::{CacheLinePingPong, RawTcp, cma_copy, memcpy};
use bench::{criterion_median_ns, human_ns, pin_to, pin_to_set, two_cpus};
use criterion::{BenchmarkId, Criterion, Throughput};
use nmad::{Data, Nmad, Request, SendMode, Source};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::{Duration, Instant};

const LAT_SIZES: [usize; 9] = [0, 8, 64, 512, 4 << 10, 32 << 10, 256 << 10, 2 << 20, 16 << 20];
const BW_SIZES: [usize; 5] = [4 << 10, 32 << 10, 256 << 10, 2 << 20, 16 << 20];
const DRIVERS: [&str; 2] = ["shm", "tcp"];
const STRATEGIES: [&str; 3] = ["default", "aggreg", "split_balance"];
const OUT_ENV: &str = "NMAD_BENCH_OUT";
/// The two CPUs of the limits, `A,B`: rank 0 pins itself to A, rank 1 to B.
const CPUS_ENV: &str = "NMAD_BENCH_CPUS";
/// Messages in flight while streaming.
const WINDOW: usize = 8;

fn criterion() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(900))
        .without_plots()
}

fn main() {
    pm2_log::init();
    if std::env::var_os(OUT_ENV).is_some() {
        return rank_main();
    }
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-')).unwrap_or_default();
    let (c0, c1) = two_cpus();
    let allowed = marcel::topology::allowed_cpus();
    pin_to(c0);
    let mut results: BTreeMap<String, f64> = BTreeMap::new();
    limits(c1, &mut results);
    // Ranks inherit the conductor's affinity: give them all the CPUs back (each pins itself to
    // its core of the pair given in CPUS_ENV).
    pin_to_set(allowed);
    for d in DRIVERS {
        for s in STRATEGIES {
            let name = format!("{d}_{s}");
            if !name.contains(&filter) {
                continue;
            }
            eprintln!("==> nmad {d} driver, {s} strategy");
            match run_job(d, s, (c0, c1)) {
                Ok(r) => results.extend(r.into_iter().map(|(k, v)| (format!("{name}/{k}"), v))),
                Err(e) => eprintln!("nmad bench {name}: {e}"),
            }
        }
    }
    report(&results);
}

// ------------------------------------------------------------------ limits

fn limits(cpu_b: usize, out: &mut BTreeMap<String, f64>) {
    let mut c = criterion();
    {
        let pp = CacheLinePingPong::start(cpu_b);
        let mut g = c.benchmark_group("limits");
        g.bench_function("cacheline_roundtrip", |b| b.iter_custom(|n| pp.run(n)));
        g.finish();
    }
    let mut g = c.benchmark_group("limits_memcpy");
    for &size in &BW_SIZES {
        let src = vec![1u8; size];
        let mut dst = vec![0u8; size];
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, _| {
            b.iter_custom(|n| memcpy(&src, &mut dst, n))
        });
    }
    g.finish();
    let mut g = c.benchmark_group("limits_cma");
    for &size in &BW_SIZES {
        let src = vec![1u8; size];
        let mut dst = vec![0u8; size];
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, _| {
            b.iter_custom(|n| cma_copy(&src, &mut dst, n))
        });
    }
    g.finish();
    match RawTcp::start(cpu_b) {
        Ok(mut t) => {
            let mut g = c.benchmark_group("limits");
            g.bench_function("tcp_roundtrip_8B", |b| b.iter_custom(|n| t.pingpong(8, n)));
            g.finish();
            let mut g = c.benchmark_group("limits_tcp_stream");
            for &size in &BW_SIZES {
                let data = vec![1u8; size];
                g.throughput(Throughput::Bytes(size as u64));
                g.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, _| {
                    b.iter_custom(|n| t.stream(&data, n))
                });
            }
            g.finish();
        }
        Err(e) => eprintln!("raw tcp baseline unavailable: {e}"),
    }
    let dir = criterion_dir();
    let m = |g: &str, b: &str| criterion_median_ns(Some(&dir), g, b);
    if let Some(v) = m("limits", "cacheline_roundtrip") {
        out.insert("limit/cacheline_oneway_ns".into(), v / 2.0);
    }
    if let Some(v) = m("limits", "tcp_roundtrip_8B") {
        out.insert("limit/tcp_oneway_ns".into(), v / 2.0);
    }
    for &size in &BW_SIZES {
        if let Some(v) = m("limits_memcpy", &size.to_string()) {
            out.insert(format!("limit/memcpy_MBps/{size}"), size as f64 * 1e3 / v);
        }
        if let Some(v) = m("limits_cma", &size.to_string()) {
            out.insert(format!("limit/cma_MBps/{size}"), size as f64 * 1e3 / v);
        }
        if let Some(v) = m("limits_tcp_stream", &size.to_string()) {
            out.insert(format!("limit/tcp_stream_MBps/{size}"), size as f64 * 1e3 / v);
        }
    }
}

fn criterion_dir() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join("target").join("criterion")
}

// ------------------------------------------------------------------ conductor

fn run_job(driver: &str, strategy: &str, cpus: (usize, usize)) -> Result<BTreeMap<String, f64>, String> {
    let out =
        std::env::temp_dir().join(format!("nmad-bench-{}-{driver}-{strategy}.json", std::process::id()));
    let _ = std::fs::remove_file(&out);
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let spec = tools::launcher::JobSpec {
        nprocs: 2,
        env: vec![
            ("NMAD_DRIVERS".into(), driver.into()),
            ("NMAD_STRATEGY".into(), strategy.into()),
            // The waiting thread polls, as MPI libraries do; no progression thread competes for
            // the two cores (pioman's policies are measured by its own benchmarks).
            ("PIOMAN_POLICY".into(), "poll".into()),
            ("PIOMAN_THREADS".into(), "0".into()),
            (OUT_ENV.into(), out.display().to_string()),
            (CPUS_ENV.into(), format!("{},{}", cpus.0, cpus.1)),
            ("CRITERION_HOME".into(), criterion_dir().display().to_string()),
        ],
        timeout: Some(Duration::from_secs(600)),
        program: vec![exe.display().to_string(), "--bench".into()],
        ..Default::default()
    };
    let code = tools::launcher::run(&spec);
    if code != 0 {
        return Err(format!("the job failed (exit {code})"));
    }
    let text = std::fs::read_to_string(&out).map_err(|e| format!("no results: {e}"))?;
    let _ = std::fs::remove_file(&out);
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

// ------------------------------------------------------------------ ranks

const CMD: u64 = 1 << 40;
const DATA: u64 = 1;
const ACK: u64 = 2;
const PING: u64 = 1;
const STREAM: u64 = 2;
const STOP: u64 = 3;

fn command(s: &nmad::Session, kind: u64, size: usize, count: u64) {
    let mut c = [0u8; 24];
    c[..8].copy_from_slice(&kind.to_le_bytes());
    c[8..16].copy_from_slice(&(size as u64).to_le_bytes());
    c[16..].copy_from_slice(&count.to_le_bytes());
    s.send(1, CMD, &c).expect("command");
}

fn rank_main() {
    let nm = Nmad::init().expect("nmad init");
    let cpus: Vec<usize> = std::env::var(CPUS_ENV)
        .expect(CPUS_ENV)
        .split(',')
        .map(|c| c.parse().expect("a CPU number"))
        .collect();
    pin_to(cpus[(nm.rank() as usize).min(cpus.len() - 1)]);
    let s = nm.session(0);
    let mut buf = vec![0u8; 16 << 20];
    if nm.rank() == 1 {
        echo(&s, &mut buf);
        nm.finalize().expect("finalize");
        return;
    }
    let group = format!("nmad_{}_{}", std::env::var("NMAD_DRIVERS").unwrap(), nm.strategy());
    let mut c = criterion();
    let mut g = c.benchmark_group(format!("{group}_latency"));
    for &size in &LAT_SIZES {
        g.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, &size| {
            b.iter_custom(|n| {
                command(&s, PING, size, n);
                let t = Instant::now();
                for _ in 0..n {
                    s.send(1, DATA, &buf[..size]).unwrap();
                    s.recv(Source::Rank(1), DATA, &mut buf[..size]).unwrap();
                }
                t.elapsed()
            })
        });
    }
    g.finish();
    let mut g = c.benchmark_group(format!("{group}_bandwidth"));
    for &size in &BW_SIZES {
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, &size| {
            b.iter_custom(|n| {
                command(&s, STREAM, size, n);
                let t = Instant::now();
                stream_out(&s, &buf[..size], n);
                t.elapsed()
            })
        });
    }
    g.finish();
    command(&s, STOP, 0, 0);
    let dir = PathBuf::from(std::env::var("CRITERION_HOME").unwrap());
    let mut out: BTreeMap<String, f64> = BTreeMap::new();
    for &size in &LAT_SIZES {
        if let Some(v) = criterion_median_ns(Some(&dir), &format!("{group}_latency"), &size.to_string()) {
            out.insert(format!("oneway_ns/{size}"), v / 2.0);
        }
    }
    for &size in &BW_SIZES {
        if let Some(v) = criterion_median_ns(Some(&dir), &format!("{group}_bandwidth"), &size.to_string()) {
            out.insert(format!("MBps/{size}"), size as f64 * 1e3 / v);
        }
    }
    let st = nm.stats();
    out.insert("chunks_per_packet".into(), st.chunks as f64 / st.packets.max(1) as f64);
    std::fs::write(std::env::var(OUT_ENV).unwrap(), serde_json::to_string(&out).unwrap())
        .expect("write results");
    nm.finalize().expect("finalize");
}

/// Rank 0 streams `n` messages with `WINDOW` in flight, then waits for rank 1's acknowledgement.
fn stream_out(s: &nmad::Session, data: &[u8], n: u64) {
    let reqs: Vec<Pin<Box<Request>>> = (0..WINDOW).map(|_| Box::pin(Request::new())).collect();
    for i in 0..n {
        let r = reqs[i as usize % WINDOW].as_ref();
        r.wait();
        // SAFETY: `data` outlives every request (all are waited for below).
        unsafe {
            s.isend(1, DATA, Data::from_raw(data.as_ptr().cast_mut(), data.len()), SendMode::default(), r)
        }
        .unwrap();
    }
    for r in &reqs {
        r.wait();
    }
    let mut a = [0u8; 1];
    s.recv(Source::Rank(1), ACK, &mut a).unwrap();
}

/// Rank 1 serves commands until STOP.
fn echo(s: &nmad::Session, buf: &mut [u8]) {
    let reqs: Vec<Pin<Box<Request>>> = (0..WINDOW).map(|_| Box::pin(Request::new())).collect();
    loop {
        let mut c = [0u8; 24];
        s.recv(Source::Rank(0), CMD, &mut c).unwrap();
        let kind = u64::from_le_bytes(c[..8].try_into().unwrap());
        let size = u64::from_le_bytes(c[8..16].try_into().unwrap()) as usize;
        let count = u64::from_le_bytes(c[16..].try_into().unwrap());
        match kind {
            PING => {
                for _ in 0..count {
                    s.recv(Source::Rank(0), DATA, &mut buf[..size]).unwrap();
                    s.send(0, DATA, &buf[..size]).unwrap();
                }
            }
            STREAM => {
                // Every message lands in the same buffer: only the transfer is measured.
                let p = buf.as_mut_ptr();
                for i in 0..count {
                    let r = reqs[i as usize % WINDOW].as_ref();
                    r.wait();
                    // SAFETY: `buf` outlives the requests, all waited for below.
                    unsafe { s.irecv(Source::Rank(0), DATA, Data::from_raw(p, size), r) }.unwrap();
                }
                for r in &reqs {
                    r.wait();
                }
                s.send(0, ACK, b"k").unwrap();
            }
            _ => return,
        }
    }
}

// ------------------------------------------------------------------ report

fn report(r: &BTreeMap<String, f64>) {
    let get = |k: &str| r.get(k).copied();
    let line = r.get("limit/cacheline_oneway_ns").copied();
    println!("\nnmad one-way latency (median of ping-pong round trips / 2), two processes on two cores");
    print!("{:>9}", "size");
    let configs: Vec<String> =
        DRIVERS.iter().flat_map(|d| STRATEGIES.iter().map(move |s| format!("{d}_{s}"))).collect();
    for c in &configs {
        print!(" {:>18}", c);
    }
    println!();
    for &size in &LAT_SIZES {
        print!("{:>9}", size);
        for c in &configs {
            match get(&format!("{c}/oneway_ns/{size}")) {
                Some(v) => print!(" {:>18}", human_ns(v)),
                None => print!(" {:>18}", "-"),
            }
        }
        println!();
    }
    if let Some(l) = line {
        println!("limit: cache line one-way {}", human_ns(l));
        for s in STRATEGIES {
            if let Some(v) = get(&format!("shm_{s}/oneway_ns/8")) {
                println!("  shm {s}: 8 B one-way = {:.2}× the cache line", v / l);
            }
        }
    }
    if let Some(t) = get("limit/tcp_oneway_ns") {
        println!("limit: raw TCP loopback 8 B one-way {}", human_ns(t));
        for s in STRATEGIES {
            if let Some(v) = get(&format!("tcp_{s}/oneway_ns/8")) {
                println!("  tcp {s}: 8 B one-way = {:.2}× raw TCP", v / t);
            }
        }
    }
    println!("\nnmad streaming bandwidth (MB/s, {WINDOW} messages in flight)");
    print!("{:>9}", "size");
    for c in &configs {
        print!(" {:>18}", c);
    }
    println!(" {:>10} {:>10} {:>10}", "memcpy", "cma copy", "raw tcp");
    for &size in &BW_SIZES {
        print!("{:>9}", size);
        for c in &configs {
            match get(&format!("{c}/MBps/{size}")) {
                Some(v) => print!(" {:>18.0}", v),
                None => print!(" {:>18}", "-"),
            }
        }
        let f = |k: String| get(&k).map_or("-".to_string(), |v| format!("{v:.0}"));
        println!(
            " {:>10} {:>10} {:>10}",
            f(format!("limit/memcpy_MBps/{size}")),
            f(format!("limit/cma_MBps/{size}")),
            f(format!("limit/tcp_stream_MBps/{size}"))
        );
    }
    for s in STRATEGIES {
        if let (Some(v), Some(m)) =
            (get(&format!("shm_{s}/MBps/{}", 16 << 20)), get(&format!("limit/memcpy_MBps/{}", 16 << 20)))
        {
            let cma = get(&format!("limit/cma_MBps/{}", 16 << 20))
                .map_or(String::new(), |c| format!(", {:.2}× a bare process_vm_readv", v / c));
            println!("  shm {s}: 16 MiB = {:.2}× memcpy{cma}", v / m);
        }
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join("bench-results");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join("nmad.json"), serde_json::to_string_pretty(r).unwrap());
    println!("\nwritten to bench-results/nmad.json");
}
