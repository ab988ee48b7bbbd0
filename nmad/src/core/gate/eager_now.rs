//! The latency path: an eager message sent at once, from `Gate::enqueue`, when nothing else
//! waits for the peer.
//!
//! With an empty queue there is nothing for the strategy to choose: the packet is the message
//! alone (plus the credit we owe the peer), on the only rail. Building it directly skips the
//! planning, the strategy call and the commit bookkeeping of [`Gate::flush`] — about a third of
//! a small send's instructions. The packet is byte for byte what `flush` would send (version,
//! DATA chunk header, payload, CREDIT chunk), so the receiver cannot tell. Anything else (a
//! synchronous send, no credit, several rails, a busy link, a payload in many pieces) returns
//! `NotNow` and goes through the queue and `flush` as before.

use super::{EAGER_OVERHEAD, Gate, Out, SendError};
use crate::core::Core;
use crate::core::request::{Kind, ReqPtr};
use crate::core::wire::{self, Encoder, FLAG_SYNC, MsgHeader};
use crate::drivers::Sent;
use smallvec::SmallVec;
use std::io::IoSlice;
use std::sync::atomic::Ordering::Relaxed;

/// Payload pieces the latency path takes (more go through `flush`).
const MAX_PIECES: usize = 4;

pub(super) enum Now {
    /// On the wire: the request is complete.
    Sent,
    /// Not for this path (or the link is busy): queue it.
    NotNow,
}

impl Gate {
    /// Tries to send `req` (queued nothing, sequence number assigned) in a packet of its own.
    ///
    /// # Safety
    /// The caller holds the request and the gate lock (`o`).
    pub(super) unsafe fn eager_now(&self, core: &Core, o: &mut Out, req: ReqPtr) -> Result<Now, SendError> {
        if !o.msgs.is_empty() || !o.control.is_empty() || self.rails.len() != 1 || o.rails[0].busy {
            return Ok(Now::NotNow);
        }
        let caps = &self.rails[0].info.caps;
        // SAFETY: we hold the request (caller's contract).
        let st = unsafe { req.state() };
        let Kind::Send { session, tag, flags, .. } = st.kind else { return Ok(Now::NotNow) };
        let len = st.data.len();
        let cost = len as u64 + EAGER_OVERHEAD;
        if flags & FLAG_SYNC != 0 || len > self.eager_limit || o.credit < cost || !caps.iovec {
            return Ok(Now::NotNow);
        }
        o.segs.clear();
        st.data.segments(0..len, &mut o.segs);
        if o.segs.len() > MAX_PIECES {
            return Ok(Now::NotNow);
        }
        o.hdr.clear();
        o.hdr.push(wire::VERSION);
        Encoder(&mut o.hdr).data(&MsgHeader { flags: 0, session, tag, seq: st.seq }, len, 0);
        let mark = o.hdr.len();
        let owed = (self.owed_bytes.swap(0, Relaxed), self.owed_slots.swap(0, Relaxed));
        if owed != (0, 0) {
            Encoder(&mut o.hdr).credit(owed.0, owed.1);
        }
        let give_back = |g: &Gate| {
            g.owed_bytes.fetch_add(owed.0, Relaxed);
            g.owed_slots.fetch_add(owed.1, Relaxed);
        };
        if o.hdr.len() + len > caps.max_packet {
            give_back(self);
            return Ok(Now::NotNow);
        }
        let link = match self.rails[0].link(core) {
            Ok(l) => l,
            Err(e) => {
                give_back(self);
                return Err(SendError::Gate(e));
            }
        };
        let mut iov: SmallVec<[IoSlice<'_>; MAX_PIECES + 2]> = SmallVec::new();
        iov.push(IoSlice::new(&o.hdr[..mark]));
        for s in o.segs.iter().filter(|s| s.len > 0) {
            // SAFETY: the send's memory is readable until it completes (Data contract), and it
            // completes only after this call.
            iov.push(IoSlice::new(unsafe { std::slice::from_raw_parts(s.ptr, s.len) }));
        }
        if o.hdr.len() > mark {
            iov.push(IoSlice::new(&o.hdr[mark..]));
        }
        let bytes = iov.iter().map(|s| s.len()).sum::<usize>();
        match link.try_send(&iov) {
            Ok(Sent::Done) => {
                o.credit -= cost;
                core.packets.fetch_add(1, Relaxed);
                core.chunks.fetch_add(1, Relaxed);
                core.counters.eager_sent.fetch_add(1, Relaxed);
                core.counters.sent(self.rails[0].driver, bytes);
                Ok(Now::Sent)
            }
            Ok(Sent::Busy) => {
                give_back(self);
                Ok(Now::NotNow)
            }
            Err(e) => {
                give_back(self);
                Err(SendError::of_link(e))
            }
        }
    }
}
