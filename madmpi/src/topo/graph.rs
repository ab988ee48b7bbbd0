//! Graph topologies (`MPI_Graph_create` and its queries): node i's neighbours are
//! `edges[index[i-1]..index[i]]` (`index` cumulative, as MPI gives it).
//!
//! Owns the graph description, its checks (MPICH 4.0's classes: `MPI_ERR_ARG` for a bad index
//! or edge, `MPI_ERR_RANK` for a node outside the graph) and the creation of graph
//! communicators.

use super::Topology;
use crate::comm::Comm;
use crate::error::{Error, Result};
use std::sync::Arc;

/// A graph of `index.len()` nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Graph {
    index: Vec<u32>,
    edges: Vec<u32>,
}

impl Graph {
    /// The graph of `index` (cumulative neighbour counts, non-decreasing) and `edges` (exactly
    /// `index[last]` of them, each a node): `MPI_ERR_ARG` otherwise. Self-loops and repeated
    /// edges are allowed (MPI 4.0).
    pub fn new(index: &[i32], edges: &[i32]) -> Result<Graph> {
        let mut prev = 0;
        for (i, &x) in index.iter().enumerate() {
            if x < prev {
                return Err(Error::arg(format!("index[{i}] = {x} is below the previous entry or negative")));
            }
            prev = x;
        }
        if edges.len() != prev as usize {
            return Err(Error::arg(format!("{} edges where the index says {prev}", edges.len())));
        }
        let n = index.len();
        let mut e = Vec::with_capacity(edges.len());
        for (i, &x) in edges.iter().enumerate() {
            e.push(u32::try_from(x).ok().filter(|&x| (x as usize) < n).ok_or_else(|| {
                Error::arg(format!("edges[{i}] = {x} is not a node of a graph of {n} nodes"))
            })?);
        }
        Ok(Graph { index: index.iter().map(|&x| x as u32).collect(), edges: e })
    }

    pub fn nnodes(&self) -> u32 {
        self.index.len() as u32
    }

    pub fn index(&self) -> &[u32] {
        &self.index
    }

    pub fn edges(&self) -> &[u32] {
        &self.edges
    }

    /// The neighbours of `node` (`MPI_ERR_RANK` outside the graph).
    pub fn neighbors(&self, node: u32) -> Result<&[u32]> {
        let i = node as usize;
        if i >= self.index.len() {
            return Err(Error::rank(format!("node {node} of a graph of {} nodes", self.index.len())));
        }
        let start = if i == 0 { 0 } else { self.index[i - 1] as usize };
        Ok(&self.edges[start..self.index[i] as usize])
    }

    /// `MPI_Graph_map`: the rank `rank` of a communicator of `size` would have (identity;
    /// `None`: `MPI_UNDEFINED`); `MPI_ERR_ARG` if the graph has more nodes.
    pub fn map(&self, size: u32, rank: u32) -> Result<Option<u32>> {
        if self.nnodes() > size {
            return Err(Error::arg(format!("a graph of {} nodes for {size} processes", self.nnodes())));
        }
        Ok((rank < self.nnodes()).then_some(rank))
    }
}

impl Comm {
    /// `MPI_Graph_create` (collective): the first `graph.nnodes()` ranks (no reordering) form a
    /// communicator with the graph attached; the others get `None`. `MPI_ERR_ARG` if the graph
    /// has more nodes than the communicator has ranks.
    pub fn graph_create(&self, graph: Graph) -> Result<Option<Comm>> {
        if graph.nnodes() > self.size() {
            return Err(Error::arg(format!(
                "a graph of {} nodes over a communicator of {}",
                graph.nnodes(),
                self.size()
            )));
        }
        let member = self.rank() < graph.nnodes();
        let c = self.split(member.then_some(0), self.rank() as i32)?;
        Ok(c.inspect(|c| c.attach_topology(Arc::new(Topology::Graph(graph)))))
    }

    /// The graph of this communicator (`MPI_ERR_TOPOLOGY` if it has none).
    pub fn graph(&self) -> Result<&Graph> {
        match self.topology().map(|t| &**t) {
            Some(Topology::Graph(g)) => Ok(g),
            _ => Err(Error::topology("the communicator has no graph topology")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorClass;

    #[test]
    fn neighbours_and_checks() {
        // MPI 4.0's example: 0-{1,3}, 1-{0}, 2-{3}, 3-{0,2}.
        let g = Graph::new(&[2, 3, 4, 6], &[1, 3, 0, 3, 0, 2]).unwrap();
        assert_eq!(g.neighbors(0).unwrap(), [1, 3]);
        assert_eq!(g.neighbors(1).unwrap(), [0]);
        assert_eq!(g.neighbors(3).unwrap(), [0, 2]);
        assert_eq!(g.neighbors(4).unwrap_err().class(), ErrorClass::Rank);
        assert_eq!(g.map(4, 3).unwrap(), Some(3));
        assert_eq!(g.map(8, 5).unwrap(), None);
        assert_eq!(Graph::new(&[2, 1], &[1, 0]).unwrap_err().class(), ErrorClass::Arg);
        assert_eq!(Graph::new(&[1, 2], &[1, 2]).unwrap_err().class(), ErrorClass::Arg);
        assert_eq!(Graph::new(&[-1, 2], &[1, 0]).unwrap_err().class(), ErrorClass::Arg);
        assert!(Graph::new(&[1, 1], &[0]).is_ok(), "a self-loop");
    }
}
