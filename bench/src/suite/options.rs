//! madbench's command line.

use crate::mpi::{LIBS, Transport};
use crate::record::Impl;
use std::path::PathBuf;

pub const USAGE: &str = "\
usage: madbench [all | pingpong | bw | overlap | reactivity | overhead | sched | mt | limits | coll | rma
                 | io | coll-algos | loss | failover]...
                [--quick] [--json[=FILE]] [--out DIR] [--only madmpi,mpich,openmpi]
                [--transport shm,tcp,udp] [--reps N] [--rounds N] [--policy NAME] [--loss P,...]
                [--io-sizes S,...] [--no-plots] [--quiet]

  all          every benchmark (the default): about 6 minutes on 2 cores
  pingpong     MPI latency 0 B-4 MiB over shm and tcp, beside MPICH and Open MPI
  bw           MPI streaming bandwidth 64 KiB-16 MiB
  overlap      overlap ratio heatmaps (sender, receiver, both computing) and the PIOMan paper's test
  reactivity   4-byte latency with 0, 1, 2, 4 compute threads per core on the receiver, per policy
  overhead     small-message latency through pioman (poll, block) versus nmad polled directly
  sched        marcel user threads versus OS threads
  mt           MPI_THREAD_MULTIPLE message rate with 1, 2, 4 threads per rank
  limits       the machine's physical limits (cache line, memcpy, raw TCP)
  coll         Barrier, Bcast, Allreduce (8 B, 64 KiB, 1 MiB), Alltoall (1 KiB per peer) at 2, 4
               and 8 ranks (4 and 8 ranks share the 2 CPUs of the other benchmarks: oversubscribed)
  rma          one-sided latency (put, get, accumulate, get_accumulate, fetch_and_op,
               compare_and_swap, each under fence, pscw, lock and lock_all + flush), put/get
               bandwidth, an overlap map (lock + put + unlock with computation on the origin, the
               target or both), and lock/put/get/acc/unlock while the target computes 200 ms;
               Open MPI also with `--mca osc sm`; tcp for madmpi and MPICH only
  io           MPI-IO bandwidth, 4 ranks (sharing the 2 CPUs), into a file on tmpfs (/dev/shm)
               and on the local disk: MPI_File_write_all and MPI_File_read_all of a 2-D array of
               doubles split in row blocks and in a 2 x 2 checkerboard (subarray views), and
               independent strided reads (a column block each: vector view, MPI_File_read_at,
               each library's data sieving); page-cache bandwidth (no sync), every file checked;
               beside one process's POSIX write/read of the same size (the limit); Open MPI
               with its default OMPIO and with ROMIO (`--mca io romio321`). 1 MiB-1 GiB alone
               (about 8 minutes, half of it MPICH's checkerboard), 1-64 MiB in `all` (about 1
               minute)
  coll-algos   not in `all`: each of our algorithms forced in turn (MADMPI_COLL_*) for bcast,
               allreduce, allgather, alltoall, 64 B-1 MiB, at 2 and 4 ranks: where the choice
               should switch on this machine
  loss         not in `all` (root, `ip` and `nft`): goodput (64 KiB-16 MiB streaming) and one-way
               latency medians and 99th percentiles (8 B, 64 KiB, 1 MiB) under random packet loss:
               per rate, a network namespace whose nftables rule drops that share of every TCP
               and UDP packet (the packets dropped are printed); ours over udp and tcp beside
               MPICH and Open MPI over tcp, in --rounds interleaved rounds. Slow: tcp's
               timeouts (200 ms) hit the round trips; a full run at 0, 1 and 5 % with 2
               rounds takes about 30 minutes
  failover     not in `all` (root, `ip`, `ss`): ours only (MPICH and Open MPI have no rail
               failover), 2 ranks on two namespace hosts joined by two tcp rails and a service
               network: the time from a rail cut (loud: its connections killed; silent: link
               down; both rails, with the service network as fallback) to traffic flowing again,
               bandwidth before / during / after and around the cut (plot), a 256 MiB transfer
               with and without a cut, and the re-admission of a restored rail; every row
               carries the lost / duplicated / corrupt counts its runs checked. About 1 minute
               per round

  --quick      a smoke run (about 90 s): fewer sizes and points
  --json       one JSON object per measurement and line, to FILE (bench-results/madbench.json)
  --out DIR    where CSV files, plots and config.json go (bench-results)
  --only       the MPI libraries to run (all three by default; missing compilers are reported)
  --transport  shm, tcp, udp, comma-separated (shm,tcp; udp: ours over the udp driver beside
               MPICH and Open MPI over their tcp)
  --reps N     repetitions per point (5)
  --rounds N   interleaved rounds of pingpong/bw and of loss (3; quick 1)
  --policy P   our pioman policy for every MPI benchmark but reactivity (default: the library's own)
  --loss P,... the loss rates of `loss`, in percent (1,5; 0 measures the namespace without loss)
  --io-sizes S,... the array sizes of `io` (1M,16M,256M,1G alone; 1M,16M,64M in `all`; quick 1M,4M);
               suffixes K, M, G (powers of 2)
";

/// A benchmark of the suite, in running order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    Limits,
    Pingpong,
    Bw,
    Overlap,
    Reactivity,
    Overhead,
    Sched,
    Mt,
    Coll,
    Rma,
    /// MPI-IO bandwidth (in `all` with fewer sizes).
    Io,
    /// Our collective algorithms side by side (not part of `all`).
    CollAlgos,
    /// Goodput and latency tails under packet loss (not part of `all`: root only).
    Loss,
    /// A job losing a rail (not part of `all`: root only).
    Failover,
}

impl Stage {
    pub const ALL: [Stage; 11] = [
        Stage::Limits,
        Stage::Pingpong,
        Stage::Bw,
        Stage::Overlap,
        Stage::Reactivity,
        Stage::Overhead,
        Stage::Sched,
        Stage::Mt,
        Stage::Coll,
        Stage::Rma,
        Stage::Io,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Stage::Limits => "limits",
            Stage::Pingpong => "pingpong",
            Stage::Bw => "bw",
            Stage::Overlap => "overlap",
            Stage::Reactivity => "reactivity",
            Stage::Overhead => "overhead",
            Stage::Sched => "sched",
            Stage::Mt => "mt",
            Stage::Coll => "coll",
            Stage::Rma => "rma",
            Stage::Io => "io",
            Stage::CollAlgos => "coll-algos",
            Stage::Loss => "loss",
            Stage::Failover => "failover",
        }
    }

    /// The C program of `bench/mpi/` it runs, if any.
    pub fn program(self) -> Option<&'static str> {
        match self {
            Stage::Pingpong | Stage::Bw | Stage::Loss => Some("pingpong"),
            Stage::Overlap => Some("overlap"),
            Stage::Reactivity => Some("reactivity"),
            Stage::Mt => Some("mt"),
            Stage::Coll | Stage::CollAlgos => Some("coll"),
            Stage::Rma => Some("rma"),
            Stage::Io => Some("io"),
            Stage::Failover => Some("failover"),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Options {
    /// Asked for (sorted, no repeats); empty = all.
    pub asked: Vec<Stage>,
    pub quick: bool,
    pub json: Option<PathBuf>,
    pub out: PathBuf,
    pub libs: Vec<Impl>,
    pub transports: Vec<Transport>,
    pub reps: u32,
    pub rounds: u32,
    pub policy: Option<String>,
    /// The loss rates of `loss`, in percent.
    pub loss: Vec<f64>,
    /// The array sizes of `io`, in bytes (`None`: the stage's own, see `suite::io::sizes`).
    pub io_sizes: Option<Vec<u64>>,
    pub plots: bool,
    pub quiet: bool,
}

impl Options {
    /// Reads the arguments (without the program name). `Err` carries the message to print
    /// (the usage for `--help`).
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Options, String> {
        let mut o = Options {
            asked: vec![],
            quick: false,
            json: None,
            out: PathBuf::from("bench-results"),
            libs: LIBS.to_vec(),
            transports: vec![Transport::Shm, Transport::Tcp],
            reps: 5,
            rounds: 0,
            policy: None,
            loss: vec![1.0, 5.0],
            io_sizes: None,
            plots: true,
            quiet: false,
        };
        let mut all = false;
        let mut it = args.into_iter();
        while let Some(a) = it.next() {
            let (flag, inline) = match a.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
                _ => (a.clone(), None),
            };
            let mut value = |name: &str| -> Result<String, String> {
                inline.clone().or_else(|| it.next()).ok_or_else(|| format!("{name} needs a value\n\n{USAGE}"))
            };
            match flag.as_str() {
                "-h" | "--help" | "help" => return Err(USAGE.to_string()),
                "all" => all = true,
                "--quick" => o.quick = true,
                "--no-plots" => o.plots = false,
                "--quiet" => o.quiet = true,
                "--json" => {
                    o.json = Some(inline.clone().map_or(PathBuf::new(), PathBuf::from));
                }
                "--out" => o.out = PathBuf::from(value("--out")?),
                "--policy" => o.policy = Some(value("--policy")?),
                "--loss" => o.loss = loss_rates(&value("--loss")?)?,
                "--io-sizes" => o.io_sizes = Some(byte_sizes(&value("--io-sizes")?)?),
                "--reps" => o.reps = count(&value("--reps")?, "--reps", 99)?,
                "--rounds" => o.rounds = count(&value("--rounds")?, "--rounds", 20)?,
                "--only" => {
                    o.libs = value("--only")?
                        .split(',')
                        .map(|s| {
                            Impl::from_key(&s.to_ascii_lowercase().replace(' ', ""))
                                .filter(|i| LIBS.contains(i))
                                .ok_or_else(|| format!("--only: {s:?} is not madmpi, mpich or openmpi"))
                        })
                        .collect::<Result<_, _>>()?;
                }
                "--transport" => {
                    o.transports = value("--transport")?
                        .split(',')
                        .map(|s| match s {
                            "shm" => Ok(Transport::Shm),
                            "tcp" => Ok(Transport::Tcp),
                            "udp" => Ok(Transport::Udp),
                            _ => Err(format!("--transport: {s:?} is not shm, tcp or udp")),
                        })
                        .collect::<Result<_, _>>()?;
                }
                s => {
                    match Stage::ALL
                        .iter()
                        .chain(&[Stage::CollAlgos, Stage::Loss, Stage::Failover])
                        .find(|st| st.name() == s)
                    {
                        Some(&st) => o.asked.push(st),
                        None => return Err(format!("unknown argument {s:?}\n\n{USAGE}")),
                    }
                }
            }
        }
        if all {
            o.asked.clear();
        }
        o.asked.sort();
        o.asked.dedup();
        o.libs.dedup();
        o.transports.dedup();
        if o.libs.is_empty() || o.transports.is_empty() {
            return Err("--only and --transport need at least one value".into());
        }
        if o.rounds == 0 {
            o.rounds = if o.quick { 1 } else { 3 };
        }
        if let Some(j) = &mut o.json
            && j.as_os_str().is_empty()
        {
            *j = o.out.join("madbench.json");
        }
        Ok(o)
    }

    /// The stages to run, in order. The limits come with latency and bandwidth (their tables
    /// show them).
    pub fn stages(&self) -> Vec<Stage> {
        if self.asked.is_empty() {
            return Stage::ALL.to_vec();
        }
        let mut v = self.asked.clone();
        if (self.has(Stage::Pingpong) || self.has(Stage::Bw)) && !v.contains(&Stage::Limits) {
            v.insert(0, Stage::Limits);
        }
        v
    }

    pub fn has(&self, s: Stage) -> bool {
        (self.asked.is_empty() && Stage::ALL.contains(&s)) || self.asked.contains(&s)
    }

    /// The C programs the stages need.
    pub fn programs(&self) -> Vec<&'static str> {
        let mut v: Vec<&str> = self.stages().iter().filter_map(|s| s.program()).collect();
        v.dedup();
        v
    }

    pub fn describe_stages(&self) -> String {
        if self.asked.is_empty() {
            "all".into()
        } else {
            self.stages().iter().map(|s| s.name()).collect::<Vec<_>>().join(" ")
        }
    }
}

/// `1,5` → [1.0, 5.0]: percentages in 0 ≤ p < 100.
fn loss_rates(v: &str) -> Result<Vec<f64>, String> {
    let mut rates: Vec<f64> = v
        .split(',')
        .map(|s| {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|p| (0.0..100.0).contains(p))
                .ok_or_else(|| format!("--loss: {s:?} is not a percentage in 0..100"))
        })
        .collect::<Result<_, _>>()?;
    rates.dedup();
    Ok(rates)
}

/// `1M,16M,1G` → `[1 << 20, 16 << 20, 1 << 30]`: sizes in bytes (suffixes K, M, G are powers of
/// 2), each a multiple of 64 bytes (the array of doubles is split among the ranks) of at most
/// 16 GiB, at most 16 of them.
pub fn byte_sizes(v: &str) -> Result<Vec<u64>, String> {
    let mut sizes: Vec<u64> = v
        .split(',')
        .map(|s| {
            let t = s.trim().to_ascii_uppercase();
            let t = t.strip_suffix("IB").or_else(|| t.strip_suffix('B')).unwrap_or(&t);
            let (num, shift) = match t.chars().last() {
                Some('K') => (&t[..t.len() - 1], 10),
                Some('M') => (&t[..t.len() - 1], 20),
                Some('G') => (&t[..t.len() - 1], 30),
                _ => (t, 0),
            };
            num.trim()
                .parse::<u64>()
                .ok()
                .and_then(|n| n.checked_shl(shift).filter(|&b| b >> shift == n))
                .filter(|&b| b > 0 && b % 64 == 0 && b <= 16 << 30)
                .ok_or_else(|| {
                    format!("--io-sizes: {s:?} is not a size in bytes (a multiple of 64, at most 16G)")
                })
        })
        .collect::<Result<_, _>>()?;
    sizes.sort();
    sizes.dedup();
    if sizes.len() > 16 {
        return Err("--io-sizes: at most 16 sizes".into());
    }
    Ok(sizes)
}

fn count(v: &str, name: &str, max: u32) -> Result<u32, String> {
    v.parse::<u32>()
        .ok()
        .filter(|&n| (1..=max).contains(&n))
        .ok_or_else(|| format!("{name}: expected 1..{max}, got {v:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Options, String> {
        Options::parse(s.split_whitespace().map(String::from))
    }

    #[test]
    fn defaults_run_everything() {
        let o = parse("").unwrap();
        assert_eq!(o.stages(), Stage::ALL);
        assert_eq!((o.reps, o.rounds, o.quick), (5, 3, false));
        assert!(o.json.is_none());
        assert_eq!(o.libs, LIBS);
        assert_eq!(o.programs(), ["pingpong", "overlap", "reactivity", "mt", "coll", "rma", "io"]);
        assert!(o.io_sizes.is_none());
    }

    #[test]
    fn subcommands_and_flags() {
        let o = parse("bw --quick --json --only madmpi,MPICH --transport tcp --policy block").unwrap();
        assert_eq!(o.stages(), [Stage::Limits, Stage::Bw]);
        assert_eq!(o.rounds, 1);
        assert_eq!(o.json.as_deref(), Some(std::path::Path::new("bench-results/madbench.json")));
        assert_eq!(o.libs, [Impl::Madmpi, Impl::Mpich]);
        assert_eq!(o.transports, [Transport::Tcp]);
        assert_eq!(o.policy.as_deref(), Some("block"));
        let o = parse("sched mt --json=/tmp/x.json --out /tmp/r --reps 7").unwrap();
        assert_eq!(o.stages(), [Stage::Sched, Stage::Mt]);
        assert_eq!(o.json.as_deref(), Some(std::path::Path::new("/tmp/x.json")));
        assert_eq!(o.reps, 7);
        assert_eq!(parse("mt all").unwrap().stages(), Stage::ALL);
    }

    #[test]
    fn bad_arguments_are_explained() {
        for bad in ["frobnicate", "--reps 0", "--reps x", "--only lam", "--transport ib", "--out"] {
            let e = parse(bad).unwrap_err();
            assert!(!e.is_empty(), "{bad}");
        }
        assert!(parse("--help").unwrap_err().starts_with("usage"));
    }

    #[test]
    fn loss_rates_are_percentages() {
        let o = parse("loss").unwrap();
        assert_eq!(o.stages(), [Stage::Loss]);
        assert_eq!(o.loss, [1.0, 5.0]);
        assert_eq!(o.programs(), ["pingpong"]);
        assert_eq!(parse("loss --loss 0,0.5,20").unwrap().loss, [0.0, 0.5, 20.0]);
        for bad in ["--loss 100", "--loss -1", "--loss x", "--loss 1,,2"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(!parse("").unwrap().stages().contains(&Stage::Loss), "not in all");
    }

    #[test]
    fn io_sizes_read_as_people_write_them() {
        let o = parse("io --io-sizes 16M,1m,1GiB,4096,64KB").unwrap();
        assert_eq!(o.stages(), [Stage::Io]);
        assert_eq!(o.programs(), ["io"]);
        assert_eq!(o.io_sizes.unwrap(), [4096, 64 << 10, 1 << 20, 16 << 20, 1 << 30]);
        for bad in [
            "--io-sizes 0",
            "--io-sizes 100",
            "--io-sizes 1T",
            "--io-sizes 32G",
            "--io-sizes x",
            "--io-sizes 1M,",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
