//! Neighbourhood collectives: `MPI_Neighbor_allgather`, `_allgatherv`, `_alltoall`,
//! `_alltoallv`, `_alltoallw`, their nonblocking `MPI_Ineighbor_*` forms and the large-count
//! `_c` forms of both, over `madmpi::coll::neighbor` with the neighbour lists of the
//! communicator's topology.
//!
//! One build function per collective, generic over the width of counts and displacements
//! (`CInt`: `int`, or `MPI_Count`/`MPI_Aint` for `_c`), checks the arguments and plans the
//! exchange; one `family!` entry each makes it the blocking, nonblocking and persistent
//! (`MPI_Neighbor_*_init`, MPI 4.0) C functions in both widths, as for the other collectives.
//!
//! Checks: the topology first (`MPI_ERR_TOPOLOGY` without one: the array lengths are its
//! degrees), then the send side and the receive side in parameter order (counts
//! `MPI_ERR_COUNT`, datatypes, arrays `MPI_ERR_ARG`, buffers `MPI_ERR_BUFFER`; `MPI_IN_PLACE`
//! is not defined for neighbourhood collectives: `MPI_ERR_BUFFER`).
//!
//! Owns the C signatures and the order of the checks.

use super::coll::{buffer, not_in_place};
use super::family::family;
use crate::check::{self, CInt};
use crate::comms::CommObj;
use crate::errors::{Fail, On};
use crate::state::State;
use madmpi::abi;
use madmpi::coll::neighbor::{self, Links};
use madmpi::coll::raw::{RawBuf, RawVBuf, RawWBuf};
use madmpi::datatype::Datatype;
use madmpi::error::Error;
use madmpi::request::operation::Operation;
use std::ffi::c_void;
use std::sync::Arc;

const SEND: &str = "send buffer";
const RECV: &str = "receive buffer";

fn count<W: CInt>(c: &Arc<CommObj>, n: W) -> Result<usize, Fail> {
    let n: i64 = n.into();
    usize::try_from(n).map_err(|_| Error::count(format!("negative count ({n})"))).on(c)
}

fn displ<W: CInt>(c: &Arc<CommObj>, d: W) -> Result<isize, Fail> {
    let d: i64 = d.into();
    isize::try_from(d).map_err(|_| Error::arg(format!("displacement {d} does not fit an address"))).on(c)
}

/// `count` elements of `datatype` at `buf`, checked.
fn plain<W: CInt>(
    st: &State,
    c: &Arc<CommObj>,
    buf: *const c_void,
    n: W,
    datatype: abi::Datatype,
    what: &str,
) -> Result<RawBuf, Fail> {
    let n = count(c, n)?;
    let ty = st.committed_datatype(datatype).on(c)?;
    buffer(c, buf, n as i64, &ty, what)
}

/// Counts and displacements of a `v` or `w` side with `n` blocks, checked.
///
/// # Safety
/// Non-null, aligned arrays hold `n` elements each.
unsafe fn counts_displs<W: CInt, D: CInt>(
    c: &Arc<CommObj>,
    counts: *const W,
    displs: *const D,
    n: usize,
) -> Result<(Vec<usize>, Vec<isize>), Fail> {
    // SAFETY: the caller's contract.
    let cs = unsafe { check::array_in(counts, n, "the counts array") }.on(c)?;
    let counts = cs.iter().map(|&x| count(c, x)).collect::<Result<Vec<_>, _>>()?;
    // SAFETY: the caller's contract.
    let ds = unsafe { check::array_in(displs, n, "the displacements array") }.on(c)?;
    Ok((counts, ds.iter().map(|&d| displ(c, d)).collect::<Result<Vec<_>, _>>()?))
}

/// A checked `v` side: `counts[i]` elements of `ty` at `displs[i]` extents from `base`.
struct VSide {
    base: *mut u8,
    counts: Vec<usize>,
    displs: Vec<isize>,
    ty: Datatype,
}

impl VSide {
    fn raw(&self) -> RawVBuf<'_> {
        RawVBuf { base: self.base, counts: &self.counts, displs: &self.displs, dtype: self.ty.clone() }
    }
}

/// The `v` side of `n` blocks at `buf`, checked.
///
/// # Safety
/// Non-null, aligned arrays hold `n` elements each.
#[allow(clippy::too_many_arguments)]
unsafe fn vside<W: CInt, D: CInt>(
    st: &State,
    c: &Arc<CommObj>,
    buf: *const c_void,
    counts: *const W,
    displs: *const D,
    datatype: abi::Datatype,
    n: usize,
    what: &str,
) -> Result<VSide, Fail> {
    // SAFETY: the caller's contract.
    let (counts, displs) = unsafe { counts_displs(c, counts, displs, n) }?;
    let ty = st.committed_datatype(datatype).on(c)?;
    not_in_place(c, buf, what)?;
    check::buffer(buf, counts.iter().map(|&x| x as i64).sum(), &ty).on(c)?;
    Ok(VSide { base: buf.cast_mut().cast(), counts, displs, ty })
}

/// A checked `w` side: per block a count, a byte displacement and a datatype.
struct WSide {
    base: *mut u8,
    counts: Vec<usize>,
    displs: Vec<isize>,
    types: Vec<Datatype>,
}

impl WSide {
    fn raw(&self) -> RawWBuf<'_> {
        RawWBuf { base: self.base, counts: &self.counts, displs: &self.displs, dtypes: &self.types }
    }
}

/// The `w` side of `n` blocks at `buf`, checked.
///
/// # Safety
/// Non-null, aligned arrays hold `n` elements each.
#[allow(clippy::too_many_arguments)]
unsafe fn wside<W: CInt>(
    st: &State,
    c: &Arc<CommObj>,
    buf: *const c_void,
    counts: *const W,
    displs: *const abi::Aint,
    types: *const abi::Datatype,
    n: usize,
    what: &str,
) -> Result<WSide, Fail> {
    // SAFETY: the caller's contract.
    let (counts, displs) = unsafe { counts_displs(c, counts, displs, n) }?;
    // SAFETY: the caller's contract.
    let ts = unsafe { check::array_in(types, n, "the datatypes array") }.on(c)?;
    let types = ts.iter().map(|&t| st.committed_datatype(t)).collect::<Result<Vec<_>, _>>().on(c)?;
    not_in_place(c, buf, what)?;
    for (k, t) in counts.iter().zip(&types) {
        check::buffer(buf, *k as i64, t).on(c)?;
    }
    Ok(WSide { base: buf.cast_mut().cast(), counts, displs, types })
}

fn links(c: &Arc<CommObj>) -> Result<Links, Fail> {
    c.comm.neighbor_links().on(c)
}

/// `MPI_Neighbor_allgather`, checked and planned.
///
/// # Safety
/// The arrays are valid during the call; the buffers until the operation completes (MPI's
/// contract).
#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_allgather<W: CInt>(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    sendbuf: *const c_void,
    sendcount: W,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcount: W,
    recvtype: abi::Datatype,
) -> Result<Operation, Fail> {
    let l = links(c)?;
    let send = plain(st, c, sendbuf, sendcount, sendtype, SEND)?;
    let recv = plain(st, c, recvbuf, recvcount, recvtype, RECV)?;
    neighbor::neighbor_allgather(&c.comm, &l, &send, &recv).map(Operation::Collective).on(c)
}

/// `MPI_Neighbor_allgatherv`, checked and planned.
///
/// # Safety
/// The buffers are valid until the request completes, the arrays during the call (MPI's
/// contract).
#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_allgatherv<W: CInt, D: CInt>(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    sendbuf: *const c_void,
    sendcount: W,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const W,
    displs: *const D,
    recvtype: abi::Datatype,
) -> Result<Operation, Fail> {
    let l = links(c)?;
    let send = plain(st, c, sendbuf, sendcount, sendtype, SEND)?;
    // SAFETY: the arrays hold one element per source (MPI's contract).
    let recv = unsafe { vside(st, c, recvbuf, recvcounts, displs, recvtype, l.sources.len(), RECV) }?;
    neighbor::neighbor_allgatherv(&c.comm, &l, &send, &recv.raw()).map(Operation::Collective).on(c)
}

/// `MPI_Neighbor_alltoall`, checked and planned.
///
/// # Safety
/// The arrays are valid during the call; the buffers until the operation completes (MPI's
/// contract).
#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_alltoall<W: CInt>(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    sendbuf: *const c_void,
    sendcount: W,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcount: W,
    recvtype: abi::Datatype,
) -> Result<Operation, Fail> {
    let l = links(c)?;
    let send = plain(st, c, sendbuf, sendcount, sendtype, SEND)?;
    let recv = plain(st, c, recvbuf, recvcount, recvtype, RECV)?;
    neighbor::neighbor_alltoall(&c.comm, &l, &send, &recv).map(Operation::Collective).on(c)
}

/// `MPI_Neighbor_alltoallv`, checked and planned.
///
/// # Safety
/// The buffers are valid until the request completes, the arrays during the call (MPI's
/// contract).
#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_alltoallv<W: CInt, D: CInt>(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    sendbuf: *const c_void,
    sendcounts: *const W,
    sdispls: *const D,
    sendtype: abi::Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const W,
    rdispls: *const D,
    recvtype: abi::Datatype,
) -> Result<Operation, Fail> {
    let l = links(c)?;
    // SAFETY: the arrays hold one element per destination, then per source (MPI's contract).
    let (send, recv) = unsafe {
        let s = vside(st, c, sendbuf, sendcounts, sdispls, sendtype, l.dests.len(), SEND)?;
        (s, vside(st, c, recvbuf, recvcounts, rdispls, recvtype, l.sources.len(), RECV)?)
    };
    neighbor::neighbor_alltoallv(&c.comm, &l, &send.raw(), &recv.raw()).map(Operation::Collective).on(c)
}

/// `MPI_Neighbor_alltoallw`, checked and planned.
///
/// # Safety
/// The buffers are valid until the request completes, the arrays during the call (MPI's
/// contract).
#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_alltoallw<W: CInt>(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    sendbuf: *const c_void,
    sendcounts: *const W,
    sdispls: *const abi::Aint,
    sendtypes: *const abi::Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const W,
    rdispls: *const abi::Aint,
    recvtypes: *const abi::Datatype,
) -> Result<Operation, Fail> {
    let l = links(c)?;
    // SAFETY: the arrays hold one element per destination, then per source (MPI's contract).
    let (send, recv) = unsafe {
        let s = wside(st, c, sendbuf, sendcounts, sdispls, sendtypes, l.dests.len(), SEND)?;
        (s, wside(st, c, recvbuf, recvcounts, rdispls, recvtypes, l.sources.len(), RECV)?)
    };
    neighbor::neighbor_alltoallw(&c.comm, &l, &send.raw(), &recv.raw()).map(Operation::Collective).on(c)
}

family! {
    /// `MPI_Neighbor_allgather`: the send buffer to every destination, block j of the receive
    /// buffer from source j.
    (
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcount: Count,
        recvtype: abi::Datatype,
    ) => neighbor_allgather[];
    run MPI_Neighbor_allgather / PMPI_Neighbor_allgather, MPI_Neighbor_allgather_c / PMPI_Neighbor_allgather_c;
    start MPI_Ineighbor_allgather / PMPI_Ineighbor_allgather, MPI_Ineighbor_allgather_c / PMPI_Ineighbor_allgather_c;
    init_info MPI_Neighbor_allgather_init / PMPI_Neighbor_allgather_init,
        MPI_Neighbor_allgather_init_c / PMPI_Neighbor_allgather_init_c;

    /// `MPI_Neighbor_allgatherv`: source j's block at `displs[j]` extents.
    (
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcounts: *const Count,
        displs: *const Displ,
        recvtype: abi::Datatype,
    ) => neighbor_allgatherv[];
    run MPI_Neighbor_allgatherv / PMPI_Neighbor_allgatherv, MPI_Neighbor_allgatherv_c / PMPI_Neighbor_allgatherv_c;
    start MPI_Ineighbor_allgatherv / PMPI_Ineighbor_allgatherv, MPI_Ineighbor_allgatherv_c / PMPI_Ineighbor_allgatherv_c;
    init_info MPI_Neighbor_allgatherv_init / PMPI_Neighbor_allgatherv_init,
        MPI_Neighbor_allgatherv_init_c / PMPI_Neighbor_allgatherv_init_c;

    /// `MPI_Neighbor_alltoall`: block k to destination k, block j from source j.
    (
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcount: Count,
        recvtype: abi::Datatype,
    ) => neighbor_alltoall[];
    run MPI_Neighbor_alltoall / PMPI_Neighbor_alltoall, MPI_Neighbor_alltoall_c / PMPI_Neighbor_alltoall_c;
    start MPI_Ineighbor_alltoall / PMPI_Ineighbor_alltoall, MPI_Ineighbor_alltoall_c / PMPI_Ineighbor_alltoall_c;
    init_info MPI_Neighbor_alltoall_init / PMPI_Neighbor_alltoall_init,
        MPI_Neighbor_alltoall_init_c / PMPI_Neighbor_alltoall_init_c;

    /// `MPI_Neighbor_alltoallv`: displacements in extents of the datatypes.
    (
        sendbuf: *const c_void,
        sendcounts: *const Count,
        sdispls: *const Displ,
        sendtype: abi::Datatype,
        recvbuf: *mut c_void,
        recvcounts: *const Count,
        rdispls: *const Displ,
        recvtype: abi::Datatype,
    ) => neighbor_alltoallv[];
    run MPI_Neighbor_alltoallv / PMPI_Neighbor_alltoallv, MPI_Neighbor_alltoallv_c / PMPI_Neighbor_alltoallv_c;
    start MPI_Ineighbor_alltoallv / PMPI_Ineighbor_alltoallv, MPI_Ineighbor_alltoallv_c / PMPI_Ineighbor_alltoallv_c;
    init_info MPI_Neighbor_alltoallv_init / PMPI_Neighbor_alltoallv_init,
        MPI_Neighbor_alltoallv_init_c / PMPI_Neighbor_alltoallv_init_c;

    /// `MPI_Neighbor_alltoallw`: a datatype per block, displacements in bytes (`MPI_Aint` in
    /// both forms).
    (
        sendbuf: *const c_void,
        sendcounts: *const Count,
        sdispls: *const abi::Aint,
        sendtypes: *const abi::Datatype,
        recvbuf: *mut c_void,
        recvcounts: *const Count,
        rdispls: *const abi::Aint,
        recvtypes: *const abi::Datatype,
    ) => neighbor_alltoallw[];
    run MPI_Neighbor_alltoallw / PMPI_Neighbor_alltoallw, MPI_Neighbor_alltoallw_c / PMPI_Neighbor_alltoallw_c;
    start MPI_Ineighbor_alltoallw / PMPI_Ineighbor_alltoallw, MPI_Ineighbor_alltoallw_c / PMPI_Ineighbor_alltoallw_c;
    init_info MPI_Neighbor_alltoallw_init / PMPI_Neighbor_alltoallw_init,
        MPI_Neighbor_alltoallw_init_c / PMPI_Neighbor_alltoallw_init_c;
}
