//! The attributes of one object, in order of first setting, and the MPI operations on them.
//!
//! Callbacks run inside these methods, while the owner holds whatever guards the table (`&mut`):
//! the owner must not hold a non-reentrant lock that a callback could take again, e.g. by reading
//! the same object's attributes from a delete callback.

use super::{AttrCallbacks, Keyval, KeyvalId};
use crate::error::Result;
use std::fmt;

/// The attributes cached on one object. Dropping a table drops its values without delete
/// callbacks: an owner freeing its object calls [`AttrTable::delete_all`] first.
pub struct AttrTable<C: AttrCallbacks> {
    /// In order of first setting.
    entries: Vec<Attr<C>>,
}

struct Attr<C: AttrCallbacks> {
    keyval: Keyval<C>,
    value: C::Value,
}

impl<C: AttrCallbacks> Default for AttrTable<C> {
    fn default() -> Self {
        AttrTable { entries: Vec::new() }
    }
}

impl<C: AttrCallbacks> AttrTable<C> {
    /// A table without attributes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of attributes.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True without attributes.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The keyvals set, in order of first setting.
    pub fn keyvals(&self) -> impl Iterator<Item = KeyvalId> + '_ {
        self.entries.iter().map(|a| a.keyval.id())
    }

    /// `MPI_*_get_attr`: the value, `None` when not set (`flag = 0`).
    pub fn get(&self, keyval: &Keyval<C>) -> Option<&C::Value> {
        self.position(keyval).map(|i| &self.entries[i].value)
    }

    /// `MPI_*_set_attr`. A value already set is first passed to the delete callback; if that
    /// fails, the old value stays and the error is returned (as in MPICH). A replaced attribute
    /// keeps its place in the order.
    pub fn set(&mut self, object: &C::Object, keyval: &Keyval<C>, value: C::Value) -> Result<()> {
        match self.position(keyval) {
            Some(i) => {
                let old = &mut self.entries[i];
                keyval.callbacks().delete(object, keyval.id(), &old.value)?;
                old.value = value;
            }
            None => self.entries.push(Attr { keyval: keyval.clone(), value }),
        }
        Ok(())
    }

    /// `MPI_*_delete_attr`: runs the delete callback, then removes the attribute; if the callback
    /// fails the attribute stays (as in MPICH). Deleting an attribute not set succeeds (as in
    /// MPICH).
    pub fn delete(&mut self, object: &C::Object, keyval: &Keyval<C>) -> Result<()> {
        if let Some(i) = self.position(keyval) {
            keyval.callbacks().delete(object, keyval.id(), &self.entries[i].value)?;
            self.entries.remove(i);
        }
        Ok(())
    }

    /// The attributes of the duplicate `new` of `old` (`MPI_Comm_dup`): each keyval's copy callback
    /// decides, newest attribute first (as MPICH); the copies keep their relative order.
    ///
    /// If a copy callback fails, the values already copied are passed to their delete callbacks
    /// (with `new`, errors ignored: the copy's error is the one reported) and the error is
    /// returned. MPICH 4.0.2 drops them without their delete callbacks, leaking what a copy
    /// callback allocated; the owner gives `new` a handle before copying so deletes can name it.
    pub fn copy_for_dup(&self, old: &C::Object, new: &C::Object) -> Result<AttrTable<C>> {
        let mut copied = Vec::new();
        for attr in self.entries.iter().rev() {
            let keyval = &attr.keyval;
            match keyval.callbacks().copy(old, keyval.id(), &attr.value) {
                Ok(Some(value)) => copied.push(Attr { keyval: keyval.clone(), value }),
                Ok(None) => {}
                Err(e) => {
                    for attr in &copied {
                        let _ignored = attr.keyval.callbacks().delete(new, attr.keyval.id(), &attr.value);
                    }
                    return Err(e);
                }
            }
        }
        copied.reverse();
        Ok(AttrTable { entries: copied })
    }

    /// Deletes every attribute when the object is freed, newest first. The first failing delete
    /// callback stops it: that attribute and the older ones stay (the object is still whole; the
    /// owner does not free it) and the error is returned. (MPICH 4.0.2 goes on, removes them all
    /// and returns the last error, yet keeps the communicator.)
    pub fn delete_all(&mut self, object: &C::Object) -> Result<()> {
        while let Some(attr) = self.entries.last() {
            attr.keyval.callbacks().delete(object, attr.keyval.id(), &attr.value)?;
            self.entries.pop();
        }
        Ok(())
    }

    fn position(&self, keyval: &Keyval<C>) -> Option<usize> {
        self.entries.iter().position(|a| a.keyval.same(keyval))
    }
}

impl<C: AttrCallbacks> fmt::Debug for AttrTable<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.keyvals()).finish()
    }
}
