//! The PNG plots madbench draws from its measurements: latency and bandwidth curves, overlap
//! heatmaps, the paper test's curve, goodput under loss, reactivity, overhead, scheduler and
//! message-rate bars.
//! This module chooses what goes in which picture; [`crate::plot`] draws.

use crate::mpi::human_bytes;
use crate::plot::{BarGroup, Heatmap, Scale, Series, bars, heatmaps, lines};
use crate::record::{Impl, Measurement};
use std::collections::BTreeMap;
use std::path::Path;

/// Draws every picture the measurements allow; the files written.
pub fn draw_all(all: &[Measurement], dir: &Path) -> Result<Vec<String>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files = Vec::new();
    let mut out = |name: String, r: Result<(), String>| -> Result<(), String> {
        r?;
        files.push(dir.join(name).display().to_string());
        Ok(())
    };
    let bytes = |x: f64| human_bytes(x.round() as u64);
    let ns = |y: f64| axis_ns(y);
    let mbps = |y: f64| format!("{y:.0}");
    for t in ["shm", "tcp", "udp"] {
        let lat = curves(
            all,
            "pingpong",
            t,
            &limit_curve(
                all,
                &format!("{}-pingpong", if t == "shm" { "cacheline" } else { t }),
                t,
                (1, 64),
                "limit: ",
            ),
        );
        if !lat.is_empty() {
            let name = format!("latency-{t}.png");
            out(
                name.clone(),
                lines(
                    &dir.join(&name),
                    &format!("MPI one-way latency over {t} (ping-pong / 2; lower is better)"),
                    "message size",
                    "one-way latency",
                    Scale::Log,
                    Scale::Log,
                    &lat,
                    &bytes,
                    &ns,
                ),
            )?;
        }
        let bw_limit = if t == "shm" { "memcpy".to_string() } else { format!("{t}-stream") };
        let bw = curves(all, "bw", t, &limit_series(all, &bw_limit, t));
        if !bw.is_empty() {
            let name = format!("bandwidth-{t}.png");
            out(
                name.clone(),
                lines(
                    &dir.join(&name),
                    &format!("MPI streaming bandwidth over {t}, 8 messages in flight (higher is better)"),
                    "message size",
                    "MB/s",
                    Scale::Log,
                    Scale::Linear,
                    &bw,
                    &bytes,
                    &mbps,
                ),
            )?;
        }
        for imp in [Impl::Madmpi, Impl::Mpich, Impl::OpenMpi] {
            let panels = overlap_panels(all, t, imp);
            if !panels.is_empty() {
                let name = format!("overlap-{}-{t}.png", imp.key());
                out(
                    name.clone(),
                    heatmaps(
                        &dir.join(&name),
                        &format!(
                            "{} over {t}: overlap ratio (0 = perfect overlap, 1 = serialized, > 1 worse)",
                            imp.label()
                        ),
                        &panels,
                    ),
                )?;
            }
        }
        let rma_overlap: Vec<&Measurement> =
            all.iter().filter(|m| m.bench == "rma-overlap" && m.transport == t).collect();
        let mut columns: Vec<(Impl, String)> = rma_overlap.iter().map(|m| super::rma::column(m)).collect();
        columns.sort();
        columns.dedup();
        for col in columns {
            let sel: Vec<&Measurement> =
                rma_overlap.iter().copied().filter(|m| super::rma::column(m) == col).collect();
            let label = if col.1.is_empty() {
                col.0.label().to_string()
            } else {
                format!("{} ({})", col.0.label(), col.1)
            };
            let key = if col.1.is_empty() {
                col.0.key().to_string()
            } else {
                format!("{}-{}", col.0.key(), col.1.replace(' ', "-"))
            };
            let name = format!("rma-overlap-{key}-{t}.png");
            out(
                name.clone(),
                heatmaps(
                    &dir.join(&name),
                    &format!(
                        "{label} over {t}: lock + put + unlock overlapped with computation \
                         (0 = perfect overlap, 1 = serialized, > 1 worse)"
                    ),
                    &rma_overlap_panels(&sel),
                ),
            )?;
        }
        let lock_put: Vec<Measurement> =
            all.iter().filter(|m| m.bench == "rma" && m.case == "lock+put").cloned().collect();
        let rma = curves(&lock_put, "rma", t, &[]);
        if !rma.is_empty() {
            let name = format!("rma-lock-put-{t}.png");
            out(
                name.clone(),
                lines(
                    &dir.join(&name),
                    &format!("MPI_Win_lock + MPI_Put + MPI_Win_unlock over {t} (lower is better)"),
                    "message size",
                    "time per operation",
                    Scale::Log,
                    Scale::Log,
                    &rma,
                    &bytes,
                    &ns,
                ),
            )?;
        }
        let paper = curves(all, "overlap-paper", t, &[]);
        if !paper.is_empty() {
            let name = format!("overlap-paper-{t}.png");
            out(
                name.clone(),
                lines(
                    &dir.join(&name),
                    &format!(
                        "Sender's MPI_Send time while the receiver computes 50 ms ({t}; lower is better)"
                    ),
                    "message size",
                    "MPI_Send duration",
                    Scale::Log,
                    Scale::Log,
                    &paper,
                    &bytes,
                    &ns,
                ),
            )?;
        }
    }
    for (rate, goodput) in super::loss::goodput_curves(all) {
        let name = format!("loss-goodput-{rate}.png");
        out(
            name.clone(),
            lines(
                &dir.join(&name),
                &format!("Goodput under {rate} % packet loss, 8 messages in flight (log; higher is better)"),
                "message size",
                "MB/s",
                Scale::Log,
                Scale::Log,
                &goodput,
                &bytes,
                &mbps,
            ),
        )?;
    }
    for (name, title, series) in super::io::curves(all) {
        out(
            name.clone(),
            lines(
                &dir.join(&name),
                &title,
                "array size",
                "MB/s",
                Scale::Log,
                Scale::Log,
                &series,
                &bytes,
                &mbps,
            ),
        )?;
    }
    let timelines = super::failover::timelines(all);
    if !timelines.is_empty() {
        let name = "failover-timeline.png".to_string();
        out(
            name.clone(),
            lines(
                &dir.join(&name),
                "Rail failover: bandwidth around the cut (20 ms bins, 1 MiB messages)",
                "ms from the cut",
                "MB/s",
                Scale::Linear,
                Scale::Linear,
                &timelines,
                &|x: f64| format!("{x:.0}"),
                &mbps,
            ),
        )?;
    }
    for (kind, title) in [
        ("os", "Reactivity, OS compute threads on the receiver (4 B; lower is better)"),
        ("marcel", "Reactivity, marcel compute threads (MPICH, Open MPI: OS threads)"),
    ] {
        let (names, groups) = reactivity_bars(all, kind);
        if !groups.is_empty() {
            let name = format!("reactivity-{kind}.png");
            out(
                name.clone(),
                bars(&dir.join(&name), title, "one-way latency (ns)", &names, &groups, Scale::Log),
            )?;
        }
    }
    let simple: [(&str, &str, &str, Scale); 4] = [
        ("coll", "Collectives over shm, time per call (log; lower is better)", "ns per call", Scale::Log),
        ("overhead", "Progression overhead: one-way latency (lower is better)", "ns", Scale::Linear),
        (
            "sched",
            "marcel versus OS threads, per operation (log; lower is better)",
            "ns per operation",
            Scale::Log,
        ),
        (
            "mt",
            "MPI_THREAD_MULTIPLE message rate, 8-byte messages (higher is better)",
            "messages/s",
            Scale::Linear,
        ),
    ];
    for (bench, title, unit, scale) in simple {
        let (names, groups) = grouped(all, bench);
        if !groups.is_empty() {
            let name = format!("{bench}.png");
            out(name.clone(), bars(&dir.join(&name), title, unit, &names, &groups, scale))?;
        }
    }
    Ok(files)
}

/// One series per implementation (and our policy when several), x = size, plus `extra`.
fn curves(all: &[Measurement], bench: &str, transport: &str, extra: &[Series]) -> Vec<Series> {
    let mut by: BTreeMap<(Impl, String), Vec<(f64, f64)>> = BTreeMap::new();
    for m in all.iter().filter(|m| m.bench == bench && m.transport == transport && m.size > 0) {
        by.entry((m.imp, m.policy.clone())).or_default().push((m.size as f64, m.stat.median));
    }
    if by.is_empty() {
        return vec![];
    }
    let ours = by.keys().filter(|(i, _)| *i == Impl::Madmpi).count();
    let mut v: Vec<Series> = by
        .into_iter()
        .map(|((i, p), mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            // Our policies when several; a peer's variant (Open MPI's osc sm) always.
            let name = if (i == Impl::Madmpi && ours > 1) || (i != Impl::Madmpi && p != "default") {
                format!("{} ({p})", i.label())
            } else {
                i.label().into()
            };
            Series { name, points }
        })
        .collect();
    v.extend(extra.iter().map(|s| Series { name: s.name.clone(), points: s.points.clone() }));
    v
}

/// A limit measured at one size drawn flat over `span`.
fn limit_curve(
    all: &[Measurement],
    case: &str,
    transport: &str,
    span: (u64, u64),
    prefix: &str,
) -> Vec<Series> {
    all.iter()
        .filter(|m| m.bench == "limits" && m.case == case && m.transport == transport)
        .take(1)
        .map(|m| Series {
            name: format!("{prefix}{case}"),
            points: vec![(span.0 as f64, m.stat.median), (span.1 as f64, m.stat.median)],
        })
        .collect()
}

/// A limit measured per size.
fn limit_series(all: &[Measurement], case: &str, transport: &str) -> Vec<Series> {
    let mut points: Vec<(f64, f64)> = all
        .iter()
        .filter(|m| m.bench == "limits" && m.case == case && m.transport == transport)
        .map(|m| (m.size as f64, m.stat.median))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    if points.is_empty() { vec![] } else { vec![Series { name: format!("limit: {case}"), points }] }
}

fn overlap_panels(all: &[Measurement], transport: &str, imp: Impl) -> Vec<Heatmap> {
    let sel: Vec<&Measurement> =
        all.iter().filter(|m| m.bench == "overlap" && m.transport == transport && m.imp == imp).collect();
    let sides = [
        ("sender", "computation on the sender side"),
        ("receiver", "computation on the receiver side"),
        ("both", "computation on both sides"),
    ];
    side_panels(&sel, &sides, "computation time ÷ transfer time")
}

/// The one-sided overlap map of one library column (Open MPI's `osc sm` apart): origin, target,
/// both computing.
fn rma_overlap_panels(sel: &[&Measurement]) -> Vec<Heatmap> {
    let sides = [
        ("origin", "computation on the origin (put … unlock)"),
        ("target", "computation on the target (no MPI call)"),
        ("both", "computation on both sides"),
    ];
    side_panels(sel, &sides, "computation time ÷ epoch time")
}

/// One heatmap per computing side of `sel` (`(case, title)`): sizes up, factors across.
fn side_panels(sel: &[&Measurement], sides: &[(&str, &str)], x_label: &str) -> Vec<Heatmap> {
    let mut panels = Vec::new();
    for &(side, title) in sides {
        let cells: Vec<&&Measurement> = sel.iter().filter(|m| m.case == side).collect();
        if cells.is_empty() {
            continue;
        }
        let mut sizes: Vec<u64> = cells.iter().map(|m| m.size).collect();
        sizes.sort();
        sizes.dedup();
        let mut factors: Vec<f64> = cells.iter().filter_map(|m| m.extra_f64("factor")).collect();
        factors.sort_by(f64::total_cmp);
        factors.dedup();
        let values = sizes
            .iter()
            .map(|&s| {
                factors
                    .iter()
                    .map(|&f| {
                        cells
                            .iter()
                            .find(|m| m.size == s && m.extra_f64("factor") == Some(f))
                            .map(|m| m.stat.median)
                    })
                    .collect()
            })
            .collect();
        panels.push(Heatmap {
            title: title.into(),
            x_label: x_label.into(),
            y_label: "message size".into(),
            x_labels: factors.iter().map(|f| format!("{f}×")).collect(),
            y_labels: sizes.iter().map(|&s| human_bytes(s)).collect(),
            values,
        });
    }
    panels
}

/// Reactivity bars: groups = compute threads per core; series = ours per policy (with OS or
/// marcel compute threads), then MPICH and Open MPI (OS threads).
fn reactivity_bars(all: &[Measurement], kind: &str) -> (Vec<String>, Vec<BarGroup>) {
    let sel: Vec<&Measurement> =
        all.iter().filter(|m| m.bench == "reactivity" && (m.imp != Impl::Madmpi || m.case == kind)).collect();
    if !sel.iter().any(|m| m.imp == Impl::Madmpi) {
        return (vec![], vec![]);
    }
    let key = |m: &Measurement| {
        if m.imp == Impl::Madmpi { format!("madmpi {} ({})", m.case, m.policy) } else { m.imp.label().into() }
    };
    let mut names: Vec<(Impl, String)> = Vec::new();
    for m in &sel {
        let k = (m.imp, key(m));
        if !names.contains(&k) {
            names.push(k);
        }
    }
    names.sort();
    let mut threads: Vec<u32> = sel.iter().map(|m| m.threads).collect();
    threads.sort();
    threads.dedup();
    let groups = threads
        .iter()
        .map(|&t| BarGroup {
            label: format!("{t} threads/core"),
            values: names
                .iter()
                .map(|(_, n)| sel.iter().find(|m| m.threads == t && key(m) == *n).map(|m| m.stat.median))
                .collect(),
        })
        .collect();
    (names.into_iter().map(|(_, n)| n).collect(), groups)
}

/// A bar's group or series name, from its measurement.
type Label = fn(&Measurement) -> String;

/// Bars for the benchmarks whose rows are cases or thread counts: groups = the row, series =
/// implementation (and case, for overhead).
fn grouped(all: &[Measurement], bench: &str) -> (Vec<String>, Vec<BarGroup>) {
    let sel: Vec<&Measurement> = all.iter().filter(|m| m.bench == bench).collect();
    let (group, series): (Label, Label) = match bench {
        "overhead" => (|m| format!("{} {}", m.transport, human_bytes(m.size)), |m| m.case.clone()),
        "coll" => {
            (|m| format!("{} {} ×{}", m.case, human_bytes(m.size), m.threads), |m| m.imp.label().into())
        }
        "sched" => (
            |m| short_case(&m.case),
            |m| if m.imp == Impl::Madmpi { "madmpi (marcel)".into() } else { "OS threads".into() },
        ),
        _ => (
            |m| format!("{} thread{} per rank", m.threads, if m.threads == 1 { "" } else { "s" }),
            |m| m.imp.label().into(),
        ),
    };
    let mut names: Vec<String> = Vec::new();
    let mut labels: Vec<String> = Vec::new();
    for m in &sel {
        let (s, g) = (series(m), group(m));
        if !names.contains(&s) {
            names.push(s);
        }
        if !labels.contains(&g) {
            labels.push(g);
        }
    }
    let groups = labels
        .into_iter()
        .map(|g| BarGroup {
            values: names
                .iter()
                .map(|n| sel.iter().find(|m| group(m) == g && series(m) == *n).map(|m| m.stat.median))
                .collect(),
            label: g,
        })
        .collect();
    (names, groups)
}

/// Scheduler operations named short enough for a bar group.
fn short_case(case: &str) -> String {
    match case {
        "yield-switch" => "yield".into(),
        "pingpong-2cores" => "ping-pong".into(),
        "mutex-handoff-1core" => "mutex, 1 core".into(),
        "mutex-handoff-2cores" => "mutex, 2 cores".into(),
        "blocking-call" => "blocking call".into(),
        "resume-after-block" => "resume".into(),
        c => c.into(),
    }
}

/// Axis labels for times: `100 µs`, `2.5 ms`, `40 ns` (no trailing zeros).
fn axis_ns(v: f64) -> String {
    let (x, unit) = if v >= 1e9 {
        (v / 1e9, "s")
    } else if v >= 1e6 {
        (v / 1e6, "ms")
    } else if v >= 1e3 {
        (v / 1e3, "µs")
    } else {
        (v, "ns")
    };
    let t = format!("{x:.2}");
    let t = t.trim_end_matches('0').trim_end_matches('.');
    format!("{t} {unit}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn axis_labels_are_short() {
        assert_eq!(super::axis_ns(100e3), "100 µs");
        assert_eq!(super::axis_ns(2.5e6), "2.5 ms");
        assert_eq!(super::axis_ns(40.0), "40 ns");
    }
}
