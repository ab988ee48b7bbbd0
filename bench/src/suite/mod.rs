//! The `madbench` suite: which benchmarks run, in which order, with which parameters, and what
//! is printed and written. The measuring itself is elsewhere: the C programs of `bench/mpi/`
//! under three MPI libraries ([`crate::mpi`]), our runtime's own ranks ([`crate::ranks`]), the
//! scheduler ([`crate::sched`]) and the machine's limits ([`crate::limits`]).
//!
//! Files: [`options`] reads the command line, [`tables`] arranges the printed tables,
//! [`output`] writes JSON and CSV, [`figures`] draws the PNG plots, [`progress`] tells where
//! a long run is.

pub mod coll_algos;
pub mod failover;
pub mod figures;
pub mod io;
pub mod loss;
pub mod options;
pub mod output;
pub mod progress;
pub mod rma;
pub mod tables;

use crate::mpi::{Launch, Toolchain, Transport, describe};
use crate::record::{Impl, Measurement, merge_rounds};
use options::{Options, Stage};
use progress::Progress;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// The pioman policies the reactivity benchmark compares.
pub const POLICIES: [&str; 4] = ["poll", "block", "adaptive", "timer"];
/// Compute threads per core on the receiver, in the reactivity benchmark.
pub const COMPUTE_THREADS: [u32; 4] = [0, 1, 2, 4];
/// Job sizes of the collectives benchmark.
pub const COLL_RANKS: [u32; 3] = [2, 4, 8];
/// A program that has not ended after this is killed (and reported).
const HANG: Duration = Duration::from_secs(240);

/// Runs the suite; `exe` is madbench itself (its directory holds `libmpi.so` and `madrun`, and
/// it is the rank program of [`crate::ranks`]). The exit code.
pub fn run(opts: &Options, exe: &Path) -> i32 {
    let (c0, c1) = crate::two_cpus();
    let cpus = format!("{c0},{c1}");
    let mut p = Progress::new(count_steps(opts), opts.quiet);
    print_configuration(opts, &cpus);

    let tc = match Toolchain::locate(exe) {
        Ok(tc) => Some(tc),
        Err(e) => {
            p.warn(&format!("the MPI benchmarks cannot run: {e}"));
            None
        }
    };
    // The C programs, built for each library whose compiler is there.
    let mut exes: BTreeMap<(Impl, &str), std::path::PathBuf> = BTreeMap::new();
    if let Some(tc) = &tc {
        for prog in opts.programs() {
            for imp in opts.libs.iter().copied() {
                match tc.compile(imp, prog) {
                    Ok(e) => {
                        exes.insert((imp, prog), e);
                    }
                    Err(e) => p.warn(&format!("{} left out of {prog}: {e}", imp.label())),
                }
            }
        }
    }
    let mut all: Vec<Measurement> = Vec::new();
    let mut commands: BTreeMap<String, String> = BTreeMap::new();
    let mut failures = 0;
    let mut ctx = Ctx {
        opts,
        tc: tc.as_ref(),
        exes: &exes,
        cpus: &cpus,
        commands: &mut commands,
        failures: &mut failures,
    };
    for stage in opts.stages() {
        let ms = match stage {
            Stage::Limits => {
                p.step("physical limits: cache line, memcpy, process_vm_readv, raw TCP");
                crate::limits::measure(opts.reps, opts.quick, (c0, c1), &mut |s| p.note(s))
            }
            Stage::Pingpong | Stage::Bw => {
                // Both come from one program run when both are asked for.
                if stage == Stage::Bw && opts.has(Stage::Pingpong) {
                    continue;
                }
                ctx.pingpong_bw(&mut p)
            }
            Stage::Overlap => ctx.programs(&mut p, "overlap", &opts.transports, &[None]),
            Stage::Reactivity => {
                let mut ms = ctx.programs(&mut p, "reactivity", &[Transport::Shm], &POLICIES.map(Some));
                if !opts.libs.contains(&Impl::Madmpi) {
                    ms
                } else {
                    p.step("reactivity with marcel user threads (madmpi, per policy)");
                    match crate::ranks::reactivity_marcel(
                        exe,
                        &POLICIES,
                        &COMPUTE_THREADS,
                        opts.reps,
                        opts.quick,
                        (c0, c1),
                        &mut |s| p.note(s),
                    ) {
                        Ok(v) => ms.extend(v),
                        Err(e) => {
                            *ctx.failures += 1;
                            p.warn(&format!("reactivity (marcel): {e}"));
                        }
                    }
                    ms
                }
            }
            Stage::Overhead => {
                p.step("progression overhead: nmad polled directly, through pioman poll and block");
                match crate::ranks::overhead(exe, opts.reps, opts.quick, (c0, c1), &mut |s| p.note(s)) {
                    Ok(v) => v,
                    Err(e) => {
                        *ctx.failures += 1;
                        p.warn(&format!("overhead: {e}"));
                        vec![]
                    }
                }
            }
            Stage::Sched => {
                p.step("scheduler: marcel user threads versus OS threads");
                crate::sched::measure(opts.reps, opts.quick, &mut |s| p.note(s))
            }
            Stage::Mt => ctx.programs(&mut p, "mt", &[Transport::Shm], &[None]),
            Stage::Coll => ctx.collectives(&mut p, (c0, c1)),
            Stage::CollAlgos => ctx.coll_algos(&mut p, (c0, c1)),
            Stage::Rma => ctx.rma(&mut p),
            Stage::Io => ctx.io(&mut p, (c0, c1)),
            Stage::Loss => ctx.loss(&mut p),
            Stage::Failover => ctx.failover(&mut p),
        };
        p.clear();
        print_tables(stage, &ms, &all);
        all.extend(ms);
    }
    p.clear();
    finish(opts, &all, &commands, &cpus, &mut p);
    println!("madbench: {} measurements in {:.0} s", all.len(), p.elapsed_s());
    if failures > 0 || all.is_empty() {
        eprintln!("madbench: {} runs failed (see above)", failures.max(1));
        return 1;
    }
    0
}

/// What the stages share.
struct Ctx<'a> {
    opts: &'a Options,
    tc: Option<&'a Toolchain>,
    exes: &'a BTreeMap<(Impl, &'a str), std::path::PathBuf>,
    cpus: &'a str,
    commands: &'a mut BTreeMap<String, String>,
    failures: &'a mut usize,
}

impl Ctx<'_> {
    /// A run of `imp` failed: ours fails madbench (its exit code); another library's is
    /// reported and its points are missing, since it is not ours to mend (MPICH's one-sided
    /// calls over UCX's tcp once ran past the hang limit on a loaded CI machine).
    fn run_failed(&mut self, p: &mut Progress, imp: Impl, what: &str) {
        if imp == Impl::Madmpi {
            *self.failures += 1;
            p.warn(what);
        } else {
            p.warn(&format!("{what}\n(another library's run: reported, not counted as a failure)"));
        }
    }

    /// Latency and bandwidth: `rounds` interleaved rounds of every library and transport (a noisy
    /// minute then hits every library, not one), merged by median.
    fn pingpong_bw(&mut self, p: &mut Progress) -> Vec<Measurement> {
        let what = match (self.opts.has(Stage::Pingpong), self.opts.has(Stage::Bw)) {
            (true, true) => "both",
            (true, false) => "lat",
            _ => "bw",
        };
        let mut args = vec![what.to_string(), self.opts.reps.to_string()];
        if self.opts.quick {
            args.push("quick".into());
        }
        let mut ms = Vec::new();
        let rounds = self.opts.rounds;
        for round in 0..rounds {
            let mut order: Vec<(Transport, Impl)> = self
                .opts
                .transports
                .iter()
                .flat_map(|&t| self.opts.libs.iter().map(move |&i| (t, i)))
                .collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for (t, imp) in order {
                p.step(&format!(
                    "pingpong/bw round {}/{rounds}: {} over {}",
                    round + 1,
                    imp.label(),
                    t.label()
                ));
                ms.extend(self.launch(p, "pingpong", imp, t, None, args.clone()));
            }
        }
        merge_rounds(ms)
    }

    /// One run of `prog` per library, transport and (ours) policy.
    fn programs(
        &mut self,
        p: &mut Progress,
        prog: &str,
        transports: &[Transport],
        policies: &[Option<&str>],
    ) -> Vec<Measurement> {
        let mut args = vec![self.opts.reps.to_string()];
        if self.opts.quick {
            args.push("quick".into());
        }
        let mut ms = Vec::new();
        for &t in transports {
            for &imp in &self.opts.libs {
                let pols: Vec<Option<&str>> = if imp == Impl::Madmpi {
                    match &self.opts.policy {
                        Some(forced) if policies == [None] => vec![Some(forced.as_str())],
                        _ => policies.to_vec(),
                    }
                } else {
                    vec![None]
                };
                for pol in pols {
                    let what = pol.map_or(String::new(), |p| format!(" (policy {p})"));
                    p.step(&format!("{prog}: {} over {}{what}", imp.label(), t.label()));
                    ms.extend(self.launch(p, prog, imp, t, pol, args.clone()));
                }
            }
        }
        ms
    }

    /// The collectives program at 2, 4 and 8 ranks over shm (4 and 8 ranks share the two CPUs).
    fn collectives(&mut self, p: &mut Progress, (c0, c1): (usize, usize)) -> Vec<Measurement> {
        let mut args = vec![self.opts.reps.to_string()];
        if self.opts.quick {
            args.push("quick".into());
        }
        let mut ms = Vec::new();
        for ranks in COLL_RANKS {
            let cpus: Vec<String> =
                (0..ranks).map(|r| if r % 2 == 0 { c0 } else { c1 }.to_string()).collect();
            let cpus = cpus.join(",");
            for &imp in &self.opts.libs {
                p.step(&format!("coll: {} with {ranks} ranks", imp.label()));
                let (Some(tc), Some(exe)) = (self.tc, self.exes.get(&(imp, "coll"))) else {
                    continue;
                };
                let policy = if imp == Impl::Madmpi { self.opts.policy.as_deref() } else { None };
                let l = Launch {
                    imp,
                    transport: Transport::Shm,
                    policy,
                    exe,
                    args: args.clone(),
                    cpus: &cpus,
                    ranks,
                };
                let name = format!("coll {} {ranks} ranks", imp.key());
                self.commands.insert(name.clone(), describe(&l.command(tc)));
                match l.run(tc, HANG) {
                    Ok(v) => ms.extend(v.into_iter().map(|m| m.threads(ranks))),
                    Err(e) => self.run_failed(p, imp, &format!("{name}: {e}")),
                }
            }
        }
        ms
    }

    fn launch(
        &mut self,
        p: &mut Progress,
        prog: &str,
        imp: Impl,
        t: Transport,
        policy: Option<&str>,
        args: Vec<String>,
    ) -> Vec<Measurement> {
        let (Some(tc), Some(exe)) = (self.tc, self.exes.get(&(imp, prog))) else {
            return vec![];
        };
        let policy = policy.or(if imp == Impl::Madmpi { self.opts.policy.as_deref() } else { None });
        let l = Launch { imp, transport: t, policy, exe, args, cpus: self.cpus, ranks: 2 };
        let name = format!("{prog} {} {} {}", imp.key(), t.label(), l.policy_label());
        self.commands.insert(name.clone(), describe(&l.command(tc)));
        match l.run(tc, HANG) {
            Ok(ms) => ms,
            Err(e) => {
                self.run_failed(p, imp, &format!("{name}: {e}"));
                vec![]
            }
        }
    }
}

fn count_steps(o: &Options) -> usize {
    let libs = o.libs.len();
    let tr = o.transports.len();
    let ours = o.libs.contains(&Impl::Madmpi) as usize;
    o.stages()
        .iter()
        .map(|s| match s {
            Stage::Pingpong => o.rounds as usize * libs * tr,
            Stage::Bw if o.has(Stage::Pingpong) => 0,
            Stage::Bw => o.rounds as usize * libs * tr,
            Stage::Overlap => libs * tr,
            // Ours once per policy, with OS threads (the C program) and with marcel.
            Stage::Reactivity => libs + (POLICIES.len()) * ours,
            Stage::Mt => libs,
            Stage::Coll => libs * COLL_RANKS.len(),
            Stage::CollAlgos => ours * coll_algos::steps(),
            Stage::Loss => o.rounds as usize * o.loss.len() * loss::steps(&o.libs),
            Stage::Failover => o.rounds as usize * failover::steps(),
            Stage::Rma => o.transports.iter().map(|&t| rma::variants(&o.libs, t).len()).sum(),
            Stage::Io => io::steps(o),
            Stage::Limits | Stage::Overhead | Stage::Sched => 1,
        })
        .sum()
}

fn print_configuration(o: &Options, cpus: &str) {
    let online = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("# madbench {} ({})", o.describe_stages(), if o.quick { "quick smoke run" } else { "full run" });
    println!(
        "- repetitions per point: {} (median, min, max); latency/bandwidth: median of {} interleaved rounds",
        o.reps, o.rounds
    );
    println!(
        "- machine: {} CPUs usable; the two ranks pinned to CPUs {cpus} (taskset, before the library \
         starts); each library's own binding off",
        online
    );
    println!(
        "- madmpi: libmpi.so beside madbench, started by madrun; drivers shm (NMAD_DRIVERS=shm) or tcp \
         over loopback (tcp:lo); strategy aggreg (the default); pioman policy {} ; progression threads: \
         the default (one per NUMA node)",
        o.policy.as_deref().unwrap_or("adaptive (the default)")
    );
    println!(
        "- MPICH 4.0.2 (Debian, ch4:ucx; mpiexec.hydra -bind-to none; tcp: UCX_TLS=tcp,self, no local peers)"
    );
    println!("- Open MPI 4.1.4 (Debian; pml ob1, btl self,vader or self,tcp over lo; --bind-to none)");
    println!("- libraries compared: {}", o.libs.iter().map(|i| i.label()).collect::<Vec<_>>().join(", "));
    println!();
}

/// The value of a limit for a table row, if the limits were measured.
fn limit_lookup<'a>(
    all: &'a [Measurement],
    case: &'a str,
    transport: &'a str,
) -> impl Fn(u64) -> Option<f64> + 'a {
    move |size| {
        all.iter()
            .find(|m| {
                m.bench == "limits"
                    && m.case == case
                    && m.transport == transport
                    && (m.size == size || case.ends_with("pingpong"))
            })
            .map(|m| m.stat.median)
    }
}

fn print_tables(stage: Stage, ms: &[Measurement], before: &[Measurement]) {
    let mut both: Vec<Measurement> = before.to_vec();
    both.extend(ms.iter().cloned());
    for t in stage_tables(stage, &both) {
        println!("{}", t.render());
    }
}

/// The tables of one stage, from every measurement so far (limits measured earlier feed the
/// latency and bandwidth tables).
pub fn stage_tables(stage: Stage, all: &[Measurement]) -> Vec<tables::Table> {
    let mut out = Vec::new();
    let row_case = |m: &Measurement| m.case.clone();
    match stage {
        Stage::Limits => {
            let row =
                |m: &Measurement| format!("{} {} {}", m.case, m.transport, crate::mpi::human_bytes(m.size));
            for unit in ["ns", "MB/s"] {
                let sel: Vec<Measurement> =
                    all.iter().filter(|m| m.bench == "limits" && m.unit == unit).cloned().collect();
                out.extend(tables::pivot(&sel, "limits", "Physical limits", "what", &row, &|m| {
                    (m.imp, String::new())
                }));
            }
        }
        Stage::Pingpong | Stage::Bw => {
            // udp rows: ours over the udp driver, the others over their tcp; the raw udp limits.
            for t in ["shm", "tcp", "udp"] {
                let lat_limit = format!("{}-pingpong", if t == "shm" { "cacheline" } else { t });
                let small = limit_lookup(all, &lat_limit, t);
                let lim = move |s: u64| if s <= 64 { small(s) } else { None };
                out.extend(tables::by_size(
                    all,
                    "pingpong",
                    t,
                    &format!("MPI one-way latency over {t}"),
                    &lim,
                ));
                let bw_limit = if t == "shm" { "memcpy".to_string() } else { format!("{t}-stream") };
                out.extend(tables::by_size(
                    all,
                    "bw",
                    t,
                    &format!("MPI streaming bandwidth over {t}, MB/s, 8 in flight"),
                    &limit_lookup(all, &bw_limit, t),
                ));
            }
        }
        Stage::Overlap => {
            for t in ["shm", "tcp", "udp"] {
                out.extend(tables::overlap(all, t));
                out.extend(tables::by_size(
                    all,
                    "overlap-paper",
                    t,
                    &format!(
                        "PIOMan paper's test over {t}: the sender's blocking MPI_Send time while the receiver \
                         computes 50 ms after MPI_Irecv"
                    ),
                    &|_| None,
                ));
            }
        }
        Stage::Reactivity => {
            // Rows: compute threads × kind of compute thread; columns: our policies, then the
            // peers (OS threads only: their figures stand in both rows of a thread count).
            let mut sel: Vec<Measurement> = Vec::new();
            for m in all.iter().filter(|m| m.bench == "reactivity") {
                if m.imp == Impl::Madmpi {
                    sel.push(m.clone());
                } else {
                    for kind in ["os", "marcel"] {
                        let mut c = m.clone();
                        c.case = kind.into();
                        sel.push(c);
                    }
                }
            }
            let kind = |c: &str| if c == "marcel" { "marcel user threads" } else { "OS threads" };
            out.extend(
                tables::pivot(
                    &sel,
                    "reactivity",
                    "Reactivity: 4-byte one-way latency over shm with compute threads on the receiver's \
                     core; madmpi per pioman policy (ratios: the default, adaptive); MPICH and Open MPI \
                     with OS compute threads",
                    "compute threads per core",
                    &|m| format!("{} {}", m.threads, kind(&m.case)),
                    &|m| (m.imp, if m.imp == Impl::Madmpi { m.policy.clone() } else { String::new() }),
                )
                .map(|mut t| {
                    let adaptive = t.columns.iter().position(|c| c.contains("adaptive"));
                    t.ratios.retain(|r| Some(r.0) == adaptive);
                    t
                }),
            );
        }
        Stage::Overhead => {
            out.extend(tables::pivot(
                all,
                "overhead",
                "Progression overhead: one-way latency, nmad polled directly versus waiting through pioman",
                "transport, size",
                &|m| format!("{} {}", m.transport, crate::mpi::human_bytes(m.size)),
                &|m| (m.imp, m.case.clone()),
            ));
        }
        Stage::Sched => {
            out.extend(tables::pivot(
                all,
                "sched",
                "Scheduler: marcel user threads versus OS threads, per operation",
                "operation",
                &row_case,
                &|m| (m.imp, String::new()),
            ));
        }
        Stage::Coll => {
            out.extend(tables::pivot(
                all,
                "coll",
                "Collectives over shm: time per call, the slowest rank (4 and 8 ranks share the 2 CPUs)",
                "operation, size, ranks",
                &|m| format!("{} {} ×{}", m.case, crate::mpi::human_bytes(m.size), m.threads),
                &|m| (m.imp, String::new()),
            ));
        }
        Stage::CollAlgos => {
            out.extend(tables::pivot(
                all,
                "coll-algos",
                "madmpi's collective algorithms over shm, each forced in turn: time per call, the slowest rank (4 ranks share the 2 CPUs)",
                "operation, size, ranks",
                &|m| format!("{} {} ×{}", m.case, crate::mpi::human_bytes(m.size), m.threads),
                &|m| (m.imp, m.extra.get("algorithm").and_then(|v| v.as_str()).unwrap_or("").to_string()),
            ));
        }
        Stage::Rma => out.extend(rma::tables(all)),
        Stage::Io => out.extend(io::tables(all)),
        Stage::Loss => out.extend(loss::tables(all)),
        Stage::Failover => out.extend(failover::tables(all)),
        Stage::Mt => {
            out.extend(tables::pivot(
                all,
                "mt",
                "MPI_THREAD_MULTIPLE message rate, 8-byte messages over shm",
                "threads per rank",
                &|m| m.threads.to_string(),
                &|m| (m.imp, String::new()),
            ));
        }
    }
    out
}

fn finish(
    o: &Options,
    all: &[Measurement],
    commands: &BTreeMap<String, String>,
    cpus: &str,
    p: &mut Progress,
) {
    let dir = &o.out;
    let mut written = Vec::new();
    if let Some(j) = &o.json {
        let text = output::json_lines(all);
        if let Some(d) = j.parent().filter(|d| !d.as_os_str().is_empty()) {
            let _ = std::fs::create_dir_all(d);
        }
        match std::fs::write(j, text) {
            Ok(()) => written.push(j.display().to_string()),
            Err(e) => p.warn(&format!("{}: {e}", j.display())),
        }
    }
    for (bench, csv) in output::csv_by_bench(all) {
        match output::write(dir, &format!("{bench}.csv"), &csv) {
            Ok(f) => written.push(f),
            Err(e) => p.warn(&e),
        }
    }
    let config = serde_json::json!({
        "stages": o.describe_stages(),
        "quick": o.quick,
        "reps": o.reps,
        "rounds": o.rounds,
        "cpus": cpus,
        "commands": commands,
    });
    match output::write(dir, "config.json", &serde_json::to_string_pretty(&config).unwrap_or_default()) {
        Ok(f) => written.push(f),
        Err(e) => p.warn(&e),
    }
    if o.plots {
        match figures::draw_all(all, dir) {
            Ok(files) => written.extend(files),
            Err(e) => p.warn(&format!("plots: {e}")),
        }
    }
    println!("written: {}", written.join(", "));
}
