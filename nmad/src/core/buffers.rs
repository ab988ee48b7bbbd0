//! Buffers for eager messages that arrive before their receive: small ones are kept inline
//! ([`Kept`], no allocation: 8-byte messages arriving ahead of their receives are the common
//! case of message-rate codes and small collectives); larger ones in recycled buffers.
//!
//! A stream of unexpected messages allocates and frees a buffer per message. Past 32 KiB or so
//! glibc serves such sizes from fresh pages (mmap threshold, heap trimming), so each message cost
//! page faults — measured: 6 faults and ~15 µs per 32 KiB message. Buffers of 4 KiB and more are
//! kept here by power-of-two size class and reused, up to [`LIMIT`] bytes in the whole process.
//!
//! Owns only spare buffers; the memory budget of unexpected messages is accounted elsewhere
//! (`Core`), and this cache is bounded on its own.

use std::borrow::Cow;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Smallest and largest recycled classes (log2 of the capacity).
const MIN_CLASS: u32 = 12;
const MAX_CLASS: u32 = 22;
/// Bytes of spare buffers kept at most (all classes).
pub(crate) const LIMIT: usize = 16 << 20;

struct Pool {
    classes: [Mutex<Vec<Vec<u8>>>; (MAX_CLASS - MIN_CLASS + 1) as usize],
    held: AtomicUsize,
}

static POOL: Pool = Pool { classes: [const { Mutex::new(Vec::new()) }; 11], held: AtomicUsize::new(0) };

fn class_of(capacity: usize) -> Option<usize> {
    let c = capacity.next_power_of_two().trailing_zeros();
    (MIN_CLASS..=MAX_CLASS).contains(&c).then(|| (c - MIN_CLASS) as usize)
}

/// A buffer holding a copy of `data` (recycled when one of its class is spare).
pub(crate) fn copy(data: &[u8]) -> Vec<u8> {
    let mut v = empty(data.len());
    v.extend_from_slice(data);
    v
}

/// A buffer of `len` bytes written by `fill` (recycled when one of its class is spare).
pub(crate) fn filled(len: usize, fill: impl FnOnce(&mut [u8])) -> Vec<u8> {
    let mut v = empty(len);
    v.resize(len, 0);
    fill(&mut v);
    v
}

/// An empty buffer with room for `len` bytes: a spare one of its class if there is one.
fn empty(len: usize) -> Vec<u8> {
    let Some(class) = class_of(len) else { return Vec::with_capacity(len) };
    let spare = POOL.classes[class].lock().unwrap_or_else(|e| e.into_inner()).pop();
    let mut v = match spare {
        Some(v) => {
            POOL.held.fetch_sub(v.capacity(), Relaxed);
            v
        }
        None => Vec::with_capacity(1 << (class as u32 + MIN_CLASS)),
    };
    v.clear();
    v
}

/// Bytes of a message kept inline in [`Kept`].
pub(crate) const INLINE: usize = 48;

/// An unexpected message's bytes: inline up to [`INLINE`] bytes, else in a (recycled) buffer.
pub(crate) enum Kept {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Vec<u8>),
}

impl std::ops::Deref for Kept {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Kept::Inline { len, bytes } => &bytes[..*len as usize],
            Kept::Heap(v) => v,
        }
    }
}

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kept({} bytes)", self.len())
    }
}

impl From<&[u8]> for Kept {
    fn from(data: &[u8]) -> Kept {
        match data.len() {
            0..=INLINE => Kept::filled(data.len(), |b| b.copy_from_slice(data)),
            _ => Kept::Heap(copy(data)),
        }
    }
}

impl Kept {
    /// `len` bytes written by `fill`.
    pub(crate) fn filled(len: usize, fill: impl FnOnce(&mut [u8])) -> Kept {
        if len <= INLINE {
            let mut bytes = [0; INLINE];
            fill(&mut bytes[..len]);
            Kept::Inline { len: len as u8, bytes }
        } else {
            Kept::Heap(filled(len, fill))
        }
    }
}

/// `payload` as kept bytes: borrowed ones are copied (inline, or into a recycled buffer).
pub(crate) fn own(payload: Cow<'_, [u8]>) -> Kept {
    match payload {
        Cow::Borrowed(b) => Kept::from(b),
        Cow::Owned(v) => Kept::Heap(v),
    }
}

/// Gives kept bytes back once they were delivered.
pub(crate) fn release(k: Kept) {
    if let Kept::Heap(v) = k {
        recycle(v);
    }
}

/// Gives a buffer back once its contents were delivered.
pub(crate) fn recycle(v: Vec<u8>) {
    let cap = v.capacity();
    if !cap.is_power_of_two() {
        return;
    }
    let Some(class) = class_of(cap) else { return };
    if POOL.held.fetch_add(cap, Relaxed) + cap > LIMIT {
        POOL.held.fetch_sub(cap, Relaxed);
        return;
    }
    POOL.classes[class].lock().unwrap_or_else(|e| e.into_inner()).push(v);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_reused_by_class_and_hold_exact_copies() {
        let a = copy(&[7u8; 5000]);
        assert_eq!(a.len(), 5000);
        assert!(a.iter().all(|&b| b == 7));
        assert_eq!(a.capacity(), 8192);
        let p = a.as_ptr();
        recycle(a);
        // Tests run in parallel: another test may take it; if not, it is ours again.
        let b = copy(&[1u8; 6000]);
        assert_eq!(b.len(), 6000);
        assert!(b.iter().all(|&x| x == 1));
        let _ = p;
        recycle(b);
        assert_eq!(copy(&[2u8; 10]).capacity(), 10, "small messages are not pooled");
        assert_eq!(class_of(usize::MAX / 2), None);
    }

    #[test]
    fn the_cache_stays_bounded() {
        for _ in 0..(2 * LIMIT / (4 << 20)) {
            recycle(Vec::with_capacity(4 << 20));
        }
        assert!(POOL.held.load(Relaxed) <= LIMIT);
    }
}
