//! madrun's key/value store (PMI-1 `put`/`get`, PMI-2 `kvs-put`/`kvs-get`), bounded in entries
//! and in the memory it really takes: every entry is charged its key and value bytes plus
//! [`ENTRY_OVERHEAD`] (the table's bucket, two heap allocations and the table's spare room), so
//! millions of tiny puts are refused long before madrun grows large.
//!
//! Owns the table and its accounting; it must not touch connections or barriers (the server
//! turns a refusal into a PMI error and a notice naming the rank).

use std::collections::HashMap;

/// Most entries the store holds.
pub const ENTRIES_MAX: usize = 1 << 18;
/// Most bytes the store may take, overhead included.
pub const BYTES_MAX: usize = 64 << 20;
/// What one entry costs beyond its key and value bytes: a `(String, String)` bucket (48 B and a
/// control byte) with up to half the table spare after a growth, and two allocations of the
/// allocator's minimum chunk (32 B each). Measured: 8.5 million tiny entries took 1.74 GB,
/// about 205 B each.
pub const ENTRY_OVERHEAD: usize = 192;

#[derive(Debug, Default)]
pub struct Kvs {
    map: HashMap<String, String>,
    /// What the entries cost, overhead included.
    bytes: usize,
}

/// Why a put was refused because the store is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Full {
    Entries,
    Bytes,
}

impl Full {
    /// The reason as a PMI value (no spaces).
    pub fn pmi_reason(self) -> &'static str {
        match self {
            Full::Entries => "kvs_full_too_many_entries",
            Full::Bytes => "kvs_full_too_many_bytes",
        }
    }
}

fn cost(key: &str, value: &str) -> usize {
    key.len() + value.len() + ENTRY_OVERHEAD
}

impl Kvs {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.map.get(key).map(String::as_str)
    }

    /// Stores a pair within the bounds (replacing a value frees the old one's share).
    pub fn put(&mut self, key: &str, value: &str) -> Result<(), Full> {
        let old = self.map.get(key).map(|v| cost(key, v));
        if old.is_none() && self.map.len() >= ENTRIES_MAX {
            return Err(Full::Entries);
        }
        let bytes = self.bytes - old.unwrap_or(0) + cost(key, value);
        if bytes > BYTES_MAX {
            return Err(Full::Bytes);
        }
        self.bytes = bytes;
        match self.map.get_mut(key) {
            Some(v) => value.clone_into(v),
            None => {
                self.map.insert(key.to_string(), value.to_string());
            }
        }
        Ok(())
    }

    /// Stores a pair the launcher itself owns (the job key, the dead ranks), outside the bounds:
    /// ranks cannot make it fail.
    pub fn put_unbounded(&mut self, key: &str, value: &str) {
        let old = self.map.get(key).map_or(0, |v| cost(key, v));
        self.bytes = self.bytes - old + cost(key, value);
        self.map.insert(key.to_string(), value.to_string());
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// What the entries cost, overhead included.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiny_entries_are_refused_at_the_entry_bound() {
        let mut k = Kvs::default();
        for i in 0..ENTRIES_MAX {
            k.put(&i.to_string(), "v").unwrap();
        }
        assert_eq!(k.put("one-more", "v"), Err(Full::Entries));
        // Replacing an existing entry is no new entry.
        k.put("0", "w").unwrap();
        assert_eq!(k.get("0"), Some("w"));
        assert_eq!(k.len(), ENTRIES_MAX);
        assert!(k.bytes() <= BYTES_MAX);
    }

    #[test]
    fn large_entries_are_refused_at_the_byte_bound_overhead_included() {
        let mut k = Kvs::default();
        let value = "x".repeat(1024);
        let fits = BYTES_MAX / (6 + 1024 + ENTRY_OVERHEAD);
        for i in 0..fits {
            k.put(&format!("{i:06}"), &value).unwrap();
        }
        assert_eq!(k.put("999999", &value), Err(Full::Bytes));
        assert_eq!(k.len(), fits);
        // A shorter value for an existing key frees room.
        k.put("000000", "y").unwrap();
        k.put("999999", &value).unwrap();
        assert!(k.bytes() <= BYTES_MAX);
    }

    #[test]
    fn unbounded_puts_are_counted_but_never_refused() {
        let mut k = Kvs::default();
        k.put_unbounded("PM2_JOB_KEY", "secret");
        assert_eq!(k.bytes(), cost("PM2_JOB_KEY", "secret"));
        k.put_unbounded("PM2_JOB_KEY", "s");
        assert_eq!(k.bytes(), cost("PM2_JOB_KEY", "s"));
        assert_eq!(k.get("PM2_JOB_KEY"), Some("s"));
    }
}
