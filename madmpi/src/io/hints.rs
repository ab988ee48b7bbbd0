//! The info hints a file honours, by ROMIO's names so that programs tuned for MPICH or Open MPI
//! tune us too: collective buffering (`cb_buffer_size`, `cb_nodes`, `romio_cb_read`,
//! `romio_cb_write`) and data sieving (`ind_rd_buffer_size`, `ind_wr_buffer_size`,
//! `romio_ds_read`, `romio_ds_write`), and ours: `madmpi_io_uring` (batches of strided pieces
//! through io_uring). A value that does not parse is ignored, as MPI allows. A file named by
//! `ROMIO_HINTS` (lines `key value`, as ROMIO reads it) gives defaults that a program's own
//! hints override.

use crate::info::Info;

/// `enable`, `disable` or `automatic` (the library decides per access).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Switch {
    Enable,
    Disable,
    Automatic,
}

impl Switch {
    fn parse(v: &str) -> Option<Switch> {
        match v {
            "enable" | "true" => Some(Switch::Enable),
            "disable" | "false" => Some(Switch::Disable),
            "automatic" => Some(Switch::Automatic),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Switch::Enable => "enable",
            Switch::Disable => "disable",
            Switch::Automatic => "automatic",
        }
    }
}

/// The hints in use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hints {
    /// Bytes an aggregator gathers per round of collective buffering.
    pub cb_buffer_size: usize,
    /// Aggregators (at most the group's size; default: one per node).
    pub cb_nodes: usize,
    pub cb_read: Switch,
    pub cb_write: Switch,
    /// The span a sieving read or write covers at a time.
    pub ind_rd_buffer_size: usize,
    pub ind_wr_buffer_size: usize,
    pub ds_read: Switch,
    pub ds_write: Switch,
    /// Many pieces of an independent access in a few system calls (io_uring): `enable` only
    /// (automatic does not: it loses on the page cache).
    pub io_uring: Switch,
}

impl Hints {
    /// ROMIO's defaults, with `nodes` aggregators.
    pub(super) fn defaults(nodes: usize) -> Hints {
        Hints {
            cb_buffer_size: 16 << 20,
            cb_nodes: nodes,
            cb_read: Switch::Automatic,
            cb_write: Switch::Automatic,
            ind_rd_buffer_size: 4 << 20,
            ind_wr_buffer_size: 512 << 10,
            ds_read: Switch::Automatic,
            ds_write: Switch::Automatic,
            io_uring: Switch::Disable,
        }
        .with(system_hints(), usize::MAX)
    }

    /// These hints with `info`'s on top; `procs` bounds `cb_nodes`.
    pub(super) fn with(&self, info: &Info, procs: usize) -> Hints {
        let mut h = self.clone();
        let get = |k: &str| info.get(k).and_then(|v| std::str::from_utf8(v).ok()).map(str::trim);
        let size = |k: &str| get(k).and_then(|v| v.parse::<usize>().ok()).filter(|&n| n > 0);
        let switch = |k: &str| get(k).and_then(Switch::parse);
        h.cb_buffer_size = size("cb_buffer_size").unwrap_or(h.cb_buffer_size);
        h.cb_nodes = size("cb_nodes").unwrap_or(h.cb_nodes).min(procs.max(1));
        h.cb_read = switch("romio_cb_read").unwrap_or(h.cb_read);
        h.cb_write = switch("romio_cb_write").unwrap_or(h.cb_write);
        h.ind_rd_buffer_size = size("ind_rd_buffer_size").unwrap_or(h.ind_rd_buffer_size);
        h.ind_wr_buffer_size = size("ind_wr_buffer_size").unwrap_or(h.ind_wr_buffer_size);
        h.ds_read = switch("romio_ds_read").unwrap_or(h.ds_read);
        h.ds_write = switch("romio_ds_write").unwrap_or(h.ds_write);
        h.io_uring = switch("madmpi_io_uring").unwrap_or(h.io_uring);
        h
    }

    /// `MPI_File_get_info`'s answer.
    pub fn to_info(&self) -> Info {
        let mut info = Info::new();
        let pairs = [
            ("cb_buffer_size", self.cb_buffer_size.to_string()),
            ("cb_nodes", self.cb_nodes.to_string()),
            ("romio_cb_read", self.cb_read.name().to_string()),
            ("romio_cb_write", self.cb_write.name().to_string()),
            ("ind_rd_buffer_size", self.ind_rd_buffer_size.to_string()),
            ("ind_wr_buffer_size", self.ind_wr_buffer_size.to_string()),
            ("romio_ds_read", self.ds_read.name().to_string()),
            ("romio_ds_write", self.ds_write.name().to_string()),
            ("madmpi_io_uring", self.io_uring.name().to_string()),
        ];
        for (k, v) in pairs {
            info.set(k, v).expect("short keys and values");
        }
        info
    }
}

/// The hints of the file `ROMIO_HINTS` names (read once; none if unset or unreadable).
fn system_hints() -> &'static Info {
    static HINTS: std::sync::OnceLock<Info> = std::sync::OnceLock::new();
    HINTS.get_or_init(|| {
        let Some(path) = std::env::var_os("ROMIO_HINTS") else {
            return Info::new();
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => parse_hints_file(&text),
            Err(e) => {
                log::warn!("io: ROMIO_HINTS={}: {e}", path.to_string_lossy());
                Info::new()
            }
        }
    })
}

/// `key value` per line; blank lines and `#` comments skipped.
fn parse_hints_file(text: &str) -> Info {
    let mut info = Info::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let mut words = line.split_whitespace();
        if let (Some(k), Some(v)) = (words.next(), words.next())
            && info.set(k, v).is_err()
        {
            log::warn!("io: ROMIO_HINTS: `{line}` is too long for a hint");
        }
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn romio_hints_are_taken_and_bad_values_ignored() {
        let mut info = Info::new();
        info.set("cb_buffer_size", "1048576").unwrap();
        info.set("cb_nodes", "64").unwrap();
        info.set("romio_cb_write", "enable").unwrap();
        info.set("romio_ds_read", "sometimes").unwrap();
        let h = Hints::defaults(1).with(&info, 4);
        assert_eq!(
            (h.cb_buffer_size, h.cb_nodes, h.cb_write, h.ds_read),
            (1 << 20, 4, Switch::Enable, Switch::Automatic)
        );
        assert_eq!(h.to_info().get("cb_nodes"), Some(&b"4"[..]));
    }

    #[test]
    fn a_hints_file_reads_like_romios() {
        let info = parse_hints_file("# tuned\ncb_nodes 2\n\n  madmpi_io_uring   disable\nlonely\n");
        let h = Hints::defaults(1).with(&info, 4);
        assert_eq!((h.cb_nodes, h.io_uring), (2, Switch::Disable));
        assert_eq!(info.get("lonely"), None);
    }
}
