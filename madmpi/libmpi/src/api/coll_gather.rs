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
//! one start function (that checker given the buffer checkers of its sides, then the `raw`
//! call), which the `pair!` macro makes both the blocking and the nonblocking C function.

use super::coll::{buffer, count_type, finish, in_place, not_aliased, not_in_place, root, store};
use crate::check;
use crate::comms::CommObj;
use crate::errors::{Fail, On};
use crate::export::export;
use crate::state::{State, state};
use madmpi::abi;
use madmpi::coll::raw::{self, RawBuf, RawVBuf, RawWBuf};
use madmpi::datatype::Datatype;
use madmpi::request::RawRequest;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

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
struct WBuf {
    base: *mut u8,
    counts: Vec<usize>,
    displs: Vec<isize>,
    types: Vec<Datatype>,
}

impl WBuf {
    fn raw(&self) -> RawWBuf<'_> {
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
    count: c_int,
    datatype: abi::Datatype,
    what: &str,
) -> Result<RawBuf, Fail> {
    let (n, ty) = count_type(st, c, count, datatype)?;
    buffer(c, buf, n, &ty, what)
}

/// The per-rank `counts` (each `MPI_ERR_COUNT` if negative) and `displs` of a `v` or `w`
/// buffer, checked in that order: one per rank data goes to or comes from (of the remote group
/// on an intercommunicator).
///
/// # Safety
/// Non-null, aligned `counts` and `displs` hold one `int` per such rank.
unsafe fn counts_displs(
    c: &Arc<CommObj>,
    counts: *const c_int,
    displs: *const c_int,
) -> Result<(Vec<usize>, Vec<isize>), Fail> {
    let n = c.comm.peer_size() as usize;
    // SAFETY: the caller's contract.
    let cs = unsafe { check::array_in(counts, n, "the counts array") }.on(c)?;
    let counts =
        cs.iter().map(|&x| check::count(x).map(|v| v as usize)).collect::<Result<Vec<_>, _>>().on(c)?;
    // SAFETY: the caller's contract.
    let ds = unsafe { check::array_in(displs, n, "the displacements array") }.on(c)?;
    Ok((counts, ds.iter().map(|&d| d as isize).collect()))
}

/// The `v` buffer `buf` with `counts` and `displs` (one per rank) of `datatype`, checked
/// (`what` names the buffer).
///
/// # Safety
/// Non-null, aligned `counts` and `displs` hold one `int` per rank of the communicator.
pub(super) unsafe fn vbuffer(
    st: &State,
    c: &Arc<CommObj>,
    buf: *const c_void,
    counts: *const c_int,
    displs: *const c_int,
    datatype: abi::Datatype,
    what: &str,
) -> Result<VBuf, Fail> {
    // SAFETY: the caller's contract.
    let (counts, displs) = unsafe { counts_displs(c, counts, displs) }?;
    let ty = st.committed_datatype(datatype).on(c)?;
    not_in_place(c, buf, what)?;
    let total = counts.iter().map(|&x| x as i64).sum();
    check::buffer(buf, total, &ty).on(c)?;
    Ok(VBuf { base: buf.cast_mut().cast(), counts, displs, ty })
}

/// The `w` buffer `buf` with `counts`, byte `displs` and `types` (one each per rank), checked.
///
/// # Safety
/// Non-null, aligned arrays hold one element per rank of the communicator.
unsafe fn wbuffer(
    st: &State,
    c: &Arc<CommObj>,
    buf: *const c_void,
    counts: *const c_int,
    displs: *const c_int,
    types: *const abi::Datatype,
    what: &str,
) -> Result<WBuf, Fail> {
    // SAFETY: the caller's contract.
    let (counts, displs) = unsafe { counts_displs(c, counts, displs) }?;
    let n = counts.len();
    // SAFETY: the caller's contract.
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

/// Starts `MPI_Igather` after the checks.
///
/// # Safety
/// The buffers are valid until the request completes (MPI's contract).
#[allow(clippy::too_many_arguments)]
unsafe fn igather(
    st: &State,
    c: &Arc<CommObj>,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: abi::Datatype,
    root: c_int,
) -> Result<RawRequest, Fail> {
    if c.comm.is_inter() {
        // SAFETY: the caller's contract.
        return unsafe {
            super::coll_inter::igather(
                st, c, sendbuf, sendcount, sendtype, recvbuf, recvcount, None, recvtype, root,
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
    // SAFETY: the caller's contract.
    unsafe { raw::igather(&c.comm, a.send.as_ref(), a.recv.as_ref(), a.root) }.on(c)
}

/// Starts `MPI_Igatherv` after the checks.
///
/// # Safety
/// The buffers and arrays are valid (MPI's contract), the buffers until the request completes.
#[allow(clippy::too_many_arguments)]
unsafe fn igatherv(
    st: &State,
    c: &Arc<CommObj>,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: abi::Datatype,
    root: c_int,
) -> Result<RawRequest, Fail> {
    if c.comm.is_inter() {
        // SAFETY: the caller's contract.
        return unsafe {
            super::coll_inter::igather(
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
    // SAFETY: the caller's contract.
    unsafe { raw::igatherv(&c.comm, a.send.as_ref(), recv.as_ref(), a.root) }.on(c)
}

/// Starts `MPI_Iscatter` after the checks.
///
/// # Safety
/// The buffers are valid until the request completes (MPI's contract).
#[allow(clippy::too_many_arguments)]
unsafe fn iscatter(
    st: &State,
    c: &Arc<CommObj>,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: abi::Datatype,
    root: c_int,
) -> Result<RawRequest, Fail> {
    if c.comm.is_inter() {
        // SAFETY: the caller's contract.
        return unsafe {
            super::coll_inter::iscatter(
                st, c, sendbuf, sendcount, None, sendtype, recvbuf, recvcount, recvtype, root,
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
    // SAFETY: the caller's contract.
    unsafe { raw::iscatter(&c.comm, a.send.as_ref(), a.recv.as_ref(), a.root) }.on(c)
}

/// Starts `MPI_Iscatterv` after the checks.
///
/// # Safety
/// The buffers and arrays are valid (MPI's contract), the buffers until the request completes.
#[allow(clippy::too_many_arguments)]
unsafe fn iscatterv(
    st: &State,
    c: &Arc<CommObj>,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: abi::Datatype,
    root: c_int,
) -> Result<RawRequest, Fail> {
    if c.comm.is_inter() {
        // SAFETY: the caller's contract.
        return unsafe {
            super::coll_inter::iscatter(
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
    // SAFETY: the caller's contract.
    unsafe { raw::iscatterv(&c.comm, send.as_ref(), a.recv.as_ref(), a.root) }.on(c)
}

/// Starts `MPI_Iallgather` after the checks.
///
/// # Safety
/// The buffers are valid until the request completes (MPI's contract).
#[allow(clippy::too_many_arguments)]
unsafe fn iallgather(
    st: &State,
    c: &Arc<CommObj>,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: abi::Datatype,
) -> Result<RawRequest, Fail> {
    let a = everywhere_args(
        c,
        sendbuf,
        recvbuf,
        || plain(st, c, sendbuf, sendcount, sendtype, SEND),
        || plain(st, c, recvbuf, recvcount, recvtype, RECV),
    )?;
    // SAFETY: the caller's contract.
    unsafe { raw::iallgather(&c.comm, a.send.as_ref(), &a.recv) }.on(c)
}

/// Starts `MPI_Iallgatherv` after the checks.
///
/// # Safety
/// The buffers and arrays are valid (MPI's contract), the buffers until the request completes.
#[allow(clippy::too_many_arguments)]
unsafe fn iallgatherv(
    st: &State,
    c: &Arc<CommObj>,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: abi::Datatype,
) -> Result<RawRequest, Fail> {
    let a = everywhere_args(
        c,
        sendbuf,
        recvbuf,
        || plain(st, c, sendbuf, sendcount, sendtype, SEND),
        // SAFETY: the caller's contract.
        || unsafe { vbuffer(st, c, recvbuf, recvcounts, displs, recvtype, RECV) },
    )?;
    // SAFETY: the caller's contract.
    unsafe { raw::iallgatherv(&c.comm, a.send.as_ref(), &a.recv.raw()) }.on(c)
}

/// Starts `MPI_Ialltoall` after the checks.
///
/// # Safety
/// The buffers are valid until the request completes (MPI's contract).
#[allow(clippy::too_many_arguments)]
unsafe fn ialltoall(
    st: &State,
    c: &Arc<CommObj>,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: abi::Datatype,
) -> Result<RawRequest, Fail> {
    let a = everywhere_args(
        c,
        sendbuf,
        recvbuf,
        || plain(st, c, sendbuf, sendcount, sendtype, SEND),
        || plain(st, c, recvbuf, recvcount, recvtype, RECV),
    )?;
    // SAFETY: the caller's contract.
    unsafe { raw::ialltoall(&c.comm, a.send.as_ref(), &a.recv) }.on(c)
}

/// Starts `MPI_Ialltoallv` after the checks.
///
/// # Safety
/// The buffers and arrays are valid (MPI's contract), the buffers until the request completes.
#[allow(clippy::too_many_arguments)]
unsafe fn ialltoallv(
    st: &State,
    c: &Arc<CommObj>,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: abi::Datatype,
) -> Result<RawRequest, Fail> {
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
    // SAFETY: the caller's contract.
    unsafe { raw::ialltoallv(&c.comm, send.as_ref(), &a.recv.raw()) }.on(c)
}

/// Starts `MPI_Ialltoallw` after the checks.
///
/// # Safety
/// The buffers and arrays are valid (MPI's contract), the buffers until the request completes.
#[allow(clippy::too_many_arguments)]
unsafe fn ialltoallw(
    st: &State,
    c: &Arc<CommObj>,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtypes: *const abi::Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtypes: *const abi::Datatype,
) -> Result<RawRequest, Fail> {
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
    // SAFETY: the caller's contract.
    unsafe { raw::ialltoallw(&c.comm, send.as_ref(), &a.recv.raw()) }.on(c)
}

/// Defines the blocking call (`start` then wait) and the nonblocking one (`start`, the request
/// stored) of a collective whose parameters are `args`, then the communicator (and the request).
macro_rules! pair {
    ($(
        $(#[$doc:meta])*
        fn $mpi:ident / $pmpi:ident, $impi:ident / $ipmpi:ident ($($arg:ident: $ty:ty),* $(,)?) => $start:ident;
    )*) => {
        export! {$(
            $(#[$doc])*
            fn $mpi / $pmpi($($arg: $ty,)* comm: abi::Comm) {
                let st = state()?;
                let c = st.comm(comm)?;
                // SAFETY: the buffers and arrays are valid during this blocking call (MPI's contract).
                let raw = unsafe { $start(&st, &c, $($arg),*) }?;
                finish(&c, raw)
            }

            #[doc = concat!("`", stringify!($impi), "`.")]
            fn $impi / $ipmpi($($arg: $ty,)* comm: abi::Comm, request: *mut abi::Request) {
                let st = state()?;
                let c = st.comm(comm)?;
                // SAFETY: an output argument.
                let request = unsafe { check::out(request, "request") }.on(&c)?;
                // SAFETY: the buffers stay valid until the request completes, the arrays during
                // the call (MPI's contract).
                let raw = unsafe { $start(&st, &c, $($arg),*) }?;
                store(&st, &c, raw, request)
            }
        )*}
    };
}
pub(super) use pair;

pair! {
    /// `MPI_Gather`: `MPI_IN_PLACE` as the send buffer at the root only.
    fn MPI_Gather / PMPI_Gather, MPI_Igather / PMPI_Igather(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: abi::Datatype,
        root: c_int,
    ) => igather;

    /// `MPI_Gatherv`: `MPI_IN_PLACE` as the send buffer at the root only.
    fn MPI_Gatherv / PMPI_Gatherv, MPI_Igatherv / PMPI_Igatherv(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        displs: *const c_int,
        recvtype: abi::Datatype,
        root: c_int,
    ) => igatherv;

    /// `MPI_Scatter`: `MPI_IN_PLACE` as the receive buffer at the root only.
    fn MPI_Scatter / PMPI_Scatter, MPI_Iscatter / PMPI_Iscatter(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: abi::Datatype,
        root: c_int,
    ) => iscatter;

    /// `MPI_Scatterv`: `MPI_IN_PLACE` as the receive buffer at the root only.
    fn MPI_Scatterv / PMPI_Scatterv, MPI_Iscatterv / PMPI_Iscatterv(
        sendbuf: *const c_void,
        sendcounts: *const c_int,
        displs: *const c_int,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: abi::Datatype,
        root: c_int,
    ) => iscatterv;

    /// `MPI_Allgather`: `MPI_IN_PLACE` as the send buffer everywhere.
    fn MPI_Allgather / PMPI_Allgather, MPI_Iallgather / PMPI_Iallgather(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: abi::Datatype,
    ) => iallgather;

    /// `MPI_Allgatherv`: `MPI_IN_PLACE` as the send buffer everywhere.
    fn MPI_Allgatherv / PMPI_Allgatherv, MPI_Iallgatherv / PMPI_Iallgatherv(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        displs: *const c_int,
        recvtype: abi::Datatype,
    ) => iallgatherv;

    /// `MPI_Alltoall`: `MPI_IN_PLACE` as the send buffer everywhere.
    fn MPI_Alltoall / PMPI_Alltoall, MPI_Ialltoall / PMPI_Ialltoall(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: abi::Datatype,
    ) => ialltoall;

    /// `MPI_Alltoallv`: `MPI_IN_PLACE` as the send buffer everywhere.
    fn MPI_Alltoallv / PMPI_Alltoallv, MPI_Ialltoallv / PMPI_Ialltoallv(
        sendbuf: *const c_void,
        sendcounts: *const c_int,
        sdispls: *const c_int,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        rdispls: *const c_int,
        recvtype: abi::Datatype,
    ) => ialltoallv;

    /// `MPI_Alltoallw`: `MPI_IN_PLACE` as the send buffer everywhere; displacements in bytes.
    fn MPI_Alltoallw / PMPI_Alltoallw, MPI_Ialltoallw / PMPI_Ialltoallw(
        sendbuf: *const c_void,
        sendcounts: *const c_int,
        sdispls: *const c_int,
        sendtypes: *const abi::Datatype,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        rdispls: *const c_int,
        recvtypes: *const abi::Datatype,
    ) => ialltoallw;
}
