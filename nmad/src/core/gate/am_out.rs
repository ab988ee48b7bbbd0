//! Active messages, sending side: an AM's buffers are the caller's, moved in (the caller's
//! borrowed slices are copied at once by [`crate::Nmad::send_am`]), waits in `Out::ams` for credit, then goes as a control chunk, so the
//! strategy aggregates it with other chunks and messages to the peer like any other.
//!
//! Owns `Gate::send_am` and the admission of waiting AMs; the encoding is in `build` (gate.rs).
//! Order: AMs to one peer leave in call order; they may overtake eager data queued before them
//! (control chunks go first in a packet).

use super::{Control, EAGER_OVERHEAD, Gate, Out};
use crate::core::Core;
use crate::core::request::Error;
use crate::core::wire;

/// An AM waiting for credit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AmOut {
    pub(crate) handler: u16,
    pub(crate) header: Vec<u8>,
    pub(crate) payload: Vec<u8>,
}

impl AmOut {
    fn cost(&self) -> u64 {
        (self.header.len() + self.payload.len()) as u64 + EAGER_OVERHEAD
    }

    pub(super) fn wire_size(&self) -> usize {
        1 + 3 + 10 + 10 + self.header.len() + self.payload.len()
    }
}

impl Gate {
    /// Queues an AM to the peer and sends what can go. Errors: a header beyond
    /// [`wire::MAX_AM_HEADER`], an AM beyond the eager limit or a packet, or a failed peer.
    pub(crate) fn send_am(
        &self,
        core: &Core,
        handler: u16,
        header: Vec<u8>,
        payload: Vec<u8>,
    ) -> Result<(), Error> {
        let (header_len, payload_len) = (header.len(), payload.len());
        let am = AmOut { handler, header, payload };
        if header_len > wire::MAX_AM_HEADER {
            return Err(Error::InvalidArgument(format!(
                "active message header of {} bytes, beyond {}",
                header_len,
                wire::MAX_AM_HEADER
            )));
        }
        {
            let mut out = self.out.lock().unwrap();
            if let Some(e) = self.send_failure() {
                return Err(e);
            }
            let room = out.rails.iter().map(|r| r.room()).min().unwrap_or(0);
            if header_len + payload_len > self.eager_limit || am.wire_size() > room {
                return Err(Error::InvalidArgument(format!(
                    "active message of {} bytes, beyond the eager limit ({}) or a packet ({room}): \
                     split it",
                    header_len + payload_len,
                    self.eager_limit
                )));
            }
            out.ams.push_back(am);
            admit_ams(&mut out);
        }
        self.flush(core);
        Ok(())
    }
}

/// Moves the waiting AMs that the credit covers, in order, to the control queue.
#[inline]
pub(super) fn admit_ams(o: &mut Out) {
    if !o.ams.is_empty() {
        admit_waiting_ams(o);
    }
}

fn admit_waiting_ams(o: &mut Out) {
    while let Some(am) = o.ams.front() {
        let cost = am.cost();
        if cost > o.credit {
            break;
        }
        o.credit -= cost;
        let am = o.ams.pop_front().expect("front exists");
        o.control.push_back(Control::Am(am));
    }
}
