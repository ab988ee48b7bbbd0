//! One shared-memory link: the two rings of its segment, the send side (packets, queued bulk
//! transfers streamed in pieces, cross-memory reads), its failure state, and what its sleeping
//! flags mean.
//!
//! The send side is serialized by a lock held only while writing into the ring (never across sink
//! calls); the receive side (`receive.rs`) belongs to whoever holds the driver's poll lock. The
//! link does not know the driver's lists: the driver polls it and reports its failure.

use super::cma::{self, Way};
use super::memory::{Mapping, ShmRing};
use super::ring::{
    self, BULK_HEADER, Body, MAX_PAYLOAD, Malformed, PACKET_HEADER, Producer, RingMem, record_size,
};
use super::socket::signal;
use super::wake::Sleeper;
use crate::drivers::{Access, BulkHeader, Exposed, Link, PeerId, Segment, SegmentMut, Sent, memkey};
use crate::spin::{Guard, SpinLock};
use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::net::Shutdown;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex, PoisonError};

/// Bulk pieces taken by `send_bulk` itself (the rest is pushed from `poll`).
const BULK_PIECES_AT_START: usize = 4;
/// Bulk pieces a `try_send` pushes after its packet, so that streams progress without a poll.
const BULK_PIECES_PER_PACKET: usize = 1;

/// A `send_bulk` in progress: the source segments and how far they have been copied.
struct BulkJob {
    hdr: BulkHeader,
    src: Vec<Segment>,
    index: usize,
    offset: usize,
    done: u64,
    token: u64,
}

impl BulkJob {
    /// Copies the next `n` source bytes into the ring from `pos` on.
    fn copy_next(&mut self, m: &ShmRing, mut pos: u64, mut n: usize) {
        while n > 0 {
            let s = self.src[self.index];
            let k = (s.len - self.offset).min(n);
            if k > 0 {
                // SAFETY: `send_bulk`'s contract keeps the source valid and unchanged until
                // bulk_sent; offset + k <= s.len.
                let bytes = unsafe { std::slice::from_raw_parts(s.ptr.add(self.offset), k) };
                m.write(pos, bytes);
            }
            pos += k as u64;
            n -= k;
            self.offset += k;
            if self.offset == s.len {
                self.index += 1;
                self.offset = 0;
            }
        }
    }
}

/// The producer side, under the link's send lock.
struct Tx {
    prod: Producer,
    bulk: VecDeque<BulkJob>,
    /// Tokens of bulk transfers entirely in the ring, for `poll` to report.
    sent: Vec<u64>,
}

/// Which end of the link this process is (the connector writes ring 0).
#[derive(Clone, Copy)]
pub(crate) enum Side {
    Connector,
    Acceptor,
}

/// Everything a link is built from.
pub(crate) struct Parts {
    pub peer: PeerId,
    pub map: Arc<Mapping>,
    pub cap: u64,
    pub side: Side,
    /// The peer's eventfd (signalled when it sleeps and we publish or free space).
    pub peer_wake: OwnedFd,
    /// Our driver's eventfd (signalled when a bulk transfer completes outside `poll`).
    pub own_wake: Arc<OwnedFd>,
    /// The setup socket, kept open as the liveness channel.
    pub sock: UnixStream,
    /// The peer's pid for our cross-memory reads (None: disabled here or the peer is invisible).
    pub read_pid: Option<u32>,
    /// The peer may reach our memory (both sides allow it and it sees our pid): we may expose.
    pub exposable: bool,
}

/// A link to one peer.
pub(crate) struct ShmLink {
    pub(crate) peer: PeerId,
    /// The ring we write, the peer reads.
    out: ShmRing,
    /// The ring we read.
    pub(crate) inc: ShmRing,
    tx: SpinLock<Tx>,
    /// Bulk data waits or finished transfers await reporting: `poll` must visit the send side.
    tx_pending: AtomicBool,
    /// The last attempt found no room; `tx_seen_head` is the consumer index it saw.
    tx_stalled: AtomicBool,
    tx_seen_head: AtomicU64,
    /// The consumer position in `inc` (written by the poller only).
    pub(crate) rx_head: AtomicU64,
    /// Where the poller last looked at the producer's `waiting` flag.
    pub(crate) rx_checked: AtomicU64,
    pub(crate) peer_wake: OwnedFd,
    own_wake: Arc<OwnedFd>,
    pub(crate) sock: UnixStream,
    failed: AtomicBool,
    failure: Mutex<Option<(io::ErrorKind, String)>>,
    /// `link_failed` was delivered.
    pub(crate) reported: AtomicBool,
    read_pid: Option<u32>,
    exposable: bool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ShmLink {
    pub(crate) fn new(p: Parts) -> Arc<ShmLink> {
        let (out, inc) = match p.side {
            Side::Connector => (0, 1),
            Side::Acceptor => (1, 0),
        };
        Arc::new(ShmLink {
            peer: p.peer,
            out: ShmRing::new(&p.map, p.cap, out),
            inc: ShmRing::new(&p.map, p.cap, inc),
            tx: SpinLock::new(Tx { prod: Producer::new(p.cap), bulk: VecDeque::new(), sent: Vec::new() }),
            tx_pending: AtomicBool::new(false),
            tx_stalled: AtomicBool::new(false),
            tx_seen_head: AtomicU64::new(0),
            rx_head: AtomicU64::new(0),
            rx_checked: AtomicU64::new(0),
            peer_wake: p.peer_wake,
            own_wake: p.own_wake,
            sock: p.sock,
            failed: AtomicBool::new(false),
            failure: Mutex::new(None),
            reported: AtomicBool::new(false),
            read_pid: p.read_pid,
            exposable: p.exposable,
        })
    }

    /// The ring we write (tests play a hostile peer through it).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn out_ring(&self) -> &ShmRing {
        &self.out
    }

    pub(crate) fn failed(&self) -> bool {
        self.failed.load(Acquire)
    }

    /// Whether the driver's poll has something to do on this link (see `Driver::probe`).
    pub(crate) fn probe(&self) -> bool {
        self.failed()
            || self.tx_pending.load(Relaxed)
            || self.tx_stalled.load(Relaxed)
            || ring::has_record(&self.inc, self.rx_head.load(Relaxed))
    }

    /// Marks the link failed (the first reason wins) and closes the control socket, so the peer
    /// learns it too. Returns whether this call failed it.
    pub(crate) fn fail(&self, kind: io::ErrorKind, why: String) -> bool {
        let mut f = lock(&self.failure);
        if f.is_some() {
            return false;
        }
        *f = Some((kind, why));
        self.failed.store(true, Release);
        let _ = self.sock.shutdown(Shutdown::Both);
        true
    }

    /// Whether what the peer published before the link failed is still worth delivering: yes
    /// when the peer left (its last packets were complete when it wrote them), no when its data
    /// was malformed or this driver shut down.
    pub(crate) fn drain_after_failure(&self) -> bool {
        matches!(&*lock(&self.failure), Some((io::ErrorKind::ConnectionReset, _)))
    }

    /// Why the link failed.
    pub(crate) fn error(&self) -> io::Error {
        match &*lock(&self.failure) {
            Some((kind, why)) => io::Error::new(*kind, why.clone()),
            None => io::Error::other("shm link has not failed"),
        }
    }

    fn check(&self) -> io::Result<()> {
        if self.failed() { Err(self.error()) } else { Ok(()) }
    }

    /// Copies between `local` and bytes `offset ..` of the peer's memory named by `key`.
    ///
    /// # Safety
    /// `local` must be valid for writes (`Read`) or reads (`Write`).
    unsafe fn cma(&self, key: &[u8], offset: u64, way: Way, local: &[(usize, usize)]) -> io::Result<()> {
        self.check()?;
        let Some(pid) = self.read_pid else {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "shm: cross-memory attach is disabled or the peer's pid is not visible here",
            ));
        };
        let access = if way == Way::Read { Access::Read } else { Access::ReadWrite };
        let remote = memkey::range(key, access, offset, local.iter().map(|p| p.1).sum())?;
        // SAFETY: the caller vouches for `local`; `remote` lies inside what the key names and
        // the kernel checks it against the peer's address space.
        unsafe { cma::copy(pid, way, &remote, local) }
    }

    fn corrupt(&self, m: Malformed) -> io::Error {
        self.fail(io::ErrorKind::InvalidData, format!("shm: rank {} corrupted its ring: {}", self.peer, m.0));
        self.error()
    }

    /// Signals the peer if it sleeps for such a record (after a publish).
    fn wake_peer(&self, urgent: bool) {
        if ring::consumer_sleeping(&self.out).wants(urgent) {
            signal(&self.peer_wake);
        }
    }

    fn stall(&self, tx: &Tx) {
        self.tx_seen_head.store(tx.prod.seen_head(), Relaxed);
        self.tx_stalled.store(true, Relaxed);
    }

    fn unstall(&self) {
        if self.tx_stalled.load(Relaxed) {
            self.tx_stalled.store(false, Relaxed);
        }
    }

    /// Streams queued bulk data into the ring (at most `max` pieces), keeping a quarter of the
    /// ring for packets. Returns how many pieces went.
    fn push_bulk(&self, tx: &mut Tx, max: usize) -> Result<usize, Malformed> {
        let keep = self.out.cap() / 4;
        let mut pushed = 0;
        while pushed < max {
            let Some(job) = tx.bulk.front_mut() else { break };
            let len = (job.hdr.len - job.done).min(MAX_PAYLOAD);
            let Some(pos) = tx.prod.reserve(&self.out, record_size(BULK_HEADER, len), keep)? else {
                self.stall(tx);
                break;
            };
            job.copy_next(&self.out, pos + BULK_HEADER, len as usize);
            let body = Body::Bulk { cookie: job.hdr.cookie, offset: job.hdr.offset + job.done };
            job.done += len;
            let finished = job.done == job.hdr.len;
            tx.prod.publish(&self.out, body, len);
            pushed += 1;
            if finished {
                let job = tx.bulk.pop_front().expect("the front job");
                tx.sent.push(job.token);
                self.tx_pending.store(true, Relaxed);
            }
        }
        Ok(pushed)
    }

    /// From `poll`: continues bulk streams and collects the tokens of finished ones. A stall of
    /// packets alone ends here: the core retries its busy packets after this poll.
    pub(crate) fn poll_tx(&self, tokens: &mut Vec<u64>) -> io::Result<usize> {
        if !self.tx_pending.load(Relaxed) {
            self.unstall();
            return Ok(0);
        }
        let mut guard = self.tx.lock();
        let tx = &mut *guard;
        if self.failed() {
            return Ok(0);
        }
        let n = self.push_bulk(tx, usize::MAX).map_err(|m| self.corrupt(m))?;
        tokens.append(&mut tx.sent);
        self.tx_pending.store(!tx.bulk.is_empty(), Relaxed);
        if tx.bulk.is_empty() {
            self.unstall();
        }
        drop(guard);
        if n > 0 {
            self.wake_peer(true);
        }
        Ok(n)
    }

    /// Bulk tokens finished outside `poll` get a wake-up of our own driver, so a sleeping context
    /// reports them. Bulk data in the ring is urgent (its sender waits for its end).
    fn after_send(&self, tx: Guard<'_, Tx>, urgent: bool) {
        let finished = !tx.sent.is_empty();
        let urgent = urgent || !tx.bulk.is_empty() || finished;
        drop(tx);
        self.wake_peer(urgent);
        if finished {
            signal(&self.own_wake);
        }
    }

    /// Writes `packet` into the ring, signalling a peer asleep for such a record.
    fn send_packet(&self, packet: &[IoSlice<'_>], urgent: bool) -> io::Result<Sent> {
        let len: usize = packet.iter().map(|s| s.len()).sum();
        if len as u64 > MAX_PAYLOAD {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "packet larger than max_packet"));
        }
        let mut guard = self.tx.lock();
        let tx = &mut *guard;
        self.check()?;
        let pos = match tx.prod.reserve(&self.out, record_size(PACKET_HEADER, len as u64), 0) {
            Ok(Some(pos)) => pos,
            Ok(None) => {
                // Records a peer asleep for urgent ones left unread may be what fills the ring:
                // a stall is urgent (once per stall).
                let first = !self.tx_stalled.load(Relaxed);
                self.stall(tx);
                drop(guard);
                if first {
                    self.wake_peer(true);
                }
                return Ok(Sent::Busy);
            }
            Err(m) => return Err(self.corrupt(m)),
        };
        let mut at = pos + PACKET_HEADER;
        for s in packet {
            self.out.write(at, s);
            at += s.len() as u64;
        }
        tx.prod.publish(&self.out, Body::Packet, len as u64);
        if tx.bulk.is_empty() {
            self.unstall();
        } else if let Err(m) = self.push_bulk(tx, BULK_PIECES_PER_PACKET) {
            // The packet is in the ring; the failure shows at the next call and poll.
            self.corrupt(m);
        }
        self.after_send(guard, urgent);
        Ok(Sent::Done)
    }
}

impl Link for ShmLink {
    fn peer(&self) -> PeerId {
        self.peer
    }

    fn try_send(&self, packet: &[IoSlice<'_>]) -> io::Result<Sent> {
        self.send_packet(packet, true)
    }

    fn try_send_lazy(&self, packet: &[IoSlice<'_>]) -> io::Result<Sent> {
        self.send_packet(packet, false)
    }

    unsafe fn send_bulk(&self, hdr: BulkHeader, src: &[Segment], token: u64) -> io::Result<()> {
        crate::drivers::check_bulk(&hdr, src)?;
        let mut guard = self.tx.lock();
        let tx = &mut *guard;
        self.check()?;
        tx.bulk.push_back(BulkJob { hdr, src: src.to_vec(), index: 0, offset: 0, done: 0, token });
        self.tx_pending.store(true, Relaxed);
        self.push_bulk(tx, BULK_PIECES_AT_START).map_err(|m| self.corrupt(m))?;
        self.after_send(guard, true);
        Ok(())
    }

    /// Cross-memory attach cannot make memory read-only for a peer allowed to read it: the key
    /// records `access` and our writes keep to it, a hostile peer need not.
    unsafe fn expose(&self, mem: &[Segment], access: Access) -> io::Result<Exposed> {
        self.check()?;
        if !self.exposable {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "shm: cross-memory attach is disabled or this process is not visible to the peer",
            ));
        }
        memkey::encode(mem, access).map(Exposed::new)
    }

    unsafe fn read_remote(&self, key: &[u8], offset: u64, local: &[SegmentMut]) -> io::Result<()> {
        let local: Vec<(usize, usize)> = local.iter().map(|s| (s.ptr as usize, s.len)).collect();
        // SAFETY: the caller guarantees `local` is writable.
        unsafe { self.cma(key, offset, Way::Read, &local) }
    }

    unsafe fn write_remote(&self, key: &[u8], offset: u64, src: &[Segment]) -> io::Result<()> {
        let src: Vec<(usize, usize)> = src.iter().map(|s| (s.ptr as usize, s.len)).collect();
        // SAFETY: the caller guarantees `src` is readable.
        unsafe { self.cma(key, offset, Way::Write, &src) }
    }

    /// Packets are in the shared ring once sent (it outlives this process while the peer maps
    /// it); bulk data waits in this process until streamed.
    fn sending(&self) -> bool {
        !self.failed() && !self.tx.lock().bulk.is_empty()
    }

    /// Fails the link without draining (nothing more is read from the ring) and shuts the
    /// control socket down: the peer's monitor sees it and fails its end. Our sleeping poller is
    /// woken to report the failure. The mapping and fds go with the last reference.
    fn close(&self) {
        let why = format!("shm: link to rank {} closed by this process", self.peer);
        if self.fail(io::ErrorKind::ConnectionAborted, why) {
            signal(&self.own_wake);
        }
    }
}

impl Sleeper for Arc<ShmLink> {
    fn set_asleep(&self, how: ring::Sleep) {
        ring::set_sleeping(&self.inc, how);
        ring::set_waiting(&self.out, how != ring::Sleep::Awake && self.tx_stalled.load(Relaxed));
    }

    fn ready(&self) -> bool {
        let stalled = self.tx_stalled.load(Relaxed);
        ring::has_record(&self.inc, self.rx_head.load(Relaxed))
            || (self.tx_pending.load(Relaxed) && !stalled)
            || (stalled && ring::released(&self.out) != self.tx_seen_head.load(Relaxed))
    }
}
