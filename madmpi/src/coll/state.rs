//! What the collectives keep per communicator (the count of collectives started, the members'
//! node layout), in the communicator's extensions.
//!
//! Owns that state; the communicator stores it without knowing it.

use super::Layout;
use crate::comm::{Comm, Extension, from_nmad};
use crate::error::Result;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

/// What the collectives keep per communicator (a duplicate starts afresh).
#[derive(Default)]
struct CommState {
    /// Collective operations started on this communicator (the same count at every member).
    started: AtomicU64,
    /// The node layout of the members, for hierarchical collectives (computed on first use).
    layout: OnceLock<Option<Arc<Layout>>>,
}

impl Extension for CommState {}

impl Comm {
    fn coll(&self) -> &CommState {
        self.extensions().get_or_default()
    }

    /// The sequence number of the next collective operation on this communicator.
    pub(crate) fn next_coll_seq(&self) -> u64 {
        self.coll().started.fetch_add(1, Relaxed)
    }

    /// The members' node layout if it calls for hierarchical collectives (several nodes, one
    /// of them with several members), from the nodes nmad's peers published; computed once.
    pub(crate) fn coll_layout(&self) -> Result<Option<Arc<Layout>>> {
        if self.is_inter() {
            return Ok(None);
        }
        let state = self.coll();
        if let Some(l) = state.layout.get() {
            return Ok(l.clone());
        }
        let nm = self.runtime_nmad();
        let nodes = (0..self.size())
            .map(|r| nm.node_of(self.group().member(r).expect("a member")))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(from_nmad)?;
        let l = Layout::new(&nodes);
        let l = l.is_hierarchical().then(|| Arc::new(l));
        Ok(state.layout.get_or_init(|| l).clone())
    }
}
