//! madmpi's reduce-scatter, reduce-scatter-block, scan and exscan with real processes:
//! `madmpi_check coll-reduce` under madrun on 1, 2, 3, 4, 5 and 8 ranks (8 on this 2-core
//! machine: oversubscribed), with the default algorithm choice and with every algorithm forced
//! through `MADMPI_COLL_REDUCE_SCATTER` and `MADMPI_COLL_SCAN`; vectors from 0 B to 4 MiB
//! (256 KiB in debug builds, where the user operation's loops are slow), with a commutative
//! builtin and a non-commutative user operation, in place and not, checked against references
//! computed locally. Each job prints its time; see `src/bin/madmpi_check/coll_reduce.rs` for
//! what is checked.

use tests::jobs::{Done, assert_ranks_ok, madrun_job, serial};

const PROGRAM: &str = env!("CARGO_BIN_EXE_madmpi_check");
const MAX_BYTES: &str = if cfg!(debug_assertions) { "262144" } else { "4194304" };
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
        let d = job(n, env, &["coll-reduce", "check", MAX_BYTES]);
        let mut steps = Vec::new();
        for bytes in ["0", "24", "1024", MAX_BYTES] {
            for what in ["reduce_scatter", "reduce_scatter_block", "scan exscan"] {
                steps.push(format!("{what} {bytes} B"));
            }
        }
        steps.push("nonblocking reductions in flight together".into());
        let steps: Vec<&str> = steps.iter().map(String::as_str).collect();
        assert_ok(&d, n, &steps);
    }
}

#[test]
fn reductions_with_the_default_choice() {
    check_all(&[]);
}

#[test]
fn reductions_with_recursive_halving_and_recursive_doubling() {
    check_all(&[
        ("MADMPI_COLL_REDUCE_SCATTER", "recursive_halving"),
        ("MADMPI_COLL_SCAN", "recursive_doubling"),
    ]);
}

#[test]
fn reductions_with_pairwise_and_linear() {
    check_all(&[("MADMPI_COLL_REDUCE_SCATTER", "pairwise"), ("MADMPI_COLL_SCAN", "linear")]);
}

#[test]
fn reductions_with_reduce_then_scatterv() {
    check_all(&[("MADMPI_COLL_REDUCE_SCATTER", "reduce_scatterv")]);
}

#[test]
fn an_unknown_reduction_algorithm_is_an_error() {
    let _g = serial();
    for var in ["MADMPI_COLL_REDUCE_SCATTER", "MADMPI_COLL_SCAN"] {
        let d = job(2, &[(var, "quantum")], &["coll-reduce", "check", "8"]);
        assert_ne!(d.code, Some(0), "{d:?}");
        assert!(d.stderr.contains(var), "{d:?}");
    }
}
