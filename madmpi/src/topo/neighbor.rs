//! A communicator's neighbour lists, for the neighbourhood collectives (`coll::neighbor` runs
//! them over these lists).
//!
//! Owns the step from a communicator to its neighbour lists; the exchange is the collective
//! layer's.

use crate::coll::neighbor::Links;
use crate::comm::Comm;
use crate::error::{Error, Result};

impl Comm {
    /// This rank's sources and destinations in the communicator's topology, paired as the
    /// module docs of `topo` say (`MPI_ERR_TOPOLOGY` without a topology).
    pub fn neighbor_links(&self) -> Result<Links> {
        let t = self.topology().ok_or_else(|| Error::topology("the communicator has no topology"))?;
        Ok(t.links(self.rank()))
    }
}
