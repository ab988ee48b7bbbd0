//! Message handles (`MPI_Message`): the messages taken by matched probes (`MPI_Mprobe`,
//! `MPI_Improbe`), in the state's message table until `MPI_Mrecv` or `MPI_Imrecv` takes them
//! out. `MPI_MESSAGE_NO_PROC` (the matched probe of `MPI_PROC_NULL`) is no table entry.
//!
//! Owns the mapping from message handles to messages; it must not receive them.

use crate::comms::CommObj;
use crate::state::State;
use madmpi::abi::{self, Handle, UserObject};
use madmpi::error::Error;
use madmpi::p2p::mprobe::Message;
use std::sync::{Arc, Mutex, PoisonError};

/// A matched message and the communicator it came on (whose handler its errors go to).
pub(crate) struct MsgObj {
    msg: Mutex<Option<Message>>,
    pub(crate) comm: Arc<CommObj>,
}

/// What a message handle stands for.
pub(crate) enum MsgRef {
    /// `MPI_MESSAGE_NO_PROC`.
    NoProc,
    Msg(Arc<MsgObj>),
}

impl State {
    /// Stores a matched message; its handle (`MPI_MESSAGE_NO_PROC` for that of `MPI_PROC_NULL`).
    pub(crate) fn add_message(&self, m: Message, comm: &Arc<CommObj>) -> Result<Handle, Error> {
        if m.is_no_proc() {
            return Ok(abi::MPI_MESSAGE_NO_PROC);
        }
        let obj = Arc::new(MsgObj { msg: Mutex::new(Some(m)), comm: comm.clone() });
        self.messages.insert(obj).ok_or_else(|| Error::intern("too many matched messages"))
    }

    /// The message of handle `h`, left in the table. As MPICH: `MPI_MESSAGE_NULL` and unknown
    /// handles are `MPI_ERR_REQUEST`, a request handle passed as a message `MPI_ERR_ARG`.
    pub(crate) fn message(&self, h: Handle) -> Result<MsgRef, Error> {
        match h {
            abi::MPI_MESSAGE_NO_PROC => return Ok(MsgRef::NoProc),
            abi::MPI_MESSAGE_NULL => return Err(Error::request("MPI_MESSAGE_NULL is no message")),
            _ => {}
        }
        if let Some(m) = self.messages.get(h) {
            return Ok(MsgRef::Msg(m));
        }
        match abi::decode_user_handle(h) {
            Some((UserObject::Request | UserObject::ExpressRequest, _)) => {
                Err(Error::arg(format!("{h:#x} is a request handle, not a message (MPI_Message)")))
            }
            _ => Err(Error::request(format!("invalid message handle {h:#x}"))),
        }
    }

    /// Takes the message of handle `h` out of the table (for its receive).
    pub(crate) fn take_message(&self, h: Handle) -> Result<Message, Error> {
        self.messages
            .remove(h)
            .and_then(|obj| obj.msg.lock().unwrap_or_else(PoisonError::into_inner).take())
            .ok_or_else(|| Error::request(format!("invalid message handle {h:#x} (already received?)")))
    }
}
