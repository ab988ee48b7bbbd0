//! One connection's receive side, run by `poll`: reads the socket into a buffer, hands packets to
//! the sink straight from it, and reads bulk payloads directly into the memory the sink names
//! (`readv` over the destination segments, with the buffer's free space last so the next
//! frame's header comes in the same call).
//!
//! Every header goes through `wire::decode` before anything is trusted; lengths never size an
//! allocation (the buffer is fixed, bulk memory is the sink's). It owns the buffer and the
//! in-progress bulk frame; it only reads the socket.

use super::link::Conn;
use super::sys::recv_vectored;
use super::wire::{self, BULK_HEADER, Frame, MAX_PACKET, PACKET_HEADER};
use crate::drivers::{BulkHeader, SegmentMut, Sink};
use std::io;
use std::sync::Arc;

/// Receive buffer per connection: whole packet frames fit, so they are delivered in place.
const RBUF: usize = 256 << 10;
/// Reads per connection per poll: level-triggered epoll reports what is left next time.
const READS_PER_POLL: usize = 8;
const IOV_BATCH: usize = 64;
/// Buffer bytes read while bulk data flows: the next header, and little payload to copy.
const BULK_LOOKAHEAD: usize = 4 << 10;

/// The bulk frame whose payload is arriving.
struct BulkIn {
    hdr: BulkHeader,
    /// The sink gave a destination (else the payload is discarded).
    accepted: bool,
    left: u64,
    /// Where the next byte goes in the destination.
    seg: usize,
    seg_off: usize,
}

impl BulkIn {
    /// Accounts for `n` payload bytes, calling `each(ptr, len)` for the destination pieces they
    /// fill (nothing when discarding).
    fn consume(&mut self, dest: &[SegmentMut], mut n: usize, mut each: impl FnMut(*mut u8, usize)) {
        self.left -= n as u64;
        if !self.accepted {
            return;
        }
        while n > 0 {
            let d = dest[self.seg];
            let k = (d.len - self.seg_off).min(n);
            if k > 0 {
                // SAFETY: seg_off < d.len: inside the sink's segment.
                each(unsafe { d.ptr.add(self.seg_off) }, k);
            }
            n -= k;
            self.seg_off += k;
            if self.seg_off == d.len {
                self.seg += 1;
                self.seg_off = 0;
            }
        }
    }
}

pub struct Rx {
    pub conn: Arc<Conn>,
    buf: Box<[u8]>,
    /// Unparsed bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    bulk: Option<BulkIn>,
    /// The sink's destination for `bulk` (valid until `bulk_done` or the link's failure).
    dest: Vec<SegmentMut>,
    /// The last frame was bulk: more probably follows, so read little into the buffer.
    bulky: bool,
}

impl Rx {
    pub fn new(conn: Arc<Conn>) -> Rx {
        Rx {
            conn,
            buf: vec![0; RBUF].into_boxed_slice(),
            start: 0,
            end: 0,
            bulk: None,
            dest: Vec::new(),
            bulky: false,
        }
    }

    /// Reads what arrived and hands it to `sink`; returns the events handed. An error (end of
    /// stream, reset, malformed frame) means the link failed.
    pub fn receive(&mut self, sink: &mut dyn Sink) -> io::Result<usize> {
        let mut events = 0;
        for _ in 0..READS_PER_POLL {
            self.check_cut()?;
            let Some((got, asked)) = self.read()? else { break };
            events += self.parse(sink)?;
            if got < asked {
                break; // drained: spare the EAGAIN round trip
            }
        }
        Ok(events)
    }

    /// One `readv`: `(got, asked)`, or `None` when nothing was there.
    fn read(&mut self) -> io::Result<Option<(usize, usize)>> {
        const NO_IOV: libc::iovec = libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 };
        let mut v = [NO_IOV; IOV_BATCH];
        let (mut n, mut direct) = (0, 0);
        if let Some(b) = self.bulk.as_ref().filter(|b| b.accepted && b.left > 0) {
            // `parse` emptied the buffer into the destination: the rest goes there directly.
            debug_assert_eq!(self.start, self.end);
            let (mut seg, mut off, mut left) = (b.seg, b.seg_off, b.left as usize);
            while left > 0 && n < IOV_BATCH - 1 {
                let d = self.dest[seg];
                let k = (d.len - off).min(left);
                // SAFETY: off <= d.len: inside (or at the end of) the sink's segment.
                v[n] = libc::iovec { iov_base: unsafe { d.ptr.add(off) }.cast(), iov_len: k };
                (n, direct, left, seg, off) = (n + 1, direct + k, left - k, seg + 1, 0);
            }
        }
        let mut room = RBUF - self.end;
        let discarding = self.bulk.as_ref().is_some_and(|b| !b.accepted);
        if self.bulky && !discarding {
            room = room.min(BULK_LOOKAHEAD);
        }
        v[n] = libc::iovec { iov_base: self.buf[self.end..].as_mut_ptr().cast(), iov_len: room };
        let asked = direct + room;
        if asked == 0 {
            return Ok(None);
        }
        // SAFETY: the destination pieces are the sink's writable memory (valid until bulk_done or
        // link failure); the last piece is our buffer's free tail.
        let got = match unsafe { recv_vectored(self.conn.fd(), &v[..n + 1]) } {
            Ok(0) => {
                let c = &self.conn;
                let msg = format!("rank {} ({}) closed the connection", c.peer, c.addr);
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, msg));
            }
            Ok(k) => k,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) => return Err(e),
        };
        let d = got.min(direct);
        if d > 0 {
            self.bulk.as_mut().unwrap().consume(&self.dest, d, |_, _| {});
        }
        self.end += got - d;
        Ok(Some((got, asked)))
    }

    /// Hands over every complete frame in the buffer.
    fn parse(&mut self, sink: &mut dyn Sink) -> io::Result<usize> {
        let peer = self.conn.peer;
        let mut events = 0;
        loop {
            // The sink may cut the peer off from inside a call: what is left goes unread.
            self.check_cut()?;
            if let Some(b) = self.bulk.as_mut() {
                let take = b.left.min((self.end - self.start) as u64) as usize;
                let mut from = self.start;
                let buf = &self.buf;
                b.consume(&self.dest, take, |ptr, k| {
                    // SAFETY: `ptr` has room for `k` bytes (sink's segment); the source lies in
                    // our buffer's unparsed bytes; they cannot overlap.
                    unsafe { std::ptr::copy_nonoverlapping(buf[from..from + k].as_ptr(), ptr, k) };
                    from += k;
                });
                self.start += take;
                if b.left > 0 {
                    break;
                }
                let b = self.bulk.take().unwrap();
                if b.accepted {
                    sink.bulk_done(peer, &b.hdr);
                }
                events += 1;
                continue;
            }
            let Some(frame) = wire::decode(&self.buf[self.start..self.end])? else { break };
            match frame {
                Frame::Packet { len } => {
                    let (from, to) = (self.start + PACKET_HEADER, self.start + PACKET_HEADER + len);
                    if to > self.end {
                        break;
                    }
                    sink.packet(peer, &self.buf[from..to]);
                    self.start = to;
                    self.bulky = false;
                    events += 1;
                }
                Frame::Bulk(hdr) => {
                    self.start += BULK_HEADER;
                    self.bulky = true;
                    self.dest.clear();
                    let accepted = sink.bulk_dest(peer, &hdr, &mut self.dest) && self.dest_fits(&hdr);
                    self.bulk = Some(BulkIn { hdr, accepted, left: hdr.len, seg: 0, seg_off: 0 });
                }
            }
        }
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        } else if RBUF - self.start < PACKET_HEADER + MAX_PACKET {
            // Room for the largest frame after the partial one's start.
            self.buf.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, self.end - self.start);
        }
        Ok(events)
    }

    /// Fails once this process cut the peer off ([`Link::close`](crate::drivers::Link::close)).
    fn check_cut(&self) -> io::Result<()> {
        if !self.conn.is_cut() {
            return Ok(());
        }
        let c = &self.conn;
        let msg = format!("tcp link to rank {} ({}) closed by this process", c.peer, c.addr);
        Err(io::Error::new(io::ErrorKind::ConnectionAborted, msg))
    }

    /// The sink's destination covers the frame exactly (else its bytes are discarded).
    fn dest_fits(&self, hdr: &BulkHeader) -> bool {
        let total: u64 = self.dest.iter().map(|d| d.len as u64).sum();
        if total != hdr.len {
            static DISCARDED: pm2_log::RateLimited =
                pm2_log::RateLimited::new(std::time::Duration::from_secs(5));
            DISCARDED.note(|n| {
                log::error!(
                    "tcp: the sink gave {total} bytes of destination for bulk frame {hdr:?} from rank {}: discarded{}",
                    self.conn.peer,
                    pm2_log::repeats(n)
                )
            });
        }
        total == hdr.len
    }
}
