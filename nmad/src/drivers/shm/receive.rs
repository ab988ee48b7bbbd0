//! The receive side of a link, run by the poller: reads the records at the head of the incoming
//! ring, validates them, and hands them to the sink (small packets copied out first, larger ones
//! lent in place, bulk pieces copied straight to where the sink says).
//!
//! The peer can write the ring at any time, and the core must never parse bytes that change
//! under it: a small packet is copied into private memory (its space released at once, before
//! the sink runs); a larger one is lent ([`RingPacket`]: the sink copies out what it reads, its
//! headers into private memory, its payloads straight into their receive buffers) and its space
//! released when the sink returns. It owns no state of its own: the consumer position lives in
//! the link, the buffers in the driver's poll state.

use super::link::ShmLink;
use super::ring::{self, Body, RingMem};
use super::socket::signal;
use crate::drivers::{BulkHeader, LentPacket, SegmentMut, Sink};
use std::sync::atomic::Ordering::Relaxed;

/// Buffers the poller reuses.
pub(crate) struct Scratch {
    /// Holds one packet copied out (at most [`LEND_ABOVE`] bytes).
    pub packet: Vec<u8>,
    pub dest: Vec<SegmentMut>,
}

impl Scratch {
    pub(crate) fn new() -> Scratch {
        Scratch { packet: vec![0; LEND_ABOVE as usize], dest: Vec::new() }
    }
}

/// Packets up to this many bytes are copied out before the sink sees them (a copy this small
/// costs less than reading through a lent view); larger ones are lent.
const LEND_ABOVE: u64 = 256;

/// A packet lent in place: `len` bytes of the incoming ring from `pos`.
struct RingPacket<'a> {
    link: &'a ShmLink,
    pos: u64,
    len: usize,
}

impl LentPacket for RingPacket<'_> {
    fn len(&self) -> usize {
        self.len
    }

    fn read(&self, at: usize, dst: &mut [u8]) {
        let n = dst.len().min(self.len.saturating_sub(at));
        debug_assert_eq!(n, dst.len(), "a lent packet is read within its length");
        self.link.inc.read(self.pos + at as u64, &mut dst[..n]);
    }
}

/// The consumer is done with everything before `end`.
fn consumed(link: &ShmLink, end: u64) {
    ring::release(&link.inc, end);
    link.rx_head.store(end, Relaxed);
}

/// Delivers up to `budget` records of `link` to `sink`; returns how many, or why the peer's data
/// is malformed (the caller fails the link).
pub(crate) fn receive(
    link: &ShmLink,
    sink: &mut dyn Sink,
    s: &mut Scratch,
    budget: usize,
) -> Result<usize, String> {
    let mut head = link.rx_head.load(Relaxed);
    // A spinning waiter's usual poll: nothing at the head (one load, no record parsed). The
    // space check below is not due either: the head has not moved since the last one.
    if !ring::has_record(&link.inc, head) {
        return Ok(0);
    }
    let mut n = 0;
    while n < budget {
        // The sink may close the link from inside a call: what is left goes unread.
        if link.failed() && !link.drain_after_failure() {
            break;
        }
        let Some(r) = ring::peek(&link.inc, head).map_err(|m| m.0)? else { break };
        let len = r.len as usize;
        head = r.end;
        match r.body {
            Body::Packet if r.len <= LEND_ABOVE => {
                let bytes = &mut s.packet[..len];
                link.inc.read(r.payload, bytes);
                consumed(link, head);
                sink.packet(link.peer, bytes);
            }
            Body::Packet => {
                sink.packet_lent(link.peer, &RingPacket { link, pos: r.payload, len });
                consumed(link, head);
            }
            Body::Bulk { cookie, offset } => {
                if offset.checked_add(r.len).is_none() {
                    return Err(format!("bulk piece at offset {offset:#x} of {len} bytes overflows"));
                }
                let hdr = BulkHeader { cookie, offset, len: r.len };
                s.dest.clear();
                let wanted = sink.bulk_dest(link.peer, &hdr, &mut s.dest);
                if wanted {
                    copy_out(link, r.payload, &s.dest, len);
                }
                consumed(link, head);
                if wanted {
                    sink.bulk_done(link.peer, &hdr);
                }
            }
        }
        n += 1;
    }
    let checked = link.rx_checked.load(Relaxed);
    if ring::space_check_due(&link.inc, head, checked) {
        link.rx_checked.store(head, Relaxed);
        if ring::producer_waiting(&link.inc) {
            signal(&link.peer_wake);
        }
    }
    Ok(n)
}

/// Copies `len` ring bytes from `pos` into the sink's segments (which must add up to `len`).
fn copy_out(link: &ShmLink, mut pos: u64, dest: &[SegmentMut], len: usize) {
    let total = dest.iter().try_fold(0usize, |a, d| a.checked_add(d.len));
    debug_assert_eq!(total, Some(len), "bulk_dest segments must add up to the piece length");
    if total != Some(len) {
        return;
    }
    for d in dest.iter().filter(|d| d.len > 0) {
        // SAFETY: the sink's contract: `d` is valid for writes until bulk_done.
        let to = unsafe { std::slice::from_raw_parts_mut(d.ptr, d.len) };
        link.inc.read(pos, to);
        pos += d.len as u64;
    }
}
