//! Support for `benches/mpi.rs`, which runs the C program `bench/mpi/pingpong.c` built against
//! madmpi's `libmpi.so`, MPICH and Open MPI: the configurations (library × transport), how each
//! is launched, the parser of the program's output, and the tables.
//!
//! The program prints `lat <bytes> <median ns> <min> <max> <iterations> <reps>` and
//! `bw <bytes> <median MB/s> <min> <max> <iterations> <reps>` lines (one-way latency from
//! ping-pong round trips; streaming bandwidth with a window of 8), after a
//! `# library <version>` line. The conductor runs every configuration several times (rounds,
//! interleaved, so that a noisy minute does not hit one library only) and keeps, per size, the
//! median of the rounds' medians.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// An MPI library under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lib {
    Madmpi,
    Mpich,
    OpenMpi,
}

impl Lib {
    /// The column name's prefix.
    pub fn label(self) -> &'static str {
        match self {
            Lib::Madmpi => "madmpi",
            Lib::Mpich => "MPICH",
            Lib::OpenMpi => "OpenMPI",
        }
    }

    /// What `MPI_Get_library_version` must start with: proof that the intended library ran
    /// (a stray `LD_LIBRARY_PATH` could make an MPICH binary load madmpi's soname link).
    pub fn version_prefix(self) -> &'static str {
        match self {
            Lib::Madmpi => "MadMPI",
            Lib::Mpich => "MPICH",
            Lib::OpenMpi => "Open MPI",
        }
    }
}

/// How the two ranks talk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Shm,
    Tcp,
}

impl Transport {
    pub fn label(self) -> &'static str {
        match self {
            Transport::Shm => "shm",
            Transport::Tcp => "tcp",
        }
    }
}

/// The configurations, in the tables' column order.
pub const CONFIGS: [(Lib, Transport); 6] = [
    (Lib::Madmpi, Transport::Shm),
    (Lib::Mpich, Transport::Shm),
    (Lib::OpenMpi, Transport::Shm),
    (Lib::Madmpi, Transport::Tcp),
    (Lib::Mpich, Transport::Tcp),
    (Lib::OpenMpi, Transport::Tcp),
];

/// `madmpi-shm` and so on.
pub fn config_name(lib: Lib, t: Transport) -> String {
    format!("{}-{}", lib.label(), t.label())
}

/// Paths the launch commands need.
pub struct Paths {
    /// The directory of `libmpi.so` and its `libmpi.so.12` link.
    pub lib_dir: PathBuf,
    pub madrun: PathBuf,
    /// `bench/mpi/pin.sh`.
    pub pin: PathBuf,
}

/// Variables a launch must not inherit from the conductor: they would change a library's
/// behaviour (or, for `LD_LIBRARY_PATH`, which library an MPICH binary loads).
pub fn scrubbed(name: &str) -> bool {
    ["NMAD_", "PIOMAN_", "MARCEL_", "UCX_", "MPIR_CVAR_", "OMPI_", "PMI_", "PM2_", "HYDRA_"]
        .iter()
        .any(|p| name.starts_with(p))
        || name == "LD_LIBRARY_PATH"
}

/// The command running `exe reps` as two ranks of `lib` over `t`, each pinned by `pin.sh` to
/// its CPU of `cpus` (`"A,B"`). Every library polls while it waits (its default, and madmpi's
/// `PIOMAN_POLICY=poll` without progression threads), and tcp goes over the loopback interface.
pub fn launch(lib: Lib, t: Transport, exe: &Path, reps: u32, cpus: &str, p: &Paths) -> Command {
    let mut c;
    match lib {
        Lib::Madmpi => {
            c = Command::new(&p.madrun);
            c.args(["-n", "2"]);
            c.env("LD_LIBRARY_PATH", &p.lib_dir);
            c.env("NMAD_DRIVERS", if t == Transport::Shm { "shm" } else { "tcp:lo" });
            // The waiting thread polls, as MPICH and Open MPI do; no progression thread
            // competes for the two cores.
            c.env("PIOMAN_POLICY", "poll").env("PIOMAN_THREADS", "0");
        }
        Lib::Mpich => {
            c = Command::new("mpiexec.hydra");
            c.args(["-n", "2", "-bind-to", "none"]);
            if t == Transport::Tcp {
                // Debian's MPICH is ch4:ucx: UCX carries local messages too, so limiting UCX to
                // tcp (and telling MPICH that no peer is local) makes it talk over TCP.
                c.env("MPIR_CVAR_NOLOCAL", "1").env("UCX_TLS", "tcp,self").env("UCX_NET_DEVICES", "lo");
            }
        }
        Lib::OpenMpi => {
            c = Command::new("mpiexec.openmpi");
            c.args(["--allow-run-as-root", "--bind-to", "none", "-n", "2", "--mca", "pml", "ob1"]);
            match t {
                Transport::Shm => c.args(["--mca", "btl", "self,vader"]),
                Transport::Tcp => c.args(["--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"]),
            };
        }
    }
    c.env("MPI_BENCH_CPUS", cpus).arg(&p.pin).arg(exe).arg(reps.to_string());
    c
}

/// The command line and the variables a launch sets, for the record.
pub fn describe(c: &Command) -> String {
    let mut s = String::new();
    for (k, v) in c.get_envs() {
        if let Some(v) = v {
            let _ = write!(s, "{}={} ", k.to_string_lossy(), v.to_string_lossy());
        }
    }
    s.push_str(&c.get_program().to_string_lossy());
    for a in c.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// One size's figures in one run: the median, min and max over the repetitions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stat {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

/// What one run of the program printed.
#[derive(Debug, Default, PartialEq)]
pub struct Output {
    /// `MPI_Get_library_version`'s first line.
    pub library: String,
    /// One-way latency (ns) per size.
    pub lat: BTreeMap<usize, Stat>,
    /// Bandwidth (MB/s) per size.
    pub bw: BTreeMap<usize, Stat>,
}

/// Parses the program's standard output (other lines, such as a launcher's notices, are
/// ignored; a malformed measurement line is an error).
pub fn parse(text: &str) -> Result<Output, String> {
    let mut out = Output::default();
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("# library ") {
            out.library = v.trim().to_string();
            continue;
        }
        let mut f = line.split_whitespace();
        let map = match f.next() {
            Some("lat") => &mut out.lat,
            Some("bw") => &mut out.bw,
            _ => continue,
        };
        let bad = || format!("malformed line: {line:?}");
        let size: usize = f.next().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
        let mut num =
            || f.next().and_then(|s| s.parse::<f64>().ok()).filter(|v| v.is_finite()).ok_or_else(bad);
        let stat = Stat { median: num()?, min: num()?, max: num()? };
        map.insert(size, stat);
    }
    if out.library.is_empty() {
        return Err("no `# library` line".into());
    }
    if out.lat.is_empty() || out.bw.is_empty() {
        return Err("no measurement".into());
    }
    Ok(out)
}

/// The median of `v` (sorted in place); NaN if empty.
pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

/// Per size, the median of the runs' medians (sizes missing from a run are skipped).
pub fn combine(runs: &[BTreeMap<usize, Stat>]) -> BTreeMap<usize, f64> {
    let mut by_size: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for r in runs {
        for (&size, s) in r {
            by_size.entry(size).or_default().push(s.median);
        }
    }
    by_size.into_iter().map(|(size, mut v)| (size, median(&mut v))).collect()
}

/// `4096` → `4 KiB`.
pub fn human_bytes(n: usize) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} B"),
    }
}

/// A markdown table, one row per size: the six configurations' values (`cell` formats them),
/// then madmpi ÷ MPICH and madmpi ÷ Open MPI per transport. `values` is keyed by
/// configuration name, then size.
pub fn table(
    title: &str,
    values: &BTreeMap<String, BTreeMap<usize, f64>>,
    cell: impl Fn(f64) -> String,
) -> String {
    let mut s = format!("{title}\n\n| size |");
    for (l, t) in CONFIGS {
        let _ = write!(s, " {} |", config_name(l, t));
    }
    s.push_str(" shm ÷ MPICH | shm ÷ OpenMPI | tcp ÷ MPICH | tcp ÷ OpenMPI |\n|---:|");
    s.push_str(&"---:|".repeat(CONFIGS.len() + 4));
    s.push('\n');
    let sizes: std::collections::BTreeSet<usize> = values.values().flat_map(|m| m.keys().copied()).collect();
    let get = |l: Lib, t: Transport, size: usize| {
        values.get(&config_name(l, t)).and_then(|m| m.get(&size)).copied()
    };
    for size in sizes {
        let _ = write!(s, "| {} |", human_bytes(size));
        for (l, t) in CONFIGS {
            let _ = write!(s, " {} |", get(l, t, size).map_or("-".into(), &cell));
        }
        for t in [Transport::Shm, Transport::Tcp] {
            for other in [Lib::Mpich, Lib::OpenMpi] {
                let r = get(Lib::Madmpi, t, size).zip(get(other, t, size)).map(|(a, b)| a / b);
                let _ = write!(s, " {} |", r.map_or("-".into(), |r| format!("{r:.2}")));
            }
        }
        s.push('\n');
    }
    s
}

/// Formats nanoseconds for the latency table.
pub fn cell_ns(ns: f64) -> String {
    crate::human_ns(ns)
}

/// Formats MB/s for the bandwidth table.
pub fn cell_mbps(v: f64) -> String {
    format!("{v:.0}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
# library MPICH Version:\t4.0.2
lat 0 200.6 193.7 280.0 2000 5
lat 4096 962.3 916.2 981.4 1000 5
some launcher notice
bw 4096 7434.8 6913.6 7650.2 200 5
";

    #[test]
    fn parses_the_program_output() {
        let o = parse(SAMPLE).unwrap();
        assert_eq!(o.library, "MPICH Version:\t4.0.2");
        assert_eq!(o.lat.len(), 2);
        assert_eq!(o.lat[&0], Stat { median: 200.6, min: 193.7, max: 280.0 });
        assert_eq!(o.bw[&4096].median, 7434.8);
    }

    #[test]
    fn rejects_malformed_or_empty_output() {
        assert!(parse("lat 0 1 2 3 4 5\nbw 1 1 1 1 1 1\n").is_err(), "no library line");
        assert!(parse("# library X\n").is_err(), "no measurement");
        assert!(parse("# library X\nlat 0 1.0 nan 3\nbw 1 1 1 1\n").is_err());
        assert!(parse("# library X\nlat x 1 2 3\nbw 1 1 1 1\n").is_err());
        assert!(parse("# library X\nlat 8 1 2\nbw 1 1 1 1\n").is_err(), "missing max");
    }

    #[test]
    fn combines_rounds_by_median() {
        let s = |m| Stat { median: m, min: m, max: m };
        let runs = vec![
            BTreeMap::from([(0, s(3.0)), (8, s(10.0))]),
            BTreeMap::from([(0, s(1.0))]),
            BTreeMap::from([(0, s(2.0)), (8, s(20.0))]),
        ];
        assert_eq!(combine(&runs), BTreeMap::from([(0, 2.0), (8, 15.0)]));
        assert!(median(&mut []).is_nan());
    }

    #[test]
    fn table_has_every_column_and_ratio() {
        let mut v: BTreeMap<String, BTreeMap<usize, f64>> = BTreeMap::new();
        for (i, (l, t)) in CONFIGS.into_iter().enumerate() {
            v.insert(config_name(l, t), BTreeMap::from([(4096, 100.0 * (i + 1) as f64)]));
        }
        let t = table("T", &v, cell_mbps);
        let row = t.lines().find(|l| l.starts_with("| 4 KiB")).unwrap();
        // madmpi-shm 100, MPICH-shm 200, OpenMPI-shm 300, madmpi-tcp 400, MPICH 500, Open MPI 600.
        assert_eq!(row, "| 4 KiB | 100 | 200 | 300 | 400 | 500 | 600 | 0.50 | 0.33 | 0.80 | 0.67 |");
        assert_eq!(t.lines().nth(2).unwrap().matches('|').count(), 12);
    }

    #[test]
    fn scrubs_what_would_change_a_library() {
        for v in
            ["NMAD_DRIVERS", "UCX_TLS", "MPIR_CVAR_NOLOCAL", "OMPI_MCA_btl", "LD_LIBRARY_PATH", "PMI_RANK"]
        {
            assert!(scrubbed(v), "{v}");
        }
        assert!(!scrubbed("PATH") && !scrubbed("HOME"));
    }

    #[test]
    fn launches_pin_every_rank_through_the_wrapper() {
        let p = Paths { lib_dir: "/l".into(), madrun: "/m/madrun".into(), pin: "/b/pin.sh".into() };
        for (l, t) in CONFIGS {
            let c = launch(l, t, Path::new("/x/pp"), 5, "0,1", &p);
            let d = describe(&c);
            assert!(d.contains("MPI_BENCH_CPUS=0,1"), "{d}");
            assert!(d.ends_with("/b/pin.sh /x/pp 5"), "{d}");
            assert_eq!(d.contains("LD_LIBRARY_PATH=/l"), l == Lib::Madmpi, "{d}");
        }
        let d = describe(&launch(Lib::Madmpi, Transport::Tcp, Path::new("p"), 1, "0,1", &p));
        assert!(d.contains("NMAD_DRIVERS=tcp:lo") && d.contains("PIOMAN_POLICY=poll"), "{d}");
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(64), "64 B");
        assert_eq!(human_bytes(4096), "4 KiB");
        assert_eq!(human_bytes(4 << 20), "4 MiB");
    }
}
