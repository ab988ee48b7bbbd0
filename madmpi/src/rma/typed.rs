//! [`Window<T>`]: a window of elements of one type, for Rust programs (in the manner of rsmpi's
//! typed buffers): the displacement unit is the element's size, sizes count elements, and the
//! memory a window was created over stays borrowed until it is freed.

use super::hints::WinHints;
use super::window::{Flavor, Win};
use crate::comm::Comm;
use crate::datatype::Equivalence;
use crate::error::{Error, Result};
use crate::info::Info;
use std::marker::PhantomData;

/// A window of `T`s exposing memory that lives at least for `'a`.
///
/// Dropping it frees the window, which is collective: every member must drop (or
/// [`Window::free`]) its window in the same order relative to their other collective calls on
/// the communicator, or the drop waits for the members that do not. An error of that free is
/// logged; call [`Window::free`] to see it.
#[derive(Debug)]
pub struct Window<'a, T: Equivalence> {
    win: Option<Win>,
    _memory: PhantomData<&'a mut [T]>,
}

fn bytes<T>(len: usize) -> Result<usize> {
    len.checked_mul(size_of::<T>()).ok_or_else(|| Error::arg(format!("{len} elements overflow memory")))
}

impl<'a, T: Equivalence> Window<'a, T> {
    fn wrap(win: Win) -> Self {
        Window { win: Some(win), _memory: PhantomData }
    }

    /// `MPI_Win_create` (collective): exposes `memory`, borrowed until the window is freed.
    pub fn create(memory: &'a mut [T], info: &Info, comm: &Comm) -> Result<Self> {
        let size = size_of_val(memory);
        // SAFETY: `memory` is exclusively borrowed for 'a, which outlives the window.
        let win =
            unsafe { Win::create(memory.as_mut_ptr().cast(), size, size_of::<T>().max(1), info, comm) }?;
        Ok(Self::wrap(win))
    }

    /// The underlying window.
    pub fn win(&self) -> &Win {
        self.win.as_ref().expect("present until freed")
    }

    /// `MPI_Win_free` (collective), reporting its error.
    pub fn free(mut self) -> Result<()> {
        self.win.take().expect("present until freed").free()
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

    /// The hints the window honours.
    pub fn hints(&self) -> WinHints {
        self.win().hints()
    }
}

impl<T: Equivalence> Window<'static, T> {
    /// `MPI_Win_allocate` (collective): `len` elements for this member.
    pub fn allocate(len: usize, info: &Info, comm: &Comm) -> Result<Self> {
        Ok(Self::wrap(Win::allocate(bytes::<T>(len)?, size_of::<T>().max(1), info, comm)?))
    }

    /// `MPI_Win_allocate_shared` (collective, one node): `len` elements for this member in the
    /// segment every member maps.
    pub fn allocate_shared(len: usize, info: &Info, comm: &Comm) -> Result<Self> {
        Ok(Self::wrap(Win::allocate_shared(bytes::<T>(len)?, size_of::<T>().max(1), info, comm)?))
    }

    /// `MPI_Win_shared_query`: member `rank`'s part in this process's mapping, its first
    /// element and length in elements.
    pub fn shared_part(&self, rank: u32) -> Result<(*mut T, usize)> {
        let (ptr, size, _) = self.win().shared_query(Some(rank))?;
        Ok((ptr.cast(), size / size_of::<T>().max(1)))
    }
}

impl<T: Equivalence> Drop for Window<'_, T> {
    fn drop(&mut self) {
        if let Some(win) = self.win.take()
            && let Err(e) = win.free()
        {
            log::warn!("freeing a window on drop: {e}");
        }
    }
}
