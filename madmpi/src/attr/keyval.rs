//! Keyvals: created with their callbacks, freed with MPI's semantics (a freed keyval can no longer
//! be named, but lives on, callbacks included, while attributes reference it).

use crate::error::{Error, Result};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Names a keyval in a [`KeyvalRegistry`] (the C layer maps it to an `int` handle).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyvalId(u32);

impl KeyvalId {
    /// The number behind the id.
    pub const fn get(self) -> u32 {
        self.0
    }
}

impl fmt::Display for KeyvalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "keyval {}", self.0)
    }
}

/// A reference to a keyval: what attribute tables hold, so the keyval outlives `free` while they
/// do. Two `Keyval`s are the same keyval when they share the allocation, which stays unique while
/// any reference exists (ids alone could be reused after a free).
pub struct Keyval<C>(Arc<Entry<C>>);

struct Entry<C> {
    id: KeyvalId,
    callbacks: C,
}

impl<C> Keyval<C> {
    /// The keyval's id.
    pub fn id(&self) -> KeyvalId {
        self.0.id
    }

    /// Its callbacks.
    pub fn callbacks(&self) -> &C {
        &self.0.callbacks
    }

    /// True when both name the same keyval.
    pub fn same(&self, other: &Keyval<C>) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl<C> Clone for Keyval<C> {
    fn clone(&self) -> Self {
        Keyval(Arc::clone(&self.0))
    }
}

impl<C> fmt::Debug for Keyval<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Keyval").field(&self.0.id.0).finish()
    }
}

/// The keyvals of one kind of object (communicators, datatypes or windows). Thread-safe.
pub struct KeyvalRegistry<C> {
    inner: Mutex<Inner<C>>,
}

struct Inner<C> {
    live: HashMap<u32, Keyval<C>>,
    next: u32,
}

impl<C> Default for KeyvalRegistry<C> {
    fn default() -> Self {
        KeyvalRegistry { inner: Mutex::new(Inner { live: HashMap::new(), next: 0 }) }
    }
}

impl<C> KeyvalRegistry<C> {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// `MPI_*_create_keyval`.
    pub fn create(&self, callbacks: C) -> Result<KeyvalId> {
        let mut inner = self.lock();
        if inner.live.len() >= u32::MAX as usize {
            return Err(Error::keyval("too many live keyvals"));
        }
        let mut id = inner.next;
        while inner.live.contains_key(&id) {
            id = id.wrapping_add(1);
        }
        inner.next = id.wrapping_add(1);
        let id = KeyvalId(id);
        inner.live.insert(id.0, Keyval(Arc::new(Entry { id, callbacks })));
        Ok(id)
    }

    /// The keyval `id` names, for `set`/`get`/`delete`; `MPI_ERR_KEYVAL` once freed. (MPICH
    /// 4.0.2 still accepts a freed keyval's old handle while attributes use it; the standard makes
    /// that erroneous since `free` sets the handle to `MPI_KEYVAL_INVALID`.)
    pub fn get(&self, id: KeyvalId) -> Result<Keyval<C>> {
        self.lock().live.get(&id.0).cloned().ok_or_else(|| invalid(id))
    }

    /// `MPI_*_free_keyval`: `id` no longer names the keyval; attributes using it keep it, and its
    /// callbacks still run for them (copy on dup, delete on free), until the last one goes.
    pub fn free(&self, id: KeyvalId) -> Result<()> {
        let removed = self.lock().live.remove(&id.0).ok_or_else(|| invalid(id))?;
        drop(removed); // outside the lock: dropping the callbacks may run user code
        Ok(())
    }

    /// How many keyvals can still be named.
    pub fn live(&self) -> usize {
        self.lock().live.len()
    }

    fn lock(&self) -> MutexGuard<'_, Inner<C>> {
        // Updates are single map operations: a panic cannot leave the map inconsistent.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<C> fmt::Debug for KeyvalRegistry<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyvalRegistry").field("live", &self.live()).finish()
    }
}

fn invalid(id: KeyvalId) -> Error {
    Error::keyval(format!("invalid attribute key ({id} does not exist or was freed)"))
}
