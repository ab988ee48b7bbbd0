//! The shared file pointer: one integer (etypes of the view) in a one-sided window on the file's
//! first process, taken with atomic fetch-and-add (`MPI_File_*_shared`: whoever comes first
//! gets the lower offsets) or by rank order (`_ordered`: a prefix sum, then one update). The
//! individual pointers are the file state's (`open`).
//!
//! The window is the file's own, over its communicator; `MPI_File_close` frees it (so that
//! whichever thread drops the file's last reference afterwards has nothing collective to do).

use super::view::Whence;
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::info::Info;
use crate::op::{Builtin, Op};
use crate::rma::{LockKind, Window};
use std::sync::{Mutex, PoisonError};

pub(crate) struct SharedPointer {
    win: Mutex<Option<Window<i64>>>,
}

impl SharedPointer {
    /// Collective: the window, the pointer at 0.
    pub(super) fn new(comm: &Comm) -> Result<SharedPointer> {
        let win = Window::allocate(usize::from(comm.rank() == 0), &Info::new(), comm)?;
        let p = SharedPointer { win: Mutex::new(Some(win)) };
        if comm.rank() == 0 {
            p.store(0)?;
        }
        comm.barrier()?;
        Ok(p)
    }

    fn rmw(&self, value: i64, op: Builtin) -> Result<i64> {
        let win = self.win.lock().unwrap_or_else(PoisonError::into_inner);
        let win = win.as_ref().ok_or_else(|| Error::file("the file is closed"))?;
        let epoch = win.lock(LockKind::Shared, 0)?;
        epoch.fetch_and_op(0, 0, value, &Op::builtin(op))
    }

    /// Collective: frees the window (at close).
    pub(super) fn free(&self) -> Result<()> {
        let win = self.win.lock().unwrap_or_else(PoisonError::into_inner).take();
        win.map_or(Ok(()), Window::free)
    }

    fn store(&self, value: i64) -> Result<()> {
        self.rmw(value, Builtin::Replace).map(drop)
    }

    /// Takes `n` etypes: where they start.
    pub(super) fn fetch_add(&self, n: i64) -> Result<i64> {
        self.rmw(n, Builtin::Sum)
    }

    /// `MPI_File_get_position_shared`.
    pub(super) fn get(&self) -> Result<i64> {
        self.rmw(0, Builtin::NoOp)
    }

    /// Collective: back to 0 (a new view).
    pub(super) fn reset(&self, comm: &Comm) -> Result<()> {
        self.set_initial(comm, 0)
    }

    /// Collective: the pointer at `at`, once every process's earlier accesses took theirs.
    pub(super) fn set_initial(&self, comm: &Comm, at: i64) -> Result<()> {
        comm.barrier()?;
        if comm.rank() == 0 {
            self.store(at)?;
        }
        comm.barrier()
    }

    /// Collective `MPI_File_seek_shared`; `end` is the end of the file in etypes.
    pub(super) fn seek(&self, comm: &Comm, offset: i64, whence: Whence, end: i64) -> Result<()> {
        comm.barrier()?;
        // The first process moves the pointer; every process hears how it went.
        let r = if comm.rank() == 0 { self.move_to(offset, whence, end) } else { Ok(()) };
        super::open::agree(comm, r)
    }

    fn move_to(&self, offset: i64, whence: Whence, end: i64) -> Result<()> {
        let base = match whence {
            Whence::Set => 0,
            Whence::Cur => self.get()?,
            Whence::End => end,
        };
        match base.checked_add(offset).filter(|&n| n >= 0) {
            Some(n) => self.store(n),
            None => Err(Error::arg(format!("seeking the shared pointer to a negative offset ({offset})"))),
        }
    }

    /// Collective `_ordered` access of `n` etypes by this process: where its part starts (after
    /// the parts of the lower ranks); the pointer moves past every part.
    pub(super) fn ordered(&self, comm: &Comm, n: i64) -> Result<i64> {
        let mut all = vec![0i64; comm.size() as usize];
        comm.allgather(&[n], &mut all)?;
        let before: i64 = all[..comm.rank() as usize].iter().sum();
        let total: i64 = all.iter().sum();
        let mut base = [0i64];
        if comm.rank() == 0 {
            base[0] = self.fetch_add(total)?;
        }
        comm.bcast(&mut base, 0)?;
        Ok(base[0] + before)
    }
}
