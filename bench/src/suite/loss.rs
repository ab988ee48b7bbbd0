//! `madbench loss`: goodput and latency tails under random packet loss. Each rate gets a fresh
//! network namespace whose nftables rule drops that share of every TCP and UDP packet leaving
//! a socket on its loopback (each packet passes the output hook once: both directions lose
//! it), the same rule for every library. Inside run, in interleaved rounds, the streaming
//! (`pingpong bw lossy`) and the one-by-one round trips (`pingpong tail`) of ours over udp and
//! tcp and of MPICH and Open MPI over their tcp. Needs root, `ip` and `nft`; not part of `all`.
//!
//! Owns the namespaces it makes (removed when done, on failure too); the launches are
//! [`crate::mpi`]'s, wrapped in `ip netns exec`; the tables and the goodput curves are built
//! here. Every measurement carries its rate (`loss`, percent) and the packets the rule dropped
//! over all runs at that rate (`dropped`), so the CSV files tell rates apart.

use super::Ctx;
use super::progress::Progress;
use super::tables::Table;
use crate::mpi::{Launch, Transport, describe, human_bytes};
use crate::plot::Series;
use crate::record::{Impl, Measurement, merge_rounds};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The hang limit of a launch at `percent` % loss. A lossy launch can be slow: the kernel's
/// TCP waits 200 ms or more per timeout, and at 5 % about one round trip in ten of `tail`
/// times out (the tcp columns' full `tail` takes about 4 minutes there).
fn hang(percent: f64) -> Duration {
    Duration::from_secs(600) + Duration::from_secs_f64(120.0 * percent)
}

/// The columns of the tables: (library, transport).
const RUNS: [(Impl, Transport); 4] = [
    (Impl::Madmpi, Transport::Udp),
    (Impl::Madmpi, Transport::Tcp),
    (Impl::Mpich, Transport::Tcp),
    (Impl::OpenMpi, Transport::Tcp),
];

/// Why the stage cannot run here, if it cannot.
pub fn unavailable() -> Option<String> {
    root_with("network namespaces and nftables", &[("ip", "-V", "iproute2"), ("nft", "-v", "nftables")])
}

/// Why a stage that needs root (for `what`) and `tools` (name, an argument that makes it
/// succeed, its Debian package) cannot run here, if it cannot.
pub fn root_with(what: &str, tools: &[(&str, &str, &str)]) -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some(format!("it needs root ({what})"));
    }
    for &(tool, arg, package) in tools {
        let ok = Command::new(tool).arg(arg).stdout(Stdio::null()).stderr(Stdio::null()).status();
        if !ok.is_ok_and(|s| s.success()) {
            return Some(format!("`{tool}` is missing (Debian: apt-get install {package})"));
        }
    }
    None
}

/// The nftables rule dropping `percent` % of TCP and UDP packets (in steps of 0.001 %).
pub fn rule(percent: f64) -> String {
    let n = (percent * 1000.0).round() as u64;
    format!("meta l4proto {{ tcp, udp }} numgen random mod 100000 < {n} counter drop")
}

/// A network namespace whose loopback loses a share of its packets; deleted when dropped.
pub struct LossyNamespace {
    name: String,
}

impl LossyNamespace {
    pub fn create(percent: f64, seq: usize) -> Result<LossyNamespace, String> {
        let name = format!("madbench-loss-{}-{seq}", std::process::id());
        run_ip(&["netns", "add", &name])?;
        let ns = LossyNamespace { name };
        ns.exec(&["ip", "link", "set", "lo", "up"])?;
        ns.exec(&["nft", "add", "table", "inet", "madbench_loss"])?;
        ns.exec(&[
            "nft",
            "add",
            "chain",
            "inet",
            "madbench_loss",
            "out",
            "{ type filter hook output priority 0; }",
        ])?;
        let rule = rule(percent);
        let mut args = vec!["nft", "add", "rule", "inet", "madbench_loss", "out"];
        args.extend(rule.split(' '));
        ns.exec(&args)?;
        Ok(ns)
    }

    fn exec(&self, args: &[&str]) -> Result<(), String> {
        let mut a = vec!["netns", "exec", &self.name];
        a.extend_from_slice(args);
        run_ip(&a)
    }

    /// `cmd` run inside the namespace, with the same variables.
    pub fn wrap(&self, cmd: &Command) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]).arg(cmd.get_program()).args(cmd.get_args());
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        c
    }

    /// Packets the rule dropped so far.
    pub fn dropped(&self) -> Option<u64> {
        let out =
            Command::new("ip").args(["netns", "exec", &self.name, "nft", "list", "ruleset"]).output().ok()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let after = text.split("counter packets ").nth(1)?;
        after.split_whitespace().next()?.parse().ok()
    }
}

impl Drop for LossyNamespace {
    fn drop(&mut self) {
        let _ = run_ip(&["netns", "del", &self.name]);
    }
}

/// `ip ARGS`, its error output in the error.
pub(super) fn run_ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// Launches per round and rate (each column, streaming and round trips).
pub fn steps(libs: &[Impl]) -> usize {
    2 * RUNS.iter().filter(|(i, _)| libs.contains(i)).count()
}

/// The figure's name under loss (`bw` → `loss-bw`), so that it never mixes with the lossless
/// tables.
fn lossy_bench(bench: &str) -> String {
    format!("loss-{bench}")
}

impl Ctx<'_> {
    /// Every rate of `--loss`: a namespace, `rounds` interleaved rounds of every column.
    pub(super) fn loss(&mut self, p: &mut Progress) -> Vec<Measurement> {
        if let Some(why) = unavailable() {
            p.warn(&format!("loss: skipped: {why}"));
            return vec![];
        }
        let mut all = Vec::new();
        for (seq, &percent) in self.opts.loss.iter().enumerate() {
            let ns = match LossyNamespace::create(percent, seq) {
                Ok(ns) => ns,
                Err(e) => {
                    *self.failures += 1;
                    p.warn(&format!("loss {percent} %: {e}"));
                    continue;
                }
            };
            let mut ms = Vec::new();
            let rounds = self.opts.rounds;
            for round in 0..rounds {
                let mut order: Vec<(Impl, Transport)> =
                    RUNS.into_iter().filter(|(i, _)| self.opts.libs.contains(i)).collect();
                if round % 2 == 1 {
                    order.reverse();
                }
                for (imp, t) in order {
                    for what in ["bw", "tail"] {
                        p.step(&format!(
                            "loss {percent} % round {}/{rounds}: {what}, {} over {}",
                            round + 1,
                            imp.label(),
                            t.label()
                        ));
                        ms.extend(self.lossy_launch(p, &ns, percent, imp, t, what));
                    }
                }
            }
            // One counter for every run at this rate (the total of packets is not counted).
            let dropped = ns.dropped();
            let shown = dropped.map_or("?".into(), |n| n.to_string());
            p.note(&format!("loss {percent} %: {shown} packets dropped"));
            all.extend(merge_rounds(ms).into_iter().map(|m| match dropped {
                Some(n) => m.with("dropped", n),
                None => m,
            }));
        }
        all
    }

    fn lossy_launch(
        &mut self,
        p: &mut Progress,
        ns: &LossyNamespace,
        percent: f64,
        imp: Impl,
        t: Transport,
        what: &str,
    ) -> Vec<Measurement> {
        let (Some(tc), Some(exe)) = (self.tc, self.exes.get(&(imp, "pingpong"))) else {
            return vec![];
        };
        let mut args = vec![what.to_string(), self.opts.reps.to_string(), "lossy".into()];
        if self.opts.quick {
            args.push("quick".into());
        }
        let policy = if imp == Impl::Madmpi { self.opts.policy.as_deref() } else { None };
        let l = Launch { imp, transport: t, policy, exe, args, cpus: self.cpus, ranks: 2 };
        let cmd = ns.wrap(&l.command(tc));
        let name = format!("loss {percent} % {what} {} {}", imp.key(), t.label());
        self.commands.insert(name.clone(), describe(&cmd));
        match l.run_command(cmd, hang(percent)) {
            Ok(ms) => ms
                .into_iter()
                .map(|mut m| {
                    m.bench = lossy_bench(&m.bench);
                    m.with("loss", percent)
                })
                .collect(),
            Err(e) => {
                self.run_failed(p, imp, &format!("{name}: {e}"));
                vec![]
            }
        }
    }
}

/// The loss stage's tables: per rate, goodput, and latency medians and 99th percentiles.
pub fn tables(all: &[Measurement]) -> Vec<Table> {
    let mut out = Vec::new();
    for rate in rates(all.iter()) {
        let at = |bench: &str| -> Vec<&Measurement> {
            all.iter()
                .filter(|m| m.bench == lossy_bench(bench) && m.extra_f64("loss") == Some(rate))
                .collect()
        };
        let cols: Vec<(Impl, &str)> = RUNS.iter().map(|&(i, t)| (i, t.label())).collect();
        let dropped = all
            .iter()
            .find(|m| m.extra_f64("loss") == Some(rate))
            .and_then(|m| m.extra_f64("dropped"))
            .map_or(String::new(), |n| format!(" ({n} packets dropped by the rule over all its runs)"));
        let name = |&(i, t): &(Impl, &str)| format!("{} {t}", i.label());
        // Ratios: ours over udp against each other column.
        let bw = at("bw");
        if !bw.is_empty() {
            let mut t = Table {
                title: format!(
                    "Goodput under {rate} % packet loss{dropped}, MB/s, 8 in flight (ours over udp and \
                     tcp, the others over tcp; ratio > 1: udp better)"
                ),
                row_head: "size".into(),
                columns: cols.iter().map(name).collect(),
                ratios: vec![(0, 2), (0, 3), (0, 1)],
                unit: "MB/s".into(),
                ..Default::default()
            };
            t.rows = rows(&bw, &cols);
            out.push(t);
        }
        let (p50, p99) = (at("tail50"), at("tail99"));
        if !p50.is_empty() {
            let mut t = Table {
                title: format!(
                    "One-way latency under {rate} % packet loss{dropped}, median and 99th percentile of \
                     single round trips (ratios: how many times udp's 99th percentile is shorter)"
                ),
                row_head: "size".into(),
                unit: "ns".into(),
                ..Default::default()
            };
            let mut vals: Vec<Vec<(String, Vec<Option<f64>>)>> = Vec::new();
            for c in &cols {
                t.columns.push(format!("{} p50", name(c)));
                t.columns.push(format!("{} p99", name(c)));
                vals.push(rows(&p50, std::slice::from_ref(c)));
                vals.push(rows(&p99, std::slice::from_ref(c)));
            }
            // The others' p99 over udp's (udp's is 100-1000× shorter: its ratio would read 0.00).
            t.ratios = vec![(5, 1), (7, 1), (3, 1)];
            let labels: Vec<String> = vals.iter().flat_map(|v| v.iter().map(|r| r.0.clone())).collect();
            let mut sizes: Vec<String> = Vec::new();
            for l in labels {
                if !sizes.contains(&l) {
                    sizes.push(l);
                }
            }
            for s in sizes {
                let row = vals.iter().map(|v| v.iter().find(|r| r.0 == s).and_then(|r| r.1[0])).collect();
                t.rows.push((s, row));
            }
            out.push(t);
        }
    }
    out
}

/// The goodput curves, per rate (ascending): one series per column, x = size, y = MB/s.
pub fn goodput_curves(all: &[Measurement]) -> Vec<(f64, Vec<Series>)> {
    rates(all.iter().filter(|m| m.bench == lossy_bench("bw")))
        .into_iter()
        .map(|rate| {
            let series = RUNS
                .iter()
                .filter_map(|&(imp, t)| {
                    let mut points: Vec<(f64, f64)> = all
                        .iter()
                        .filter(|m| {
                            m.bench == lossy_bench("bw")
                                && m.extra_f64("loss") == Some(rate)
                                && m.imp == imp
                                && m.transport == t.label()
                        })
                        .map(|m| (m.size as f64, m.stat.median))
                        .collect();
                    points.sort_by(|a, b| a.0.total_cmp(&b.0));
                    (!points.is_empty())
                        .then(|| Series { name: format!("{} {}", imp.label(), t.label()), points })
                })
                .collect();
            (rate, series)
        })
        .collect()
}

/// The loss rates of `ms`, ascending, each once.
fn rates<'a>(ms: impl Iterator<Item = &'a Measurement>) -> Vec<f64> {
    let mut rates: Vec<f64> = ms.filter_map(|m| m.extra_f64("loss")).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    rates
}

/// One row per size (ascending) of `ms`, one value per column.
fn rows(ms: &[&Measurement], cols: &[(Impl, &str)]) -> Vec<(String, Vec<Option<f64>>)> {
    let mut sizes: Vec<u64> = ms.iter().map(|m| m.size).collect();
    sizes.sort();
    sizes.dedup();
    sizes
        .into_iter()
        .map(|s| {
            let vals = cols
                .iter()
                .map(|&(i, t)| {
                    ms.iter().find(|m| m.size == s && m.imp == i && m.transport == t).map(|m| m.stat.median)
                })
                .collect();
            (human_bytes(s), vals)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Stat;

    #[test]
    fn the_rule_drops_the_share_asked() {
        assert!(rule(1.0).ends_with("numgen random mod 100000 < 1000 counter drop"));
        assert!(rule(0.5).contains("< 500 "));
        assert!(rule(0.0).contains("< 0 "));
        assert!(rule(1.0).starts_with("meta l4proto { tcp, udp }"));
    }

    #[test]
    fn launches_are_wrapped_with_their_variables() {
        let ns = LossyNamespace { name: "madbench-loss-test".into() };
        let mut c = Command::new("/l/madrun");
        c.arg("-n").arg("2").env("NMAD_DRIVERS", "udp:lo");
        let d = describe(&ns.wrap(&c));
        assert!(d.contains("NMAD_DRIVERS=udp:lo"), "{d}");
        assert!(d.ends_with("ip netns exec madbench-loss-test /l/madrun -n 2"), "{d}");
        // The launches of the stage: each library's own variables survive the wrapping.
        let tc = crate::mpi::Toolchain {
            lib_dir: "/l".into(),
            madrun: "/l/madrun".into(),
            work: "/l/w".into(),
            pin: "/l/w/pin.sh".into(),
        };
        for (imp, t) in RUNS {
            let l = Launch {
                imp,
                transport: t,
                policy: None,
                exe: std::path::Path::new("/l/w/pingpong"),
                args: vec!["tail".into(), "1".into(), "lossy".into()],
                cpus: "0,1",
                ranks: 2,
            };
            let d = describe(&ns.wrap(&l.command(&tc)));
            assert!(d.contains(" ip netns exec madbench-loss-test "), "{d}");
            assert!(d.ends_with("/l/w/pin.sh /l/w/pingpong tail 1 lossy"), "{d}");
            assert!(d.contains("MPI_BENCH_CPUS=0,1"), "{d}");
            let own = match (imp, t) {
                (Impl::Madmpi, Transport::Udp) => "NMAD_DRIVERS=udp:lo",
                (Impl::Madmpi, _) => "NMAD_DRIVERS=tcp:lo",
                (Impl::Mpich, _) => "UCX_TLS=tcp,self",
                _ => "btl_tcp_if_include lo",
            };
            assert!(d.contains(own), "{d}");
        }
        std::mem::forget(ns); // no namespace to delete
    }

    #[test]
    fn hang_limits_grow_with_the_loss() {
        assert_eq!(hang(0.0), Duration::from_secs(600));
        assert!(hang(5.0) > hang(1.0) && hang(5.0) >= Duration::from_secs(1200));
    }

    #[test]
    fn tables_compare_udp_with_every_tcp_per_rate() {
        let m = |bench: &str, imp, t: &str, size, v: f64, rate: f64| {
            Measurement::new(bench, "", imp, t, size, Stat { median: v, min: v, max: v }, "x")
                .with("loss", rate)
        };
        let ms = vec![
            m("loss-bw", Impl::Madmpi, "udp", 65536, 3000.0, 1.0).with("dropped", 397),
            m("loss-bw", Impl::Madmpi, "tcp", 65536, 1500.0, 1.0),
            m("loss-bw", Impl::Mpich, "tcp", 65536, 100.0, 1.0),
            m("loss-bw", Impl::Madmpi, "udp", 65536, 2000.0, 5.0),
            m("loss-tail50", Impl::Madmpi, "udp", 8, 5000.0, 5.0),
            m("loss-tail99", Impl::Madmpi, "udp", 8, 300_000.0, 5.0),
            m("loss-tail99", Impl::Mpich, "tcp", 8, 105_000_000.0, 5.0),
            m("bw", Impl::Madmpi, "udp", 65536, 9999.0, 0.0),
        ];
        let t = tables(&ms);
        assert_eq!(t.len(), 3, "goodput at 1 %, goodput and latency at 5 %");
        let r = t[0].render();
        assert!(
            t[0].title.starts_with("Goodput under 1 % packet loss (397 packets dropped"),
            "{}",
            t[0].title
        );
        assert!(t[1].title.starts_with("Goodput under 5 % packet loss, MB/s"), "{}", t[1].title);
        let row = r.lines().find(|l| l.starts_with("| 64 KiB")).unwrap();
        assert_eq!(row, "| 64 KiB | 3000 | 1500 | 100 | - | 30.00 | - | 2.00 |");
        let lat = t[2].render();
        assert!(lat.contains("madmpi udp p99"), "{lat}");
        let row = lat.lines().find(|l| l.starts_with("| 8 B")).unwrap();
        assert!(row.contains("300.00 µs") && row.contains("| 350.00 |"), "{row}");
        let curves = goodput_curves(&ms);
        assert_eq!(curves.len(), 2);
        assert_eq!(curves[0].0, 1.0);
        let names: Vec<&str> = curves[0].1.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["madmpi udp", "madmpi tcp", "MPICH tcp"]);
        assert_eq!(curves[1].1[0].points, [(65536.0, 2000.0)]);
    }
}
