//! Overlap heatmaps ([`heatmaps`]): panels of coloured, numbered cells side by side, sharing one
//! colour scale and its colour bar.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::axis::{category_axis, plain_number};
use super::canvas::{Area, draw_text, es, frame, no_data, prepare, rect_between, render};
use super::chart::{Grid, draw_mesh, label_areas, plot_rect};
use super::colour_scale::{MISSING_GREY, draw_colour_bar, ink_on, overlap_colour};
use super::font::{TICK_PX, bold, text, text_w};

/// Width of one heatmap panel, and of the colour bar beside the panels.
const PANEL_W: u32 = 500;
const COLOUR_BAR_W: u32 = 210;
/// Panels per heatmap image (wider images are unreadable and costly).
const MAX_PANELS: usize = 32;
const HEATMAP_H: u32 = 600;

/// One panel of a [`heatmaps`] image.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Heatmap {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// One label per column, left to right.
    pub x_labels: Vec<String>,
    /// One label per row, bottom to top.
    pub y_labels: Vec<String>,
    /// `values[row][column]`, row 0 at the bottom; `None` (or NaN) = not measured, drawn grey.
    pub values: Vec<Vec<Option<f64>>>,
}

/// Several heatmaps side by side (e.g. sender / receiver / both, one image per implementation),
/// one shared colour scale from 0 (perfect overlap: green) through 1 (serialized: yellow/orange)
/// to 2 and beyond (worse than serialized: red, saturated at 2); each cell shows its value with two
/// decimals in a readable text colour; a colour bar/legend explains the scale.
///
/// The image is 500 pixels wide per panel plus 210 for the colour bar, 600 high.
pub fn heatmaps(path: &Path, title: &str, panels: &[Heatmap]) -> Result<(), String> {
    prepare(path)?;
    if panels.len() > MAX_PANELS {
        return Err(format!("{}: {} heatmap panels, at most {MAX_PANELS} fit", path.display(), panels.len()));
    }
    render(path, image_size(panels.len()), |root| draw_heatmaps(root, title, panels))
}

/// Size of an image of `panels` panels.
pub(super) fn image_size(panels: usize) -> (u32, u32) {
    (PANEL_W * panels.max(1) as u32 + COLOUR_BAR_W, HEATMAP_H)
}

fn draw_heatmaps(root: &Area, title: &str, panels: &[Heatmap]) -> Result<(), String> {
    let inner = frame(root, title)?;
    let (w, _) = inner.dim_in_pixel();
    let (panel_area, bar_area) = inner.split_horizontally(w as i32 - COLOUR_BAR_W as i32 + 16);
    let mut plot_span: Option<(i32, i32)> = None;
    if panels.is_empty() {
        let (pw, ph) = panel_area.dim_in_pixel();
        no_data(&panel_area, (0, 0, pw as i32, ph as i32))?;
    }
    for (panel, area) in panels.iter().zip(panel_area.split_evenly((1, panels.len().max(1)))) {
        let span = draw_panel(root, &area, panel)?;
        plot_span.get_or_insert(span);
    }
    let (_, bh) = bar_area.dim_in_pixel();
    let (by0, _) = bar_area.get_base_pixel();
    let span = plot_span.unwrap_or((60, bh as i32 - 60));
    draw_colour_bar(root, by0, span)
}

/// Draws one panel; returns the pixel rows (top, bottom) of its cells.
fn draw_panel(root: &Area, area: &Area, p: &Heatmap) -> Result<(i32, i32), String> {
    let nx = p.values.iter().map(Vec::len).max().unwrap_or(0).max(p.x_labels.len());
    let ny = p.values.len().max(p.y_labels.len());
    let (aw, ah) = area.dim_in_pixel();
    let (xa, _) = label_areas(&p.x_label, 0.0, &p.y_label);
    // Caption and margins take about 50 pixels.
    let y = category_axis(&p.y_labels, ny, ah as f64 - xa as f64 - 50.0, true);
    let (_, ya) = label_areas(&p.x_label, y.max_label_w(TICK_PX), &p.y_label);
    let x = category_axis(&p.x_labels, nx, aw as f64 - ya as f64 - 20.0, false);
    let mut chart = ChartBuilder::on(area)
        .caption(&p.title, bold(18.0))
        .margin(6)
        .margin_right(14)
        .x_label_area_size(xa)
        .y_label_area_size(ya)
        .build_cartesian_2d(x.spec(), y.spec())
        .map_err(es)?;
    let plot = plot_rect(&chart);
    let (cw, ch) = ((plot.2 - plot.0) as f64 / nx.max(1) as f64, (plot.3 - plot.1) as f64 / ny.max(1) as f64);
    let size = (ch * 0.36).min(cw / 3.3).min(16.0);
    for r in 0..ny {
        for c in 0..nx {
            let v = p.values.get(r).and_then(|row| row.get(c)).copied().flatten().filter(|v| !v.is_nan());
            let colour = v.map_or(MISSING_GREY, overlap_colour);
            let p0 = chart.backend_coord(&(c as f64, r as f64));
            let p1 = chart.backend_coord(&(c as f64 + 1.0, r as f64 + 1.0));
            let (x0, y0, x1, y1) = rect_between(p0, p1);
            root.draw(&Rectangle::new([(x0, y0), (x1, y1)], colour.filled())).map_err(es)?;
            root.draw(&Rectangle::new([(x0, y0), (x1, y1)], WHITE.stroke_width(1))).map_err(es)?;
            if let Some(v) = v {
                let s = if v.abs() < 1000.0 { format!("{v:.2}") } else { plain_number(v) };
                // Shrink text that would not fit the cell; leave it out when unreadable.
                let size = size.min(size * (cw - 6.0) / text_w(&s, size).max(1.0));
                if size >= 8.0 {
                    let at = ((x0 + x1) / 2, (y0 + y1) / 2);
                    draw_text(root, &s, at, &text(size).color(&ink_on(colour)), HPos::Center, VPos::Center)?;
                }
            }
        }
    }
    let empty = nx == 0 || ny == 0;
    draw_mesh(&mut chart, &x, &y, &p.x_label, &p.y_label, Grid::Off, !empty)?;
    if empty {
        no_data(root, plot)?;
    }
    Ok((plot.1, plot.3))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::tests::{font_present, in_memory};

    #[test]
    fn heatmap_edge_cases() {
        font_present();
        let one = |values: Vec<Vec<Option<f64>>>| Heatmap {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_labels: vec!["a".into(), "b".into()],
            y_labels: vec!["r".into()],
            values,
        };
        let cases: Vec<(&str, Vec<Heatmap>)> = vec![
            ("no-panels", vec![]),
            ("empty-panel", vec![Heatmap::default()]),
            ("all-none", vec![one(vec![vec![None, None], vec![None]])]),
            ("single-cell", vec![Heatmap { values: vec![vec![Some(0.5)]], ..Heatmap::default() }]),
            ("odd-values", vec![one(vec![vec![Some(f64::NAN), Some(f64::INFINITY), Some(-0.3), Some(1e9)]])]),
            (
                "many-cells",
                vec![Heatmap {
                    x_labels: (0..60).map(|i| format!("column {i}")).collect(),
                    y_labels: (0..40).map(|i| format!("row {i}")).collect(),
                    values: (0..40)
                        .map(|r| (0..60).map(|c| Some((r * c) as f64 / 1000.0)).collect())
                        .collect(),
                    ..Heatmap::default()
                }],
            ),
        ];
        for (name, panels) in cases {
            in_memory(image_size(panels.len()), |root| draw_heatmaps(root, name, &panels))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        // The colour scale saturates at 2 and greys out what was not measured.
        assert_eq!(overlap_colour(5.0), overlap_colour(2.0));
        assert_eq!(overlap_colour(f64::NAN), MISSING_GREY);
    }
}
