//! The latency path: an eager message sent at once when nothing else waits for the peer, from
//! `Gate::enqueue` (a request's message) or from [`Gate::send_now`] (the express send: a
//! contiguous message and no request at all).
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
use crate::core::wire::{FLAG_SYNC, MsgHeader, SMALL_INLINE};
use crate::drivers::{Segment, Sent};
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
        // SAFETY: we hold the request (caller's contract).
        let st = unsafe { req.state() };
        let Kind::Send { session, tag, flags, .. } = st.kind else { return Ok(Now::NotNow) };
        let len = st.data.len();
        if flags & FLAG_SYNC != 0 || !self.may_send_now(o, len) {
            return Ok(Now::NotNow);
        }
        o.segs.clear();
        st.data.segments(0..len, &mut o.segs);
        let watched = st.monitor.is_some();
        // SAFETY: the send's memory is readable until it completes (Data contract), and it
        // completes only after this call.
        unsafe { self.packet_now(core, o, &MsgHeader { flags: 0, session, tag, seq: st.seq }, len, watched) }
    }

    /// The express send: `bytes` to session `session` with `tag`, sent now in a packet of its
    /// own (its sequence number taken) if nothing waits for the peer and the message fits the
    /// latency path; `false` if it did not go (nothing changed: send it the general way). A
    /// send that fails on the link fails the gate as `flush` would, and returns `false` (the
    /// general path then reports the failure).
    pub(crate) fn send_now(&self, core: &Core, session: u32, tag: u64, bytes: &[u8]) -> bool {
        let Ok(mut guard) = self.out.lock() else { return false };
        let o = &mut *guard;
        if self.send_failure().is_some() || !self.may_send_now(o, bytes.len()) {
            return false;
        }
        let seq = *o.next_seq.of(session);
        o.segs.clear();
        o.segs.push(Segment { ptr: bytes.as_ptr(), len: bytes.len() });
        let h = MsgHeader { flags: 0, session, tag, seq };
        // SAFETY: `bytes` is borrowed for this call, and the packet is in the link when it returns.
        match unsafe { self.packet_now(core, o, &h, bytes.len(), false) } {
            Ok(Now::Sent) => {
                *o.next_seq.of(session) = seq.wrapping_add(1);
                true
            }
            Ok(Now::NotNow) => false,
            Err(e) => {
                drop(guard);
                self.send_error(core, e);
                false
            }
        }
    }

    /// Whether a message of `len` bytes may take the latency path: nothing queued, one rail
    /// not busy, within the eager limit and the credit, a link that takes iovecs.
    fn may_send_now(&self, o: &Out, len: usize) -> bool {
        o.msgs.is_empty()
            && o.control.is_empty()
            && self.rails.len() == 1
            && !o.rails[0].busy
            && len <= self.eager_limit
            && o.credit >= len as u64 + EAGER_OVERHEAD
            && self.rails[0].info.caps.iovec
    }

    /// The credit we owe the peer, taken (loads first: most packets owe nothing, and a swap
    /// costs a locked instruction).
    fn take_owed(&self) -> (u64, u64) {
        let take =
            |a: &std::sync::atomic::AtomicU64| if a.load(Relaxed) == 0 { 0 } else { a.swap(0, Relaxed) };
        (take(&self.owed_bytes), take(&self.owed_slots))
    }

    /// Sends the message of header `h` and `len` bytes, whose payload is `o.segs`, in a packet
    /// of its own with the credit we owe the peer; `watched`: its request has a monitor (see
    /// `Gate::urgent`).
    ///
    /// # Safety
    /// `o.segs` describe readable memory until this returns; the caller holds the gate lock and
    /// checked [`Gate::may_send_now`].
    unsafe fn packet_now(
        &self,
        core: &Core,
        o: &mut Out,
        h: &MsgHeader,
        len: usize,
        watched: bool,
    ) -> Result<Now, SendError> {
        if o.segs.len() > MAX_PIECES {
            return Ok(Now::NotNow);
        }
        let owed = self.take_owed();
        let give_back = |g: &Gate| {
            g.owed_bytes.fetch_add(owed.0, Relaxed);
            g.owed_slots.fetch_add(owed.1, Relaxed);
        };
        // A small contiguous payload goes inside the packet: one slice for the link to write.
        let inline = match o.segs.as_slice() {
            [] => Some(&[][..]),
            // SAFETY: readable until this returns (our contract).
            [s] if s.len <= SMALL_INLINE => Some(unsafe { std::slice::from_raw_parts(s.ptr, s.len) }),
            _ => None,
        };
        let bytes = match inline {
            Some(payload) => {
                o.small.set_inline(h, payload, owed);
                o.small.packet().len()
            }
            None => {
                o.small.set(h, len, owed);
                o.small.head().len() + len + o.small.tail().len()
            }
        };
        if bytes > self.rails[0].info.caps.max_packet {
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
        let mut iov = [IoSlice::new(&[]); MAX_PIECES + 2];
        let n = if inline.is_some() {
            iov[0] = IoSlice::new(o.small.packet());
            1
        } else {
            iov[0] = IoSlice::new(o.small.head());
            let mut n = 1;
            for s in o.segs.iter().filter(|s| s.len > 0) {
                // SAFETY: readable until this returns (our contract).
                iov[n] = IoSlice::new(unsafe { std::slice::from_raw_parts(s.ptr, s.len) });
                n += 1;
            }
            let tail = o.small.tail();
            if !tail.is_empty() {
                iov[n] = IoSlice::new(tail);
                n += 1;
            }
            n
        };
        let iov = &iov[..n];
        // Plain eager data (no answer asked: `may_send_now` refused synchronous sends) is lazy
        // unless it carries credit that was due, or its request is watched (`Gate::urgent`).
        let urgent = watched || self.credit_due(owed);
        let sent = if urgent { link.try_send(iov) } else { link.try_send_lazy(iov) };
        match sent {
            Ok(Sent::Done) => {
                o.credit -= len as u64 + EAGER_OVERHEAD;
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
