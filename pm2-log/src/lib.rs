//! The workspace's logging backend. Library code logs through the `log` facade
//! (`log::warn!`, `log::error!`…); this crate decides where those records go: to stderr, one
//! line each, written with one `write` so that threads do not interleave, with a prefix saying
//! who speaks:
//!
//! ```text
//! cpi[1] ERROR nmad::core::gate: rank 1: lost peer 2: connection reset
//! madrun WARN tools::launcher::event_loop: rejected a connection from 10.0.0.7:4321: bad key
//! ```
//!
//! (program, `[rank]` once known, level, module). One environment variable, `PM2_LOG`, sets
//! the level: `off`, `error`, `warn` (the default), `info`, `debug` or `trace`, optionally per
//! module: `PM2_LOG=nmad=debug,warn` (see [`filter`] for the grammar). A directive it cannot
//! read is reported once and left out.
//!
//! Every entry point calls [`init`] (idempotent, cheap after the first call): madrun and the
//! other tools, `MPI_Init`/`MPI_Init_thread`/`MPI_Session_init` and madmpi's Rust init,
//! `nmad::Nmad::init`, marcel's and pioman's runtime constructors, the bench programs. A program
//! that installed its own `log` backend first keeps it. The rank comes from `PMI_RANK` (madrun,
//! Hydra) or from [`set_rank`] (nmad, once PMI told it).
//!
//! [`RateLimited`] lets code that may repeat a message without bound (network input, a failing
//! `accept`) speak once per interval with a count.
//!
//! A crate of its own, depending on `log` only, because the lowest crates (marcel, pioman)
//! need [`RateLimited`] and must not depend on `tools` or `nmad`. It owns the process's logger
//! and nothing else: it never reads other settings and never writes anything but stderr.

pub mod filter;
mod rate;
mod sink;

pub use rate::{RateLimited, repeats};

use std::sync::{Once, OnceLock};

/// The environment variable that sets the level.
pub const VAR: &str = "PM2_LOG";

static SINK: OnceLock<sink::Sink> = OnceLock::new();

/// Installs the backend (once per process; later calls do nothing): reads `PM2_LOG`, names the
/// program from `argv[0]` and the rank from `PMI_RANK`. If the program installed another `log`
/// backend before, that one stays.
pub fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let (filter, problems) = match std::env::var(VAR) {
            Ok(spec) => filter::Filter::parse(&spec),
            Err(std::env::VarError::NotPresent) => Default::default(),
            Err(std::env::VarError::NotUnicode(_)) => (Default::default(), vec!["not UTF-8".to_string()]),
        };
        let max = filter.max();
        let sink = SINK.get_or_init(|| sink::Sink::new(filter, program_name(), rank_from_env()));
        if log::set_logger(sink).is_ok() {
            log::set_max_level(max);
            for p in problems {
                log::warn!("{VAR}: {p}; ignored");
            }
        }
    });
}

/// Shows `rank` in the prefix of the lines that follow (installs the backend if needed).
pub fn set_rank(rank: u32) {
    init();
    if let Some(s) = SINK.get() {
        s.set_rank(rank);
    }
}

/// The name the program was started with (`argv[0]` without its directory).
fn program_name() -> String {
    let base = |p: std::path::PathBuf| p.file_name().map(|n| n.to_string_lossy().into_owned());
    std::env::args_os()
        .next()
        .and_then(|a| base(a.into()))
        .filter(|n| !n.is_empty())
        .or_else(|| std::env::current_exe().ok().and_then(base))
        .unwrap_or_else(|| "?".to_string())
}

/// The rank the launcher gave (madrun and Hydra set `PMI_RANK`), if it is a number.
fn rank_from_env() -> Option<u32> {
    std::env::var("PMI_RANK").ok()?.trim().parse().ok()
}
