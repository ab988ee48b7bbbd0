//! Rail failover with real processes and real faults: two namespace hosts joined by two rail
//! networks (`scripts/netns-hosts.sh up 2 2`: interfaces `rail1`, `rail2`) besides the service
//! network (`eth0`), rails cut with `ip link set … down` (silent to TCP), nftables drop-all
//! rules (silent) and `ss -K` (the connections killed: loud), undone to test re-admission; the
//! rendezvous restart races by nmad's test hook `NMAD_TEST_CUT` (a rail failed in-process at a
//! chosen protocol step). Root only, as `./run test` and CI have; PM2_SKIP_SYSTEM_TESTS=1 skips.
//!
//! Every job checks its data byte for byte (`nmad_stress`, `bench/mpi/failover.c`, the MPI C
//! tests' own checks) and counts what was lost or duplicated.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tests::jobs::{Done, build_mpi_tree, run_limited};

static SERIAL: Mutex<()> = Mutex::new(());
const FULL: bool = !cfg!(debug_assertions);

fn skip() -> bool {
    tests::jobs::skip_system_tests()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn script() -> PathBuf {
    root().join("tests/scripts/netns-hosts.sh")
}

/// The two hosts and their rails, for one test (holding the serial lock); removed on drop, with
/// any cut undone.
struct Rails {
    _serial: std::sync::MutexGuard<'static, ()>,
    tree: PathBuf,
    /// `bench/mpi/failover.c`, built with our `mpicc` on first use.
    program: std::sync::OnceLock<PathBuf>,
}

impl Rails {
    fn up() -> Rails {
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let ok = Command::new(script()).args(["up", "2", "2"]).status().unwrap().success();
        assert!(ok, "creating the namespaces");
        Rails { _serial: serial, tree: build_mpi_tree(), program: std::sync::OnceLock::new() }
    }

    /// madrun over both hosts (one rank per host for n = 2), the rails as drivers and
    /// `split_balance` spreading the traffic over them.
    fn madrun(&self, n: u32, drivers: &str, env: &[(&str, &str)]) -> Command {
        let mut c = Command::new(self.tree.join("madrun"));
        c.args(["-n", &n.to_string(), "-hosts", "pm2h1,pm2h2", "--launcher-exec"]).arg(script());
        c.args(["--pmi-host", "10.77.0.1", "--timeout", "240", "-genv", "NMAD_DRIVERS", drivers]);
        c.args(["-genv", "NMAD_STRATEGY", "split_balance", "-genv", "LD_LIBRARY_PATH"]).arg(&self.tree);
        for (k, v) in env {
            c.args(["-genv", k, v]);
        }
        c.env_remove("PM2_PMI");
        c
    }

    /// `bench/mpi/failover.c`, built with our `mpicc`.
    fn failover_program(&self) -> &PathBuf {
        self.program.get_or_init(|| {
            let exe = self.tree.join(format!("failover-test-{}", std::process::id()));
            let ok = Command::new(self.tree.join("mpicc"))
                .args(["-O2", "-pthread", "-o"])
                .arg(&exe)
                .arg(root().join("bench/mpi/failover.c"))
                .status()
                .unwrap()
                .success();
            assert!(ok, "compiling failover.c");
            exe
        })
    }

    /// The failover program with `args`, 2 ranks over both rails with `env`; the rails are
    /// restored afterwards.
    fn failover_job(&self, env: &[(&str, &str)], args: &[&str], limit: Duration) -> Done {
        let mut cmd = self.madrun(2, "tcp:rail1,tcp:rail2", env);
        cmd.arg(self.failover_program()).args(args);
        let done = run(cmd, limit);
        sh(&restore("pm2h1", "rail1"));
        sh(&restore("pm2h1", "rail2"));
        done
    }
}

impl Drop for Rails {
    fn drop(&mut self) {
        let _ = Command::new(script()).arg("down").status();
        if let Some(exe) = self.program.get() {
            let _ = std::fs::remove_file(exe);
        }
    }
}

/// Runs `cmd` with a limit.
fn run(cmd: Command, limit: Duration) -> Done {
    run_limited(cmd, None, limit, |_| {})
}

/// A shell command cutting `iface` on host `host` (`down`, `drop`: silent; `kill`: loud, the
/// rail's connections killed, then new ones reset: `ss -K` needs a kernel built with socket
/// destruction, and the rules make the cut whether or not it has it).
fn cut(host: &str, iface: &str, how: &str) -> String {
    let addr = |h: &str| format!("10.77.{}.{}", &iface[4..], if h == "pm2h1" { 12 } else { 11 });
    let rules = |action: &str| {
        let nft = format!("ip netns exec {host} nft");
        format!(
            "{nft} add table inet cut{iface} && {nft} add chain inet cut{iface} in \
             '{{ type filter hook input priority 0; }}' && {nft} add rule inet cut{iface} in iifname {iface} \
             {action} && {nft} add chain inet cut{iface} out '{{ type filter hook output priority 0; }}' && \
             {nft} add rule inet cut{iface} out oifname {iface} {action}"
        )
    };
    match how {
        "down" => format!("ip netns exec {host} ip link set {iface} down"),
        "drop" => rules("drop"),
        "kill" => format!(
            "ip netns exec {host} ss -K dst {} > /dev/null 2>&1; {}",
            addr(host),
            rules("meta l4proto tcp reject with tcp reset")
        ),
        _ => unreachable!("{how}"),
    }
}

/// Undoes [`cut`].
fn restore(host: &str, iface: &str) -> String {
    format!(
        "ip netns exec {host} ip link set {iface} up; ip netns exec {host} nft delete table inet cut{iface} 2>/dev/null; true"
    )
}

fn sh(cmd: &str) {
    let _ = Command::new("sh").args(["-c", cmd]).status();
}

/// The value of `key=` in the `m bench=failover case=CASE` line.
fn field(done: &Done, case: &str, key: &str) -> Option<f64> {
    let line = done.stdout.lines().find(|l| l.contains(&format!("case={case} ")))?;
    let v = line.split_whitespace().find_map(|kv| kv.strip_prefix(&format!("{key}=")))?;
    v.parse().ok()
}

/// Every row of `done` reports nothing lost, duplicated or corrupt.
fn clean(done: &Done, what: &str) {
    assert_eq!(done.code, Some(0), "{what}: {done:?}");
    let rows: Vec<&str> = done.stdout.lines().filter(|l| l.contains("lost=")).collect();
    assert!(!rows.is_empty(), "{what}: no result: {done:?}");
    for r in rows {
        for bad in ["lost", "duplicates", "corrupt"] {
            assert!(r.contains(&format!(" {bad}=0 ")) || r.ends_with(&format!(" {bad}=0")), "{what}: {r}");
        }
    }
}

/// A pseudo-random moment in `lo..hi` ms (the cuts should not always hit the same spot).
fn moment(lo: u64, hi: u64) -> u64 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    lo + u64::from(t) % (hi - lo)
}

/// 2 and 4 ranks stream randomized messages (0 B–8 MiB, every byte checked) over two rails
/// while rail 1 is cut at a random moment: silently (`ip link down`) with 2 ranks, loudly (the
/// connections killed) with 4; the job completes, nothing lost or duplicated.
#[test]
fn the_stress_job_completes_when_a_rail_is_cut() {
    if skip() {
        return;
    }
    let r = Rails::up();
    let stress = env!("CARGO_BIN_EXE_nmad_stress");
    let messages = if FULL { 100_000 } else { 40_000 }.to_string();
    for (n, how, drivers) in [(2, "down", "tcp:rail1,tcp:rail2"), (4, "kill", "shm,tcp:rail1,tcp:rail2")] {
        let mut cmd = r.madrun(n, drivers, &[]);
        cmd.arg(stress).args(["--messages", &messages, "--seed", "31"]);
        let at = moment(100, 300);
        let cutter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(at));
            sh(&cut("pm2h1", "rail1", how));
        });
        let done = run(cmd, Duration::from_secs(240));
        cutter.join().unwrap();
        sh(&restore("pm2h1", "rail1"));
        let what = format!("{n} ranks, rail1 cut ({how}) at {at} ms");
        assert_eq!(done.code, Some(0), "{what}: {done:?}");
        assert_eq!(done.stdout.matches(" errors 0 ").count(), n as usize, "{what}: {done:?}");
        assert!(done.stderr.contains("rail tcp:rail1 to peer"), "{what}: the cut was not seen: {done:?}");
        eprintln!("{what}: ok");
    }
}

/// A 256 MiB rendezvous (split over both rails) in flight when rail 1 is cut silently: it
/// resumes on rail 2 from what arrived and the data is intact; the later transfers too.
#[test]
fn a_large_rendezvous_survives_a_cut_in_flight() {
    if skip() {
        return;
    }
    let r = Rails::up();
    let size = if FULL { 256 << 20 } else { 32 << 20 }.to_string();
    let env = [("FAILOVER_CUT", cut("pm2h1", "rail1", "drop"))];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let done = r.failover_job(&env, &["big", &size, "3", "20", "silent"], Duration::from_secs(240));
    clean(&done, "256 MiB with a cut");
    assert!(done.stderr.contains("rail tcp:rail1 to peer"), "the cut was not seen: {done:?}");
}

/// Both fast rails cut: the fallback network (`NMAD_FALLBACK=tcp:eth0`) carries the rest; with
/// rail 1 back, it is re-admitted and carries traffic again. Streams of 1 MiB messages.
#[test]
fn the_fallback_carries_the_job_and_a_rail_that_comes_back_is_used_again() {
    if skip() {
        return;
    }
    let r = Rails::up();
    let both = format!("{}; {}", cut("pm2h1", "rail1", "down"), cut("pm2h1", "rail2", "down"));
    let env = [("FAILOVER_CUT", both.as_str()), ("NMAD_FALLBACK", "tcp:eth0")];
    let done = r.failover_job(&env, &["stream", "1048576", "2", "500", "both"], Duration::from_secs(240));
    clean(&done, "both rails cut");
    assert!(done.stderr.contains("traffic goes on over tcp:eth0"), "the fallback was not used: {done:?}");
    let after = field(&done, "bw-after-both", "median").unwrap();
    assert!(after > 0.0, "nothing arrived after the cut: {done:?}");

    let undo = restore("pm2h1", "rail1");
    let env = [
        ("FAILOVER_CUT", cut("pm2h1", "rail1", "down")),
        ("FAILOVER_RESTORE", undo),
        ("FAILOVER_RESTORE_MS", "1200".to_string()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let done = r.failover_job(&env, &["stream", "1048576", "4", "500", "back"], Duration::from_secs(240));
    clean(&done, "rail 1 cut and restored");
    let readmitted = field(&done, "readmit-back", "median").unwrap();
    assert!(readmitted >= 0.0, "rail 1 was not re-admitted: {done:?}");
    let share = field(&done, "readmit-back", "share_tcp:rail1").unwrap();
    assert!(share > 0.1, "rail 1 carries {share} of the traffic after its re-admission: {done:?}");
}

/// Both sides of every restart race: a rail failed (in-process, its link closed: the peer sees
/// it fail) when the receiver has asked for the data, when the sender started or finished a
/// piece, when the receiver has everything but has not said so, when the sender took the FIN;
/// the first and a later occurrence of each. 8 MiB transfers split over both rails; the sender
/// scribbles over its buffer as soon as its send completes, so a send completed too early
/// shows as corrupt data.
#[test]
fn every_restart_race_delivers_the_data_once() {
    if skip() {
        return;
    }
    let r = Rails::up();
    for step in ["rtr-sent", "piece-started", "piece-sent", "data-complete", "fin-received"] {
        for n in [1, 3] {
            let hook = format!("{step}:{n}");
            let args = ["big", "8388608", "5", "-1", "hook"];
            let done = r.failover_job(&[("NMAD_TEST_CUT", &hook)], &args, Duration::from_secs(120));
            clean(&done, &hook);
            assert!(done.stderr.contains("cut by the test hook"), "{hook}: the hook did not fire: {done:?}");
            assert!(
                !done.stderr.contains("unknown send"),
                "{hook}: an answer for a completed send: {done:?}"
            );
        }
    }
}

/// Stops rank 1 (in host 2's namespace) `after` the start for `for_`, then continues it, on a
/// thread; the thread returns how many processes it stopped.
fn stop_rank1(r: &Rails, after: Duration, for_: Duration) -> std::thread::JoinHandle<usize> {
    let name = r.failover_program().file_name().unwrap().to_string_lossy().into_owned();
    std::thread::spawn(move || {
        std::thread::sleep(after);
        let pids = Command::new("ip").args(["netns", "pids", "pm2h2"]).output().unwrap();
        let rank1: Vec<String> = String::from_utf8_lossy(&pids.stdout)
            .split_whitespace()
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| name.starts_with(c.trim()))
            })
            .map(String::from)
            .collect();
        rank1.iter().for_each(|p| sh(&format!("kill -STOP {p}")));
        std::thread::sleep(for_);
        rank1.iter().for_each(|p| sh(&format!("kill -CONT {p}")));
        rank1.len()
    })
}

/// A peer stopped (SIGSTOP) for a second answers on no rail: no rail is declared failed (a
/// rail fails only while another one answers), and once it continues (SIGCONT) the job
/// completes, nothing lost. Stopped for longer than `NMAD_PEER_SILENT_MS`, it is reported lost
/// and the job ends, no hang.
#[test]
fn a_stopped_peer_fails_no_rail_and_a_long_stop_is_reported() {
    if skip() {
        return;
    }
    let r = Rails::up();
    let stopper = stop_rank1(&r, Duration::from_millis(800), Duration::from_secs(1));
    let done = r.failover_job(&[], &["stream", "1048576", "3", "-1", "stop"], Duration::from_secs(120));
    assert!(stopper.join().unwrap() > 0, "rank 1 was not found to stop: {done:?}");
    clean(&done, "a peer stopped for a second");
    assert!(!done.stderr.contains("failed:"), "a rail was failed: {done:?}");

    let stopper = stop_rank1(&r, Duration::from_millis(800), Duration::from_secs(4));
    let env = [("NMAD_PEER_SILENT_MS", "1500")];
    let done = r.failover_job(&env, &["stream", "1048576", "10", "-1", "stop"], Duration::from_secs(120));
    assert!(stopper.join().unwrap() > 0, "rank 1 was not found to stop: {done:?}");
    assert_ne!(done.code, Some(0), "the job cannot succeed: {done:?}");
    assert!(done.stderr.contains("lost peer 1: nothing arrived on any rail"), "{done:?}");
}

/// Every rail cut and no fallback: the job ends (no hang, no process left) with a report
/// naming the peer and the rails, within the configured silence plus the launcher's cleanup.
#[test]
fn a_cut_with_no_surviving_rail_ends_the_job_with_a_report() {
    if skip() {
        return;
    }
    let r = Rails::up();
    let both = format!("{}; {}", cut("pm2h1", "rail1", "drop"), cut("pm2h1", "rail2", "drop"));
    let env = [("FAILOVER_CUT", both.as_str()), ("NMAD_PEER_SILENT_MS", "2000")];
    let start = Instant::now();
    let done = r.failover_job(&env, &["stream", "1048576", "30", "300", "all"], Duration::from_secs(120));
    let took = start.elapsed();
    assert_ne!(done.code, Some(0), "the job cannot succeed: {done:?}");
    assert!(took < Duration::from_secs(20), "ended after {took:?}: {done:?}");
    assert!(
        done.stderr.contains("lost peer")
            && done.stderr.contains("tcp:rail1 ")
            && done.stderr.contains("tcp:rail2 "),
        "the report names the peer and the rails: {done:?}"
    );
    let left = Command::new("pgrep").arg("-f").arg(r.failover_program()).output().unwrap();
    assert!(left.stdout.is_empty(), "processes left: {}", String::from_utf8_lossy(&left.stdout));
}

/// The MPI C tests, over two hosts (2 ranks, or 4 with shared memory within a host), rail 1
/// failed after the 3rd packet each process numbers on a failover gate (the test hook:
/// mid-program for each), pass all their checks. `rma_bulk`'s large one-sided transfers are
/// streams of active messages that must arrive in order: a packet sent again on the surviving
/// rail is overtaken by later ones, which the gate keeps until it can hand them over in order.
#[test]
fn the_mpi_c_tests_pass_with_a_rail_cut_in_the_middle() {
    if skip() {
        return;
    }
    let r = Rails::up();
    let dir = r.tree.join(format!("failover-c-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // (program, ranks): the two-rank programs run one rank per host.
    let programs = [
        ("p2p_basic", 4),
        ("p2p_modes", 2),
        ("p2p_families", 2),
        ("p2p_express", 2),
        ("mprobe", 2),
        ("persistent", 2),
        ("partitioned", 2),
        ("coll_basic", 4),
        ("coll_more", 4),
        ("coll_ops", 4),
        ("datatypes", 2),
        ("large_count", 2),
        ("rma_ops", 4),
        ("rma_threads", 4),
        ("rma_bulk", 4),
        ("thread_multiple", 2),
        ("threads", 2),
        ("comm_threads", 2),
        ("multiwait", 2),
        ("attrs", 2),
        ("grequest", 2),
        ("pack", 2),
        ("types_more", 2),
        ("coll_express", 4),
        ("coll_persistent", 4),
        ("coll_overlap", 4),
        ("intercomm_coll", 4),
        ("topo_cart", 4),
        ("topo_neighbor", 4),
    ];
    let mut uncut = Vec::new();
    for (name, n) in programs {
        let src = root().join("madmpi/libmpi/tests/c").join(format!("{name}.c"));
        let exe = dir.join(name);
        let ok = Command::new(r.tree.join("mpicc"))
            .args(["-g", "-pthread", "-I"])
            .arg(src.parent().unwrap())
            .arg(&src)
            .arg("-o")
            .arg(&exe)
            .status()
            .unwrap()
            .success();
        assert!(ok, "compiling {name}");
        let mut cmd = r.madrun(n, "shm,tcp:rail1,tcp:rail2", &[("NMAD_TEST_CUT", "packet:3")]);
        cmd.arg(&exe);
        // Under madrun's own limit (240 s), so that a hang is reported with the job's stacks.
        let done = run(cmd, Duration::from_secs(120));
        assert_eq!(done.code, Some(0), "{name}: {done:?}");
        assert!(!done.stdout.contains("FAIL"), "{name}: {done:?}");
        for rank in 0..n {
            assert!(done.stdout.contains(&format!("OK {rank}: all checks passed")), "{name}: {done:?}");
        }
        if !done.stderr.contains("cut by the test hook") {
            uncut.push(name);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(uncut.is_empty(), "programs with no cut (fewer than 3 packets between hosts): {uncut:?}");
}
