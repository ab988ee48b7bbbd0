//! Line charts ([`lines`]): one line with markers per [`Series`], linear or log axes, dashed grey
//! limits, and the legend.

use std::path::Path;

use plotters::prelude::*;

use super::axis::{AxisOpts, Scale, build_axis};
use super::canvas::{Area, es, frame, no_data, prepare, render};
use super::chart::{
    CHART_MARGIN_RIGHT, CHART_MARGIN_TOP, CHART_SIZE, Grid, build_chart, draw_mesh, label_areas, plot_rect,
};
use super::font::TICK_PX;
use super::legend::{draw_legend, draw_with_legend, place_legend, polyline_obstacles, split_for_legend};
use super::palette::{draw_marker, looks};

/// One line of a [`lines`] chart.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// Legend text. The colour follows from it: "madmpi…" blue, "MPICH…" orange, "Open MPI…" green,
    /// "limit…" grey and dashed, others the remaining palette colours in order.
    pub name: String,
    /// `(x, y)` points, in any order (drawn sorted by x). Non-finite values, and non-positive values on
    /// a log axis, are skipped.
    pub points: Vec<(f64, f64)>,
}

/// A line chart with markers, one line per series, a legend; log axes label powers nicely.
///
/// `x_fmt` and `y_fmt` turn tick values (in data units) into tick labels, e.g. `4096.0` → `"4 KiB"`.
/// The image is 1000×600 pixels; `path` should end in `.png`.
#[allow(clippy::too_many_arguments)]
pub fn lines(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    x: Scale,
    y: Scale,
    series: &[Series],
    x_fmt: &dyn Fn(f64) -> String,
    y_fmt: &dyn Fn(f64) -> String,
) -> Result<(), String> {
    prepare(path)?;
    let spec = LineSpec { title, x_label, y_label, x, y, series, x_fmt, y_fmt };
    render(path, CHART_SIZE, |root| lines_chart(root, &spec))
}

struct LineSpec<'a> {
    title: &'a str,
    x_label: &'a str,
    y_label: &'a str,
    x: Scale,
    y: Scale,
    series: &'a [Series],
    x_fmt: &'a dyn Fn(f64) -> String,
    y_fmt: &'a dyn Fn(f64) -> String,
}

/// Draws the line chart, with the legend inside the plot if a corner is free, beside it otherwise.
fn lines_chart(root: &Area, spec: &LineSpec) -> Result<(), String> {
    draw_with_legend(root, |root, legend_outside| draw_lines(root, spec, legend_outside))
}

/// Draws the line chart; with `legend_outside` false, returns `Ok(false)` (having drawn only the
/// frame) when no corner of the plot can hold the legend.
fn draw_lines(root: &Area, s: &LineSpec, legend_outside: bool) -> Result<bool, String> {
    let ok = |v: f64, sc: Scale| v.is_finite() && (sc == Scale::Linear || v > 0.0);
    let pts: Vec<Vec<(f64, f64)>> = s
        .series
        .iter()
        .map(|se| {
            let mut p: Vec<(f64, f64)> =
                se.points.iter().copied().filter(|&(x, y)| ok(x, s.x) && ok(y, s.y)).collect();
            p.sort_by(|a, b| a.0.total_cmp(&b.0));
            p
        })
        .collect();
    let names: Vec<String> = s.series.iter().map(|se| se.name.clone()).collect();
    let looks = looks(&names);

    let (area, legend_area) = split_for_legend(frame(root, s.title)?, &looks, legend_outside);
    let (aw, ah) = area.dim_in_pixel();
    let xs: Vec<f64> = pts.iter().flatten().map(|p| p.0).collect();
    let ys: Vec<f64> = pts.iter().flatten().map(|p| p.1).collect();
    let (xa, _) = label_areas(s.x_label, 0.0, s.y_label);
    let plot_h = ah as f64 - xa as f64 - CHART_MARGIN_TOP as f64;
    let yo = AxisOpts { zero: false, zero_if_close: true, log_floor: false, px: plot_h, vertical: true };
    let y = build_axis(&ys, s.y, s.y_fmt, yo);
    let (_, ya) = label_areas(s.x_label, y.max_label_w(TICK_PX), s.y_label);
    let plot_w = aw as f64 - ya as f64 - CHART_MARGIN_RIGHT as f64;
    let xo = AxisOpts { zero: false, zero_if_close: false, log_floor: false, px: plot_w, vertical: false };
    let x = build_axis(&xs, s.x, s.x_fmt, xo);

    let mut chart = build_chart(&area, &x, &y, xa, ya, CHART_MARGIN_RIGHT)?;
    let plot = plot_rect(&chart);

    // Pixel positions of every series, for markers and legend placement.
    let px: Vec<Vec<(i32, i32)>> = pts
        .iter()
        .map(|p| {
            p.iter().filter_map(|&(vx, vy)| Some(chart.backend_coord(&(x.pos(vx)?, y.pos(vy)?)))).collect()
        })
        .collect();
    let obstacles = || {
        let mut obstacles = Vec::new();
        for p in &px {
            polyline_obstacles(p, 5, &mut obstacles);
        }
        obstacles
    };
    let Some(legend_at) = place_legend(legend_area.as_ref(), plot, &looks, obstacles) else {
        return Ok(false);
    };

    draw_mesh(&mut chart, &x, &y, s.x_label, s.y_label, Grid::Full, true)?;
    for ((p, look), pix) in pts.iter().zip(&looks).zip(&px) {
        let line: Vec<(f64, f64)> = p.iter().filter_map(|&(vx, vy)| Some((x.pos(vx)?, y.pos(vy)?))).collect();
        if look.limit {
            chart.draw_series(DashedLineSeries::new(line, 8, 5, look.colour.stroke_width(2))).map_err(es)?;
        } else {
            chart.draw_series(LineSeries::new(line, look.colour.stroke_width(2))).map_err(es)?;
        }
        if !look.limit || pix.len() == 1 {
            for &c in pix {
                draw_marker(root, look.marker, c, look.colour, 4)?;
            }
        }
    }
    if px.iter().all(|p| p.is_empty()) {
        no_data(root, plot)?;
    }
    draw_legend(root, legend_at, &looks, false)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::tests::{font_present, in_memory, num, ramp};

    #[test]
    fn lines_edge_cases() {
        font_present();
        let nan = f64::NAN;
        let cases: Vec<(&str, Scale, Scale, Vec<Series>)> = vec![
            ("no-series", Scale::Linear, Scale::Linear, vec![]),
            ("no-series-log", Scale::Log, Scale::Log, vec![]),
            (
                "empty-points",
                Scale::Log,
                Scale::Linear,
                vec![Series { name: "madmpi".into(), points: vec![] }],
            ),
            ("all-equal", Scale::Linear, Scale::Linear, vec![ramp("MPICH", 5, |_| 3.0)]),
            (
                "all-equal-log",
                Scale::Log,
                Scale::Log,
                vec![Series { name: "a".into(), points: vec![(8.0, 2.0); 4] }],
            ),
            ("all-zero", Scale::Linear, Scale::Linear, vec![ramp("Open MPI", 5, |_| 0.0)]),
            (
                "single-point",
                Scale::Linear,
                Scale::Linear,
                vec![Series { name: "x".into(), points: vec![(1.0, 1.0)] }],
            ),
            (
                "single-point-log",
                Scale::Log,
                Scale::Log,
                vec![Series { name: "x".into(), points: vec![(1e-7, 3e9)] }],
            ),
            (
                "non-finite",
                Scale::Log,
                Scale::Log,
                vec![Series {
                    name: "limit".into(),
                    points: vec![
                        (nan, 1.0),
                        (0.0, 1.0),
                        (-4.0, 2.0),
                        (f64::INFINITY, 3.0),
                        (4.0, -1.0),
                        (2.0, 5.0),
                    ],
                }],
            ),
            (
                "only-invalid-log",
                Scale::Log,
                Scale::Log,
                vec![Series { name: "x".into(), points: vec![(0.0, 0.0)] }],
            ),
            (
                "negative",
                Scale::Linear,
                Scale::Linear,
                vec![ramp("a", 10, |x| x - 7.5), ramp("b", 10, |x| -x * 1e6)],
            ),
            ("tiny-range", Scale::Linear, Scale::Log, vec![ramp("a", 10, |x| 1.0 + x * 1e-6)]),
            ("huge", Scale::Linear, Scale::Linear, vec![ramp("a", 3, |x| x * 1e300)]),
            (
                "crowded",
                Scale::Linear,
                Scale::Linear,
                // Lines everywhere: the legend must go outside the plot.
                (0..9)
                    .map(|k| ramp(&format!("series number {k}"), 40, |x| ((x + k as f64) * 0.7).sin()))
                    .collect(),
            ),
        ];
        for (name, x, y, series) in cases {
            let spec = LineSpec {
                title: name,
                x_label: "x",
                y_label: "y",
                x,
                y,
                series: &series,
                x_fmt: &num,
                y_fmt: &num,
            };
            in_memory(CHART_SIZE, |root| lines_chart(root, &spec)).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}
