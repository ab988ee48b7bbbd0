//! Candidate tick sets for an axis: round linear steps (1, 2, 5 × 10^k) and logarithmic ticks
//! (powers of 2, or of 10 with 2 and 5 between), each from fine to coarse; the axis picks one.

/// `10^e`, correctly rounded.
fn pow10(e: i32) -> f64 {
    format!("1e{e}").parse().unwrap_or_else(|_| 10f64.powi(e))
}

/// `m × 10^e`, correctly rounded.
fn mant(m: u32, e: i32) -> f64 {
    format!("{m}e{e}").parse().unwrap_or_else(|_| m as f64 * 10f64.powi(e))
}

/// Largest 1, 2 or 5 × 10^k not above `v` (> 0).
pub(super) fn nice_floor(v: f64) -> f64 {
    let e = v.log10().floor() as i32;
    [5, 2, 1].into_iter().map(|m| mant(m, e)).find(|&t| t <= v).unwrap_or_else(|| pow10(e - 1) * 5.0)
}

/// A candidate tick set: plotted range and tick values (data units).
pub(super) struct Cand {
    pub(super) lo: f64,
    pub(super) hi: f64,
    pub(super) ticks: Vec<f64>,
    pub(super) light: Vec<f64>,
}

/// Evenly spaced round ticks (1, 2, 5 × 10^k steps) from fine to coarse over `lo..hi` (data
/// units). `snap` widens the range to the outer ticks; otherwise ticks stay inside it.
pub(super) fn linear_cands(lo: f64, hi: f64, snap: bool) -> Vec<Cand> {
    let span = hi - lo;
    if !(span.is_finite() && span > 0.0) {
        return Vec::new();
    }
    let e0 = span.log10().floor() as i32;
    let mut out = Vec::new();
    for e in e0 - 2..=e0 + 1 {
        for m in [1u32, 2, 5] {
            // step = num / den, with den an exact power of ten so that ticks print round.
            let (num, den) = if e >= 0 { (mant(m, e), 1.0) } else { (m as f64, pow10(-e)) };
            let step = num / den;
            let n = span / step;
            if !(0.5..=60.0).contains(&n) {
                continue;
            }
            let (a, b) = if snap {
                ((lo / step + 1e-9).floor(), (hi / step - 1e-9).ceil())
            } else {
                ((lo / step - 1e-9).ceil(), (hi / step + 1e-9).floor())
            };
            if b < a {
                continue;
            }
            let ticks: Vec<f64> = (a as i64..=b as i64).map(|i| i as f64 * num / den).collect();
            let (l, h) = if snap { (a * num / den, b * num / den) } else { (lo, hi) };
            out.push(Cand { lo: l, hi: h, ticks, light: Vec::new() });
        }
    }
    out
}

/// Tick sets for a log axis over `la..lb` (log10 units), fine to coarse.
pub(super) fn log_cands(la: f64, lb: f64, pow2: bool) -> Vec<Cand> {
    let inside = |v: f64| {
        let p = v.log10();
        p >= la - 1e-9 && p <= lb + 1e-9
    };
    let d = lb - la;
    let mut out = Vec::new();
    if pow2 {
        let l2 = std::f64::consts::LOG2_10;
        let (ea, eb) = (((la * l2).ceil() as i32).max(-1070), ((lb * l2).floor() as i32).min(1020));
        let all: Vec<f64> = (ea..=eb).map(|e| 2f64.powi(e)).collect();
        for k in [1, 2, 5, 10, 20, 50, 100] {
            let ticks: Vec<f64> = (ea..=eb).filter(|e| e.rem_euclid(k) == 0).map(|e| 2f64.powi(e)).collect();
            let light = if k > 1 && all.len() <= 120 { all.clone() } else { Vec::new() };
            out.push(Cand { lo: la, hi: lb, ticks, light });
        }
    }
    if d < 1.0 {
        // Less than a decade: round linear steps, placed logarithmically.
        for c in linear_cands(10f64.powf(la), 10f64.powf(lb), false) {
            let ticks = c.ticks.into_iter().filter(|&t| t > 0.0 && inside(t)).collect();
            out.push(Cand { lo: la, hi: lb, ticks, light: Vec::new() });
        }
    }
    let (ea, eb) = ((la.floor() as i32).max(-320), (lb.ceil() as i32).min(310));
    let sub: Vec<f64> = if eb - ea <= 12 {
        (ea..=eb).flat_map(|e| (1..10).map(move |m| mant(m, e))).filter(|&v| inside(v)).collect()
    } else {
        Vec::new()
    };
    if d <= 4.0 {
        let ticks = (ea..=eb).flat_map(|e| [1, 2, 5].map(|m| mant(m, e))).filter(|&v| inside(v)).collect();
        out.push(Cand { lo: la, hi: lb, ticks, light: sub.clone() });
    }
    for k in [1, 2, 3, 5, 10, 20, 50, 100] {
        let ticks = (ea..=eb).filter(|e| e.rem_euclid(k) == 0).map(pow10).filter(|&v| inside(v)).collect();
        let light = if k == 1 { sub.clone() } else { (ea..=eb).map(pow10).filter(|&v| inside(v)).collect() };
        out.push(Cand { lo: la, hi: lb, ticks, light });
    }
    out
}
