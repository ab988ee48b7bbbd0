//! Graph and distributed-graph topologies: `MPI_Graph_create`, `_get`, `_map`, `_neighbors`,
//! `_neighbors_count`, `MPI_Graphdims_get`, `MPI_Dist_graph_create`, `_create_adjacent`,
//! `_neighbors`, `_neighbors_count`, and the data objects `MPI_UNWEIGHTED` and
//! `MPI_WEIGHTS_EMPTY`.
//!
//! The two weight sentinels are what MPICH 4.0 exports: 8-byte initialised data objects, each
//! an `int *const` pointing to a distinct `int` (programs compare addresses, never read it).
//! `MPI_UNWEIGHTED` (for both weight arrays, at every rank) makes the graph unweighted;
//! `MPI_WEIGHTS_EMPTY` stands for a weight array of no edge (`MPI_ERR_ARG` with edges).
//!
//! Checks in parameter order, with MPICH 4.0's classes: negative lengths and bad index or edge
//! entries `MPI_ERR_ARG`, a node outside the graph `MPI_ERR_RANK`, the wrong topology
//! `MPI_ERR_TOPOLOGY`. `MPI_Graph_neighbors` and `MPI_Dist_graph_neighbors` write only the
//! first `max…` entries, as MPI 4.0 says. Deviations, where MPICH 4.0.2 runs what the
//! standard calls erroneous: a negative `nnodes` or degree, and a rank outside the
//! communicator in a distributed graph, are `MPI_ERR_ARG` here (MPICH accepts them).
//!
//! Owns the C signatures, the order of the checks and the sentinels.

use super::comm_create::publish;
use super::topo::{ints, length, write_ints};
use crate::check;
use crate::comms::CommObj;
use crate::errors::{Fail, On};
use crate::export::export;
use crate::state::state;
use madmpi::abi;
use madmpi::error::Error;
use madmpi::topo::{DistGraph, Edge, Graph};
use std::ffi::c_int;
use std::sync::Arc;

/// The C type of the sentinels: `int *const`.
#[repr(transparent)]
pub struct WeightsSentinel(*const c_int);

// SAFETY: the pointer is never written and never read through: programs and this library only
// compare it with the weight arrays they are given.
unsafe impl Sync for WeightsSentinel {}

// Distinct values, so that the two targets can never be merged into one address.
static UNWEIGHTED_TARGET: c_int = 1;
static WEIGHTS_EMPTY_TARGET: c_int = 2;

/// `MPI_UNWEIGHTED`.
#[unsafe(no_mangle)]
pub static MPI_UNWEIGHTED: WeightsSentinel = WeightsSentinel(&raw const UNWEIGHTED_TARGET);

/// `MPI_WEIGHTS_EMPTY`.
#[unsafe(no_mangle)]
pub static MPI_WEIGHTS_EMPTY: WeightsSentinel = WeightsSentinel(&raw const WEIGHTS_EMPTY_TARGET);

fn is_unweighted(p: *const c_int) -> bool {
    std::ptr::eq(p, MPI_UNWEIGHTED.0)
}

/// The `n` weights at `p`: `None` for `MPI_UNWEIGHTED`; `MPI_WEIGHTS_EMPTY` (or anything, as
/// MPI allows) for `n` = 0.
///
/// # Safety
/// Other than the sentinels, a non-null, aligned `p` holds `n` readable ints.
unsafe fn weights(
    c: &Arc<CommObj>,
    p: *const c_int,
    n: usize,
    what: &str,
) -> Result<Option<Vec<c_int>>, Fail> {
    if is_unweighted(p) {
        return Ok(None);
    }
    if n > 0 && std::ptr::eq(p, MPI_WEIGHTS_EMPTY.0) {
        return Err(Error::arg(format!("MPI_WEIGHTS_EMPTY as {what} of {n} edges"))).on(c);
    }
    // SAFETY: the caller's contract.
    unsafe { ints(c, p, n, what) }.map(Some)
}

/// The graph of `nnodes` nodes described by `index` and `edges`.
///
/// # Safety
/// Non-null, aligned `index` holds `nnodes` ints, `edges` `index[nnodes - 1]`.
unsafe fn graph(
    c: &Arc<CommObj>,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
) -> Result<Graph, Fail> {
    let n = length(c, nnodes, "nnodes")?;
    // SAFETY: the caller's contract.
    let idx = unsafe { ints(c, index, n, "the index array") }?;
    let ne = length(c, idx.last().copied().unwrap_or(0), "the last index entry")?;
    // SAFETY: the caller's contract.
    let e = unsafe { ints(c, edges, ne, "the edges array") }?;
    Graph::new(&idx, &e).on(c)
}

/// A node of the communicator's graph (`MPI_ERR_RANK` for a negative one).
fn node(c: &Arc<CommObj>, rank: c_int) -> Result<u32, Fail> {
    u32::try_from(rank).map_err(|_| Error::rank(format!("invalid rank {rank}"))).on(c)
}

/// Ends of edges as `Edge`s (`weights` `None`: unweighted, weight 1).
fn edges(ranks: &[c_int], weights: Option<&[c_int]>) -> Vec<Edge> {
    ranks
        .iter()
        .enumerate()
        .map(|(i, &r)| Edge { rank: r as u32, weight: weights.map_or(1, |w| w[i]) })
        .collect()
}

/// `ranks` as communicator ranks (`MPI_ERR_ARG` for a negative one; the upper bound is
/// madmpi's check).
fn non_negative(c: &Arc<CommObj>, ranks: &[c_int], what: &str) -> Result<(), Fail> {
    match ranks.iter().find(|&&r| r < 0) {
        Some(r) => Err(Error::arg(format!("{what} {r} is not a rank"))).on(c),
        None => Ok(()),
    }
}

export! {
    /// `MPI_Graph_create`: no reordering; the ranks beyond the graph get `MPI_COMM_NULL`.
    fn MPI_Graph_create / PMPI_Graph_create(
        comm_old: abi::Comm,
        nnodes: c_int,
        index: *const c_int,
        edges: *const c_int,
        _reorder: c_int,
        comm_graph: *mut abi::Comm,
    ) {
        let st = state()?;
        let c = st.comm(comm_old)?;
        // SAFETY: the arrays as MPI describes them (MPI's contract).
        let g = unsafe { graph(&c, nnodes, index, edges) }?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(comm_graph, "comm_graph") }.on(&c)?;
        *out = abi::MPI_COMM_NULL;
        let new = c.comm.graph_create(g).on(&c)?;
        publish(&st, &c, new, out)
    }

    /// `MPI_Graph_get`: `MPI_ERR_ARG` if `maxindex` or `maxedges` is too small.
    fn MPI_Graph_get / PMPI_Graph_get(
        comm: abi::Comm,
        maxindex: c_int,
        maxedges: c_int,
        index: *mut c_int,
        edges: *mut c_int,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        let g = c.comm.graph().on(&c)?;
        let (mi, me) = (length(&c, maxindex, "maxindex")?, length(&c, maxedges, "maxedges")?);
        if mi < g.index().len() || me < g.edges().len() {
            return Err(Error::arg(format!(
                "room for {mi} index entries and {me} edges; the graph has {} and {}",
                g.index().len(),
                g.edges().len()
            )))
            .on(&c);
        }
        // SAFETY: the arrays have room for `maxindex` and `maxedges` ints (MPI's contract).
        unsafe {
            write_ints(&c, index, g.index().iter().map(|&x| x as c_int), "the index array")?;
            write_ints(&c, edges, g.edges().iter().map(|&x| x as c_int), "the edges array")
        }
    }

    /// `MPI_Graph_map`: the rank this process would have (identity), or `MPI_UNDEFINED`.
    fn MPI_Graph_map / PMPI_Graph_map(
        comm: abi::Comm,
        nnodes: c_int,
        index: *const c_int,
        edges: *const c_int,
        newrank: *mut c_int,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        // SAFETY: the arrays as MPI describes them (MPI's contract).
        let g = unsafe { graph(&c, nnodes, index, edges) }?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(newrank, "newrank") }.on(&c)?;
        *out = g.map(c.comm.size(), c.comm.rank()).on(&c)?.map_or(abi::MPI_UNDEFINED, |r| r as c_int);
        Ok(())
    }

    /// `MPI_Graph_neighbors`: the first `maxneighbors` neighbours of `rank`.
    fn MPI_Graph_neighbors / PMPI_Graph_neighbors(
        comm: abi::Comm,
        rank: c_int,
        maxneighbors: c_int,
        neighbors: *mut c_int,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        let g = c.comm.graph().on(&c)?;
        let n = g.neighbors(node(&c, rank)?).on(&c)?;
        let max = length(&c, maxneighbors, "maxneighbors")?;
        // SAFETY: `neighbors` has room for `maxneighbors` ints (MPI's contract).
        unsafe { write_ints(&c, neighbors, n.iter().take(max).map(|&x| x as c_int), "the neighbors array") }
    }

    /// `MPI_Graph_neighbors_count`.
    fn MPI_Graph_neighbors_count / PMPI_Graph_neighbors_count(comm: abi::Comm, rank: c_int, nneighbors: *mut c_int) {
        let st = state()?;
        let c = st.comm(comm)?;
        let g = c.comm.graph().on(&c)?;
        let n = g.neighbors(node(&c, rank)?).on(&c)?.len();
        // SAFETY: an output argument.
        *unsafe { check::out(nneighbors, "nneighbors") }.on(&c)? = n as c_int;
        Ok(())
    }

    /// `MPI_Graphdims_get`: the numbers of nodes and edges.
    fn MPI_Graphdims_get / PMPI_Graphdims_get(comm: abi::Comm, nnodes: *mut c_int, nedges: *mut c_int) {
        let st = state()?;
        let c = st.comm(comm)?;
        let g = c.comm.graph().on(&c)?;
        // SAFETY: output arguments.
        let (a, b) = unsafe { (check::out(nnodes, "nnodes"), check::out(nedges, "nedges")) };
        *a.on(&c)? = g.nnodes() as c_int;
        *b.on(&c)? = g.edges().len() as c_int;
        Ok(())
    }

    /// `MPI_Dist_graph_create_adjacent`: a duplicate of `comm_old` (no reordering) where this
    /// rank has the given in- and out-edges. `info` carries no hint we use.
    fn MPI_Dist_graph_create_adjacent / PMPI_Dist_graph_create_adjacent(
        comm_old: abi::Comm,
        indegree: c_int,
        sources: *const c_int,
        sourceweights: *const c_int,
        outdegree: c_int,
        destinations: *const c_int,
        destweights: *const c_int,
        _info: abi::Info,
        _reorder: c_int,
        comm_dist_graph: *mut abi::Comm,
    ) {
        let st = state()?;
        let c = st.comm(comm_old)?;
        let nin = length(&c, indegree, "indegree")?;
        // SAFETY: the arrays hold `indegree` ints, or are sentinels (MPI's contract).
        let (src, sw) = unsafe { (ints(&c, sources, nin, "sources")?, weights(&c, sourceweights, nin, "sourceweights")?) };
        let nout = length(&c, outdegree, "outdegree")?;
        // SAFETY: the arrays hold `outdegree` ints, or are sentinels (MPI's contract).
        let (dst, dw) =
            unsafe { (ints(&c, destinations, nout, "destinations")?, weights(&c, destweights, nout, "destweights")?) };
        non_negative(&c, &src, "source")?;
        non_negative(&c, &dst, "destination")?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(comm_dist_graph, "comm_dist_graph") }.on(&c)?;
        *out = abi::MPI_COMM_NULL;
        let weighted = !is_unweighted(sourceweights) && !is_unweighted(destweights);
        let g = DistGraph {
            sources: edges(&src, sw.as_deref().filter(|_| weighted)),
            dests: edges(&dst, dw.as_deref().filter(|_| weighted)),
            weighted,
        };
        let new = c.comm.dist_graph_create_adjacent(g).on(&c)?;
        publish(&st, &c, Some(new), out)
    }

    /// `MPI_Dist_graph_create`: every rank states any edges (`n` sources, `degrees[i]`
    /// destinations each); they are exchanged so that each rank learns its own.
    fn MPI_Dist_graph_create / PMPI_Dist_graph_create(
        comm_old: abi::Comm,
        n: c_int,
        sources: *const c_int,
        degrees: *const c_int,
        destinations: *const c_int,
        weights_arg: *const c_int,
        _info: abi::Info,
        _reorder: c_int,
        comm_dist_graph: *mut abi::Comm,
    ) {
        let st = state()?;
        let c = st.comm(comm_old)?;
        let n = length(&c, n, "n")?;
        // SAFETY: the arrays hold `n` ints (MPI's contract).
        let (src, deg) = unsafe { (ints(&c, sources, n, "sources")?, ints(&c, degrees, n, "degrees")?) };
        let mut total = 0usize;
        for &d in &deg {
            total = total.checked_add(length(&c, d, "a degree")?).ok_or_else(|| Error::arg("too many edges")).on(&c)?;
        }
        // SAFETY: the arrays hold Σ degrees ints, or are sentinels (MPI's contract).
        let (dst, w) = unsafe { (ints(&c, destinations, total, "destinations")?, weights(&c, weights_arg, total, "weights")?) };
        non_negative(&c, &src, "source")?;
        non_negative(&c, &dst, "destination")?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(comm_dist_graph, "comm_dist_graph") }.on(&c)?;
        *out = abi::MPI_COMM_NULL;
        let mut stated = Vec::with_capacity(total);
        let mut k = 0;
        for (&s, &d) in src.iter().zip(&deg) {
            for _ in 0..d {
                stated.push((s as u32, dst[k] as u32, w.as_ref().map_or(1, |w| w[k])));
                k += 1;
            }
        }
        let new = c.comm.dist_graph_create(&stated, w.is_some()).on(&c)?;
        publish(&st, &c, Some(new), out)
    }

    /// `MPI_Dist_graph_neighbors`: the first `maxindegree` sources and `maxoutdegree`
    /// destinations, with their weights if the graph is weighted and the arrays are not
    /// `MPI_UNWEIGHTED`.
    fn MPI_Dist_graph_neighbors / PMPI_Dist_graph_neighbors(
        comm: abi::Comm,
        maxindegree: c_int,
        sources: *mut c_int,
        sourceweights: *mut c_int,
        maxoutdegree: c_int,
        destinations: *mut c_int,
        destweights: *mut c_int,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        let g = c.comm.dist_graph().on(&c)?;
        let mi = length(&c, maxindegree, "maxindegree")?;
        let mo = length(&c, maxoutdegree, "maxoutdegree")?;
        let (si, so) = (&g.sources[..mi.min(g.sources.len())], &g.dests[..mo.min(g.dests.len())]);
        // SAFETY: each array has room for its `max…degree` ints (MPI's contract).
        unsafe {
            write_ints(&c, sources, si.iter().map(|e| e.rank as c_int), "sources")?;
            write_ints(&c, destinations, so.iter().map(|e| e.rank as c_int), "destinations")?;
            if g.weighted && !is_unweighted(sourceweights) {
                write_ints(&c, sourceweights, si.iter().map(|e| e.weight), "sourceweights")?;
            }
            if g.weighted && !is_unweighted(destweights) {
                write_ints(&c, destweights, so.iter().map(|e| e.weight), "destweights")?;
            }
        }
        Ok(())
    }

    /// `MPI_Dist_graph_neighbors_count`: the degrees, and whether the graph is weighted.
    fn MPI_Dist_graph_neighbors_count / PMPI_Dist_graph_neighbors_count(
        comm: abi::Comm,
        indegree: *mut c_int,
        outdegree: *mut c_int,
        weighted: *mut c_int,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        let g = c.comm.dist_graph().on(&c)?;
        // SAFETY: output arguments.
        let (i, o, w) =
            unsafe { (check::out(indegree, "indegree"), check::out(outdegree, "outdegree"), check::out(weighted, "weighted")) };
        *i.on(&c)? = g.sources.len() as c_int;
        *o.on(&c)? = g.dests.len() as c_int;
        *w.on(&c)? = c_int::from(g.weighted);
        Ok(())
    }
}
