//! The Cartesian chart that line charts, bar charts and heatmap panels are drawn in: its size and
//! margins, the room for tick labels and axis descriptions, the grid and axes, and the pixel
//! rectangle of its plotting area.

use plotters::prelude::*;

use super::axis::{Axis, KeyAxis};
use super::canvas::{Area, Rect, es};
use super::font::{DESC_PX, TICK_PX, text};
use super::palette::{AXIS_GREY, GRID_BOLD, GRID_LIGHT};

/// Size of line and bar charts, in pixels.
pub(super) const CHART_SIZE: (u32, u32) = (1000, 600);

pub(super) const CHART_MARGIN_TOP: i32 = 8;
pub(super) const CHART_MARGIN_RIGHT: i32 = 24;

pub(super) type Chart<'a, 'b> = ChartContext<'a, BitMapBackend<'b>, Cartesian2d<KeyAxis, KeyAxis>>;

/// Height of the x label area, width of the y label area.
pub(super) fn label_areas(x_desc: &str, y_axis_label_w: f64, y_desc: &str) -> (i32, i32) {
    let xa = TICK_PX as i32 + 14 + if x_desc.is_empty() { 0 } else { DESC_PX as i32 + 12 };
    let ya = y_axis_label_w.ceil() as i32 + 14 + if y_desc.is_empty() { 0 } else { DESC_PX as i32 + 16 };
    (xa, ya)
}

/// The chart of a line or bar chart on `area`: label areas `xa` high and `ya` wide, the usual top
/// margin and `margin_right` on the right.
pub(super) fn build_chart<'a, 'b>(
    area: &'a Area<'b>,
    x: &Axis,
    y: &Axis,
    xa: i32,
    ya: i32,
    margin_right: i32,
) -> Result<Chart<'a, 'b>, String> {
    ChartBuilder::on(area)
        .margin_top(CHART_MARGIN_TOP)
        .margin_right(margin_right)
        .x_label_area_size(xa)
        .y_label_area_size(ya)
        .build_cartesian_2d(x.spec(), y.spec())
        .map_err(es)
}

/// Pixel rectangle of the chart's plotting area.
pub(super) fn plot_rect(chart: &Chart) -> Rect {
    let (xr, yr) = chart.plotting_area().get_pixel_range();
    (xr.start, yr.start, xr.end - 1, yr.end - 1)
}

/// Which grid lines [`draw_mesh`] draws.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Grid {
    /// Lines at both axes' ticks.
    Full,
    /// Horizontal lines only (at the y ticks).
    Horizontal,
    /// None.
    Off,
}

/// Configures and draws the grid, the axes with their ticks (unless `axes` is false) and the axis
/// descriptions.
pub(super) fn draw_mesh(
    chart: &mut Chart,
    x: &Axis,
    y: &Axis,
    x_desc: &str,
    y_desc: &str,
    grid: Grid,
    axes: bool,
) -> Result<(), String> {
    let xf = |p: &f64| x.label(*p);
    let yf = |p: &f64| y.label(*p);
    let mut mesh = chart.configure_mesh();
    mesh.x_label_formatter(&xf)
        .y_label_formatter(&yf)
        .label_style(text(TICK_PX))
        .axis_desc_style(text(DESC_PX))
        .bold_line_style(GRID_BOLD.stroke_width(1))
        .light_line_style(GRID_LIGHT.stroke_width(1))
        .axis_style(AXIS_GREY.stroke_width(1))
        .x_label_offset(0)
        .set_all_tick_mark_size(4);
    if !x_desc.is_empty() {
        mesh.x_desc(x_desc);
    }
    if !y_desc.is_empty() {
        mesh.y_desc(y_desc);
    }
    match grid {
        Grid::Full => {}
        Grid::Horizontal => {
            mesh.disable_x_mesh();
        }
        Grid::Off => {
            mesh.disable_mesh();
        }
    }
    if !axes {
        mesh.disable_axes();
    }
    mesh.draw().map_err(es)
}
