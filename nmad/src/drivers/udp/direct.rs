//! Bulk pieces received in place. While a rendezvous streams in, `poll` peeks at each
//! datagram's head and, when it is its link's next unit and a bulk piece the sink has memory
//! for, has the kernel scatter the payload straight there: one copy (the kernel's) instead of
//! two (into a receive buffer, then out of it), which halves the receiver's work per byte.
//! Anything else (another kind of datagram, a unit out of order or repeated, a destination in
//! too many pieces, a datagram failing a check) is read the ordinary way, whose checks and
//! reports (`UdpDriver::datagram`) then apply.
//!
//! It owns nothing: it reads the data socket for `poll`, which holds the poll lock (nobody
//! else reads between the peek and the read), and works on a link's receive side under its
//! lock, as the ordinary way does.

use super::link::{MAX_PIECES, UdpLink};
use super::wire::{self, Data, Header};
use super::{PollState, UdpDriver, sys};
use crate::drivers::{BulkHeader, Sink};
use crate::reliable::Micros;
use smallvec::SmallVec;
use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;

impl UdpDriver {
    /// Takes the next waiting datagram, in place if it can; how many units it handed over, or
    /// `None` when nothing waits. Leaves `st.direct` set only while bulk pieces keep coming.
    pub(super) fn receive_direct(&self, st: &mut PollState, sink: &mut dyn Sink) -> Option<usize> {
        let fd = self.shared.sock_fd();
        let mut head = [0u8; wire::MAX_DATA_OVERHEAD];
        let (total, from) = match sys::peek(fd, &mut head) {
            Ok(Some(p)) => p,
            Ok(None) => return None,
            Err(e) => {
                log::debug!("{}: peeking: {e}", self.name);
                return None;
            }
        };
        if let Some(n) = self.place(&head[..total.min(head.len())], total, from, sink) {
            return Some(n);
        }
        match sys::recv_batch(fd, &mut st.bufs[..1], &mut st.got[..1]) {
            Ok(1) => {}
            _ => return None,
        }
        st.bulk_seen = false;
        let n = self.received(st, 0, sink);
        st.direct = st.bulk_seen;
        Some(n)
    }

    /// The in-place path for the datagram whose first bytes are `head`; `None` when it does
    /// not take it (nothing was read).
    fn place(
        &self,
        head: &[u8],
        total: usize,
        from: Option<SocketAddr>,
        sink: &mut dyn Sink,
    ) -> Option<usize> {
        let h = Header::decode(head).filter(|h| h.kind == wire::KIND_DATA)?;
        let link = self.links.get(h.from).filter(|l| l.local_id == h.link_id)?;
        if link.remote().map(|r| r.from) != from || link.is_closed() {
            return None;
        }
        let d = Data::decode_head(head, total)?;
        let now = self.shared.now();
        let n = link.receive_in_place(self.shared.sock_fd(), &d, total, now, sink)?;
        link.heard(now);
        Some(n)
    }
}

impl UdpLink {
    /// Reads the peeked DATA datagram `d` (`total` bytes) from `fd` straight into the sink's
    /// memory if it is this link's next unit and a bulk piece with a place to go; then what it
    /// released is handed over and its ACK taken, as `on_data` and `on_ack` do. `None`: not
    /// taken (nothing read).
    pub(super) fn receive_in_place(
        &self,
        fd: RawFd,
        d: &Data,
        total: usize,
        now: Micros,
        sink: &mut dyn Sink,
    ) -> Option<usize> {
        let (cookie, offset) = d.bulk?;
        let mut rx = self.rx.lock().unwrap();
        if d.seq != rx.receiver.next() || self.is_closed() {
            return None;
        }
        // `decode_head` checked payload_at ≤ total.
        let hdr = BulkHeader { cookie, offset, len: (total - d.payload_at) as u64 };
        let mut dest = std::mem::take(&mut rx.dest);
        dest.clear();
        let fits = sink.bulk_dest(self.peer, &hdr, &mut dest)
            && dest.len() < MAX_PIECES
            && dest.iter().map(|s| s.len as u64).sum::<u64>() == hdr.len;
        if !fits {
            rx.dest = dest;
            return None;
        }
        let mut skip = [0u8; wire::MAX_DATA_OVERHEAD];
        let mut iov: SmallVec<[libc::iovec; 8]> = SmallVec::new();
        iov.push(libc::iovec { iov_base: skip.as_mut_ptr().cast(), iov_len: d.payload_at });
        iov.extend(dest.iter().map(|s| libc::iovec { iov_base: s.ptr.cast(), iov_len: s.len }));
        // SAFETY: `skip` is ours; the sink's segments are writable until bulk_done (Sink
        // contract) and hold exactly the payload (checked), so the kernel writes nothing past them.
        let r = unsafe { sys::recv_scattered(fd, &mut iov) };
        rx.dest = dest;
        match r {
            Ok(n) if n == total => {}
            // Only this poller reads the socket: the datagram read is the one peeked at.
            r => {
                let why =
                    r.map_or_else(|e| e.to_string(), |n| format!("{n} bytes where {total} were peeked"));
                drop(rx);
                self.fail(io::Error::other(format!("reading rank {}'s bulk piece: {why}", self.peer)));
                return Some(0);
            }
        }
        let ack_now = d.flags & wire::ACK_NOW != 0;
        rx.receiver.on_data(d.seq, d.stamp, ack_now, None, now);
        sink.bulk_done(self.peer, &hdr);
        let handed = 1 + self.hand_over_ready(&mut rx, now, sink);
        self.ack_if_due(&mut rx, now);
        drop(rx);
        if let Some(a) = &d.ack {
            self.on_ack(a, now);
        }
        Some(handed)
    }
}
