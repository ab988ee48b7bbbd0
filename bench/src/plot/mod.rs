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
//!
//! One file per chart kind ([`lines`], [`heatmaps`], [`bars`]); the pieces they share: `font`
//! (font and text styles), `canvas` (files, frame, text placement), `chart` (the Cartesian chart,
//! its grid and axes), `axis` and `ticks` (ranges, ticks, labels), `palette` (series colours and
//! markers), `legend` (legend drawing and placement) and `colour_scale` (the heatmap colours).

mod axis;
mod bars;
mod canvas;
mod chart;
mod colour_scale;
mod font;
mod heatmap;
mod legend;
mod lines;
mod palette;
#[cfg(test)]
mod tests;
mod ticks;

pub use axis::Scale;
pub use bars::{BarGroup, bars};
pub use heatmap::{Heatmap, heatmaps};
pub use lines::{Series, lines};
