//! Jobs across "hosts" through the engines sites already run: MPICH's Hydra with an ssh-style
//! launcher over network namespaces (`scripts/netns-hosts.sh`), and a private one-node Slurm
//! (`scripts/slurm-local.sh`) with `srun --mpi=pmi2`. They need root (namespaces, daemons), as
//! `./run test` and CI have; set PM2_SKIP_SYSTEM_TESTS=1 to skip them elsewhere.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

fn skip() -> bool {
    tests::jobs::skip_system_tests()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn script(name: &str) -> PathBuf {
    root().join("tests/scripts").join(name)
}

fn pmi_check() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_pmi_check"))
}

/// Runs `cmd`, expects success, returns the `rank R/N ok` lines.
fn run_job(cmd: &mut Command, n: u32) -> Vec<String> {
    let out = cmd.output().expect("start the job");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{cmd:?} failed: {}\nstdout:\n{stdout}\nstderr:\n{stderr}", out.status);
    let ok: Vec<String> =
        stdout.lines().filter(|l| l.contains(&format!("/{n} ok"))).map(String::from).collect();
    assert_eq!(ok.len(), n as usize, "every rank reports\nstdout:\n{stdout}\nstderr:\n{stderr}");
    ok
}

struct Cleanup(PathBuf, &'static str);
impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = Command::new(&self.0).arg(self.1).status();
    }
}

/// Two namespace hosts for one test: the script (also the launchers' `-launcher-exec`) and the
/// guard that removes them. Holds the tests' serial lock.
struct Hosts {
    script: PathBuf,
    _down: Cleanup,
    _serial: std::sync::MutexGuard<'static, ()>,
}

fn hosts() -> Hosts {
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ns = script("netns-hosts.sh");
    assert!(Command::new(&ns).args(["up", "2"]).status().unwrap().success(), "creating the namespaces");
    Hosts { script: ns.clone(), _down: Cleanup(ns, "down"), _serial: serial }
}

/// Builds madrun (debug) and returns its path.
fn madrun() -> PathBuf {
    let built =
        Command::new(env!("CARGO")).args(["build", "-q", "-p", "tools", "--bin", "madrun"]).status().unwrap();
    assert!(built.success());
    pmi_check().with_file_name("madrun")
}

#[test]
fn hydra_runs_jobs_across_namespace_hosts() {
    if skip() {
        return;
    }
    let h = hosts();
    let ns = &h.script;
    for n in [2u32, 4, 8] {
        let ok = run_job(
            Command::new("mpiexec.hydra")
                .args(["-launcher", "ssh", "-launcher-exec"])
                .arg(ns)
                .args(["-iface", "pm2br0", "-hosts", "pm2h1,pm2h2", "-n", &n.to_string()])
                .arg(pmi_check()),
            n,
        );
        let nets: HashSet<&str> = ok.iter().filter_map(|l| l.split_whitespace().last()).collect();
        assert_eq!(nets.len(), 2, "ranks ran on both hosts: {ok:?}");
        assert!(ok.iter().all(|l| l.contains("(Pmi1)")));
    }
}

#[test]
fn slurm_srun_pmi2_runs_jobs() {
    if skip() {
        return;
    }
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let sl = script("slurm-local.sh");
    let dir = std::env::temp_dir().join(format!("pm2-slurm-test-{}", std::process::id()));
    let up = Command::new(&sl).arg("up").env("PM2_SLURM_DIR", &dir).status().unwrap();
    assert!(up.success(), "starting the private Slurm (logs in {})", dir.display());
    struct Down(PathBuf, PathBuf);
    impl Drop for Down {
        fn drop(&mut self) {
            let _ = Command::new(&self.0).arg("down").env("PM2_SLURM_DIR", &self.1).status();
            let _ = std::fs::remove_dir_all(&self.1);
        }
    }
    let _down = Down(sl, dir.clone());
    for n in [1u32, 2, 4, 8] {
        let ok = run_job(
            Command::new("srun")
                .env("SLURM_CONF", dir.join("slurm.conf"))
                .args(["--mpi=pmi2", "-O", "-n", &n.to_string()])
                .arg(pmi_check()),
            n,
        );
        assert!(ok.iter().all(|l| l.contains("(Pmi2)")), "{ok:?}");
    }
}

/// madrun itself across the namespace hosts: remote ranks reach its PMI port over TCP and prove
/// the job key; a stranger connecting there (rank 0 with `--stranger`) is rejected and logged, and
/// the job carries on.
#[test]
fn madrun_runs_jobs_across_namespace_hosts_and_rejects_strangers() {
    if skip() {
        return;
    }
    let madrun = madrun();
    let h = hosts();
    let ns = &h.script;
    let job = |n: u32, extra: &[&str]| {
        let mut c = Command::new(&madrun);
        c.args(["-n", &n.to_string(), "-hosts", "pm2h1,pm2h2", "--launcher-exec"])
            .arg(ns)
            .args(["--pmi-host", "10.77.0.1", "--timeout", "30"])
            .arg(pmi_check())
            .args(extra);
        c
    };
    for n in [2u32, 4] {
        let ok = run_job(&mut job(n, &[]), n);
        let nets: HashSet<&str> = ok.iter().filter_map(|l| l.split_whitespace().last()).collect();
        assert_eq!(nets.len(), 2, "ranks ran on both hosts: {ok:?}");
    }
    let out = job(2, &["--stranger"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the job carries on: {stderr}");
    assert!(
        stderr.contains("madrun WARN tools::launcher::event_loop: rejected a connection from 10.77.0."),
        "{stderr}"
    );
}

/// nmad picks its drivers per peer: shared memory within a host, tcp between hosts (network
/// namespaces are hosts: their node ids differ), under Hydra and under madrun alike.
#[test]
fn nmad_uses_shm_within_a_host_and_tcp_between_hosts() {
    if skip() {
        return;
    }
    let madrun = madrun();
    let check = PathBuf::from(env!("CARGO_BIN_EXE_nmad_check"));
    let h = hosts();
    let ns = &h.script;
    let hydra = || {
        let mut c = Command::new("mpiexec.hydra");
        c.args(["-launcher", "ssh", "-launcher-exec"]).arg(ns);
        c.args(["-iface", "pm2br0", "-hosts", "pm2h1,pm2h2", "-n", "4"]).arg(&check);
        c
    };
    let ours = || {
        let mut c = Command::new(&madrun);
        c.args(["-n", "4", "-hosts", "pm2h1,pm2h2", "--launcher-exec"]).arg(ns);
        c.args(["--pmi-host", "10.77.0.1", "--timeout", "60"]).arg(&check);
        c
    };
    for mut cmd in [hydra(), ours()] {
        let ok = run_job(&mut cmd, 4);
        // Round-robin placement: ranks 0 and 2 on one host, 1 and 3 on the other.
        for line in &ok {
            let me: u32 = line.split_whitespace().nth(1).unwrap().split('/').next().unwrap().parse().unwrap();
            for p in 0..4u32 {
                let want = if p == me {
                    "self"
                } else if p % 2 == me % 2 {
                    "shm"
                } else {
                    "tcp"
                };
                assert!(line.contains(&format!(" {p}={want}")), "rank {me} to {p}: want {want}: {line}");
            }
        }
    }
}

/// madmpi's collectives across the namespace hosts (round-robin placement: every host holds
/// several ranks): barrier, bcast, reduce and allreduce run hierarchically — within each host
/// over shared memory, then between one leader per host over tcp — as `MADMPI_COLL_TRACE`
/// shows, and check their results against local references (`madmpi_check coll check`: every
/// root, in place and not, commutative and not); with `MADMPI_COLL_HIERARCHICAL=off` the same
/// job runs the flat algorithms.
#[test]
fn madmpi_collectives_go_hierarchical_across_namespace_hosts() {
    if skip() {
        return;
    }
    let madrun = madrun();
    let check = PathBuf::from(env!("CARGO_BIN_EXE_madmpi_check"));
    let h = hosts();
    for (n, mode) in [(5u32, "auto"), (4, "auto"), (5, "off")] {
        let mut c = Command::new(&madrun);
        c.args(["-n", &n.to_string(), "-hosts", "pm2h1,pm2h2", "--launcher-exec"]).arg(&h.script);
        c.args(["--pmi-host", "10.77.0.1", "--timeout", "120"]);
        c.args(["-genv", "MADMPI_COLL_TRACE", "1", "-genv", "MADMPI_COLL_HIERARCHICAL", mode]);
        c.arg(&check).args(["coll", "check", "65536"]);
        let out = c.output().expect("start the job");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "n={n} {mode}: {}\n{stdout}\n{stderr}", out.status);
        for r in 0..n {
            let done = format!("OK {r}: bcast reduce allreduce 65536 B");
            assert!(
                stdout.lines().any(|l| l.starts_with(&done)),
                "n={n} {mode}: {done}:\n{stdout}\n{stderr}"
            );
        }
        let hier = stderr.lines().filter(|l| l.contains("hierarchical over 2 nodes")).count();
        let traced = stderr.lines().filter(|l| l.starts_with("madmpi coll: ")).count();
        assert!(traced > 0, "the trace is on: {stderr}");
        match mode {
            "auto" => {
                for what in ["barrier", "bcast", "reduce", "allreduce"] {
                    let want = format!(": {what} ");
                    assert!(
                        stderr.lines().any(|l| l.contains(&want) && l.contains("hierarchical over 2 nodes")),
                        "n={n}: {what} went hierarchical:\n{stderr}"
                    );
                }
                // Non-commutative reductions stay flat.
                assert!(hier < traced, "n={n}: some calls stay flat");
            }
            _ => assert_eq!(hier, 0, "n={n}: hierarchies are off:\n{stderr}"),
        }
    }
}

/// The job's "hosts" as the flood sees them: a rank's namespace (`ip netns identify`) gives its
/// address on the bridge (pm2hN is 10.77.0.(10+N)).
fn namespace_ip(pid: u32) -> Option<std::net::IpAddr> {
    let out = Command::new("ip").args(["netns", "identify", &pid.to_string()]).output().ok()?;
    let name = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let n: u8 = name.strip_prefix("pm2h")?.parse().ok()?;
    Some(std::net::IpAddr::from([10, 77, 0, 10 + n]))
}

/// madrun across namespace hosts under a flood of idle connections (80 per socket, silent and
/// dribbling a byte every 3 s, re-opened whenever dropped): on madrun's PMI port from its start
/// (the ranks start 2 s later), which listens on the bridge address only, and on each rank's tcp
/// port while the 2-rank job waits 4 s before its first message. The job finishes with the right
/// data.
#[test]
fn idle_strangers_on_the_pmi_port_and_the_tcp_ports_stop_no_job_across_hosts() {
    use std::time::{Duration, Instant};
    use tests::flood::{Flood, Target, listening, tcp_bound};
    use tests::jobs::{MARKER, marked, run_limited, unique_marker};
    if skip() {
        return;
    }
    let madrun = madrun();
    let h = hosts();
    let dir = std::env::temp_dir().join(format!("hosts-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let slow = dir.join("slow-netns");
    std::fs::write(&slow, format!("#!/bin/sh\nsleep 2\nexec {} \"$@\"\n", h.script.display())).unwrap();
    std::fs::set_permissions(&slow, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let marker = unique_marker();
    let mut cmd = Command::new(&madrun);
    cmd.args(["-genv", MARKER, &marker, "-n", "2", "-hosts", "pm2h1,pm2h2", "--launcher-exec"]).arg(&slow);
    cmd.args(["--pmi-host", "10.77.0.1", "--timeout", "30", env!("CARGO_BIN_EXE_nmad_late"), "4"]);
    let mut floods = Vec::new();
    let mut port_bound = Vec::new();
    let d = run_limited(cmd, None, Duration::from_secs(40), |pid| {
        let deadline = Instant::now() + Duration::from_secs(15);
        let port = loop {
            let l = listening(pid);
            if !l.is_empty() {
                break l;
            }
            assert!(Instant::now() < deadline, "madrun never listened");
            std::thread::sleep(Duration::from_millis(5));
        };
        port_bound = tcp_bound(pid);
        floods.push((Flood::start(&port, 80), port.len()));
        let mut seen = Vec::new();
        while seen.len() < 2 && Instant::now() < deadline {
            for rank in marked(&marker) {
                let ports = tcp_bound(rank);
                if seen.contains(&rank) || ports.is_empty() {
                    continue;
                }
                let ip = namespace_ip(rank).expect("a rank in a namespace host");
                let targets: Vec<Target> =
                    ports.iter().map(|a| Target::Tcp(std::net::SocketAddr::new(ip, a.port()))).collect();
                seen.push(rank);
                floods.push((Flood::start(&targets, 80), targets.len()));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(seen.len(), 2, "both ranks listen");
    });
    for (f, targets) in floods {
        let opened = f.stop();
        eprintln!("flood: {opened} connections opened on {targets} sockets");
        assert!(
            opened > 80 * targets as u64,
            "the listener made room by dropping idle ones ({opened} opened)"
        );
    }
    assert_eq!(d.code, Some(0), "{d:?}");
    for r in 0..2 {
        assert!(d.stdout.contains(&format!("rank {r}/2 ok late")), "{d:?}");
    }
    let bridge: std::net::IpAddr = "10.77.0.1".parse().unwrap();
    assert!(
        port_bound.iter().all(|a| a.ip() == bridge),
        "the PMI port listens on the bridge only: {port_bound:?}"
    );
}

/// `madmpi/libmpi/tests/c/<name>.c` built by the build tree's `mpicc` (its rpath finds
/// `libmpi.so`), run at 2 and 4 ranks placed round-robin on the two namespace hosts (tcp between
/// them, shared memory within one) under madrun and Hydra: every rank passes all its checks.
fn c_program_passes_across_namespace_hosts(name: &str) {
    c_program_passes_across_namespace_hosts_with(name, &[]);
}

/// [`c_program_passes_across_namespace_hosts`] with `env` set for every rank.
fn c_program_passes_across_namespace_hosts_with(name: &str, env: &[(&str, &str)]) {
    use tests::jobs::{build_mpi_tree, run_limited};
    let tree = build_mpi_tree();
    // One directory per program: the tests run at once and each removes its own.
    let out = tree.join(format!("hosts-c-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let exe = out.join(name);
    let src = root().join("madmpi/libmpi/tests/c").join(format!("{name}.c"));
    let built = Command::new(tree.join("mpicc"))
        .args(["-Wall", "-Werror", "-g", "-pthread", "-I"])
        .arg(src.parent().unwrap())
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("run mpicc");
    assert!(built.success(), "compiling {name}");
    let madrun = madrun();
    let h = hosts();
    for n in [2u32, 4] {
        let mut ours = Command::new(&madrun);
        ours.args(["-n", &n.to_string(), "-hosts", "pm2h1,pm2h2", "--launcher-exec"]).arg(&h.script);
        ours.args(["--pmi-host", "10.77.0.1", "--timeout", "240"]).arg(&exe);
        let mut hydra = Command::new("mpiexec.hydra");
        hydra.args(["-launcher", "ssh", "-launcher-exec"]).arg(&h.script);
        hydra.args(["-iface", "pm2br0", "-hosts", "pm2h1,pm2h2", "-n", &n.to_string()]).arg(&exe);
        for mut cmd in [ours, hydra] {
            cmd.envs(env.iter().copied());
            let what = format!("{cmd:?}");
            let done = run_limited(cmd, None, std::time::Duration::from_secs(240), |_| {});
            assert_eq!(done.code, Some(0), "{what}: {done:?}");
            assert!(!done.stdout.contains("FAIL"), "{what}: {done:?}");
            for r in 0..n {
                let passed = format!("OK {r}: all checks passed");
                assert!(done.stdout.contains(&passed), "{what}: {passed}: {done:?}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// `rma_ops.c` between hosts: every window flavour × synchronization × operation, values and
/// error classes checked.
#[test]
fn one_sided_operations_pass_across_namespace_hosts() {
    if skip() {
        return;
    }
    c_program_passes_across_namespace_hosts("rma_ops");
}

/// `rma_passive.c` between hosts: locks, puts, accumulates and gets complete while the target
/// computes without calling MPI (its progression applies them over tcp), before its computation
/// (1 s here) ends. The namespace hosts share this machine's CPUs with up to 4 ranks computing
/// or polling, so the target's progression thread waits for a scheduler slice at each wake-up
/// (each epoch's time, 80 runs: mostly 0.2–10 ms, once 72 ms).
#[test]
fn passive_target_operations_progress_across_namespace_hosts() {
    if skip() {
        return;
    }
    c_program_passes_across_namespace_hosts_with("rma_passive", &[("RMA_PASSIVE_COMPUTE_MS", "1000")]);
}

/// `rma_threads.c` between hosts: 4 threads per rank accumulate and fetch-and-op on the same
/// ints at rank 0 (MPI_THREAD_MULTIPLE), sums and fetched values checked exactly.
#[test]
fn threads_accumulate_at_once_across_namespace_hosts() {
    if skip() {
        return;
    }
    c_program_passes_across_namespace_hosts("rma_threads");
}

/// `rma_bulk.c` between hosts: large puts, gets and accumulates sent apart from the active
/// messages (nmad's rendezvous over tcp), under every synchronization, refusals included.
#[test]
fn large_one_sided_transfers_pass_across_namespace_hosts() {
    if skip() {
        return;
    }
    c_program_passes_across_namespace_hosts("rma_bulk");
}
