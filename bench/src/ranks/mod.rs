//! madbench's two-process benchmarks on our runtime's Rust API: their conductors and their ranks.
//!
//! Some benchmarks need our runtime inside two processes (madmpi with marcel user threads, nmad
//! waited for in different ways), which no C program gives. madbench is then its own rank
//! program, as `benches/nmad.rs` is: the conductor (a function of this module, running in the
//! madbench process) starts a two-rank job of the madbench executable through madrun's launcher
//! in-process ([`tools::launcher::run`]), with the environment variable [`RANK_ENV`] naming the
//! benchmark. madbench's `main` must check that variable **first** (before starting any thread
//! or asking for the allowed CPUs) and then return [`rank_main`]'s exit code instead of running
//! its command line. The conductors take the rank executable as a parameter (`exe`: madbench
//! itself; inside `cargo test` `current_exe` is the test binary, which has no rank side).
//!
//! Rank 0 measures and writes its samples to the file named by [`OUT_ENV`] (JSON, see [`Row`]);
//! the conductor reads it back and makes the [`Measurement`]s. A failed job (a rank exits with
//! an error, the job times out after [`JOB_TIMEOUT`]) comes back as `Err` naming the
//! configuration; the conductor never panics on what a job did.
//!
//! Shared by the benchmarks and owned here: the conductor/rank protocol (variables, results
//! file), the rank entry point, pinning (rank 0 on `cpus.0`, rank 1 on `cpus.1`, done before
//! anything else starts threads, so every thread the runtime creates later stays on the rank's
//! core) and the bounded repetitions: each repetition runs round trips for at most
//! [`Bound::time`] (100 ms, 30 ms when quick) or [`MAX_ROUND_TRIPS`], whichever comes first
//! (with compute threads and the `poll` policy a round trip may take milliseconds), after one
//! warm-up repetition of the whole time bound; a sample is the repetition's mean one-way latency
//! (round trip / 2). ([`reactivity`] runs its own repetitions instead, as its C counterpart
//! does: spaced pings for the whole [`Bound::time`], no round-trip cap.) Each benchmark owns its
//! file:
//! - [`reactivity`]: `reactivity_marcel`, madmpi ping-pong with marcel compute threads beside
//!   the receiver, per pioman policy;
//! - [`mod@overhead`]: `overhead`, the cost of waiting through pioman against nmad polled directly.

pub mod overhead;
pub mod reactivity;

pub use overhead::overhead;
pub use reactivity::reactivity_marcel;

use crate::record::{Measurement, Stat};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Names the benchmark a rank process runs (`reactivity-marcel`, `overhead`); set only for ranks.
pub const RANK_ENV: &str = "MADBENCH_RANK";
/// The two CPUs, `A,B`: rank 0 pins itself to A, rank 1 to B.
pub const CPUS_ENV: &str = "MADBENCH_CPUS";
/// Where rank 0 writes its samples.
pub const OUT_ENV: &str = "MADBENCH_OUT";
/// Measured repetitions per configuration (after one warm-up repetition).
pub const REPS_ENV: &str = "MADBENCH_REPS";
/// Time bound of one repetition, in milliseconds.
pub const REP_MS_ENV: &str = "MADBENCH_REP_MS";
/// Reactivity: compute threads per core, comma-separated (`0,1,2,4`).
pub const THREADS_ENV: &str = "MADBENCH_THREADS";
/// Overhead: how the ranks wait (`nmad-direct`, `pioman-poll`, `pioman-block`).
pub const CASE_ENV: &str = "MADBENCH_CASE";

/// A job still running after this is stuck: the launcher ends it and the conductor reports it.
pub const JOB_TIMEOUT: Duration = Duration::from_secs(120);
/// Round trips of one repetition at most.
pub const MAX_ROUND_TRIPS: u64 = 2000;

/// The benchmarks a rank process can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bench {
    ReactivityMarcel,
    Overhead,
}

impl Bench {
    /// The value of [`RANK_ENV`].
    pub fn key(self) -> &'static str {
        match self {
            Bench::ReactivityMarcel => "reactivity-marcel",
            Bench::Overhead => "overhead",
        }
    }

    pub fn from_key(s: &str) -> Option<Bench> {
        [Bench::ReactivityMarcel, Bench::Overhead].into_iter().find(|b| b.key() == s)
    }
}

/// How long a repetition may run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bound {
    pub time: Duration,
    pub max_round_trips: u64,
}

impl Bound {
    /// 100 ms per repetition, 30 ms when quick; at most [`MAX_ROUND_TRIPS`] either way.
    pub fn new(quick: bool) -> Bound {
        Bound { time: Duration::from_millis(if quick { 30 } else { 100 }), max_round_trips: MAX_ROUND_TRIPS }
    }
}

/// What a rank process was asked to do (from the environment the conductor set).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankArgs {
    pub bench: Bench,
    /// This process's rank, from the launcher (`PMI_RANK`): rank 1 of the reactivity benchmark
    /// starts marcel before MPI, so it needs its rank before MPI can tell it.
    pub rank: u32,
    pub cpus: (usize, usize),
    pub out: PathBuf,
    pub reps: u32,
    pub bound: Bound,
    /// Reactivity: compute threads per core, one configuration each.
    pub threads: Vec<u32>,
    /// Overhead: the way of waiting.
    pub case: Option<overhead::Case>,
}

impl RankArgs {
    /// From the process environment.
    pub fn from_env() -> Result<RankArgs, String> {
        RankArgs::parse(&|k| std::env::var(k).ok())
    }

    /// From `get` (a variable's value, if set).
    pub fn parse(get: &dyn Fn(&str) -> Option<String>) -> Result<RankArgs, String> {
        let need = |k: &str| get(k).ok_or_else(|| format!("{k} is not set"));
        let bench = need(RANK_ENV)?;
        let bench = Bench::from_key(bench.trim()).ok_or_else(|| {
            format!("{RANK_ENV}={bench:?}: unknown benchmark (reactivity-marcel, overhead)")
        })?;
        let rank = need("PMI_RANK")?;
        let rank: u32 = rank.trim().parse().map_err(|_| format!("PMI_RANK={rank:?}: not a rank"))?;
        let cpus = parse_cpus(&need(CPUS_ENV)?)?;
        let reps = need(REPS_ENV)?;
        let reps: u32 = match reps.trim().parse() {
            Ok(n) if n > 0 => n,
            _ => return Err(format!("{REPS_ENV}={reps:?}: expected a positive count")),
        };
        let ms = need(REP_MS_ENV)?;
        let ms: u64 = match ms.trim().parse() {
            Ok(n) if n > 0 => n,
            _ => return Err(format!("{REP_MS_ENV}={ms:?}: expected positive milliseconds")),
        };
        let bound = Bound { time: Duration::from_millis(ms), max_round_trips: MAX_ROUND_TRIPS };
        let (threads, case) = match bench {
            Bench::ReactivityMarcel => (parse_threads(&need(THREADS_ENV)?)?, None),
            Bench::Overhead => {
                let c = need(CASE_ENV)?;
                let case = overhead::Case::from_key(c.trim())
                    .ok_or_else(|| format!("{CASE_ENV}={c:?}: unknown case"))?;
                (Vec::new(), Some(case))
            }
        };
        Ok(RankArgs { bench, rank, cpus, out: PathBuf::from(need(OUT_ENV)?), reps, bound, threads, case })
    }

    /// The CPU of this rank.
    pub fn cpu(&self) -> usize {
        if self.rank == 0 { self.cpus.0 } else { self.cpus.1 }
    }
}

/// `A,B` into two CPU numbers.
pub fn parse_cpus(s: &str) -> Result<(usize, usize), String> {
    let bad = || format!("{CPUS_ENV}={s:?}: expected two CPU numbers, `A,B`");
    let (a, b) = s.split_once(',').ok_or_else(bad)?;
    Ok((a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?))
}

/// `0,1,2,4` into thread counts (at least one, each at most 64).
pub fn parse_threads(s: &str) -> Result<Vec<u32>, String> {
    let v: Vec<u32> = s
        .split(',')
        .map(|t| t.trim().parse::<u32>().ok().filter(|&k| k <= 64))
        .collect::<Option<_>>()
        .ok_or_else(|| format!("{THREADS_ENV}={s:?}: expected thread counts (0 to 64), comma-separated"))?;
    Ok(v)
}

/// Entry point of a rank process ([`RANK_ENV`] names the benchmark). Returns the exit code:
/// 0 done, 1 the benchmark failed, 2 bad environment (the message is on stderr).
pub fn rank_main() -> i32 {
    let args = match RankArgs::from_env() {
        Ok(a) => a,
        Err(e) => {
            log::error!("{e}");
            return 2;
        }
    };
    // Before anything starts a thread or asks for the allowed CPUs: whatever the runtime starts
    // later inherits this affinity (marcel's topology and pioman's threads stay on this core).
    crate::pin_to(args.cpu());
    let r = match args.bench {
        Bench::ReactivityMarcel => reactivity::rank(&args),
        Bench::Overhead => overhead::rank(&args),
    };
    match r {
        Ok(()) => 0,
        Err(e) => {
            log::error!("rank {} ({}): {e}", args.rank, args.bench.key());
            1
        }
    }
}

// ------------------------------------------------------------------ repetitions (rank 0)

/// Runs round trips until the bound; returns the mean one-way latency in ns. The clock is read
/// every `stride` round trips only (a clock read costs as much as a few percent of a fast round
/// trip); the round-trip bound is checked every time.
pub fn timed_rep(
    bound: &Bound,
    stride: u64,
    round_trip: &mut dyn FnMut() -> Result<(), String>,
) -> Result<f64, String> {
    let stride = stride.max(1);
    let t0 = Instant::now();
    let mut n = 0u64;
    loop {
        round_trip()?;
        n += 1;
        if n >= bound.max_round_trips || (n.is_multiple_of(stride) && t0.elapsed() >= bound.time) {
            break;
        }
    }
    Ok(t0.elapsed().as_nanos() as f64 / (2 * n) as f64)
}

/// How many round trips between clock reads, for round trips of about `2 × one_way_ns`: enough
/// to overshoot the time bound by 1 % at most, at most 64 (1 for an unusable estimate).
pub fn stride_for(bound: &Bound, one_way_ns: f64) -> u64 {
    if !one_way_ns.is_finite() {
        return 1;
    }
    let rt = (2.0 * one_way_ns).max(1.0);
    ((bound.time.as_nanos() as f64 / 100.0 / rt) as u64).clamp(1, 64)
}

/// One warm-up repetition, then `reps` measured ones: their one-way latencies (ns). The warm-up
/// lasts the whole time bound, however fast the round trips (it also lets the receiver's
/// compute threads reach their steady state: marcel hands a hog's core over after one or two
/// 10 ms quanta).
pub fn measure(
    bound: &Bound,
    reps: u32,
    round_trip: &mut dyn FnMut() -> Result<(), String>,
) -> Result<Vec<f64>, String> {
    let warm = timed_rep(&Bound { max_round_trips: u64::MAX, ..*bound }, 1, round_trip)?;
    let stride = stride_for(bound, warm);
    (0..reps).map(|_| timed_rep(bound, stride, round_trip)).collect()
}

// ------------------------------------------------------------------ results file

/// One configuration's samples, as rank 0 writes them.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Compute threads per core (reactivity; 1 otherwise).
    pub threads: u32,
    pub size: u64,
    /// One-way latencies (ns), one per repetition.
    pub samples: Vec<f64>,
}

pub fn rows_to_json(rows: &[Row]) -> String {
    let v: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| serde_json::json!({"threads": r.threads, "size": r.size, "samples": r.samples}))
        .collect();
    serde_json::Value::Array(v).to_string()
}

pub fn rows_from_json(text: &str) -> Result<Vec<Row>, String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("results: {e}"))?;
    let arr = v.as_array().ok_or("results: not a JSON array")?;
    arr.iter()
        .map(|o| {
            let bad = || format!("results: malformed row {o}");
            let threads = o["threads"].as_u64().and_then(|t| u32::try_from(t).ok()).ok_or_else(bad)?;
            let size = o["size"].as_u64().ok_or_else(bad)?;
            let samples = o["samples"]
                .as_array()
                .ok_or_else(bad)?
                .iter()
                .map(|s| s.as_f64())
                .collect::<Option<Vec<f64>>>()
                .ok_or_else(bad)?;
            Ok(Row { threads, size, samples })
        })
        .collect()
}

/// Rank 0's last step: the samples to the conductor's file.
pub fn write_rows(path: &Path, rows: &[Row]) -> Result<(), String> {
    std::fs::write(path, rows_to_json(rows)).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// The statistics of the row for (`threads`, `size`), or why there are none.
pub fn stat_of(rows: &[Row], threads: u32, size: u64) -> Result<Stat, String> {
    let row = rows
        .iter()
        .find(|r| r.threads == threads && r.size == size)
        .ok_or_else(|| format!("no samples for {threads} thread(s), {size} B"))?;
    let mut s = row.samples.clone();
    Stat::of(&mut s).ok_or_else(|| format!("no valid sample for {threads} thread(s), {size} B"))
}

// ------------------------------------------------------------------ conductor

/// The environment every job of these benchmarks gets. `PIOMAN_THREADS=0`: see each benchmark's
/// docs for why no progression thread runs in either rank.
fn base_env(bench: Bench, cpus: (usize, usize), reps: u32, quick: bool) -> Vec<(String, String)> {
    vec![
        (RANK_ENV.into(), bench.key().into()),
        (CPUS_ENV.into(), format!("{},{}", cpus.0, cpus.1)),
        (REPS_ENV.into(), reps.to_string()),
        (REP_MS_ENV.into(), Bound::new(quick).time.as_millis().to_string()),
        ("PIOMAN_THREADS".into(), "0".into()),
    ]
}

/// The job: two ranks of `exe` with `env` (plus the results file).
fn job_spec(exe: &Path, env: Vec<(String, String)>, out: &Path) -> tools::launcher::JobSpec {
    let mut env = env;
    env.push((OUT_ENV.into(), out.display().to_string()));
    tools::launcher::JobSpec {
        nprocs: 2,
        env,
        timeout: Some(JOB_TIMEOUT),
        program: vec![exe.display().to_string()],
        ..Default::default()
    }
}

/// Runs one job and returns rank 0's rows; `what` names the configuration in errors.
fn run_job(exe: &Path, what: &str, env: Vec<(String, String)>) -> Result<Vec<Row>, String> {
    static JOBS: AtomicU64 = AtomicU64::new(0);
    if !exe.is_file() {
        return Err(format!("{what}: no rank executable at {}", exe.display()));
    }
    let out = std::env::temp_dir().join(format!(
        "madbench-ranks-{}-{}.json",
        std::process::id(),
        JOBS.fetch_add(1, Relaxed)
    ));
    let _ = std::fs::remove_file(&out);
    let code = tools::launcher::run(&job_spec(exe, env, &out));
    let text = std::fs::read_to_string(&out);
    let _ = std::fs::remove_file(&out);
    if code != 0 {
        return Err(format!("{what}: the job failed (madrun exit {code}; the ranks' messages are above)"));
    }
    let text = text.map_err(|e| format!("{what}: rank 0 wrote no results ({e})"))?;
    rows_from_json(&text).map_err(|e| format!("{what}: {e}"))
}

/// Checks the arguments every conductor takes.
fn check_common(exe: &Path, reps: u32, cpus: (usize, usize)) -> Result<(), String> {
    if reps == 0 {
        return Err("reps must be at least 1".into());
    }
    if !exe.is_file() {
        return Err(format!("no rank executable at {}", exe.display()));
    }
    let allowed = marcel::topology::allowed_cpus();
    for c in [cpus.0, cpus.1] {
        if !allowed.contains(&c) {
            return Err(format!("CPU {c} is not one this process may use ({allowed:?})"));
        }
    }
    Ok(())
}

/// A latency of our runtime, in ns.
fn latency(bench: &str, case: &str, transport: &str, size: u64, stat: Stat) -> Measurement {
    Measurement::new(bench, case, crate::record::Impl::Madmpi, transport, size, stat, "ns")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| m.get(k).cloned()
    }

    const REACT: &[(&str, &str)] = &[
        (RANK_ENV, "reactivity-marcel"),
        ("PMI_RANK", "1"),
        (CPUS_ENV, "0,1"),
        (OUT_ENV, "/tmp/x.json"),
        (REPS_ENV, "5"),
        (REP_MS_ENV, "100"),
        (THREADS_ENV, "0, 1,2,4"),
    ];

    #[test]
    fn parses_rank_arguments() {
        let a = RankArgs::parse(&env(REACT)).unwrap();
        assert_eq!(a.bench, Bench::ReactivityMarcel);
        assert_eq!((a.rank, a.cpus, a.reps), (1, (0, 1), 5));
        assert_eq!(a.cpu(), 1);
        assert_eq!(a.threads, vec![0, 1, 2, 4]);
        assert_eq!(a.bound, Bound::new(false));
        assert_eq!(a.case, None);
        let mut o: Vec<(&str, &str)> =
            REACT.iter().copied().filter(|(k, _)| *k != THREADS_ENV && *k != RANK_ENV).collect();
        o.push((RANK_ENV, "overhead"));
        o.push((CASE_ENV, "pioman-block"));
        o.push((REP_MS_ENV, "30"));
        let a = RankArgs::parse(&env(&o)).unwrap();
        assert_eq!(a.bench, Bench::Overhead);
        assert_eq!(a.case, Some(overhead::Case::PiomanBlock));
        assert_eq!(a.bound.time, Bound::new(true).time);
    }

    #[test]
    fn rejects_bad_rank_arguments() {
        for (k, v) in [
            (RANK_ENV, "nope"),
            ("PMI_RANK", "x"),
            (CPUS_ENV, "0"),
            (CPUS_ENV, "0,a"),
            (REPS_ENV, "0"),
            (REP_MS_ENV, "-3"),
            (THREADS_ENV, "1,,2"),
            (THREADS_ENV, "65"),
        ] {
            let mut e: Vec<(&str, &str)> = REACT.iter().copied().filter(|(kk, _)| *kk != k).collect();
            e.push((k, v));
            let err = RankArgs::parse(&env(&e)).unwrap_err();
            assert!(err.contains(k), "{k}={v}: {err}");
        }
        for missing in [RANK_ENV, "PMI_RANK", CPUS_ENV, OUT_ENV, REPS_ENV, REP_MS_ENV, THREADS_ENV] {
            let e: Vec<(&str, &str)> = REACT.iter().copied().filter(|(k, _)| *k != missing).collect();
            assert!(RankArgs::parse(&env(&e)).unwrap_err().contains(missing), "{missing}");
        }
        let mut o: Vec<(&str, &str)> = REACT.iter().copied().filter(|(k, _)| *k != RANK_ENV).collect();
        o.push((RANK_ENV, "overhead"));
        assert!(RankArgs::parse(&env(&o)).unwrap_err().contains(CASE_ENV));
        o.push((CASE_ENV, "spin"));
        assert!(RankArgs::parse(&env(&o)).unwrap_err().contains(CASE_ENV));
    }

    #[test]
    fn results_round_trip_through_json() {
        let rows = vec![
            Row { threads: 2, size: 4, samples: vec![1.5, 3.0, 2.0] },
            Row { threads: 1, size: 0, samples: vec![] },
        ];
        let back = rows_from_json(&rows_to_json(&rows)).unwrap();
        assert_eq!(back, rows);
        assert_eq!(stat_of(&back, 2, 4).unwrap(), Stat { median: 2.0, min: 1.5, max: 3.0 });
        assert!(stat_of(&back, 1, 0).unwrap_err().contains("no valid sample"));
        assert!(stat_of(&back, 4, 4).unwrap_err().contains("no samples"));
        for bad in ["{}", "[{\"threads\":1}]", "[{\"threads\":1,\"size\":0,\"samples\":[\"x\"]}]", "nope"] {
            assert!(rows_from_json(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn repetitions_are_bounded() {
        // By the round-trip count.
        let b = Bound { time: Duration::from_secs(60), max_round_trips: 10 };
        let mut n = 0;
        let one_way = timed_rep(&b, 1, &mut || {
            n += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 10);
        assert!(one_way >= 0.0);
        // By the time: round trips of 2 ms in a 10 ms repetition, clock read every time.
        let b = Bound { time: Duration::from_millis(10), max_round_trips: 1000 };
        let mut n = 0;
        let t = Instant::now();
        let one_way = timed_rep(&b, 1, &mut || {
            n += 1;
            std::thread::sleep(Duration::from_millis(2));
            Ok(())
        })
        .unwrap();
        // Each takes at least 2 ms: the 5th reaches the bound (fewer on a loaded machine).
        assert!((1..=5).contains(&n), "{n} round trips");
        assert!(t.elapsed() < Duration::from_secs(2));
        assert!(one_way >= 1e6, "{one_way}");
        // An error ends the repetition.
        assert_eq!(timed_rep(&b, 1, &mut || Err("gone".into())), Err("gone".into()));
        // Warm-up (the whole time bound) + reps samples.
        let b = Bound { time: Duration::from_millis(20), max_round_trips: 3 };
        let mut n = 0;
        let t = Instant::now();
        let s = measure(&b, 4, &mut || {
            n += 1;
            std::thread::sleep(Duration::from_millis(1));
            Ok(())
        })
        .unwrap();
        assert!(t.elapsed() >= Duration::from_millis(20 + 4 * 3));
        assert_eq!(s.len(), 4);
        assert!((4 * 3 + 1..=4 * 3 + 20).contains(&n), "{n}");
    }

    #[test]
    fn clock_stride_follows_the_round_trip() {
        let b = Bound::new(false); // 100 ms: 1 ms of round trips between clock reads
        assert_eq!(stride_for(&b, 500.0), 64);
        assert_eq!(stride_for(&b, 50_000.0), 10);
        assert_eq!(stride_for(&b, 5e6), 1);
        assert_eq!(stride_for(&b, f64::NAN), 1);
        assert_eq!(stride_for(&b, 0.0), 64);
    }

    #[test]
    fn jobs_get_the_shared_environment() {
        let env = base_env(Bench::Overhead, (2, 3), 7, true);
        let spec = job_spec(Path::new("/bin/madbench"), env, Path::new("/tmp/o.json"));
        assert_eq!(spec.nprocs, 2);
        assert_eq!(spec.timeout, Some(JOB_TIMEOUT));
        assert_eq!(spec.program, vec!["/bin/madbench".to_string()]);
        let get = |k: &str| spec.env.iter().find(|(kk, _)| kk == k).map(|(_, v)| v.as_str());
        assert_eq!(get(RANK_ENV), Some("overhead"));
        assert_eq!(get(CPUS_ENV), Some("2,3"));
        assert_eq!(get(REPS_ENV), Some("7"));
        assert_eq!(get(REP_MS_ENV), Some("30"));
        assert_eq!(get("PIOMAN_THREADS"), Some("0"));
        assert_eq!(get(OUT_ENV), Some("/tmp/o.json"));
    }

    #[test]
    fn conductors_refuse_bad_arguments() {
        let exe = std::env::current_exe().unwrap();
        let c = crate::two_cpus();
        assert!(check_common(&exe, 0, c).unwrap_err().contains("reps"));
        assert!(check_common(Path::new("/nonexistent/madbench"), 1, c).unwrap_err().contains("no rank"));
        assert!(check_common(&exe, 1, (usize::MAX, c.1)).unwrap_err().contains("CPU"));
        assert!(check_common(&exe, 1, c).is_ok());
        let mut seen = Vec::new();
        let r =
            reactivity_marcel(&exe, &["poll", "nope"], &[0], 1, true, c, &mut |m| seen.push(m.to_string()));
        assert!(r.unwrap_err().contains("nope"));
        assert!(reactivity_marcel(&exe, &[], &[0], 1, true, c, &mut |_| {}).is_err());
        assert!(reactivity_marcel(&exe, &["poll"], &[], 1, true, c, &mut |_| {}).is_err());
        assert!(reactivity_marcel(&exe, &["poll"], &[65], 1, true, c, &mut |_| {}).is_err());
        assert!(seen.is_empty(), "nothing ran: {seen:?}");
        assert!(overhead(&exe, 0, true, c, &mut |_| {}).is_err());
    }

    /// Jobs whose ranks fail or write nothing are errors naming the configuration.
    #[test]
    fn failed_jobs_come_back_as_errors() {
        for (exe, why) in [("/bin/false", "the job failed"), ("/bin/true", "wrote no results")] {
            if !Path::new(exe).is_file() {
                continue;
            }
            let env = base_env(Bench::Overhead, crate::two_cpus(), 1, true);
            let e = run_job(Path::new(exe), "overhead, shm, nmad-direct", env).unwrap_err();
            assert!(e.starts_with("overhead, shm, nmad-direct: ") && e.contains(why), "{exe}: {e}");
        }
    }
}
