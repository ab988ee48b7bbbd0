//! Collective operations: `MPI_Barrier`, `MPI_Bcast`, `MPI_Reduce`, `MPI_Allreduce`, blocking,
//! nonblocking and persistent (MPI 4.0), in `int` and `_c` forms (one `family!` entry each),
//! over `madmpi::coll::raw` (buffers as address, count and datatype; derived datatypes are
//! packed and unpacked by the collective's schedule itself, so a nonblocking call's output is
//! unpacked before its request completes). A persistent collective is planned at init (its
//! algorithm chosen, its schedule built) and that plan runs at each start.
//!
//! Check order (MPICH 4.0's, parameter order after the communicator): count, datatype,
//! operation, root, then the buffers (`MPI_ERR_BUFFER`: null with data, `MPI_IN_PLACE` where it
//! is not allowed, send and receive buffers aliased), then the request pointer; the operation
//! must be defined on the datatype (`MPI_ERR_OP`). Every error after the communicator goes to
//! its error handler. A blocking call is the nonblocking one waited for; a persistent init checks
//! the info handle (`MPI_ERR_INFO`) and then the request pointer.

use super::family::family;
use crate::check::{self, CInt};
use crate::comms::CommObj;
use crate::errors::{Fail, On};
use crate::ops::{self, OpRef};
use crate::state::State;
use madmpi::abi;
use madmpi::coll::raw::{self, RawBuf};
use madmpi::datatype::Datatype;
use madmpi::error::Error;
use madmpi::operation::Operation;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// Whether `p` is `MPI_IN_PLACE`.
pub(super) fn in_place(p: *const c_void) -> bool {
    p as usize == abi::MPI_IN_PLACE
}

/// A root: a rank of the communicator (`MPI_ERR_ROOT` otherwise).
pub(super) fn root(c: &Arc<CommObj>, r: c_int) -> Result<u32, Fail> {
    u32::try_from(r)
        .ok()
        .filter(|&r| r < c.comm.size())
        .ok_or_else(|| Error::root(format!("invalid root {r} (communicator of size {})", c.comm.size())))
        .on(c)
}

/// The checked count and datatype of a collective.
pub(super) fn count_type(
    st: &State,
    c: &Arc<CommObj>,
    count: impl CInt,
    datatype: abi::Datatype,
) -> Result<(i64, Datatype), Fail> {
    let count = check::count(count).on(c)?;
    let ty = st.committed_datatype(datatype).on(c)?;
    Ok((count, ty))
}

/// `count` elements of `ty` at `buf`, checked (`MPI_ERR_BUFFER` for a null buffer with data or
/// `MPI_IN_PLACE`, `what` naming it).
pub(super) fn buffer(
    c: &Arc<CommObj>,
    buf: *const c_void,
    count: i64,
    ty: &Datatype,
    what: &str,
) -> Result<RawBuf, Fail> {
    not_in_place(c, buf, what)?;
    check::buffer(buf, count, ty).on(c)?;
    Ok(RawBuf { base: buf.cast_mut().cast(), count: count as usize, dtype: ty.clone() })
}

/// `MPI_ERR_BUFFER` if `buf` is `MPI_IN_PLACE` (`what` names the buffer).
pub(super) fn not_in_place(c: &Arc<CommObj>, buf: *const c_void, what: &str) -> Result<(), Fail> {
    if in_place(buf) {
        return Err(Error::buffer(format!("MPI_IN_PLACE is not allowed as the {what} here"))).on(c);
    }
    Ok(())
}

/// `MPI_ERR_BUFFER` if `send` and `recv` are the same memory and data moves.
pub(super) fn not_aliased(
    c: &Arc<CommObj>,
    send: *const c_void,
    recv: *const c_void,
    data: bool,
) -> Result<(), Fail> {
    if data && std::ptr::eq(send, recv) {
        return Err(Error::buffer("the send and receive buffers are the same (use MPI_IN_PLACE)")).on(c);
    }
    Ok(())
}

/// The operation of handle `op`, checked.
pub(super) fn operation(c: &Arc<CommObj>, op: abi::Op) -> Result<OpRef, Fail> {
    ops::resolve(op).on(c)
}

/// A barrier (nothing to check).
///
/// # Safety
/// Nothing: `unsafe` only to share the build functions' shape.
unsafe fn barrier(_st: &State, c: &Arc<CommObj>, _call: &'static str) -> Result<Operation, Fail> {
    raw::barrier(&c.comm).map(Operation::Collective).on(c)
}

/// A broadcast, checked.
///
/// # Safety
/// `buf` holds the data until the request completes (MPI's contract).
unsafe fn bcast(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    buf: *mut c_void,
    count: impl CInt,
    datatype: abi::Datatype,
    root_rank: c_int,
) -> Result<Operation, Fail> {
    if c.comm.is_inter() {
        // SAFETY: the buffers (and, at the root, the count arrays) are as this function's
        // contract says, which is the intercommunicator version's.
        return unsafe { super::coll_inter::bcast(st, c, buf, count, datatype, root_rank) };
    }
    let (count, ty) = count_type(st, c, count, datatype)?;
    let root = root(c, root_rank)?;
    let b = buffer(c, buf, count, &ty, "buffer")?;
    raw::bcast(&c.comm, &b, root).map(Operation::Collective).on(c)
}

/// A reduce, checked.
///
/// # Safety
/// The buffers are valid until the request completes (MPI's contract).
#[allow(clippy::too_many_arguments)]
unsafe fn reduce(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: impl CInt,
    datatype: abi::Datatype,
    op: abi::Op,
    root_rank: c_int,
) -> Result<Operation, Fail> {
    if c.comm.is_inter() {
        // SAFETY: the buffers (and, at the root, the count arrays) are as this function's
        // contract says, which is the intercommunicator version's.
        return unsafe { super::coll_inter::reduce(st, c, sendbuf, recvbuf, count, datatype, op, root_rank) };
    }
    let (count, ty) = count_type(st, c, count, datatype)?;
    let o = operation(c, op)?;
    let root = root(c, root_rank)?;
    let at_root = c.comm.rank() == root;
    let send = if at_root && in_place(sendbuf) {
        None
    } else {
        Some(buffer(c, sendbuf, count, &ty, "send buffer")?)
    };
    let recv = if at_root {
        let r = buffer(c, recvbuf, count, &ty, "receive buffer")?;
        not_aliased(c, sendbuf, recvbuf, count > 0)?;
        Some(r)
    } else {
        None
    };
    let op = o.op(datatype);
    raw::reduce(&c.comm, send.as_ref(), recv.as_ref(), &op, root).map(Operation::Collective).on(c)
}

/// An allreduce, checked.
///
/// # Safety
/// The buffers are valid until the request completes (MPI's contract).
#[allow(clippy::too_many_arguments)]
unsafe fn allreduce(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: impl CInt,
    datatype: abi::Datatype,
    op: abi::Op,
) -> Result<Operation, Fail> {
    let (count, ty) = count_type(st, c, count, datatype)?;
    let o = operation(c, op)?;
    let send = if in_place(sendbuf) { None } else { Some(buffer(c, sendbuf, count, &ty, "send buffer")?) };
    let recv = buffer(c, recvbuf, count, &ty, "receive buffer")?;
    not_aliased(c, sendbuf, recvbuf, count > 0)?;
    let op = o.op(datatype);
    raw::allreduce(&c.comm, send.as_ref(), &recv, &op).map(Operation::Collective).on(c)
}

family! {
    ()
    /// Barrier.
    => barrier[];
    run_hot MPI_Barrier / PMPI_Barrier;
    start MPI_Ibarrier / PMPI_Ibarrier;
    init_info MPI_Barrier_init / PMPI_Barrier_init;

    (buffer: *mut c_void, count: Count, datatype: abi::Datatype, root: c_int)
    /// Broadcast from `root`.
    => bcast[];
    run_hot MPI_Bcast / PMPI_Bcast, MPI_Bcast_c / PMPI_Bcast_c;
    start MPI_Ibcast / PMPI_Ibcast, MPI_Ibcast_c / PMPI_Ibcast_c;
    init_info MPI_Bcast_init / PMPI_Bcast_init, MPI_Bcast_init_c / PMPI_Bcast_init_c;

    (
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: Count,
        datatype: abi::Datatype,
        op: abi::Op,
        root: c_int,
    )
    /// Reduce to `root`: `MPI_IN_PLACE` as the send buffer at the root only.
    => reduce[];
    run_hot MPI_Reduce / PMPI_Reduce, MPI_Reduce_c / PMPI_Reduce_c;
    start MPI_Ireduce / PMPI_Ireduce, MPI_Ireduce_c / PMPI_Ireduce_c;
    init_info MPI_Reduce_init / PMPI_Reduce_init, MPI_Reduce_init_c / PMPI_Reduce_init_c;

    (
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: Count,
        datatype: abi::Datatype,
        op: abi::Op,
    )
    /// Reduce to every rank: `MPI_IN_PLACE` as the send buffer everywhere.
    => allreduce[];
    run_hot MPI_Allreduce / PMPI_Allreduce, MPI_Allreduce_c / PMPI_Allreduce_c;
    start MPI_Iallreduce / PMPI_Iallreduce, MPI_Iallreduce_c / PMPI_Iallreduce_c;
    init_info MPI_Allreduce_init / PMPI_Allreduce_init, MPI_Allreduce_init_c / PMPI_Allreduce_init_c;
}

/// The express paths of the blocking barrier, broadcast, reduce and allreduce (`run_hot`): a
/// builtin datatype (and operation) and a few bytes on this thread's recent communicator go to
/// `madmpi::coll::express`, which runs them node-locally, replays the flat schedule's messages
/// (not for reduce) or declines (`None`, nothing done); the general path then runs and reports
/// every argument error.
#[allow(non_snake_case)]
mod hot {
    use super::*;
    use crate::datatypes::builtin_elem;
    use crate::errors::Outcome;
    use madmpi::op::Op;

    /// An express call's result, a failure going to the communicator's handler.
    fn reported(comm: abi::Comm, r: madmpi::error::Result<()>) -> Outcome {
        r.or_else(|e| crate::comms::fail_on(comm, e))
    }

    /// # Safety
    /// Nothing: `unsafe` as every express call.
    #[inline(always)]
    pub(super) unsafe fn MPI_Barrier(comm: abi::Comm) -> Option<Outcome> {
        let r = crate::comms::hot(comm, |c| c.comm.barrier_now())?;
        Some(reported(comm, r))
    }

    /// # Safety
    /// `buffer` holds `count` elements of `datatype` (MPI's contract).
    #[inline(always)]
    pub(super) unsafe fn MPI_Bcast(
        buffer: *mut c_void,
        count: impl CInt,
        datatype: abi::Datatype,
        root: c_int,
        comm: abi::Comm,
    ) -> Option<Outcome> {
        let (_, size) = builtin_elem(datatype)?;
        let len = usize::try_from(u64::try_from(count.wide()).ok()?.checked_mul(size as u64)?).ok()?;
        let root = u32::try_from(root).ok()?;
        // SAFETY: `len` bytes at `buffer`, ours during the call (our contract).
        let r = crate::comms::hot(comm, |c| unsafe { c.comm.bcast_now(buffer.cast(), len, root) })?;
        Some(reported(comm, r))
    }

    pub(super) use MPI_Bcast as MPI_Bcast_c;

    /// # Safety
    /// The buffers hold `count` elements of `datatype` (MPI's contract).
    #[inline(always)]
    pub(super) unsafe fn MPI_Allreduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: impl CInt,
        datatype: abi::Datatype,
        op: abi::Op,
        comm: abi::Comm,
    ) -> Option<Outcome> {
        let (send, count, dtype, op) = reduction(sendbuf, recvbuf, count, datatype, op)?;
        // SAFETY: the buffers hold `count` elements, ours during the call (our contract).
        let r = crate::comms::hot(comm, |c| unsafe {
            c.comm.allreduce_now(send, recvbuf.cast(), count, dtype, op)
        })?;
        Some(reported(comm, r))
    }

    pub(super) use MPI_Allreduce as MPI_Allreduce_c;

    /// A reduction's express arguments: the input (`None`: in place), the count, the builtin
    /// datatype and operation; `None` for anything else (a derived type, a user operation, a
    /// negative count, aliased buffers: the general path reports what is wrong).
    fn reduction(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: impl CInt,
        datatype: abi::Datatype,
        op: abi::Op,
    ) -> Option<(Option<*const u8>, usize, &'static Datatype, &'static Op)> {
        let (p, _) = builtin_elem(datatype)?;
        let b = ops::builtin(op)?;
        let count = usize::try_from(count.wide()).ok()?;
        let send = (!in_place(sendbuf)).then_some(sendbuf.cast::<u8>());
        if send.is_some_and(|s| std::ptr::eq(s, recvbuf.cast_const().cast())) {
            return None;
        }
        Some((send, count, Datatype::predefined_ref(p), Op::builtin_ref(b)))
    }

    /// # Safety
    /// The buffers hold `count` elements of `datatype` (MPI's contract).
    #[inline(always)]
    pub(super) unsafe fn MPI_Reduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: impl CInt,
        datatype: abi::Datatype,
        op: abi::Op,
        root: c_int,
        comm: abi::Comm,
    ) -> Option<Outcome> {
        let root = u32::try_from(root).ok()?;
        let (send, count, dtype, op) = reduction(sendbuf, recvbuf, count, datatype, op)?;
        // SAFETY: the buffers hold `count` elements, ours during the call (our contract).
        let r = crate::comms::hot(comm, |c| unsafe {
            c.comm.reduce_now(send, recvbuf.cast(), count, dtype, op, root)
        })?;
        Some(reported(comm, r))
    }

    pub(super) use MPI_Reduce as MPI_Reduce_c;
}
