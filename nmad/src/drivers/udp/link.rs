//! One peer's link: the send side (packets cut into datagram-sized units and bulk pieces, kept
//! by the protocol's [`Sender`] until acknowledged, sent as the windows allow) and the receive
//! side (the protocol's [`Receiver`], packets reassembled from their fragments, bulk pieces
//! written where the sink says), and the link's failure, reported once.
//!
//! Locks: `tx` and `rx` are separate. `poll` holds `rx` while it hands units to the sink, which
//! may send on this link (`tx`); the send side only ever *tries* `rx` (to carry an owed ACK),
//! so neither order can deadlock. Bulk memory is never copied on the send side: a piece is read
//! from the sender's memory each time it goes (first time and retransmissions), and the
//! transfer is reported sent only once every piece is acknowledged.

use super::alarm::NEVER;
use super::segmented::{self, Batch};
use super::shared::Shared;
use super::sys;
use super::wire::{self, Data, Header};
use crate::drivers::{BulkHeader, Link, PeerId, Segment, SegmentMut, Sent, Sink};
use crate::reliable::{Ack, Arrival, Micros, Receiver, Sender, Transmit};
use smallvec::SmallVec;
use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::*;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, OnceLock};

/// Pieces of memory a datagram is sent from at most (more are gathered first).
pub(super) const MAX_PIECES: usize = 64;

/// Early datagrams up to this size are copied rather than kept in their receive buffer.
const KEEP_BY_COPY: usize = 16 << 10;

/// Where the peer's data socket is and how to talk to it (set once, at the handshake).
pub struct Remote {
    pub addr: SocketAddr,
    /// Where the peer's datagrams to us come from (its link socket).
    pub from: SocketAddr,
    /// The id the peer gave this link (it goes in every datagram we send it).
    pub id: u64,
    /// Payload bytes per datagram (both ends' limits, less our largest overhead).
    pub fragment: usize,
}

/// What the protocol carries for us.
pub enum Unit {
    /// A piece of a packet (`wire::FIRST` / `wire::LAST` say which).
    Fragment { bytes: Box<[u8]>, flags: u8 },
    /// Bytes `offset .. offset + len` of bulk job `job`.
    Bulk { job: u64, offset: u64, len: u32 },
}

pub(super) struct BulkJob {
    id: u64,
    token: u64,
    hdr: BulkHeader,
    pub(super) src: Vec<Segment>,
    /// Bytes made into units, and acknowledged.
    pushed: u64,
    acked: u64,
}

pub struct Tx {
    pub sender: Sender<Unit>,
    pub(super) jobs: VecDeque<BulkJob>,
    next_job: u64,
    /// Bulk sends whose every piece was acknowledged, to report.
    pub finished: Vec<u64>,
    head: Vec<u8>,
    /// The heads of a segmented send's datagrams, one after the other.
    pub(super) heads: Vec<u8>,
    /// A bulk piece scattered over more than [`MAX_PIECES`] segments, gathered.
    gathered: Vec<u8>,
}

/// An early datagram, kept whole until its turn.
pub struct Kept {
    pub(super) buf: Vec<u8>,
    pub(super) data: Data,
}

pub struct Rx {
    pub receiver: Receiver<Option<Kept>>,
    packet: Vec<u8>,
    assembling: bool,
    pub(super) dest: Vec<SegmentMut>,
}

pub struct UdpLink {
    pub peer: PeerId,
    /// The link's own socket, connected to the peer's data socket once established: every
    /// datagram to the peer leaves through it.
    sock: UdpSocket,
    /// The id the peer puts in datagrams to us (random: a stranger cannot guess it).
    pub local_id: u64,
    pub(super) shared: Arc<Shared>,
    remote: OnceLock<Remote>,
    pub tx: Mutex<Tx>,
    pub rx: Mutex<Rx>,
    /// `close` was called, or the link failed: nothing more is delivered or sent.
    closed: AtomicBool,
    failure: Mutex<Option<io::Error>>,
    /// Reported to the sink (`link_up`, `link_failed`), once each.
    pub announced: AtomicBool,
    pub failure_reported: AtomicBool,
    /// `tx.finished` has tokens to report.
    finished: AtomicBool,
    /// Runs of equal datagrams go in one segmented send (UDP GSO): on paths of small
    /// datagrams, while the kernel takes it.
    pub(super) segmenting: AtomicBool,
    /// When the send side's and the receive side's timers next need a poll.
    tx_due: AtomicU64,
    rx_due: AtomicU64,
    /// When a valid datagram last came from the peer, and we last pinged it.
    heard: AtomicU64,
    pinged: AtomicU64,
}

impl UdpLink {
    pub fn new(shared: Arc<Shared>, peer: PeerId, local_id: u64, sock: UdpSocket) -> UdpLink {
        let cfg = shared.protocol;
        UdpLink {
            peer,
            sock,
            local_id,
            tx: Mutex::new(Tx {
                sender: Sender::new(cfg, shared.stats.clone()),
                jobs: VecDeque::new(),
                next_job: 0,
                finished: Vec::new(),
                head: Vec::with_capacity(wire::MAX_DATA_OVERHEAD),
                heads: Vec::new(),
                gathered: Vec::new(),
            }),
            rx: Mutex::new(Rx {
                receiver: Receiver::new(cfg, shared.stats.clone()),
                packet: Vec::new(),
                assembling: false,
                dest: Vec::new(),
            }),
            shared,
            remote: OnceLock::new(),
            closed: AtomicBool::new(false),
            failure: Mutex::new(None),
            announced: AtomicBool::new(false),
            failure_reported: AtomicBool::new(false),
            finished: AtomicBool::new(false),
            segmenting: AtomicBool::new(false),
            tx_due: AtomicU64::new(NEVER),
            rx_due: AtomicU64::new(NEVER),
            heard: AtomicU64::new(0),
            pinged: AtomicU64::new(0),
        }
    }

    /// Sets where the peer is (the first handshake to finish wins; a crossed one agrees).
    /// `window`: units the peer keeps out of order; `in_flight`: units its receive buffer holds.
    pub fn establish(&self, remote: Remote, window: u32, in_flight: u32) {
        if self.remote.get().is_some() {
            return;
        }
        if let Err(e) = self.sock.connect(remote.addr) {
            self.fail(io::Error::new(
                e.kind(),
                format!("connecting to rank {} at {}: {e}", self.peer, remote.addr),
            ));
            return;
        }
        self.heard.store(self.shared.now(), Relaxed);
        self.segmenting.store(segmented::worth_it(remote.fragment), Relaxed);
        self.tx.lock().unwrap().sender.limit_window(window.min(in_flight).max(1));
        let _ = self.remote.set(remote);
    }

    pub(super) fn sock_fd(&self) -> std::os::fd::RawFd {
        self.sock.as_raw_fd()
    }

    /// The port this link's datagrams leave from (the peer checks it).
    pub fn send_port(&self) -> u16 {
        self.sock.local_addr().map_or(0, |a| a.port())
    }

    /// Sends one datagram to the peer. A port unreachable (the peer's process is gone, its
    /// host said) fails the link.
    fn send(&self, iov: &[IoSlice<'_>]) -> io::Result<()> {
        self.sent(sys::send(self.sock.as_raw_fd(), iov))
    }

    /// What a send to the peer returned, a port unreachable failing the link.
    pub(super) fn sent(&self, r: io::Result<usize>) -> io::Result<()> {
        match r {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                self.fail(io::Error::new(
                    io::ErrorKind::ConnectionRefused,
                    format!("rank {} is gone: its host reports its udp port closed", self.peer),
                ));
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    pub fn remote(&self) -> Option<&Remote> {
        self.remote.get()
    }

    pub fn is_up(&self) -> bool {
        self.remote.get().is_some()
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Acquire)
    }

    /// Fails the link (once): nothing more goes or is delivered; the next poll reports it.
    pub fn fail(&self, e: io::Error) {
        let mut f = self.failure.lock().unwrap();
        if f.is_none() && !self.failure_reported.load(Acquire) {
            log::debug!("udp link to rank {} failed: {e}", self.peer);
            *f = Some(e);
        }
        self.closed.store(true, Release);
        drop(f);
        self.shared.failed(self.peer);
    }

    /// The failure to report (once), releasing what the send side held.
    pub fn take_failure(&self) -> Option<io::Error> {
        if self.failure_reported.swap(true, AcqRel) {
            return None;
        }
        let e = self.failure.lock().unwrap().take()?;
        let mut tx = self.tx.lock().unwrap();
        tx.sender.drain().for_each(drop);
        tx.jobs.clear();
        tx.finished.clear();
        self.tx_due.store(NEVER, Release);
        self.rx_due.store(NEVER, Release);
        Some(e)
    }

    fn error(&self) -> io::Error {
        match &*self.failure.lock().unwrap() {
            Some(e) => io::Error::new(e.kind(), format!("udp link to rank {}: {e}", self.peer)),
            None => io::Error::new(
                io::ErrorKind::NotConnected,
                format!("udp link to rank {} is closed", self.peer),
            ),
        }
    }

    /// Whether bulk sends finished since the last [`UdpLink::take_finished`].
    pub fn has_finished(&self) -> bool {
        self.finished.load(Acquire)
    }

    /// The tokens of the bulk sends finished since the last call.
    pub fn take_finished(&self) -> Vec<u64> {
        if !self.finished.swap(false, AcqRel) {
            return Vec::new();
        }
        std::mem::take(&mut self.tx.lock().unwrap().finished)
    }

    /// Publishes a deadline of this link, ringing a poller asleep until later (`alarm`).
    fn set_due(&self, which: &AtomicU64, due: Micros) {
        which.store(due, SeqCst);
        if due != NEVER && self.shared.alarm.must_ring(due) {
            self.shared.ring();
        }
    }

    /// A valid datagram came from the peer.
    pub fn heard(&self, now: Micros) {
        self.heard.store(now, Relaxed);
    }

    /// The earliest time a poll must look at this link: its timers, and the heartbeat a silent
    /// peer is due.
    pub fn due(&self) -> Micros {
        let timers = self.tx_due.load(SeqCst).min(self.rx_due.load(SeqCst));
        if !self.is_up() || self.is_closed() {
            return timers;
        }
        let heard = self.heard.load(Relaxed);
        let (hb, dead) = (self.shared.heartbeat, self.shared.dead_after);
        timers.min(heard.max(self.pinged.load(Relaxed)) + hb).min(heard + dead)
    }

    // ------------------------------------------------------------------ sending

    /// Puts on the wire what the windows allow: lost units, queued units, bulk pieces fed in
    /// as the window opens (rendezvous data paced by it). A full socket buffer or a network
    /// error that may pass stops it (the datagram counts as lost: the protocol sends it again);
    /// any other error fails the link.
    pub fn pump(&self, tx: &mut Tx, now: Micros) {
        let Some(remote) = self.remote.get() else { return };
        let mut batch = Batch::default();
        loop {
            self.feed_bulk(tx, remote, now);
            let Some(first) = batch.carried.take().or_else(|| tx.sender.next_transmit(now)) else { break };
            batch.units.clear();
            let seg = self.segment_size(tx, &first);
            if let Some(seg) = seg {
                self.collect(tx, remote, now, first, seg, &mut batch);
            }
            let r = match seg {
                Some(seg) if batch.units.len() > 1 => self.transmit_segmented(tx, remote, &batch.units, seg),
                _ => self.transmit(tx, remote, first),
            };
            if let Err(e) = r {
                use io::ErrorKind::*;
                // A local firewall dropping the datagram says EPERM: a loss like another.
                let passing = matches!(
                    e.kind(),
                    WouldBlock
                        | Interrupted
                        | ConnectionRefused
                        | HostUnreachable
                        | NetworkUnreachable
                        | PermissionDenied
                ) || e.raw_os_error() == Some(libc::ENOBUFS);
                if !passing && batch.units.len() > 1 && self.segmenting.swap(false, Relaxed) {
                    // The kernel or the device cannot cut datagrams: lost, sent one by one again.
                    log::debug!("udp link to rank {}: no UDP GSO ({e}); datagrams go one by one", self.peer);
                } else if !passing {
                    self.fail(io::Error::new(
                        e.kind(),
                        format!("sending to rank {} at {}: {e}", self.peer, remote.addr),
                    ));
                }
                break;
            }
        }
        self.set_due(&self.tx_due, tx.sender.deadline().unwrap_or(NEVER));
    }

    /// Keeps about a window's worth of bulk pieces queued in the sender.
    pub(super) fn feed_bulk(&self, tx: &mut Tx, remote: &Remote, now: Micros) {
        let want = tx.sender.cwnd().max(8) as usize;
        while tx.sender.unsent() < want {
            let Some(job) = tx.jobs.iter_mut().find(|j| j.pushed < j.hdr.len) else { return };
            let len = (job.hdr.len - job.pushed).min(remote.fragment as u64);
            let unit = Unit::Bulk { job: job.id, offset: job.pushed, len: len as u32 };
            job.pushed += len;
            tx.sender.push(unit, now);
        }
    }

    fn transmit(&self, tx: &mut Tx, remote: &Remote, t: Transmit) -> io::Result<()> {
        let ack = self.owed_ack();
        let h = Header { kind: wire::KIND_DATA, from: self.shared.rank, link_id: remote.id };
        let mut iov: SmallVec<[IoSlice<'_>; 8]> = SmallVec::new();
        let Tx { sender, jobs, head, gathered, .. } = tx;
        head.clear();
        let unit = sender.unit(t.seq);
        encode_head(&h, &t, unit, jobs, ack.as_ref(), head);
        iov.push(IoSlice::new(head));
        // SAFETY: a bulk job's memory stays valid until `bulk_sent` (send_bulk's contract),
        // which is reported only after this unit is acknowledged.
        unsafe { payload(unit, jobs, &mut iov) };
        if iov.len() > MAX_PIECES {
            // Finely strided memory: one copy beats thousands of iovecs (and the kernel's
            // limit of 1024).
            gathered.clear();
            iov[1..].iter().for_each(|s| gathered.extend_from_slice(s));
            iov.truncate(1);
            iov.push(IoSlice::new(gathered));
        }
        if ack.is_some() {
            self.rx_due.store(NEVER, Release);
        }
        self.send(&iov).map_err(|e| {
            let total: usize = iov.iter().map(|s| s.len()).sum();
            io::Error::new(e.kind(), format!("{e} ({} pieces, {total} bytes)", iov.len()))
        })
    }

    /// The ACK owed to the peer, if any and if the receive side is free (a poller delivering
    /// to the sink holds it: it sends the ACK itself).
    fn owed_ack(&self) -> Option<Ack> {
        let mut rx = self.rx.try_lock().ok()?;
        rx.receiver.ack_due()?;
        Some(rx.receiver.take_ack())
    }

    /// Answers a heartbeat: an ACK at once.
    pub fn answer_ping(&self, now: Micros) {
        let mut rx = self.rx.lock().unwrap();
        self.send_ack(&mut rx, now, true);
    }

    /// Sends a bare ACK if one is due by `now`; keeps the due time otherwise.
    pub fn ack_if_due(&self, rx: &mut Rx, now: Micros) {
        self.send_ack(rx, now, false);
    }

    fn send_ack(&self, rx: &mut Rx, now: Micros, anyway: bool) {
        let due = rx.receiver.ack_due();
        if (anyway || due.is_some_and(|t| t <= now))
            && let Some(remote) = self.remote.get()
        {
            let ack = rx.receiver.take_ack();
            let mut b = Vec::with_capacity(wire::HEADER + ack.wire_len());
            Header { kind: wire::KIND_ACK, from: self.shared.rank, link_id: remote.id }.encode(&mut b);
            ack.encode(&mut b);
            crate::reliable::Stats::add(&self.shared.stats.acks_sent, 1);
            let _ = self.send(&[IoSlice::new(&b)]);
            self.rx_due.store(NEVER, Release);
        } else {
            self.set_due(&self.rx_due, due.unwrap_or(NEVER));
        }
    }

    /// Takes the peer's ACK: releases what it acknowledges (finishing bulk sends), sends what
    /// the windows now allow. An ACK of units never sent fails the link.
    pub fn on_ack(&self, ack: &Ack, now: Micros) {
        let mut tx = self.tx.lock().unwrap();
        let Tx { sender, jobs, finished, .. } = &mut *tx;
        let r = sender.on_ack(ack, now, |u| {
            if let Unit::Bulk { job, len, .. } = u
                && let Some(i) = jobs.iter().position(|j| j.id == job)
            {
                jobs[i].acked += u64::from(len);
                if jobs[i].acked == jobs[i].hdr.len {
                    finished.push(jobs[i].token);
                    jobs.remove(i);
                }
            }
        });
        if !finished.is_empty() {
            self.finished.store(true, Release);
        }
        if let Err(e) = r {
            drop(tx);
            self.fail(io::Error::new(io::ErrorKind::InvalidData, format!("rank {}: {e}", self.peer)));
            return;
        }
        self.pump(&mut tx, now);
    }

    /// The timers' work: probes and retransmissions, a bare ACK due, a heartbeat to a silent
    /// peer, a peer silent too long.
    pub fn service(&self, now: Micros) {
        if self.is_closed() {
            return;
        }
        let Some(remote) = self.remote.get() else { return };
        let silent = now.saturating_sub(self.heard.load(Relaxed));
        if silent > self.shared.dead_after {
            self.fail(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "rank {} answered no heartbeat for {} ms (NMAD_UDP_DEAD_AFTER)",
                    self.peer,
                    silent / 1000
                ),
            ));
            return;
        }
        if silent >= self.shared.heartbeat
            && now.saturating_sub(self.pinged.load(Relaxed)) >= self.shared.heartbeat
        {
            self.pinged.store(now, Relaxed);
            let mut b = Vec::with_capacity(wire::HEADER);
            Header { kind: wire::KIND_PING, from: self.shared.rank, link_id: remote.id }.encode(&mut b);
            let _ = self.send(&[IoSlice::new(&b)]);
        }
        {
            let mut tx = self.tx.lock().unwrap();
            if tx.sender.silent_for(now) > self.shared.dead_after {
                let state = tx.sender.describe();
                drop(tx);
                self.fail(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "rank {} acknowledged nothing for {} ms (NMAD_UDP_DEAD_AFTER; {state})",
                        self.peer,
                        self.shared.dead_after / 1000
                    ),
                ));
                return;
            }
            tx.sender.on_timer(now);
            self.pump(&mut tx, now);
        }
        if let Ok(mut rx) = self.rx.try_lock() {
            self.ack_if_due(&mut rx, now);
        }
    }

    // ------------------------------------------------------------------ receiving

    /// Takes a DATA datagram (the first `len` bytes of `buf`, fields `d`) from the peer; hands
    /// what is now in order to the sink. `buf` is taken (replaced by an empty vector) when a
    /// large datagram is kept for later. Returns how many units were handed over.
    pub fn on_data(&self, buf: &mut Vec<u8>, len: usize, d: Data, now: Micros, sink: &mut dyn Sink) -> usize {
        let mut rx = self.rx.lock().unwrap();
        let ack_now = d.flags & wire::ACK_NOW != 0;
        let mut handed = 0;
        if d.seq == rx.receiver.next() {
            if let Arrival::Deliver(_) = rx.receiver.on_data(d.seq, d.stamp, ack_now, None, now) {
                handed += self.hand_over(&mut rx, &buf[..len], &d, sink);
                handed += self.hand_over_ready(&mut rx, now, sink);
            }
        } else {
            // A small datagram is copied out (the receive buffer holds the largest one
            // loopback carries); a large one takes the buffer with it.
            let kept = if len <= KEEP_BY_COPY {
                Kept { buf: buf[..len].to_vec(), data: d }
            } else {
                buf.truncate(len);
                Kept { buf: std::mem::take(buf), data: d }
            };
            rx.receiver.on_data(d.seq, d.stamp, ack_now, Some(kept), now);
        }
        self.ack_if_due(&mut rx, now);
        handed
    }

    /// Hands over the units kept early that are now in order; how many.
    pub(super) fn hand_over_ready(&self, rx: &mut Rx, now: Micros, sink: &mut dyn Sink) -> usize {
        let mut handed = 0;
        while !self.is_closed()
            && let Some(Some(k)) = rx.receiver.pop_ready(now)
        {
            handed += self.hand_over(rx, &k.buf, &k.data, sink);
        }
        handed
    }

    /// One unit in order: a packet fragment (delivered with its packet's last one) or a bulk
    /// piece (written where the sink says). A malformed sequence fails the link.
    pub(super) fn hand_over(&self, rx: &mut Rx, buf: &[u8], d: &Data, sink: &mut dyn Sink) -> usize {
        if self.is_closed() {
            return 0;
        }
        let payload = &buf[d.payload_at..];
        if let Some((cookie, offset)) = d.bulk {
            let hdr = BulkHeader { cookie, offset, len: payload.len() as u64 };
            rx.dest.clear();
            if sink.bulk_dest(self.peer, &hdr, &mut rx.dest) {
                let total: usize = rx.dest.iter().map(|s| s.len).sum();
                if total != payload.len() {
                    self.fail(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "bulk destination of the wrong size",
                    ));
                    return 0;
                }
                let src = [Segment { ptr: payload.as_ptr(), len: payload.len() }];
                // SAFETY: the sink's destination is writable until bulk_done (Sink contract) and
                // has the payload's size (checked); `payload` is our own buffer.
                unsafe { crate::drivers::copy_segments(&src, &rx.dest) };
                sink.bulk_done(self.peer, &hdr);
            }
            return 1;
        }
        let (first, last) = (d.flags & wire::FIRST != 0, d.flags & wire::LAST != 0);
        let bad =
            |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("rank {}: {what}", self.peer));
        match (first, last, rx.assembling) {
            (true, true, false) => {
                sink.packet(self.peer, payload);
                1
            }
            (true, false, false) => {
                rx.packet.clear();
                rx.packet.extend_from_slice(payload);
                rx.assembling = true;
                0
            }
            (false, _, true) => {
                if rx.packet.len() + payload.len() > self.shared.max_packet {
                    self.fail(bad("a packet longer than max_packet"));
                    return 0;
                }
                rx.packet.extend_from_slice(payload);
                if !last {
                    return 0;
                }
                rx.assembling = false;
                let packet = std::mem::take(&mut rx.packet);
                sink.packet(self.peer, &packet);
                rx.packet = packet;
                1
            }
            _ => {
                self.fail(bad("a packet fragment out of place"));
                0
            }
        }
    }
}

/// Appends to `iov` the pieces of `src` (one range, in order) that hold bytes
/// `offset .. offset + len`.
///
/// # Safety
/// The segments must be valid for reads for as long as `iov` is used.
unsafe fn pieces<'a, A: smallvec::Array<Item = IoSlice<'a>>>(
    src: &[Segment],
    offset: u64,
    len: u64,
    iov: &mut SmallVec<A>,
) {
    let (start, end) = (offset as usize, (offset + len) as usize);
    let mut pos = 0;
    for s in src {
        let (lo, hi) = (start.max(pos), end.min(pos + s.len));
        if lo < hi {
            // SAFETY: `lo - pos .. hi - pos` lies inside segment `s` (caller's contract: valid).
            iov.push(IoSlice::new(unsafe { std::slice::from_raw_parts(s.ptr.add(lo - pos), hi - lo) }));
        }
        pos += s.len;
        if pos >= end {
            break;
        }
    }
}

/// Encodes the head of unit `t` (`unit`, of `jobs` if a bulk piece) at the end of `out`, with
/// `ack` piggybacked if any.
pub(super) fn encode_head(
    h: &Header,
    t: &Transmit,
    unit: &Unit,
    jobs: &VecDeque<BulkJob>,
    ack: Option<&Ack>,
    out: &mut Vec<u8>,
) {
    let ack_now = if t.ack_now { wire::ACK_NOW } else { 0 };
    match unit {
        Unit::Fragment { flags, .. } => Data::encode_head(h, t.seq, t.stamp, flags | ack_now, ack, None, out),
        &Unit::Bulk { job, offset, len } => {
            let j = job_of(jobs, job);
            // The last piece of a transfer asks for its ACK at once: the sender waits for it.
            let last = if offset + u64::from(len) == j.hdr.len { wire::ACK_NOW } else { 0 };
            let bulk = Some((j.hdr.cookie, j.hdr.offset + offset));
            Data::encode_head(h, t.seq, t.stamp, ack_now | last, ack, bulk, out);
        }
    }
}

/// Appends to `iov` the memory `unit`'s payload is read from.
///
/// # Safety
/// A bulk piece's job memory must be valid for reads for as long as `iov` is used.
pub(super) unsafe fn payload<'a, A: smallvec::Array<Item = IoSlice<'a>>>(
    unit: &'a Unit,
    jobs: &'a VecDeque<BulkJob>,
    iov: &mut SmallVec<A>,
) {
    match unit {
        Unit::Fragment { bytes, .. } => iov.push(IoSlice::new(bytes)),
        &Unit::Bulk { job, offset, len } => {
            // SAFETY: the caller's contract.
            unsafe { pieces(&job_of(jobs, job).src, offset, u64::from(len), iov) }
        }
    }
}

pub(super) fn job_of(jobs: &VecDeque<BulkJob>, id: u64) -> &BulkJob {
    jobs.iter().find(|j| j.id == id).expect("a job outlives its units")
}

impl Link for UdpLink {
    fn peer(&self) -> PeerId {
        self.peer
    }

    fn try_send(&self, packet: &[IoSlice<'_>]) -> io::Result<Sent> {
        if self.is_closed() {
            return Err(self.error());
        }
        let len: usize = packet.iter().map(|s| s.len()).sum();
        if len > self.shared.max_packet {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "packet larger than max_packet"));
        }
        let Some(remote) = self.remote.get() else {
            return Err(io::Error::new(io::ErrorKind::NotConnected, "udp link not established"));
        };
        let now = self.shared.now();
        let mut tx = self.tx.lock().unwrap();
        if tx.sender.unsent() >= self.shared.busy_units {
            self.pump(&mut tx, now);
            return Ok(Sent::Busy);
        }
        // Cut into fragments of at most `remote.fragment` bytes (at least one, for 0 bytes),
        // copied slice by slice.
        let (mut piece, mut at) = (0, 0);
        let mut left = len;
        let mut first = true;
        loop {
            let n = left.min(remote.fragment);
            let mut bytes = Vec::with_capacity(n);
            while bytes.len() < n {
                let s = &packet[piece][at..];
                let take = s.len().min(n - bytes.len());
                bytes.extend_from_slice(&s[..take]);
                at += take;
                if at == packet[piece].len() {
                    (piece, at) = (piece + 1, 0);
                }
            }
            left -= n;
            let flags = if first { wire::FIRST } else { 0 } | if left == 0 { wire::LAST } else { 0 };
            tx.sender.push(Unit::Fragment { bytes: bytes.into_boxed_slice(), flags }, now);
            first = false;
            if left == 0 {
                break;
            }
        }
        self.pump(&mut tx, now);
        Ok(Sent::Done)
    }

    unsafe fn send_bulk(&self, hdr: BulkHeader, src: &[Segment], token: u64) -> io::Result<()> {
        crate::drivers::check_bulk(&hdr, src)?;
        if self.is_closed() {
            return Err(self.error());
        }
        let now = self.shared.now();
        let mut tx = self.tx.lock().unwrap();
        if hdr.len == 0 {
            tx.finished.push(token);
            self.finished.store(true, Release);
            self.shared.ring();
            return Ok(());
        }
        let id = tx.next_job;
        tx.next_job += 1;
        tx.jobs.push_back(BulkJob { id, token, hdr, src: src.to_vec(), pushed: 0, acked: 0 });
        self.pump(&mut tx, now);
        Ok(())
    }

    fn sending(&self) -> bool {
        if self.is_closed() {
            return false;
        }
        let tx = self.tx.lock().unwrap();
        !tx.sender.is_empty() || !tx.jobs.is_empty()
    }

    fn close(&self) {
        if self.closed.swap(true, AcqRel) {
            return;
        }
        if let Some(remote) = self.remote.get() {
            let mut b = Vec::with_capacity(wire::HEADER);
            Header { kind: wire::KIND_CLOSE, from: self.shared.rank, link_id: remote.id }.encode(&mut b);
            // Twice: a lost CLOSE leaves the peer to find out by its silence timeout.
            for _ in 0..2 {
                let _ = self.send(&[IoSlice::new(&b)]);
            }
        }
        self.fail(io::Error::new(
            io::ErrorKind::ConnectionAborted,
            format!("link to rank {} closed", self.peer),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_pieces_span_segments() {
        let (a, b) = ([1u8; 5], [2u8; 7]);
        let src = [Segment { ptr: a.as_ptr(), len: 5 }, Segment { ptr: b.as_ptr(), len: 7 }];
        let mut iov: SmallVec<[IoSlice<'_>; 8]> = SmallVec::new();
        // SAFETY: both arrays outlive `iov`.
        unsafe { pieces(&src, 3, 6, &mut iov) };
        let got: Vec<u8> = iov.iter().flat_map(|s| s.iter().copied()).collect();
        assert_eq!(got, [1, 1, 2, 2, 2, 2]);
    }
}
