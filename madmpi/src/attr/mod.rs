//! Attribute caching: keyvals ([`KeyvalRegistry`]), the attributes of one object ([`AttrTable`]),
//! and the predefined attributes ([`PredefinedKey`]).
//!
//! This module owns MPI's attribute rules: when copy and delete callbacks run and in which order,
//! what their errors do, how long a freed keyval lives. It must not know what the objects are
//! (communicators now, datatypes and windows later) nor how callbacks are represented: both come
//! from the [`AttrCallbacks`] implementation, C function pointers with their `extra_state` in the C
//! library, closures ([`ClosureCallbacks`]) in the Rust API. Numeric keyval handles, including
//! those of the predefined attributes, belong to the C layer.
//!
//! Orders: MPI leaves the order of deletions unspecified except for `MPI_COMM_SELF` at finalize
//! (reverse order of setting); we use reverse order of setting everywhere, which is allowed.
//! Copies on duplication run in the same order (as in MPICH 4.0.2). Replacing a value keeps the
//! attribute's place (as in MPICH).

mod closures;
mod keyval;
mod predefined;
mod table;
#[cfg(test)]
mod tests;

pub use closures::ClosureCallbacks;
pub use keyval::{Keyval, KeyvalId, KeyvalRegistry};
pub use predefined::{AttrValue, Environment, PredefinedKey, ProcRef};
pub use table::AttrTable;

use crate::error::Result;

/// The copy and delete callbacks of a keyval (and the state they were created with: `extra_state`
/// in C lives in the implementing value).
///
/// An error a callback returns aborts the operation that called it, and the operation returns
/// that error; for a C callback, [`crate::error::Error::from_code`] of its return value, so the
/// C layer hands back exactly the code the callback returned (as MPICH does).
pub trait AttrCallbacks {
    /// How the callbacks name the object: a handle in C, a reference in the Rust API.
    type Object: ?Sized;
    /// An attribute value: `void *` in C (as an address), anything in the Rust API.
    type Value;

    /// On duplication of `old`: `Some(value)` to give the new object this attribute with that
    /// value, `None` not to copy it (`flag = 0`).
    fn copy(&self, old: &Self::Object, keyval: KeyvalId, value: &Self::Value) -> Result<Option<Self::Value>>;

    /// When `value` leaves `object` (deleted, replaced, or the object freed). On error the
    /// attribute stays.
    fn delete(&self, object: &Self::Object, keyval: KeyvalId, value: &Self::Value) -> Result<()>;
}
