//! madrun end to end, with real processes: `pmi_check` jobs (PMI-1, PMI-2, remote ranks over
//! TCP through a fake launcher command), the same under MPICH's `mpiexec.hydra`, and every
//! failure path (exit status, signal, abort, timeout, SIGTERM, malformed PMI request, exit
//! before finalize). Each job carries a unique marker variable, and every failure test checks
//! that no process with that marker survives madrun.
//!
//! madrun lives in the `tools` crate, so it is built once with `cargo build` (pmi_check is this
//! crate's own binary, which cargo builds before these tests). Jobs run one at a time.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tests::jobs::*;

fn pmi_check() -> &'static str {
    env!("CARGO_BIN_EXE_pmi_check")
}

fn assert_nothing_left(marker: &str) {
    let deadline = Instant::now() + Duration::from_millis(500);
    loop {
        let left = marked(marker);
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "processes of the job survived madrun: {left:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every rank printed its success line (after its `[R] ` tag if `tagged`).
fn assert_all_ok(d: &Done, n: u32, tagged: bool) {
    assert_eq!(d.code, Some(0), "{d:?}");
    for r in 0..n {
        let tag = if tagged { format!("[{r}] ") } else { String::new() };
        let want = format!("{tag}rank {r}/{n} ok");
        assert!(d.stdout.lines().any(|l| l.starts_with(&want)), "missing {want:?}: {d:?}");
    }
}

/// A failed job: reported with `report`, exit `code`, quickly, nothing left.
fn assert_failed(d: &Done, marker: &str, code: i32, report: &[&str]) {
    assert_eq!(d.code, Some(code), "{d:?}");
    let line =
        d.stderr.lines().find(|l| l.starts_with("madrun: ")).unwrap_or_else(|| panic!("no report: {d:?}"));
    for r in report {
        assert!(line.contains(r), "report {line:?} lacks {r:?}: {d:?}");
    }
    assert!(d.elapsed < FAILURE_DEADLINE, "took {:?}", d.elapsed);
    assert_nothing_left(marker);
}

fn have(program: &str) -> bool {
    let found =
        Command::new(program).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    if !found {
        eprintln!("NOTICE: {program} is not installed; skipping this test");
    }
    found
}

#[test]
fn pmi1_jobs_of_1_2_4_8_ranks() {
    let _g = serial();
    for n in [1u32, 2, 4, 8] {
        let m = unique_marker();
        let d = run(madrun(&m, &["-n", &n.to_string(), pmi_check()]));
        assert_all_ok(&d, n, false);
        assert!(d.stdout.contains("(Pmi1)"), "{d:?}");
    }
}

#[test]
fn pmi2_jobs_of_1_2_4_8_ranks() {
    let _g = serial();
    for n in [1u32, 2, 4, 8] {
        let mut cmd = madrun(&unique_marker(), &["-np", &n.to_string(), pmi_check()]);
        cmd.env("PM2_PMI", "2");
        let d = run(cmd);
        assert_all_ok(&d, n, false);
        assert!(d.stdout.contains("(Pmi2)"), "{d:?}");
    }
}

/// The name service (publish, lookup, refusal of a taken name, unpublish) under madrun, and the
/// same client under Hydra.
#[test]
fn names_are_published_looked_up_and_unpublished_across_ranks() {
    let _g = serial();
    for n in [1u32, 2, 4] {
        let d = run(madrun(&unique_marker(), &["-n", &n.to_string(), pmi_check(), "--names"]));
        assert_all_ok(&d, n, false);
        assert_eq!(d.stdout.matches("names ok").count(), n as usize, "{d:?}");
    }
    if have("mpiexec.hydra") {
        let mut cmd = Command::new("mpiexec.hydra");
        cmd.args(["-n", "2", pmi_check(), "--names"]).env_remove("PM2_PMI");
        let d = run(cmd);
        assert_all_ok(&d, 2, false);
        assert_eq!(d.stdout.matches("names ok").count(), 2, "{d:?}");
    }
}

#[test]
fn pmi_check_under_hydra() {
    let _g = serial();
    if !have("mpiexec.hydra") {
        return;
    }
    for n in [1u32, 2, 4, 8] {
        let mut cmd = Command::new("mpiexec.hydra");
        cmd.args(["-n", &n.to_string(), pmi_check()]).env_remove("PM2_PMI");
        assert_all_ok(&run(cmd), n, false);
    }
}

#[test]
fn non_pmi_programs_just_run() {
    let _g = serial();
    let d = run(madrun(&unique_marker(), &["-n", "3", "sh", "-c", "echo $PMI_RANK/$PMI_SIZE"]));
    assert_eq!(d.code, Some(0), "{d:?}");
    let mut lines: Vec<&str> = d.stdout.lines().collect();
    lines.sort();
    assert_eq!(lines, ["0/3", "1/3", "2/3"]);
}

#[test]
fn a_rank_exit_status_is_reported_and_the_job_killed() {
    let _g = serial();
    let m = unique_marker();
    let d = run(madrun(&m, &["-n", "4", pmi_check(), "--exit", "2", "3"]));
    assert_failed(&d, &m, 3, &["rank 2 (pid ", "exited with status 3", "killing the job"]);
}

#[test]
fn a_rank_killed_by_a_signal_is_reported() {
    let _g = serial();
    let m = unique_marker();
    let d = run(madrun(&m, &["-n", "3", pmi_check(), "--kill", "1"]));
    assert_failed(&d, &m, 128 + 9, &["rank 1 (pid ", "was killed by signal 9 (SIGKILL)"]);
}

/// `-disable-auto-cleanup`: the death is reported, the others finish (their PMI fence completes
/// without the dead rank), madrun exits with the dead rank's code.
#[test]
fn without_auto_cleanup_the_others_go_on_after_a_death() {
    let _g = serial();
    let m = unique_marker();
    let d = run(madrun(&m, &["-disable-auto-cleanup", "-n", "3", pmi_check(), "--kill", "1"]));
    assert_eq!(d.code, Some(128 + 9), "{d:?}");
    assert!(d.stderr.contains("was killed by signal 9 (SIGKILL); the other ranks go on"), "{d:?}");
    for r in [0, 2] {
        assert!(d.stdout.contains(&format!("rank {r}/3 ok")), "{d:?}");
    }
    assert!(!d.stdout.contains("rank 1/3 ok"), "{d:?}");
    assert_nothing_left(&m);
}

#[test]
fn pmi_abort_is_reported_with_its_exit_code() {
    let _g = serial();
    let m = unique_marker();
    let d = run(madrun(&m, &["-n", "3", pmi_check(), "--abort", "0"]));
    assert_failed(
        &d,
        &m,
        7,
        &["rank 0 (pid ", "called PMI abort (exit code 7): pmi_check_aborts_on_purpose"],
    );
}

#[test]
fn the_timeout_kills_a_hanging_job() {
    let _g = serial();
    let m = unique_marker();
    let d = run(madrun(&m, &["--timeout", "2", "-n", "3", pmi_check(), "--hang", "1"]));
    assert_failed(&d, &m, 124, &["job timed out after 2 s"]);
    assert!(d.elapsed >= Duration::from_secs(2), "{d:?}");
}

#[test]
fn sigterm_to_madrun_kills_the_job() {
    let _g = serial();
    let m = unique_marker();
    let d = run_with(madrun(&m, &["-n", "3", pmi_check(), "--hang", "1"]), None, |pid| {
        // Wait until the 3 ranks run, then a little more for them to reach PMI.
        let deadline = Instant::now() + Duration::from_secs(10);
        while marked(&m).len() < 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: kill has no memory-safety preconditions; `pid` is our child, not yet waited.
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    });
    assert_failed(&d, &m, 128 + 15, &["received SIGTERM"]);
}

#[test]
fn stdin_goes_to_rank_0_and_tagging_prefixes_lines() {
    let _g = serial();
    let d = run_with(
        madrun(&unique_marker(), &["-n", "2", pmi_check(), "--echo"]),
        Some(b"hello\nworld\n"),
        |_| {},
    );
    assert_all_ok(&d, 2, false);
    assert!(d.stdout.contains("echo:hello\nworld\n"), "{d:?}");
    let tagged = madrun(&unique_marker(), &["-n", "2", "--tag-output", pmi_check(), "--echo"]);
    let d = run_with(tagged, Some(b"hello\nworld\n"), |_| {});
    assert_all_ok(&d, 2, true);
    for want in ["[0] echo:hello\n", "[0] world\n", "[0] rank 0/2 ok", "[1] rank 1/2 ok"] {
        assert!(d.stdout.contains(want), "missing {want:?}: {d:?}");
    }
    assert!(d.stdout.lines().all(|l| l.starts_with("[0] ") || l.starts_with("[1] ")), "{d:?}");
}

/// A launcher command that runs the command here (it drops the host argument).
fn fake_launcher() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("madrun-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("fake-ssh");
    let tmp = dir.join(format!("fake-ssh.{}", unique_marker()));
    std::fs::write(&tmp, "#!/bin/sh\nshift\nexec \"$@\"\n").unwrap();
    std::fs::set_permissions(&tmp, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    path
}

fn remote_job(marker: &str, n: &str, extra: &[&str]) -> Command {
    let launcher = fake_launcher();
    let mut args =
        vec!["-n", n, "-hosts", "localhost,fake-a,fake-b", "--pmi-host", "127.0.0.1", "--launcher-exec"];
    let launcher = launcher.to_str().unwrap().to_string();
    args.push(&launcher);
    args.extend_from_slice(extra);
    madrun(marker, &args)
}

#[test]
fn remote_ranks_use_the_tcp_port_and_the_job_key() {
    let _g = serial();
    let d = run(remote_job(&unique_marker(), "4", &["--tag-output", pmi_check()]));
    assert_all_ok(&d, 4, true);
    assert!(!d.stderr.contains("rejected"), "{d:?}");
    let mut cmd = remote_job(&unique_marker(), "3", &["-genv", "PM2_PMI", "2", pmi_check()]);
    cmd.env("PM2_PMI", "2");
    let d = run(cmd);
    assert_all_ok(&d, 3, false);
    assert!(d.stdout.contains("(Pmi2)"), "{d:?}");
}

#[test]
fn a_stranger_on_the_pmi_port_is_rejected_and_the_job_goes_on() {
    let _g = serial();
    // Rank 0 must be remote to know PMI_PORT: put it on a fake host.
    let launcher = fake_launcher();
    let args = ["-n", "3", "-hosts", "fake-a,localhost", "--pmi-host", "127.0.0.1", "--launcher-exec"];
    let mut cmd = madrun(&unique_marker(), &args);
    cmd.arg(&launcher).args([pmi_check(), "--stranger"]);
    let d = run(cmd);
    assert_all_ok(&d, 3, false);
    assert!(
        d.stderr.contains("madrun WARN tools::launcher::event_loop: rejected a connection from 127.0.0.1:"),
        "{d:?}"
    );
    assert!(d.stdout.contains("stranger got 0 bytes"), "{d:?}");
}

#[test]
fn a_failing_remote_rank_kills_its_launcher_and_the_job() {
    let _g = serial();
    let m = unique_marker();
    let d = run(remote_job(&m, "3", &[pmi_check(), "--exit", "1", "5"]));
    assert_failed(&d, &m, 5, &["rank 1 (pid ", "exited with status 5"]);
}

#[test]
fn a_malformed_pmi_request_is_quoted_and_fails_the_job() {
    let _g = serial();
    if !have("python3") {
        return;
    }
    let m = unique_marker();
    let script = "import os, time\nos.write(int(os.environ['PMI_FD']), b'hello world\\n')\ntime.sleep(5)";
    let d = run(madrun(&m, &["-n", "2", "python3", "-c", script]));
    assert_failed(&d, &m, 1, &["rank ", "malformed PMI request", r#""hello world\n""#]);
}

#[test]
fn exiting_0_between_init_and_finalize_fails_the_job() {
    let _g = serial();
    if !have("python3") {
        return;
    }
    let m = unique_marker();
    let script = "import os, sys, time\n\
        fd = int(os.environ['PMI_FD'])\n\
        os.write(fd, b'cmd=init pmi_version=1 pmi_subversion=1\\n')\n\
        os.read(fd, 100)\n\
        if os.environ['PMI_RANK'] == '1': sys.exit(0)\n\
        time.sleep(10)";
    let d = run(madrun(&m, &["-n", "2", "python3", "-c", script]));
    assert_failed(&d, &m, 1, &["rank 1 (pid ", "status 0", "before PMI finalize"]);
}

#[test]
fn bad_command_lines_exit_2_with_usage() {
    let _g = serial();
    for args in [&["-n", "0", "x"][..], &["--bogus", "x"], &["-n", "2"], &["-genv", "X"]] {
        let d = run(madrun(&unique_marker(), args));
        assert_eq!(d.code, Some(2), "{d:?}");
        assert!(d.stderr.starts_with("madrun: ") && d.stderr.contains("usage: madrun"), "{d:?}");
    }
    let d = run(madrun(&unique_marker(), &["--help"]));
    assert_eq!(d.code, Some(0), "{d:?}");
    assert!(d.stdout.contains("usage: madrun"), "{d:?}");
    let d = run(madrun(&unique_marker(), &["-n", "2", "/nonexistent/program"]));
    assert_eq!(d.code, Some(127), "{d:?}");
    assert!(d.stderr.contains("cannot start rank 0 (/nonexistent/program)"), "{d:?}");
}

/// Holds 80 idle connections (silent, and dribbling a byte every 3 s), re-opened whenever
/// dropped, on every listening socket of the job's processes (`watch_madrun`: madrun's PMI port
/// too, from its start) while a 2-rank `nmad_late 4` job runs: the ranks still reach madrun and
/// each other, with the right data. Returns the job and the tcp addresses the ranks listened on.
fn late_job_under_flood(
    mut cmd: Command,
    marker: &str,
    watch_madrun: bool,
) -> (Done, Vec<std::net::SocketAddr>) {
    use tests::flood::{Flood, listening, tcp_bound};
    cmd.args([env!("CARGO_BIN_EXE_nmad_late"), "4"]);
    let mut floods = Vec::new();
    let mut bound = Vec::new();
    let d = run_limited(cmd, None, Duration::from_secs(40), |madrun| {
        let deadline = Instant::now() + Duration::from_secs(15);
        if watch_madrun {
            let port = loop {
                let l = listening(madrun);
                if !l.is_empty() {
                    break l;
                }
                assert!(Instant::now() < deadline, "madrun never listened");
                std::thread::sleep(Duration::from_millis(5));
            };
            floods.push((Flood::start(&port, 80), port.len()));
        }
        let mut seen = Vec::new();
        while seen.len() < 2 && Instant::now() < deadline {
            for pid in marked(marker) {
                let l = listening(pid);
                // A rank listens once nmad started its drivers (madrun's launcher shells do not).
                if !seen.contains(&pid) && !l.is_empty() {
                    seen.push(pid);
                    bound.extend(tcp_bound(pid));
                    floods.push((Flood::start(&l, 80), l.len()));
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(seen.len(), 2, "both ranks listen");
    });
    for (f, targets) in floods {
        let opened = f.stop();
        assert!(
            opened > 80 * targets as u64,
            "the listeners made room by dropping idle ones ({opened} opened)"
        );
        eprintln!("flood: {opened} connections opened on {targets} sockets");
    }
    (d, bound)
}

fn assert_late_ok(d: &Done) {
    assert_eq!(d.code, Some(0), "{d:?}");
    for r in 0..2 {
        assert!(d.stdout.contains(&format!("rank {r}/2 ok late")), "{d:?}");
    }
}

#[test]
fn idle_strangers_on_the_shm_sockets_delay_no_rank() {
    let _g = serial();
    let m = unique_marker();
    let (d, _) = late_job_under_flood(madrun(&m, &["-genv", "NMAD_DRIVERS", "shm", "-n", "2"]), &m, false);
    assert_late_ok(&d);
}

#[test]
fn idle_strangers_on_the_tcp_ports_delay_no_rank_and_a_one_node_job_listens_on_loopback() {
    let _g = serial();
    let m = unique_marker();
    let (d, bound) =
        late_job_under_flood(madrun(&m, &["-genv", "NMAD_DRIVERS", "tcp", "-n", "2"]), &m, false);
    assert_late_ok(&d);
    assert!(!bound.is_empty() && bound.iter().all(|a| a.ip().is_loopback()), "{bound:?}");
}

#[test]
fn idle_strangers_on_the_pmi_port_and_the_ranks_delay_no_remote_rank() {
    let _g = serial();
    // Remote ranks start 2 s late, so that the flood holds the PMI port before they connect.
    let dir = std::env::temp_dir().join(format!("madrun-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let slow = dir.join("slow-ssh");
    std::fs::write(&slow, "#!/bin/sh\nsleep 2\nshift\nexec \"$@\"\n").unwrap();
    std::fs::set_permissions(&slow, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let m = unique_marker();
    let args = ["-n", "2", "-hosts", "fake-a,fake-b", "--pmi-host", "127.0.0.1", "--launcher-exec"];
    let mut cmd = madrun(&m, &args);
    cmd.arg(&slow);
    let (d, bound) = late_job_under_flood(cmd, &m, true);
    assert_late_ok(&d);
    assert!(
        bound.iter().any(|a| a.ip().is_unspecified()),
        "ranks of several hosts listen on every interface: {bound:?}"
    );
}

/// A rank that exits 0 before speaking PMI while the others wait in the PMI fence of their
/// start-up (PMI-1 and PMI-2): the fence can never complete, so the job ends at once, naming it.
#[test]
fn exiting_before_pmi_init_while_others_wait_fails_the_job() {
    let _g = serial();
    for pmi in ["1", "2"] {
        let m = unique_marker();
        let mut cmd = madrun(&m, &["-n", "3", pmi_check(), "--exit-before-init", "1"]);
        cmd.env("PM2_PMI", pmi);
        let d = run(cmd);
        assert_failed(&d, &m, 1, &["rank 1 (pid ", "exited before PMI init", "waits in a PMI barrier"]);
    }
}

/// Many tiny puts (each far below the byte bound) are refused once the store holds its most
/// entries: the refusal is a PMI error the rank sees, one message names the rank, and madrun's
/// peak memory stays within the store's bound plus its own.
#[test]
fn a_flood_of_tiny_puts_is_refused_and_madrun_stays_small() {
    let _g = serial();
    if !have("python3") {
        return;
    }
    let script = "import os\n\
        fd = int(os.environ['PMI_FD'])\n\
        pending = b''\n\
        def replies(n):\n\
        \x20   global pending\n\
        \x20   while pending.count(b'\\n') < n:\n\
        \x20       pending += os.read(fd, 65536)\n\
        \x20   lines = pending.split(b'\\n')\n\
        \x20   pending = b'\\n'.join(lines[n:])\n\
        \x20   return lines[:n]\n\
        os.write(fd, b'cmd=init pmi_version=1 pmi_subversion=1\\n')\n\
        replies(1)\n\
        ok = refused = 0\n\
        for b in range(200):\n\
        \x20   os.write(fd, b''.join(b'cmd=put key=k%d value=v\\n' % (b * 2000 + i) for i in range(2000)))\n\
        \x20   for l in replies(2000):\n\
        \x20       if b'rc=0' in l: ok += 1\n\
        \x20       elif b'kvs_full' in l: refused += 1\n\
        print('ok', ok, 'refused', refused, flush=True)\n\
        os.write(fd, b'cmd=finalize\\n')\n\
        replies(1)\n";
    let peak_kib = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let peak = peak_kib.clone();
    let d = run_with(madrun(&unique_marker(), &["-n", "1", "python3", "-c", script]), None, move |pid| {
        // VmHWM is madrun's peak resident size so far: the last reading before it exits.
        while let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            let kib = status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
            match kib {
                Some(k) => peak.fetch_max(k, std::sync::atomic::Ordering::Relaxed),
                None => break, // a zombie: its memory is gone
            };
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    assert_eq!(d.code, Some(0), "{d:?}");
    let counts: Vec<u64> = d.stdout.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    let [ok, refused] = counts[..] else { panic!("no counts: {d:?}") };
    assert_eq!(ok + refused, 400_000, "{d:?}");
    assert!(refused > 100_000 && ok < 300_000, "the store took {ok} entries: {d:?}");
    assert_eq!(d.stderr.matches("key-value store is full").count(), 1, "{d:?}");
    assert!(d.stderr.contains("madrun: rank 0 (pid "), "{d:?}");
    let peak = peak_kib.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!("madrun's peak resident size: {peak} KiB after {ok} entries");
    assert!(peak > 0 && peak < 128 << 10, "madrun's peak resident size: {peak} KiB");
}
