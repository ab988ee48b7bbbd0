//! Legends of line and bar charts: their size and drawing, and their placement: in a corner of the
//! plot that hides no data, or, when no corner is free, in a strip beside the plot.

use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::canvas::{Area, Rect, draw_text, es};
use super::font::{LEGEND_PX, text, text_w};
use super::palette::{Look, draw_marker};

const LEGEND_PAD: i32 = 8;
const LEGEND_ROW: i32 = 22;
const LEGEND_SWATCH: i32 = 34;

fn legend_size(looks: &[Look]) -> (i32, i32) {
    let text = looks.iter().map(|l| text_w(&l.name, LEGEND_PX)).fold(0.0, f64::max) as i32;
    (2 * LEGEND_PAD + LEGEND_SWATCH + 8 + text, 2 * LEGEND_PAD + LEGEND_ROW * looks.len() as i32 - 4)
}

/// Draws a chart whose legend goes inside the plot if a corner is free, beside it otherwise:
/// `draw(root, legend_outside)` returns `Ok(false)` (having drawn only the frame) when
/// `legend_outside` is false and no corner of the plot can hold the legend.
pub(super) fn draw_with_legend(
    root: &Area,
    draw: impl Fn(&Area, bool) -> Result<bool, String>,
) -> Result<(), String> {
    if !draw(root, false)? {
        draw(root, true)?;
    }
    Ok(())
}

/// Splits the area under the title into the chart area and, with `legend_outside` and a legend to
/// show, the strip on the right that holds the legend.
pub(super) fn split_for_legend<'a>(
    inner: Area<'a>,
    looks: &[Look],
    legend_outside: bool,
) -> (Area<'a>, Option<Area<'a>>) {
    if legend_outside && !looks.is_empty() {
        let (w, _) = inner.dim_in_pixel();
        let (lw, _) = legend_size(looks);
        let (a, b) = inner.split_horizontally(w as i32 - lw - 16);
        (a, Some(b))
    } else {
        (inner, None)
    }
}

/// Top-left corner of the legend: at the top of `strip` (from [`split_for_legend`]) when there is
/// one, otherwise in a corner of `plot` that covers none of `obstacles()`; `None` when no corner
/// is free. An empty legend draws nothing and fits anywhere.
pub(super) fn place_legend(
    strip: Option<&Area>,
    plot: Rect,
    looks: &[Look],
    obstacles: impl FnOnce() -> Vec<Rect>,
) -> Option<(i32, i32)> {
    match strip {
        Some(s) => {
            let (lx, ly) = s.get_base_pixel();
            Some((lx + 8, plot.1.max(ly)))
        }
        None if looks.is_empty() => Some((plot.0, plot.1)),
        None => free_corner(plot, legend_size(looks), &obstacles()),
    }
}

/// Draws the legend with its top-left corner at `at`; `bars` draws filled squares for swatches.
pub(super) fn draw_legend(root: &Area, at: (i32, i32), looks: &[Look], bars: bool) -> Result<(), String> {
    if looks.is_empty() {
        return Ok(());
    }
    let (w, h) = legend_size(looks);
    let (x0, y0) = at;
    root.draw(&Rectangle::new([(x0, y0), (x0 + w, y0 + h)], WHITE.mix(0.9).filled())).map_err(es)?;
    root.draw(&Rectangle::new([(x0, y0), (x0 + w, y0 + h)], RGBColor(190, 190, 190).stroke_width(1)))
        .map_err(es)?;
    for (i, l) in looks.iter().enumerate() {
        let cy = y0 + LEGEND_PAD + LEGEND_ROW * i as i32 + (LEGEND_ROW - 4) / 2;
        let sx = x0 + LEGEND_PAD;
        if bars {
            let c = LEGEND_SWATCH / 2;
            root.draw(&Rectangle::new([(sx + c - 8, cy - 7), (sx + c + 8, cy + 7)], l.colour.filled()))
                .map_err(es)?;
        } else if l.limit {
            let style = l.colour.stroke_width(2);
            root.draw(&DashedPathElement::new(vec![(sx, cy), (sx + LEGEND_SWATCH, cy)], 6, 4, style))
                .map_err(es)?;
        } else {
            root.draw(&PathElement::new(vec![(sx, cy), (sx + LEGEND_SWATCH, cy)], l.colour.stroke_width(2)))
                .map_err(es)?;
            draw_marker(root, l.marker, (sx + LEGEND_SWATCH / 2, cy), l.colour, 4)?;
        }
        draw_text(root, &l.name, (sx + LEGEND_SWATCH + 8, cy), &text(LEGEND_PX), HPos::Left, VPos::Center)?;
    }
    Ok(())
}

/// A corner of the plot (`plot`) where a `size` legend covers none of `obstacles`, if any.
fn free_corner(plot: Rect, size: (i32, i32), obstacles: &[Rect]) -> Option<(i32, i32)> {
    let (px0, py0, px1, py1) = plot;
    let (w, h) = size;
    let inset = 10;
    if w + 2 * inset > px1 - px0 || h + 2 * inset > py1 - py0 {
        return None;
    }
    let corners = [
        (px0 + inset, py0 + inset),
        (px1 - inset - w, py0 + inset),
        (px1 - inset - w, py1 - inset - h),
        (px0 + inset, py1 - inset - h),
    ];
    corners.into_iter().find(|&(x, y)| {
        let m = 6;
        !obstacles
            .iter()
            .any(|&(a0, b0, a1, b1)| a1 >= x - m && a0 <= x + w + m && b1 >= y - m && b0 <= y + h + m)
    })
}

/// Points every few pixels along a polyline, as obstacles for the legend.
pub(super) fn polyline_obstacles(px: &[(i32, i32)], r: i32, out: &mut Vec<Rect>) {
    for (i, &(x, y)) in px.iter().enumerate() {
        out.push((x - r, y - r, x + r, y + r));
        if let Some(&(x2, y2)) = px.get(i + 1) {
            let (dx, dy) = ((x2 - x) as f64, (y2 - y) as f64);
            let n = ((dx.hypot(dy) / 3.0).ceil() as usize).min(2000);
            for k in 1..n {
                let t = k as f64 / n as f64;
                let (sx, sy) = ((x as f64 + dx * t) as i32, (y as f64 + dy * t) as i32);
                out.push((sx - 1, sy - 1, sx + 1, sy + 1));
            }
        }
    }
}
