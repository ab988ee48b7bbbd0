//! `madbench failover`: a job that loses a rail. Two network-namespace hosts joined by two rail
//! networks and a service network (veth pairs on bridges), 2 ranks (one per host) on our library
//! with `NMAD_DRIVERS=tcp:rail1,tcp:rail2` and `split_balance`; `bench/mpi/failover.c` streams
//! 1 MiB messages or sends 256 MiB ones while a thread of rank 0 cuts rail 1: loudly (its TCP
//! connections killed, `ss -K`), silently (`ip link set rail1 down`), both rails with the
//! service network as fallback (`NMAD_FALLBACK=tcp:eth0`), and cut then restored (re-admission).
//! Measured: the time from the cut to traffic flowing again, bandwidth before / during / after,
//! the bandwidth over time around the cut, the 256 MiB transfer with and without a cut, and the
//! time from the restore to the rail's re-admission. Every row carries the `lost`,
//! `duplicates` and `corrupt` counts its runs checked (summed over the rounds). MPICH and Open
//! MPI have no rail failover (Open MPI removed BFO): not run. Needs root, `ip`, `nft`, `ss`;
//! not part of `all`.
//!
//! Owns the namespaces, bridges and veths it makes (removed when done, on failure too) and the
//! launcher script (`ip netns exec` as madrun's `--launcher-exec`); the program is
//! [`crate::mpi`]'s to build.

use super::Ctx;
use super::loss::run_ip as ip;
use super::progress::Progress;
use super::tables::Table;
use crate::plot::Series;
use crate::record::{Impl, Measurement, merge_rounds, parse_program_output};
use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

/// Why the stage cannot run here, if it cannot.
pub fn unavailable() -> Option<String> {
    super::loss::root_with("network namespaces", &[("ip", "-V", "iproute2"), ("ss", "-V", "iproute2")])
}

/// The launcher `madrun --launcher-exec` calls as it would ssh: `SCRIPT [-x] HOST CMD...`.
const LAUNCHER: &str =
    "#!/bin/sh\n[ \"$1\" = -x ] && shift\nhost=$1\nshift\nexec ip netns exec \"$host\" sh -c \"$*\"\n";

/// Two hosts (`<p>h1`, `<p>h2`) with `eth0` on the service bridge and `rail1`, `rail2` on one
/// bridge each; removed when dropped.
pub struct RailHosts {
    prefix: String,
    /// Second octet.third-octet base of the addresses: `10.<net>.<base + k>.<10 + i>`.
    base: u32,
}

impl RailHosts {
    pub fn create() -> Result<RailHosts, String> {
        let pid = std::process::id();
        let h = RailHosts { prefix: format!("mbfo{}", pid % 1_000_000), base: (pid % 60) * 4 };
        h.build()?; // on failure, dropping `h` removes what was made
        Ok(h)
    }

    fn build(&self) -> Result<(), String> {
        let p = &self.prefix;
        for k in 0..3 {
            ip(&["link", "add", &format!("{p}b{k}"), "type", "bridge"])?;
            ip(&["link", "set", &format!("{p}b{k}"), "up"])?;
        }
        ip(&["addr", "add", &format!("{}/24", self.addr(0, 1)), "dev", &format!("{p}b0")])?;
        for i in 1..=2 {
            let ns = self.host(i);
            ip(&["netns", "add", &ns])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            for k in 0..3 {
                let (outside, inside) =
                    (format!("{p}h{i}v{k}"), if k == 0 { "eth0".into() } else { format!("rail{k}") });
                ip(&["link", "add", &outside, "type", "veth", "peer", "name", &inside, "netns", &ns])?;
                ip(&["link", "set", &outside, "master", &format!("{p}b{k}"), "up"])?;
                ip(&["-n", &ns, "addr", "add", &format!("{}/24", self.addr(k, 10 + i)), "dev", &inside])?;
                ip(&["-n", &ns, "link", "set", &inside, "up"])?;
            }
        }
        Ok(())
    }

    /// Host `i`'s namespace (1 or 2).
    pub fn host(&self, i: u32) -> String {
        format!("{}h{i}", self.prefix)
    }

    /// The address of `last` on network `k` (0: service, 1 and 2: rails).
    pub fn addr(&self, k: u32, last: u32) -> String {
        format!("10.{}.{}.{last}", 100 + self.base / 256, self.base % 256 + k)
    }
}

impl Drop for RailHosts {
    fn drop(&mut self) {
        let p = &self.prefix;
        for i in 1..=2 {
            for k in 0..3 {
                let _ = ip(&["link", "del", &format!("{p}h{i}v{k}")]);
            }
            let _ = ip(&["netns", "del", &self.host(i)]);
        }
        for k in 0..3 {
            let _ = ip(&["link", "del", &format!("{p}b{k}")]);
        }
    }
}

/// One kind of failure: what the program does, the cut and its undoing (shell commands run by
/// rank 0's thread, inside host 1), and extra settings.
struct Case {
    kind: &'static str,
    args: Vec<String>,
    cut: String,
    restore: Option<(String, u64)>,
    env: Vec<(&'static str, String)>,
}

fn cases(h: &RailHosts, quick: bool) -> Vec<Case> {
    let h1 = h.host(1);
    let down = |k: u32| format!("ip netns exec {h1} ip link set rail{k} down");
    let up = |k: u32| format!("ip netns exec {h1} ip link set rail{k} up");
    let secs = if quick { "2" } else { "3" };
    let stream = |kind: &str, secs: &str| -> Vec<String> {
        ["stream", "1048576", secs, "1000", kind].iter().map(|s| s.to_string()).collect()
    };
    // The cut comes during the first transfer (64 MiB take about 15 ms here, 256 MiB 60-90).
    let (big, cut_at) = if quick { (64 << 20, "5") } else { (256 << 20, "20") };
    let big = big.to_string();
    let big_args = |cut: &str, kind: &str| -> Vec<String> {
        ["big", big.as_str(), "4", cut, kind].iter().map(|s| s.to_string()).collect()
    };
    vec![
        Case {
            kind: "loud",
            args: stream("loud", secs),
            cut: format!("ip netns exec {h1} ss -K dst {} > /dev/null", h.addr(1, 12)),
            restore: None,
            env: vec![],
        },
        Case { kind: "silent", args: stream("silent", secs), cut: down(1), restore: None, env: vec![] },
        Case {
            kind: "both",
            args: stream("both", secs),
            cut: format!("{}; {}", down(1), down(2)),
            restore: None,
            env: vec![("NMAD_FALLBACK", "tcp:eth0".into())],
        },
        Case {
            kind: "back",
            args: stream("back", "4"),
            cut: down(1),
            restore: Some((up(1), 2000)),
            env: vec![],
        },
        Case { kind: "none", args: big_args("-1", "none"), cut: String::new(), restore: None, env: vec![] },
        Case { kind: "silent", args: big_args(cut_at, "silent"), cut: down(1), restore: None, env: vec![] },
    ]
}

/// Launches per round.
pub fn steps() -> usize {
    6
}

/// Per-run values kept out of the key rounds are merged by (they differ from run to run).
const PER_RUN: [&str; 6] = ["lost", "duplicates", "corrupt", "messages", "pause_ms", "dropped"];

impl Ctx<'_> {
    pub(super) fn failover(&mut self, p: &mut Progress) -> Vec<Measurement> {
        if let Some(why) = unavailable() {
            p.warn(&format!("failover: skipped: {why}"));
            return vec![];
        }
        let (Some(tc), Some(exe)) = (self.tc, self.exes.get(&(Impl::Madmpi, "failover"))) else {
            p.warn("failover: skipped: our library or the program is missing");
            return vec![];
        };
        let hosts = match RailHosts::create() {
            Ok(h) => h,
            Err(e) => {
                *self.failures += 1;
                p.warn(&format!("failover: {e}"));
                return vec![];
            }
        };
        let launcher = tc.work.join("netns-launch.sh");
        if let Err(e) = std::fs::write(&launcher, LAUNCHER).and_then(|()| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755))
        }) {
            *self.failures += 1;
            p.warn(&format!("failover: {}: {e}", launcher.display()));
            return vec![];
        }
        let mut runs = Vec::new();
        let rounds = self.opts.rounds;
        for round in 0..rounds {
            for c in cases(&hosts, self.opts.quick) {
                p.step(&format!("failover round {}/{rounds}: {} ({})", round + 1, c.kind, c.args[0]));
                let mut cmd = Command::new(&tc.madrun);
                cmd.args(["-n", "2", "-hosts", &format!("{},{}", hosts.host(1), hosts.host(2))]);
                cmd.arg("--launcher-exec").arg(&launcher).args(["--pmi-host", &hosts.addr(0, 1)]);
                let mut env = vec![
                    ("NMAD_DRIVERS", "tcp:rail1,tcp:rail2".to_string()),
                    ("NMAD_STRATEGY", "split_balance".into()),
                    ("LD_LIBRARY_PATH", tc.lib_dir.display().to_string()),
                    ("FAILOVER_CUT", c.cut.clone()),
                ];
                if let Some((undo, at)) = &c.restore {
                    env.push(("FAILOVER_RESTORE", undo.clone()));
                    env.push(("FAILOVER_RESTORE_MS", at.to_string()));
                }
                env.extend(c.env.iter().cloned());
                for (k, v) in &env {
                    cmd.args(["-genv", k, v]);
                }
                cmd.arg(exe).args(&c.args).env_remove("PM2_PMI");
                let name = format!("failover {} {}", c.args[0], c.kind);
                self.commands.insert(name.clone(), crate::mpi::describe(&cmd));
                match run(cmd, Duration::from_secs(300)) {
                    Ok(ms) => runs.extend(ms),
                    Err(e) => {
                        *self.failures += 1;
                        p.warn(&format!("{name}: {e}"));
                    }
                }
                for k in 1..=2 {
                    let _ = ip(&["-n", &hosts.host(1), "link", "set", &format!("rail{k}"), "up"]);
                }
            }
        }
        merge_keeping_counts(runs)
    }
}

/// Runs a launch, parses its rows.
fn run(cmd: Command, limit: Duration) -> Result<Vec<Measurement>, String> {
    let out = crate::mpi::run(cmd, limit)?;
    let (_, ms) = parse_program_output(&out, Impl::Madmpi, "tcp×2", "default")?;
    Ok(ms)
}

/// Merges the rounds (median of medians, min of mins, max of maxes) and gives each row the
/// sums of its runs' `lost`, `duplicates` and `corrupt` counts, and how many runs.
fn merge_keeping_counts(runs: Vec<Measurement>) -> Vec<Measurement> {
    // Per key: sums of lost, duplicates, corrupt (None: the rows do not count them), and runs.
    let mut counts: BTreeMap<String, (Option<[f64; 3]>, f64)> = BTreeMap::new();
    let stripped: Vec<Measurement> = runs
        .into_iter()
        .map(|mut m| {
            let got = ["lost", "duplicates", "corrupt"].map(|k| m.extra_f64(k));
            PER_RUN.iter().for_each(|k| {
                m.extra.remove(*k);
            });
            let c = counts.entry(m.key()).or_default();
            if got.iter().all(Option::is_some) {
                let sums = c.0.get_or_insert([0.0; 3]);
                for (s, g) in sums.iter_mut().zip(got) {
                    *s += g.unwrap_or(0.0);
                }
            }
            c.1 += 1.0;
            m
        })
        .collect();
    merge_rounds(stripped)
        .into_iter()
        .map(|m| {
            let (sums, runs) = counts.get(&m.key()).copied().unwrap_or_default();
            let m = m.with("runs", runs);
            match sums {
                Some([l, d, c]) => m.with("lost", l).with("duplicates", d).with("corrupt", c),
                None => m,
            }
        })
        .collect()
}

/// The stage's tables.
pub fn tables(all: &[Measurement]) -> Vec<Table> {
    let of = |case: &str| all.iter().find(|m| m.bench == "failover" && m.case == case);
    let checked = |m: &Measurement| {
        let n = |k: &str| m.extra_f64(k).map_or("-".into(), |v| v.to_string());
        format!("lost {}, dup. {}, corrupt {}; {} runs", n("lost"), n("duplicates"), n("corrupt"), n("runs"))
    };
    let ms_row = |label: &str, m: Option<&Measurement>| {
        m.map(|m| {
            (
                format!("{label} ({})", checked(m)),
                vec![Some(m.stat.median * 1e6), Some(m.stat.min * 1e6), Some(m.stat.max * 1e6)],
            )
        })
    };
    let mut out = Vec::new();
    let mut resume = Table {
        title: "Rail failover: from the cut to traffic flowing again (2 ranks on two namespace hosts, two \
                tcp rails, 1 MiB messages streaming; re-admission: from the restore)"
            .into(),
        row_head: "failure".into(),
        columns: vec!["median".into(), "min".into(), "max".into()],
        unit: "ns".into(),
        ..Default::default()
    };
    for (label, case) in [
        ("loud: rail 1's connections killed", "resume-loud"),
        ("silent: rail 1 down", "resume-silent"),
        ("both rails down, fallback on the service network", "resume-both"),
        ("rail 1 restored: re-admitted after", "readmit-back"),
    ] {
        resume.rows.extend(ms_row(label, of(case)));
    }
    if !resume.rows.is_empty() {
        out.push(resume);
    }
    let mut bw = Table {
        title: "Rail failover: bandwidth before the cut, from the cut to traffic flowing again, and after"
            .into(),
        row_head: "failure".into(),
        columns: vec!["before".into(), "during".into(), "after".into()],
        unit: "MB/s".into(),
        ..Default::default()
    };
    for kind in ["loud", "silent", "both", "back"] {
        let vals: Vec<Option<f64>> = ["before", "during", "after"]
            .iter()
            .map(|ph| of(&format!("bw-{ph}-{kind}")).map(|m| m.stat.median))
            .collect();
        if vals.iter().any(Option::is_some) {
            bw.rows.push((kind.to_string(), vals));
        }
    }
    if !bw.rows.is_empty() {
        out.push(bw);
    }
    let mut big = Table {
        title: "Rail failover: a large rendezvous (split over both rails), without a cut and with rail 1 \
                cut 20 ms into it (5 ms with --quick)"
            .into(),
        row_head: "run".into(),
        columns: vec!["median".into(), "min".into(), "max".into()],
        unit: "ns".into(),
        ..Default::default()
    };
    for (label, case) in [("no cut", "big-none"), ("cut in flight (the transfer cut)", "big-cut-silent")] {
        if let Some(m) = of(case) {
            let size = crate::mpi::human_bytes(m.size);
            big.rows.extend(ms_row(&format!("{size}, {label}"), Some(m)));
        }
    }
    if !big.rows.is_empty() {
        out.push(big);
    }
    out
}

/// The bandwidth around the cut, one series per kind of failure: x = ms from the cut.
pub fn timelines(all: &[Measurement]) -> Vec<Series> {
    ["loud", "silent", "both", "back"]
        .iter()
        .filter_map(|kind| {
            let mut points: Vec<(f64, f64)> = all
                .iter()
                .filter(|m| m.bench == "failover" && m.case == format!("timeline-{kind}"))
                .filter_map(|m| Some((m.extra_f64("t_ms")?, m.stat.median)))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            (!points.is_empty()).then(|| Series { name: kind.to_string(), points })
        })
        .collect()
}
