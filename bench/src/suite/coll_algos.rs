//! `madbench coll-algos`: our collective algorithms side by side, each forced in turn through
//! its `MADMPI_COLL_*` variable, with the default choice beside them — the measurements the
//! size thresholds of `madmpi/src/coll/choice.rs` are checked against on a given machine. Not
//! part of `all` (it measures our library against itself).

use super::{Ctx, HANG, Progress};
use crate::mpi::{Launch, Transport, describe};
use crate::record::{Impl, Measurement};

/// Job sizes (4 ranks share the two CPUs).
pub const RANKS: [u32; 2] = [2, 4];

/// Each swept operation, its variable and its algorithms (`default`: no variable).
pub const ALGORITHMS: [(&str, &str, &[&str]); 4] = [
    ("bcast", "MADMPI_COLL_BCAST", &["binomial", "scatter_ring"]),
    ("allreduce", "MADMPI_COLL_ALLREDUCE", &["recursive_doubling", "rabenseifner", "reduce_bcast"]),
    ("allgather", "MADMPI_COLL_ALLGATHER", &["recursive_doubling", "bruck", "ring"]),
    ("alltoall", "MADMPI_COLL_ALLTOALL", &["bruck", "linear", "pairwise"]),
];

/// Runs of the stage (for the progress line).
pub fn steps() -> usize {
    RANKS.len() * ALGORITHMS.iter().map(|(_, _, a)| a.len() + 1).sum::<usize>()
}

impl Ctx<'_> {
    pub(super) fn coll_algos(&mut self, p: &mut Progress, (c0, c1): (usize, usize)) -> Vec<Measurement> {
        let (Some(tc), Some(exe)) = (self.tc, self.exes.get(&(Impl::Madmpi, "coll"))) else {
            p.warn("coll-algos needs madmpi's coll program");
            *self.failures += 1;
            return vec![];
        };
        let mut ms = Vec::new();
        for ranks in RANKS {
            let cpus: Vec<String> =
                (0..ranks).map(|r| if r % 2 == 0 { c0 } else { c1 }.to_string()).collect();
            let cpus = cpus.join(",");
            for (op, var, algos) in ALGORITHMS {
                for algo in std::iter::once("default").chain(algos.iter().copied()) {
                    p.step(&format!("coll-algos: {op} {algo} with {ranks} ranks"));
                    let mut args = vec![self.opts.reps.to_string(), format!("sweep={op}")];
                    if self.opts.quick {
                        args.push("quick".into());
                    }
                    let l = Launch {
                        imp: Impl::Madmpi,
                        transport: Transport::Shm,
                        policy: self.opts.policy.as_deref(),
                        exe,
                        args,
                        cpus: &cpus,
                        ranks,
                    };
                    let env: Vec<(&str, &str)> = if algo == "default" { vec![] } else { vec![(var, algo)] };
                    let name = format!("coll-algos {op} {algo} {ranks} ranks");
                    let mut cmd = l.command(tc);
                    cmd.envs(env.iter().copied());
                    self.commands.insert(name.clone(), describe(&cmd));
                    match l.run_command(cmd, HANG) {
                        Ok(v) => ms.extend(v.into_iter().map(|m| {
                            let mut m = m.threads(ranks).with("algorithm", algo);
                            m.bench = "coll-algos".into();
                            m
                        })),
                        Err(e) => {
                            *self.failures += 1;
                            p.warn(&format!("{name}: {e}"));
                        }
                    }
                }
            }
        }
        ms
    }
}
