//! [`AttrCallbacks`] from Rust closures, for the Rust API (the closures hold their own state).

use super::{AttrCallbacks, KeyvalId};
use crate::error::Result;
use std::fmt;

type CopyFn<O, V> = dyn Fn(&O, KeyvalId, &V) -> Result<Option<V>> + Send + Sync;
type DeleteFn<O, V> = dyn Fn(&O, KeyvalId, &V) -> Result<()> + Send + Sync;

/// Copy and delete callbacks as closures over objects `O` and values `V`.
pub struct ClosureCallbacks<O: ?Sized, V> {
    copy: Box<CopyFn<O, V>>,
    delete: Box<DeleteFn<O, V>>,
}

impl<O: ?Sized, V> ClosureCallbacks<O, V> {
    /// Callbacks from two closures.
    pub fn new(
        copy: impl Fn(&O, KeyvalId, &V) -> Result<Option<V>> + Send + Sync + 'static,
        delete: impl Fn(&O, KeyvalId, &V) -> Result<()> + Send + Sync + 'static,
    ) -> Self {
        ClosureCallbacks { copy: Box::new(copy), delete: Box::new(delete) }
    }

    /// `MPI_NULL_COPY_FN` and `MPI_NULL_DELETE_FN`: never copied, nothing to do on delete.
    pub fn null() -> Self {
        Self::new(|_, _, _| Ok(None), |_, _, _| Ok(()))
    }
}

impl<O: ?Sized, V: Clone> ClosureCallbacks<O, V> {
    /// `MPI_COMM_DUP_FN` and `MPI_NULL_DELETE_FN`: duplicates get a clone of the value.
    pub fn dup() -> Self {
        Self::new(|_, _, v: &V| Ok(Some(v.clone())), |_, _, _| Ok(()))
    }
}

impl<O: ?Sized, V> AttrCallbacks for ClosureCallbacks<O, V> {
    type Object = O;
    type Value = V;

    fn copy(&self, old: &O, keyval: KeyvalId, value: &V) -> Result<Option<V>> {
        (self.copy)(old, keyval, value)
    }

    fn delete(&self, object: &O, keyval: KeyvalId, value: &V) -> Result<()> {
        (self.delete)(object, keyval, value)
    }
}

impl<O: ?Sized, V> fmt::Debug for ClosureCallbacks<O, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClosureCallbacks")
    }
}
