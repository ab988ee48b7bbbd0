//! Which algorithm runs: chosen by message size, process count and the operation's
//! commutativity, unless an environment variable forces one (for research and tests):
//!
//! | variable | values | default choice |
//! |---|---|---|
//! | `MADMPI_COLL_HIERARCHICAL` | `auto`, `off` | `auto`: barrier, bcast, and reduce and allreduce with commutative operations run hierarchically (within nodes, then between one leader per node; see `algo::hier`) on communicators spanning several nodes with several ranks on one of them |
//! | `MADMPI_COLL_BARRIER` | `dissemination` | dissemination |
//! | `MADMPI_COLL_BCAST` | `binomial`, `scatter_ring` | `scatter_ring` from [`BCAST_LARGE`] bytes on 3 ranks or more, else `binomial` |
//! | `MADMPI_COLL_REDUCE` | `binomial`, `ordered` | `binomial` for commutative operations, else `ordered` |
//! | `MADMPI_COLL_ALLREDUCE` | `recursive_doubling`, `rabenseifner`, `reduce_bcast` | `rabenseifner` from [`ALLREDUCE_LARGE`] bytes for commutative operations with at least as many elements as the largest power of two ≤ n, else `recursive_doubling` |
//! | `MADMPI_COLL_REDUCE_SCATTER` (also `MPI_Reduce_scatter_block`) | `recursive_halving`, `pairwise`, `reduce_scatterv` | below [`REDUCE_SCATTER_LARGE`] bytes in all `recursive_halving` for commutative operations, `reduce_scatterv` for others; from there `pairwise` (a forced `recursive_halving` gives way to this for non-commutative operations) |
//! | `MADMPI_COLL_SCAN` (also `MPI_Exscan`) | `recursive_doubling`, `linear` | `linear` (a pipelined chain) from [`SCAN_LARGE`] bytes on 3 ranks or more, else `recursive_doubling` |
//! | `MADMPI_COLL_GATHER` | `binomial`, `linear` | `linear` from [`GATHER_LARGE`] bytes per block, else `binomial` (`MPI_Gatherv`: always linear) |
//! | `MADMPI_COLL_SCATTER` | `binomial`, `linear` | as for gather (`MPI_Scatterv`: always linear) |
//! | `MADMPI_COLL_ALLGATHER` | `recursive_doubling`, `bruck`, `ring` | below [`ALLGATHER_LONG`] bytes in all `recursive_doubling` if n is a power of two, else below [`ALLGATHER_SHORT`] `bruck`, else `ring` (a forced `recursive_doubling` gives way to this on other n) |
//! | `MADMPI_COLL_ALLGATHERV` | `ring`, `linear` | `ring` |
//! | `MADMPI_COLL_ALLTOALL` | `bruck`, `linear`, `pairwise` | `bruck` up to [`ALLTOALL_SHORT`] bytes per block on 8 ranks or more, else `linear` up to [`ALLTOALL_MEDIUM`] bytes per block, else `pairwise` |
//! | `MADMPI_COLL_ALLTOALLV` | `linear`, `pairwise` | by this rank's largest block, as for alltoall (the two match each other, so ranks may differ) |
//!
//! "Commutative" here means [`crate::op::Op::reorderable`]: `MPI_REPLACE` and `MPI_NO_OP` report
//! commutative but are combined in rank order.
//!
//! A forced algorithm that cannot serve a call (`binomial` reduce or `rabenseifner` with a
//! non-commutative operation, `rabenseifner` with fewer elements than that power of two) gives
//! way to the default for that call: forcing must never give wrong results. An unknown value is
//! an `MPI_ERR_ARG` naming the variable, at the first collective call. The variables are read
//! once per process; the tools interface may then change the choice (`Forced::replace`, the
//! `MPI_T` control variables of the same names), applied from the next collective call.
//!
//! Owns the choice; the algorithms are in `algo`.

use crate::error::{Error, Result};
use arc_swap::ArcSwap;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// Broadcasts of at least this many bytes use scatter + ring allgather (MPICH switches at
/// 12 KiB–512 KiB depending on n; measured here, the binomial tree's log2 n full copies start
/// losing around this size on shm).
pub const BCAST_LARGE: usize = 128 << 10;
/// Allreduces of at least this many bytes use Rabenseifner's algorithm (MPICH's threshold).
pub const ALLREDUCE_LARGE: usize = 2 << 10;
/// Reduce-scatters of at least this many bytes in all go pairwise (MPICH's threshold for
/// commutative operations).
pub const REDUCE_SCATTER_LARGE: usize = 512 << 10;
/// Scans of at least this many bytes use the pipelined chain (not measured: recursive doubling
/// moves the whole vector log2 n times and reduces it twice per step).
pub const SCAN_LARGE: usize = 128 << 10;
/// Gathers and scatters with blocks of at least this many bytes go linear: the binomial tree's
/// intermediate copies of whole subtrees cost more than its fewer steps save.
pub const GATHER_LARGE: usize = 16 << 10;
/// Allgathers below this many bytes in all use recursive doubling on powers of two (MPICH's).
pub const ALLGATHER_LONG: usize = 512 << 10;
/// Allgathers below this many bytes in all use Bruck's algorithm on other n (MPICH's).
pub const ALLGATHER_SHORT: usize = 80 << 10;
/// Alltoalls with blocks up to this many bytes use Bruck's algorithm on 8 ranks or more (MPICH's).
pub const ALLTOALL_SHORT: usize = 256;
/// Alltoalls with blocks up to this many bytes post everything at once, larger ones go pairwise
/// (MPICH's).
pub const ALLTOALL_MEDIUM: usize = 32 << 10;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Barrier {
    Dissemination,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bcast {
    Binomial,
    ScatterRing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    Binomial,
    Ordered,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allreduce {
    RecursiveDoubling,
    Rabenseifner,
    ReduceBcast,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceScatter {
    RecursiveHalving,
    Pairwise,
    ReduceScatterv,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scan {
    RecursiveDoubling,
    Linear,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gather {
    Binomial,
    Linear,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allgather {
    RecursiveDoubling,
    Bruck,
    Ring,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allgatherv {
    Ring,
    Linear,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alltoall {
    Bruck,
    Linear,
    Pairwise,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alltoallv {
    Linear,
    Pairwise,
}

/// Algorithms forced by the environment (`None`: choose by size).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Forced {
    /// `Some(false)`: never hierarchical.
    pub hierarchical: Option<bool>,
    pub barrier: Option<Barrier>,
    pub bcast: Option<Bcast>,
    pub reduce: Option<Reduce>,
    pub allreduce: Option<Allreduce>,
    pub reduce_scatter: Option<ReduceScatter>,
    pub scan: Option<Scan>,
    pub gather: Option<Gather>,
    /// The same algorithms as gather, run downwards.
    pub scatter: Option<Gather>,
    pub allgather: Option<Allgather>,
    pub allgatherv: Option<Allgatherv>,
    pub alltoall: Option<Alltoall>,
    pub alltoallv: Option<Alltoallv>,
}

/// The variables, each with its field of [`Forced`] and its values, in the order of the table
/// above (one entry per variable: parsing, naming and setting all read it).
macro_rules! variables {
    ($($var:literal => $field:ident: [$(($name:literal, $value:expr)),* $(,)?]),* $(,)?) => {
        /// Every variable with the values it takes (`MPI_T` lists them as enumerations).
        pub const VARIABLES: &[(&str, &[&str])] = &[$(($var, &[$($name),*])),*];

        impl Forced {
            /// Forces the algorithm `value` names for variable `var` (`None` or `""`: choose by
            /// size again).
            pub fn set(&mut self, var: &str, value: Option<&str>) -> std::result::Result<(), String> {
                let value = value.filter(|v| !v.is_empty());
                match var {
                    $($var => {
                        self.$field = pick($var, value, &[$(($name, $value)),*])?;
                        Ok(())
                    })*
                    _ => Err(format!("{var}: not a collective variable")),
                }
            }

            /// The name of the value forced for `var`: `Some(None)` when none is.
            pub fn get(&self, var: &str) -> Option<Option<&'static str>> {
                match var {
                    $($var => Some(
                        [$(($name, $value)),*].into_iter().find(|(_, v)| Some(*v) == self.$field).map(|(n, _)| n),
                    ),)*
                    _ => None,
                }
            }
        }
    };
}

variables! {
    "MADMPI_COLL_HIERARCHICAL" => hierarchical: [("auto", true), ("off", false)],
    "MADMPI_COLL_BARRIER" => barrier: [("dissemination", Barrier::Dissemination)],
    "MADMPI_COLL_BCAST" => bcast: [("binomial", Bcast::Binomial), ("scatter_ring", Bcast::ScatterRing)],
    "MADMPI_COLL_REDUCE" => reduce: [("binomial", Reduce::Binomial), ("ordered", Reduce::Ordered)],
    "MADMPI_COLL_ALLREDUCE" => allreduce: [
        ("recursive_doubling", Allreduce::RecursiveDoubling),
        ("rabenseifner", Allreduce::Rabenseifner),
        ("reduce_bcast", Allreduce::ReduceBcast),
    ],
    "MADMPI_COLL_REDUCE_SCATTER" => reduce_scatter: [
        ("recursive_halving", ReduceScatter::RecursiveHalving),
        ("pairwise", ReduceScatter::Pairwise),
        ("reduce_scatterv", ReduceScatter::ReduceScatterv),
    ],
    "MADMPI_COLL_SCAN" => scan: [("recursive_doubling", Scan::RecursiveDoubling), ("linear", Scan::Linear)],
    "MADMPI_COLL_GATHER" => gather: [("binomial", Gather::Binomial), ("linear", Gather::Linear)],
    "MADMPI_COLL_SCATTER" => scatter: [("binomial", Gather::Binomial), ("linear", Gather::Linear)],
    "MADMPI_COLL_ALLGATHER" => allgather: [
        ("recursive_doubling", Allgather::RecursiveDoubling),
        ("bruck", Allgather::Bruck),
        ("ring", Allgather::Ring),
    ],
    "MADMPI_COLL_ALLGATHERV" => allgatherv: [("ring", Allgatherv::Ring), ("linear", Allgatherv::Linear)],
    "MADMPI_COLL_ALLTOALL" => alltoall: [
        ("bruck", Alltoall::Bruck),
        ("linear", Alltoall::Linear),
        ("pairwise", Alltoall::Pairwise),
    ],
    "MADMPI_COLL_ALLTOALLV" => alltoallv: [("linear", Alltoallv::Linear), ("pairwise", Alltoallv::Pairwise)],
}

fn pick<T: Copy>(
    var: &str,
    value: Option<&str>,
    names: &[(&str, T)],
) -> std::result::Result<Option<T>, String> {
    let Some(v) = value else { return Ok(None) };
    match names.iter().find(|(n, _)| *n == v) {
        Some((_, t)) => Ok(Some(*t)),
        None => {
            let known: Vec<&str> = names.iter().map(|(n, _)| *n).collect();
            Err(format!("{var}={v:?}: unknown algorithm (known: {})", known.join(", ")))
        }
    }
}

/// The choice in force: the environment's, read at the first collective call, then whatever
/// the tools interface set (`MPI_T_cvar_write`).
static IN_FORCE: LazyLock<ArcSwap<std::result::Result<Forced, String>>> =
    LazyLock::new(|| ArcSwap::from_pointee(Forced::parse(|k| std::env::var(k).ok())));

/// [`Forced::nothing_forced`]'s answer: not known (at first, and after a `replace`), yes, no.
static NOTHING_FORCED: AtomicU8 = AtomicU8::new(0);

/// `MADMPI_COLL_TRACE`: unread, off, on.
static TRACE: AtomicU8 = AtomicU8::new(0);

/// Whether every collective call prints its choice on stderr (`MADMPI_COLL_TRACE`, read once,
/// then [`set_tracing`]).
pub fn tracing() -> bool {
    match TRACE.load(Relaxed) {
        0 => {
            let on = std::env::var("MADMPI_COLL_TRACE").is_ok_and(|v| !v.is_empty() && v != "0");
            // A concurrent `set_tracing` wins over the environment.
            let _ = TRACE.compare_exchange(0, 1 + u8::from(on), Relaxed, Relaxed);
            TRACE.load(Relaxed) == 2
        }
        v => v == 2,
    }
}

/// Turns the trace on or off from the next collective call.
pub fn set_tracing(on: bool) {
    TRACE.store(1 + u8::from(on), Relaxed);
}

impl Forced {
    /// From variables looked up with `get`.
    pub fn parse(get: impl Fn(&str) -> Option<String>) -> std::result::Result<Forced, String> {
        let mut f = Forced::default();
        for (var, _) in VARIABLES {
            f.set(var, get(var).as_deref())?;
        }
        Ok(f)
    }

    /// The choice in force (read at every collective call: a change applies to the next call).
    pub fn from_env() -> Result<Forced> {
        (**IN_FORCE.load()).clone().map_err(Error::arg)
    }

    /// `f` of the choice in force, without copying it (`None`: the environment holds an
    /// error, which [`Forced::from_env`] reports).
    pub(crate) fn peek<R>(f: impl FnOnce(&Forced) -> R) -> Option<R> {
        IN_FORCE.load().as_ref().as_ref().ok().map(f)
    }

    /// Replaces the choice in force. Every rank must make the same change between the same
    /// collective calls: ranks running different algorithms would not match each other.
    pub fn replace(f: Forced) {
        IN_FORCE.store(std::sync::Arc::new(Ok(f)));
        NOTHING_FORCED.store(0, Relaxed);
    }

    /// Whether no algorithm is forced (and the environment read well): what the hot paths ask
    /// first, one load instead of [`Forced::peek`]'s.
    pub(crate) fn nothing_forced() -> bool {
        match NOTHING_FORCED.load(Relaxed) {
            1 => true,
            2 => false,
            _ => {
                let none = Forced::peek(|f| *f == Forced::default()) == Some(true);
                NOTHING_FORCED.store(if none { 1 } else { 2 }, Relaxed);
                none
            }
        }
    }
}

pub(crate) fn bcast(forced: Option<Bcast>, n: u32, bytes: usize) -> Bcast {
    forced.unwrap_or(if n >= 3 && bytes >= BCAST_LARGE { Bcast::ScatterRing } else { Bcast::Binomial })
}

pub(crate) fn reduce(forced: Option<Reduce>, commutative: bool) -> Reduce {
    match forced {
        Some(Reduce::Binomial) if commutative => Reduce::Binomial,
        Some(Reduce::Ordered) => Reduce::Ordered,
        _ if commutative => Reduce::Binomial,
        _ => Reduce::Ordered,
    }
}

pub(crate) fn allreduce(
    forced: Option<Allreduce>,
    n: u32,
    count: usize,
    bytes: usize,
    commutative: bool,
) -> Allreduce {
    let rab_ok = commutative && count >= crate::coll::schedule::pof2_below(n.max(1)) as usize;
    match forced {
        Some(Allreduce::Rabenseifner) if rab_ok => Allreduce::Rabenseifner,
        Some(Allreduce::Rabenseifner) => Allreduce::RecursiveDoubling,
        Some(a) => a,
        None if rab_ok && bytes >= ALLREDUCE_LARGE => Allreduce::Rabenseifner,
        None => Allreduce::RecursiveDoubling,
    }
}

/// Gather and scatter, by block size.
pub(crate) fn gather(forced: Option<Gather>, block: usize) -> Gather {
    forced.unwrap_or(if block >= GATHER_LARGE { Gather::Linear } else { Gather::Binomial })
}

/// Allgather, by total size (`total` = n blocks).
pub(crate) fn allgather(forced: Option<Allgather>, n: u32, total: usize) -> Allgather {
    match forced {
        Some(Allgather::RecursiveDoubling) if !n.is_power_of_two() => allgather(None, n, total),
        Some(a) => a,
        None if total < ALLGATHER_LONG && n.is_power_of_two() => Allgather::RecursiveDoubling,
        None if total < ALLGATHER_SHORT => Allgather::Bruck,
        None => Allgather::Ring,
    }
}

pub(crate) fn allgatherv(forced: Option<Allgatherv>) -> Allgatherv {
    forced.unwrap_or(Allgatherv::Ring)
}

/// Alltoall, by block size.
pub(crate) fn alltoall(forced: Option<Alltoall>, n: u32, block: usize) -> Alltoall {
    forced.unwrap_or(if n >= 8 && block <= ALLTOALL_SHORT {
        Alltoall::Bruck
    } else if block <= ALLTOALL_MEDIUM {
        Alltoall::Linear
    } else {
        Alltoall::Pairwise
    })
}

/// Alltoallv, by this rank's largest block (send or receive).
pub(crate) fn alltoallv(forced: Option<Alltoallv>, largest: usize) -> Alltoallv {
    forced.unwrap_or(if largest <= ALLTOALL_MEDIUM { Alltoallv::Linear } else { Alltoallv::Pairwise })
}

pub(crate) fn reduce_scatter(
    forced: Option<ReduceScatter>,
    bytes: usize,
    commutative: bool,
) -> ReduceScatter {
    match forced {
        Some(ReduceScatter::RecursiveHalving) if !commutative => reduce_scatter(None, bytes, false),
        Some(a) => a,
        None if bytes >= REDUCE_SCATTER_LARGE => ReduceScatter::Pairwise,
        None if commutative => ReduceScatter::RecursiveHalving,
        None => ReduceScatter::ReduceScatterv,
    }
}

pub(crate) fn scan(forced: Option<Scan>, n: u32, bytes: usize) -> Scan {
    forced.unwrap_or(if n >= 3 && bytes >= SCAN_LARGE { Scan::Linear } else { Scan::RecursiveDoubling })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_values_and_defaults() {
        let f =
            Forced::parse(|k| (k == "MADMPI_COLL_ALLREDUCE").then(|| "rabenseifner".to_string())).unwrap();
        assert_eq!(f, Forced { allreduce: Some(Allreduce::Rabenseifner), ..Forced::default() });
        let e = Forced::parse(|k| (k == "MADMPI_COLL_BCAST").then(|| "tree".to_string())).unwrap_err();
        assert!(e.contains("MADMPI_COLL_BCAST") && e.contains("scatter_ring"), "{e}");
        assert_eq!(bcast(None, 8, 1 << 20), Bcast::ScatterRing);
        assert_eq!(bcast(None, 2, 1 << 20), Bcast::Binomial);
        assert_eq!(reduce(Some(Reduce::Binomial), false), Reduce::Ordered, "never wrong results");
        assert_eq!(allreduce(None, 5, 1000, 8000, true), Allreduce::Rabenseifner);
        assert_eq!(allreduce(None, 5, 1000, 8000, false), Allreduce::RecursiveDoubling);
        assert_eq!(allreduce(Some(Allreduce::Rabenseifner), 8, 3, 12, true), Allreduce::RecursiveDoubling);
        assert_eq!(
            allgather(Some(Allgather::RecursiveDoubling), 6, 8),
            Allgather::Bruck,
            "never wrong results"
        );
        assert_eq!(allgather(None, 8, 1 << 20), Allgather::Ring);
        assert_eq!(alltoall(None, 8, 8), Alltoall::Bruck);
        assert_eq!(alltoall(None, 4, 1 << 20), Alltoall::Pairwise);
        let mut f = Forced::parse(|k| (k == "MADMPI_COLL_ALLTOALL").then(|| "pairwise".to_string())).unwrap();
        assert_eq!(f.alltoall, Some(Alltoall::Pairwise));
        assert_eq!(f.get("MADMPI_COLL_ALLTOALL"), Some(Some("pairwise")));
        assert_eq!(f.get("MADMPI_COLL_BCAST"), Some(None));
        f.set("MADMPI_COLL_BCAST", Some("scatter_ring")).unwrap();
        assert_eq!(f.bcast, Some(Bcast::ScatterRing));
        assert!(f.set("MADMPI_COLL_BCAST", Some("tree")).is_err());
        assert!(f.get("MADMPI_COLL_NOPE").is_none());
        assert_eq!(VARIABLES.len(), 13);
    }
}
