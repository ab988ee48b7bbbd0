//! `madbench all --quick` runs to the end and its JSON is well formed: every line one object
//! with the documented keys, every benchmark present, every implementation whose tools are
//! installed present. No timing is asserted (figures belong to the benchmark's report).
//!
//! Release builds only: madbench finds `libmpi.so`, `madrun` and `mpicc` beside itself, and
//! `./run test` builds those in release mode before the tests (a debug smoke run would also
//! measure nothing worth reading).

use std::path::Path;
use std::process::{Command, Stdio};

fn have(tool: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().is_ok_and(|o| o.status.success())
}

#[test]
#[cfg_attr(debug_assertions, ignore = "release builds only: madbench needs the release libmpi.so beside it")]
fn quick_run_writes_well_formed_json_tables_and_plots() {
    let exe = Path::new(env!("CARGO_BIN_EXE_madbench"));
    let dir = std::env::temp_dir().join(format!("madbench-smoke-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let json = dir.join("m.json");
    let mut libs = vec!["madmpi"];
    // ./run test installs MPICH and Open MPI; a developer's machine may lack one.
    if have("mpicc.mpich") && have("mpiexec.hydra") {
        libs.push("mpich");
    }
    if have("mpicc.openmpi") && have("mpiexec.openmpi") {
        libs.push("openmpi");
    }
    let out = Command::new(exe)
        .args(["all", "--quick", "--quiet", "--only", &libs.join(",")])
        .arg(format!("--json={}", json.display()))
        .arg("--out")
        .arg(&dir)
        .output()
        .expect("madbench runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "madbench failed ({}):\n{stdout}\n{stderr}", out.status);

    let text = std::fs::read_to_string(&json).expect("the JSON file");
    let mut benches = std::collections::BTreeSet::new();
    let mut impls = std::collections::BTreeSet::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        for k in ["bench", "impl", "transport", "size", "threads", "policy", "median", "min", "max", "unit"] {
            assert!(v.get(k).is_some(), "no {k} in {line}");
        }
        for k in ["median", "min", "max"] {
            assert!(v[k].as_f64().is_some_and(f64::is_finite), "{k} not a number in {line}");
        }
        assert!(
            v["min"].as_f64() <= v["median"].as_f64() && v["median"].as_f64() <= v["max"].as_f64(),
            "{line}"
        );
        benches.insert(v["bench"].as_str().unwrap().to_string());
        impls.insert(v["impl"].as_str().unwrap().to_string());
    }
    for b in [
        "limits",
        "pingpong",
        "bw",
        "overlap",
        "overlap-paper",
        "reactivity",
        "overhead",
        "sched",
        "mt",
        "coll",
        "rma",
        "rma-bw",
        "rma-passive",
        "io",
    ] {
        assert!(benches.contains(b), "no {b} measurement in {benches:?}");
    }
    for i in libs.iter().chain(&["limit", "os"]) {
        assert!(impls.contains(*i), "no {i} measurement in {impls:?}");
    }
    for f in [
        "latency-shm.png",
        "bandwidth-tcp.png",
        "overlap-madmpi-shm.png",
        "reactivity-os.png",
        "sched.png",
        "rma-lock-put-shm.png",
        "io-checkerboard-write-tmpfs.png",
    ] {
        let bytes = std::fs::read(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(bytes.starts_with(b"\x89PNG"), "{f} is not a PNG");
    }
    for f in ["pingpong.csv", "overlap.csv", "io.csv", "config.json"] {
        assert!(dir.join(f).exists(), "{f} missing");
    }
    assert!(stdout.contains("MPI one-way latency over shm"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `madbench coll-algos --quick` measures every algorithm it lists, and the default choice,
/// for each swept operation and job size.
#[test]
#[cfg_attr(debug_assertions, ignore = "release builds only: madbench needs the release libmpi.so beside it")]
fn coll_algos_measures_every_algorithm() {
    let exe = Path::new(env!("CARGO_BIN_EXE_madbench"));
    let dir = std::env::temp_dir().join(format!("madbench-algos-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let json = dir.join("m.json");
    let out = Command::new(exe)
        .args(["coll-algos", "--quick", "--quiet", "--no-plots", "--only", "madmpi"])
        .arg(format!("--json={}", json.display()))
        .arg("--out")
        .arg(&dir)
        .output()
        .expect("madbench runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "madbench failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&json).expect("the JSON file");
    let mut seen = std::collections::BTreeSet::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(v["bench"], "coll-algos", "{line}");
        let algo = v["algorithm"].as_str().unwrap_or_else(|| panic!("no algorithm in {line}"));
        seen.insert((
            v["case"].as_str().unwrap().to_string(),
            algo.to_string(),
            v["threads"].as_u64().unwrap(),
        ));
    }
    for (op, _, algos) in bench::suite::coll_algos::ALGORITHMS {
        for algo in algos.iter().chain(&["default"]) {
            for n in bench::suite::coll_algos::RANKS {
                assert!(
                    seen.contains(&(op.to_string(), algo.to_string(), u64::from(n))),
                    "{op} {algo} ×{n}: {seen:?}"
                );
            }
        }
    }
    assert!(stdout.contains("each forced in turn"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `madbench loss` makes its lossy namespace, runs ours over udp and tcp in it, prints both
/// tables (with numbers in the udp columns) and removes the namespace. Root with `ip` and `nft`
/// only (what `./run test` has); skipped otherwise.
#[test]
#[cfg_attr(debug_assertions, ignore = "release builds only: madbench needs the release libmpi.so beside it")]
fn loss_stage_measures_inside_a_lossy_namespace_and_cleans_up() {
    if let Some(why) = bench::suite::loss::unavailable() {
        eprintln!("skipped: madbench loss: {why}");
        return;
    }
    let dir = std::env::temp_dir().join(format!("madbench-loss-{}", std::process::id()));
    let child = spawn_madbench(
        &["loss", "--quick", "--quiet", "--loss", "1", "--only", "madmpi", "--rounds", "1", "--reps", "1"],
        &dir,
    );
    // Its namespaces are named after its pid (other madbench runs may have theirs meanwhile).
    let ours = format!("madbench-loss-{}-", child.id());
    let out = child.wait_with_output().expect("madbench runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "madbench failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let goodput = stdout.lines().skip_while(|l| !l.starts_with("Goodput under 1 % packet loss"));
    let row = goodput.into_iter().find(|l| l.starts_with("| 64 KiB")).expect("a goodput row");
    let udp: f64 = row.split('|').nth(2).unwrap().trim().parse().unwrap_or_else(|_| panic!("{row}"));
    assert!(udp > 0.0, "{row}");
    assert!(stdout.contains("packets dropped by the rule"), "{stdout}");
    // The latency table: udp's p50 and p99 (columns 1 and 2) are times.
    let latency = stdout.lines().skip_while(|l| !l.starts_with("One-way latency under 1 % packet loss"));
    let row = latency.into_iter().find(|l| l.starts_with("| 8 B")).expect("a latency row");
    for cell in row.split('|').skip(2).take(2) {
        assert!(cell.trim().ends_with("s") && cell.trim() != "-", "{row}");
    }
    let netns = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let left = String::from_utf8_lossy(&netns.stdout).into_owned();
    assert!(!left.lines().any(|l| l.starts_with(&ours)), "a namespace was left behind: {left}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `madbench failover --quick` makes its two hosts and rails, cuts and restores rail 1 in each
/// way, prints the resume table with a time in every row and nothing lost, duplicated or
/// corrupt, writes the JSON rows with those counts, and removes its namespaces and bridges.
/// Root with `ip` and `ss` only (what `./run test` has); skipped otherwise.
#[test]
#[cfg_attr(debug_assertions, ignore = "release builds only: madbench needs the release libmpi.so beside it")]
fn failover_stage_cuts_rails_and_cleans_up() {
    if let Some(why) = bench::suite::failover::unavailable() {
        eprintln!("skipped: madbench failover: {why}");
        return;
    }
    let dir = std::env::temp_dir().join(format!("madbench-failover-{}", std::process::id()));
    let json = dir.join("failover.json");
    let json_arg = format!("--json={}", json.display());
    let child = spawn_madbench(&["failover", "--quick", "--quiet", "--rounds", "1", &json_arg], &dir);
    let ours = format!("mbfo{}h", child.id() % 1_000_000);
    let out = child.wait_with_output().expect("madbench runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "madbench failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let table = stdout.lines().skip_while(|l| !l.starts_with("Rail failover: from the cut"));
    let rows: Vec<&str> =
        table.into_iter().filter(|l| l.starts_with("| ") && !l.starts_with("| failure")).take(4).collect();
    assert_eq!(rows.len(), 4, "{stdout}");
    for row in rows {
        assert!(row.split('|').nth(2).is_some_and(|c| c.trim().ends_with('s')), "{row}");
    }
    let text = std::fs::read_to_string(&json).expect("the JSON file");
    let resumes: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &serde_json::Value| v["case"].as_str().is_some_and(|c| c.starts_with("resume-")))
        .collect();
    for case in ["resume-loud", "resume-silent"] {
        assert!(resumes.iter().any(|v| v["case"] == case), "no {case} row: {text}");
    }
    for v in resumes {
        assert_eq!((v["lost"].as_f64(), v["duplicates"].as_f64()), (Some(0.0), Some(0.0)), "{v}");
    }
    let netns = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let left = String::from_utf8_lossy(&netns.stdout).into_owned();
    assert!(!left.lines().any(|l| l.starts_with(&ours)), "a namespace was left behind: {left}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// madbench started with `args` and `--out dir`, its output piped.
fn spawn_madbench(args: &[&str], dir: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_madbench"))
        .args(args)
        .arg("--out")
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("madbench runs")
}
