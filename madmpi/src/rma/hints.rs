//! The window hints MadMPI keeps (MPI 4.0 §12.2.1 and §12.7.4), with their values, for the
//! operations to honour:
//!
//! | key | values | default |
//! |-----|--------|---------|
//! | `no_locks` | `true`/`false` | `false` |
//! | `accumulate_ordering` | `none` or a comma list of `rar`, `raw`, `war`, `waw` | `rar,raw,war,waw` |
//! | `accumulate_ops` | `same_op_no_op`, `same_op` | `same_op_no_op` |
//! | `same_size` | `true`/`false` | `false` |
//! | `same_disp_unit` | `true`/`false` | `false` |
//! | `alloc_shared_noncontig` | `true`/`false` | `false` (read at creation only) |
//!
//! A value that is not one of these leaves the hint as it was; unknown keys are ignored, as
//! MPI allows. `MPI_Win_get_info` reports every hint with its current value.

use crate::info::Info;

/// The orderings of accumulate operations from one origin to one target that MPI guarantees
/// unless `accumulate_ordering` relaxes them (read-after-read, read-after-write, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AccumulateOrdering {
    pub rar: bool,
    pub raw: bool,
    pub war: bool,
    pub waw: bool,
}

impl AccumulateOrdering {
    /// Every ordering (MPI's default).
    pub const ALL: AccumulateOrdering = AccumulateOrdering { rar: true, raw: true, war: true, waw: true };

    fn parse(s: &str) -> Option<AccumulateOrdering> {
        let mut o = AccumulateOrdering { rar: false, raw: false, war: false, waw: false };
        if s == "none" {
            return Some(o);
        }
        for part in s.split(',') {
            match part.trim() {
                "rar" => o.rar = true,
                "raw" => o.raw = true,
                "war" => o.war = true,
                "waw" => o.waw = true,
                _ => return None,
            }
        }
        Some(o)
    }

    fn to_value(self) -> String {
        let names = [(self.rar, "rar"), (self.raw, "raw"), (self.war, "war"), (self.waw, "waw")];
        let list: Vec<&str> = names.iter().filter(|(on, _)| *on).map(|(_, n)| *n).collect();
        if list.is_empty() { "none".to_string() } else { list.join(",") }
    }
}

/// Which concurrent accumulates to one location the program may issue (`accumulate_ops`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccumulateOps {
    /// `same_op_no_op`: one operation or `MPI_NO_OP` (the default).
    SameOpNoOp,
    /// `same_op`: always the same operation.
    SameOp,
}

/// The hints of a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WinHints {
    pub no_locks: bool,
    pub accumulate_ordering: AccumulateOrdering,
    pub accumulate_ops: AccumulateOps,
    pub same_size: bool,
    pub same_disp_unit: bool,
    /// Shared windows: each member's part starts on a page of its own.
    pub alloc_shared_noncontig: bool,
}

impl Default for WinHints {
    fn default() -> Self {
        WinHints {
            no_locks: false,
            accumulate_ordering: AccumulateOrdering::ALL,
            accumulate_ops: AccumulateOps::SameOpNoOp,
            same_size: false,
            same_disp_unit: false,
            alloc_shared_noncontig: false,
        }
    }
}

fn boolean(v: &str) -> Option<bool> {
    match v {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

impl WinHints {
    /// The defaults updated by `info` (window creation).
    pub fn from_info(info: &Info) -> WinHints {
        let mut h = WinHints::default();
        h.update(info);
        h
    }

    /// `MPI_Win_set_info`: takes the recognized keys of `info` with a valid value.
    pub fn update(&mut self, info: &Info) {
        let get = |k: &str| info.get_str(k).map(str::trim);
        for (key, field) in [
            ("no_locks", &mut self.no_locks),
            ("same_size", &mut self.same_size),
            ("same_disp_unit", &mut self.same_disp_unit),
            ("alloc_shared_noncontig", &mut self.alloc_shared_noncontig),
        ] {
            if let Some(b) = get(key).and_then(boolean) {
                *field = b;
            }
        }
        if let Some(o) = get("accumulate_ordering").and_then(AccumulateOrdering::parse) {
            self.accumulate_ordering = o;
        }
        match get("accumulate_ops") {
            Some("same_op_no_op") => self.accumulate_ops = AccumulateOps::SameOpNoOp,
            Some("same_op") => self.accumulate_ops = AccumulateOps::SameOp,
            _ => {}
        }
    }

    /// `MPI_Win_get_info`: every hint with its current value.
    pub fn to_info(self) -> Info {
        let b = |v: bool| if v { "true" } else { "false" };
        let ops = match self.accumulate_ops {
            AccumulateOps::SameOpNoOp => "same_op_no_op",
            AccumulateOps::SameOp => "same_op",
        };
        let pairs = [
            ("no_locks", b(self.no_locks).to_string()),
            ("accumulate_ordering", self.accumulate_ordering.to_value()),
            ("accumulate_ops", ops.to_string()),
            ("same_size", b(self.same_size).to_string()),
            ("same_disp_unit", b(self.same_disp_unit).to_string()),
            ("alloc_shared_noncontig", b(self.alloc_shared_noncontig).to_string()),
        ];
        let mut info = Info::new();
        for (k, v) in pairs {
            info.set(k, v).expect("valid key and value");
        }
        info
    }
}
