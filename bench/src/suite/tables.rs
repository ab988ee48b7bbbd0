//! The tables madbench prints: one per benchmark (and transport), rows of measurements side by
//! side with the ratio of ours to each peer. This module only arranges measurements; it runs
//! nothing and writes no file.

use crate::mpi::human_bytes;
use crate::record::{Impl, Measurement};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// A table: rows of optional values under columns, with ratio columns `ours ÷ peer`.
#[derive(Debug, Default)]
pub struct Table {
    pub title: String,
    /// What the row label column holds (`size`, `threads`…).
    pub row_head: String,
    pub columns: Vec<String>,
    pub rows: Vec<(String, Vec<Option<f64>>)>,
    /// (ours, peer) column indices; the ratio column is `ours ÷ peer`, or for unit `ratio`
    /// (overlap ratios, near 0 when good) the difference `ours − peer`.
    pub ratios: Vec<(usize, usize)>,
    /// Ratio columns `ours ÷ the best of peers` (the highest for a unit where more is better,
    /// the lowest otherwise), each with its heading: (ours, peers, heading).
    pub best_ratios: Vec<(usize, Vec<usize>, String)>,
    /// Per row (empty: none), per column, the (min, max) printed after the median.
    pub ranges: Vec<Vec<Option<(f64, f64)>>>,
    pub unit: String,
}

impl Table {
    /// Markdown, the values formatted for their unit.
    pub fn render(&self) -> String {
        let diff = self.unit == "ratio";
        let mut s = format!("{}\n\n| {} |", self.title, self.row_head);
        for c in &self.columns {
            let _ = write!(s, " {c} |");
        }
        let op = if diff { "−" } else { "÷" };
        let ours: std::collections::BTreeSet<usize> = self.ratios.iter().map(|r| r.0).collect();
        for &(a, b) in &self.ratios {
            // With one column of ours, "÷ MPICH" says it all.
            let lhs = if ours.len() == 1 { String::new() } else { format!("{} ", self.columns[a]) };
            let _ = write!(s, " {lhs}{op} {} |", self.columns[b]);
        }
        for (_, _, heading) in &self.best_ratios {
            let _ = write!(s, " {heading} |");
        }
        s.push_str("\n|---|");
        s.push_str(&"---:|".repeat(self.columns.len() + self.ratios.len() + self.best_ratios.len()));
        s.push('\n');
        let ratio = |r: Option<f64>| r.filter(|r| r.is_finite()).map_or("-".into(), |r| format!("{r:.2}"));
        for (i, (label, vals)) in self.rows.iter().enumerate() {
            let _ = write!(s, "| {label} |");
            for (c, v) in vals.iter().enumerate() {
                let range = self.ranges.get(i).and_then(|r| r.get(c).copied().flatten());
                let cell = match (v, range) {
                    (None, _) => "-".into(),
                    (Some(v), None) => format_value(*v, &self.unit),
                    (Some(v), Some((lo, hi))) => format!(
                        "{} ({}–{})",
                        format_value(*v, &self.unit),
                        format_value(lo, &self.unit),
                        format_value(hi, &self.unit)
                    ),
                };
                let _ = write!(s, " {cell} |");
            }
            for &(a, b) in &self.ratios {
                let r = vals[a].zip(vals[b]).map(|(x, y)| if diff { x - y } else { x / y });
                let _ = write!(s, " {} |", ratio(r));
            }
            for (a, peers, _) in &self.best_ratios {
                let best = peers
                    .iter()
                    .filter_map(|&p| vals[p])
                    .reduce(|x, y| if higher_is_better(&self.unit) { x.max(y) } else { x.min(y) });
                let _ = write!(s, " {} |", ratio(vals[*a].zip(best).map(|(x, y)| x / y)));
            }
            s.push('\n');
        }
        s
    }
}

/// `1234.5` ns → `1.23 µs`; MB/s and msg/s as integers; ratios with two decimals.
pub fn format_value(v: f64, unit: &str) -> String {
    match unit {
        "ns" => crate::human_ns(v),
        "MB/s" => format!("{v:.0}"),
        "msg/s" if v >= 1e6 => format!("{:.2} M", v / 1e6),
        "msg/s" => format!("{:.0} k", v / 1e3),
        _ => format!("{v:.2}"),
    }
}

/// Whether more is better for this unit (bandwidth, message rate).
pub fn higher_is_better(unit: &str) -> bool {
    unit == "MB/s" || unit == "msg/s"
}

/// What "ours is faster" looks like in a ratio column.
pub fn reading(unit: &str) -> &'static str {
    match unit {
        "ratio" => "difference < 0: madmpi overlaps better",
        u if higher_is_better(u) => "ratio > 1: madmpi better",
        _ => "ratio < 1: madmpi faster",
    }
}

fn of<'a>(ms: &'a [Measurement], bench: &str) -> impl Iterator<Item = &'a Measurement> {
    let bench = bench.to_string();
    ms.iter().filter(move |m| m.bench == bench)
}

/// The MPI comparison of `bench` over `transport`: one row per size, columns madmpi (one per
/// policy seen), MPICH, Open MPI, and a limit if `limit` gives one for the size.
pub fn by_size(
    ms: &[Measurement],
    bench: &str,
    transport: &str,
    title: &str,
    limit: &dyn Fn(u64) -> Option<f64>,
) -> Option<Table> {
    let sel: Vec<&Measurement> = of(ms, bench).filter(|m| m.transport == transport).collect();
    if sel.is_empty() {
        return None;
    }
    let mut cols: Vec<(Impl, String)> = Vec::new();
    for m in &sel {
        let c = (m.imp, column_policy(m));
        if !cols.contains(&c) {
            cols.push(c);
        }
    }
    cols.sort();
    let mut sizes: Vec<u64> = sel.iter().map(|m| m.size).collect();
    sizes.sort();
    sizes.dedup();
    let has_limit = sizes.iter().any(|&s| limit(s).is_some());
    let mut t = Table {
        title: format!("{title} ({})", reading(&sel[0].unit)),
        row_head: "size".into(),
        columns: cols.iter().map(|(i, p)| column_name(*i, p)).collect(),
        unit: sel[0].unit.clone(),
        ..Default::default()
    };
    if has_limit {
        t.columns.push("limit".into());
    }
    ratio_columns(&mut t, &cols);
    for s in sizes {
        let mut vals: Vec<Option<f64>> = cols
            .iter()
            .map(|(i, p)| {
                sel.iter()
                    .find(|m| m.size == s && m.imp == *i && column_policy(m) == *p)
                    .map(|m| m.stat.median)
            })
            .collect();
        if has_limit {
            vals.push(limit(s));
        }
        t.rows.push((human_bytes(s), vals));
    }
    Some(t)
}

fn column_policy(m: &Measurement) -> String {
    if m.imp == Impl::Madmpi { m.policy.clone() } else { String::new() }
}

fn column_name(i: Impl, policy: &str) -> String {
    if policy.is_empty() { i.label().to_string() } else { format!("{} ({policy})", i.label()) }
}

/// Ratio columns: every madmpi column against every peer column (MPICH, Open MPI, OS), and
/// against the limit if there is one.
fn ratio_columns(t: &mut Table, cols: &[(Impl, String)]) {
    let ours: Vec<usize> = (0..cols.len()).filter(|&i| cols[i].0 == Impl::Madmpi).collect();
    let peers: Vec<usize> = (0..cols.len()).filter(|&i| cols[i].0 != Impl::Madmpi).collect();
    for &o in &ours {
        for &p in &peers {
            t.ratios.push((o, p));
        }
        if t.columns.len() > cols.len() {
            t.ratios.push((o, cols.len()));
        }
    }
}

/// The overlap tables: for each side, one row per size, per implementation the median of its
/// overlap ratios over the computation times (the heatmaps show every cell).
pub fn overlap(ms: &[Measurement], transport: &str) -> Vec<Table> {
    let sel: Vec<&Measurement> = of(ms, "overlap").filter(|m| m.transport == transport).collect();
    let mut out = Vec::new();
    for side in ["sender", "receiver", "both"] {
        let side_ms: Vec<&Measurement> = sel.iter().copied().filter(|m| m.case == side).collect();
        if side_ms.is_empty() {
            continue;
        }
        let mut by: BTreeMap<(u64, Impl), Vec<f64>> = BTreeMap::new();
        for m in &side_ms {
            by.entry((m.size, m.imp)).or_default().push(m.stat.median);
        }
        let mut imps: Vec<Impl> = side_ms.iter().map(|m| m.imp).collect();
        imps.sort();
        imps.dedup();
        let mut t = Table {
            title: format!(
                "Overlap over {transport}, computation on {}: median overlap ratio over computation \
                 times 0.25–2× the transfer (0 = perfect overlap, 1 = serialized; {})",
                if side == "both" { "both sides".to_string() } else { format!("the {side} side") },
                reading("ratio")
            ),
            row_head: "size".into(),
            columns: imps.iter().map(|i| i.label().to_string()).collect(),
            unit: "ratio".into(),
            ..Default::default()
        };
        let cols: Vec<(Impl, String)> = imps.iter().map(|&i| (i, String::new())).collect();
        ratio_columns(&mut t, &cols);
        let mut sizes: Vec<u64> = side_ms.iter().map(|m| m.size).collect();
        sizes.sort();
        sizes.dedup();
        for s in sizes {
            let vals = imps
                .iter()
                .map(|&i| by.get_mut(&(s, i)).and_then(|v| crate::record::Stat::of(v)).map(|st| st.median))
                .collect();
            t.rows.push((human_bytes(s), vals));
        }
        out.push(t);
    }
    out
}

/// Tables with one row per `row` value and one column per implementation (and policy), for
/// benchmarks whose rows are cases or thread counts (reactivity, mt, sched, overhead, limits).
pub fn pivot(
    ms: &[Measurement],
    bench: &str,
    title: &str,
    row_head: &str,
    row: &dyn Fn(&Measurement) -> String,
    column: &dyn Fn(&Measurement) -> (Impl, String),
) -> Option<Table> {
    let sel: Vec<&Measurement> = of(ms, bench).collect();
    if sel.is_empty() {
        return None;
    }
    let mut cols: Vec<(Impl, String)> = Vec::new();
    let mut rows: Vec<String> = Vec::new();
    for m in &sel {
        let c = column(m);
        if !cols.contains(&c) {
            cols.push(c);
        }
        let r = row(m);
        if !rows.contains(&r) {
            rows.push(r);
        }
    }
    cols.sort();
    let unit = sel[0].unit.clone();
    let mut t = Table {
        title: title.to_string(),
        row_head: row_head.into(),
        columns: cols.iter().map(|(i, p)| column_name(*i, p)).collect(),
        unit,
        ..Default::default()
    };
    ratio_columns(&mut t, &cols);
    if !t.ratios.is_empty() {
        t.title = format!("{title} ({})", reading(&t.unit));
    }
    for r in rows {
        let vals = cols
            .iter()
            .map(|c| sel.iter().find(|m| row(m) == r && column(m) == *c).map(|m| m.stat.median))
            .collect();
        t.rows.push((r, vals));
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Stat;

    fn m(bench: &str, imp: Impl, t: &str, size: u64, v: f64, unit: &str) -> Measurement {
        Measurement::new(bench, "", imp, t, size, Stat { median: v, min: v, max: v }, unit)
    }

    #[test]
    fn mpi_tables_have_columns_ratios_and_limits() {
        let ms = vec![
            m("pingpong", Impl::Madmpi, "shm", 0, 600.0, "ns").policy("adaptive"),
            m("pingpong", Impl::Mpich, "shm", 0, 200.0, "ns"),
            m("pingpong", Impl::OpenMpi, "shm", 0, 150.0, "ns"),
            m("pingpong", Impl::Madmpi, "shm", 1024, 900.0, "ns").policy("adaptive"),
            m("pingpong", Impl::Mpich, "tcp", 0, 7000.0, "ns"),
        ];
        let t = by_size(&ms, "pingpong", "shm", "Latency", &|s| (s == 0).then_some(50.0)).unwrap();
        assert_eq!(t.columns, ["madmpi (adaptive)", "MPICH", "Open MPI", "limit"]);
        assert_eq!(t.ratios, [(0, 1), (0, 2), (0, 3)]);
        let r = t.render();
        let row = r.lines().find(|l| l.starts_with("| 0 B")).unwrap();
        assert_eq!(row, "| 0 B | 600.0 ns | 200.0 ns | 150.0 ns | 50.0 ns | 3.00 | 4.00 | 12.00 |");
        let row = r.lines().find(|l| l.starts_with("| 1 KiB")).unwrap();
        assert_eq!(row, "| 1 KiB | 900.0 ns | - | - | - | - | - | - |");
        assert!(by_size(&ms, "bw", "shm", "B", &|_| None).is_none());
    }

    #[test]
    fn overlap_tables_show_differences() {
        let mut ms = Vec::new();
        for (imp, v) in [(Impl::Madmpi, 0.1), (Impl::Mpich, 0.9)] {
            for f in [0.5, 1.0, 2.0] {
                ms.push(
                    Measurement::new(
                        "overlap",
                        "sender",
                        imp,
                        "shm",
                        1 << 20,
                        Stat { median: v * f, min: 0.0, max: 1.0 },
                        "ratio",
                    )
                    .with("factor", f),
                );
            }
        }
        let t = overlap(&ms, "shm");
        assert_eq!(t.len(), 1);
        let r = t[0].render();
        let row = r.lines().find(|l| l.starts_with("| 1 MiB")).unwrap();
        assert_eq!(row, "| 1 MiB | 0.10 | 0.90 | -0.80 |");
    }

    #[test]
    fn pivots_by_row_and_column() {
        let ms =
            vec![m("sched", Impl::Madmpi, "-", 0, 150.0, "ns"), m("sched", Impl::Os, "-", 0, 60000.0, "ns")];
        let t =
            pivot(&ms, "sched", "Scheduler", "operation", &|_| "spawn".into(), &|m| (m.imp, String::new()))
                .unwrap();
        assert_eq!(t.columns, ["madmpi", "OS"]);
        assert!(t.render().contains("| spawn | 150.0 ns | 60.00 µs | 0.00 |"));
        assert_eq!(format_value(2.5e6, "msg/s"), "2.50 M");
        assert!(higher_is_better("MB/s") && !higher_is_better("ns"));
    }
}
