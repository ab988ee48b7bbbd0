//! madmpi's gather, scatter, allgather and alltoall (and their `v` forms) with real processes:
//! `madmpi_check coll-gather` under madrun on 1, 2, 3, 4, 5 and 8 ranks (8 on this 2-core
//! machine: oversubscribed), with the default algorithm choice and with every algorithm forced
//! through `MADMPI_COLL_*`; sizes from 0 B to 4 MiB (1 MiB in debug builds), in place and not,
//! uneven `v` blocks with zeros, checked against references computed locally. Each job prints
//! its time; see `src/bin/madmpi_check/coll_gather.rs` for what is checked.

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
        let d = job(n, env, &["coll-gather", "check", MAX_BYTES]);
        let top = format!("gather scatter allgather alltoall {MAX_BYTES} B");
        assert_ok(
            &d,
            n,
            &[
                "gather scatter allgather alltoall 0 B",
                "gather scatter allgather alltoall 1024 B",
                &top,
                "nonblocking gather family in flight together",
                "alltoallw",
                "argument errors",
            ],
        );
    }
}

#[test]
fn gather_family_with_the_default_choice() {
    check_all(&[]);
}

#[test]
fn gather_family_with_trees_recursive_doubling_and_bruck() {
    check_all(&[
        ("MADMPI_COLL_GATHER", "binomial"),
        ("MADMPI_COLL_SCATTER", "binomial"),
        ("MADMPI_COLL_ALLGATHER", "recursive_doubling"),
        ("MADMPI_COLL_ALLGATHERV", "ring"),
        ("MADMPI_COLL_ALLTOALL", "bruck"),
        ("MADMPI_COLL_ALLTOALLV", "linear"),
    ]);
}

#[test]
fn gather_family_linear() {
    check_all(&[
        ("MADMPI_COLL_GATHER", "linear"),
        ("MADMPI_COLL_SCATTER", "linear"),
        ("MADMPI_COLL_ALLGATHER", "bruck"),
        ("MADMPI_COLL_ALLGATHERV", "linear"),
        ("MADMPI_COLL_ALLTOALL", "linear"),
        ("MADMPI_COLL_ALLTOALLV", "pairwise"),
    ]);
}

#[test]
fn gather_family_with_rings_and_pairwise_exchange() {
    check_all(&[("MADMPI_COLL_ALLGATHER", "ring"), ("MADMPI_COLL_ALLTOALL", "pairwise")]);
}

#[test]
fn an_unknown_algorithm_is_an_error() {
    let _g = serial();
    let d = job(2, &[("MADMPI_COLL_ALLTOALL", "quantum")], &["coll-gather", "check", "8"]);
    assert_ne!(d.code, Some(0), "{d:?}");
    assert!(d.stderr.contains("MADMPI_COLL_ALLTOALL"), "{d:?}");
}
