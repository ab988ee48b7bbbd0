//! The one-sided stage (`madbench rma`): which library runs `bench/mpi/rma.c` over which
//! transport and with which Open MPI component, and its tables. Open MPI runs twice over shm:
//! its default one-sided component and `osc sm` (the column `Open MPI (osc sm)`, a measurement
//! policy label, since the column key of the other libraries' measurements is their policy).
//! Compare-and-swap runs in its own invocation: a library crashing on it (Open MPI did) loses
//! only that row, and is reported as skipped.

use super::{Ctx, HANG, tables};
use crate::mpi::{Launch, Transport, describe};
use crate::record::{Impl, Measurement};
use crate::suite::progress::Progress;

/// The policy label of Open MPI's `osc sm` runs.
pub const OSC_SM: &str = "osc sm";

/// The (library, Open MPI osc component) runs over `t`: Open MPI over shm only (its tcp btl
/// carries no one-sided traffic of its own), and twice.
pub fn variants(libs: &[Impl], t: Transport) -> Vec<(Impl, Option<&'static str>)> {
    let mut v = Vec::new();
    for &imp in libs {
        match (imp, t) {
            (Impl::OpenMpi, Transport::Shm) => v.extend([(imp, None), (imp, Some("sm"))]),
            (Impl::OpenMpi, Transport::Tcp | Transport::Udp) => {}
            _ => v.push((imp, None)),
        }
    }
    v
}

impl Ctx<'_> {
    /// Every variant over every transport: the main run, then compare-and-swap alone.
    pub(super) fn rma(&mut self, p: &mut Progress) -> Vec<Measurement> {
        let mut args = vec![self.opts.reps.to_string()];
        if self.opts.quick {
            args.push("quick".into());
        }
        let mut ms = Vec::new();
        for &t in &self.opts.transports {
            for (imp, osc) in variants(&self.opts.libs, t) {
                let label = osc.map_or(String::new(), |o| format!(" (osc {o})"));
                p.step(&format!("rma: {}{label} over {}", imp.label(), t.label()));
                for part in ["nocas", "cas", "overlap"] {
                    let mut a = args.clone();
                    a.push(part.into());
                    match self.rma_launch(imp, t, osc, a) {
                        Ok(v) => ms.extend(v),
                        Err(e) if part == "cas" && imp == Impl::OpenMpi => p.warn(&format!(
                            "rma: compare-and-swap skipped for {}{label} over {}: its run failed \
                             (a known Open MPI crash): {}",
                            imp.label(),
                            t.label(),
                            e.lines().next().unwrap_or("").trim_end_matches(':')
                        )),
                        Err(e) => {
                            let what = format!("rma {part} {}{label} over {}: {e}", imp.label(), t.label());
                            self.run_failed(p, imp, &what);
                        }
                    }
                }
            }
        }
        ms
    }

    fn rma_launch(
        &mut self,
        imp: Impl,
        t: Transport,
        osc: Option<&str>,
        args: Vec<String>,
    ) -> Result<Vec<Measurement>, String> {
        let (Some(tc), Some(exe)) = (self.tc, self.exes.get(&(imp, "rma"))) else {
            return Ok(vec![]);
        };
        let policy = if imp == Impl::Madmpi { self.opts.policy.as_deref() } else { None };
        let part = args.last().cloned().unwrap_or_default();
        let l = Launch { imp, transport: t, policy, exe, args, cpus: self.cpus, ranks: 2 };
        let mut cmd = l.command(tc);
        if let Some(o) = osc {
            // An MCA variable, as `--mca osc sm` would set it, but without changing the command line.
            cmd.env("OMPI_MCA_osc", o);
        }
        let name =
            format!("rma {part} {} {} {}", imp.key(), t.label(), osc.map_or(l.policy_label(), |o| o.into()));
        self.commands.insert(name, describe(&cmd));
        let mut ms = l.run_command(cmd, HANG)?;
        if osc.is_some() {
            for m in &mut ms {
                m.policy = OSC_SM.into();
            }
        }
        Ok(ms)
    }
}

/// The column of a measurement: the library, and Open MPI's `osc sm` apart.
pub(super) fn column(m: &Measurement) -> (Impl, String) {
    (m.imp, if m.imp != Impl::Madmpi && m.policy != "default" { m.policy.clone() } else { String::new() })
}

/// One measurement per (side, size, column) of the overlap map: the median of its ratios over
/// the computation factors.
fn overlap_medians(sel: &[Measurement]) -> Vec<Measurement> {
    let mut by: Vec<(Measurement, Vec<f64>)> = Vec::new();
    for m in sel.iter().filter(|m| m.bench == "rma-overlap") {
        match by.iter_mut().find(|(k, _)| k.case == m.case && k.size == m.size && column(k) == column(m)) {
            Some((_, v)) => v.push(m.stat.median),
            None => by.push((m.clone(), vec![m.stat.median])),
        }
    }
    by.into_iter()
        .filter_map(|(mut m, mut v)| {
            m.stat = crate::record::Stat::of(&mut v)?;
            Some(m)
        })
        .collect()
}

/// Latency per operation and size, bandwidth, and the passive-target test, per transport.
pub fn tables(all: &[Measurement]) -> Vec<tables::Table> {
    let mut out = Vec::new();
    for t in ["shm", "tcp"] {
        let sel: Vec<Measurement> = all.iter().filter(|m| m.transport == t).cloned().collect();
        let size = |m: &Measurement| format!("{} {}", m.case, crate::mpi::human_bytes(m.size));
        out.extend(tables::pivot(
            &sel,
            "rma",
            &format!("One-sided latency over {t}: time per operation with its synchronization"),
            "operation, size",
            &size,
            &column,
        ));
        out.extend(tables::pivot(
            &sel,
            "rma-rtt",
            &format!(
                "One-sided latency over {t} in round trips of the same library (each repetition over \
                 an 8 B send+recv timed right after it): lock+put+unlock is one message there and \
                 one back at best"
            ),
            "operation, size",
            &size,
            &column,
        ));
        out.extend(tables::pivot(
            &sel,
            "rma-bw",
            &format!("One-sided bandwidth over {t}, MB/s: lock_all, 8 operations then a flush"),
            "operation, size",
            &size,
            &column,
        ));
        out.extend(tables::pivot(
            &overlap_medians(&sel),
            "rma-overlap",
            &format!(
                "One-sided overlap over {t}: lock + put + unlock with computation on the origin (between \
                 the put and the unlock), the target (no MPI call) or both; median overlap ratio over \
                 computation times 0.25–2× the epoch (0 = perfect overlap, 1 = serialized; the \
                 heatmaps show every cell)"
            ),
            "computing side, size",
            &|m| format!("{} {}", m.case, crate::mpi::human_bytes(m.size)),
            &column,
        ));
        for (case, what) in [
            ("origin", "the origin's time"),
            ("ratio", "origin time ÷ target compute time (1: no progress until the target calls MPI)"),
        ] {
            let passive: Vec<Measurement> = sel.iter().filter(|m| m.case == case).cloned().collect();
            out.extend(tables::pivot(
                &passive,
                "rma-passive",
                &format!(
                    "Passive target over {t}: lock+put+get+acc+unlock while the target computes 200 ms \
                     without MPI calls: {what}"
                ),
                "size",
                &|m| crate::mpi::human_bytes(m.size),
                &column,
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_mpi_runs_twice_over_shm_and_not_over_tcp() {
        let libs = crate::mpi::LIBS;
        assert_eq!(
            variants(&libs, Transport::Shm),
            [(Impl::Madmpi, None), (Impl::Mpich, None), (Impl::OpenMpi, None), (Impl::OpenMpi, Some("sm"))]
        );
        assert_eq!(variants(&libs, Transport::Tcp), [(Impl::Madmpi, None), (Impl::Mpich, None)]);
    }

    #[test]
    fn osc_sm_is_its_own_column_with_a_ratio() {
        let stat = crate::record::Stat { median: 2.0, min: 1.0, max: 3.0 };
        let m = |imp, policy: &str, v: f64| {
            Measurement::new(
                "rma",
                "lock+put",
                imp,
                "shm",
                8,
                crate::record::Stat { median: v, ..stat },
                "ns",
            )
            .policy(policy)
        };
        let ms = [
            m(Impl::Madmpi, "adaptive", 2.0),
            m(Impl::OpenMpi, "default", 4.0),
            m(Impl::OpenMpi, OSC_SM, 1.0),
        ];
        let t = &tables(&ms)[0];
        assert_eq!(t.columns, ["madmpi", "Open MPI", "Open MPI (osc sm)"]);
        let text = t.render();
        assert!(text.contains("| lock+put 8 B |") && text.contains("| 0.50 | 2.00 |"), "{text}");
    }
}
