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
use std::ffi::c_int;
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

crate::recent::kind!(WINS: WinObj, abi::MPI_WIN_NULL);

/// Marks every thread's recent window stale (a window was freed, or all were), and releases
/// this thread's.
pub(crate) fn forget_recent() {
    WINS.forget();
}

/// Runs the hot call `f` on the window of handle `h` when it is this thread's recent one, and
/// returns its answer; `false` otherwise (the general path then looks the window up with
/// [`with_win`], which makes it the recent one).
#[inline(always)]
pub(crate) fn hot(h: Handle, f: impl FnOnce(&Win) -> bool) -> bool {
    WINS.hot(h, |w| f(&w.win)).unwrap_or(false)
}

/// Runs `f` on the window of handle `h` (`MPI_ERR_WIN` if there is none), found through this
/// thread's recent window: the hot one-sided calls take no lock and no reference count.
pub(crate) fn with_win<R>(h: Handle, f: impl FnOnce(&Arc<WinObj>) -> Result<R, Fail>) -> Result<R, Fail> {
    WINS.with(h, || Ok(crate::state::state()?.win(h)?), f)
}
