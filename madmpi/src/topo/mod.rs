//! Process topologies (MPI 4.0 ch. 8): Cartesian grids ([`Cart`]), graphs ([`Graph`]) and
//! distributed graphs ([`DistGraph`]) attached to communicators, and the neighbour lists the
//! neighbourhood collectives run over.
//!
//! A topology is immutable once made: creating one (`Comm::cart_create`, `cart_sub`,
//! `graph_create`, `dist_graph_create(_adjacent)`) makes a new communicator (identity order:
//! `reorder` is allowed to change nothing) and attaches the topology to it, in the
//! communicator's extensions (`Comm::topology`); `Comm::dup` shares it. The calls that query a communicator's topology
//! fail with `MPI_ERR_TOPOLOGY` when it has none or another kind.
//!
//! # Neighbour order and message pairing
//!
//! A rank's sources and destinations ([`Topology::links`]) are, as MPI 4.0 §8.6 defines:
//! Cartesian, for each dimension the −1 then the +1 neighbour (`MPI_PROC_NULL` at the edge of a
//! non-periodic dimension: such a neighbour takes part as a no-op, its receive block left
//! untouched); graph, the adjacency list (sources and destinations alike); distributed graph,
//! the edges as given (`_adjacent`) or as exchanged (in stating-rank order, then statement order).
//! Each message carries a *step* that pairs its two ends even when one rank is a neighbour
//! several times: in a Cartesian grid the block sent in direction ±1 of dimension d arrives in
//! the receiver's slot of direction ∓1 of d (MPI 4.0's rule, which matters for periodic
//! dimensions of size 1 and 2); in (distributed) graphs the k-th edge from a to b is paired
//! with b's k-th source entry a.
//!
//! # Files
//! - `cart`: grids, `MPI_Dims_create`, coordinates, shifts, sub-grids;
//! - `graph`: graph topologies (`MPI_Graph_*`);
//! - `dist_graph`: distributed graphs and their edge exchange;
//! - `neighbor`: a communicator's neighbour lists, which `coll::neighbor` exchanges over.
//!
//! Owns the topology descriptions and their creation; it runs the neighbourhood collectives
//! through the collective layer (`coll`) and must not post messages itself (the edge exchange
//! of `MPI_Dist_graph_create` is a collective of `coll`).

mod cart;
mod dist_graph;
mod graph;
mod neighbor;

pub use cart::{Cart, dims_create};
pub use dist_graph::{DistGraph, Edge};
pub use graph::Graph;

use crate::coll::neighbor::{Link, Links};
use crate::comm::{Comm, Extension};
use std::sync::Arc;

/// A duplicate shares its parent's topology.
impl Extension for Arc<Topology> {
    fn dup(&self) -> Option<Self> {
        Some(self.clone())
    }
}

impl Comm {
    /// The process topology attached to this communicator, if any.
    pub fn topology(&self) -> Option<&Arc<Topology>> {
        self.extensions().get()
    }

    /// Attaches `t` to a communicator just made (the first topology attached stays).
    pub(crate) fn attach_topology(&self, t: Arc<Topology>) {
        self.extensions().insert(t);
    }
}

/// A topology attached to a communicator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Topology {
    Cart(Cart),
    Graph(Graph),
    DistGraph(DistGraph),
}

impl Topology {
    /// This rank's sources and destinations with their pairing steps (module docs).
    pub fn links(&self, me: u32) -> Links {
        match self {
            Topology::Cart(c) => c.links(me),
            Topology::Graph(g) => {
                let n = g.neighbors(me).unwrap_or(&[]).to_vec();
                Links { sources: by_occurrence(&n), dests: by_occurrence(&n) }
            }
            Topology::DistGraph(d) => {
                let s: Vec<u32> = d.sources.iter().map(|e| e.rank).collect();
                let t: Vec<u32> = d.dests.iter().map(|e| e.rank).collect();
                Links { sources: by_occurrence(&s), dests: by_occurrence(&t) }
            }
        }
    }
}

/// Links to `peers`, the k-th occurrence of a peer with step k.
fn by_occurrence(peers: &[u32]) -> Vec<Link> {
    let mut seen = std::collections::HashMap::new();
    peers
        .iter()
        .map(|&p| {
            let k = seen.entry(p).or_insert(0u32);
            *k += 1;
            Link { peer: Some(p), step: *k - 1 }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_peers_are_paired_by_occurrence() {
        let l = by_occurrence(&[3, 1, 3, 3, 1]);
        let steps: Vec<u32> = l.iter().map(|l| l.step).collect();
        assert_eq!(steps, [0, 0, 1, 2, 1]);
        assert!(l.iter().all(|l| l.peer.is_some()));
    }
}
