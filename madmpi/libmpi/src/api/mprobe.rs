//! Matched probes and receives: `MPI_Mprobe`, `MPI_Improbe`, `MPI_Mrecv(_c)`, `MPI_Imrecv(_c)`. A
//! matched probe takes the message out of matching (no other thread's receive or probe can get
//! it) and hands back a message handle; the receive takes the handle, which becomes
//! `MPI_MESSAGE_NULL`. The probe of `MPI_PROC_NULL` gives `MPI_MESSAGE_NO_PROC`, whose receive
//! completes at once with the status of `MPI_PROC_NULL`.
//!
//! Errors before the message is resolved go to `MPI_COMM_WORLD`'s handler, later ones to its
//! communicator's. Checks follow MPICH: the message (pointer, then handle), count, datatype,
//! buffer, then the status or request pointer.

use super::p2p::checked_data;
use crate::check::{self, CInt};
use crate::comms::CommObj;
use crate::errors::{Fail, On, Outcome};
use crate::export::export;
use crate::messages::MsgRef;
use crate::state::{State, state};
use crate::status;
use madmpi::abi::{self, Status};
use madmpi::request::{Outcome as OpOutcome, RawRequest};
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// The checked arguments of a matched receive: what the message handle stands for, its
/// communicator, and the receive buffer's description.
struct MrecvArgs<'a> {
    handle: &'a mut abi::Message,
    target: MsgRef,
    comm: Arc<CommObj>,
    data: nmad::Data,
}

/// Checks the message and the buffer of `MPI_Mrecv` / `MPI_Imrecv`.
///
/// # Safety
/// `message` as `check::out`; the buffer stays writable until the receive completes.
unsafe fn mrecv_args<'a>(
    st: &State,
    buf: *mut c_void,
    count: impl CInt,
    datatype: abi::Datatype,
    message: *mut abi::Message,
) -> Result<MrecvArgs<'a>, Fail> {
    // SAFETY: the caller's contract.
    let handle = unsafe { check::out(message, "message") }?;
    let target = st.message(*handle)?;
    let comm = match &target {
        MsgRef::Msg(m) => m.comm.clone(),
        MsgRef::NoProc => st.world.clone(),
    };
    let count = check::count(count).on(&comm)?;
    let ty = st.committed_datatype(datatype).on(&comm)?;
    // SAFETY: the caller's contract.
    let data = unsafe { checked_data(&comm, &ty, buf, count) }?;
    Ok(MrecvArgs { handle, target, comm, data })
}

impl MrecvArgs<'_> {
    /// Starts the receive: takes the message (its handle becomes `MPI_MESSAGE_NULL`).
    ///
    /// # Safety
    /// As [`mrecv_args`].
    unsafe fn start(self, st: &State) -> Result<(RawRequest, Arc<CommObj>), Fail> {
        let raw = match self.target {
            MsgRef::NoProc => RawRequest::completed(&self.comm.comm),
            MsgRef::Msg(_) => {
                let m = st.take_message(*self.handle).on(&self.comm)?;
                // SAFETY: the caller's contract.
                unsafe { m.irecv_raw(self.data) }.on(&self.comm)?
            }
        };
        *self.handle = abi::MPI_MESSAGE_NULL;
        Ok((raw, self.comm))
    }
}

/// Stores the message a probe took (`MPI_MESSAGE_NO_PROC` for `MPI_PROC_NULL`) and fills the
/// status with its envelope and length.
fn publish(
    st: &State,
    c: &Arc<CommObj>,
    m: madmpi::p2p::mprobe::Message,
    message: &mut abi::Message,
    status: Option<&mut Status>,
) -> Outcome {
    let envelope = m.status();
    *message = st.add_message(m, c).on(c)?;
    status::fill(status, &envelope);
    Ok(())
}

/// `MPI_Mrecv` of either width: receives the matched message; a longer one than the buffer
/// is `MPI_ERR_TRUNCATE`, with the status of what was stored.
///
/// # Safety
/// The buffer is writable during the call; `message` and `status` as MPI specifies.
unsafe fn mrecv(
    buf: *mut c_void,
    count: impl CInt,
    datatype: abi::Datatype,
    message: *mut abi::Message,
    status: *mut Status,
) -> Outcome {
    let st = state()?;
    // SAFETY: the buffer is writable during this blocking call (the caller's contract).
    let args = unsafe { mrecv_args(&st, buf, count, datatype, message) }?;
    // SAFETY: an output argument (the caller's contract).
    let status = unsafe { check::status(status) }.on(&args.comm)?;
    // SAFETY: the buffer as above; the receive is waited for below.
    let (raw, c) = unsafe { args.start(&st) }?;
    let _ = raw.wait();
    let o: OpOutcome = raw.outcome().expect("waited for");
    status::outcome(status, &o);
    o.error.map_or(Ok(()), Err).on(&c)
}

/// `MPI_Imrecv` of either width: starts receiving the matched message; the request owns it.
///
/// # Safety
/// The buffer stays writable until the request completes; `message` and `request` as MPI
/// specifies.
unsafe fn imrecv(
    buf: *mut c_void,
    count: impl CInt,
    datatype: abi::Datatype,
    message: *mut abi::Message,
    request: *mut abi::Request,
) -> Outcome {
    let st = state()?;
    // SAFETY: the buffer stays writable until the request completes (the caller's contract).
    let args = unsafe { mrecv_args(&st, buf, count, datatype, message) }?;
    // SAFETY: an output argument (the caller's contract).
    let request = unsafe { check::out(request, "request") }.on(&args.comm)?;
    // SAFETY: the buffer as above.
    let (raw, c) = unsafe { args.start(&st) }?;
    *request = st.add_request(raw, &c).on(&c)?;
    Ok(())
}

export! {
    /// `MPI_Mprobe`: waits for a matching message and takes it.
    fn MPI_Mprobe / PMPI_Mprobe(source: c_int, tag: c_int, comm: abi::Comm, message: *mut abi::Message, status: *mut Status) {
        let st = state()?;
        let c = st.comm(comm)?;
        let from = check::source(&c.comm, source).on(&c)?;
        let tag = check::recv_tag(tag).on(&c)?;
        // SAFETY: output arguments.
        let message = unsafe { check::out(message, "message") }.on(&c)?;
        // SAFETY: as above.
        let status = unsafe { check::status(status) }.on(&c)?;
        let m = c.comm.mprobe(from, tag).on(&c)?;
        publish(&st, &c, m, message, status)
    }

    /// `MPI_Improbe`: takes a matching message if one is there (`flag` 1); else `flag` 0 and
    /// `MPI_MESSAGE_NULL` (as MPICH).
    fn MPI_Improbe / PMPI_Improbe(
        source: c_int,
        tag: c_int,
        comm: abi::Comm,
        flag: *mut c_int,
        message: *mut abi::Message,
        status: *mut Status,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        let from = check::source(&c.comm, source).on(&c)?;
        let tag = check::recv_tag(tag).on(&c)?;
        // SAFETY: output arguments.
        let flag = unsafe { check::out(flag, "flag") }.on(&c)?;
        // SAFETY: as above.
        let message = unsafe { check::out(message, "message") }.on(&c)?;
        // SAFETY: as above.
        let status = unsafe { check::status(status) }.on(&c)?;
        let found = c.comm.improbe(from, tag).on(&c)?;
        *flag = c_int::from(found.is_some());
        *message = abi::MPI_MESSAGE_NULL;
        match found {
            Some(m) => publish(&st, &c, m, message, status),
            None => Ok(()),
        }
    }


    /// `MPI_Mrecv`.
    fn MPI_Mrecv / PMPI_Mrecv(
        buf: *mut c_void,
        count: c_int,
        datatype: abi::Datatype,
        message: *mut abi::Message,
        status: *mut Status,
    ) {
        // SAFETY: MPI's contract on the buffer and the pointers.
        unsafe { mrecv(buf, count, datatype, message, status) }
    }

    /// `MPI_Mrecv_c`.
    fn MPI_Mrecv_c / PMPI_Mrecv_c(
        buf: *mut c_void,
        count: abi::Count,
        datatype: abi::Datatype,
        message: *mut abi::Message,
        status: *mut Status,
    ) {
        // SAFETY: MPI's contract on the buffer and the pointers.
        unsafe { mrecv(buf, count, datatype, message, status) }
    }

    /// `MPI_Imrecv`.
    fn MPI_Imrecv / PMPI_Imrecv(
        buf: *mut c_void,
        count: c_int,
        datatype: abi::Datatype,
        message: *mut abi::Message,
        request: *mut abi::Request,
    ) {
        // SAFETY: MPI's contract on the buffer and the pointers.
        unsafe { imrecv(buf, count, datatype, message, request) }
    }

    /// `MPI_Imrecv_c`.
    fn MPI_Imrecv_c / PMPI_Imrecv_c(
        buf: *mut c_void,
        count: abi::Count,
        datatype: abi::Datatype,
        message: *mut abi::Message,
        request: *mut abi::Request,
    ) {
        // SAFETY: MPI's contract on the buffer and the pointers.
        unsafe { imrecv(buf, count, datatype, message, request) }
    }
}
