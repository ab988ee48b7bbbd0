//! [`Window<T>`]: a window of elements of one type, for Rust programs (in the manner of rsmpi's
//! typed buffers): the displacement unit is the element's size, sizes count elements.
//!
//! A window made over the program's memory takes that memory (a `Vec<T>`) and gives it back
//! once freed ([`Window::into_memory`]). Borrowing it instead would be unsound: a window leaked
//! with `mem::forget` would end the borrow while the other members may still target the memory.
//! A leaked window leaks its vector instead, and a window whose free fails keeps it too.

use super::hints::WinHints;
use super::window::{Flavor, Win};
use crate::comm::Comm;
use crate::datatype::Equivalence;
use crate::error::{Error, Result};
use crate::info::Info;
use std::marker::PhantomData;

/// A window of `T`s.
///
/// Dropping it frees the window, which is collective: every member must drop (or free) its
/// window in the same order relative to their other collective calls on the communicator, or
/// the drop waits for the members that do not. An error of that free is logged; call
/// [`Window::free`] to see it.
#[derive(Debug)]
pub struct Window<T: Equivalence> {
    win: Option<Win>,
    /// The program's memory of an `MPI_Win_create` window.
    memory: Option<Vec<T>>,
    _elements: PhantomData<T>,
}

fn bytes<T>(len: usize) -> Result<usize> {
    len.checked_mul(size_of::<T>()).ok_or_else(|| Error::arg(format!("{len} elements overflow memory")))
}

impl<T: Equivalence> Window<T> {
    fn wrap(win: Win, memory: Option<Vec<T>>) -> Self {
        Window { win: Some(win), memory, _elements: PhantomData }
    }

    /// `MPI_Win_create` (collective): exposes `memory`, which the window keeps until freed.
    pub fn create(mut memory: Vec<T>, info: &Info, comm: &Comm) -> Result<Self> {
        let size = size_of_val(memory.as_slice());
        let base = memory.as_mut_ptr().cast();
        // SAFETY: the vector's buffer is owned by the window from now on and never reallocated;
        // it is given back only after the collective free, or leaked.
        let win = unsafe { Win::create(base, size, size_of::<T>().max(1), info, comm) }?;
        Ok(Self::wrap(win, Some(memory)))
    }

    /// `MPI_Win_allocate` (collective): `len` elements for this member.
    pub fn allocate(len: usize, info: &Info, comm: &Comm) -> Result<Self> {
        Ok(Self::wrap(Win::allocate(bytes::<T>(len)?, size_of::<T>().max(1), info, comm)?, None))
    }

    /// `MPI_Win_allocate_shared` (collective, one node): `len` elements for this member in the
    /// segment every member maps.
    pub fn allocate_shared(len: usize, info: &Info, comm: &Comm) -> Result<Self> {
        Ok(Self::wrap(Win::allocate_shared(bytes::<T>(len)?, size_of::<T>().max(1), info, comm)?, None))
    }

    /// The underlying window.
    pub fn win(&self) -> &Win {
        self.win.as_ref().expect("present until freed")
    }

    /// `MPI_Win_free` (collective), reporting its error.
    pub fn free(self) -> Result<()> {
        self.into_memory().map(drop)
    }

    /// `MPI_Win_free` (collective); the memory of a window made by [`Window::create`] comes
    /// back (`None` for the others). On error the memory stays exposed, so it is leaked.
    pub fn into_memory(mut self) -> Result<Option<Vec<T>>> {
        let win = self.win.take().expect("present until freed");
        match win.free() {
            Ok(()) => Ok(self.memory.take()),
            Err(e) => {
                std::mem::forget(self.memory.take());
                Err(e)
            }
        }
    }

    /// `MPI_WIN_CREATE_FLAVOR`.
    pub fn flavor(&self) -> Flavor {
        self.win().flavor()
    }

    /// This member's part: its first element and its length in elements (`MPI_WIN_BASE`,
    /// `MPI_WIN_SIZE` / `MPI_WIN_DISP_UNIT`). Accessing it races with other members'
    /// operations unless a synchronization orders them.
    pub fn local_part(&self) -> (*mut T, usize) {
        let e = self.win().local();
        (std::ptr::with_exposed_provenance_mut(e.base), e.size / size_of::<T>().max(1))
    }

    /// `MPI_Win_shared_query`: member `rank`'s part in this process's mapping, its first
    /// element and length in elements (`MPI_ERR_RMA_FLAVOR` unless the window is shared).
    pub fn shared_part(&self, rank: u32) -> Result<(*mut T, usize)> {
        let (ptr, size, _) = self.win().shared_query(Some(rank))?;
        Ok((ptr.cast(), size / size_of::<T>().max(1)))
    }

    /// The hints the window honours.
    pub fn hints(&self) -> WinHints {
        self.win().hints()
    }
}

impl<T: Equivalence> Drop for Window<T> {
    fn drop(&mut self) {
        let Some(win) = self.win.take() else { return };
        if let Err(e) = win.free() {
            log::warn!("freeing a window on drop: {e}");
            std::mem::forget(self.memory.take());
        }
    }
}
