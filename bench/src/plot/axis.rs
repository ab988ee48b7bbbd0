//! Chart axes: the [`Scale`], the range and ticks chosen for the data (the finest round tick set
//! whose labels fit), category axes, plain number labels, and the plotters coordinate that
//! carries our ticks.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;

use super::font::{TICK_PX, text_w};
use super::ticks::{Cand, linear_cands, log_cands, nice_floor};

/// How an axis maps values to positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Logarithmic: non-positive values are left out; ticks fall on powers (of 2 when every value on
    /// the axis is a power of two, as message sizes are; of 10 otherwise).
    Log,
}

/// A plotted axis with our own tick positions: `bold` carry labels and grid lines, `light` only
/// faint grid lines. (plotters' `WithKeyPoints` over `f64` cannot take a label formatter.)
#[derive(Clone)]
pub(super) struct KeyAxis {
    lo: f64,
    hi: f64,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl Ranged for KeyAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let span = self.hi - self.lo;
        if span.abs() < f64::MIN_POSITIVE || !span.is_finite() {
            return (limit.0 + limit.1) / 2;
        }
        let t = ((v - self.lo) / span).clamp(-10.0, 10.0);
        let t = if t.is_nan() { 0.0 } else { t };
        limit.0 + ((limit.1 - limit.0) as f64 * t + 1e-3).floor() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() { self.light.clone() } else { self.bold.clone() }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// A chart axis: plotted range (log10 of the values on a log axis), ticks with labels and the light
/// grid lines.
pub(super) struct Axis {
    pub(super) log: bool,
    pub(super) lo: f64,
    pub(super) hi: f64,
    pub(super) ticks: Vec<(f64, String)>,
    light: Vec<f64>,
}

impl Axis {
    /// Position of value `v` on the axis (None if it cannot be shown).
    pub(super) fn pos(&self, v: f64) -> Option<f64> {
        match (v.is_finite(), self.log) {
            (false, _) => None,
            (true, true) if v > 0.0 => Some(v.log10()),
            (true, true) => None,
            (true, false) => Some(v),
        }
    }

    pub(super) fn spec(&self) -> KeyAxis {
        KeyAxis {
            lo: self.lo,
            hi: self.hi,
            bold: self.ticks.iter().map(|t| t.0).collect(),
            light: self.light.clone(),
        }
    }

    pub(super) fn label(&self, p: f64) -> String {
        let tol = (self.hi - self.lo).abs() * 1e-9;
        self.ticks.iter().find(|t| (t.0 - p).abs() <= tol).map(|t| t.1.clone()).unwrap_or_default()
    }

    pub(super) fn max_label_w(&self, size: f64) -> f64 {
        self.ticks.iter().map(|t| text_w(&t.1, size)).fold(0.0, f64::max)
    }
}

/// What an axis should look like besides its data.
#[derive(Clone, Copy)]
pub(super) struct AxisOpts {
    /// Linear axes always show 0 (bars).
    pub(super) zero: bool,
    /// Linear axes show 0 when the data start near it.
    pub(super) zero_if_close: bool,
    /// Log axes start at a round value well below the data (bars rise from it).
    pub(super) log_floor: bool,
    /// Length of the axis in pixels.
    pub(super) px: f64,
    /// Labels stack vertically (y axis): their extent is their height, not their width.
    pub(super) vertical: bool,
}

/// Chooses range and ticks for `vals` (already filtered for the scale): the finest candidate
/// whose labels neither overlap nor repeat.
pub(super) fn build_axis(vals: &[f64], scale: Scale, fmt: &dyn Fn(f64) -> String, o: AxisOpts) -> Axis {
    let log = scale == Scale::Log;
    let min = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let max = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let cands = if log {
        let (mut la, mut lb) = if vals.is_empty() { (0.0, 1.0) } else { (min.log10(), max.log10()) };
        if lb - la < 1e-9 {
            la -= 0.5;
            lb += 0.5;
        }
        let d = lb - la;
        if o.log_floor {
            la = nice_floor(10f64.powf(la - (0.08 * d).max(0.3))).log10();
        } else {
            la -= (0.04 * d).max(0.05);
        }
        lb += (0.05 * d).max(0.05);
        let pow2 = !vals.is_empty() && vals.iter().all(|v| v.log2().fract() == 0.0);
        log_cands(la, lb, pow2)
    } else {
        let (mut lo, mut hi) = if vals.is_empty() { (0.0, 1.0) } else { (min, max) };
        if o.zero || (o.zero_if_close && lo >= 0.0 && lo <= 0.5 * hi) {
            lo = lo.min(0.0);
            hi = hi.max(0.0);
        }
        if hi - lo <= 0.0 || !(hi - lo).is_finite() {
            let d = if lo == 0.0 || !lo.is_finite() { 1.0 } else { lo.abs() * 0.5 };
            (lo, hi) = if o.zero && lo >= 0.0 { (0.0, lo + 2.0 * d) } else { (lo - d, hi + d) };
        }
        // Pad a little so that end points do not sit on the frame unless the range snaps to 0.
        let pad = 0.02 * (hi - lo);
        let lo2 = if lo == 0.0 { 0.0 } else { lo - pad };
        linear_cands(lo2, if hi == 0.0 { 0.0 } else { hi + pad }, true)
    };
    let to_pos = |v: f64| if log { v.log10() } else { v };
    let extent = |s: &str| if o.vertical { TICK_PX } else { text_w(s, TICK_PX) };
    let fits = |c: &Cand, labels: &[String]| {
        let min_gap = if o.vertical { 34.0 } else { 50.0 };
        c.ticks.len() >= 2
            && c.hi > c.lo
            && (0..c.ticks.len() - 1).all(|i| {
                let gap = (to_pos(c.ticks[i + 1]) - to_pos(c.ticks[i])) / (c.hi - c.lo) * o.px;
                let need = (extent(&labels[i]) + extent(&labels[i + 1])) / 2.0 + 12.0;
                gap >= need.max(min_gap) && labels[i] != labels[i + 1]
            })
    };
    let mut chosen: Option<(Cand, Vec<String>)> = None;
    for c in cands {
        let labels: Vec<String> = c.ticks.iter().map(|&t| fmt(t)).collect();
        if fits(&c, &labels) {
            chosen = Some((c, labels));
            break;
        }
        // Fallback: the coarsest set that still has a tick.
        if !c.ticks.is_empty() {
            chosen = Some((c, labels));
        }
    }
    match chosen {
        Some((c, labels)) => Axis {
            log,
            lo: c.lo,
            hi: c.hi,
            ticks: c.ticks.iter().map(|&t| to_pos(t)).zip(labels).collect(),
            light: c.light.iter().map(|&t| to_pos(t)).collect(),
        },
        None => Axis { log, lo: 0.0, hi: 1.0, ticks: Vec::new(), light: Vec::new() },
    }
}

/// An axis of `n` categories (one unit each) labelled at their centres; when the labels do not
/// fit `px` pixels, only every k-th category is labelled.
pub(super) fn category_axis(labels: &[String], n: usize, px: f64, vertical: bool) -> Axis {
    let label = |i: usize| labels.get(i).cloned().unwrap_or_default();
    let widest =
        (0..n).map(|i| if vertical { TICK_PX } else { text_w(&label(i), TICK_PX) }).fold(0.0, f64::max);
    let slot = px / n.max(1) as f64;
    let k = if slot > 0.0 { ((widest + 16.0) / slot).ceil().max(1.0) as usize } else { 1 };
    Axis {
        log: false,
        lo: 0.0,
        hi: n.max(1) as f64,
        ticks: (0..n).filter(|i| i % k == 0).map(|i| (i as f64 + 0.5, label(i))).collect(),
        light: Vec::new(),
    }
}

/// Plain tick labels for axes without a formatter: `0.5`, `20`, `1500`, `25k`, `3M`, `1e-5`.
pub(super) fn plain_number(v: f64) -> String {
    fn trim(s: String) -> String {
        if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
    }
    let a = v.abs();
    if !v.is_finite() {
        format!("{v}")
    } else if v == 0.0 {
        "0".into()
    } else if a >= 1e4 {
        let (d, u) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
            .into_iter()
            .find(|&(d, _)| a >= d)
            .unwrap_or((1e3, "k"));
        format!("{}{u}", trim(format!("{:.2}", v / d)))
    } else if a >= 1e-3 {
        trim(format!("{v:.3}"))
    } else {
        format!("{v:e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::tests::{bytes, font_present, micros, num};

    #[test]
    fn ticks_are_round_and_distinct() {
        font_present();
        let o = AxisOpts { zero: false, zero_if_close: false, log_floor: false, px: 800.0, vertical: false };
        let sizes: Vec<f64> = (0..=22).map(|k| (1u64 << k) as f64).collect();
        let a = build_axis(&sizes, Scale::Log, &bytes, o);
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert!(labels.contains(&"1 KiB") && labels.contains(&"1 MiB"), "{labels:?}");
        let lat = [0.8, 3.0, 40.0, 500.0];
        let a = build_axis(&lat, Scale::Log, &micros, AxisOpts { vertical: true, px: 450.0, ..o });
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert!(labels.contains(&"1 µs") && labels.contains(&"100 µs"), "{labels:?}");
        let a = build_axis(&[0.1, 0.7], Scale::Linear, &num, o);
        assert!(a.ticks.iter().all(|t| t.1.len() <= 4), "{:?}", a.ticks);
        assert!(a.ticks.windows(2).all(|w| w[0].1 != w[1].1));
    }
}
