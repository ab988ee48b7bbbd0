//! Recycled `Arc` allocations, per thread. A message-rate loop makes and drops a request's
//! shared parts (its operation here, its handle entry in the C library) by the window — 64 at a
//! time in `madbench mt` — which is more than glibc's per-thread cache keeps, so each cost a
//! trip through the allocator's bins. A [`Spares`] keeps emptied allocations of one type: an
//! `Arc<T>` held by nobody else is dropped in place and its memory kept; the next `make` fills
//! it again.
//!
//! Owns the emptied allocations only; what a `T` is, and when its last holder gives it back,
//! is its owner's business.

use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::sync::Arc;

/// Emptied allocations kept per thread and type at most.
const MAX: usize = 256;

/// A thread's emptied `Arc` allocations of one type (in a `thread_local!`).
pub struct Spares<T> {
    list: RefCell<Vec<Arc<MaybeUninit<T>>>>,
}

impl<T> Spares<T> {
    pub const fn new() -> Spares<T> {
        Spares { list: RefCell::new(Vec::new()) }
    }

    /// `v` in an `Arc`: a kept allocation if there is one.
    pub fn make(&self, v: T) -> Arc<T> {
        let spare = self.list.try_borrow_mut().ok().and_then(|mut l| l.pop());
        match spare {
            Some(a) => {
                let p = Arc::into_raw(a).cast_mut();
                // SAFETY: a kept allocation is referred to by nothing but this list's `Arc`
                // (`give_back` keeps only those no other `Arc` or `Weak` refers to, and the list
                // hands each out once), which `p` now stands for: writing it races with nobody,
                // and `MaybeUninit` takes any value. (`Arc::get_mut` would check it again with a
                // locked compare-and-swap on every request.)
                unsafe { (*p).write(v) };
                // SAFETY: `p` came from `Arc::<MaybeUninit<T>>::into_raw`, `MaybeUninit<T>` has
                // `T`'s layout, and the value is initialized just above.
                unsafe { Arc::from_raw(p.cast_const().cast::<T>()) }
            }
            None => Arc::new(v),
        }
    }

    /// Drops `a`'s value and keeps its allocation, if `a` is its only holder (no other `Arc`,
    /// no `Weak`) and there is room; otherwise just drops `a`.
    pub fn give_back(&self, a: Arc<T>) {
        // Ours alone: a strong count of one is `a`, and no `Weak` exists (none can be made
        // without an `Arc`, and `a` is the only one). Plain loads where `Arc::get_mut` takes a
        // locked compare-and-swap; the fence orders the other holders' releasing decrements
        // before the drop below, as `Arc`'s own drop does.
        let alone = Arc::strong_count(&a) == 1 && Arc::weak_count(&a) == 0;
        if !alone || self.list.try_borrow().map_or(true, |l| l.len() >= MAX) {
            return;
        }
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        let p = Arc::into_raw(a).cast_mut();
        // SAFETY: `p` is the value of an `Arc` nobody else holds (checked above, and `into_raw`
        // keeps its count at one): we may drop it in place; the allocation stays ours.
        unsafe { std::ptr::drop_in_place(p) };
        // SAFETY: `p` came from `Arc::<T>::into_raw`, and `MaybeUninit<T>` has `T`'s size and
        // alignment; the value is dropped, and a `MaybeUninit` never drops it again.
        let empty = unsafe { Arc::from_raw(p.cast_const().cast::<MaybeUninit<T>>()) };
        // The value's drop (above, outside any borrow) may have given others back meanwhile.
        if let Ok(mut l) = self.list.try_borrow_mut()
            && l.len() < MAX
        {
            l.push(empty);
        }
    }
}

/// [`Spares::make`] on a thread's spares, or a plain `Arc` while the thread's locals are torn
/// down.
pub fn make_in<T>(key: &'static std::thread::LocalKey<Spares<T>>, v: T) -> Arc<T> {
    let mut v = Some(v);
    let made = key.try_with(|s| v.take().map(|v| s.make(v))).ok().flatten();
    made.unwrap_or_else(|| Arc::new(v.take().expect("not taken when the spares are gone")))
}

/// [`Spares::give_back`] on a thread's spares, or a plain drop while they are torn down.
pub fn give_back_in<T>(key: &'static std::thread::LocalKey<Spares<T>>, a: Arc<T>) {
    let mut a = Some(a);
    let _ = key.try_with(|s| a.take().map(|a| s.give_back(a)));
}

impl<T> Default for Spares<T> {
    fn default() -> Self {
        Spares::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    static DROPS: AtomicUsize = AtomicUsize::new(0);

    struct Counted(u64);

    impl Drop for Counted {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Relaxed);
        }
    }

    #[test]
    fn a_value_given_back_is_dropped_once_and_its_allocation_reused() {
        let s = Spares::new();
        let a = s.make(Counted(1));
        let at = Arc::as_ptr(&a) as usize;
        let before = DROPS.load(Relaxed);
        s.give_back(a);
        assert_eq!(DROPS.load(Relaxed), before + 1, "dropped in place");
        let b = s.make(Counted(2));
        assert_eq!(Arc::as_ptr(&b) as usize, at, "the allocation came back");
        assert_eq!(b.0, 2);
        let c = b.clone();
        s.give_back(b); // shared: just a reference dropped
        assert_eq!(DROPS.load(Relaxed), before + 1);
        assert_eq!(c.0, 2);
        drop(c);
        assert_eq!(DROPS.load(Relaxed), before + 2);
        drop(s); // an empty allocation kept is freed without dropping anything
        assert_eq!(DROPS.load(Relaxed), before + 2);
    }

    #[test]
    fn an_allocation_a_weak_refers_to_is_not_kept() {
        let s = Spares::new();
        let d = s.make(7u64);
        let at = Arc::as_ptr(&d) as usize;
        let w = Arc::downgrade(&d);
        s.give_back(d);
        assert!(w.upgrade().is_none(), "dropped");
        let e = s.make(8u64);
        assert_ne!(Arc::as_ptr(&e) as usize, at, "not handed out again while the Weak lives");
        assert_eq!(*e, 8);
    }
}
