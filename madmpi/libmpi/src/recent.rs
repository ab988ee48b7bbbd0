//! A thread's recent object of one kind (a window, a communicator): the hot calls (`MPI_Put`,
//! `MPI_Send`...) reach it through a thread-local pointer, with no lock and no reference count,
//! instead of the state and its handle table.
//!
//! An entry is a handle, the kind's free count when it was looked up, and a strong reference
//! (from `Arc::into_raw`) that keeps the object alive: an object freed meanwhile stays valid until
//! this thread's next call finds the entry stale (the free count moved). No destructor on the
//! entry itself, so a hot call pays one thread-local access; the kind's keeper releases the
//! reference at thread exit.
//!
//! Owns the caching only; what a handle names is the caller's lookup.

use crate::errors::Fail;
use madmpi::abi::Handle;
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::thread::LocalKey;

/// One thread's recent object of kind `T`.
pub(crate) struct Recent<T: 'static> {
    handle: Cell<Handle>,
    frees: Cell<u64>,
    obj: Cell<*const T>,
    /// Set while a call runs on `obj`: a nested lookup then leaves the entry alone.
    in_use: Cell<bool>,
}

/// Releases a thread's entry when the thread ends (touched on misses only).
pub(crate) struct Keeper<T: 'static>(pub(crate) &'static Kind<T>);

impl<T> Drop for Keeper<T> {
    fn drop(&mut self) {
        let _ = self.0.recent.try_with(Recent::release);
    }
}

/// A kind of object: its thread-local entries, their keepers, and its free count.
pub(crate) struct Kind<T: 'static> {
    pub(crate) recent: &'static LocalKey<Recent<T>>,
    pub(crate) keeper: &'static LocalKey<Keeper<T>>,
    /// Objects freed so far: a thread's entry is stale once this moved.
    pub(crate) frees: AtomicU64,
}

impl<T> Recent<T> {
    pub(crate) const fn new(null: Handle) -> Recent<T> {
        Recent {
            handle: Cell::new(null),
            frees: Cell::new(0),
            obj: Cell::new(std::ptr::null()),
            in_use: Cell::new(false),
        }
    }

    /// The object if the entry names handle `h` and none of its kind was freed since.
    fn current(&self, h: Handle, frees: &AtomicU64) -> Option<*const T> {
        let o = self.obj.get();
        (self.handle.get() == h && !o.is_null() && self.frees.get() == frees.load(Acquire)).then_some(o)
    }

    /// Drops the reference, unless a call is using it.
    fn release(&self) {
        if self.in_use.get() {
            return;
        }
        let o = self.obj.replace(std::ptr::null());
        if !o.is_null() {
            // SAFETY: `o` came from `Arc::into_raw` in `Kind::with` and is released only here,
            // once (the cell was nulled above).
            drop(unsafe { Arc::from_raw(o) });
        }
    }
}

/// Clears [`Recent::in_use`] when the call ends, a panic included.
struct Done<'a, T: 'static>(&'a Recent<T>);

impl<T> Drop for Done<'_, T> {
    fn drop(&mut self) {
        self.0.in_use.set(false);
    }
}

impl<T> Kind<T> {
    /// Marks every thread's entry stale (an object was freed, or all were), and releases this
    /// thread's.
    pub(crate) fn forget(&self) {
        self.frees.fetch_add(1, Release);
        let _ = self.recent.try_with(Recent::release);
    }

    /// Runs the hot call `f` on the object of handle `h` when it is this thread's recent one,
    /// and returns its answer; `None` otherwise (the caller then looks it up with
    /// [`Kind::with`], which makes it the recent one).
    ///
    /// Reaches the entry through a pointer rather than inside `LocalKey::with`, which the
    /// compiler does not inline around a hot call's body: the call's arguments then stay in
    /// registers instead of being stored for a closure (put + flush inside lock_all: 266 → 214
    /// instructions).
    #[inline(always)]
    pub(crate) fn hot<R>(&'static self, h: Handle, f: impl FnOnce(&T) -> R) -> Option<R> {
        let o = self.entry(h)?;
        // SAFETY: the object outlives `f`: the entry holds a strong reference, and should a
        // callback run while `f` waits (a user operation in a background collective) replace
        // the entry, the handle table still holds one, as MPI forbids freeing an object while
        // a call on it runs. No `in_use` mark, then: a hot call costs one thread-local access
        // and no store.
        Some(f(unsafe { &*o }))
    }

    /// [`Kind::hot`] for a call that keeps a reference to the object (a request keeps its
    /// communicator): `f` sees the entry's `Arc`, lent.
    #[inline(always)]
    pub(crate) fn hot_shared<R>(&'static self, h: Handle, f: impl FnOnce(&Arc<T>) -> R) -> Option<R> {
        let o = self.entry(h)?;
        // SAFETY: `o` came from `Arc::into_raw` (the entry's strong reference), and the object
        // outlives `f` as in `hot`; the view is never dropped, so the count stays as it was.
        let lent = std::mem::ManuallyDrop::new(unsafe { Arc::from_raw(o) });
        Some(f(&lent))
    }

    /// The object of this thread's entry if it names handle `h`, is current and not in use.
    #[inline(always)]
    fn entry(&'static self, h: Handle) -> Option<*const T> {
        // SAFETY: the entry has a constant initializer and no destructor, so its storage is
        // valid for the rest of this thread's life; `Recent` is not `Sync` (it holds `Cell`s),
        // so the reference cannot leave this thread.
        let r: &Recent<T> = unsafe { &*self.recent.with(|r| r as *const Recent<T>) };
        r.current(h, &self.frees).filter(|_| !r.in_use.get())
    }

    /// Runs `f` on the object of handle `h`, found through this thread's entry, else by
    /// `lookup` (whose error is returned), which then becomes the recent one.
    pub(crate) fn with<R>(
        &'static self,
        h: Handle,
        lookup: impl FnOnce() -> Result<Arc<T>, Fail>,
        f: impl FnOnce(&Arc<T>) -> Result<R, Fail>,
    ) -> Result<R, Fail> {
        self.recent.with(|r| {
            if r.in_use.get() {
                return f(&lookup()?);
            }
            if r.current(h, &self.frees).is_none() {
                // Read before the lookup: an object freed meanwhile leaves the entry stale.
                let frees = self.frees.load(Acquire);
                let o = lookup()?;
                r.release();
                self.keeper.with(|_| {});
                r.obj.set(Arc::into_raw(o));
                r.handle.set(h);
                r.frees.set(frees);
            }
            r.in_use.set(true);
            let _done = Done(r);
            // SAFETY: `obj` holds a strong reference (from `Arc::into_raw`) that nothing
            // releases while `in_use` is set; the Arc is rebuilt without taking ownership.
            let o = std::mem::ManuallyDrop::new(unsafe { Arc::from_raw(r.obj.get()) });
            f(&o)
        })
    }
}

/// Defines the statics of a kind: `kind!(NAME: Type, null handle)`.
macro_rules! kind {
    ($name:ident: $t:ty, $null:expr) => {
        thread_local! {
            static RECENT: $crate::recent::Recent<$t> = const { $crate::recent::Recent::new($null) };
            static KEEPER: $crate::recent::Keeper<$t> = const { $crate::recent::Keeper(&$name) };
        }
        static $name: $crate::recent::Kind<$t> = $crate::recent::Kind {
            recent: &RECENT,
            keeper: &KEEPER,
            frees: ::std::sync::atomic::AtomicU64::new(0),
        };
    };
}

pub(crate) use kind;
