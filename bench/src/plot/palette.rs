//! Colours and markers: the ink and grid greys, and how each series is drawn: a colour-blind-
//! friendly colour per implementation (madmpi blue, MPICH orange, Open MPI green), limits grey and
//! dashed, the rest the free colours in order, each with its own marker.

use plotters::prelude::*;

use super::canvas::{Area, es};

pub(super) const INK: RGBColor = RGBColor(34, 34, 34);
pub(super) const GRID_BOLD: RGBColor = RGBColor(210, 210, 210);
pub(super) const GRID_LIGHT: RGBColor = RGBColor(238, 238, 238);
pub(super) const LIMIT_GREY: RGBColor = RGBColor(120, 120, 120);
/// Axis lines and frames.
pub(super) const AXIS_GREY: RGBColor = RGBColor(120, 120, 120);

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
pub(super) enum Marker {
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
pub(super) struct Look {
    pub(super) name: String,
    pub(super) colour: RGBColor,
    pub(super) marker: Marker,
    /// A reference line ("limit…"): grey, dashed, no markers.
    pub(super) limit: bool,
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
pub(super) fn looks(names: &[String]) -> Vec<Look> {
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

pub(super) fn draw_marker(
    area: &Area,
    m: Marker,
    (x, y): (i32, i32),
    c: RGBColor,
    r: i32,
) -> Result<(), String> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
