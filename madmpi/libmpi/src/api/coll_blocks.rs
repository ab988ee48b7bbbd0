//! The checked buffers of block collectives (the gather family, the neighbourhood collectives):
//! `v` buffers (a count and a displacement per block, one datatype for all) and `w` buffers (a
//! datatype per block too). One checker, [`blocks`], serves both, generic over the datatype
//! argument ([`TypesArg`]: one handle, or an array of them), and one build function per
//! all-to-all serves `v` and `w` through the same trait.
//!
//! Check order (MPICH 4.0's): the counts (`MPI_ERR_COUNT` if negative or if they add up to more
//! than memory), the displacements, the datatypes, then the buffer (`MPI_ERR_BUFFER` for
//! `MPI_IN_PLACE` or null with data). Owns these checks; it must not plan a collective.

use super::coll::not_in_place;
use crate::check::{self, CInt};
use crate::comms::CommObj;
use crate::errors::{Fail, On};
use crate::state::State;
use madmpi::abi;
use madmpi::coll::neighbor::{self, Links};
use madmpi::coll::raw::{self, Planned, RawBuf, RawVBuf, RawWBuf};
use madmpi::comm::Comm;
use madmpi::datatype::Datatype;
use madmpi::error::{self, Error};
use std::ffi::c_void;
use std::sync::Arc;

/// A checked side of a collective.
pub(super) trait Side {
    /// Whether data moves through it (a send buffer aliasing it is then an error).
    fn moves(&self) -> bool;
}

impl Side for RawBuf {
    fn moves(&self) -> bool {
        self.count > 0
    }
}

/// A checked `v` or `w` buffer: one count and displacement per block, and its datatypes
/// (`Datatype` for a `v` buffer, `Vec<Datatype>` for a `w` one).
pub(super) struct Blocks<T> {
    base: *mut u8,
    counts: Vec<usize>,
    displs: Vec<isize>,
    types: T,
}

/// A checked `v` buffer.
pub(super) type VBuf = Blocks<Datatype>;

impl VBuf {
    pub(super) fn raw(&self) -> RawVBuf<'_> {
        RawVBuf { base: self.base, counts: &self.counts, displs: &self.displs, dtype: self.types.clone() }
    }
}

/// A checked `w` buffer.
pub(super) type WBuf = Blocks<Vec<Datatype>>;

impl WBuf {
    pub(super) fn raw(&self) -> RawWBuf<'_> {
        RawWBuf { base: self.base, counts: &self.counts, displs: &self.displs, dtypes: &self.types }
    }
}

impl<T> Side for Blocks<T> {
    fn moves(&self) -> bool {
        self.counts.iter().any(|&x| x > 0)
    }
}

/// The datatype argument of a block buffer: one handle (`v`) or an array of one per block (`w`).
pub(super) trait TypesArg: Copy {
    /// The checked (committed) datatypes.
    type Checked;

    /// The datatypes of `n` blocks, checked.
    ///
    /// # Safety
    /// An array argument, if non-null and aligned, holds `n` elements.
    unsafe fn check(self, st: &State, c: &Arc<CommObj>, n: usize) -> Result<Self::Checked, Fail>;

    /// `MPI_ERR_BUFFER` if `buf` is null and the blocks hold data at its start.
    fn check_buffer(buf: *const c_void, counts: &[usize], types: &Self::Checked) -> Result<(), Error>;

    /// The all-to-all of these buffers (`MPI_Alltoallv`, `MPI_Alltoallw`), planned.
    fn alltoall(
        comm: &Comm,
        send: Option<&Blocks<Self::Checked>>,
        recv: &Blocks<Self::Checked>,
    ) -> error::Result<Planned>;

    /// The neighbourhood all-to-all of these buffers, planned.
    fn neighbor_alltoall(
        comm: &Comm,
        links: &Links,
        send: &Blocks<Self::Checked>,
        recv: &Blocks<Self::Checked>,
    ) -> error::Result<Planned>;
}

impl TypesArg for abi::Datatype {
    type Checked = Datatype;

    unsafe fn check(self, st: &State, c: &Arc<CommObj>, _n: usize) -> Result<Datatype, Fail> {
        st.committed_datatype(self).on(c)
    }

    fn check_buffer(buf: *const c_void, counts: &[usize], ty: &Datatype) -> Result<(), Error> {
        check::buffer(buf, total(counts)?, ty)
    }

    fn alltoall(comm: &Comm, send: Option<&VBuf>, recv: &VBuf) -> error::Result<Planned> {
        raw::alltoallv(comm, send.map(VBuf::raw).as_ref(), &recv.raw())
    }

    fn neighbor_alltoall(comm: &Comm, links: &Links, send: &VBuf, recv: &VBuf) -> error::Result<Planned> {
        neighbor::neighbor_alltoallv(comm, links, &send.raw(), &recv.raw())
    }
}

impl TypesArg for *const abi::Datatype {
    type Checked = Vec<Datatype>;

    unsafe fn check(self, st: &State, c: &Arc<CommObj>, n: usize) -> Result<Vec<Datatype>, Fail> {
        // SAFETY: the array holds `n` elements (the caller's contract).
        let ts = unsafe { check::array_in(self, n, "the datatypes array") }.on(c)?;
        ts.iter().map(|&t| st.committed_datatype(t)).collect::<Result<Vec<_>, _>>().on(c)
    }

    fn check_buffer(buf: *const c_void, counts: &[usize], types: &Vec<Datatype>) -> Result<(), Error> {
        counts.iter().zip(types).try_for_each(|(k, t)| check::buffer(buf, *k as i64, t))
    }

    fn alltoall(comm: &Comm, send: Option<&WBuf>, recv: &WBuf) -> error::Result<Planned> {
        let send = send.map(|s| s.raw());
        raw::alltoallw(comm, send.as_ref(), &recv.raw())
    }

    fn neighbor_alltoall(comm: &Comm, links: &Links, send: &WBuf, recv: &WBuf) -> error::Result<Planned> {
        neighbor::neighbor_alltoallw(comm, links, &send.raw(), &recv.raw())
    }
}

/// How many blocks a collective's `v` or `w` buffer has on `c`: one per rank data goes to or
/// comes from (of the remote group on an intercommunicator).
pub(super) fn peers(c: &Arc<CommObj>) -> usize {
    c.comm.peer_size() as usize
}

/// The sum of `counts`; `MPI_ERR_COUNT` if it leaves the address space (large-count forms).
pub(super) fn total(counts: &[usize]) -> Result<i64, Error> {
    counts
        .iter()
        .try_fold(0i64, |sum, &k| sum.checked_add(i64::try_from(k).ok()?))
        .filter(|&t| isize::try_from(t).is_ok())
        .ok_or_else(|| Error::count("the counts add up to more than memory can hold"))
}

/// The block buffer `buf` of `n` blocks (`counts`, `displs` and `types`), checked (`what` names
/// the buffer).
///
/// # Safety
/// Non-null, aligned arrays hold `n` elements each.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn blocks<T: TypesArg>(
    st: &State,
    c: &Arc<CommObj>,
    buf: *const c_void,
    counts: *const impl CInt,
    displs: *const impl CInt,
    types: T,
    n: usize,
    what: &str,
) -> Result<Blocks<T::Checked>, Fail> {
    // SAFETY: `counts` holds `n` elements (the caller's contract).
    let cs = unsafe { check::array_in(counts, n, "the counts array") }.on(c)?;
    let counts =
        cs.iter().map(|&x| check::count(x).map(|v| v as usize)).collect::<Result<Vec<_>, _>>().on(c)?;
    total(&counts).on(c)?;
    // SAFETY: `displs` holds `n` elements (the caller's contract).
    let ds = unsafe { check::array_in(displs, n, "the displacements array") }.on(c)?;
    let displs = ds.iter().map(|&d| check::displacement(d)).collect::<Result<Vec<_>, _>>().on(c)?;
    // SAFETY: as the counts.
    let types = unsafe { types.check(st, c, n) }?;
    not_in_place(c, buf, what)?;
    T::check_buffer(buf, &counts, &types).on(c)?;
    Ok(Blocks { base: buf.cast_mut().cast(), counts, displs, types })
}
