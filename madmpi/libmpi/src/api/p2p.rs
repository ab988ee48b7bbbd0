//! Point-to-point: the sends (standard, synchronous, ready, buffered), receives, send-receives
//! and send-receives in place, each blocking, nonblocking and (sends and receives) persistent,
//! in `int` and `_c` forms: one `family!` entry per call, over one build function per kind of
//! operation. Then `MPI_Probe` and `MPI_Iprobe`
//! (`MPI_Get_count(_c)` is with the datatype calls). The argument checks here
//! serve the matched receives too.
//!
//! Check order (MPICH 4.0.2, observed): communicator, count, datatype, buffer, rank, tag, then
//! the status or request pointer.

use super::data;
use super::family::family;
use crate::check::{self, CInt};
use crate::comms::CommObj;
use crate::errors::{Fail, On};
use crate::export::export;
use crate::state::{State, state};
use crate::status;
use madmpi::abi;
use madmpi::datatype::Datatype;
use madmpi::operation::Operation;
use madmpi::p2p::{From, Rank, Tag};
use madmpi::request::Mode;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// The checked arguments of a send.
pub(super) struct Send {
    pub(super) data: nmad::Data,
    pub(super) dest: Rank,
    pub(super) tag: i32,
}

/// The checked arguments of a receive.
pub(super) struct Recv {
    pub(super) data: nmad::Data,
    pub(super) from: From,
    pub(super) tag: Tag,
}

/// Checks the arguments of a send on `c`, in MPICH's order (count, datatype, buffer, rank, tag).
///
/// # Safety
/// The memory the type map addresses from `buf` must stay valid for reads until the send
/// completes.
pub(super) unsafe fn send_args(
    st: &State,
    c: &Arc<CommObj>,
    buf: *const c_void,
    count: impl CInt,
    datatype: abi::Datatype,
    dest: c_int,
    tag: c_int,
) -> Result<Send, Fail> {
    let count = check::count(count).on(c)?;
    let ty = st.committed_datatype(datatype).on(c)?;
    // SAFETY: the caller's contract.
    let data = unsafe { checked_data(c, &ty, buf, count) }?;
    let dest = check::dest(&c.comm, dest).on(c)?;
    let tag = check::send_tag(tag).on(c)?;
    Ok(Send { data, dest, tag })
}

/// Checks the arguments of a receive on `c`, in MPICH's order.
///
/// # Safety
/// The memory the type map addresses from `buf` must stay valid for writes until the receive
/// completes.
pub(super) unsafe fn recv_args(
    st: &State,
    c: &Arc<CommObj>,
    buf: *mut c_void,
    count: impl CInt,
    datatype: abi::Datatype,
    source: c_int,
    tag: c_int,
) -> Result<Recv, Fail> {
    let count = check::count(count).on(c)?;
    let ty = st.committed_datatype(datatype).on(c)?;
    // SAFETY: the caller's contract.
    let data = unsafe { checked_data(c, &ty, buf, count) }?;
    let from = check::source(&c.comm, source).on(c)?;
    let tag = check::recv_tag(tag).on(c)?;
    Ok(Recv { data, from, tag })
}

/// The description of a communication buffer, checked (`MPI_ERR_BUFFER` for a null buffer
/// with data).
///
/// # Safety
/// As [`super::data`].
pub(super) unsafe fn checked_data(
    c: &Arc<CommObj>,
    ty: &Datatype,
    buf: *const c_void,
    count: i64,
) -> Result<nmad::Data, Fail> {
    check::buffer(buf, count, ty).on(c)?;
    // SAFETY: the caller's contract.
    unsafe { data(ty, buf, count) }.on(c)
}

/// How a send goes, as its C name says.
#[derive(Clone, Copy)]
enum How {
    Standard,
    Synchronous,
    /// A standard send: MPI lets a ready send be one (a ready send with no receive posted is
    /// erroneous, and not detected).
    Ready,
    /// Copied into the attached buffer (`MPI_Buffer_attach`); `MPI_ERR_BUFFER` if no buffer is
    /// attached or the message does not fit.
    Buffered,
}

/// A send of any mode (see [`How`]).
///
/// # Safety
/// As [`send_args`].
#[allow(clippy::too_many_arguments)]
unsafe fn send(
    st: &State,
    c: &Arc<CommObj>,
    call: &'static str,
    how: How,
    buf: *const c_void,
    count: impl CInt,
    datatype: abi::Datatype,
    dest: c_int,
    tag: c_int,
) -> Result<Operation, Fail> {
    // SAFETY: `buf` stays readable until the operation built here completes (our contract),
    // which is what `send_args` asks.
    let Send { data, dest, tag } = unsafe { send_args(st, c, buf, count, datatype, dest, tag) }?;
    let comm = c.comm.clone();
    Ok(match how {
        How::Standard | How::Ready => Operation::Send { comm, call, data, dest, tag, mode: Mode::Standard },
        How::Synchronous => Operation::Send { comm, call, data, dest, tag, mode: Mode::Synchronous },
        How::Buffered => Operation::Bsend { comm, call, data, dest, tag },
    })
}

/// A receive.
///
/// # Safety
/// As [`recv_args`].
#[allow(clippy::too_many_arguments)]
unsafe fn recv(
    st: &State,
    c: &Arc<CommObj>,
    call: &'static str,
    buf: *mut c_void,
    count: impl CInt,
    datatype: abi::Datatype,
    source: c_int,
    tag: c_int,
) -> Result<Operation, Fail> {
    // SAFETY: `buf` stays writable until the operation built here completes (our contract),
    // which is what `recv_args` asks.
    let Recv { data, from, tag } = unsafe { recv_args(st, c, buf, count, datatype, source, tag) }?;
    Ok(Operation::Recv { comm: c.comm.clone(), call, data, from, tag })
}

/// A send-receive: the send's checks, then the receive's.
///
/// # Safety
/// `sendbuf` readable and `recvbuf` writable until the operation completes.
#[allow(clippy::too_many_arguments)]
unsafe fn sendrecv(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    sendbuf: *const c_void,
    sendcount: impl CInt,
    sendtype: abi::Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: impl CInt,
    recvtype: abi::Datatype,
    source: c_int,
    recvtag: c_int,
) -> Result<Operation, Fail> {
    // SAFETY: `sendbuf` stays readable until the operation built here completes (our contract),
    // as `send_args` asks.
    let s = unsafe { send_args(st, c, sendbuf, sendcount, sendtype, dest, sendtag) }?;
    // SAFETY: `recvbuf` stays writable as long (our contract), as `recv_args` asks.
    let r = unsafe { recv_args(st, c, recvbuf, recvcount, recvtype, source, recvtag) }?;
    Ok(Operation::SendRecv {
        comm: c.comm.clone(),
        send: s.data,
        dest: s.dest,
        send_tag: s.tag,
        recv: r.data,
        from: r.from,
        recv_tag: r.tag,
    })
}

/// A send-receive in one buffer (the outgoing message is packed away when it starts). Checks
/// as MPICH: count, datatype, buffer, dest, sendtag, source, recvtag.
///
/// # Safety
/// `buf` readable and writable until the operation completes.
#[allow(clippy::too_many_arguments)]
unsafe fn sendrecv_replace(
    st: &State,
    c: &Arc<CommObj>,
    _call: &'static str,
    buf: *mut c_void,
    count: impl CInt,
    datatype: abi::Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
) -> Result<Operation, Fail> {
    // SAFETY: `buf` stays readable and writable until the operation built here completes (our
    // contract), which is what `send_args` asks of a send buffer.
    let s = unsafe { send_args(st, c, buf, count, datatype, dest, sendtag) }?;
    let from = check::source(&c.comm, source).on(c)?;
    let recv_tag = check::recv_tag(recvtag).on(c)?;
    let comm = c.comm.clone();
    Ok(Operation::SendRecvReplace { comm, data: s.data, dest: s.dest, send_tag: s.tag, from, recv_tag })
}

/// The express paths of the calls whose `family!` form is `run_hot` or `run_status_hot`: each
/// does the call and returns its outcome, or declines (`None`, nothing done) and the general
/// path runs, which also reports every argument error. Named as the calls, as the forms find
/// them.
#[allow(non_snake_case)]
mod hot {
    use super::*;
    use crate::datatypes::builtin_elem;
    use crate::errors::{AsOwner, Outcome};
    use crate::requests::express::{EXPRESS, Live};
    use madmpi::p2p::{From, Tag};
    use madmpi::request::RawRequest;

    /// The bytes of `count` elements of a builtin `datatype` (one contiguous block), if it is
    /// one and the count is valid.
    #[inline(always)]
    fn contiguous_len(buf: *const c_void, count: impl CInt, datatype: abi::Datatype) -> Option<usize> {
        let (_, size) = builtin_elem(datatype)?;
        let len = usize::try_from(u64::try_from(count.wide()).ok()?.checked_mul(size as u64)?).ok()?;
        (!buf.is_null() || len == 0).then_some(len)
    }

    /// `MPI_Send` of a builtin datatype on this thread's recent communicator, when nmad's
    /// latency path takes it (`Comm::send_now`): no state, no request, no reference count.
    ///
    /// # Safety
    /// `buf` holds `count` elements of `datatype`, readable during the call (MPI's contract).
    #[inline(always)]
    pub(super) unsafe fn MPI_Send(
        buf: *const c_void,
        count: impl CInt,
        datatype: abi::Datatype,
        dest: c_int,
        tag: c_int,
        comm: abi::Comm,
    ) -> Option<Outcome> {
        let bytes = match contiguous_len(buf, count, datatype)? {
            0 => &[][..],
            // SAFETY: `len` bytes at `buf` are the message, readable during the call (our
            // contract), and not null.
            len => unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) },
        };
        crate::comms::hot(comm, |c| c.comm.send_now(dest, tag, bytes).then_some(Ok(())))
    }

    pub(super) use MPI_Send as MPI_Send_c;

    /// `MPI_Isend` whose message leaves at once (as [`MPI_Send`]'s): no request is made, the
    /// handle is [`COMPLETED`](crate::requests::COMPLETED).
    ///
    /// # Safety
    /// As [`MPI_Send`]; `request` is an output argument (MPI's contract).
    #[inline(always)]
    pub(super) unsafe fn MPI_Isend(
        buf: *const c_void,
        count: impl CInt,
        datatype: abi::Datatype,
        dest: c_int,
        tag: c_int,
        comm: abi::Comm,
        request: *mut abi::Request,
    ) -> Option<Outcome> {
        // SAFETY: an output argument (our contract).
        let request = unsafe { check::out(request, "request") }.ok()?;
        // SAFETY: our contract, passed on.
        let sent = unsafe { MPI_Send(buf, count, datatype, dest, tag, comm) }?;
        *request = crate::requests::COMPLETED;
        Some(sent)
    }

    pub(super) use MPI_Isend as MPI_Isend_c;

    /// `MPI_Recv` of a builtin datatype from a rank or `MPI_ANY_SOURCE` on this thread's recent
    /// communicator: the receive runs with the arguments checked here, without the state or an
    /// operation; a failure (a truncated message, say) goes to the communicator's handler.
    ///
    /// # Safety
    /// `buf` is writable for `count` elements of `datatype` and `status` is an output argument
    /// (MPI's contract).
    #[inline(always)]
    pub(super) unsafe fn MPI_Recv(
        buf: *mut c_void,
        count: impl CInt,
        datatype: abi::Datatype,
        source: c_int,
        tag: c_int,
        comm: abi::Comm,
        status: *mut abi::Status,
    ) -> Option<Outcome> {
        // SAFETY: our contract, passed on.
        let (data, from, tag) = unsafe { receive_args(buf, count, datatype, source, tag) }?;
        // SAFETY: an output argument (our contract).
        let status = unsafe { check::status(status) }.ok()?;
        let o = crate::comms::hot(comm, |c| {
            // SAFETY: `data` is writable until the blocking receive returns.
            inside(c, from).then(|| unsafe { c.comm.recv_data("MPI_Recv", data.clone(), from, tag) })
        })?;
        Some(match o {
            Ok(o) => {
                crate::status::outcome(status, &o);
                o.error.map_or(Ok(()), |e| crate::comms::fail_on(comm, e))
            }
            Err(e) => crate::comms::fail_on(comm, e),
        })
    }

    pub(super) use MPI_Recv as MPI_Recv_c;

    /// `MPI_Irecv` of a builtin datatype from a rank or `MPI_ANY_SOURCE` on this thread's
    /// recent communicator: the receive is posted with the arguments checked here and its
    /// request stored (from a rank: in the express table), without the state's communicator
    /// lookup.
    ///
    /// # Safety
    /// `buf` is writable for `count` elements of `datatype` until the request completes, and
    /// `request` is an output argument (MPI's contract).
    #[inline(always)]
    pub(super) unsafe fn MPI_Irecv(
        buf: *mut c_void,
        count: impl CInt,
        datatype: abi::Datatype,
        source: c_int,
        tag: c_int,
        comm: abi::Comm,
        request: *mut abi::Request,
    ) -> Option<Outcome> {
        // SAFETY: our contract, passed on.
        let (data, from, tag) = unsafe { receive_args(buf, count, datatype, source, tag) }?;
        // SAFETY: an output argument (our contract).
        let request = unsafe { check::out(request, "request") }.ok()?;
        let handle = crate::comms::hot_shared(comm, |c| {
            if !inside(c, from) {
                return None;
            }
            // From one rank: the express table (a receive from any source stays with the
            // general path, whose waits apply ULFM's rule to it).
            let ticket = match from {
                From::Rank(_) => EXPRESS.reserve(),
                _ => None,
            };
            // SAFETY: `data` stays writable until the request completes (our contract).
            let raw = unsafe { RawRequest::irecv(&c.comm, data.clone(), from, tag) }.ok()?;
            match ticket {
                Some(t) => {
                    Some(EXPRESS.fill(t, Live { op: madmpi::operation::shared(raw), owner: c.owner() }))
                }
                // No state (a call racing the end): `raw`'s drop cancels the receive.
                None => crate::state::with_state(|st| st.add_request(raw, c).ok()).flatten(),
            }
        })?;
        *request = handle;
        Some(Ok(()))
    }

    pub(super) use MPI_Irecv as MPI_Irecv_c;

    /// A receive's buffer of a builtin `datatype`, source and tag as the Rust API's; `None`
    /// for anything else (the general path handles or reports it).
    ///
    /// # Safety
    /// `buf` is writable for `count` elements of `datatype` as long as the returned data is
    /// used (the caller's contract).
    #[inline(always)]
    unsafe fn receive_args(
        buf: *mut c_void,
        count: impl CInt,
        datatype: abi::Datatype,
        source: c_int,
        tag: c_int,
    ) -> Option<(nmad::Data, From, Tag)> {
        let len = contiguous_len(buf, count, datatype)?;
        // SAFETY: `len` writable bytes at `buf` (our contract).
        let data = unsafe { nmad::Data::from_raw(buf.cast(), len) };
        Some((data, from_of(source)?, tag_of(tag)?))
    }

    /// Whether `from` is in the communicator (or any source).
    fn inside(c: &CommObj, from: From) -> bool {
        match from {
            From::Rank(r) => r < c.comm.peer_size(),
            _ => true,
        }
    }

    /// An MPI source as the Rust API's (`MPI_ANY_SOURCE` or a rank; `None`: another value,
    /// which the general path handles or reports).
    fn from_of(source: c_int) -> Option<From> {
        match source {
            abi::MPI_ANY_SOURCE => Some(From::Any),
            _ => Some(From::Rank(u32::try_from(source).ok()?)),
        }
    }

    /// An MPI tag as the Rust API's (`MPI_ANY_TAG` or a non-negative tag).
    fn tag_of(tag: c_int) -> Option<Tag> {
        match tag {
            abi::MPI_ANY_TAG => Some(Tag::Any),
            _ => Some(Tag::Tag(u32::try_from(tag).ok()? as i32)),
        }
    }
}

family! {
    (buf: *const c_void, count: Count, datatype: abi::Datatype, dest: c_int, tag: c_int)
    /// A standard send.
    => send[How::Standard];
    run_hot MPI_Send / PMPI_Send, MPI_Send_c / PMPI_Send_c;
    start_hot MPI_Isend / PMPI_Isend, MPI_Isend_c / PMPI_Isend_c;
    init MPI_Send_init / PMPI_Send_init, MPI_Send_init_c / PMPI_Send_init_c;
    /// A synchronous send: complete once the receiver matched the message.
    => send[How::Synchronous];
    run MPI_Ssend / PMPI_Ssend, MPI_Ssend_c / PMPI_Ssend_c;
    start MPI_Issend / PMPI_Issend, MPI_Issend_c / PMPI_Issend_c;
    init MPI_Ssend_init / PMPI_Ssend_init, MPI_Ssend_init_c / PMPI_Ssend_init_c;
    /// A ready send: a standard send (MPI lets a ready send be one; a ready send with no
    /// receive posted is erroneous, and not detected).
    => send[How::Ready];
    run MPI_Rsend / PMPI_Rsend, MPI_Rsend_c / PMPI_Rsend_c;
    start MPI_Irsend / PMPI_Irsend, MPI_Irsend_c / PMPI_Irsend_c;
    init MPI_Rsend_init / PMPI_Rsend_init, MPI_Rsend_init_c / PMPI_Rsend_init_c;
    /// A buffered send: the message is copied into the attached buffer (its size plus
    /// `MPI_BSEND_OVERHEAD` bytes) and the call returns; `MPI_ERR_BUFFER` if no buffer is
    /// attached or the message does not fit. A nonblocking or persistent one's request is
    /// complete once started (the message was copied away, as in MPICH).
    => send[How::Buffered];
    run MPI_Bsend / PMPI_Bsend, MPI_Bsend_c / PMPI_Bsend_c;
    start MPI_Ibsend / PMPI_Ibsend, MPI_Ibsend_c / PMPI_Ibsend_c;
    init MPI_Bsend_init / PMPI_Bsend_init, MPI_Bsend_init_c / PMPI_Bsend_init_c;

    (buf: *mut c_void, count: Count, datatype: abi::Datatype, source: c_int, tag: c_int)
    /// A receive: a longer message than the buffer is `MPI_ERR_TRUNCATE`, with the status of
    /// what was stored.
    => recv[];
    run_status_hot MPI_Recv / PMPI_Recv, MPI_Recv_c / PMPI_Recv_c;
    start_hot MPI_Irecv / PMPI_Irecv, MPI_Irecv_c / PMPI_Irecv_c;
    init MPI_Recv_init / PMPI_Recv_init, MPI_Recv_init_c / PMPI_Recv_init_c;

    (
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: abi::Datatype,
        dest: c_int,
        sendtag: c_int,
        recvbuf: *mut c_void,
        recvcount: Count,
        recvtype: abi::Datatype,
        source: c_int,
        recvtag: c_int,
    )
    /// A send and a receive together: the receive is posted first, so two processes
    /// exchanging never deadlock; the status is the receive's.
    => sendrecv[];
    run_status MPI_Sendrecv / PMPI_Sendrecv, MPI_Sendrecv_c / PMPI_Sendrecv_c;
    start MPI_Isendrecv / PMPI_Isendrecv, MPI_Isendrecv_c / PMPI_Isendrecv_c;

    (
        buf: *mut c_void,
        count: Count,
        datatype: abi::Datatype,
        dest: c_int,
        sendtag: c_int,
        source: c_int,
        recvtag: c_int,
    )
    /// A send-receive in one buffer (any datatype): the message is packed into a temporary
    /// buffer, then the receive into `buf` is posted and the packed bytes sent.
    => sendrecv_replace[];
    run_status MPI_Sendrecv_replace / PMPI_Sendrecv_replace, MPI_Sendrecv_replace_c / PMPI_Sendrecv_replace_c;
    start MPI_Isendrecv_replace / PMPI_Isendrecv_replace, MPI_Isendrecv_replace_c / PMPI_Isendrecv_replace_c;
}

export! {
    /// `MPI_Probe`: waits for a matching message; its status tells its size.
    fn MPI_Probe / PMPI_Probe(source: c_int, tag: c_int, comm: abi::Comm, status: *mut abi::Status) {
        let st = state()?;
        let c = st.comm(comm)?;
        let from = check::source(&c.comm, source).on(&c)?;
        let tag = check::recv_tag(tag).on(&c)?;
        // SAFETY: an output argument.
        let status = unsafe { check::status(status) }.on(&c)?;
        let found = c.comm.probe(from, tag).on(&c)?;
        status::fill(status, &found);
        Ok(())
    }

    /// `MPI_Iprobe`.
    fn MPI_Iprobe / PMPI_Iprobe(
        source: c_int,
        tag: c_int,
        comm: abi::Comm,
        flag: *mut c_int,
        status: *mut abi::Status,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        let from = check::source(&c.comm, source).on(&c)?;
        let tag = check::recv_tag(tag).on(&c)?;
        // SAFETY: output arguments.
        let flag = unsafe { check::out(flag, "flag") }.on(&c)?;
        // SAFETY: as above.
        let status = unsafe { check::status(status) }.on(&c)?;
        let found = c.comm.iprobe(from, tag).on(&c)?;
        *flag = c_int::from(found.is_some());
        if let Some(found) = found {
            status::fill(status, &found);
        }
        Ok(())
    }
}
