//! Which algorithm runs: chosen by message size, process count and the operation's
//! commutativity, unless an environment variable forces one (for research and tests):
//!
//! | variable | values | default choice |
//! |---|---|---|
//! | `MADMPI_COLL_BARRIER` | `dissemination` | dissemination |
//! | `MADMPI_COLL_BCAST` | `binomial`, `scatter_ring` | `scatter_ring` from [`BCAST_LARGE`] bytes on 3 ranks or more, else `binomial` |
//! | `MADMPI_COLL_REDUCE` | `binomial`, `ordered` | `binomial` for commutative operations, else `ordered` |
//! | `MADMPI_COLL_ALLREDUCE` | `recursive_doubling`, `rabenseifner`, `reduce_bcast` | `rabenseifner` from [`ALLREDUCE_LARGE`] bytes for commutative operations with at least as many elements as the largest power of two ≤ n, else `recursive_doubling` |
//!
//! A forced algorithm that cannot serve a call (`binomial` reduce or `rabenseifner` with a
//! non-commutative operation, `rabenseifner` with fewer elements than that power of two) gives
//! way to the default for that call: forcing must never give wrong results. An unknown value is
//! an `MPI_ERR_ARG` naming the variable, at the first collective call. The variables are read
//! once per process.
//!
//! Owns the choice; the algorithms are in `algo`.

use crate::error::{Error, Result};
use std::sync::OnceLock;

/// Broadcasts of at least this many bytes use scatter + ring allgather (MPICH switches at
/// 12 KiB–512 KiB depending on n; measured here, the binomial tree's log2 n full copies start
/// losing around this size on shm).
pub const BCAST_LARGE: usize = 128 << 10;
/// Allreduces of at least this many bytes use Rabenseifner's algorithm (MPICH's threshold).
pub const ALLREDUCE_LARGE: usize = 2 << 10;

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

/// Algorithms forced by the environment (`None`: choose by size).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Forced {
    pub barrier: Option<Barrier>,
    pub bcast: Option<Bcast>,
    pub reduce: Option<Reduce>,
    pub allreduce: Option<Allreduce>,
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

impl Forced {
    /// From variables looked up with `get`.
    pub fn parse(get: impl Fn(&str) -> Option<String>) -> std::result::Result<Forced, String> {
        let v = |k: &str| get(k).filter(|s| !s.is_empty());
        Ok(Forced {
            barrier: pick(
                "MADMPI_COLL_BARRIER",
                v("MADMPI_COLL_BARRIER").as_deref(),
                &[("dissemination", Barrier::Dissemination)],
            )?,
            bcast: pick(
                "MADMPI_COLL_BCAST",
                v("MADMPI_COLL_BCAST").as_deref(),
                &[("binomial", Bcast::Binomial), ("scatter_ring", Bcast::ScatterRing)],
            )?,
            reduce: pick(
                "MADMPI_COLL_REDUCE",
                v("MADMPI_COLL_REDUCE").as_deref(),
                &[("binomial", Reduce::Binomial), ("ordered", Reduce::Ordered)],
            )?,
            allreduce: pick(
                "MADMPI_COLL_ALLREDUCE",
                v("MADMPI_COLL_ALLREDUCE").as_deref(),
                &[
                    ("recursive_doubling", Allreduce::RecursiveDoubling),
                    ("rabenseifner", Allreduce::Rabenseifner),
                    ("reduce_bcast", Allreduce::ReduceBcast),
                ],
            )?,
        })
    }

    /// The process's environment, read once.
    pub fn from_env() -> Result<Forced> {
        static F: OnceLock<std::result::Result<Forced, String>> = OnceLock::new();
        F.get_or_init(|| Forced::parse(|k| std::env::var(k).ok())).clone().map_err(Error::arg)
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
    }
}
