//! User-thread-local storage: values that follow a user thread from LWP to LWP.
//!
//! ```
//! marcel::user_local! { static COUNTER: std::cell::Cell<u32> = std::cell::Cell::new(0); }
//! COUNTER.with(|c| c.set(c.get() + 1));
//! ```
//! On a plain OS thread the same key gives a value private to that OS thread. Values are created
//! on first use and dropped when the thread exits (user threads: before joiners are woken).
//! Values must be `Send`: a user thread — and its locals — may move between kernel threads.

use crate::sched::context;
use std::any::Any;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering::*};

/// Per-thread slots, indexed by key.
#[derive(Default)]
pub(crate) struct Slots(Vec<Option<Box<dyn Any + Send>>>);

/// Placeholder while a key's initializer runs, to catch recursive initialization.
struct Initializing;

static NEXT_KEY: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static OS_SLOTS: UnsafeCell<Slots> = UnsafeCell::new(Slots::default());
}

/// A key for user-thread-local values; declare with [`crate::user_local!`].
pub struct LocalKey<T: 'static> {
    init: fn() -> T,
    /// Slot index + 1; 0 until first use.
    index: AtomicUsize,
}

impl<T: Send + 'static> LocalKey<T> {
    #[doc(hidden)]
    pub const fn new(init: fn() -> T) -> Self {
        LocalKey { init, index: AtomicUsize::new(0) }
    }

    fn index(&self) -> usize {
        match self.index.load(Acquire) {
            0 => {
                let mine = NEXT_KEY.fetch_add(1, Relaxed) + 1;
                match self.index.compare_exchange(0, mine, AcqRel, Acquire) {
                    Ok(_) => mine - 1,
                    Err(other) => other - 1,
                }
            }
            i => i - 1,
        }
    }

    /// Calls `f` with the calling thread's value, creating it first if needed.
    ///
    /// # Panics
    /// If the key's initializer uses the same key.
    pub fn with<R>(&'static self, f: impl FnOnce(&T) -> R) -> R {
        let idx = self.index();
        let h = context::identity_header();
        let slots: *mut Slots = if h.is_null() {
            OS_SLOTS.with(|s| s.get())
        } else {
            // SAFETY: the header of the thread executing this code; its locals are only touched by
            // that thread, which is us.
            unsafe { (*h).locals.get() }
        };
        // SAFETY: `slots` belongs to the calling thread, and no `&mut` to it is held across user
        // code: each access below is a short borrow. Values are boxed, so `&T` stays valid when the
        // Vec grows (other keys initialized inside `f`), and slots are only removed at thread exit.
        unsafe {
            let list: &Vec<_> = &(*slots).0;
            let present = list.get(idx).is_some_and(|s| s.is_some());
            if !present {
                set_slot(slots, idx, Box::new(Initializing));
                let v = (self.init)();
                set_slot(slots, idx, Box::new(v));
            }
            let list: &Vec<_> = &(*slots).0;
            let any: &(dyn Any + Send) = list[idx].as_deref().expect("slot set above");
            match any.downcast_ref::<T>() {
                Some(v) => f(&*(v as *const T)),
                None => {
                    panic!("marcel: a user-local's initializer used the same key (recursive initialization)")
                }
            }
        }
    }
}

/// # Safety
/// `slots` is the calling thread's, not borrowed elsewhere right now.
unsafe fn set_slot(slots: *mut Slots, idx: usize, v: Box<dyn Any + Send>) {
    // SAFETY: per the contract.
    let s = unsafe { &mut (*slots).0 };
    if s.len() <= idx {
        s.resize_with(idx + 1, || None);
    }
    s[idx] = Some(v);
}

/// Drops the exiting user thread's locals (destructors may create new ones: a few rounds).
pub(crate) fn run_destructors(hdr: &crate::sched::task::Header) {
    for _ in 0..4 {
        // SAFETY: called by the exiting thread itself; no borrow of its slots is live.
        if unsafe { (*hdr.locals.get()).0.is_empty() } {
            return;
        }
        // SAFETY: called by the exiting thread itself; no borrow of its slots is live.
        let taken = std::mem::take(unsafe { &mut *hdr.locals.get() });
        if taken.0.is_empty() {
            return;
        }
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(taken))).is_err() {
            log::error!("a user-local destructor panicked in user thread {}", hdr.id);
        }
    }
}

/// Declares user-thread-local keys: `user_local! { static NAME: Type = init; }`.
#[macro_export]
macro_rules! user_local {
    ($($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = $init:expr;)+) => {
        $(
            $(#[$attr])* $vis static $name: $crate::LocalKey<$t> = $crate::LocalKey::new({
                fn __init() -> $t { $init }
                __init
            });
        )+
    };
}
