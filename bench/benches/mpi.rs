//! MPI benchmarks beside MPICH and Open MPI: ping-pong latency (0 B–4 MiB) and streaming
//! bandwidth (4 KiB–4 MiB, 8 messages in flight) over shared memory and over TCP, with the
//! same C program (`bench/mpi/pingpong.c`) built three times: against madmpi's `libmpi.so`
//! (`cc -I madmpi/include -lmpi`), with `mpicc.mpich` and with `mpicc.openmpi`.
//!
//! Not criterion: the program times itself (the same clock and loop for every library), so
//! this conductor only builds, launches and reads. It runs every configuration `ROUNDS` times,
//! the six interleaved (a noisy minute then hits every library, not one), each run measuring
//! every size `REPS` times; a cell is the median of the rounds' medians. Every rank is pinned by
//! `bench/mpi/pin.sh` (rank i on the i-th of the two CPUs the conductor may use), and each
//! library's own binding is turned off; every library polls while it waits (madmpi with
//! `PIOMAN_POLICY=poll PIOMAN_THREADS=0`). See `bench::mpi::launch` for the exact commands,
//! which are also written, with the figures, to `bench-results/mpi.json`.
//!
//! `cargo bench -p bench --bench mpi -- [filter]`: only configurations whose name contains the
//! filter (`shm`, `MPICH`, `madmpi-tcp`…). `MPI_BENCH_ROUNDS` and `MPI_BENCH_REPS` override
//! the counts.

use bench::mpi::{
    CONFIGS, Lib, Output, Paths, Transport, cell_mbps, cell_ns, combine, config_name, describe, launch,
    parse, scrubbed,
};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ROUNDS: u32 = 3;
const REPS: u32 = 9;
/// One run takes a few seconds; past this it hangs.
const HANG: Duration = Duration::from_secs(180);

fn main() {
    let start = Instant::now();
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-')).unwrap_or_default();
    let rounds = env_count("MPI_BENCH_ROUNDS", ROUNDS);
    let reps = env_count("MPI_BENCH_REPS", REPS);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace").to_path_buf();
    let release = release_dir();
    let paths = match build_ours(&release) {
        Ok(p) => p,
        Err(e) => return eprintln!("mpi bench: {e}"),
    };
    let (c0, c1) = bench::two_cpus();
    let cpus = format!("{c0},{c1}");

    // The three builds of the program; a library whose compiler is missing is reported and
    // left out (./run bench installs them all).
    let out_dir = release.join("mpi-bench");
    let _ = std::fs::create_dir_all(&out_dir);
    let mut exes: BTreeMap<&str, PathBuf> = BTreeMap::new();
    for lib in [Lib::Madmpi, Lib::Mpich, Lib::OpenMpi] {
        match compile(lib, &root, &paths.lib_dir, &out_dir) {
            Ok(exe) => {
                exes.insert(lib.label(), exe);
            }
            Err(e) => eprintln!("mpi bench: {} left out: {e}", lib.label()),
        }
    }

    let configs: Vec<(Lib, Transport)> = CONFIGS
        .into_iter()
        .filter(|&(l, t)| config_name(l, t).contains(&filter) && exes.contains_key(l.label()))
        .collect();
    let mut runs: BTreeMap<String, Vec<Output>> = BTreeMap::new();
    let mut commands: BTreeMap<String, String> = BTreeMap::new();
    for round in 0..rounds {
        // Alternate the order, so that no configuration always runs right after another.
        let order: Vec<_> =
            if round % 2 == 0 { configs.clone() } else { configs.iter().rev().copied().collect() };
        for (lib, t) in order {
            let name = config_name(lib, t);
            eprintln!("==> round {}/{rounds}: {name}", round + 1);
            let cmd = launch(lib, t, &exes[lib.label()], reps, &cpus, &paths);
            commands.insert(name.clone(), describe(&cmd));
            match run(cmd).and_then(|text| {
                let o = parse(&text)?;
                if !o.library.starts_with(lib.version_prefix()) {
                    return Err(format!("ran on the wrong library: {}", o.library));
                }
                Ok(o)
            }) {
                Ok(o) => runs.entry(name).or_default().push(o),
                Err(e) => eprintln!("mpi bench {name}: {e}"),
            }
        }
    }
    report(&root, &runs, &commands, &cpus, rounds, reps, start.elapsed());
}

fn env_count(var: &str, default: u32) -> u32 {
    std::env::var(var).ok().and_then(|v| v.parse().ok()).filter(|&n| n > 0).unwrap_or(default)
}

/// The `release` directory this bench was built in (`target/release`).
fn release_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("own path");
    // target/release/deps/mpi-<hash>
    exe.parent().and_then(Path::parent).expect("target/release").to_path_buf()
}

/// Builds `libmpi.so` and madrun in release mode, and links `libmpi.so.12` (the soname the
/// program asks for) beside the library.
fn build_ours(release: &Path) -> Result<Paths, String> {
    let target = release.parent().ok_or("no target dir")?;
    let status = Command::new(env!("CARGO"))
        .args(["build", "-q", "--release", "-p", "madmpi-libmpi", "-p", "tools", "--bin", "madrun"])
        .arg("--target-dir")
        .arg(target)
        .status()
        .map_err(|e| format!("running cargo: {e}"))?;
    if !status.success() {
        return Err("building libmpi.so and madrun failed".into());
    }
    let link = release.join("libmpi.so.12");
    if std::fs::read_link(&link).ok().as_deref() != Some(Path::new("libmpi.so")) {
        let _ = std::fs::remove_file(&link);
        // Another process (the C tests) may make the same link at the same time.
        if let Err(e) = std::os::unix::fs::symlink("libmpi.so", &link)
            && e.kind() != std::io::ErrorKind::AlreadyExists
        {
            return Err(format!("linking {}: {e}", link.display()));
        }
    }
    let pin = Path::new(env!("CARGO_MANIFEST_DIR")).join("mpi/pin.sh");
    Ok(Paths { lib_dir: release.to_path_buf(), madrun: release.join("madrun"), pin })
}

/// Compiles `bench/mpi/pingpong.c` for `lib`, at -O2 as MPI libraries' own benchmarks are.
fn compile(lib: Lib, root: &Path, lib_dir: &Path, out_dir: &Path) -> Result<PathBuf, String> {
    let src = root.join("bench/mpi/pingpong.c");
    let exe = out_dir.join(format!("pingpong.{}", lib.label()));
    let (mut c, package) = match lib {
        Lib::Madmpi => {
            let mut c = Command::new("cc");
            c.arg("-I").arg(root.join("madmpi/include"));
            (c, "build-essential")
        }
        Lib::Mpich => (Command::new("mpicc.mpich"), "libmpich-dev"),
        Lib::OpenMpi => (Command::new("mpicc.openmpi"), "libopenmpi-dev"),
    };
    // gcc 12 warns about MPI_STATUSES_IGNORE passed for an array parameter, with every header.
    c.args(["-O2", "-Wall", "-Wno-stringop-overflow"]).arg(&src).arg("-o").arg(&exe);
    if lib == Lib::Madmpi {
        c.arg("-L").arg(lib_dir).arg("-lmpi");
    }
    let out = c.output().map_err(|e| format!("{e} (Debian: apt-get install {package})"))?;
    if !out.status.success() {
        return Err(format!("compiling failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(exe)
}

/// Runs a launch with a clean environment and a hang limit; its standard output.
fn run(mut cmd: Command) -> Result<String, String> {
    use std::os::unix::process::CommandExt;
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        // Keep what the launch itself sets.
        if scrubbed(&k) && !cmd.get_envs().any(|(n, v)| n == &*k && v.is_some()) {
            cmd.env_remove(&*k);
        }
    }
    // Its own process group, so that a hang ends every process of the job.
    cmd.process_group(0).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("starting {:?}: {e}", cmd.get_program()))?;
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if t.elapsed() > HANG {
            // SAFETY: signals the process group this function created.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            let text = reader.join().unwrap_or_default();
            let errs = err_reader.join().unwrap_or_default();
            return Err(format!("no end after {HANG:?}: killed; it had printed:\n{text}{errs}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = reader.join().unwrap_or_default();
    let errs = err_reader.join().unwrap_or_default();
    if !status.success() {
        return Err(format!("the job failed ({status}):\n{text}{errs}"));
    }
    Ok(text)
}

fn report(
    root: &Path,
    runs: &BTreeMap<String, Vec<Output>>,
    commands: &BTreeMap<String, String>,
    cpus: &str,
    rounds: u32,
    reps: u32,
    took: Duration,
) {
    let lat: BTreeMap<String, BTreeMap<usize, f64>> = runs
        .iter()
        .map(|(k, v)| (k.clone(), combine(&v.iter().map(|o| o.lat.clone()).collect::<Vec<_>>())))
        .collect();
    let bw: BTreeMap<String, BTreeMap<usize, f64>> = runs
        .iter()
        .map(|(k, v)| (k.clone(), combine(&v.iter().map(|o| o.bw.clone()).collect::<Vec<_>>())))
        .collect();
    let how = format!(
        "two ranks pinned to CPUs {cpus}; median of {rounds} interleaved runs × {reps} repetitions each"
    );
    println!();
    println!(
        "{}",
        bench::mpi::table(
            &format!("MPI one-way latency (ping-pong round trip / 2; ratio < 1: madmpi faster); {how}"),
            &lat,
            cell_ns
        )
    );
    println!(
        "{}",
        bench::mpi::table(
            &format!("MPI streaming bandwidth, MB/s (8 in flight; ratio > 1: madmpi faster); {how}"),
            &bw,
            cell_mbps
        )
    );
    // The aim: small messages over shm at or below MPICH's latency.
    let small =
        |c: &str| -> Vec<f64> { lat.get(c).map_or(vec![], |m| m.range(..=64).map(|(_, &v)| v).collect()) };
    let (ours, mpich) = (small("madmpi-shm"), small("MPICH-shm"));
    if !ours.is_empty() && ours.len() == mpich.len() {
        let worst = ours.iter().zip(&mpich).map(|(a, b)| a / b).fold(0.0, f64::max);
        println!(
            "aim (shm latency 0–64 B at or below MPICH's): {} (worst ratio {worst:.2})",
            if worst <= 1.0 { "met" } else { "not met" }
        );
    }
    println!("took {:.0} s", took.as_secs_f64());

    let date = Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let per_size = |m: &BTreeMap<usize, f64>| -> serde_json::Value {
        m.iter().map(|(s, v)| (s.to_string(), serde_json::json!(v))).collect()
    };
    let mut configs = serde_json::Map::new();
    for (name, outs) in runs {
        configs.insert(
            name.clone(),
            serde_json::json!({
                "library": outs.first().map(|o| o.library.clone()),
                "command": commands.get(name),
                "runs": outs.len(),
                "oneway_ns": per_size(&lat[name]),
                "MBps": per_size(&bw[name]),
            }),
        );
    }
    let doc = serde_json::json!({
        "date": date,
        "cpus": cpus,
        "rounds": rounds,
        "reps": reps,
        "seconds": took.as_secs(),
        "program": "bench/mpi/pingpong.c",
        "configs": configs,
    });
    let dir = root.join("bench-results");
    let _ = std::fs::create_dir_all(&dir);
    match std::fs::write(dir.join("mpi.json"), serde_json::to_string_pretty(&doc).unwrap()) {
        Ok(()) => println!("written to bench-results/mpi.json"),
        Err(e) => eprintln!("writing bench-results/mpi.json: {e}"),
    }
}
