//! Info objects (MPI 4.0, chapter 10): ordered sets of (key, value) string pairs, the limits and
//! error classes MPI puts on them, the contents of `MPI_INFO_ENV` ([`env()`]) and the communicator
//! hints MadMPI recognizes ([`CommHints`]).
//!
//! Keys and values are byte strings without NUL, because C programs may store any such bytes
//! and must read back exactly what they stored; Rust callers pass `&str` (any `AsRef<[u8]>`)
//! and read with [`Info::get_str`]. Limits are lengths in bytes, the terminating NUL of C not
//! counted: a key has 1 to [`MAX_KEY`] bytes (`MPI_ERR_INFO_KEY` otherwise; MPI does not define
//! an empty key, and MPICH and Open MPI reject it too), a value 0 to [`MAX_VALUE`]
//! (`MPI_ERR_INFO_VALUE`). Keys keep the order in which they were first set (replacing a value
//! keeps its key's place, deleting a key moves the later ones down by one), which is what
//! `MPI_Info_get_nthkey` numbers. Keys and values are case sensitive.
//!
//! Owns the info rules (limits, order, errors); it must not know handles, C buffers, or which
//! thread may touch an object (the C layer shares objects behind its own locks).

mod env;
mod hints;
#[cfg(test)]
mod tests;

pub use env::{Threading, env, env_with_args, processor_name, record_start};
pub use hints::CommHints;

use crate::abi;
use crate::error::{Error, Result};
use std::fmt;

/// The longest key, in bytes (`MPI_MAX_INFO_KEY`, the terminating NUL of C not counted).
pub const MAX_KEY: usize = abi::MPI_MAX_INFO_KEY as usize;
/// The longest value, in bytes (`MPI_MAX_INFO_VAL`, the terminating NUL of C not counted).
pub const MAX_VALUE: usize = abi::MPI_MAX_INFO_VAL as usize;

/// One (key, value) pair.
type Entry = (Box<[u8]>, Box<[u8]>);

/// An info object: (key, value) pairs in the order their keys were first set. Cloning is
/// `MPI_Info_dup` (the copy is independent).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Info {
    entries: Vec<Entry>,
}

/// `Ok` if `key` can be stored: `MPI_ERR_INFO_KEY` if it is empty, longer than [`MAX_KEY`]
/// bytes, or holds a NUL (which C could not pass).
pub fn check_key(key: &[u8]) -> Result<()> {
    if key.is_empty() {
        return Err(Error::info_key("empty key"));
    }
    if key.len() > MAX_KEY {
        return Err(Error::info_key(format!("key of {} bytes (MPI_MAX_INFO_KEY is {MAX_KEY})", key.len())));
    }
    if key.contains(&0) {
        return Err(Error::info_key("key with a NUL byte"));
    }
    Ok(())
}

/// `Ok` if `value` can be stored: `MPI_ERR_INFO_VALUE` if it is longer than [`MAX_VALUE`]
/// bytes or holds a NUL.
pub fn check_value(value: &[u8]) -> Result<()> {
    if value.len() > MAX_VALUE {
        return Err(Error::info_value(format!(
            "value of {} bytes (MPI_MAX_INFO_VAL is {MAX_VALUE})",
            value.len()
        )));
    }
    if value.contains(&0) {
        return Err(Error::info_value("value with a NUL byte"));
    }
    Ok(())
}

impl Info {
    /// `MPI_Info_create`: an empty info.
    pub fn new() -> Info {
        Info::default()
    }

    /// An info holding `pairs`, set in order (a repeated key keeps its first place and its
    /// last value).
    pub fn from_pairs<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Info> {
        let mut info = Info::new();
        for (k, v) in pairs {
            info.set(k, v)?;
        }
        Ok(info)
    }

    fn position(&self, key: &[u8]) -> Option<usize> {
        self.entries.iter().position(|(k, _)| **k == *key)
    }

    /// `MPI_Info_set`: gives `key` the value `value`, replacing any previous one (the key keeps
    /// its place). Errors: `MPI_ERR_INFO_KEY`, `MPI_ERR_INFO_VALUE` (see [`check_key`],
    /// [`check_value`]); the info is then unchanged.
    pub fn set(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let (key, value) = (key.as_ref(), value.as_ref());
        check_key(key)?;
        check_value(value)?;
        match self.position(key) {
            Some(i) => self.entries[i].1 = value.into(),
            None => self.entries.push((key.into(), value.into())),
        }
        Ok(())
    }

    /// The value of `key`, if it is set (`MPI_Info_get_string`).
    pub fn get(&self, key: impl AsRef<[u8]>) -> Option<&[u8]> {
        self.position(key.as_ref()).map(|i| &*self.entries[i].1)
    }

    /// The value of `key` as text: `None` if it is not set, or if a C program stored bytes
    /// that are not UTF-8 (use [`Info::get`] for those).
    pub fn get_str(&self, key: impl AsRef<[u8]>) -> Option<&str> {
        self.get(key).and_then(|v| std::str::from_utf8(v).ok())
    }

    /// Whether `key` is set.
    pub fn contains(&self, key: impl AsRef<[u8]>) -> bool {
        self.position(key.as_ref()).is_some()
    }

    /// `MPI_Info_delete`: removes `key` and its value; the keys after it move down by one.
    /// Errors: `MPI_ERR_INFO_KEY` for a key that could not be stored, `MPI_ERR_INFO_NOKEY` if
    /// `key` is not set.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> Result<()> {
        let key = key.as_ref();
        check_key(key)?;
        match self.position(key) {
            Some(i) => {
                self.entries.remove(i);
                Ok(())
            }
            None => Err(Error::info_nokey(format!("key \"{}\" is not set", String::from_utf8_lossy(key)))),
        }
    }

    /// `MPI_Info_get_nkeys`: how many keys are set.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no key is set.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `MPI_Info_get_nthkey`: key number `n` (from 0, in the order keys were first set), or
    /// `None` if fewer keys are set.
    pub fn nth_key(&self, n: usize) -> Option<&[u8]> {
        self.entries.get(n).map(|(k, _)| &**k)
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &[u8]> {
        self.entries.iter().map(|(k, _)| &**k)
    }

    /// The (key, value) pairs, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.entries.iter().map(|(k, v)| (&**k, &**v))
    }

    /// `MPI_Info_dup`: an independent copy, with the same keys in the same order.
    pub fn dup(&self) -> Info {
        self.clone()
    }
}

/// `{"key": "value", ...}`, bytes that are not UTF-8 shown as U+FFFD.
impl fmt::Debug for Info {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        f.debug_map().entries(self.iter().map(|(k, v)| (text(k), text(v)))).finish()
    }
}
