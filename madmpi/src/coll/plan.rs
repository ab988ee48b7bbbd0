//! A rank's schedule for the collectives that have a hierarchical form (barrier, broadcast,
//! reduce, allreduce): flat (`algo`), or hierarchical (`algo::hier`) when the communicator spans
//! several nodes and at least one node holds several of its ranks, unless
//! `MADMPI_COLL_HIERARCHICAL=off`. Reduce and allreduce go hierarchical for commutative
//! operations only (the phases combine ranks out of rank order). Each phase's flat algorithm
//! is chosen by `choice` for the phase's own rank count.
//!
//! `MADMPI_COLL_TRACE=1` prints every choice made here to stderr, one line per call:
//! `madmpi coll: rank 3/8 ctx 0: allreduce 8 B: hierarchical over 2 nodes (recursive_doubling
//! between leaders)`.
//!
//! Owns the flat-or-hierarchical decision and the trace; the algorithms are in `algo`.

use super::Layout;
use super::algo::{self, hier};
use super::choice::{self, Forced};
use super::schedule::{BufId, Schedule};
use std::sync::Arc;

/// Where a collective runs: the communicator's size, this rank, its context (for the trace)
/// and its node layout if hierarchical algorithms apply.
pub(crate) struct Site {
    pub n: u32,
    pub me: u32,
    pub ctx: u32,
    pub layout: Option<Arc<Layout>>,
}

fn trace(site: &Site, what: &str, bytes: usize, how: impl FnOnce() -> String) {
    if choice::tracing() {
        use std::io::Write;
        let line = format!(
            "madmpi coll: rank {}/{} ctx {}: {what} {bytes} B: {}\n",
            site.me,
            site.n,
            site.ctx,
            how()
        );
        // One write, so that lines of ranks sharing the launcher's stderr do not interleave.
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
}

/// `site`'s layout if the hierarchical form applies.
fn hierarchy<'a>(site: &'a Site, f: &Forced) -> Option<&'a Layout> {
    site.layout.as_deref().filter(|_| f.hierarchical != Some(false))
}

fn hier_name(l: &Layout, between: impl std::fmt::Debug) -> String {
    format!("hierarchical over {} nodes ({between:?} between leaders)", l.nodes())
}

pub(crate) fn barrier(site: &Site, f: &Forced) -> Schedule {
    let a = f.barrier.unwrap_or(choice::Barrier::Dissemination);
    let mut s = Schedule::new();
    match hierarchy(site, f) {
        Some(l) => {
            let between = |n, me, _root, _input| algo::barrier(n, me, a);
            hier::barrier(&mut s, l, site.me, &between);
            trace(site, "barrier", 0, || hier_name(l, a));
        }
        None => {
            s = algo::barrier(site.n, site.me, a);
            trace(site, "barrier", 0, || format!("{a:?}"));
        }
    }
    s
}

/// Broadcast of `len` bytes of `RECV` from `root`.
pub(crate) fn bcast(site: &Site, f: &Forced, root: u32, len: usize) -> Schedule {
    let Some(l) = hierarchy(site, f).filter(|_| len > 0) else {
        let a = choice::bcast(f.bcast, site.n, len);
        trace(site, "bcast", len, || format!("{a:?}"));
        return algo::bcast(site.n, site.me, root, len, a);
    };
    let phase = |n, me, root, _input| algo::bcast(n, me, root, len, choice::bcast(f.bcast, n, len));
    let mut s = Schedule::new();
    hier::bcast(&mut s, l, site.me, root, &phase, &phase);
    trace(site, "bcast", len, || hier_name(l, choice::bcast(f.bcast, l.nodes(), len)));
    s
}

/// Reduce of `count` elements of `elem` bytes from `input` into `RECV` at `root`.
pub(crate) fn reduce(
    site: &Site,
    f: &Forced,
    root: u32,
    input: BufId,
    count: usize,
    elem: usize,
    commutative: bool,
) -> Schedule {
    let a = choice::reduce(f.reduce, commutative);
    let Some(l) = hierarchy(site, f).filter(|_| commutative && count > 0) else {
        trace(site, "reduce", count * elem, || format!("{a:?}"));
        return algo::reduce(site.n, site.me, root, input, count, elem, a);
    };
    let phase = |n, me, root, input| algo::reduce(n, me, root, input, count, elem, a);
    let mut s = Schedule::new();
    hier::reduce(&mut s, l, site.me, root, input, count * elem, &phase);
    trace(site, "reduce", count * elem, || hier_name(l, a));
    s
}

/// Allreduce of `count` elements of `elem` bytes from `input` into `RECV`.
pub(crate) fn allreduce(
    site: &Site,
    f: &Forced,
    input: BufId,
    count: usize,
    elem: usize,
    commutative: bool,
) -> Schedule {
    let bytes = count * elem;
    let flat = |n: u32, me: u32, input: BufId| {
        let a = choice::allreduce(f.allreduce, n, count, bytes, commutative);
        (algo::allreduce(n, me, input, count, elem, a, commutative), a)
    };
    let Some(l) = hierarchy(site, f).filter(|_| commutative && count > 0) else {
        let (s, a) = flat(site.n, site.me, input);
        trace(site, "allreduce", bytes, || format!("{a:?}"));
        return s;
    };
    let a = choice::reduce(f.reduce, true);
    let within_reduce = |n, me, root, input| algo::reduce(n, me, root, input, count, elem, a);
    let between = |n, me, _root, input| flat(n, me, input).0;
    let within_bcast =
        |n, me, root, _input| algo::bcast(n, me, root, bytes, choice::bcast(f.bcast, n, bytes));
    let mut s = Schedule::new();
    hier::allreduce(&mut s, l, site.me, input, &within_reduce, &between, &within_bcast);
    trace(site, "allreduce", bytes, || {
        hier_name(l, choice::allreduce(f.allreduce, l.nodes(), count, bytes, true))
    });
    s
}
