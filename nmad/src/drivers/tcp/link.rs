//! One connection ([`Conn`], the [`Link`] the core holds) and its send side.
//!
//! A mutex per connection serializes writers so that two frames never interleave. Frames go out
//! with one vectored `sendmsg` each: the header and the caller's segments, no gathering copy.
//! A packet cut short by a full socket has its tail copied into a backlog (at most one packet),
//! and the next sender is told `Busy` until the backlog drained. Bulk sends are cut into frames
//! of [`BULK_FRAME`] bytes written straight from the sender's memory; a packet waits for the
//! frame in progress, never for the whole transfer. Whatever is left is continued by `poll` when
//! epoll says the socket is writable.
//!
//! It owns the socket and the queued bulk sends; the receive side lives in `recv` and touches
//! only the socket's read direction.

use super::shared::Shared;
use super::sys::{self, send_vectored};
use super::wire::{self, BULK_HEADER, MAX_PACKET};
use crate::drivers::{BulkHeader, Link, PeerId, Segment, Sent};
use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::{Arc, Mutex, OnceLock};

/// Payload bytes per bulk frame: bounds how long a packet waits behind bulk data.
pub const BULK_FRAME: usize = 512 << 10;
/// iovecs per `sendmsg` (the rest goes in the next call).
const IOV_BATCH: usize = 64;

const NO_IOV: libc::iovec = libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 };

fn iov(ptr: *const u8, len: usize) -> libc::iovec {
    libc::iovec { iov_base: ptr.cast_mut().cast(), iov_len: len }
}

/// The frame of a bulk send being written.
struct FrameOut {
    header: [u8; BULK_HEADER],
    header_at: usize,
    /// Where the frame's payload ends (bytes of the transfer).
    end: u64,
}

/// A queued `send_bulk`.
struct BulkOut {
    hdr: BulkHeader,
    segs: Vec<Segment>,
    token: u64,
    /// Payload bytes written, and where that is in `segs`.
    done: u64,
    seg: usize,
    seg_off: usize,
    frame: Option<FrameOut>,
}

impl BulkOut {
    fn start_frame(&mut self) {
        let len = (self.hdr.len - self.done).min(BULK_FRAME as u64);
        let h = BulkHeader { cookie: self.hdr.cookie, offset: self.hdr.offset + self.done, len };
        self.frame = Some(FrameOut { header: wire::bulk_header(&h), header_at: 0, end: self.done + len });
    }

    fn advance(&mut self, mut n: usize) {
        self.done += n as u64;
        while n > 0 {
            let room = self.segs[self.seg].len - self.seg_off;
            if n < room {
                self.seg_off += n;
                return;
            }
            n -= room;
            self.seg += 1;
            self.seg_off = 0;
        }
    }

    /// Writes the frame in progress; `true` once it is entirely out.
    fn write_frame(&mut self, fd: RawFd) -> io::Result<bool> {
        loop {
            let f = self.frame.as_ref().expect("a bulk frame in progress");
            let (header_left, mut payload_left) = (BULK_HEADER - f.header_at, f.end - self.done);
            if header_left == 0 && payload_left == 0 {
                self.frame = None;
                return Ok(true);
            }
            let mut v = [NO_IOV; IOV_BATCH];
            let mut n = 0;
            if header_left > 0 {
                v[0] = iov(f.header[f.header_at..].as_ptr(), header_left);
                n = 1;
            }
            let (mut seg, mut off) = (self.seg, self.seg_off);
            while payload_left > 0 && n < IOV_BATCH {
                let s = self.segs[seg];
                let take = ((s.len - off) as u64).min(payload_left) as usize;
                if take > 0 {
                    // SAFETY: off < s.len: inside the sender's segment.
                    v[n] = iov(unsafe { s.ptr.add(off) }, take);
                    n += 1;
                }
                payload_left -= take as u64;
                (seg, off) = (seg + 1, 0);
            }
            let asked: usize = v[..n].iter().map(|i| i.iov_len).sum();
            // SAFETY: the header is ours; the payload segments stay valid until bulk_sent
            // (send_bulk's contract), which is reported only after this frame is written.
            let wrote = match unsafe { send_vectored(fd, &v[..n]) } {
                Ok(w) => w,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            };
            let h = wrote.min(header_left);
            self.frame.as_mut().unwrap().header_at += h;
            self.advance(wrote - h);
            if wrote < asked {
                return Ok(false); // the socket is full
            }
        }
    }
}

#[derive(Default)]
struct Tx {
    /// The unwritten tail of a packet frame cut by a partial write.
    backlog: Vec<u8>,
    backlog_at: usize,
    bulks: VecDeque<BulkOut>,
    /// EPOLLOUT is watched: output is pending, or a sender was told `Busy`.
    out_watched: bool,
    closed: bool,
}

impl Tx {
    /// Writes the frame in progress (packet backlog or bulk frame) and, with `more`, further bulk
    /// frames. Finished bulk sends go to `finished`. `Ok(true)`: nothing more can be written now
    /// because nothing is left (`more`) or no frame is in progress (`!more`).
    fn flush(&mut self, fd: RawFd, more: bool, finished: &mut Vec<u64>) -> io::Result<bool> {
        loop {
            if !self.write_backlog(fd)? {
                return Ok(false);
            }
            let Some(b) = self.bulks.front_mut() else { return Ok(true) };
            if b.frame.is_none() {
                if !more {
                    return Ok(true);
                }
                b.start_frame();
            }
            if !b.write_frame(fd)? {
                return Ok(false);
            }
            if b.done == b.hdr.len {
                finished.push(b.token);
                self.bulks.pop_front();
            }
        }
    }

    /// Writes the backlog; `true` once it is empty.
    fn write_backlog(&mut self, fd: RawFd) -> io::Result<bool> {
        if self.backlog_at < self.backlog.len() {
            let v = [iov(self.backlog[self.backlog_at..].as_ptr(), self.backlog.len() - self.backlog_at)];
            // SAFETY: the backlog is our own buffer.
            match unsafe { send_vectored(fd, &v) } {
                Ok(n) => self.backlog_at += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
            if self.backlog_at < self.backlog.len() {
                return Ok(false);
            }
        }
        self.backlog.clear();
        self.backlog_at = 0;
        Ok(true)
    }

    fn pending(&self) -> bool {
        self.backlog_at < self.backlog.len() || !self.bulks.is_empty()
    }
}

/// A connection to one peer: the [`Link`] handed to the core.
pub struct Conn {
    /// The connection's epoll token.
    pub token: u64,
    pub peer: PeerId,
    pub addr: SocketAddr,
    sock: TcpStream,
    shared: Arc<Shared>,
    tx: Mutex<Tx>,
    /// The first error, reported by `poll` as `link_failed`.
    failure: Mutex<Option<io::Error>>,
    /// This process cut the peer off ([`Link::close`]): nothing more is read from it.
    cut: AtomicBool,
    /// Made by our own `connect` (else accepted from the peer).
    pub dialed: bool,
    /// The connection this one's packets go by instead: of two connections that crossed, both
    /// sides send on the one the lower rank dialed ([`Shared::adopt`]).
    redirect: OnceLock<Arc<Conn>>,
    /// Output waits for room in the socket (epoll watches it for writing): `poll` must look at
    /// the epoll set.
    waits_for_room: AtomicBool,
}

impl Conn {
    /// `sock` is authenticated and nonblocking.
    pub fn new(shared: Arc<Shared>, peer: PeerId, sock: TcpStream, addr: SocketAddr, dialed: bool) -> Conn {
        Conn {
            dialed,
            redirect: OnceLock::new(),
            token: shared.token(),
            peer,
            addr,
            sock,
            shared,
            tx: Mutex::new(Tx::default()),
            failure: Mutex::new(None),
            cut: AtomicBool::new(false),
            waits_for_room: AtomicBool::new(false),
        }
    }

    pub fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }

    fn down_error(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::BrokenPipe,
            format!("tcp link to rank {} ({}) is down", self.peer, self.addr),
        )
    }

    /// Watches (or stops watching) the socket's room to write.
    fn watch_out(&self, tx: &mut Tx, want: bool) {
        if tx.out_watched != want && self.shared.epoll.modify(self.fd(), self.token, want).is_ok() {
            tx.out_watched = want;
            self.waits_for_room.store(want, Release);
        }
    }

    /// Whether output waits for room in the socket (see `TcpDriver::poll`).
    pub fn waits_for_room(&self) -> bool {
        self.waits_for_room.load(Acquire)
    }

    fn fail_locked(&self, tx: &mut Tx, e: io::Error) {
        self.failure.lock().unwrap().get_or_insert(e);
        // Abandoned: from now on nobody touches the senders' memory.
        tx.bulks.clear();
        tx.backlog.clear();
        tx.backlog_at = 0;
        tx.closed = true;
        // The peer sees end of stream; our poll sees it too and reports the failure.
        sys::shutdown_both(self.fd());
    }

    /// Marks the link failed with `e` (the first error wins) and shuts the socket down.
    pub fn fail(&self, e: io::Error) {
        let mut tx = self.tx.lock().unwrap();
        self.fail_locked(&mut tx, e);
    }

    /// The driver shuts down.
    pub fn shut_down(&self) {
        self.fail(io::Error::new(io::ErrorKind::NotConnected, "tcp driver shut down"));
    }

    /// Cuts the peer off on this connection: failed and shut down both ways (the peer reads end
    /// of stream), and marked so that `poll` reads nothing more from it. Shutdown, not close:
    /// other threads may still use the fd, which is closed when the last reference goes.
    pub fn cut(&self) {
        self.cut.store(true, Release);
        self.fail(io::Error::new(
            io::ErrorKind::ConnectionAborted,
            format!("tcp link to rank {} ({}) closed by this process", self.peer, self.addr),
        ));
    }

    /// Sends this connection's packets and bulk data by `to` from now on (once; what is queued
    /// here already goes from here). The receiver reads both connections and restores the order of messages by their
    /// sequence numbers, as it does across rails.
    pub fn redirect_to(&self, to: Arc<Conn>) {
        let _ = self.redirect.set(to);
    }

    /// The connection this one's packets go by, if not itself.
    #[cfg(test)]
    pub fn redirected(&self) -> Option<&Arc<Conn>> {
        self.redirect.get()
    }

    /// Whether this process cut the peer off.
    pub fn is_cut(&self) -> bool {
        self.cut.load(Acquire)
    }

    /// The error to report for this failed link.
    pub fn take_failure(&self) -> io::Error {
        self.failure.lock().unwrap().take().unwrap_or_else(|| {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("rank {} ({}) closed the connection", self.peer, self.addr),
            )
        })
    }

    /// Continues pending output (the socket has room); finished bulk sends go to `finished`.
    pub fn flush_from_poll(&self, finished: &mut Vec<u64>) -> io::Result<()> {
        let mut tx = self.tx.lock().unwrap();
        if tx.closed {
            return Ok(());
        }
        let all = tx.flush(self.fd(), true, finished)?;
        self.watch_out(&mut tx, !all);
        Ok(())
    }

    /// Writes a packet frame once no frame is in progress; `None` when the socket is full.
    fn send_packet(&self, tx: &mut Tx, packet: &[IoSlice<'_>], len: usize) -> io::Result<Option<Sent>> {
        let header = wire::packet_header(len);
        let total = header.len() + len;
        if packet.len() >= IOV_BATCH {
            // Too scattered for one call: gather it into the backlog, which flushes as one piece.
            tx.backlog.extend_from_slice(&header);
            packet.iter().for_each(|s| tx.backlog.extend_from_slice(s));
            tx.write_backlog(self.fd())?;
            return Ok(Some(Sent::Done));
        }
        let mut v = [NO_IOV; IOV_BATCH];
        v[0] = iov(header.as_ptr(), header.len());
        for (d, s) in v[1..].iter_mut().zip(packet) {
            *d = iov(s.as_ptr(), s.len());
        }
        // SAFETY: the header is ours, the segments are the caller's live slices.
        let wrote = match unsafe { send_vectored(self.fd(), &v[..1 + packet.len()]) } {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) => return Err(e),
        };
        if wrote == 0 && total > 0 {
            return Ok(None);
        }
        // Keep the unwritten tail: the frame must be finished before any other.
        let mut skip = wrote;
        for piece in std::iter::once(&header[..]).chain(packet.iter().map(|s| &**s)) {
            let k = skip.min(piece.len());
            tx.backlog.extend_from_slice(&piece[k..]);
            skip -= k;
        }
        Ok(Some(Sent::Done))
    }
}

impl Conn {
    /// A failed send fails the link (under its send lock) and says which link.
    fn or_fail<T>(&self, tx: &mut Tx, r: io::Result<T>) -> io::Result<T> {
        r.map_err(|e| {
            let msg = format!("tcp link to rank {} ({}): {e}", self.peer, self.addr);
            self.fail_locked(tx, e);
            io::Error::new(io::ErrorKind::BrokenPipe, msg)
        })
    }
}

impl Link for Conn {
    fn peer(&self) -> PeerId {
        self.peer
    }

    fn try_send(&self, packet: &[IoSlice<'_>]) -> io::Result<Sent> {
        if let Some(to) = self.redirect.get() {
            return to.try_send(packet);
        }
        let len: usize = packet.iter().map(|s| s.len()).sum();
        if len > MAX_PACKET {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("packet of {len} bytes is larger than max_packet ({MAX_PACKET})"),
            ));
        }
        let mut finished = Vec::new();
        let result = {
            let mut tx = self.tx.lock().unwrap();
            if tx.closed {
                return Err(self.down_error());
            }
            let fd = self.fd();
            let r = match tx.flush(fd, false, &mut finished) {
                Ok(true) => self.send_packet(&mut tx, packet, len).map(|s| s.unwrap_or(Sent::Busy)),
                Ok(false) => Ok(Sent::Busy),
                Err(e) => Err(e),
            };
            let r = r.inspect(|&s| {
                // Busy senders retry after a poll: make sure a sleeping context wakes for it.
                let want = s == Sent::Busy || tx.pending();
                self.watch_out(&mut tx, want);
            });
            self.or_fail(&mut tx, r)
        };
        self.shared.bulk_finished(self.peer, &finished);
        result
    }

    unsafe fn send_bulk(&self, hdr: BulkHeader, src: &[Segment], token: u64) -> io::Result<()> {
        if let Some(to) = self.redirect.get() {
            // SAFETY: the caller's contract, passed on unchanged.
            return unsafe { to.send_bulk(hdr, src, token) };
        }
        let total: u64 = src.iter().map(|s| s.len as u64).sum();
        if total != hdr.len || hdr.offset.checked_add(hdr.len).is_none() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("send_bulk: {total} bytes of segments for a header of {} at {}", hdr.len, hdr.offset),
            ));
        }
        let mut finished = Vec::new();
        let result = {
            let mut tx = self.tx.lock().unwrap();
            if tx.closed {
                return Err(self.down_error());
            }
            let b = BulkOut { hdr, segs: src.to_vec(), token, done: 0, seg: 0, seg_off: 0, frame: None };
            tx.bulks.push_back(b);
            let r = tx.flush(self.fd(), true, &mut finished).map(|all| self.watch_out(&mut tx, !all));
            self.or_fail(&mut tx, r)
        };
        self.shared.bulk_finished(self.peer, &finished);
        result
    }

    /// A packet's tail or bulk data still here, or bytes in the socket the peer has not
    /// acknowledged (a socket closed with unread input is reset, and the kernel then drops what
    /// it still had to send).
    fn sending(&self) -> bool {
        let here = {
            let tx = self.tx.lock().unwrap();
            !tx.closed && (tx.pending() || sys::unacknowledged(self.fd()) > 0)
        };
        here || self.redirect.get().is_some_and(|to| to.sending())
    }

    fn is_broken(&self) -> bool {
        self.tx.lock().unwrap().closed
    }

    fn acknowledged(&self) -> Option<u64> {
        match self.redirect.get() {
            Some(to) => to.acknowledged(),
            None => sys::bytes_acked(self.fd()),
        }
    }

    /// Cuts every connection to the peer through this driver (both may have connected at once),
    /// this one included even if the driver never registered it.
    fn close(&self) {
        self.cut();
        self.shared.cut_peer(self.peer);
    }
}
