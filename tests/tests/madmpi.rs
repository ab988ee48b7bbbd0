//! madmpi's Rust API with real processes: `madmpi_check <scenario>` (`src/bin/madmpi_check/`) as
//! 3-rank jobs under madrun, one test per scenario: typed point-to-point (also under MPICH's
//! `mpiexec.hydra`), derived datatypes, communicators and groups, error classes, marcel user
//! threads blocking in MPI on one LWP (under each pioman policy), and several OS threads per rank.
//! Each job must exit with status 0 and every rank must print the OK line of every step.
//! The last tests (`peer_failure`) fail a rank on purpose (SIGKILL, SIGSTOP) and check that
//! every call towards it, `MPI_Finalize` included, returns an error instead of waiting.
//!
//! The program ends itself (status 2) if a rank is stuck for 20 s; the harness kills a job that
//! is still running after `jobs::HANG`.

use std::process::Command;
use tests::jobs::{Done, madrun, require, run, serial, unique_marker};

const FULL: bool = !cfg!(debug_assertions);
const PROGRAM: &str = env!("CARGO_BIN_EXE_madmpi_check");

/// `madrun -n 3 [-genv K V]... madmpi_check <args>`.
fn job(env: &[(&str, &str)], args: &[&str]) -> Done {
    let mut a: Vec<&str> = Vec::new();
    for (k, v) in env {
        a.extend(["-genv", k, v]);
    }
    a.extend(["-n", "3", PROGRAM]);
    a.extend(args);
    run(madrun(&unique_marker(), &a))
}

/// Exit status 0, and for each rank the line `OK <rank>: <step>...` of every step of `steps(rank)`
/// (prefixes of the step descriptions).
fn assert_steps(d: &Done, steps: impl Fn(u32) -> Vec<&'static str>) {
    assert_eq!(d.code, Some(0), "{d:?}");
    for rank in 0..3 {
        for step in steps(rank) {
            let want = format!("OK {rank}: {step}");
            assert!(d.stdout.lines().any(|l| l.starts_with(&want)), "missing {want:?}: {d:?}");
        }
    }
}

const TYPED: [&str; 6] = [
    "blocking send/recv i32 f64 u8 TwoInt",
    "isend/irecv i32 f64 u8",
    "sendrecv f64 and TwoInt",
    "probe and iprobe",
    "MPI_ANY_SOURCE and MPI_ANY_TAG",
    "issend incomplete until matched; ssend",
];

#[test]
fn typed_point_to_point() {
    let _g = serial();
    assert_steps(&job(&[], &["typed"]), |_| TYPED.to_vec());
}

#[test]
fn typed_point_to_point_under_hydra() {
    let _g = serial();
    let mut cmd = Command::new(require("mpiexec.hydra", "mpich"));
    cmd.args(["-n", "3", PROGRAM, "typed"]).env_remove("PM2_PMI");
    assert_steps(&run(cmd), |_| TYPED.to_vec());
}

#[test]
fn derived_datatypes() {
    let _g = serial();
    let steps = ["vector (resized columns", "indexed into contiguous f64", "struct type of a repr(C) struct"];
    assert_steps(&job(&[], &["datatypes"]), |_| steps.to_vec());
}

#[test]
fn communicators_and_groups() {
    let _g = serial();
    let steps = [
        "dup: congruent",
        "split by parity",
        "groups: incl, excl",
        "create from incl and excl",
        "dup and split after",
    ];
    assert_steps(&job(&[], &["comms"]), |_| steps.to_vec());
}

#[test]
fn errors_have_their_class_and_the_job_goes_on() {
    let _g = serial();
    let steps = [
        "bad ranks and tags are MPI_ERR_RANK and MPI_ERR_TAG",
        "truncation is MPI_ERR_TRUNCATE",
        "uncommitted type, negative count",
        "traffic goes on after the errors",
    ];
    assert_steps(&job(&[], &["errors"]), |_| steps.to_vec());
}

/// Under the default policy (adaptive) and each built-in one: waiting threads park, spin or
/// block in the kernel, and the other user threads of the LWP must run in every case.
#[test]
fn marcel_user_threads_blocked_in_mpi_leave_their_lwp_to_the_others() {
    let _g = serial();
    for policy in [None, Some("block"), Some("poll"), Some("timer")] {
        let env: Vec<(&str, &str)> = policy.map(|p| ("PIOMAN_POLICY", p)).into_iter().collect();
        let d = job(&env, &["marcel"]);
        assert_steps(&d, |rank| {
            vec![if rank == 0 {
                "4 user threads blocked in MPI while a 5th"
            } else {
                "relayed after the trigger"
            }]
        });
        assert!(d.stdout.contains("hog hand-offs 0"), "policy {policy:?}: {d:?}");
    }
}

#[test]
fn os_threads_exchange_many_messages_concurrently() {
    let _g = serial();
    let messages = if FULL { "2000" } else { "400" };
    let d = job(&[], &["os-threads", messages]);
    assert_steps(&d, |_| vec!["4 threads x 2 peers x", "2 threads x 2 peers x"]);
    assert_eq!(d.stdout.matches(&format!("x {messages} messages")).count(), 6, "{d:?}");
}

const PEER_FAILURE: &str = env!("CARGO_BIN_EXE_peer_failure");
/// How long `MPI_Finalize` may take once a peer is known failed (measured: 0–0.9 s).
const FINALIZE_BOUND_MS: u128 = 5000;

/// `madrun <launcher_args> -n 2 peer_failure <args>`, rank 1's pid passed through a file.
fn peer_failure_job(launcher_args: &[&str], args: &[&str]) -> Done {
    let pidfile = std::env::temp_dir().join(format!("peer-failure-{}.pid", unique_marker()));
    let mut a: Vec<&str> = launcher_args.to_vec();
    a.extend(["-n", "2", PEER_FAILURE]);
    a.extend(args);
    let mut cmd = madrun(&unique_marker(), &a);
    cmd.env("PEER_FAILURE_PIDFILE", &pidfile);
    let d = run(cmd);
    let _ = std::fs::remove_file(pidfile);
    d
}

const CALLS: [&str; 6] = [
    "first recv from rank 1",
    "eager send to rank 1",
    "recv from rank 1",
    "rendezvous send to rank 1",
    "barrier",
    "finalize",
];

/// Rank 0's `steps` all failed, its finalize within the bound.
fn assert_every_call_failed(d: &Done, steps: &[&str]) {
    for &step in steps {
        let want = format!("OK 0: {step}: true ");
        let line =
            d.stdout.lines().find(|l| l.starts_with(&want)).unwrap_or_else(|| panic!("no {want:?}: {d:?}"));
        if step == "finalize" {
            let ms: u128 = line[want.len()..].trim().parse().unwrap();
            assert!(ms < FINALIZE_BOUND_MS, "finalize took {ms} ms: {d:?}");
        }
    }
}

/// Rank 1 is killed (the others go on): rank 0's calls towards it fail, its finalize returns an
/// error at once, and its status 1 (what MPI_ERRORS_ARE_FATAL does) is reported.
#[test]
fn finalize_returns_an_error_after_a_peer_died() {
    let _g = serial();
    let d = peer_failure_job(&["-disable-auto-cleanup"], &["kill"]);
    // The first failure madrun sees: rank 1's SIGKILL, or rank 0's status 1 if it came first.
    assert!(matches!(d.code, Some(137) | Some(1)), "{d:?}");
    assert!(d.stderr.contains("rank 1 (pid ") && d.stderr.contains("killed by signal 9"), "{d:?}");
    assert_every_call_failed(&d, &CALLS);
    assert!(d.stderr.contains("rank 0 (pid "), "{d:?}");
    assert!(d.stderr.contains("exited with status 1; the other ranks go on"), "{d:?}");
}

/// Rank 1 dies while rank 0 has a receive from it and a rendezvous send to it pending (over each
/// driver): both complete with errors, then rank 0's barrier and finalize fail at once.
#[test]
fn pending_calls_fail_when_a_connected_peer_dies() {
    let _g = serial();
    for driver in ["shm", "tcp", "udp"] {
        let d =
            peer_failure_job(&["-disable-auto-cleanup", "-genv", "NMAD_DRIVERS", driver], &["kill-linked"]);
        // madrun exits with the first failure it sees: rank 1's SIGKILL, or rank 0's status 1
        // when rank 0 noticed the loss (and finalized) before madrun reaped rank 1.
        assert!(matches!(d.code, Some(137) | Some(1)), "{driver}: {d:?}");
        assert!(
            d.stderr.contains("rank 1 (pid ") && d.stderr.contains("killed by signal 9"),
            "{driver}: {d:?}"
        );
        let steps = ["pending recv from rank 1", "pending rendezvous send to rank 1", "barrier", "finalize"];
        assert_every_call_failed(&d, &steps);
        assert!(d.stderr.contains("exited with status 1; the other ranks go on"), "{driver}: {d:?}");
    }
}

/// Rank 1 dies while rank 0 waits in a barrier that runs through the node's shared segment
/// (no message to fail): rank 0 learns it from nmad and fails the barrier, the next allreduce
/// and finalize, each within the bound.
#[test]
fn a_node_local_barrier_fails_when_a_peer_dies_in_it() {
    let _g = serial();
    let d = peer_failure_job(
        &["-disable-auto-cleanup", "-genv", "PM2_LOG", "madmpi::coll::shared=info,warn"],
        &["kill-in-barrier"],
    );
    assert!(matches!(d.code, Some(137) | Some(1)), "{d:?}");
    assert!(d.stderr.contains("node-local area for the 2 ranks"), "the barrier ran node-locally: {d:?}");
    for step in ["barrier", "allreduce", "finalize"] {
        let want = format!("OK 0: {step}: true ");
        let line =
            d.stdout.lines().find(|l| l.starts_with(&want)).unwrap_or_else(|| panic!("no {want:?}: {d:?}"));
        let ms: u128 = line[want.len()..].trim().parse().unwrap();
        assert!(ms < FINALIZE_BOUND_MS, "{step} took {ms} ms: {d:?}");
    }
}

/// Rank 1 is stopped (alive, unreachable: rank 0's connection times out): rank 0's calls fail,
/// its finalize returns an error instead of waiting for rank 1, and the job ends.
#[test]
fn finalize_returns_an_error_after_a_peer_became_unreachable() {
    let _g = serial();
    let d = peer_failure_job(&[], &["stop"]);
    assert_eq!(d.code, Some(1), "{d:?}");
    assert_every_call_failed(&d, &CALLS);
    assert!(d.stderr.contains("rank 0 (pid "), "{d:?}");
    assert!(d.stderr.contains("exited with status 1; killing the job"), "{d:?}");
}

/// As above, but rank 1 is continued once rank 0 gave up on it, and rank 0 ignores its
/// finalize's error (exits 0): rank 1, unaware, waits in the launcher's fence for rank 0, which
/// finalized without it; madrun ends the job, naming both.
#[test]
fn a_peer_unaware_of_the_failure_does_not_wait_forever_in_finalize() {
    let _g = serial();
    let d = peer_failure_job(&[], &["stop", "ignore"]);
    assert_eq!(d.code, Some(1), "{d:?}");
    assert_every_call_failed(&d, &CALLS);
    for part in
        ["rank 0 (pid ", "exited while rank 1 (pid ", "waits in a PMI barrier that can no longer complete"]
    {
        assert!(d.stderr.contains(part), "{part:?}: {d:?}");
    }
}
