//! madmpi's collectives with real processes: `madmpi_check coll` under madrun on 1, 2, 3, 4, 5
//! and 8 ranks (8 on this 2-core machine: oversubscribed), with the default algorithm choice
//! and with every algorithm forced through `MADMPI_COLL_*`; sizes from 0 B to 4 MiB (1 MiB in
//! debug builds, where the reductions themselves are slow), in place and not, checked against
//! references computed locally; and the background-progress check (4 and 8 ranks). Each job
//! prints its time; see `src/bin/madmpi_check/coll.rs` for what is checked.

use tests::jobs::{Done, assert_ranks_ok, madrun_job, serial};

const PROGRAM: &str = env!("CARGO_BIN_EXE_madmpi_check");
const MAX_BYTES: &str = if cfg!(debug_assertions) { "1048576" } else { "4194304" };
const RANKS: [u32; 6] = [1, 2, 3, 4, 5, 8];

fn job(n: u32, env: &[(&str, &str)], args: &[&str]) -> Done {
    madrun_job(PROGRAM, n, env, args)
}

fn assert_ok(d: &Done, n: u32, steps: &[&str]) {
    assert_ranks_ok(d, n, steps)
}

fn check_all(env: &[(&str, &str)]) {
    let _g = serial();
    for n in RANKS {
        let d = job(n, env, &["coll", "check", MAX_BYTES]);
        assert_ok(&d, n, &["barrier", "bcast reduce allreduce 0 B", "bcast reduce allreduce 1024 B"]);
        let top = format!("bcast reduce allreduce {MAX_BYTES} B");
        assert_ok(&d, n, &[&top, "nonblocking collectives in flight together"]);
    }
}

#[test]
fn collectives_with_the_default_choice() {
    check_all(&[]);
}

#[test]
fn collectives_with_trees_and_recursive_doubling() {
    check_all(&[
        ("MADMPI_COLL_BARRIER", "dissemination"),
        ("MADMPI_COLL_BCAST", "binomial"),
        ("MADMPI_COLL_REDUCE", "binomial"),
        ("MADMPI_COLL_ALLREDUCE", "recursive_doubling"),
    ]);
}

#[test]
fn collectives_with_scatter_ring_ordered_and_rabenseifner() {
    check_all(&[
        ("MADMPI_COLL_BCAST", "scatter_ring"),
        ("MADMPI_COLL_REDUCE", "ordered"),
        ("MADMPI_COLL_ALLREDUCE", "rabenseifner"),
    ]);
}

#[test]
fn collectives_with_reduce_then_bcast() {
    check_all(&[("MADMPI_COLL_ALLREDUCE", "reduce_bcast")]);
}

#[test]
fn an_unknown_algorithm_is_an_error() {
    let _g = serial();
    let d = job(2, &[("MADMPI_COLL_BCAST", "quantum")], &["coll", "check", "8"]);
    assert_ne!(d.code, Some(0), "{d:?}");
    assert!(d.stderr.contains("MADMPI_COLL_BCAST"), "{d:?}");
}

/// Rank 0 computes 200 ms (400 ms on 8 ranks) without MPI calls after starting an Ibcast it must forward and an
/// Iallreduce of several rounds: the others finish long before it comes back.
#[test]
fn collectives_progress_in_the_background() {
    let _g = serial();
    // 8 ranks share 2 cores with rank 0's computation: the others need 50–170 ms there (debug
    // build), so rank 0 computes longer.
    for (n, ms) in [(4, "200"), (8, "400")] {
        let d = job(n, &[], &["coll", "background", ms]);
        assert_ok(&d, n, &["background"]);
        for l in d.stdout.lines().filter(|l| l.starts_with("BACKGROUND 0")) {
            eprintln!("{n} ranks: {l}");
        }
    }
}
