//! Collective operations of the gather family: `MPI_Gather`, `MPI_Scatter`, `MPI_Allgather`,
//! `MPI_Alltoall`, their `v` forms, `MPI_Alltoallw` and their nonblocking forms, over
//! `madmpi::coll::raw` (derived datatypes are packed and unpacked by the schedule itself, as in
//! [`super::coll`]).
//!
//! Checks as in [`super::coll`] (MPICH 4.0's order: root, the send side, the receive side;
//! every error after the communicator goes to its handler). Arguments significant only at the
//! root are not looked at elsewhere. `MPI_IN_PLACE` (MPI 4.0): gather(v) `sendbuf` at the root;
//! scatter(v) `recvbuf` at the root; allgather(v) and alltoall(v, w) `sendbuf` on every rank;
//! anywhere else it is `MPI_ERR_BUFFER`, as are a null buffer with data and a send buffer equal
//! to the receive buffer. `v` count and displacement arrays: null `MPI_ERR_ARG`, a negative
//! count `MPI_ERR_COUNT`.
//!
//! Layout: one checker per kind of buffer (`plain`, `vbuffer`, `wbuffer`); one checker per
//! shape of collective (`gather_args`, `scatter_args`, `everywhere_args`), which decides which
//! sides this rank looks at and in which order, and returns them checked; then per collective
//! one build function (that checker given the buffer checkers of its sides, then the `raw`
//! plan), which one `family!` entry makes the blocking, nonblocking and persistent C
//! functions, in `int` and `_c` forms.

use super::coll::{buffer, count_type, in_place, not_aliased, not_in_place, root};
use super::family::family;
use crate::check::{self, CInt};
use crate::comms::CommObj;
use crate::errors::{Fail, On};
use crate::state::State;
use madmpi::abi;
use madmpi::coll::raw::{self, RawBuf, RawVBuf, RawWBuf};
use madmpi::datatype::Datatype;
use madmpi::error::Error;
use madmpi::operation::Operation;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// No `v` count arrays (a gather or scatter, not its `v` form, on an intercommunicator).
const NO_V: Option<(*const c_int, *const c_int)> = None;

/// What the error messages call the send buffer.
const SEND: &str = "send buffer";
/// What the error messages call the receive buffer.
const RECV: &str = "receive buffer";

/// A checked side of a collective.
trait Side {
    /// Whether data moves through it (a send buffer aliasing it is then an error).
    fn moves(&self) -> bool;
}

impl Side for RawBuf {
    fn moves(&self) -> bool {
        self.count > 0
    }
}

/// A checked `v` buffer: one count and displacement per rank.
pub(super) struct VBuf {
    base: *mut u8,
    counts: Vec<usize>,
    displs: Vec<isize>,
    ty: Datatype,
}

impl VBuf {
    pub(super) fn raw(&self) -> RawVBuf<'_> {
        RawVBuf { base: self.base, counts: &self.counts, displs: &self.displs, dtype: self.ty.clone() }
    }
}

impl Side for VBuf {
    fn moves(&self) -> bool {
        self.counts.iter().any(|&x| x > 0)
    }
}

/// A checked `w` buffer: one count, byte displacement and datatype per rank.
pub(super) struct WBuf {
    base: *mut u8,
    counts: Vec<usize>,
    displs: Vec<isize>,
    types: Vec<Datatype>,
}

impl WBuf {
    pub(super) fn raw(&self) -> RawWBuf<'_> {
        RawWBuf { base: self.base, counts: &self.counts, displs: &self.displs, dtypes: &self.types }
    }
}

impl Side for WBuf {
    fn moves(&self) -> bool {
        self.counts.iter().any(|&x| x > 0)
    }
}

/// `count` elements of `datatype` at `buf`, checked (count, datatype, buffer).
pub(super) fn plain(
    st: &State,
    c: &Arc<CommObj>,
    buf: *const c_void,
    count: impl CInt,
    datatype: abi::Datatype,
    what: &str,
) -> Result<RawBuf, Fail> {
    let (n, ty) = count_type(st, c, count, datatype)?;
    buffer(c, buf, n, &ty, what)
}

/// The `n` `counts` (each `MPI_ERR_COUNT` if negative, and their sum if it leaves the address
/// space) and `displs` of a `v` or `w` buffer, checked in that order.
///
/// # Safety
/// Non-null, aligned `counts` and `displs` hold `n` elements.
unsafe fn counts_displs(
    c: &Arc<CommObj>,
    counts: *const impl CInt,
    displs: *const impl CInt,
    n: usize,
) -> Result<(Vec<usize>, Vec<isize>), Fail> {
    // SAFETY: `counts` holds `n` elements (the caller's contract).
    let cs = unsafe { check::array_in(counts, n, "the counts array") }.on(c)?;
    let counts =
        cs.iter().map(|&x| check::count(x).map(|v| v as usize)).collect::<Result<Vec<_>, _>>().on(c)?;
    total(&counts).on(c)?;
    // SAFETY: `displs` holds `n` elements (the caller's contract).
    let ds = unsafe { check::array_in(displs, n, "the displacements array") }.on(c)?;
    let displs = ds.iter().map(|&d| check::displacement(d)).collect::<Result<Vec<_>, _>>().on(c)?;
    Ok((counts, displs))
}

/// The sum of `counts`; `MPI_ERR_COUNT` if it leaves the address space (large-count forms).
pub(super) fn total(counts: &[usize]) -> Result<i64, Error> {
    counts
        .iter()
        .try_fold(0i64, |sum, &k| sum.checked_add(i64::try_from(k).ok()?))
        .filter(|&t| isize::try_from(t).is_ok())
        .ok_or_else(|| Error::count("the counts add up to more than memory can hold"))
}

/// The `v` buffer `buf` with `counts` and `displs` (one per rank data goes to or comes from: of
/// the remote group on an intercommunicator) of `datatype`, checked (`what` names the buffer).
///
/// # Safety
/// Non-null, aligned `counts` and `displs` hold one element per such rank.
pub(super) unsafe fn vbuffer(
    st: &State,
    c: &Arc<CommObj>,
    buf: *const c_void,
    counts: *const impl CInt,
    displs: *const impl CInt,
    datatype: abi::Datatype,
    what: &str,
) -> Result<VBuf, Fail> {
    let n = c.comm.peer_size() as usize;
    // SAFETY: the arrays hold one element per such rank (the caller's contract).
    unsafe { vbuffer_of(st, c, buf, counts, displs, datatype, n, what) }
}

/// The `v` buffer `buf` of `n` blocks (`counts` and `displs`) of `datatype`, checked.
///
/// # Safety
/// Non-null, aligned `counts` and `displs` hold `n` elements.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn vbuffer_of(
    st: &State,
    c: &Arc<CommObj>,
    buf: *const c_void,
    counts: *const impl CInt,
    displs: *const impl CInt,
    datatype: abi::Datatype,
    n: usize,
    what: &str,
) -> Result<VBuf, Fail> {
    // SAFETY: both arrays hold `n` elements (the caller's contract).
    let (counts, displs) = unsafe { counts_displs(c, counts, displs, n) }?;
    let ty = st.committed_datatype(datatype).on(c)?;
    not_in_place(c, buf, what)?;
    let total = total(&counts).on(c)?;
    check::buffer(buf, total, &ty).on(c)?;
    Ok(VBuf { base: buf.cast_mut().cast(), counts, displs, ty })
}

/// The `w` buffer `buf` with `counts`, byte `displs` and `types` (one each per rank data goes to
/// or comes from), checked.
///
/// # Safety
/// Non-null, aligned arrays hold one element per such rank.
unsafe fn wbuffer(
    st: &State,
    c: &Arc<CommObj>,
    buf: *const c_void,
    counts: *const impl CInt,
    displs: *const impl CInt,
    types: *const abi::Datatype,
    what: &str,
) -> Result<WBuf, Fail> {
    let n = c.comm.peer_size() as usize;
    // SAFETY: the arrays hold one element per such rank (the caller's contract).
    unsafe { wbuffer_of(st, c, buf, counts, displs, types, n, what) }
}

/// The `w` buffer `buf` of `n` blocks (`counts`, byte `displs` and `types`), checked.
///
/// # Safety
/// Non-null, aligned arrays hold `n` elements each.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn wbuffer_of(
    st: &State,
    c: &Arc<CommObj>,
    buf: *const c_void,
    counts: *const impl CInt,
    displs: *const impl CInt,
    types: *const abi::Datatype,
    n: usize,
    what: &str,
) -> Result<WBuf, Fail> {
    // SAFETY: the arrays hold `n` elements (the caller's contract).
    let (counts, displs) = unsafe { counts_displs(c, counts, displs, n) }?;
    // SAFETY: `types` holds `n` elements (the caller's contract).
    let ts = unsafe { check::array_in(types, n, "the datatypes array") }.on(c)?;
    let types = ts.iter().map(|&t| st.committed_datatype(t)).collect::<Result<Vec<_>, _>>().on(c)?;
    not_in_place(c, buf, what)?;
    for (k, t) in counts.iter().zip(&types) {
        check::buffer(buf, *k as i64, t).on(c)?;
    }
    Ok(WBuf { base: buf.cast_mut().cast(), counts, displs, types })
}

/// The checked sides of a rooted collective, each `None` where it is not significant (or is
/// `MPI_IN_PLACE`).
struct Rooted<S, R> {
    root: u32,
    send: Option<S>,
    recv: Option<R>,
}

/// The arguments of a gather: the root; the send side (`send`), except at the root with
/// `MPI_IN_PLACE`; at the root only, the receive side (`recv`), then aliasing.
fn gather_args<S, R: Side>(
    c: &Arc<CommObj>,
    root_rank: c_int,
    sendbuf: *const c_void,
    recvbuf: *const c_void,
    send: impl FnOnce() -> Result<S, Fail>,
    recv: impl FnOnce() -> Result<R, Fail>,
) -> Result<Rooted<S, R>, Fail> {
    let root = root(c, root_rank)?;
    let at_root = c.comm.rank() == root;
    let send = if at_root && in_place(sendbuf) { None } else { Some(send()?) };
    let recv = if at_root {
        let r = recv()?;
        not_aliased(c, sendbuf, recvbuf, r.moves())?;
        Some(r)
    } else {
        None
    };
    Ok(Rooted { root, send, recv })
}

/// The arguments of a scatter: the root; at the root only, the send side (`send`); the receive
/// side (`recv`), except at the root with `MPI_IN_PLACE`, then at the root aliasing.
fn scatter_args<S, R: Side>(
    c: &Arc<CommObj>,
    root_rank: c_int,
    sendbuf: *const c_void,
    recvbuf: *const c_void,
    send: impl FnOnce() -> Result<S, Fail>,
    recv: impl FnOnce() -> Result<R, Fail>,
) -> Result<Rooted<S, R>, Fail> {
    let root = root(c, root_rank)?;
    let at_root = c.comm.rank() == root;
    let send = if at_root { Some(send()?) } else { None };
    let recv = if at_root && in_place(recvbuf) {
        None
    } else {
        let r = recv()?;
        if at_root {
            not_aliased(c, sendbuf, recvbuf, r.moves())?;
        }
        Some(r)
    };
    Ok(Rooted { root, send, recv })
}

/// The checked sides of a collective without a root: the send side (`None` for
/// `MPI_IN_PLACE`) and the receive side.
struct Everywhere<S, R> {
    send: Option<S>,
    recv: R,
}

/// The arguments of an allgather or alltoall: the send side (`send`) unless `MPI_IN_PLACE`,
/// the receive side (`recv`), then aliasing.
fn everywhere_args<S, R: Side>(
    c: &Arc<CommObj>,
    sendbuf: *const c_void,
    recvbuf: *const c_void,
    send: impl FnOnce() -> Result<S, Fail>,
    recv: impl FnOnce() -> Result<R, Fail>,
) -> Result<Everywhere<S, R>, Fail> {
    let send = if in_place(sendbuf) { None } else { Some(send()?) };
    let recv = recv()?;
    not_aliased(c, sendbuf, recvbuf, recv.moves())?;
    Ok(Everywhere { send, recv })
}

/// A gather, checked.
///
/// # Safety
/// The buffers are valid until the request completes (MPI's contract).
#[allow(clippy::too_many_arguments)]
unsafe fn gather(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    sendbuf: *const c_void,
    sendcount: impl CInt,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcount: impl CInt,
    recvtype: abi::Datatype,
    root: c_int,
) -> Result<Operation, Fail> {
    if c.comm.is_inter() {
        // SAFETY: the buffers (and, at the root, the count arrays) are as this function's
        // contract says, which is the intercommunicator version's.
        return unsafe {
            super::coll_inter::gather(
                st, c, sendbuf, sendcount, sendtype, recvbuf, recvcount, NO_V, recvtype, root,
            )
        };
    }
    let a = gather_args(
        c,
        root,
        sendbuf,
        recvbuf,
        || plain(st, c, sendbuf, sendcount, sendtype, SEND),
        || plain(st, c, recvbuf, recvcount, recvtype, RECV),
    )?;
    raw::gather(&c.comm, a.send.as_ref(), a.recv.as_ref(), a.root).map(Operation::Collective).on(c)
}

/// A gatherv, checked.
///
/// # Safety
/// The buffers and arrays are valid (MPI's contract), the buffers until the request completes.
#[allow(clippy::too_many_arguments)]
unsafe fn gatherv(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    sendbuf: *const c_void,
    sendcount: impl CInt,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const impl CInt,
    displs: *const impl CInt,
    recvtype: abi::Datatype,
    root: c_int,
) -> Result<Operation, Fail> {
    if c.comm.is_inter() {
        // SAFETY: the buffers (and, at the root, the count arrays) are as this function's
        // contract says, which is the intercommunicator version's.
        return unsafe {
            super::coll_inter::gather(
                st,
                c,
                sendbuf,
                sendcount,
                sendtype,
                recvbuf,
                0,
                Some((recvcounts, displs)),
                recvtype,
                root,
            )
        };
    }
    let a = gather_args(
        c,
        root,
        sendbuf,
        recvbuf,
        || plain(st, c, sendbuf, sendcount, sendtype, SEND),
        // SAFETY: the caller's contract.
        || unsafe { vbuffer(st, c, recvbuf, recvcounts, displs, recvtype, RECV) },
    )?;
    let recv = a.recv.as_ref().map(VBuf::raw);
    raw::gatherv(&c.comm, a.send.as_ref(), recv.as_ref(), a.root).map(Operation::Collective).on(c)
}

/// A scatter, checked.
///
/// # Safety
/// The buffers are valid until the request completes (MPI's contract).
#[allow(clippy::too_many_arguments)]
unsafe fn scatter(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    sendbuf: *const c_void,
    sendcount: impl CInt,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcount: impl CInt,
    recvtype: abi::Datatype,
    root: c_int,
) -> Result<Operation, Fail> {
    if c.comm.is_inter() {
        // SAFETY: the buffers (and, at the root, the count arrays) are as this function's
        // contract says, which is the intercommunicator version's.
        return unsafe {
            super::coll_inter::scatter(
                st, c, sendbuf, sendcount, NO_V, sendtype, recvbuf, recvcount, recvtype, root,
            )
        };
    }
    let a = scatter_args(
        c,
        root,
        sendbuf,
        recvbuf,
        || plain(st, c, sendbuf, sendcount, sendtype, SEND),
        || plain(st, c, recvbuf, recvcount, recvtype, RECV),
    )?;
    raw::scatter(&c.comm, a.send.as_ref(), a.recv.as_ref(), a.root).map(Operation::Collective).on(c)
}

/// A scatterv, checked.
///
/// # Safety
/// The buffers and arrays are valid (MPI's contract), the buffers until the request completes.
#[allow(clippy::too_many_arguments)]
unsafe fn scatterv(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    sendbuf: *const c_void,
    sendcounts: *const impl CInt,
    displs: *const impl CInt,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcount: impl CInt,
    recvtype: abi::Datatype,
    root: c_int,
) -> Result<Operation, Fail> {
    if c.comm.is_inter() {
        // SAFETY: the buffers (and, at the root, the count arrays) are as this function's
        // contract says, which is the intercommunicator version's.
        return unsafe {
            super::coll_inter::scatter(
                st,
                c,
                sendbuf,
                0,
                Some((sendcounts, displs)),
                sendtype,
                recvbuf,
                recvcount,
                recvtype,
                root,
            )
        };
    }
    let a = scatter_args(
        c,
        root,
        sendbuf,
        recvbuf,
        // SAFETY: the caller's contract.
        || unsafe { vbuffer(st, c, sendbuf, sendcounts, displs, sendtype, SEND) },
        || plain(st, c, recvbuf, recvcount, recvtype, RECV),
    )?;
    let send = a.send.as_ref().map(VBuf::raw);
    raw::scatterv(&c.comm, send.as_ref(), a.recv.as_ref(), a.root).map(Operation::Collective).on(c)
}

/// What a collective without a root plans from its checked sides (allgather, alltoall).
type PlanEverywhere =
    fn(&madmpi::comm::Comm, Option<&RawBuf>, &RawBuf) -> madmpi::error::Result<raw::Planned>;

/// An allgather or an alltoall (`plan`), checked: one block of `sendcount` elements to every
/// rank (the same block, or block j to rank j) and one of `recvcount` from each.
///
/// # Safety
/// Nothing is read through the pointers (the buffers are only described).
#[allow(clippy::too_many_arguments)]
unsafe fn everywhere(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    plan: PlanEverywhere,
    sendbuf: *const c_void,
    sendcount: impl CInt,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcount: impl CInt,
    recvtype: abi::Datatype,
) -> Result<Operation, Fail> {
    let a = everywhere_args(
        c,
        sendbuf,
        recvbuf,
        || plain(st, c, sendbuf, sendcount, sendtype, SEND),
        || plain(st, c, recvbuf, recvcount, recvtype, RECV),
    )?;
    plan(&c.comm, a.send.as_ref(), &a.recv).map(Operation::Collective).on(c)
}

/// An allgatherv, checked.
///
/// # Safety
/// The buffers and arrays are valid (MPI's contract), the buffers until the request completes.
#[allow(clippy::too_many_arguments)]
unsafe fn allgatherv(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    sendbuf: *const c_void,
    sendcount: impl CInt,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const impl CInt,
    displs: *const impl CInt,
    recvtype: abi::Datatype,
) -> Result<Operation, Fail> {
    let a = everywhere_args(
        c,
        sendbuf,
        recvbuf,
        || plain(st, c, sendbuf, sendcount, sendtype, SEND),
        // SAFETY: the caller's contract.
        || unsafe { vbuffer(st, c, recvbuf, recvcounts, displs, recvtype, RECV) },
    )?;
    raw::allgatherv(&c.comm, a.send.as_ref(), &a.recv.raw()).map(Operation::Collective).on(c)
}

/// An alltoallv, checked.
///
/// # Safety
/// The buffers and arrays are valid (MPI's contract), the buffers until the request completes.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallv(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    sendbuf: *const c_void,
    sendcounts: *const impl CInt,
    sdispls: *const impl CInt,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const impl CInt,
    rdispls: *const impl CInt,
    recvtype: abi::Datatype,
) -> Result<Operation, Fail> {
    let a = everywhere_args(
        c,
        sendbuf,
        recvbuf,
        // SAFETY: the caller's contract.
        || unsafe { vbuffer(st, c, sendbuf, sendcounts, sdispls, sendtype, SEND) },
        // SAFETY: the caller's contract.
        || unsafe { vbuffer(st, c, recvbuf, recvcounts, rdispls, recvtype, RECV) },
    )?;
    let send = a.send.as_ref().map(VBuf::raw);
    raw::alltoallv(&c.comm, send.as_ref(), &a.recv.raw()).map(Operation::Collective).on(c)
}

/// An alltoallw, checked.
///
/// # Safety
/// The buffers and arrays are valid (MPI's contract), the buffers until the request completes.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallw(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    sendbuf: *const c_void,
    sendcounts: *const impl CInt,
    sdispls: *const impl CInt,
    sendtypes: *const abi::Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const impl CInt,
    rdispls: *const impl CInt,
    recvtypes: *const abi::Datatype,
) -> Result<Operation, Fail> {
    let a = everywhere_args(
        c,
        sendbuf,
        recvbuf,
        // SAFETY: the caller's contract.
        || unsafe { wbuffer(st, c, sendbuf, sendcounts, sdispls, sendtypes, SEND) },
        // SAFETY: the caller's contract.
        || unsafe { wbuffer(st, c, recvbuf, recvcounts, rdispls, recvtypes, RECV) },
    )?;
    let send = a.send.as_ref().map(WBuf::raw);
    raw::alltoallw(&c.comm, send.as_ref(), &a.recv.raw()).map(Operation::Collective).on(c)
}

family! {
    /// Gather: `MPI_IN_PLACE` as the send buffer at the root only.
    (
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcount: Count,
        recvtype: abi::Datatype,
        root: c_int,
    ) => gather[];
    run MPI_Gather / PMPI_Gather, MPI_Gather_c / PMPI_Gather_c;
    start MPI_Igather / PMPI_Igather, MPI_Igather_c / PMPI_Igather_c;
    init_info MPI_Gather_init / PMPI_Gather_init, MPI_Gather_init_c / PMPI_Gather_init_c;

    /// Gather of blocks of varying sizes: `MPI_IN_PLACE` as the send buffer at the root only.
    (
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcounts: *const Count,
        displs: *const Displ,
        recvtype: abi::Datatype,
        root: c_int,
    ) => gatherv[];
    run MPI_Gatherv / PMPI_Gatherv, MPI_Gatherv_c / PMPI_Gatherv_c;
    start MPI_Igatherv / PMPI_Igatherv, MPI_Igatherv_c / PMPI_Igatherv_c;
    init_info MPI_Gatherv_init / PMPI_Gatherv_init, MPI_Gatherv_init_c / PMPI_Gatherv_init_c;

    /// Scatter: `MPI_IN_PLACE` as the receive buffer at the root only.
    (
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcount: Count,
        recvtype: abi::Datatype,
        root: c_int,
    ) => scatter[];
    run MPI_Scatter / PMPI_Scatter, MPI_Scatter_c / PMPI_Scatter_c;
    start MPI_Iscatter / PMPI_Iscatter, MPI_Iscatter_c / PMPI_Iscatter_c;
    init_info MPI_Scatter_init / PMPI_Scatter_init, MPI_Scatter_init_c / PMPI_Scatter_init_c;

    /// Scatter of blocks of varying sizes: `MPI_IN_PLACE` as the receive buffer at the root
    /// only.
    (
        sendbuf: *const c_void,
        sendcounts: *const Count,
        displs: *const Displ,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcount: Count,
        recvtype: abi::Datatype,
        root: c_int,
    ) => scatterv[];
    run MPI_Scatterv / PMPI_Scatterv, MPI_Scatterv_c / PMPI_Scatterv_c;
    start MPI_Iscatterv / PMPI_Iscatterv, MPI_Iscatterv_c / PMPI_Iscatterv_c;
    init_info MPI_Scatterv_init / PMPI_Scatterv_init, MPI_Scatterv_init_c / PMPI_Scatterv_init_c;

    /// Allgather: `MPI_IN_PLACE` as the send buffer everywhere.
    (
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcount: Count,
        recvtype: abi::Datatype,
    ) => everywhere[raw::allgather];
    run MPI_Allgather / PMPI_Allgather, MPI_Allgather_c / PMPI_Allgather_c;
    start MPI_Iallgather / PMPI_Iallgather, MPI_Iallgather_c / PMPI_Iallgather_c;
    init_info MPI_Allgather_init / PMPI_Allgather_init, MPI_Allgather_init_c / PMPI_Allgather_init_c;

    /// Allgather of blocks of varying sizes: `MPI_IN_PLACE` as the send buffer everywhere.
    (
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcounts: *const Count,
        displs: *const Displ,
        recvtype: abi::Datatype,
    ) => allgatherv[];
    run MPI_Allgatherv / PMPI_Allgatherv, MPI_Allgatherv_c / PMPI_Allgatherv_c;
    start MPI_Iallgatherv / PMPI_Iallgatherv, MPI_Iallgatherv_c / PMPI_Iallgatherv_c;
    init_info MPI_Allgatherv_init / PMPI_Allgatherv_init, MPI_Allgatherv_init_c / PMPI_Allgatherv_init_c;

    /// All-to-all: `MPI_IN_PLACE` as the send buffer everywhere.
    (
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcount: Count,
        recvtype: abi::Datatype,
    ) => everywhere[raw::alltoall];
    run MPI_Alltoall / PMPI_Alltoall, MPI_Alltoall_c / PMPI_Alltoall_c;
    start MPI_Ialltoall / PMPI_Ialltoall, MPI_Ialltoall_c / PMPI_Ialltoall_c;
    init_info MPI_Alltoall_init / PMPI_Alltoall_init, MPI_Alltoall_init_c / PMPI_Alltoall_init_c;

    /// All-to-all of blocks of varying sizes: `MPI_IN_PLACE` as the send buffer everywhere.
    (
        sendbuf: *const c_void,
        sendcounts: *const Count,
        sdispls: *const Displ,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcounts: *const Count,
        rdispls: *const Displ,
        recvtype: abi::Datatype,
    ) => alltoallv[];
    run MPI_Alltoallv / PMPI_Alltoallv, MPI_Alltoallv_c / PMPI_Alltoallv_c;
    start MPI_Ialltoallv / PMPI_Ialltoallv, MPI_Ialltoallv_c / PMPI_Ialltoallv_c;
    init_info MPI_Alltoallv_init / PMPI_Alltoallv_init, MPI_Alltoallv_init_c / PMPI_Alltoallv_init_c;

    /// All-to-all with a datatype per block: `MPI_IN_PLACE` as the send buffer everywhere;
    /// displacements in bytes.
    (
        sendbuf: *const c_void,
        sendcounts: *const Count,
        sdispls: *const Displ,
        sendtypes: *const abi::Datatype,
        recvbuf: *mut c_void,
        recvcounts: *const Count,
        rdispls: *const Displ,
        recvtypes: *const abi::Datatype,
    ) => alltoallw[];
    run MPI_Alltoallw / PMPI_Alltoallw, MPI_Alltoallw_c / PMPI_Alltoallw_c;
    start MPI_Ialltoallw / PMPI_Ialltoallw, MPI_Ialltoallw_c / PMPI_Ialltoallw_c;
    init_info MPI_Alltoallw_init / PMPI_Alltoallw_init, MPI_Alltoallw_init_c / PMPI_Alltoallw_init_c;
}
