//! What every `madbench` measurement is: one row of the tables, one JSON object, one CSV line.
//!
//! A measurement names what was measured (`bench`, `case`), on which implementation (`imp`),
//! transport, message size, thread count and pioman policy, and carries the median, min and max
//! over its repetitions in `unit`. Benchmark-specific parameters (the overlap benchmark's
//! computation time and side, for instance) go in `extra`. This module owns the record and its
//! statistics; it runs nothing.

use std::collections::BTreeMap;

/// Who produced a figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Impl {
    /// Our runtime (madmpi over nmad, pioman, marcel).
    Madmpi,
    Mpich,
    OpenMpi,
    /// A physical limit of the machine (cache line, memcpy, raw TCP), measured in the same run.
    Limit,
    /// The operating system's own mechanism, the baseline of the scheduler benchmarks
    /// (OS threads, futex-based mutexes).
    Os,
}

impl Impl {
    /// The JSON value of `impl`.
    pub fn key(self) -> &'static str {
        match self {
            Impl::Madmpi => "madmpi",
            Impl::Mpich => "mpich",
            Impl::OpenMpi => "openmpi",
            Impl::Limit => "limit",
            Impl::Os => "os",
        }
    }

    /// The column title.
    pub fn label(self) -> &'static str {
        match self {
            Impl::Madmpi => "madmpi",
            Impl::Mpich => "MPICH",
            Impl::OpenMpi => "Open MPI",
            Impl::Limit => "limit",
            Impl::Os => "OS",
        }
    }

    pub fn from_key(s: &str) -> Option<Impl> {
        [Impl::Madmpi, Impl::Mpich, Impl::OpenMpi, Impl::Limit, Impl::Os].into_iter().find(|i| i.key() == s)
    }
}

/// Median, minimum and maximum over repetitions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stat {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Stat {
    /// The statistics of `samples` (sorted in place); `None` if empty or not all finite.
    pub fn of(samples: &mut [f64]) -> Option<Stat> {
        if samples.is_empty() || samples.iter().any(|v| !v.is_finite()) {
            return None;
        }
        samples.sort_by(f64::total_cmp);
        Some(Stat { median: median_sorted(samples), min: samples[0], max: samples[samples.len() - 1] })
    }

    /// Several runs' statistics as one: the median of the medians, the smallest min and the
    /// largest max (runs are interleaved rounds of the same measurement).
    pub fn combine(runs: &[Stat]) -> Option<Stat> {
        let mut m: Vec<f64> = runs.iter().map(|s| s.median).collect();
        let mut s = Stat::of(&mut m)?;
        s.min = runs.iter().map(|r| r.min).fold(f64::INFINITY, f64::min);
        s.max = runs.iter().map(|r| r.max).fold(f64::NEG_INFINITY, f64::max);
        Some(s)
    }
}

fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

/// One measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    /// `pingpong`, `bw`, `overlap`, `overlap-paper`, `reactivity`, `overhead`, `sched`, `mt`,
    /// `limits`.
    pub bench: String,
    /// What within the bench (`spawn+join`, `sender`, `marcel`, `memcpy`…); empty if the bench
    /// measures one thing.
    pub case: String,
    pub imp: Impl,
    /// `shm`, `tcp`, or `-` where no network is involved.
    pub transport: String,
    /// Message size in bytes (0 where sizes do not apply).
    pub size: u64,
    /// Threads involved (compute threads per core for reactivity, threads per rank for mt; 1
    /// otherwise).
    pub threads: u32,
    /// The pioman policy for madmpi, `default` for the other libraries.
    pub policy: String,
    pub stat: Stat,
    /// `ns`, `MB/s`, `msg/s`, `ratio`.
    pub unit: String,
    /// Benchmark-specific parameters (numbers or strings).
    pub extra: BTreeMap<String, serde_json::Value>,
}

impl Measurement {
    /// A measurement with `threads` 1, policy `default`, no extra parameters.
    pub fn new(
        bench: &str,
        case: &str,
        imp: Impl,
        transport: &str,
        size: u64,
        stat: Stat,
        unit: &str,
    ) -> Self {
        Measurement {
            bench: bench.into(),
            case: case.into(),
            imp,
            transport: transport.into(),
            size,
            threads: 1,
            policy: "default".into(),
            stat,
            unit: unit.into(),
            extra: BTreeMap::new(),
        }
    }

    pub fn threads(mut self, n: u32) -> Self {
        self.threads = n;
        self
    }

    pub fn policy(mut self, p: &str) -> Self {
        self.policy = p.into();
        self
    }

    pub fn with(mut self, key: &str, v: impl Into<serde_json::Value>) -> Self {
        self.extra.insert(key.into(), v.into());
        self
    }

    /// An extra parameter as a number.
    pub fn extra_f64(&self, key: &str) -> Option<f64> {
        self.extra.get(key).and_then(|v| v.as_f64())
    }

    /// The JSON object (`--json` writes one per line).
    pub fn to_json(&self) -> serde_json::Value {
        let mut o = serde_json::Map::new();
        o.insert("bench".into(), self.bench.clone().into());
        o.insert("case".into(), self.case.clone().into());
        o.insert("impl".into(), self.imp.key().into());
        o.insert("transport".into(), self.transport.clone().into());
        o.insert("size".into(), self.size.into());
        o.insert("threads".into(), self.threads.into());
        o.insert("policy".into(), self.policy.clone().into());
        o.insert("median".into(), self.stat.median.into());
        o.insert("min".into(), self.stat.min.into());
        o.insert("max".into(), self.stat.max.into());
        o.insert("unit".into(), self.unit.clone().into());
        for (k, v) in &self.extra {
            o.entry(k.clone()).or_insert_with(|| v.clone());
        }
        serde_json::Value::Object(o)
    }

    /// Everything but the figures: measurements with the same key are rounds of one thing.
    pub fn key(&self) -> String {
        let extra: Vec<String> = self.extra.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!(
            "{}|{}|{}|{}|{}|{}|{}|{}|{}",
            self.bench,
            self.case,
            self.imp.key(),
            self.transport,
            self.size,
            self.threads,
            self.policy,
            self.unit,
            extra.join(",")
        )
    }
}

/// Merges rounds: measurements with the same key become one (`Stat::combine`), in the order
/// their keys first appear.
pub fn merge_rounds(all: Vec<Measurement>) -> Vec<Measurement> {
    let mut order: Vec<String> = Vec::new();
    let mut groups: BTreeMap<String, Vec<Measurement>> = BTreeMap::new();
    for m in all {
        let k = m.key();
        if !groups.contains_key(&k) {
            order.push(k.clone());
        }
        groups.entry(k).or_default().push(m);
    }
    order
        .into_iter()
        .filter_map(|k| {
            let g = groups.remove(&k)?;
            let stats: Vec<Stat> = g.iter().map(|m| m.stat).collect();
            let mut m = g.into_iter().next()?;
            m.stat = Stat::combine(&stats)?;
            Some(m)
        })
        .collect()
}

/// Parses the measurement lines the C programs in `bench/mpi/` print:
///
/// `m bench=<b> [case=<c>] [size=<bytes>] [threads=<n>] median=<x> min=<x> max=<x> unit=<u> [k=v]…`
///
/// Keys other than those are extra parameters (numbers when they parse as numbers). The
/// implementation, transport and policy are the conductor's to fill in. Other lines are
/// ignored, except `# library <version>`, returned first. A malformed `m` line is an error.
pub fn parse_program_output(
    text: &str,
    imp: Impl,
    transport: &str,
    policy: &str,
) -> Result<(String, Vec<Measurement>), String> {
    let mut library = String::new();
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("# library ") {
            library = v.trim().to_string();
            continue;
        }
        let Some(rest) = line.strip_prefix("m ") else { continue };
        let bad = |why: &str| format!("malformed measurement line ({why}): {line:?}");
        let mut fields: BTreeMap<&str, &str> = BTreeMap::new();
        for kv in rest.split_whitespace() {
            let (k, v) = kv.split_once('=').ok_or_else(|| bad("not key=value"))?;
            if fields.insert(k, v).is_some() {
                return Err(bad("repeated key"));
            }
        }
        let num = |k: &str| -> Result<f64, String> {
            fields
                .get(k)
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|v| v.is_finite())
                .ok_or_else(|| bad(&format!("{k} missing or not a number")))
        };
        let stat = Stat { median: num("median")?, min: num("min")?, max: num("max")? };
        let bench = fields.get("bench").ok_or_else(|| bad("no bench"))?;
        let unit = fields.get("unit").ok_or_else(|| bad("no unit"))?;
        let size = match fields.get("size") {
            Some(v) => v.parse::<u64>().map_err(|_| bad("size"))?,
            None => 0,
        };
        let threads = match fields.get("threads") {
            Some(v) => v.parse::<u32>().map_err(|_| bad("threads"))?,
            None => 1,
        };
        let mut m =
            Measurement::new(bench, fields.get("case").unwrap_or(&""), imp, transport, size, stat, unit)
                .threads(threads)
                .policy(policy);
        for (k, v) in &fields {
            if !["bench", "case", "size", "threads", "median", "min", "max", "unit"].contains(k) {
                let val = match v.parse::<f64>() {
                    Ok(x) if x.is_finite() => serde_json::json!(x),
                    _ => serde_json::json!(v),
                };
                m.extra.insert((*k).to_string(), val);
            }
        }
        out.push(m);
    }
    if library.is_empty() {
        return Err("no `# library` line".into());
    }
    if out.is_empty() {
        return Err("no measurement".into());
    }
    Ok((library, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_of_samples() {
        let s = Stat::of(&mut [5.0, 1.0, 3.0]).unwrap();
        assert_eq!(s, Stat { median: 3.0, min: 1.0, max: 5.0 });
        assert_eq!(Stat::of(&mut [4.0, 1.0, 3.0, 2.0]).unwrap().median, 2.5);
        assert!(Stat::of(&mut []).is_none());
        assert!(Stat::of(&mut [1.0, f64::NAN]).is_none());
    }

    #[test]
    fn rounds_merge_by_key() {
        let m = |v: f64, size| {
            Measurement::new(
                "pingpong",
                "",
                Impl::Mpich,
                "shm",
                size,
                Stat { median: v, min: v - 1.0, max: v + 1.0 },
                "ns",
            )
        };
        let merged = merge_rounds(vec![m(3.0, 0), m(10.0, 8), m(1.0, 0), m(2.0, 0)]);
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0].size, 0);
        assert_eq!(merged[0].stat, Stat { median: 2.0, min: 0.0, max: 4.0 });
        assert_eq!(merged[1].stat.median, 10.0);
    }

    #[test]
    fn json_has_the_required_keys() {
        let m = Measurement::new(
            "overlap",
            "sender",
            Impl::Madmpi,
            "shm",
            1024,
            Stat { median: 0.5, min: 0.1, max: 0.9 },
            "ratio",
        )
        .with("compute_ns", 2000.0);
        let j = m.to_json();
        for k in ["bench", "impl", "transport", "size", "threads", "policy", "median", "min", "max", "unit"] {
            assert!(j.get(k).is_some(), "{k}");
        }
        assert_eq!(j["impl"], "madmpi");
        assert_eq!(j["compute_ns"], 2000.0);
    }

    #[test]
    fn parses_program_lines() {
        let text = "# library MPICH Version:\t4.0.2\nnoise\nm bench=overlap case=sender size=1024 median=1.5 min=1 max=2 unit=ratio compute_ns=500 note=x\n";
        let (lib, v) = parse_program_output(text, Impl::Mpich, "shm", "default").unwrap();
        assert_eq!(lib, "MPICH Version:\t4.0.2");
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].size, 1024);
        assert_eq!(v[0].threads, 1);
        assert_eq!(v[0].extra_f64("compute_ns"), Some(500.0));
        assert_eq!(v[0].extra["note"], "x");
    }

    #[test]
    fn rejects_malformed_program_lines() {
        let ok = "# library X\n";
        for bad in [
            "m bench=a median=1 min=1 unit=ns",
            "m bench=a median=nan min=1 max=1 unit=ns",
            "m median=1 min=1 max=1 unit=ns",
            "m bench=a median=1 min=1 max=1",
            "m bench=a size=-1 median=1 min=1 max=1 unit=ns",
            "m bench=a median=1 min=1 max=1 unit=ns junk",
            "m bench=a bench=b median=1 min=1 max=1 unit=ns",
        ] {
            assert!(
                parse_program_output(&format!("{ok}{bad}\n"), Impl::Madmpi, "shm", "poll").is_err(),
                "{bad}"
            );
        }
        assert!(
            parse_program_output("m bench=a median=1 min=1 max=1 unit=ns\n", Impl::Madmpi, "shm", "p")
                .is_err()
        );
        assert!(parse_program_output(ok, Impl::Madmpi, "shm", "p").is_err());
    }
}
