//! The image and what every chart draws on it: the PNG file checks and writing, the drawing area
//! and pixel rectangles, the white frame with the title, text placement and the "no data" note.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::font::{DESC_PX, TITLE_PX, bold, ensure_font, text};
use super::palette::LIMIT_GREY;

pub(super) type Area<'a> = DrawingArea<BitMapBackend<'a>, Shift>;

/// Pixel rectangle `(x0, y0, x1, y1)`, inclusive.
pub(super) type Rect = (i32, i32, i32, i32);

/// Height of the band at the top of every image that holds its title.
const TITLE_BAND: i32 = 48;

/// Loads the font and checks that `path` names a PNG file.
pub(super) fn prepare(path: &Path) -> Result<(), String> {
    ensure_font()?;
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("png") => Ok(()),
        _ => Err(format!("{}: chart files are PNG, the name must end in .png", path.display())),
    }
}

/// Creates the bitmap, lets `draw` paint it and writes it out.
pub(super) fn render(
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

pub(super) fn es<E: std::fmt::Display>(e: E) -> String {
    format!("drawing failed: {e}")
}

pub(super) fn draw_text(
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
pub(super) fn frame<'a>(root: &Area<'a>, title: &str) -> Result<Area<'a>, String> {
    root.fill(&WHITE).map_err(es)?;
    let (w, _) = root.dim_in_pixel();
    draw_text(root, title, (w as i32 / 2, 14), &bold(TITLE_PX), HPos::Center, VPos::Top)?;
    Ok(root.margin(TITLE_BAND, 8, 12, 16))
}

/// The rectangle with opposite corners `p0` and `p1`.
pub(super) fn rect_between(p0: (i32, i32), p1: (i32, i32)) -> Rect {
    (p0.0.min(p1.0), p0.1.min(p1.1), p0.0.max(p1.0), p0.1.max(p1.1))
}

/// Writes "no data" in grey at the centre of `r`.
pub(super) fn no_data(area: &Area, r: Rect) -> Result<(), String> {
    let c = ((r.0 + r.2) / 2, (r.1 + r.3) / 2);
    draw_text(area, "no data", c, &text(DESC_PX).color(&LIMIT_GREY), HPos::Center, VPos::Center)
}
