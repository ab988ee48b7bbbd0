//! Partitioned communication: `MPI_Psend_init`, `MPI_Precv_init` (persistent requests, started
//! by `MPI_Start`/`MPI_Startall` and completed by the waits and tests), `MPI_Pready`,
//! `MPI_Pready_range`, `MPI_Pready_list`, `MPI_Parrived`.
//!
//! Error classes as MPICH 4.0.2: `partitions` < 1 is `MPI_ERR_ARG`, a negative `count`
//! `MPI_ERR_COUNT`, `MPI_ANY_SOURCE` `MPI_ERR_RANK`, `MPI_ANY_TAG` `MPI_ERR_TAG`; a partition
//! outside the request's (or a range whose low end is above its high end) `MPI_ERR_OTHER`;
//! `MPI_Pready` of an inactive request or of a receive, `MPI_Parrived` of a send,
//! `MPI_ERR_REQUEST`. Deviations: `MPI_Parrived` of `MPI_REQUEST_NULL` or of an inactive request
//! sets `flag` (MPI 4.1's rule; MPICH 4.0.2 crashes, or says `MPI_ERR_REQUEST`); `MPI_PROC_NULL`
//! is a peer that moves nothing (MPICH 4.0.2 crashes).

use super::p2p::checked_data;
use crate::check;
use crate::errors::On;
use crate::export::export;
use crate::infos;
use crate::requests::ReqEntry;
use crate::state::{State, state};
use madmpi::abi::{self, Count};
use madmpi::error::Error;
use madmpi::operation::Persistent;
use madmpi::p2p::{From, Rank};
use madmpi::partitioned::{Channel, Geometry, Operation, RecvChannel, SendChannel};
use madmpi::request::RawRequest;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// The checked buffer arguments of an init: the description of `partitions` × `count`
/// elements and the cut.
///
/// # Safety
/// The memory the type map addresses from `buf` stays valid while the request exists.
unsafe fn buffer(
    st: &State,
    c: &Arc<crate::comms::CommObj>,
    buf: *const c_void,
    partitions: c_int,
    count: Count,
    datatype: abi::Datatype,
) -> Result<(nmad::Data, Geometry), crate::errors::Fail> {
    if partitions < 1 {
        return Err(Error::arg(format!("partitions must be at least 1 (got {partitions})"))).on(c);
    }
    if count < 0 {
        return Err(Error::count(format!("negative count ({count})"))).on(c);
    }
    let ty = st.committed_datatype(datatype).on(c)?;
    let total = count
        .checked_mul(i64::from(partitions))
        .ok_or_else(|| Error::count(format!("{partitions} partitions of {count} elements overflow")))
        .on(c)?;
    // SAFETY: the memory `buf` addresses stays valid while the request exists (this
    // function's contract).
    let data = unsafe { checked_data(c, &ty, buf, total) }?;
    let part_bytes =
        usize::try_from(count as u64 * ty.size()).map_err(|_| Error::count("partition too large")).on(c)?;
    Ok((data, Geometry::new(partitions as usize, part_bytes)))
}

/// The active partitioned operation of handle `h` (`MPI_ERR_REQUEST` if null, invalid, inactive,
/// or not partitioned); its entry keeps it alive.
fn active(st: &State, h: abi::Request) -> Result<(Arc<ReqEntry>, Arc<RawRequest>), crate::errors::Fail> {
    let Some(entry) = st.request(h)? else {
        return Err(Error::request("MPI_REQUEST_NULL is not a partitioned request").into());
    };
    let Some(op) = entry.op().filter(|op| op.partitioned().is_some()) else {
        let what = if matches!(entry.req.template(), Some(Persistent::Partitioned(_))) {
            "the partitioned request is not active (MPI_Start it first)"
        } else {
            "not a partitioned request"
        };
        return Err(Error::request(what)).on(&entry.comm);
    };
    Ok((entry, op))
}

fn operation(op: &RawRequest) -> &Operation {
    op.partitioned().expect("checked by `active`")
}

/// A partition number as an index (a negative one is out of every range).
fn index(k: c_int) -> usize {
    usize::try_from(k).unwrap_or(usize::MAX)
}

export! {
    /// `MPI_Psend_init`.
    fn MPI_Psend_init / PMPI_Psend_init(
        buf: *const c_void,
        partitions: c_int,
        count: Count,
        datatype: abi::Datatype,
        dest: c_int,
        tag: c_int,
        comm: abi::Comm,
        info: abi::Info,
        request: *mut abi::Request,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        // SAFETY: the buffer stays valid while the request exists (MPI's contract).
        let (data, geometry) = unsafe { buffer(&st, &c, buf, partitions, count, datatype) }?;
        let dest = check::dest(&c.comm, dest).on(&c)?;
        let tag = check::send_tag(tag).on(&c)?;
        infos::hints(info).on(&c)?;
        // SAFETY: an output argument.
        let request = unsafe { check::out(request, "request") }.on(&c)?;
        // SAFETY: `data` describes the program's send buffer, valid while the request exists
        // (MPI's contract for MPI_Psend_init).
        let ch = unsafe { SendChannel::new(&c.comm, data, geometry, dest, tag) }.on(&c)?;
        *request = st.add_persistent(Persistent::Partitioned(Channel::Send(Arc::new(ch))), &c).on(&c)?;
        Ok(())
    }

    /// `MPI_Precv_init`.
    fn MPI_Precv_init / PMPI_Precv_init(
        buf: *mut c_void,
        partitions: c_int,
        count: Count,
        datatype: abi::Datatype,
        source: c_int,
        tag: c_int,
        comm: abi::Comm,
        info: abi::Info,
        request: *mut abi::Request,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        // SAFETY: the buffer stays valid for writes while the request exists (MPI's contract).
        let (data, geometry) = unsafe { buffer(&st, &c, buf, partitions, count, datatype) }?;
        let from = match check::dest(&c.comm, source) {
            Ok(Rank::Rank(r)) => From::Rank(r),
            Ok(Rank::ProcNull) => From::ProcNull,
            Err(e) => return Err(e).on(&c),
        };
        let tag = check::send_tag(tag).on(&c)?;
        infos::hints(info).on(&c)?;
        // SAFETY: an output argument.
        let request = unsafe { check::out(request, "request") }.on(&c)?;
        // SAFETY: `data` describes the program's receive buffer, valid for writes while the
        // request exists (MPI's contract for MPI_Precv_init).
        let ch = unsafe { RecvChannel::new(&c.comm, data, geometry, from, tag) }.on(&c)?;
        *request = st.add_persistent(Persistent::Partitioned(Channel::Recv(Arc::new(ch))), &c).on(&c)?;
        Ok(())
    }

    /// `MPI_Pready`: partition `partition` goes on the wire now.
    fn MPI_Pready / PMPI_Pready(partition: c_int, request: abi::Request) {
        let st = state()?;
        let (entry, op) = active(&st, request)?;
        operation(&op).pready(index(partition)).on(&entry.comm)
    }

    /// `MPI_Pready_range`: partitions `partition_low..=partition_high`, each sent as it is marked.
    fn MPI_Pready_range / PMPI_Pready_range(partition_low: c_int, partition_high: c_int, request: abi::Request) {
        let st = state()?;
        let (entry, op) = active(&st, request)?;
        if partition_low > partition_high {
            return Err(Error::other(format!("partition range {partition_low}..={partition_high} is empty"))).on(&entry.comm);
        }
        let op = operation(&op);
        // Both ends are checked before anything is sent.
        for k in [partition_low, partition_high] {
            op.check_partition(index(k)).on(&entry.comm)?;
        }
        (partition_low..=partition_high).try_for_each(|k| op.pready(index(k))).on(&entry.comm)
    }

    /// `MPI_Pready_list`: the `length` partitions of `array_of_partitions`, every one checked
    /// before any is sent.
    fn MPI_Pready_list / PMPI_Pready_list(length: c_int, array_of_partitions: *const c_int, request: abi::Request) {
        let st = state()?;
        let (entry, op) = active(&st, request)?;
        let n = usize::try_from(length).map_err(|_| Error::arg(format!("negative length ({length})"))).on(&entry.comm)?;
        let list: &[c_int] = if n == 0 {
            &[]
        } else {
            // SAFETY: an array of `length` partitions (MPI's contract).
            unsafe { check::array_in(array_of_partitions, n, "array_of_partitions") }.on(&entry.comm)?
        };
        let op = operation(&op);
        for &k in list {
            op.check_partition(index(k)).on(&entry.comm)?;
        }
        list.iter().try_for_each(|&k| op.pready(index(k))).on(&entry.comm)
    }

    /// `MPI_Parrived`: whether receive partition `partition` is all there (drives progress
    /// once when it is not).
    fn MPI_Parrived / PMPI_Parrived(request: abi::Request, partition: c_int, flag: *mut c_int) {
        let st = state()?;
        let entry = st.request(request)?;
        // SAFETY: an output argument.
        let flag = unsafe { check::out(flag, "flag") }?;
        let Some(entry) = entry else {
            *flag = 1;
            return Ok(());
        };
        let Some(op) = entry.op() else {
            if !matches!(entry.req.template(), Some(Persistent::Partitioned(Channel::Recv(_)))) {
                return Err(Error::request("not a partitioned receive request")).on(&entry.comm);
            }
            *flag = 1;
            return Ok(());
        };
        let Some(p) = op.partitioned() else {
            return Err(Error::request("not a partitioned request")).on(&entry.comm);
        };
        *flag = c_int::from(p.parrived(index(partition)).on(&entry.comm)?);
        Ok(())
    }
}
