//! PNG charts for the `madbench` reports: line charts (latency, bandwidth), overlap heatmaps and
//! grouped bar charts (reactivity).
//!
//! This module owns the drawing only: it measures nothing and reads no file but the font. Callers
//! hand it finished numbers and label formatters; it picks the axis ranges and ticks, the colours
//! (colour-blind-friendly, one per implementation: madmpi blue, MPICH orange, Open MPI green, limits
//! grey and dashed), places the legend where it hides no data, and writes a PNG.
//!
//! Text uses DejaVu Sans, loaded once at run time from
//! `/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf` (Debian package `fonts-dejavu-core`),
//! so no system font library (fontconfig, freetype) is linked. Every function returns `Err` with a
//! readable message, never panics, on a missing font or an unwritable file.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::register_font;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The TrueType font every chart uses (Debian package `fonts-dejavu-core`).
const FONT_PATH: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
/// Used for titles when present; the regular face stands in otherwise.
const FONT_BOLD_PATH: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf";
/// The family name the font is registered under (plotters' default family).
const FAMILY: &str = "sans-serif";

/// Size of line and bar charts, in pixels.
const CHART_SIZE: (u32, u32) = (1000, 600);
/// Width of one heatmap panel, and of the colour bar beside the panels.
const PANEL_W: u32 = 500;
const COLOUR_BAR_W: u32 = 210;
/// Panels per heatmap image (wider images are unreadable and costly).
const MAX_PANELS: usize = 32;
const HEATMAP_H: u32 = 600;

const TITLE_PX: f64 = 24.0;
const DESC_PX: f64 = 16.0;
const TICK_PX: f64 = 14.0;
const LEGEND_PX: f64 = 15.0;
/// Height of the band at the top of every image that holds its title.
const TITLE_BAND: i32 = 48;

/// How an axis maps values to positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Logarithmic: non-positive values are left out; ticks fall on powers (of 2 when every value on
    /// the axis is a power of two, as message sizes are; of 10 otherwise).
    Log,
}

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

/// One group of a [`bars`] chart.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BarGroup {
    /// Label under the group.
    pub label: String,
    /// One value per series, in the order of the series names; `None` = missing (marked "n/a").
    pub values: Vec<Option<f64>>,
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
    let w = PANEL_W * panels.len().max(1) as u32 + COLOUR_BAR_W;
    render(path, (w, HEATMAP_H), |root| draw_heatmaps(root, title, panels))
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

// ---------------------------------------------------------------------------------------------
// Font, files, errors.

/// Loads and registers the font once per process.
fn ensure_font() -> Result<(), String> {
    static FONT: OnceLock<Result<(), String>> = OnceLock::new();
    FONT.get_or_init(|| {
        let regular = std::fs::read(FONT_PATH).map_err(|e| {
            format!(
                "cannot read the chart font {FONT_PATH}: {e}; install the Debian package fonts-dejavu-core"
            )
        })?;
        register_font(FAMILY, FontStyle::Normal, Box::leak(regular.into_boxed_slice()))
            .map_err(|_| format!("{FONT_PATH} is not a usable TrueType font; reinstall fonts-dejavu-core"))?;
        if let Ok(bold) = std::fs::read(FONT_BOLD_PATH) {
            // Optional: without it titles fall back to the regular face.
            let _ = register_font(FAMILY, FontStyle::Bold, Box::leak(bold.into_boxed_slice()));
        }
        Ok(())
    })
    .clone()
}

fn prepare(path: &Path) -> Result<(), String> {
    ensure_font()?;
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("png") => Ok(()),
        _ => Err(format!("{}: chart files are PNG, the name must end in .png", path.display())),
    }
}

type Area<'a> = DrawingArea<BitMapBackend<'a>, Shift>;
type Chart<'a, 'b> = ChartContext<'a, BitMapBackend<'b>, Cartesian2d<KeyAxis, KeyAxis>>;

/// A plotted axis with our own tick positions: `bold` carry labels and grid lines, `light` only
/// faint grid lines. (plotters' `WithKeyPoints` over `f64` cannot take a label formatter.)
#[derive(Clone)]
struct KeyAxis {
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

/// Creates the bitmap, lets `draw` paint it and writes it out.
fn render(
    path: &Path,
    size: (u32, u32),
    draw: impl FnOnce(&Area) -> Result<(), String>,
) -> Result<(), String> {
    let root = BitMapBackend::new(path, size).into_drawing_area();
    if let Err(e) = draw(&root) {
        // Dropping the backend writes what was drawn; leave no half-drawn chart behind.
        drop(root);
        let _ = std::fs::remove_file(path);
        return Err(format!("{}: {e}", path.display()));
    }
    root.present().map_err(|e| format!("{}: cannot write the PNG: {e}", path.display()))
}

fn es<E: std::fmt::Display>(e: E) -> String {
    format!("drawing failed: {e}")
}

fn text(size: f64) -> TextStyle<'static> {
    TextStyle::from((FAMILY, size).into_font()).color(&INK)
}

fn bold(size: f64) -> TextStyle<'static> {
    TextStyle::from((FAMILY, size, FontStyle::Bold).into_font()).color(&INK)
}

/// Width of `s` in pixels at `size`.
fn text_w(s: &str, size: f64) -> f64 {
    (FAMILY, size).into_font().box_size(s).map_or(s.chars().count() as f64 * size * 0.6, |(w, _)| w as f64)
}

fn draw_text(
    area: &Area,
    s: &str,
    at: (i32, i32),
    style: &TextStyle,
    h: HPos,
    v: VPos,
) -> Result<(), String> {
    if s.is_empty() {
        return Ok(());
    }
    area.draw(&Text::new(s.to_string(), at, style.pos(Pos::new(h, v)))).map_err(es)
}

/// White background and the centred title; returns the area below the title.
fn frame<'a>(root: &Area<'a>, title: &str) -> Result<Area<'a>, String> {
    root.fill(&WHITE).map_err(es)?;
    let (w, _) = root.dim_in_pixel();
    draw_text(root, title, (w as i32 / 2, 14), &bold(TITLE_PX), HPos::Center, VPos::Top)?;
    Ok(root.margin(TITLE_BAND, 8, 12, 16))
}

// ---------------------------------------------------------------------------------------------
// Colours and markers.

const INK: RGBColor = RGBColor(34, 34, 34);
const GRID_BOLD: RGBColor = RGBColor(210, 210, 210);
const GRID_LIGHT: RGBColor = RGBColor(238, 238, 238);
const LIMIT_GREY: RGBColor = RGBColor(120, 120, 120);
const MISSING_GREY: RGBColor = RGBColor(205, 205, 205);

/// Okabe–Ito colours (distinguishable with the common colour-vision deficiencies); the first
/// three are madmpi, MPICH and Open MPI.
const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(230, 159, 0),   // orange
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(213, 94, 0),    // vermillion
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(0, 0, 0),       // black
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Marker {
    Circle,
    Square,
    TriangleUp,
    Diamond,
    TriangleDown,
    Cross,
    Plus,
}

const MARKERS: [Marker; 7] = [
    Marker::Circle,
    Marker::Square,
    Marker::TriangleUp,
    Marker::Diamond,
    Marker::TriangleDown,
    Marker::Cross,
    Marker::Plus,
];

/// How one series is drawn.
#[derive(Clone, Debug)]
struct Look {
    name: String,
    colour: RGBColor,
    marker: Marker,
    /// A reference line ("limit…"): grey, dashed, no markers.
    limit: bool,
}

/// The palette slot a series name asks for, if any.
fn brand(name: &str) -> Option<usize> {
    let n = name.to_lowercase();
    if n.contains("madmpi") || n.contains("mad-mpi") || n.contains("mad mpi") {
        Some(0)
    } else if n.contains("mpich") {
        Some(1)
    } else if n.contains("open mpi") || n.contains("openmpi") || n.contains("open-mpi") || n.contains("ompi")
    {
        Some(2)
    } else {
        None
    }
}

/// Colours and markers for `names`: each implementation its own colour (the first series of a brand
/// takes it), limits grey, the rest the free palette colours in order.
fn looks(names: &[String]) -> Vec<Look> {
    let mut slot: Vec<Option<usize>> = vec![None; names.len()];
    let mut taken = [false; PALETTE.len()];
    let is_limit = |n: &str| n.trim_start().to_lowercase().starts_with("limit");
    for (i, n) in names.iter().enumerate() {
        if let Some(b) = brand(n).filter(|&b| !is_limit(n) && !taken[b]) {
            taken[b] = true;
            slot[i] = Some(b);
        }
    }
    let mut next = 0usize;
    let mut limits = 0usize;
    names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            if is_limit(n) {
                limits += 1;
                let marker = MARKERS[(limits - 1) % MARKERS.len()];
                return Look { name: n.clone(), colour: LIMIT_GREY, marker, limit: true };
            }
            let k = slot[i].unwrap_or_else(|| {
                // The free colours first (from the fourth on), then reuse with other markers.
                let order: Vec<usize> = (3..PALETTE.len()).chain(0..3).collect();
                let free: Vec<usize> = order.iter().copied().filter(|&c| !taken[c]).collect();
                let k = if free.is_empty() { next % PALETTE.len() + PALETTE.len() } else { free[0] };
                if k < PALETTE.len() {
                    taken[k] = true;
                } else {
                    next += 1;
                }
                k
            });
            let colour = PALETTE[k % PALETTE.len()];
            let marker = MARKERS[(k % PALETTE.len() + k / PALETTE.len()) % MARKERS.len()];
            Look { name: n.clone(), colour, marker, limit: false }
        })
        .collect()
}

fn draw_marker(area: &Area, m: Marker, (x, y): (i32, i32), c: RGBColor, r: i32) -> Result<(), String> {
    let fill = c.filled();
    let line = c.stroke_width(2);
    let res = match m {
        Marker::Circle => area.draw(&Circle::new((x, y), r, fill)),
        Marker::Square => area.draw(&Rectangle::new([(x - r + 1, y - r + 1), (x + r - 1, y + r - 1)], fill)),
        Marker::TriangleUp => {
            area.draw(&Polygon::new(vec![(x, y - r - 1), (x - r - 1, y + r), (x + r + 1, y + r)], fill))
        }
        Marker::TriangleDown => {
            area.draw(&Polygon::new(vec![(x, y + r + 1), (x - r - 1, y - r), (x + r + 1, y - r)], fill))
        }
        Marker::Diamond => area
            .draw(&Polygon::new(vec![(x, y - r - 1), (x + r + 1, y), (x, y + r + 1), (x - r - 1, y)], fill)),
        Marker::Cross => area
            .draw(&PathElement::new(vec![(x - r, y - r), (x + r, y + r)], line))
            .and_then(|_| area.draw(&PathElement::new(vec![(x - r, y + r), (x + r, y - r)], line))),
        Marker::Plus => area
            .draw(&PathElement::new(vec![(x - r - 1, y), (x + r + 1, y)], line))
            .and_then(|_| area.draw(&PathElement::new(vec![(x, y - r - 1), (x, y + r + 1)], line))),
    };
    res.map_err(es)
}

// ---------------------------------------------------------------------------------------------
// Legends.

const LEGEND_PAD: i32 = 8;
const LEGEND_ROW: i32 = 22;
const LEGEND_SWATCH: i32 = 34;

fn legend_size(looks: &[Look]) -> (i32, i32) {
    let text = looks.iter().map(|l| text_w(&l.name, LEGEND_PX)).fold(0.0, f64::max) as i32;
    (2 * LEGEND_PAD + LEGEND_SWATCH + 8 + text, 2 * LEGEND_PAD + LEGEND_ROW * looks.len() as i32 - 4)
}

/// Draws the legend with its top-left corner at `at`; `bars` draws filled squares for swatches.
fn draw_legend(root: &Area, at: (i32, i32), looks: &[Look], bars: bool) -> Result<(), String> {
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

/// Pixel rectangle `(x0, y0, x1, y1)`, inclusive.
type Rect = (i32, i32, i32, i32);

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
fn polyline_obstacles(px: &[(i32, i32)], r: i32, out: &mut Vec<Rect>) {
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

// ---------------------------------------------------------------------------------------------
// Axes: ranges, ticks and labels.

/// A chart axis: plotted range (log10 of the values on a log axis), ticks with labels and the light
/// grid lines.
struct Axis {
    log: bool,
    lo: f64,
    hi: f64,
    ticks: Vec<(f64, String)>,
    light: Vec<f64>,
}

impl Axis {
    /// Position of value `v` on the axis (None if it cannot be shown).
    fn pos(&self, v: f64) -> Option<f64> {
        match (v.is_finite(), self.log) {
            (false, _) => None,
            (true, true) if v > 0.0 => Some(v.log10()),
            (true, true) => None,
            (true, false) => Some(v),
        }
    }

    fn spec(&self) -> KeyAxis {
        KeyAxis {
            lo: self.lo,
            hi: self.hi,
            bold: self.ticks.iter().map(|t| t.0).collect(),
            light: self.light.clone(),
        }
    }

    fn label(&self, p: f64) -> String {
        let tol = (self.hi - self.lo).abs() * 1e-9;
        self.ticks.iter().find(|t| (t.0 - p).abs() <= tol).map(|t| t.1.clone()).unwrap_or_default()
    }

    fn max_label_w(&self, size: f64) -> f64 {
        self.ticks.iter().map(|t| text_w(&t.1, size)).fold(0.0, f64::max)
    }
}

/// What an axis should look like besides its data.
#[derive(Clone, Copy)]
struct AxisOpts {
    /// Linear axes always show 0 (bars).
    zero: bool,
    /// Linear axes show 0 when the data start near it.
    zero_if_close: bool,
    /// Log axes start at a round value well below the data (bars rise from it).
    log_floor: bool,
    /// Length of the axis in pixels.
    px: f64,
    /// Labels stack vertically (y axis): their extent is their height, not their width.
    vertical: bool,
}

/// `10^e`, correctly rounded.
fn pow10(e: i32) -> f64 {
    format!("1e{e}").parse().unwrap_or_else(|_| 10f64.powi(e))
}

/// `m × 10^e`, correctly rounded.
fn mant(m: u32, e: i32) -> f64 {
    format!("{m}e{e}").parse().unwrap_or_else(|_| m as f64 * 10f64.powi(e))
}

/// Largest 1, 2 or 5 × 10^k not above `v` (> 0).
fn nice_floor(v: f64) -> f64 {
    let e = v.log10().floor() as i32;
    [5, 2, 1].into_iter().map(|m| mant(m, e)).find(|&t| t <= v).unwrap_or_else(|| pow10(e - 1) * 5.0)
}

/// A candidate tick set: plotted range and tick values (data units).
struct Cand {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
    light: Vec<f64>,
}

/// Evenly spaced round ticks (1, 2, 5 × 10^k steps) from fine to coarse over `lo..hi` (data
/// units). `snap` widens the range to the outer ticks; otherwise ticks stay inside it.
fn linear_cands(lo: f64, hi: f64, snap: bool) -> Vec<Cand> {
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
fn log_cands(la: f64, lb: f64, pow2: bool) -> Vec<Cand> {
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

/// Chooses range and ticks for `vals` (already filtered for the scale): the finest candidate
/// whose labels neither overlap nor repeat.
fn build_axis(vals: &[f64], scale: Scale, fmt: &dyn Fn(f64) -> String, o: AxisOpts) -> Axis {
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
fn category_axis(labels: &[String], n: usize, px: f64, vertical: bool) -> Axis {
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
fn plain_number(v: f64) -> String {
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

/// Configures and draws the grid, ticks and axis descriptions.
fn draw_mesh(
    chart: &mut Chart,
    x: &Axis,
    y: &Axis,
    x_desc: &str,
    y_desc: &str,
    x_grid: bool,
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
        .axis_style(RGBColor(120, 120, 120).stroke_width(1))
        .x_label_offset(0)
        .set_all_tick_mark_size(4);
    if !x_desc.is_empty() {
        mesh.x_desc(x_desc);
    }
    if !y_desc.is_empty() {
        mesh.y_desc(y_desc);
    }
    if !x_grid {
        mesh.disable_x_mesh();
    }
    mesh.draw().map_err(es)
}

/// Pixel rectangle of the chart's plotting area.
fn plot_rect(chart: &Chart) -> Rect {
    let (xr, yr) = chart.plotting_area().get_pixel_range();
    (xr.start, yr.start, xr.end - 1, yr.end - 1)
}

/// Height of the x label area, width of the y label area.
fn label_areas(x_desc: &str, y_axis_label_w: f64, y_desc: &str) -> (i32, i32) {
    let xa = TICK_PX as i32 + 14 + if x_desc.is_empty() { 0 } else { DESC_PX as i32 + 12 };
    let ya = y_axis_label_w.ceil() as i32 + 14 + if y_desc.is_empty() { 0 } else { DESC_PX as i32 + 16 };
    (xa, ya)
}

const CHART_MARGIN_TOP: i32 = 8;
const CHART_MARGIN_RIGHT: i32 = 24;

// ---------------------------------------------------------------------------------------------
// Line charts.

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
    if !draw_lines(root, spec, false)? {
        draw_lines(root, spec, true)?;
    }
    Ok(())
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
    let (lw, lh) = legend_size(&looks);

    let inner = frame(root, s.title)?;
    let (area, legend_area) = if legend_outside && !looks.is_empty() {
        let (w, _) = inner.dim_in_pixel();
        let (a, b) = inner.split_horizontally(w as i32 - lw - 16);
        (a, Some(b))
    } else {
        (inner, None)
    };
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

    let mut chart = ChartBuilder::on(&area)
        .margin_top(CHART_MARGIN_TOP)
        .margin_right(CHART_MARGIN_RIGHT)
        .x_label_area_size(xa)
        .y_label_area_size(ya)
        .build_cartesian_2d(x.spec(), y.spec())
        .map_err(es)?;
    let plot = plot_rect(&chart);

    // Pixel positions of every series, for markers and legend placement.
    let px: Vec<Vec<(i32, i32)>> = pts
        .iter()
        .map(|p| {
            p.iter().filter_map(|&(vx, vy)| Some(chart.backend_coord(&(x.pos(vx)?, y.pos(vy)?)))).collect()
        })
        .collect();
    let legend_at = match &legend_area {
        Some(la) => {
            let (lx, ly) = la.get_base_pixel();
            Some((lx + 8, plot.1.max(ly)))
        }
        None if looks.is_empty() => None,
        None => {
            let mut obstacles = Vec::new();
            for p in &px {
                polyline_obstacles(p, 5, &mut obstacles);
            }
            match free_corner(plot, (lw, lh), &obstacles) {
                Some(c) => Some(c),
                None => return Ok(false),
            }
        }
    };

    draw_mesh(&mut chart, &x, &y, s.x_label, s.y_label, true)?;
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
        let c = ((plot.0 + plot.2) / 2, (plot.1 + plot.3) / 2);
        draw_text(root, "no data", c, &text(DESC_PX).color(&LIMIT_GREY), HPos::Center, VPos::Center)?;
    }
    if let Some(at) = legend_at {
        draw_legend(root, at, &looks, false)?;
    }
    Ok(true)
}

// ---------------------------------------------------------------------------------------------
// Bar charts.

struct BarSpec<'a> {
    title: &'a str,
    y_label: &'a str,
    names: &'a [String],
    groups: &'a [BarGroup],
    y: Scale,
}

/// Draws the bar chart, with the legend placed as in [`lines_chart`].
fn bars_chart(root: &Area, spec: &BarSpec) -> Result<(), String> {
    if !draw_bars(root, spec, false)? {
        draw_bars(root, spec, true)?;
    }
    Ok(())
}

/// Draws the bar chart; `Ok(false)` as for [`draw_lines`].
fn draw_bars(root: &Area, s: &BarSpec, legend_outside: bool) -> Result<bool, String> {
    let n = s.groups.iter().map(|g| g.values.len()).max().unwrap_or(0).max(s.names.len());
    let names: Vec<String> =
        (0..n).map(|i| s.names.get(i).cloned().unwrap_or_else(|| format!("series {}", i + 1))).collect();
    let looks = looks(&names);
    let (lw, lh) = legend_size(&looks);
    let usable = |v: f64| v.is_finite() && (s.y == Scale::Linear || v > 0.0);
    let vals: Vec<f64> =
        s.groups.iter().flat_map(|g| g.values.iter().flatten().copied()).filter(|&v| usable(v)).collect();

    let inner = frame(root, s.title)?;
    let (area, legend_area) = if legend_outside && !looks.is_empty() {
        let (w, _) = inner.dim_in_pixel();
        let (a, b) = inner.split_horizontally(w as i32 - lw - 16);
        (a, Some(b))
    } else {
        (inner, None)
    };
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

    let mut chart = ChartBuilder::on(&area)
        .margin_top(CHART_MARGIN_TOP)
        .margin_right(margin_right)
        .x_label_area_size(xa)
        .y_label_area_size(ya)
        .build_cartesian_2d(x.spec(), y.spec())
        .map_err(es)?;
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
        let p0 = chart.backend_coord(&(a, base));
        let p1 = chart.backend_coord(&(b, top));
        (i, (p0.0.min(p1.0), p0.1.min(p1.1), p0.0.max(p1.0), p0.1.max(p1.1)))
    };
    let px_rects: Vec<(usize, Rect)> = rects.iter().map(|&r| to_px(r)).collect();
    let legend_at = match &legend_area {
        Some(la) => {
            let (lx, ly) = la.get_base_pixel();
            Some((lx + 8, plot.1.max(ly)))
        }
        None if looks.is_empty() => None,
        None => {
            let obstacles: Vec<Rect> = px_rects.iter().map(|r| r.1).collect();
            match free_corner(plot, (lw, lh), &obstacles) {
                Some(c) => Some(c),
                None => return Ok(false),
            }
        }
    };

    draw_mesh(&mut chart, &x, &y, "", s.y_label, false)?;
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
        let c = ((plot.0 + plot.2) / 2, (plot.1 + plot.3) / 2);
        draw_text(root, "no data", c, &text(DESC_PX).color(&LIMIT_GREY), HPos::Center, VPos::Center)?;
    }
    if let Some(at) = legend_at {
        draw_legend(root, at, &looks, true)?;
    }
    Ok(true)
}

// ---------------------------------------------------------------------------------------------
// Heatmaps.

/// Colour of an overlap ratio: green at 0, yellow-orange at 1, red from 2 on.
fn overlap_colour(v: f64) -> RGBColor {
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
fn ink_on(c: RGBColor) -> RGBColor {
    let l = 0.299 * c.0 as f64 + 0.587 * c.1 as f64 + 0.114 * c.2 as f64;
    if l >= 140.0 { RGBColor(20, 20, 20) } else { WHITE }
}

fn draw_heatmaps(root: &Area, title: &str, panels: &[Heatmap]) -> Result<(), String> {
    let inner = frame(root, title)?;
    let (w, _) = inner.dim_in_pixel();
    let (panel_area, bar_area) = inner.split_horizontally(w as i32 - COLOUR_BAR_W as i32 + 16);
    let mut plot_span: Option<(i32, i32)> = None;
    if panels.is_empty() {
        let (pw, ph) = panel_area.dim_in_pixel();
        draw_text(
            &panel_area,
            "no data",
            (pw as i32 / 2, ph as i32 / 2),
            &text(DESC_PX).color(&LIMIT_GREY),
            HPos::Center,
            VPos::Center,
        )?;
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
            let (x0, y0, x1, y1) = (p0.0.min(p1.0), p0.1.min(p1.1), p0.0.max(p1.0), p0.1.max(p1.1));
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
    let mut mesh = chart.configure_mesh();
    let xf = |v: &f64| x.label(*v);
    let yf = |v: &f64| y.label(*v);
    mesh.disable_mesh()
        .x_label_formatter(&xf)
        .y_label_formatter(&yf)
        .label_style(text(TICK_PX))
        .axis_desc_style(text(DESC_PX))
        .axis_style(RGBColor(120, 120, 120).stroke_width(1))
        .set_all_tick_mark_size(4);
    if !p.x_label.is_empty() {
        mesh.x_desc(&p.x_label);
    }
    if !p.y_label.is_empty() {
        mesh.y_desc(&p.y_label);
    }
    if nx == 0 || ny == 0 {
        mesh.disable_axes();
    }
    mesh.draw().map_err(es)?;
    if nx == 0 || ny == 0 {
        let c = ((plot.0 + plot.2) / 2, (plot.1 + plot.3) / 2);
        draw_text(root, "no data", c, &text(DESC_PX).color(&LIMIT_GREY), HPos::Center, VPos::Center)?;
    }
    Ok((plot.1, plot.3))
}

/// The colour scale at pixel column `x0`, spanning rows `top..bottom`, with its explanations.
fn draw_colour_bar(root: &Area, x0: i32, (top, bottom): (i32, i32)) -> Result<(), String> {
    let x0 = x0 + 4;
    let bw = 26;
    // Leave room under the bar for the "not measured" swatch.
    let bottom = (bottom - 40).max(top + 40);
    let h = bottom - top;
    for py in top..=bottom {
        let v = 2.0 * (bottom - py) as f64 / h as f64;
        root.draw(&Rectangle::new([(x0, py), (x0 + bw, py + 1)], overlap_colour(v).filled())).map_err(es)?;
    }
    root.draw(&Rectangle::new([(x0, top), (x0 + bw, bottom + 1)], RGBColor(120, 120, 120).stroke_width(1)))
        .map_err(es)?;
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

// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("madbench-plot-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Checks the PNG signature and returns (width, height) from the IHDR chunk.
    fn png_size(p: &Path) -> (u32, u32) {
        let b = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert!(b.len() > 24, "{}: too short for a PNG", p.display());
        assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "{}: not a PNG", p.display());
        assert_eq!(&b[12..16], b"IHDR");
        let be = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        (be(16), be(20))
    }

    /// Loads the font, failing with the install hint when it is missing.
    fn font_present() {
        if let Err(e) = ensure_font() {
            panic!("{e}");
        }
    }

    fn bytes(v: f64) -> String {
        let v = v.round() as u64;
        match v {
            v if v >= 1 << 30 && v % (1 << 30) == 0 => format!("{} GiB", v >> 30),
            v if v >= 1 << 20 && v % (1 << 20) == 0 => format!("{} MiB", v >> 20),
            v if v >= 1 << 10 && v % (1 << 10) == 0 => format!("{} KiB", v >> 10),
            v => format!("{v} B"),
        }
    }

    /// Microseconds → "500 ns", "1 µs", "2.5 ms".
    fn micros(us: f64) -> String {
        let t = |v: f64| {
            let s = format!("{v:.2}");
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        };
        if us >= 1e6 {
            format!("{} s", t(us / 1e6))
        } else if us >= 1e3 {
            format!("{} ms", t(us / 1e3))
        } else if us >= 1.0 {
            format!("{} µs", t(us))
        } else {
            format!("{} ns", t(us * 1e3))
        }
    }

    fn latency_series() -> Vec<Series> {
        let sizes: Vec<f64> = std::iter::once(0.0).chain((0..=22).map(|k| (1u64 << k) as f64)).collect();
        let curve = |base: f64, bw_gbs: f64, eager_jump: f64| -> Vec<(f64, f64)> {
            sizes
                .iter()
                .map(|&s| {
                    let jump = if s > 16384.0 { eager_jump } else { 0.0 };
                    (s, base + jump + s / (bw_gbs * 1e3))
                })
                .collect()
        };
        vec![
            Series { name: "madmpi".into(), points: curve(1.1, 10.0, 2.0) },
            Series { name: "MPICH".into(), points: curve(0.8, 11.0, 3.5) },
            Series { name: "Open MPI".into(), points: curve(0.9, 9.0, 4.5) },
            Series { name: "limit (memcpy)".into(), points: curve(0.05, 12.5, 0.0) },
        ]
    }

    fn overlap_panels() -> Vec<Heatmap> {
        let sizes: Vec<String> = (0..8).map(|k| bytes((1024u64 << (2 * k).min(14)) as f64)).collect();
        let sizes: Vec<String> =
            sizes.into_iter().enumerate().map(|(i, s)| if i < 7 { s } else { "16 MiB".into() }).collect();
        let comp = ["0.25x", "0.5x", "0.75x", "1x", "1.5x", "2x"].map(String::from).to_vec();
        let panel = |title: &str, skew: f64| Heatmap {
            title: title.into(),
            x_label: "compute time / transfer time".into(),
            y_label: "message size".into(),
            x_labels: comp.clone(),
            y_labels: sizes.clone(),
            values: (0..8)
                .map(|r| {
                    (0..6)
                        .map(|c| {
                            if r == 7 && c == 5 && skew > 0.5 {
                                return None;
                            }
                            let v = (r as f64 * 0.28 + c as f64 * 0.12) * skew;
                            Some(v.min(2.3))
                        })
                        .collect()
                })
                .collect(),
        };
        vec![panel("sender computes", 0.45), panel("receiver computes", 0.8), panel("both compute", 1.0)]
    }

    /// Draws into memory (no PNG encoding: the edge cases stay fast in debug builds) and checks
    /// that something was drawn.
    fn in_memory(size: (u32, u32), draw: impl FnOnce(&Area) -> Result<(), String>) -> Result<(), String> {
        font_present();
        let mut buf = vec![0u8; size.0 as usize * size.1 as usize * 3];
        {
            let root = BitMapBackend::with_buffer(&mut buf, size).into_drawing_area();
            draw(&root)?;
            root.present().map_err(es)?;
        }
        assert!(buf.iter().any(|&b| b < 128), "nothing dark was drawn");
        Ok(())
    }

    fn ramp(name: &str, n: usize, f: impl Fn(f64) -> f64) -> Series {
        Series { name: name.into(), points: (0..n).map(|i| (i as f64, f(i as f64))).collect() }
    }

    fn num(v: f64) -> String {
        plain_number(v)
    }

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
            let w = PANEL_W * panels.len().max(1) as u32 + COLOUR_BAR_W;
            in_memory((w, HEATMAP_H), |root| draw_heatmaps(root, name, &panels))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

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

    #[test]
    fn errors_are_returned() {
        font_present();
        let d = dir("err");
        let s = [ramp("a", 3, |x| x)];
        let e = lines(&d.join("chart.svg"), "t", "x", "y", Scale::Linear, Scale::Linear, &s, &num, &num)
            .unwrap_err();
        assert!(e.contains(".png"), "{e}");
        let missing = d.join("no-such-dir").join("chart.png");
        let e = bars(&missing, "t", "y", &[], &[], Scale::Linear).unwrap_err();
        assert!(e.contains("no-such-dir"), "{e}");
        assert!(heatmaps(&missing, "t", &[]).is_err());
        assert!(!missing.exists());
        let _ = std::fs::remove_dir_all(&d);
    }

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
        assert_eq!(overlap_colour(5.0), overlap_colour(2.0));
        assert_eq!(overlap_colour(f64::NAN), MISSING_GREY);
    }

    #[test]
    fn colours_follow_names() {
        let names: Vec<String> =
            ["Open MPI", "madmpi (polling)", "madmpi (interrupts)", "MPICH", "limit (TCP)", "other"]
                .map(String::from)
                .to_vec();
        let l = looks(&names);
        assert_eq!(l[0].colour, PALETTE[2]);
        assert_eq!(l[1].colour, PALETTE[0]);
        assert_eq!(l[3].colour, PALETTE[1]);
        assert!(l[4].limit && l[4].colour == LIMIT_GREY);
        let distinct: std::collections::HashSet<_> =
            l.iter().filter(|x| !x.limit).map(|x| (x.colour.0, x.colour.1, x.colour.2)).collect();
        assert_eq!(distinct.len(), 5);
        // More series than colours: still drawable, markers tell them apart.
        let many: Vec<String> = (0..20).map(|i| format!("s{i}")).collect();
        assert_eq!(looks(&many).len(), 20);
    }

    #[test]
    fn writes_png_files() {
        font_present();
        let d = dir("files");
        let (l, h, b) = (d.join("lines.png"), d.join("heatmaps.png"), d.join("bars.png"));
        lines(&l, "latency", "size", "time", Scale::Log, Scale::Log, &latency_series(), &bytes, &micros)
            .unwrap();
        heatmaps(&h, "overlap", &overlap_panels()[..2]).unwrap();
        let groups = [BarGroup { label: "g".into(), values: vec![Some(1.0), None, Some(3.0)] }];
        bars(&b, "bars", "µs", &["madmpi".into(), "MPICH".into()], &groups, Scale::Linear).unwrap();
        assert_eq!(png_size(&l), CHART_SIZE);
        assert_eq!(png_size(&h), (2 * PANEL_W + COLOUR_BAR_W, HEATMAP_H));
        assert_eq!(png_size(&b), CHART_SIZE);
        let _ = std::fs::remove_dir_all(&d);
    }

    /// The example generator: writes realistic charts to /tmp/plot-demo to look at.
    /// Run with `cargo test -p bench --lib plot::tests::demo_images -- --ignored`.
    #[test]
    #[ignore = "writes example charts to /tmp/plot-demo"]
    fn demo_images() {
        font_present();
        let d = PathBuf::from("/tmp/plot-demo");
        std::fs::create_dir_all(&d).unwrap();
        lines(
            &d.join("latency.png"),
            "Ping-pong latency (shared memory)",
            "message size",
            "one-way latency",
            Scale::Log,
            Scale::Log,
            &latency_series(),
            &bytes,
            &micros,
        )
        .unwrap();
        let bw: Vec<Series> = latency_series()
            .into_iter()
            .map(|s| Series {
                name: s.name,
                points: s.points.iter().map(|&(x, t)| (x, x / t / 1e3)).collect(),
            })
            .collect();
        lines(
            &d.join("bandwidth.png"),
            "Bandwidth",
            "message size",
            "bandwidth (GB/s)",
            Scale::Log,
            Scale::Linear,
            &bw,
            &bytes,
            &|v| format!("{v}"),
        )
        .unwrap();
        heatmaps(
            &d.join("overlap.png"),
            "Overlap of communication and computation — madmpi",
            &overlap_panels(),
        )
        .unwrap();
        let names: Vec<String> = [
            "madmpi (polling)",
            "madmpi (interrupts)",
            "MPICH",
            "Open MPI",
            "MPICH (async progress)",
            "limit (raw TCP)",
        ]
        .map(String::from)
        .to_vec();
        let groups: Vec<BarGroup> = [0, 1, 2, 4]
            .iter()
            .map(|&t| BarGroup {
                label: format!("{t} compute thread{}", if t == 1 { "" } else { "s" }),
                values: vec![
                    Some(3.0 + t as f64 * 0.4),
                    Some(8.0),
                    Some(4.0 * (1.0 + t as f64 * 40.0)),
                    if t == 4 { None } else { Some(5.0 * (1.0 + t as f64 * 25.0)) },
                    Some(15.0 + t as f64),
                    Some(2.0),
                ],
            })
            .collect();
        bars(&d.join("reactivity.png"), "Reactivity under load", "latency (µs)", &names, &groups, Scale::Log)
            .unwrap();
        for f in ["latency.png", "bandwidth.png", "reactivity.png"] {
            assert_eq!(png_size(&d.join(f)), CHART_SIZE);
        }
        assert_eq!(png_size(&d.join("overlap.png")), (3 * PANEL_W + COLOUR_BAR_W, HEATMAP_H));
    }
}
