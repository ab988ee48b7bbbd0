//! The overlap colour scale of heatmaps: green at 0 (perfect overlap), yellow-orange at 1
//! (serialized), red from 2 on; grey for cells not measured; the readable text colour on each; and
//! the colour bar that explains it.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::canvas::{Area, draw_text, es};
use super::font::{TICK_PX, text};
use super::palette::{AXIS_GREY, INK};

/// Cells not measured.
pub(super) const MISSING_GREY: RGBColor = RGBColor(205, 205, 205);

/// Colour of an overlap ratio: green at 0, yellow-orange at 1, red from 2 on.
pub(super) fn overlap_colour(v: f64) -> RGBColor {
    const STOPS: [(f64, (f64, f64, f64)); 5] = [
        (0.0, (26.0, 152.0, 80.0)),
        (0.5, (145.0, 207.0, 96.0)),
        (1.0, (254.0, 200.0, 80.0)),
        (1.5, (244.0, 109.0, 67.0)),
        (2.0, (200.0, 30.0, 40.0)),
    ];
    if v.is_nan() {
        return MISSING_GREY;
    }
    let v = v.clamp(0.0, 2.0);
    let i = STOPS.iter().rposition(|s| s.0 <= v).unwrap_or(0).min(STOPS.len() - 2);
    let ((a, ca), (b, cb)) = (STOPS[i], STOPS[i + 1]);
    let t = ((v - a) / (b - a)).clamp(0.0, 1.0);
    let mix = |x: f64, y: f64| (x + (y - x) * t).round() as u8;
    RGBColor(mix(ca.0, cb.0), mix(ca.1, cb.1), mix(ca.2, cb.2))
}

/// Black or white, whichever reads better on `c`.
pub(super) fn ink_on(c: RGBColor) -> RGBColor {
    let l = 0.299 * c.0 as f64 + 0.587 * c.1 as f64 + 0.114 * c.2 as f64;
    if l >= 140.0 { RGBColor(20, 20, 20) } else { WHITE }
}

/// The colour scale at pixel column `x0`, spanning rows `top..bottom`, with its explanations.
pub(super) fn draw_colour_bar(root: &Area, x0: i32, (top, bottom): (i32, i32)) -> Result<(), String> {
    let x0 = x0 + 4;
    let bw = 26;
    // Leave room under the bar for the "not measured" swatch.
    let bottom = (bottom - 40).max(top + 40);
    let h = bottom - top;
    for py in top..=bottom {
        let v = 2.0 * (bottom - py) as f64 / h as f64;
        root.draw(&Rectangle::new([(x0, py), (x0 + bw, py + 1)], overlap_colour(v).filled())).map_err(es)?;
    }
    root.draw(&Rectangle::new([(x0, top), (x0 + bw, bottom + 1)], AXIS_GREY.stroke_width(1))).map_err(es)?;
    let labels = [
        (0.0, "0", "perfect overlap"),
        (0.5, "0.5", ""),
        (1.0, "1", "serialized"),
        (1.5, "1.5", ""),
        (2.0, "≥ 2", "worse than serialized"),
    ];
    for (v, value, meaning) in labels {
        let py = bottom - (v / 2.0 * h as f64).round() as i32;
        root.draw(&PathElement::new(vec![(x0 + bw, py), (x0 + bw + 5, py)], INK.stroke_width(1)))
            .map_err(es)?;
        draw_text(root, value, (x0 + bw + 9, py), &text(TICK_PX), HPos::Left, VPos::Center)?;
        // The meaning goes on the next line, smaller.
        let style = text(12.0).color(&RGBColor(90, 90, 90));
        draw_text(root, meaning, (x0 + bw + 9, py + 15), &style, HPos::Left, VPos::Center)?;
    }
    let sy = bottom + 24;
    root.draw(&Rectangle::new([(x0, sy), (x0 + bw, sy + 14)], MISSING_GREY.filled())).map_err(es)?;
    draw_text(root, "not measured", (x0 + bw + 9, sy + 7), &text(12.0), HPos::Left, VPos::Center)
}
