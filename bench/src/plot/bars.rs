//! Grouped bar charts ([`bars`]): one [`BarGroup`] per x label, one coloured bar per series, "n/a"
//! for missing values, a linear or log value axis, and the legend.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::axis::{AxisOpts, Scale, build_axis, category_axis, plain_number};
use super::canvas::{Area, Rect, draw_text, es, frame, no_data, prepare, rect_between, render};
use super::chart::{
    CHART_MARGIN_RIGHT, CHART_MARGIN_TOP, CHART_SIZE, Grid, build_chart, draw_mesh, label_areas, plot_rect,
};
use super::font::{TICK_PX, text, text_w};
use super::legend::{draw_legend, draw_with_legend, place_legend, split_for_legend};
use super::palette::{LIMIT_GREY, looks};

/// One group of a [`bars`] chart.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BarGroup {
    /// Label under the group.
    pub label: String,
    /// One value per series, in the order of the series names; `None` = missing (marked "n/a").
    pub values: Vec<Option<f64>>,
}

/// Grouped vertical bars: one group per x label, one colour per series (legend), value axis linear or log.
///
/// A linear value axis starts at 0; on a log axis bars rise from the bottom of the axis and
/// non-positive values count as missing. The image is 1000×600 pixels.
pub fn bars(
    path: &Path,
    title: &str,
    y_label: &str,
    series_names: &[String],
    groups: &[BarGroup],
    y: Scale,
) -> Result<(), String> {
    prepare(path)?;
    let spec = BarSpec { title, y_label, names: series_names, groups, y };
    render(path, CHART_SIZE, |root| bars_chart(root, &spec))
}

struct BarSpec<'a> {
    title: &'a str,
    y_label: &'a str,
    names: &'a [String],
    groups: &'a [BarGroup],
    y: Scale,
}

/// Draws the bar chart, with the legend inside the plot if a corner is free, beside it otherwise.
fn bars_chart(root: &Area, spec: &BarSpec) -> Result<(), String> {
    draw_with_legend(root, |root, legend_outside| draw_bars(root, spec, legend_outside))
}

/// Draws the bar chart; with `legend_outside` false, returns `Ok(false)` (having drawn only the
/// frame) when no corner of the plot can hold the legend.
fn draw_bars(root: &Area, s: &BarSpec, legend_outside: bool) -> Result<bool, String> {
    let n = s.groups.iter().map(|g| g.values.len()).max().unwrap_or(0).max(s.names.len());
    let names: Vec<String> =
        (0..n).map(|i| s.names.get(i).cloned().unwrap_or_else(|| format!("series {}", i + 1))).collect();
    let looks = looks(&names);
    let usable = |v: f64| v.is_finite() && (s.y == Scale::Linear || v > 0.0);
    let vals: Vec<f64> =
        s.groups.iter().flat_map(|g| g.values.iter().flatten().copied()).filter(|&v| usable(v)).collect();

    let (area, legend_area) = split_for_legend(frame(root, s.title)?, &looks, legend_outside);
    let (aw, ah) = area.dim_in_pixel();
    let (xa, _) = label_areas("", 0.0, s.y_label);
    let plot_h = ah as f64 - xa as f64 - CHART_MARGIN_TOP as f64;
    let yo = AxisOpts { zero: true, zero_if_close: true, log_floor: true, px: plot_h, vertical: true };
    let y = build_axis(&vals, s.y, &plain_number, yo);
    let (_, ya) = label_areas("", y.max_label_w(TICK_PX), s.y_label);
    let labels: Vec<String> = s.groups.iter().map(|g| g.label.clone()).collect();
    let plot_w = aw as f64 - ya as f64 - CHART_MARGIN_RIGHT as f64;
    let x = category_axis(&labels, s.groups.len(), plot_w, false);
    // Room on the right for half of the last label.
    let last_w = x.ticks.last().map_or(0.0, |t| text_w(&t.1, TICK_PX));
    let slot_w = plot_w / s.groups.len().max(1) as f64;
    let margin_right = CHART_MARGIN_RIGHT.max((last_w / 2.0 - slot_w / 2.0) as i32 + 6);

    let mut chart = build_chart(&area, &x, &y, xa, ya, margin_right)?;
    let plot = plot_rect(&chart);

    // Bars in plot coordinates: (x0, x1, top) per present value; missing slots for "n/a".
    let base = if y.log { y.lo } else { 0f64.clamp(y.lo, y.hi) };
    let slot = 0.8 / n.max(1) as f64;
    let mut rects = Vec::new();
    let mut missing = Vec::new();
    for (g, grp) in s.groups.iter().enumerate() {
        for i in 0..n {
            let x0 = g as f64 + 0.1 + slot * i as f64;
            let (a, b) = (x0 + slot * 0.06, x0 + slot * 0.94);
            match grp.values.get(i).copied().flatten().filter(|&v| usable(v)).and_then(|v| y.pos(v)) {
                Some(top) => rects.push((i, a, b, top.clamp(y.lo, y.hi))),
                None => missing.push((a, b)),
            }
        }
    }
    let to_px = |(i, a, b, top): (usize, f64, f64, f64)| {
        (i, rect_between(chart.backend_coord(&(a, base)), chart.backend_coord(&(b, top))))
    };
    let px_rects: Vec<(usize, Rect)> = rects.iter().map(|&r| to_px(r)).collect();
    let obstacles = || px_rects.iter().map(|r| r.1).collect();
    let Some(legend_at) = place_legend(legend_area.as_ref(), plot, &looks, obstacles) else {
        return Ok(false);
    };

    draw_mesh(&mut chart, &x, &y, "", s.y_label, Grid::Horizontal, true)?;
    for &(i, (x0, y0, x1, y1)) in &px_rects {
        let c = looks[i].colour;
        root.draw(&Rectangle::new([(x0, y0), (x1, y1)], c.filled())).map_err(es)?;
    }
    for &(a, b) in &missing {
        let p0 = chart.backend_coord(&(a, base));
        let p1 = chart.backend_coord(&(b, base));
        let w = (p1.0 - p0.0).abs() as f64;
        let size = (w * 0.45).min(12.0);
        if size >= 7.0 {
            let at = ((p0.0 + p1.0) / 2, p0.1 - 4);
            draw_text(root, "n/a", at, &text(size).color(&LIMIT_GREY), HPos::Center, VPos::Bottom)?;
        }
    }
    if vals.is_empty() {
        no_data(root, plot)?;
    }
    draw_legend(root, legend_at, &looks, true)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::tests::{font_present, in_memory};

    #[test]
    fn bars_edge_cases() {
        font_present();
        let g = |label: &str, values: Vec<Option<f64>>| BarGroup { label: label.into(), values };
        let names: Vec<String> = vec!["madmpi".into(), "MPICH".into()];
        let cases: Vec<(&str, Scale, Vec<String>, Vec<BarGroup>)> = vec![
            ("no-groups", Scale::Linear, names.clone(), vec![]),
            ("no-groups-log", Scale::Log, vec![], vec![]),
            ("all-none", Scale::Log, names.clone(), vec![g("a", vec![None, None]), g("b", vec![])]),
            ("single", Scale::Linear, vec![], vec![g("only", vec![Some(4.0)])]),
            (
                "equal",
                Scale::Log,
                names.clone(),
                vec![g("a", vec![Some(2.0), Some(2.0)]), g("b", vec![Some(2.0)])],
            ),
            ("negative", Scale::Linear, names.clone(), vec![g("a", vec![Some(-2.0), Some(3.0)])]),
            (
                "zeros-log",
                Scale::Log,
                names.clone(),
                vec![g("a", vec![Some(0.0), Some(-1.0), Some(f64::NAN)])],
            ),
            (
                "tall",
                Scale::Linear,
                // Bars fill every corner: the legend must go outside the plot.
                names.clone(),
                (0..5).map(|i| g(&format!("group {i}"), vec![Some(10.0), Some(9.5)])).collect(),
            ),
            (
                "many-groups",
                Scale::Linear,
                names.clone(),
                (0..50).map(|i| g(&format!("long group label {i}"), vec![Some(i as f64), None])).collect(),
            ),
        ];
        for (name, y, names, groups) in cases {
            let spec = BarSpec { title: name, y_label: "value", names: &names, groups: &groups, y };
            in_memory(CHART_SIZE, |root| bars_chart(root, &spec)).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}
