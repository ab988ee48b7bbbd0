//! The sessions of a core, by id. Every arriving message names its session, so the arrival path
//! reads this table once per message: ids below [`DIRECT`] (madmpi's context ids are, see
//! `madmpi::comm::context::MAX_CONTEXTS`) sit in a slot of their own, behind a lock of their
//! own (read-mostly: written when the session opens or closes), without a hash; other ids
//! (madmpi's shadow and group sessions, Rust API users' own) in a map.
//!
//! (A lock-free slot, `arc_swap`, cost more instructions per message than the lock: its
//! thread-local debt list is longer than a read lock's two atomic operations.)
//!
//! It owns only the id → session mapping. Creating a session and delivering the messages that
//! waited for it is the core's business, under its `early` lock; removals close nothing.

use super::session::SessionInner;
use rustc_hash::FxHashMap as HashMap;
use std::sync::{Arc, RwLock};

/// Ids below this have a slot of their own.
pub(crate) const DIRECT: u32 = 4096;

pub(crate) struct Sessions {
    direct: Box<[RwLock<Option<Arc<SessionInner>>>]>,
    others: RwLock<HashMap<u32, Arc<SessionInner>>>,
}

impl Default for Sessions {
    fn default() -> Sessions {
        Sessions {
            direct: (0..DIRECT).map(|_| RwLock::new(None)).collect(),
            others: RwLock::new(HashMap::default()),
        }
    }
}

impl Sessions {
    /// Session `id`, if it exists.
    #[inline]
    pub(crate) fn get(&self, id: u32) -> Option<Arc<SessionInner>> {
        match self.direct.get(id as usize) {
            Some(slot) => slot.read().unwrap().clone(),
            None => self.others.read().unwrap().get(&id).cloned(),
        }
    }

    /// Adds session `id` (the caller made sure there was none).
    pub(crate) fn insert(&self, id: u32, s: Arc<SessionInner>) {
        match self.direct.get(id as usize) {
            Some(slot) => *slot.write().unwrap() = Some(s),
            None => {
                self.others.write().unwrap().insert(id, s);
            }
        }
    }

    pub(crate) fn remove(&self, id: u32) -> Option<Arc<SessionInner>> {
        match self.direct.get(id as usize) {
            Some(slot) => slot.write().unwrap().take(),
            None => self.others.write().unwrap().remove(&id),
        }
    }

    /// Every session, at this moment.
    pub(crate) fn all(&self) -> Vec<Arc<SessionInner>> {
        let mut v: Vec<_> = self.direct.iter().filter_map(|slot| slot.read().unwrap().clone()).collect();
        v.extend(self.others.read().unwrap().values().cloned());
        v
    }

    /// Removes every session and returns them.
    pub(crate) fn drain(&self) -> Vec<Arc<SessionInner>> {
        let mut v: Vec<_> = self.direct.iter().filter_map(|slot| slot.write().unwrap().take()).collect();
        v.extend(self.others.write().unwrap().drain().map(|(_, s)| s));
        v
    }
}
