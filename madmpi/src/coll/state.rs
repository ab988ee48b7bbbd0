//! What the collectives keep per communicator (the count of collectives started, the members'
//! node layout, the schedules planned lately), in the communicator's extensions.
//!
//! Owns that state; the communicator stores it without knowing it.

use super::Layout;
use super::choice::{self, Forced};
use super::schedule::Schedule;
use crate::comm::{Comm, Extension, from_nmad};
use crate::error::Result;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};

/// Schedules a communicator keeps (the most recently used first): a program repeats a few
/// collectives with the same arguments, and planning one costs more than running it.
const PLANS_KEPT: usize = 8;

impl PlanKey {
    /// The key of `call` with `forced`, its sizes zero (for the caller to fill in).
    pub(crate) fn of(call: &'static str, forced: Forced) -> PlanKey {
        PlanKey { call, forced, root: 0, len: 0, count: 0, elem: 0, reorderable: false, in_place: false }
    }
}

/// What a schedule depends on besides its communicator (whose size, rank and node layout are
/// fixed): the call, the algorithms forced, and the call's sizes. Two calls with equal keys
/// plan equal schedules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PlanKey {
    pub call: &'static str,
    pub forced: Forced,
    pub root: usize,
    /// Bytes (a broadcast's), or elements and their size (a reduction's).
    pub len: usize,
    pub count: usize,
    pub elem: usize,
    pub reorderable: bool,
    /// In place (the input is the output buffer).
    pub in_place: bool,
}

/// What the collectives keep per communicator (a duplicate starts afresh).
#[derive(Default)]
struct CommState {
    /// Collective operations started on this communicator (the same count at every member).
    started: AtomicU64,
    /// The node layout of the members, for hierarchical collectives (computed on first use).
    layout: OnceLock<Option<Arc<Layout>>>,
    plans: Mutex<Vec<(PlanKey, Arc<Schedule>)>>,
}

impl Extension for CommState {}

impl Comm {
    fn coll(&self) -> &CommState {
        self.extensions().get_or_default()
    }

    /// How many collective operations this communicator started (the same at every member).
    pub(crate) fn coll_started(&self) -> u64 {
        self.coll().started.load(Relaxed)
    }

    /// The sequence number of the next collective operation on this communicator.
    pub(crate) fn next_coll_seq(&self) -> u64 {
        self.coll().started.fetch_add(1, Relaxed)
    }

    /// The schedule planned for `key` on this communicator: a kept one, else `plan()`'s, kept
    /// (not while the choices are traced: each call then plans, and says so).
    pub(crate) fn planned(
        &self,
        key: PlanKey,
        plan: impl FnOnce() -> Result<Schedule>,
    ) -> Result<Arc<Schedule>> {
        if choice::tracing() {
            return plan().map(Arc::new);
        }
        let plans = &self.coll().plans;
        {
            let mut kept = plans.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(i) = kept.iter().position(|(k, _)| *k == key) {
                let hit = kept.remove(i);
                let s = hit.1.clone();
                kept.insert(0, hit);
                return Ok(s);
            }
        }
        let s = Arc::new(plan()?);
        let mut kept = plans.lock().unwrap_or_else(|e| e.into_inner());
        kept.insert(0, (key, s.clone()));
        kept.truncate(PLANS_KEPT);
        Ok(s)
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
