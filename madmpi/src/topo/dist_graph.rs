//! Distributed graphs (`MPI_Dist_graph_create`, `_adjacent`): each rank knows its own in- and
//! out-edges with their weights.
//!
//! `MPI_Dist_graph_create` lets any rank state any edge: the stated edges are exchanged with
//! two allgathers on the old communicator (how many, then the edges themselves), and each rank
//! keeps those that end (sources) or start (destinations) at itself, in stating-rank order then
//! statement order. Weights travel with their edges; an unweighted statement gives weight 1.
//!
//! Owns the description and the creation of distributed-graph communicators (a duplicate of
//! the old one: no reordering).

use super::Topology;
use crate::comm::Comm;
use crate::error::{Error, Result};
use std::sync::Arc;

/// One end of an edge seen from a rank: the rank at the other end, and the edge's weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    pub rank: u32,
    pub weight: i32,
}

/// A rank's part of a distributed graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DistGraph {
    /// In-edges, in the order `MPI_Dist_graph_neighbors` gives them.
    pub sources: Vec<Edge>,
    /// Out-edges.
    pub dests: Vec<Edge>,
    /// Whether weights were given at creation (not `MPI_UNWEIGHTED`).
    pub weighted: bool,
}

fn check_ranks<'a>(comm: &Comm, what: &str, ranks: impl IntoIterator<Item = &'a u32>) -> Result<()> {
    match ranks.into_iter().find(|&&r| r >= comm.size()) {
        Some(r) => {
            Err(Error::arg(format!("{what} {r} is not a rank of the communicator (size {})", comm.size())))
        }
        None => Ok(()),
    }
}

impl Comm {
    /// `MPI_Dist_graph_create_adjacent` (collective): a duplicate of this communicator where this
    /// rank has the given in- and out-edges. `MPI_ERR_ARG` for a rank outside the communicator.
    pub fn dist_graph_create_adjacent(&self, graph: DistGraph) -> Result<Comm> {
        check_ranks(self, "source", graph.sources.iter().map(|e| &e.rank))?;
        check_ranks(self, "destination", graph.dests.iter().map(|e| &e.rank))?;
        let c = self.dup_fresh()?;
        c.attach_topology(Arc::new(Topology::DistGraph(graph)));
        Ok(c)
    }

    /// `MPI_Dist_graph_create` (collective): a duplicate of this communicator whose edges are
    /// those every rank stated (`(source, destination, weight)`, each of the ranks at either
    /// end may state it, or any other rank). `MPI_ERR_ARG` for a rank outside the communicator.
    pub fn dist_graph_create(&self, edges: &[(u32, u32, i32)], weighted: bool) -> Result<Comm> {
        check_ranks(self, "source", edges.iter().map(|e| &e.0))?;
        check_ranks(self, "destination", edges.iter().map(|e| &e.1))?;
        let n = self.size() as usize;
        let mut counts = vec![0u64; n];
        self.allgather(&[edges.len() as u64], &mut counts)?;
        let counts: Vec<usize> = counts.iter().map(|&c| 3 * c as usize).collect();
        let displs: Vec<usize> =
            counts.iter().scan(0, |at, &c| Some(std::mem::replace(at, *at + c))).collect();
        let mine: Vec<i32> = edges.iter().flat_map(|&(s, d, w)| [s as i32, d as i32, w]).collect();
        let mut all = vec![0i32; counts.iter().sum()];
        self.allgatherv(&mine, &mut all, &counts, &displs)?;
        let me = self.rank() as i32;
        let (mut sources, mut dests) = (Vec::new(), Vec::new());
        for e in all.chunks_exact(3) {
            if e[1] == me {
                sources.push(Edge { rank: e[0] as u32, weight: e[2] });
            }
            if e[0] == me {
                dests.push(Edge { rank: e[1] as u32, weight: e[2] });
            }
        }
        let c = self.dup_fresh()?;
        c.attach_topology(Arc::new(Topology::DistGraph(DistGraph { sources, dests, weighted })));
        Ok(c)
    }

    /// The distributed graph of this communicator (`MPI_ERR_TOPOLOGY` if it has none).
    pub fn dist_graph(&self) -> Result<&DistGraph> {
        match self.topology().map(|t| &**t) {
            Some(Topology::DistGraph(g)) => Ok(g),
            _ => Err(Error::topology("the communicator has no distributed graph topology")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::on_all;

    #[test]
    fn stated_edges_reach_both_ends() {
        // Rank 0 states a ring 0 → 1 → 2 → 0 (weight 10 × source); rank 2 adds 2 → 1 twice.
        let got = on_all(3, |world| {
            let edges: Vec<(u32, u32, i32)> = match world.rank() {
                0 => (0..3).map(|r| (r, (r + 1) % 3, 10 * r as i32)).collect(),
                2 => vec![(2, 1, 7), (2, 1, 8)],
                _ => vec![],
            };
            let c = world.dist_graph_create(&edges, true).unwrap();
            let d = c.dist_graph().unwrap().clone();
            assert_eq!(c.dup().unwrap().dist_graph().unwrap(), &d, "dup keeps the topology");
            assert!(world.dist_graph().is_err());
            // Over a communicator that has a topology already, the new graph replaces it.
            let grid = world.cart_create(crate::topo::Cart::new(&[3], &[true]).unwrap()).unwrap().unwrap();
            let over_grid = grid.dist_graph_create(&edges, true).unwrap();
            assert_eq!(over_grid.dist_graph().unwrap(), &d, "the graph replaces the grid");
            assert!(over_grid.cart().is_err());
            d
        });
        let e = |rank, weight| Edge { rank, weight };
        assert_eq!(got[0].sources, [e(2, 20)]);
        assert_eq!(got[0].dests, [e(1, 0)]);
        assert_eq!(got[1].sources, [e(0, 0), e(2, 7), e(2, 8)]);
        assert_eq!(got[1].dests, [e(2, 10)]);
        assert_eq!(got[2].sources, [e(1, 10)]);
        assert_eq!(got[2].dests, [e(0, 20), e(1, 7), e(1, 8)]);
    }
}
