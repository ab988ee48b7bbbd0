//! Tests of the public API (PNG files written, errors returned, the demo images) and the helpers
//! the chart tests share: formatters, sample data and in-memory drawing.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::canvas::{Area, es};
use super::chart::CHART_SIZE;
use super::font::ensure_font;
use super::heatmap::image_size;
use super::*;

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
pub(super) fn font_present() {
    if let Err(e) = ensure_font() {
        panic!("{e}");
    }
}

pub(super) fn bytes(v: f64) -> String {
    let v = v.round() as u64;
    match v {
        v if v >= 1 << 30 && v % (1 << 30) == 0 => format!("{} GiB", v >> 30),
        v if v >= 1 << 20 && v % (1 << 20) == 0 => format!("{} MiB", v >> 20),
        v if v >= 1 << 10 && v % (1 << 10) == 0 => format!("{} KiB", v >> 10),
        v => format!("{v} B"),
    }
}

/// Microseconds → "500 ns", "1 µs", "2.5 ms".
pub(super) fn micros(us: f64) -> String {
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
pub(super) fn in_memory(
    size: (u32, u32),
    draw: impl FnOnce(&Area) -> Result<(), String>,
) -> Result<(), String> {
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

pub(super) fn ramp(name: &str, n: usize, f: impl Fn(f64) -> f64) -> Series {
    Series { name: name.into(), points: (0..n).map(|i| (i as f64, f(i as f64))).collect() }
}

pub(super) fn num(v: f64) -> String {
    axis::plain_number(v)
}

#[test]
fn errors_are_returned() {
    font_present();
    let d = dir("err");
    let s = [ramp("a", 3, |x| x)];
    let e =
        lines(&d.join("chart.svg"), "t", "x", "y", Scale::Linear, Scale::Linear, &s, &num, &num).unwrap_err();
    assert!(e.contains(".png"), "{e}");
    let missing = d.join("no-such-dir").join("chart.png");
    let e = bars(&missing, "t", "y", &[], &[], Scale::Linear).unwrap_err();
    assert!(e.contains("no-such-dir"), "{e}");
    assert!(heatmaps(&missing, "t", &[]).is_err());
    assert!(!missing.exists());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn writes_png_files() {
    font_present();
    let d = dir("files");
    let (l, h, b) = (d.join("lines.png"), d.join("heatmaps.png"), d.join("bars.png"));
    lines(&l, "latency", "size", "time", Scale::Log, Scale::Log, &latency_series(), &bytes, &micros).unwrap();
    heatmaps(&h, "overlap", &overlap_panels()[..2]).unwrap();
    let groups = [BarGroup { label: "g".into(), values: vec![Some(1.0), None, Some(3.0)] }];
    bars(&b, "bars", "µs", &["madmpi".into(), "MPICH".into()], &groups, Scale::Linear).unwrap();
    assert_eq!(png_size(&l), CHART_SIZE);
    assert_eq!(png_size(&h), image_size(2));
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
        .map(|s| Series { name: s.name, points: s.points.iter().map(|&(x, t)| (x, x / t / 1e3)).collect() })
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
    heatmaps(&d.join("overlap.png"), "Overlap of communication and computation — madmpi", &overlap_panels())
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
    assert_eq!(png_size(&d.join("overlap.png")), image_size(3));
}
