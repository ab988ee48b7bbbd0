//! Window handles: each window the program made (a [`Table`](crate::table::Table) in the
//! state), with its error handler (`MPI_ERRORS_ARE_FATAL` until set: windows do not inherit
//! their communicator's), its attributes, and the values of its predefined attributes, kept
//! here so the pointers `MPI_Win_get_attr` hands out stay valid while the window lives.
//!
//! Owns the mapping from window handles to [`WinObj`]s and the path of a window call's errors
//! to the window's handler; the windows themselves are `madmpi::rma`'s.

use crate::attrs::Attrs;
use crate::errhandlers::ErrhandlerCell;
use crate::errors::{Fail, HandlerOwner};
use crate::state::State;
use madmpi::abi::{self, Handle};
use madmpi::error::Error;
use madmpi::rma::Win;
use std::cell::Cell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::{Arc, OnceLock};

/// `MPI_WIN_UNIFIED`: public and private copies of window memory are one (MPICH's value).
pub(crate) const MPI_WIN_UNIFIED: c_int = 2;

/// A window as the C library sees it.
pub(crate) struct WinObj {
    pub(crate) win: Win,
    pub(crate) errhandler: ErrhandlerCell,
    pub(crate) attrs: Attrs,
    /// `MPI_WIN_SIZE`'s value (an `MPI_Aint`).
    pub(crate) size: abi::Aint,
    /// `MPI_WIN_DISP_UNIT`'s (an `int`: cut to `INT_MAX` for a larger `_c` unit).
    pub(crate) disp_unit: c_int,
    /// `MPI_WIN_CREATE_FLAVOR`'s.
    pub(crate) flavor: c_int,
    /// `MPI_WIN_MODEL`'s.
    pub(crate) model: c_int,
    handle: OnceLock<Handle>,
}

impl WinObj {
    pub(crate) fn new(win: Win) -> WinObj {
        let local = win.local();
        WinObj {
            size: abi::Aint::try_from(local.size).unwrap_or(abi::Aint::MAX),
            disp_unit: c_int::try_from(local.disp_unit).unwrap_or(c_int::MAX),
            flavor: win.flavor() as c_int,
            model: MPI_WIN_UNIFIED,
            win,
            errhandler: ErrhandlerCell::new(),
            attrs: Attrs::new(),
            handle: OnceLock::new(),
        }
    }
}

impl HandlerOwner for WinObj {
    fn handle(&self) -> Handle {
        self.handle.get().copied().unwrap_or(abi::MPI_WIN_NULL)
    }

    fn errhandler(&self) -> &ErrhandlerCell {
        &self.errhandler
    }
}

/// Attaches the window whose handler applies to an error.
pub(crate) trait OnWin<T> {
    fn on_win(self, w: &Arc<WinObj>) -> Result<T, Fail>;
}

impl<T> OnWin<T> for Result<T, Error> {
    fn on_win(self, w: &Arc<WinObj>) -> Result<T, Fail> {
        self.map_err(|error| Fail { error, comm: Some(w.clone()) })
    }
}

impl State {
    /// The window of handle `h`: `MPI_ERR_WIN` for `MPI_WIN_NULL` and anything that is not a
    /// live window.
    pub(crate) fn win(&self, h: Handle) -> Result<Arc<WinObj>, Error> {
        match h {
            abi::MPI_WIN_NULL => Err(Error::win("null window (MPI_WIN_NULL)")),
            _ => self.wins.get(h).ok_or_else(|| Error::win(format!("invalid window handle {h:#x}"))),
        }
    }

    /// Stores a new window; its handle.
    pub(crate) fn add_win(&self, obj: WinObj) -> Result<Handle, Error> {
        let obj = Arc::new(obj);
        let h = self.wins.insert(obj.clone()).ok_or_else(|| Error::intern("too many live windows"))?;
        let _ = obj.handle.set(h);
        Ok(h)
    }

    /// Forgets window `h`.
    pub(crate) fn remove_win(&self, h: Handle) {
        let w = self.wins.remove(h);
        forget_recent();
        drop(w);
    }
}

/// Windows freed so far: a thread's [`Recent`] window is stale once this moved.
static FREES: AtomicU64 = AtomicU64::new(0);

/// The window this thread called last: its handle, [`FREES`] when it was looked up, and a
/// strong reference (from `Arc::into_raw`) that keeps it alive: a window freed meanwhile stays
/// valid until this thread's next window call finds the entry stale. No destructor, so the hot
/// calls pay one thread-local access; [`KEEPER`] releases the reference at thread exit.
struct Recent {
    handle: Cell<Handle>,
    frees: Cell<u64>,
    win: Cell<*const WinObj>,
    /// Set while a call runs on `win`: a nested lookup then leaves the entry alone.
    in_use: Cell<bool>,
}

thread_local! {
    static RECENT: Recent = const {
        Recent {
            handle: Cell::new(abi::MPI_WIN_NULL),
            frees: Cell::new(0),
            win: Cell::new(std::ptr::null()),
            in_use: Cell::new(false),
        }
    };
    /// Releases this thread's [`RECENT`] reference when the thread ends (touched on misses only).
    static KEEPER: Keeper = const { Keeper };
}

struct Keeper;

impl Drop for Keeper {
    fn drop(&mut self) {
        let _ = RECENT.try_with(Recent::release);
    }
}

impl Recent {
    /// The window if the entry names handle `h` and no window was freed since it was looked up.
    fn current(&self, h: Handle) -> Option<*const WinObj> {
        let w = self.win.get();
        (self.handle.get() == h && !w.is_null() && self.frees.get() == FREES.load(Acquire)).then_some(w)
    }

    /// Drops the reference, unless a call is using it.
    fn release(&self) {
        if self.in_use.get() {
            return;
        }
        let w = self.win.replace(std::ptr::null());
        self.handle.set(abi::MPI_WIN_NULL);
        if !w.is_null() {
            // SAFETY: `w` came from `Arc::into_raw` in `with_win` and is released only here,
            // once (the cell was nulled above).
            drop(unsafe { Arc::from_raw(w) });
        }
    }
}

/// Marks every thread's recent window stale (a window was freed, or all were), and releases
/// this thread's.
pub(crate) fn forget_recent() {
    FREES.fetch_add(1, Release);
    let _ = RECENT.try_with(Recent::release);
}

/// Clears [`Recent::in_use`] when the call ends, a panic included.
struct Done<'a>(&'a Recent);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.in_use.set(false);
    }
}

/// Runs the hot call `f` on the window of handle `h` when it is this thread's recent one, and
/// returns its answer; `false` otherwise (the general path then looks the window up, and makes
/// it the recent one).
///
/// Reaches [`RECENT`] through a pointer rather than inside `LocalKey::with`, which the compiler
/// does not inline around a hot call's body: the call's arguments then stay in registers instead
/// of being stored for a closure (put + flush inside lock_all: 266 → 214 instructions).
#[inline(always)]
pub(crate) fn hot(h: Handle, f: impl FnOnce(&Win) -> bool) -> bool {
    // SAFETY: `RECENT` has a constant initializer and no destructor, so its storage is valid
    // for the rest of this thread's life; `Recent` is not `Sync` (it holds `Cell`s), so the
    // reference cannot leave this thread.
    let r: &Recent = unsafe { &*RECENT.with(|r| r as *const Recent) };
    let Some(w) = r.current(h).filter(|_| !r.in_use.get()) else { return false };
    // SAFETY: the window outlives `f`: the entry holds a strong reference, and should a
    // callback run while `f` waits (a user operation in a background collective) replace the
    // entry, the handle table still holds one, as MPI forbids freeing a window while a call on
    // it runs. No `in_use` mark, then: a hot call costs one thread-local access and no store.
    f(unsafe { &(*w).win })
}

/// Runs `f` on the window of handle `h` (`MPI_ERR_WIN` if there is none), found through this
/// thread's recent window: the hot one-sided calls take no lock and no reference count.
pub(crate) fn with_win<R>(h: Handle, f: impl FnOnce(&Arc<WinObj>) -> Result<R, Fail>) -> Result<R, Fail> {
    RECENT.with(|r| {
        if r.in_use.get() {
            return f(&crate::state::state()?.win(h)?);
        }
        if r.current(h).is_none() {
            // Read before the lookup: a window freed meanwhile leaves the entry stale.
            let frees = FREES.load(Acquire);
            let w = crate::state::state()?.win(h)?;
            r.release();
            KEEPER.with(|_| {});
            r.win.set(Arc::into_raw(w));
            r.handle.set(h);
            r.frees.set(frees);
        }
        r.in_use.set(true);
        let _done = Done(r);
        // SAFETY: `win` holds a strong reference (from `Arc::into_raw`) that nothing releases
        // while `in_use` is set; the Arc is rebuilt without taking ownership.
        let w = std::mem::ManuallyDrop::new(unsafe { Arc::from_raw(r.win.get()) });
        f(&w)
    })
}
