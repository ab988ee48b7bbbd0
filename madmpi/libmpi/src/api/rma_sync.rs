//! One-sided synchronization (MPI 4.0 §12.5): `MPI_Win_fence`, `MPI_Win_post`/`start`/
//! `complete`/`wait`/`test`, `MPI_Win_lock`/`unlock`, `MPI_Win_lock_all`/`unlock_all`, the
//! flushes and `MPI_Win_sync`. Errors go to the window's handler (`MPI_ERR_RMA_SYNC` for a
//! call out of sequence). `MPI_PROC_NULL` as the rank of a lock, unlock or flush does nothing.
//!
//! Owns the C signatures; the epochs are `madmpi::rma`'s.

use crate::check;
use crate::export::export;
use crate::state::state;
use crate::wins::{OnWin, WinObj, hot, with_win};
use madmpi::abi;
use madmpi::error::Error;
use madmpi::rma::LockKind;
use std::ffi::c_int;
use std::sync::Arc;

/// `MPI_LOCK_EXCLUSIVE` and `MPI_LOCK_SHARED` (MPICH's values).
const MPI_LOCK_EXCLUSIVE: c_int = 234;
const MPI_LOCK_SHARED: c_int = 235;

/// A rank of the window (`None`: `MPI_PROC_NULL`).
fn rank(w: &Arc<WinObj>, r: c_int) -> Result<Option<u32>, crate::errors::Fail> {
    if r == abi::MPI_PROC_NULL {
        return Ok(None);
    }
    let n = w.win.group().size();
    u32::try_from(r)
        .ok()
        .filter(|&r| r < n)
        .map(Some)
        .ok_or_else(|| Error::rank(format!("rank {r} is not in the window's {n} ranks")))
        .on_win(w)
}

export! {
    /// Collective: completes the operations of the epoch that ends, opens the next one
    /// (unless `MPI_MODE_NOSUCCEED`).
    fn MPI_Win_fence / PMPI_Win_fence(assert: c_int, win: abi::Win) {
        let w = &state()?.win(win)?;
        w.win.fence(assert).on_win(w)
    }

    /// Opens an exposure epoch to the origins of `group`.
    fn MPI_Win_post / PMPI_Win_post(group: abi::Group, assert: c_int, win: abi::Win) {
        let st = state()?;
        let w = &st.win(win)?;
        let g = st.group(group).on_win(w)?;
        w.win.post(&g, assert).on_win(w)
    }

    /// Opens an access epoch to the targets of `group` (once each posted).
    fn MPI_Win_start / PMPI_Win_start(group: abi::Group, assert: c_int, win: abi::Win) {
        let st = state()?;
        let w = &st.win(win)?;
        let g = st.group(group).on_win(w)?;
        w.win.start(&g, assert).on_win(w)
    }

    /// Ends the access epoch of `MPI_Win_start`.
    fn MPI_Win_complete / PMPI_Win_complete(win: abi::Win) {
        let w = &state()?.win(win)?;
        w.win.complete().on_win(w)
    }

    /// Ends the exposure epoch of `MPI_Win_post` once every origin completed.
    fn MPI_Win_wait / PMPI_Win_wait(win: abi::Win) {
        let w = &state()?.win(win)?;
        w.win.wait().on_win(w)
    }

    /// `MPI_Win_wait` if every origin completed (`*flag` true), else nothing.
    fn MPI_Win_test / PMPI_Win_test(win: abi::Win, flag: *mut c_int) {
        let w = &state()?.win(win)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(flag, "flag") }.on_win(w)?;
        *out = c_int::from(w.win.test().on_win(w)?);
        Ok(())
    }

    /// Starts a passive-target epoch on `rank` (shared or exclusive lock).
    fn MPI_Win_lock / PMPI_Win_lock(lock_type: c_int, rank: c_int, assert: c_int, win: abi::Win) {
        let exclusive = lock_type == MPI_LOCK_EXCLUSIVE;
        if (exclusive || lock_type == MPI_LOCK_SHARED)
            && rank >= 0
            && hot(win, |w| w.lock_hot(exclusive, rank as u32, assert))
        {
            return Ok(());
        }
        with_win(win, |w| {
            let kind = match lock_type {
                MPI_LOCK_EXCLUSIVE => LockKind::Exclusive,
                MPI_LOCK_SHARED => LockKind::Shared,
                t => return Err(Error::locktype(format!("lock type {t} is neither MPI_LOCK_SHARED nor MPI_LOCK_EXCLUSIVE"))).on_win(w),
            };
            let Some(r) = self::rank(w, rank)? else { return Ok(()) };
            w.win.lock(kind, r, assert).on_win(w)
        })
    }

    /// Ends the passive-target epoch on `rank`: its operations are complete there.
    fn MPI_Win_unlock / PMPI_Win_unlock(rank: c_int, win: abi::Win) {
        if rank >= 0 && hot(win, |w| w.unlock_hot(rank as u32)) {
            return Ok(());
        }
        with_win(win, |w| {
            let Some(r) = self::rank(w, rank)? else { return Ok(()) };
            w.win.unlock(r).on_win(w)
        })
    }

    /// A shared lock on every rank.
    fn MPI_Win_lock_all / PMPI_Win_lock_all(assert: c_int, win: abi::Win) {
        with_win(win, |w| {
            w.win.lock_all(assert).on_win(w)
        })
    }

    /// Ends `MPI_Win_lock_all`'s epoch.
    fn MPI_Win_unlock_all / PMPI_Win_unlock_all(win: abi::Win) {
        with_win(win, |w| {
            w.win.unlock_all().on_win(w)
        })
    }

    /// The operations to `rank` are complete there.
    fn MPI_Win_flush / PMPI_Win_flush(rank: c_int, win: abi::Win) {
        if rank >= 0 && hot(win, |w| w.flush_hot(rank as u32)) {
            return Ok(());
        }
        with_win(win, |w| {
            let Some(r) = self::rank(w, rank)? else { return Ok(()) };
            w.win.flush(Some(r)).on_win(w)
        })
    }

    /// The operations to every rank are complete there.
    fn MPI_Win_flush_all / PMPI_Win_flush_all(win: abi::Win) {
        with_win(win, |w| {
            w.win.flush(None).on_win(w)
        })
    }

    /// The origin buffers of the operations to `rank` may be reused.
    fn MPI_Win_flush_local / PMPI_Win_flush_local(rank: c_int, win: abi::Win) {
        if rank >= 0 && hot(win, |w| w.flush_hot(rank as u32)) {
            return Ok(());
        }
        with_win(win, |w| {
            let Some(r) = self::rank(w, rank)? else { return Ok(()) };
            w.win.flush_local(Some(r)).on_win(w)
        })
    }

    /// The origin buffers of every operation may be reused.
    fn MPI_Win_flush_local_all / PMPI_Win_flush_local_all(win: abi::Win) {
        with_win(win, |w| {
            w.win.flush_local(None).on_win(w)
        })
    }

    /// Synchronizes the private and public copies of the window (one copy here: a fence).
    fn MPI_Win_sync / PMPI_Win_sync(win: abi::Win) {
        with_win(win, |w| {
            w.win.sync().on_win(w)
        })
    }
}
