//! The chart font and text: DejaVu Sans read and registered with plotters once per process, the
//! text sizes, the regular and bold styles, and text measurement.

use std::sync::OnceLock;

use plotters::prelude::*;
use plotters::style::register_font;

use super::palette::INK;

/// The TrueType font every chart uses (Debian package `fonts-dejavu-core`).
const FONT_PATH: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
/// Used for titles when present; the regular face stands in otherwise.
const FONT_BOLD_PATH: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf";
/// The family name the font is registered under (plotters' default family).
const FAMILY: &str = "sans-serif";

pub(super) const TITLE_PX: f64 = 24.0;
pub(super) const DESC_PX: f64 = 16.0;
pub(super) const TICK_PX: f64 = 14.0;
pub(super) const LEGEND_PX: f64 = 15.0;

/// Loads and registers the font once per process.
pub(super) fn ensure_font() -> Result<(), String> {
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

pub(super) fn text(size: f64) -> TextStyle<'static> {
    TextStyle::from((FAMILY, size).into_font()).color(&INK)
}

pub(super) fn bold(size: f64) -> TextStyle<'static> {
    TextStyle::from((FAMILY, size, FontStyle::Bold).into_font()).color(&INK)
}

/// Width of `s` in pixels at `size`.
pub(super) fn text_w(s: &str, size: f64) -> f64 {
    (FAMILY, size).into_font().box_size(s).map_or(s.chars().count() as f64 * size * 0.6, |(w, _)| w as f64)
}
