//! Handle tables: the objects the library creates, by the handle it gave to C.
//!
//! A [`Table`] is split into shards, each a slab (slots and a free list) behind its own `RwLock`,
//! so threads creating and freeing requests at once (MPI_THREAD_MULTIPLE) mostly take different
//! locks. Slot `s` lives in shard `s % SHARDS` at index `s / SHARDS`; a thread inserts into the
//! shard its thread id hashes to. Locks are held for a lookup or an update only, never while
//! waiting on communication: `get` hands out a clone (objects are `Arc`s or cheap handles).
//!
//! Owns slot allocation and the handle encoding of its objects (`abi::encode_user_handle`); it
//! must not know what the objects are.

use madmpi::abi::{self, Handle, UserObject};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Number of shards of a table (a power of two).
const SHARDS: u32 = 8;

/// A table of objects of one kind, by handle.
pub(crate) struct Table<T> {
    kind: UserObject,
    shards: [RwLock<Slab<T>>; SHARDS as usize],
}

struct Slab<T> {
    slots: Vec<Option<T>>,
    free: Vec<u32>,
}

impl<T: Clone> Table<T> {
    /// An empty table for objects of `kind`.
    pub(crate) fn new(kind: UserObject) -> Self {
        Table {
            kind,
            shards: std::array::from_fn(|_| RwLock::new(Slab { slots: Vec::new(), free: Vec::new() })),
        }
    }

    /// Stores `value`; its new handle, or `None` when the handle space is exhausted.
    pub(crate) fn insert(&self, value: T) -> Option<Handle> {
        let shard = home_shard();
        let mut slab = write(&self.shards[shard as usize]);
        let index = match slab.free.pop() {
            Some(i) => {
                slab.slots[i as usize] = Some(value);
                i
            }
            None => {
                let i = u32::try_from(slab.slots.len()).ok()?;
                abi::encode_user_handle(self.kind, i * SHARDS + shard)?;
                slab.slots.push(Some(value));
                i
            }
        };
        abi::encode_user_handle(self.kind, index * SHARDS + shard)
    }

    /// A clone of the object of `handle`, if it is a live handle of this table.
    pub(crate) fn get(&self, handle: Handle) -> Option<T> {
        let (shard, index) = self.locate(handle)?;
        read(&self.shards[shard]).slots.get(index)?.clone()
    }

    /// Puts `value` in the place of the object of `handle` (which keeps its handle); `false`
    /// if `handle` is not live.
    pub(crate) fn replace(&self, handle: Handle, value: T) -> bool {
        let Some((shard, index)) = self.locate(handle) else { return false };
        let mut slab = write(&self.shards[shard]);
        match slab.slots.get_mut(index) {
            Some(slot @ Some(_)) => {
                *slot = Some(value);
                true
            }
            _ => false,
        }
    }

    /// Removes and returns the object of `handle`.
    pub(crate) fn remove(&self, handle: Handle) -> Option<T> {
        let (shard, index) = self.locate(handle)?;
        let mut slab = write(&self.shards[shard]);
        let value = slab.slots.get_mut(index)?.take()?;
        slab.free.push(index as u32);
        Some(value)
    }

    /// Removes every object (at finalize), returning them so the caller drops them unlocked.
    pub(crate) fn drain(&self) -> Vec<T> {
        let mut out = Vec::new();
        for shard in &self.shards {
            let mut slab = write(shard);
            out.extend(slab.slots.drain(..).flatten());
            slab.free.clear();
        }
        out
    }

    fn locate(&self, handle: Handle) -> Option<(usize, usize)> {
        match abi::decode_user_handle(handle)? {
            (kind, slot) if kind == self.kind => Some(((slot % SHARDS) as usize, (slot / SHARDS) as usize)),
            _ => None,
        }
    }
}

/// The shard this thread inserts into (of `SHARDS`, which the express table shares).
pub(crate) fn home_shard() -> u32 {
    use std::hash::{BuildHasher, RandomState};
    thread_local! {
        static SHARD: u32 = {
            let h = RandomState::new().hash_one(std::thread::current().id());
            (h % u64::from(SHARDS)) as u32
        };
    }
    SHARD.with(|s| *s)
}

// A panic never leaves a slab half-updated (each update is one statement), so a poisoned lock
// is still consistent: recover it rather than propagate the panic to every later call.
fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn insert_get_remove_and_reuse() {
        let t: Table<u32> = Table::new(UserObject::Request);
        let a = t.insert(1).unwrap();
        let b = t.insert(2).unwrap();
        assert_ne!(a, b);
        assert_eq!((t.get(a), t.get(b)), (Some(1), Some(2)));
        assert_eq!(abi::handle_object(a), abi::ObjectType::Request);
        assert!(t.replace(a, 10), "a live handle takes a new object");
        assert_eq!(t.get(a), Some(10));
        assert_eq!(t.remove(a), Some(10));
        assert_eq!((t.get(a), t.remove(a)), (None, None));
        assert!(!t.replace(a, 11), "a freed handle does not come back");
        // Wrong kind, null and builtin handles are not found.
        let other: Table<u32> = Table::new(UserObject::Comm);
        assert_eq!(other.get(b), None);
        assert_eq!(t.get(abi::MPI_REQUEST_NULL), None);
        assert_eq!(t.get(abi::MPI_COMM_WORLD), None);
        let c = t.insert(3).unwrap();
        assert_eq!(t.get(c), Some(3));
        assert_eq!(t.drain().len(), 2);
        assert_eq!(t.get(b), None);
    }

    #[test]
    fn concurrent_inserts_get_distinct_handles() {
        let t: Table<usize> = Table::new(UserObject::Request);
        let handles: Vec<Handle> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|k| {
                    let t = &t;
                    s.spawn(move || {
                        let mut mine = Vec::new();
                        for i in 0..1000 {
                            let h = t.insert(k * 1000 + i).unwrap();
                            assert_eq!(t.get(h), Some(k * 1000 + i));
                            if i % 3 == 0 {
                                assert_eq!(t.remove(h), Some(k * 1000 + i));
                            } else {
                                mine.push(h);
                            }
                        }
                        mine
                    })
                })
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(handles.iter().collect::<HashSet<_>>().len(), handles.len());
        assert_eq!(t.drain().len(), handles.len());
    }
}
