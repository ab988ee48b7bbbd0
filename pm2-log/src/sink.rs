//! The `log` backend: formats a record as one line and writes it to stderr with one `write`,
//! so that lines of concurrent threads (and of ranks sharing a terminal) do not interleave.
//! Owns the line format and who speaks (program, rank); the filter decides what is written.

use crate::filter::Filter;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// No rank known (yet): the prefix shows the program only.
const NO_RANK: u32 = u32::MAX;

pub(crate) struct Sink {
    pub(crate) filter: Filter,
    program: String,
    rank: AtomicU32,
}

impl Sink {
    pub(crate) fn new(filter: Filter, program: String, rank: Option<u32>) -> Sink {
        Sink { filter, program, rank: AtomicU32::new(rank.unwrap_or(NO_RANK)) }
    }

    pub(crate) fn set_rank(&self, rank: u32) {
        self.rank.store(rank, Relaxed);
    }

    /// `program[rank] LEVEL module: message` and a newline (`program LEVEL …` without a rank).
    pub(crate) fn line(&self, record: &log::Record<'_>) -> String {
        let mut s = String::with_capacity(128);
        s.push_str(&self.program);
        let rank = self.rank.load(Relaxed);
        if rank != NO_RANK {
            let _ = write!(s, "[{rank}]");
        }
        let _ = writeln!(s, " {} {}: {}", record.level(), record.target(), record.args());
        s
    }
}

impl log::Log for Sink {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= self.filter.level_for(metadata.target())
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let line = self.line(record);
        // Stderr is unbuffered: one write_all of the whole line is one write(2) unless the
        // kernel takes part of it. Nothing is left to do if stderr is gone.
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    fn flush(&self) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use log::{Level, Log};

    fn line(sink: &Sink, level: Level, target: &str, msg: &str) -> String {
        sink.line(&log::Record::builder().level(level).target(target).args(format_args!("{msg}")).build())
    }

    #[test]
    fn the_prefix_names_program_rank_level_and_module() {
        let sink = Sink::new(Filter::default(), "cpi".into(), None);
        assert_eq!(
            line(&sink, Level::Warn, "nmad::core::gate", "lost peer 2"),
            "cpi WARN nmad::core::gate: lost peer 2\n"
        );
        sink.set_rank(3);
        assert_eq!(line(&sink, Level::Error, "marcel", "x"), "cpi[3] ERROR marcel: x\n");
    }

    #[test]
    fn enabled_follows_the_filter_per_module() {
        let (f, _) = Filter::parse("nmad=debug,error");
        let sink = Sink::new(f, "p".into(), Some(0));
        let md = |level, target| log::Metadata::builder().level(level).target(target).build();
        assert!(sink.enabled(&md(Level::Debug, "nmad::core")));
        assert!(!sink.enabled(&md(Level::Trace, "nmad::core")));
        assert!(sink.enabled(&md(Level::Error, "pioman")));
        assert!(!sink.enabled(&md(Level::Warn, "pioman")));
    }
}
