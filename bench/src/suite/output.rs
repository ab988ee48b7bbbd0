//! What madbench leaves in `bench-results/`: the JSON lines (`--json`), one CSV file per
//! benchmark and the run's configuration. Plots are [`super::figures`]'s.

use crate::record::Measurement;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One JSON object per line, one line per measurement.
pub fn json_lines(ms: &[Measurement]) -> String {
    let mut s = String::new();
    for m in ms {
        s.push_str(&m.to_json().to_string());
        s.push('\n');
    }
    s
}

/// Per benchmark, a CSV table: the JSON keys as columns (extras after the fixed ones).
pub fn csv_by_bench(ms: &[Measurement]) -> BTreeMap<String, String> {
    const FIXED: [&str; 11] =
        ["bench", "case", "impl", "transport", "size", "threads", "policy", "median", "min", "max", "unit"];
    let mut by: BTreeMap<String, Vec<&Measurement>> = BTreeMap::new();
    for m in ms {
        by.entry(m.bench.clone()).or_default().push(m);
    }
    by.into_iter()
        .map(|(bench, v)| {
            let extras: BTreeSet<&String> = v.iter().flat_map(|m| m.extra.keys()).collect();
            let mut s: String = FIXED.join(",");
            for e in &extras {
                s.push(',');
                s.push_str(&csv_field(e));
            }
            s.push('\n');
            for m in v {
                let j = m.to_json();
                let cells: Vec<String> = FIXED
                    .iter()
                    .map(|k| k.to_string())
                    .chain(extras.iter().map(|e| e.to_string()))
                    .map(|k| match j.get(&k) {
                        Some(serde_json::Value::String(s)) => csv_field(s),
                        Some(serde_json::Value::Null) | None => String::new(),
                        Some(v) => v.to_string(),
                    })
                    .collect();
                s.push_str(&cells.join(","));
                s.push('\n');
            }
            (bench, s)
        })
        .collect()
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
}

/// Writes `text` to `dir/name`; the path written, or why not.
pub fn write(dir: &Path, name: &str, text: &str) -> Result<String, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let p = dir.join(name);
    std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
    Ok(p.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Impl, Stat};

    #[test]
    fn json_lines_parse_back() {
        let st = Stat { median: 2.0, min: 1.0, max: 3.0 };
        let ms = vec![
            Measurement::new("pingpong", "", Impl::Madmpi, "shm", 0, st, "ns"),
            Measurement::new("overlap", "both", Impl::Mpich, "tcp", 1024, st, "ratio").with("factor", 0.5),
        ];
        let text = json_lines(&ms);
        let v: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(v.len(), 2);
        assert_eq!(v[1]["factor"], 0.5);
        assert_eq!(v[0]["impl"], "madmpi");
    }

    #[test]
    fn csv_has_a_column_per_key() {
        let st = Stat { median: 2.0, min: 1.0, max: 3.0 };
        let ms = vec![
            Measurement::new("overlap", "both", Impl::Mpich, "tcp", 1024, st, "ratio").with("factor", 0.5),
            Measurement::new("overlap", "a,b", Impl::Madmpi, "tcp", 1024, st, "ratio"),
        ];
        let csv = csv_by_bench(&ms);
        let t = &csv["overlap"];
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "bench,case,impl,transport,size,threads,policy,median,min,max,unit,factor");
        assert_eq!(lines[1], "overlap,both,mpich,tcp,1024,1,default,2.0,1.0,3.0,ratio,0.5");
        assert_eq!(lines[2], "overlap,\"a,b\",madmpi,tcp,1024,1,default,2.0,1.0,3.0,ratio,");
    }
}
