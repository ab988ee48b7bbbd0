//! nmad with real processes under madrun: a small exchange on every driver, the randomized stress
//! job (4 processes, random sizes 0 B–8 MiB and tags, every byte checked) under each strategy
//! and driver, and the flood job (3 senders, 10k unmatched messages each, one receiver with a
//! small unexpected budget). Debug builds run shortened versions; `--release` the full ones.

use std::process::Command;
use std::time::Duration;
use tests::jobs::{Done, madrun, run_limited, serial, unique_marker};

const STRATEGIES: [&str; 3] = ["default", "aggreg", "split_balance"];
const DRIVERS: [&str; 2] = ["shm", "tcp"];
const FULL: bool = !cfg!(debug_assertions);

fn job(marker: &str, n: u32, env: &[(&str, &str)], program: &str, args: &[&str]) -> Command {
    let mut a: Vec<String> = Vec::new();
    for (k, v) in env {
        a.extend(["-genv".into(), k.to_string(), v.to_string()]);
    }
    a.extend(["-n".into(), n.to_string(), program.into()]);
    a.extend(args.iter().map(|s| s.to_string()));
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    madrun(marker, &a)
}

fn ok_lines(d: &Done, n: u32) {
    assert_eq!(d.code, Some(0), "{d:?}");
    for r in 0..n {
        assert!(d.stdout.lines().any(|l| l.starts_with(&format!("rank {r}/{n}"))), "rank {r} silent: {d:?}");
    }
}

#[test]
fn every_rank_reaches_every_rank_on_each_driver() {
    let _g = serial();
    for (drivers, want) in [("shm", "shm"), ("tcp", "tcp"), ("shm,tcp", "shm+tcp")] {
        let m = unique_marker();
        let d = run_limited(
            job(&m, 3, &[("NMAD_DRIVERS", drivers)], env!("CARGO_BIN_EXE_nmad_check"), &[]),
            None,
            Duration::from_secs(60),
            |_| {},
        );
        ok_lines(&d, 3);
        let line = d.stdout.lines().find(|l| l.starts_with("rank 0/3")).unwrap();
        assert!(line.contains(&format!("1={want}")) && line.contains("0=self"), "{line}");
    }
    // Automatic selection on one node: shared memory.
    let m = unique_marker();
    let d = run_limited(
        job(&m, 2, &[], env!("CARGO_BIN_EXE_nmad_check"), &[]),
        None,
        Duration::from_secs(60),
        |_| {},
    );
    ok_lines(&d, 2);
    assert!(d.stdout.contains("rank 0/2 ok rails 0=self 1=shm "), "{d:?}");
}

/// More ranks on the machine than it has CPUs (from the launcher's local rank count): pioman is
/// told, so that waiting ranks yield their core to the ones they wait for.
#[test]
fn pioman_knows_when_the_ranks_outnumber_the_cpus() {
    let _g = serial();
    // SAFETY: sysconf has no preconditions.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as u32;
    for n in [cpus, cpus + 1] {
        let m = unique_marker();
        let d = run_limited(
            job(&m, n, &[], env!("CARGO_BIN_EXE_nmad_check"), &[]),
            None,
            Duration::from_secs(60),
            |_| {},
        );
        ok_lines(&d, n);
        let want = format!("oversubscribed {}", n > cpus);
        assert_eq!(d.stdout.lines().filter(|l| l.ends_with(&want)).count(), n as usize, "{d:?}");
    }
}

#[test]
fn randomized_stress_under_each_strategy_and_driver() {
    let _g = serial();
    let messages = if FULL { "100000" } else { "4000" };
    for driver in DRIVERS {
        for strategy in STRATEGIES {
            let m = unique_marker();
            let cmd = job(
                &m,
                4,
                &[("NMAD_DRIVERS", driver), ("NMAD_STRATEGY", strategy)],
                env!("CARGO_BIN_EXE_nmad_stress"),
                &["--messages", messages, "--seed", "42"],
            );
            let d = run_limited(cmd, None, Duration::from_secs(300), |_| {});
            ok_lines(&d, 4);
            assert_eq!(d.stdout.matches(" errors 0 ").count(), 4, "{driver}/{strategy}: {d:?}");
            assert!(d.stdout.contains(&format!("strategy {strategy}")), "{d:?}");
        }
    }
}

#[test]
fn a_flood_of_unmatched_messages_stays_within_the_budget_and_is_delivered() {
    let _g = serial();
    let messages = if FULL { "10000" } else { "2000" };
    for driver in DRIVERS {
        let m = unique_marker();
        let cmd = job(
            &m,
            4,
            &[("NMAD_DRIVERS", driver), ("NMAD_UNEXPECTED_BUDGET", "1048576")],
            env!("CARGO_BIN_EXE_nmad_flood"),
            &["--messages", messages],
        );
        let d = run_limited(cmd, None, Duration::from_secs(300), |_| {});
        assert_eq!(d.code, Some(0), "{driver}: {d:?}");
        assert!(d.stdout.contains(", 0 errors"), "{d:?}");
    }
}
