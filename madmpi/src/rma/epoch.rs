//! Typed one-sided epochs for Rust programs: [`Window::lock`], [`Window::lock_all`] and
//! [`Window::fence`] open an epoch whose guard carries the operations and closes it on drop
//! (unlock, unlock_all, a closing fence), or explicitly with [`Epoch::end`] to see its error.
//!
//! Origin buffers: puts and accumulates copy the data at the call; gets, fetches and
//! compare-and-swaps wait for their answer before they return, so no buffer is written after
//! its borrow ends (even if a guard is leaked with `mem::forget`). Displacements and lengths
//! count elements of `T`.

use super::lock::LockKind;
use super::ops::{At, Buf};
use super::sync::mode;
use super::typed::Window;
use crate::datatype::{Datatype, Equivalence};
use crate::error::Result;
use crate::op::Op;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Lock(u32),
    LockAll,
    Fence,
}

/// An open epoch of a [`Window`].
#[must_use = "the epoch ends when the guard is dropped"]
pub struct Epoch<'w, T: Equivalence> {
    window: &'w Window<T>,
    kind: Kind,
    open: bool,
}

fn ty<T: Equivalence>() -> Datatype {
    Datatype::predefined(T::DATATYPE)
}

impl<T: Equivalence> Window<T> {
    /// `MPI_Win_lock` on `rank`: a passive-target epoch, unlocked when the guard goes.
    pub fn lock(&self, kind: LockKind, rank: u32) -> Result<Epoch<'_, T>> {
        self.win().lock(kind, rank, 0)?;
        Ok(Epoch { window: self, kind: Kind::Lock(rank), open: true })
    }

    /// `MPI_Win_lock_all`: a shared lock on every rank, unlocked when the guard goes.
    pub fn lock_all(&self) -> Result<Epoch<'_, T>> {
        self.win().lock_all(0)?;
        Ok(Epoch { window: self, kind: Kind::LockAll, open: true })
    }

    /// `MPI_Win_fence` (collective): an active-target epoch, closed by a fence
    /// (`MPI_MODE_NOSUCCEED`) when the guard goes.
    pub fn fence(&self) -> Result<Epoch<'_, T>> {
        self.win().fence(mode::NOPRECEDE)?;
        Ok(Epoch { window: self, kind: Kind::Fence, open: true })
    }
}

impl<T: Equivalence> Epoch<'_, T> {
    /// `MPI_Put` of `data` to elements `disp..` of `rank` (copied at once).
    pub fn put(&self, rank: u32, disp: usize, data: &[T]) -> Result<()> {
        let t = ty::<T>();
        let at = At { rank, disp: disp as u64, count: data.len() as i64, ty: &t };
        // SAFETY: `data` is a live slice of `T` (one predefined element each), copied before
        // `rput` returns.
        unsafe {
            self.window.win().rput(Buf { buf: data.as_ptr().cast(), count: data.len() as i64, ty: &t }, at)
        }
    }

    /// `MPI_Accumulate` of `data` into elements `disp..` of `rank` with `op` (copied at once).
    pub fn accumulate(&self, rank: u32, disp: usize, data: &[T], op: &Op) -> Result<()> {
        let t = ty::<T>();
        let at = At { rank, disp: disp as u64, count: data.len() as i64, ty: &t };
        // SAFETY: as for put.
        unsafe {
            self.window.win().raccumulate(
                Buf { buf: data.as_ptr().cast(), count: data.len() as i64, ty: &t },
                at,
                op,
            )
        }
    }

    /// `MPI_Get` of elements `disp..` of `rank` into `buf`, complete when it returns.
    pub fn get(&self, rank: u32, disp: usize, buf: &mut [T]) -> Result<()> {
        let t = ty::<T>();
        let at = At { rank, disp: disp as u64, count: buf.len() as i64, ty: &t };
        let into = Buf { buf: buf.as_mut_ptr().cast(), count: buf.len() as i64, ty: &t };
        // SAFETY: `buf` is borrowed mutably for this call, which waits for the answer before
        // it returns (waiting inside the call keeps this sound even if the guard is leaked).
        let slot = unsafe { self.window.win().get_slot(into, at, true) }?;
        slot.wait(&self.window.win().core.nm)
    }

    /// `MPI_Fetch_and_op` on element `disp` of `rank`, completed at once: the old value.
    pub fn fetch_and_op(&self, rank: u32, disp: usize, value: T, op: &Op) -> Result<T> {
        let t = ty::<T>();
        let mut old = value;
        let at = At { rank, disp: disp as u64, count: 1, ty: &t };
        let origin = Buf { buf: (&value as *const T).cast(), count: 1, ty: &t };
        let result = Buf { buf: (&mut old as *mut T).cast(), count: 1, ty: &t };
        // SAFETY: `value` is read during the call; `old` is written by the answer, which the
        // slot's wait below completes before `old` is read or goes out of scope.
        let slot = unsafe { self.window.win().get_accumulate_slot(origin, result, at, op, true) }?;
        slot.wait(&self.window.win().core.nm)?;
        Ok(old)
    }

    /// `MPI_Compare_and_swap` on element `disp` of `rank`, completed at once: the old value
    /// (`new` was stored if it equals `compare`).
    pub fn compare_and_swap(&self, rank: u32, disp: usize, new: T, compare: T) -> Result<T> {
        let t = ty::<T>();
        let mut old = new;
        // SAFETY: as for fetch_and_op.
        let slot = unsafe {
            self.window.win().compare_and_swap_slot(
                (&new as *const T).cast(),
                (&compare as *const T).cast(),
                (&mut old as *mut T).cast(),
                &t,
                rank,
                disp as u64,
                true,
            )
        }?;
        slot.wait(&self.window.win().core.nm)?;
        Ok(old)
    }

    /// `MPI_Win_flush` (a lock epoch: its rank; lock_all: every rank).
    pub fn flush(&self) -> Result<()> {
        match self.kind {
            Kind::Lock(r) => self.window.win().flush(Some(r)),
            Kind::LockAll => self.window.win().flush(None),
            Kind::Fence => Ok(()),
        }
    }

    /// Ends the epoch: its operations are complete, the gets' buffers filled.
    pub fn end(mut self) -> Result<()> {
        self.close()
    }

    fn close(&mut self) -> Result<()> {
        if !std::mem::replace(&mut self.open, false) {
            return Ok(());
        }
        let w = self.window.win();
        match self.kind {
            Kind::Lock(r) => w.unlock(r),
            Kind::LockAll => w.unlock_all(),
            Kind::Fence => w.fence(mode::NOSUCCEED),
        }
    }
}

impl<T: Equivalence> Drop for Epoch<'_, T> {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            log::warn!("closing a one-sided epoch on drop: {e}");
        }
    }
}
