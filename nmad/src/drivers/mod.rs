//! Drivers move bytes between processes; they know nothing of tags, matching or requests.
//!
//! A [`Driver`] is one *driver context* per process (one NIC, one shared-memory domain): it
//! publishes a business card, connects to peers from their cards (giving a [`Link`] per peer),
//! and is polled — by one pioman ltask — for everything that arrives or progresses, which it hands
//! to a [`Sink`] (the core). Several drivers reaching the same peer are *rails*.
//!
//! Two kinds of traffic:
//! - **packets** (`Link::try_send`): at most [`Caps::max_packet`] bytes built by the core
//!   (headers and small data, aggregated); delivered whole and in order per link, or refused as
//!   [`Sent::Busy`] when the link is full (the strategy then accumulates more to aggregate);
//! - **bulk** data of rendezvous messages, streamed from the sender's memory
//!   (`Link::send_bulk`) straight into the memory the receiver's core names
//!   (`Sink::bulk_dest`), or read by the receiver from the sender's memory
//!   (`Link::read_remote`, [`LargePath::ReadRemote`]).
//!
//! **Remote memory** is one seam for every driver that can reach a peer's memory without the
//! peer's CPU copying it (cross-memory attach today, registered memory and RDMA tomorrow): the
//! owner *exposes* segments to a peer ([`Link::expose`]) and sends it the opaque key it gets;
//! the peer reads or writes bytes of that memory by key and offset ([`Link::read_remote`],
//! [`Link::write_remote`]). What a key holds is the driver's business (`memkey`: addresses, for
//! drivers that reach the peer's address space); the core only carries it.
//!
//! Rules every driver keeps:
//! - Everything read from a peer is untrusted: every length and offset is bounds-checked, a
//!   malformed frame fails the link ([`Sink::link_failed`]) instead of panicking.
//! - A dead peer is detected (EOF, hang-up) and reported through `Sink::link_failed`, once
//!   everything it sent before is delivered (a peer that sends and exits at once loses nothing);
//!   later calls on its link return errors. A link whose send fails is reported the same way,
//!   after what arrived on it. Nothing hangs.
//! - [`Link::close`] cuts a peer off: both sides see the link fail, and this one reads nothing
//!   more from it.
//! - A packet reported `Done` is out of the sender's hands: a process that exits afterwards
//!   loses it only if [`Link::sending`] said so.
//! - Connections prove the job secret (`tools::secret`) both ways; a stranger is rejected and
//!   logged, and the driver carries on.
//! - `poll` may call any `Sink` method, and the sink may call `try_send`/`send_bulk` on any link of
//!   the same driver from inside that call: a driver holds no lock across sink calls that its send
//!   side needs.
//! - Drivers never see tags, sessions or requests: `BulkHeader::cookie` is opaque to them.

pub mod conformance;
pub mod ip;
pub mod memkey;
pub mod retry;
pub mod self_driver;
pub mod shm;
pub mod tcp;
pub mod udp;

use std::io::{self, IoSlice};
use std::os::fd::RawFd;
use std::sync::Arc;
use tools::secret::JobKey;

/// A process of the job (its PMI rank).
pub type PeerId = u32;

/// What a driver can do; the core and the strategies adapt to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// Largest packet [`Link::try_send`] accepts (all segments together).
    pub max_packet: usize,
    /// Messages up to this many bytes go eagerly through this driver (unless credits run out);
    /// larger ones use the rendezvous. At most `max_packet` minus the core's headers.
    pub eager_limit: usize,
    /// `try_send` and `send_bulk` take scattered segments without gathering them first.
    pub iovec: bool,
    /// The driver's best path for rendezvous data.
    pub large: LargePath,
    /// [`Driver::wait_fd`] gives an fd pioman can sleep on (interrupt-style waits).
    pub blocking: bool,
}

/// How rendezvous data travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LargePath {
    /// The sender streams it with [`Link::send_bulk`]; the receiving driver writes it where the
    /// receiver's core says ([`Sink::bulk_dest`]).
    Bulk,
    /// The receiver copies it out of the sender's memory with [`Link::read_remote`] (one copy);
    /// `Bulk` remains available as the fallback when the system refuses. Such a driver
    /// implements [`Link::expose`], [`Link::read_remote`] and [`Link::write_remote`].
    ReadRemote,
}

/// Longest key [`Link::expose`] may return (it travels in a packet).
pub const MAX_KEY: usize = 1300;
/// Most segments the core asks [`Link::expose`] to expose at once (more scattered memory is sent
/// as bulk data instead).
pub const MAX_EXPOSED_SEGMENTS: usize = 64;

/// What a peer may do with exposed memory. Drivers that cannot enforce it (cross-memory attach:
/// a peer allowed to read a process may write it too) document so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    ReadWrite,
}

/// Memory of this process exposed to one peer: the key to send it, and whatever the driver needs
/// kept until the peer is done (a registration); dropping it withdraws the exposure.
pub struct Exposed {
    key: Vec<u8>,
    _hold: Option<Box<dyn Send + Sync>>,
}

impl Exposed {
    /// An exposure that needs nothing kept (the key alone gives access).
    pub fn new(key: Vec<u8>) -> Exposed {
        Exposed { key, _hold: None }
    }

    /// An exposure that lasts as long as `hold`.
    pub fn holding(key: Vec<u8>, hold: Box<dyn Send + Sync>) -> Exposed {
        Exposed { key, _hold: Some(hold) }
    }

    /// The opaque key the peer names this memory by (at most [`MAX_KEY`] bytes).
    pub fn key(&self) -> &[u8] {
        &self.key
    }
}

impl std::fmt::Debug for Exposed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Exposed({} key bytes)", self.key.len())
    }
}

/// Nominal performance, for strategies (small messages on the lowest latency, large ones split
/// in proportion to bandwidth).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profile {
    pub latency_ns: u64,
    pub bandwidth_mbps: u64,
}

/// A piece of the sender's memory (valid in the sender's address space).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub ptr: *const u8,
    pub len: usize,
}

/// A piece of memory the receiver writes into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentMut {
    pub ptr: *mut u8,
    pub len: usize,
}

// SAFETY: segments are plain descriptions of memory; whoever dereferences them answers for the
// memory's validity (the core keeps it alive until the driver reports completion).
unsafe impl Send for Segment {}
// SAFETY: as above.
unsafe impl Sync for Segment {}
// SAFETY: as above.
unsafe impl Send for SegmentMut {}
// SAFETY: as above.
unsafe impl Sync for SegmentMut {}

/// Which bytes of which rendezvous a bulk transfer carries. The cookie is the receiver's
/// (opaque to drivers); the driver may split one `send_bulk` into several frames, each with its
/// own `offset` and `len`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BulkHeader {
    pub cookie: u64,
    pub offset: u64,
    pub len: u64,
}

/// The outcome of a packet send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// The packet is on its way; its memory may be reused.
    Done,
    /// Nothing was sent: the link is full. Retry after the driver's next poll.
    Busy,
}

/// What a process needs to start its drivers.
#[derive(Clone, Debug)]
pub struct DriverEnv {
    pub rank: PeerId,
    pub size: u32,
    /// Proved by both sides of every connection.
    pub job_key: JobKey,
    /// Identifies this node (same value ⇔ shared memory and cross-memory attach work): boot id
    /// and network namespace, so network namespaces count as hosts.
    pub node: String,
    /// Every process that may connect to this one runs on this node (the launcher said): network
    /// drivers then listen on loopback only.
    pub single_node: bool,
}

/// One driver context (one per network per process).
pub trait Driver: Send + Sync {
    /// The instance's name, which is also its key in business cards (`self`, `shm`, `tcp`,
    /// `tcp:eth1`). Two processes use a driver together if both have one by that name.
    fn name(&self) -> &str;
    fn caps(&self) -> Caps;
    fn profile(&self) -> Profile;
    /// How a peer reaches this process through this driver (published through PMI: printable
    /// ASCII without space, `=`, `;`, `\\`, `#` or `|`).
    fn card(&self) -> String;
    /// Whether this driver can reach the process that published `card` (for `shm`: same node).
    fn reaches(&self, card: &str) -> bool;
    /// Connects to `peer` from its card and proves the job secret. May block for the handshake
    /// (bounded by a timeout); the peer's driver reports the connection as [`Sink::link_up`].
    fn connect(&self, peer: PeerId, card: &str) -> io::Result<Arc<dyn Link>>;
    /// Makes progress on everything: accepts connections, receives, continues bulk sends,
    /// detects failures. Returns how many events it handled (0: nothing happened). Never blocks.
    fn poll(&self, sink: &mut dyn Sink) -> usize;
    /// Whether `poll` is cheap enough (no system call when idle) for a thread waiting on one of
    /// its peers to poll this driver's task first, again and again (see `Request::wait`).
    fn polls_cheaply(&self) -> bool {
        false
    }
    /// Whether `poll` may find something now, by a look cheaper than a poll (loads, no system
    /// call): a thread waiting on one of this driver's peers probes between its polls and
    /// polls when this says so (see `pioman::Source::probe`). `true` when unsure (the
    /// default: poll every time).
    fn probe(&self) -> bool {
        true
    }
    /// [`Driver::poll`] of `peer`'s link alone (what it sent, our bulk sends to it, its
    /// failure), for a thread waiting on a send to or a receive from `peer`, if a look as cheap as
    /// [`Driver::probe`]'s says there is something: `None` when it did not poll, else the
    /// events. Connections and other peers wait for the next whole poll, which the waiter's
    /// rounds run. Default: `probe`, then `poll`.
    fn poll_peer(&self, peer: PeerId, sink: &mut dyn Sink) -> Option<usize> {
        let _ = peer;
        self.probe().then(|| self.poll(sink))
    }
    /// An fd that becomes readable when `poll` has something to do (after [`Driver::arm`]).
    fn wait_fd(&self) -> Option<RawFd> {
        None
    }
    /// A context is about to sleep on `wait_fd`: make sure peers signal it. Returns `false` if
    /// something already arrived (do not sleep). Each `arm` is paired with one `disarm`.
    fn arm(&self) -> bool {
        true
    }
    fn disarm(&self) {}
    /// [`Driver::arm`] for a context that peers need to wake only for packets someone waits for
    /// (not those sent by [`Link::try_send_lazy`]): a progression thread while its application
    /// computes. Paired with [`Driver::disarm_for_urgent`].
    fn arm_for_urgent(&self) -> bool {
        self.arm()
    }
    fn disarm_for_urgent(&self) {
        self.disarm()
    }
    /// Closes every link and stops accepting. Idempotent.
    fn shutdown(&self) {}
    /// The acknowledgement layer's counters, for a driver over a lossy transport (udp).
    fn protocol_stats(&self) -> Option<crate::reliable::StatsSnapshot> {
        None
    }
}

/// A connection to one peer through one driver.
pub trait Link: Send + Sync {
    fn peer(&self) -> PeerId;
    /// Sends one packet made of `packet`'s segments (at most `Caps::max_packet` bytes in all),
    /// whole, or nothing ([`Sent::Busy`]). On `Done` the bytes were copied or written: the caller
    /// may reuse them. Errors mean the link failed.
    fn try_send(&self, packet: &[IoSlice<'_>]) -> io::Result<Sent>;
    /// [`Link::try_send`] of a packet nobody waits for at the peer (plain eager data, no answer
    /// asked): a peer asleep for urgent packets only ([`Driver::arm_for_urgent`]) is left asleep
    /// and reads it at its next poll.
    fn try_send_lazy(&self, packet: &[IoSlice<'_>]) -> io::Result<Sent> {
        self.try_send(packet)
    }
    /// Starts sending `src` (`hdr.len` bytes in all) as bulk data; the receiving driver asks its
    /// sink where to put it. Completion is reported as [`Sink::bulk_sent`] with `token`.
    ///
    /// # Safety
    /// The memory of `src` must stay valid and unchanged until `bulk_sent(token)` or a
    /// `link_failed` for this peer has been reported.
    unsafe fn send_bulk(&self, hdr: BulkHeader, src: &[Segment], token: u64) -> io::Result<()>;
    /// Exposes `mem` (one range: the segments in order) to the peer for `access`; the peer names
    /// its bytes by the returned key and offsets from 0. `ErrorKind::Unsupported` when the driver
    /// cannot (or not for this peer, or not that many segments): the core sends the data instead.
    ///
    /// # Safety
    /// `mem` must stay valid (writable, for `ReadWrite`) while the [`Exposed`] lives.
    unsafe fn expose(&self, mem: &[Segment], access: Access) -> io::Result<Exposed> {
        let _ = (mem, access);
        Err(io::Error::new(io::ErrorKind::Unsupported, "this driver cannot expose memory"))
    }
    /// Copies bytes `offset ..` of the peer's memory named by `key` into `local` (their total
    /// length) — one copy. `key` comes from the peer: it is checked, not trusted, and a range
    /// outside it is an `InvalidInput` error with nothing copied. `PermissionDenied` or
    /// `Unsupported` mean the system refuses: the core falls back to bulk sends.
    ///
    /// # Safety
    /// `local` must be valid for writes.
    unsafe fn read_remote(&self, key: &[u8], offset: u64, local: &[SegmentMut]) -> io::Result<()> {
        let _ = (key, offset, local);
        Err(io::Error::new(io::ErrorKind::Unsupported, "this driver cannot read remote memory"))
    }
    /// Copies `src` into bytes `offset ..` of the peer's memory named by `key`, as
    /// [`Link::read_remote`] in the other direction.
    ///
    /// # Safety
    /// `src` must be valid for reads.
    unsafe fn write_remote(&self, key: &[u8], offset: u64, src: &[Segment]) -> io::Result<()> {
        let _ = (key, offset, src);
        Err(io::Error::new(io::ErrorKind::Unsupported, "this driver cannot write remote memory"))
    }
    /// Whether bytes this link took (a packet it reported `Done`, bulk data) have yet to reach
    /// the peer beyond this process's reach: still in the driver, or in a kernel buffer the peer
    /// has not acknowledged. A process waits for this before it exits (`finalize`): bytes that
    /// never left it are lost with it. `false` once the link failed. Default: never.
    fn sending(&self) -> bool {
        false
    }
    /// Bytes sent on this link that the peer's side acknowledged so far (TCP's cumulative
    /// acknowledgement), if the transport says: rail failover counts a rail whose count grows as
    /// alive even when nothing comes back on it (a rail carrying a long bulk transfer one way).
    /// Default: unknown.
    fn acknowledged(&self) -> Option<u64> {
        None
    }
    /// Whether this link is known to have failed or been closed. A driver reports failures per
    /// peer ([`Sink::link_failed`]): rail failover asks the link it uses now, so that the late
    /// report of a link it replaced does not fail the new one. Default: yes (trust the report).
    fn is_broken(&self) -> bool {
        true
    }
    /// Cuts this process off from the peer through this driver (the core calls it on a peer that
    /// broke the protocol or is lost): the peer's driver sees the link fail and reports
    /// [`Sink::link_failed`]; ours stops reading it at once (what the peer sent and was not read
    /// yet is dropped), reports it failed too, and later calls on it return errors. Safe while
    /// other threads send on or poll the link: resources are released only when the last
    /// reference is dropped. Idempotent. Default: nothing to close.
    fn close(&self) {}
}

/// A packet a driver lends in place ([`Sink::packet_lent`]): bytes the peer may still write
/// (a shared ring), so they are only ever copied out, never borrowed, and every byte parsed is
/// read once. Whoever reads keeps its ranges within [`LentPacket::len`].
pub trait LentPacket: Sync {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Copies bytes `at..at + dst.len()` into `dst` (a range beyond the end is cut short:
    /// the rest of `dst` is left as it was).
    fn read(&self, at: usize, dst: &mut [u8]);
}

/// What a driver's poll hands its events to: the core (or a test).
pub trait Sink {
    /// A peer connected to us and proved the secret.
    fn link_up(&mut self, link: Arc<dyn Link>);
    /// A packet from `from` (valid only during the call).
    fn packet(&mut self, from: PeerId, bytes: &[u8]);
    /// A packet from `from` left where it arrived (valid only during the call): read by copying
    /// out, so that its payloads go once, straight to where they belong. Default: copied whole,
    /// then [`Sink::packet`].
    fn packet_lent(&mut self, from: PeerId, packet: &dyn LentPacket) {
        let mut bytes = vec![0; packet.len()];
        packet.read(0, &mut bytes);
        self.packet(from, &bytes);
    }
    /// Where the bulk bytes `hdr` from `from` go: fills `dest` with segments of `hdr.len` bytes
    /// in all and returns `true`, or returns `false` and the driver discards the bytes. The
    /// memory stays valid until `bulk_done(hdr)` or a link failure is reported.
    fn bulk_dest(&mut self, from: PeerId, hdr: &BulkHeader, dest: &mut Vec<SegmentMut>) -> bool;
    /// Every byte of `hdr` (for which `bulk_dest` returned `true`) has been written.
    fn bulk_done(&mut self, from: PeerId, hdr: &BulkHeader);
    /// A `send_bulk` finished: its memory is free.
    fn bulk_sent(&mut self, to: PeerId, token: u64);
    /// The link to `peer` failed (dead peer, malformed data): pending transfers are lost.
    fn link_failed(&mut self, peer: PeerId, error: io::Error);
}

/// This machine's node identity: boot id and network namespace (see [`DriverEnv::node`]).
pub fn node_id() -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let net = std::fs::read_link("/proc/self/ns/net").map(|p| p.display().to_string()).unwrap_or_default();
    let net: String = net.chars().filter(char::is_ascii_digit).collect();
    format!("{}-{}", boot.trim().replace('-', ""), net)
}

/// Checks a `Link::send_bulk` call's arguments: the segments add up to `hdr.len` and the
/// piece's end fits in 64 bits (`InvalidInput` otherwise).
pub fn check_bulk(hdr: &BulkHeader, src: &[Segment]) -> io::Result<()> {
    let total = src.iter().try_fold(0u64, |a, s| a.checked_add(s.len as u64));
    if total != Some(hdr.len) || hdr.offset.checked_add(hdr.len).is_none() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "bulk segments do not add up to hdr.len"));
    }
    Ok(())
}

/// Copies `src` segments into `dst` segments (same total length), for drivers that move bulk
/// data through their own buffers and for the self driver.
///
/// # Safety
/// Every segment must be valid (reads for `src`, writes for `dst`) and they must not overlap.
pub unsafe fn copy_segments(src: &[Segment], dst: &[SegmentMut]) {
    let (mut si, mut so, mut di, mut dof) = (0, 0, 0, 0);
    while si < src.len() && di < dst.len() {
        let n = (src[si].len - so).min(dst[di].len - dof);
        // SAFETY: both ranges lie inside valid, non-overlapping segments (caller's contract).
        unsafe { std::ptr::copy_nonoverlapping(src[si].ptr.add(so), dst[di].ptr.add(dof), n) };
        so += n;
        dof += n;
        if so == src[si].len {
            si += 1;
            so = 0;
        }
        if dof == dst[di].len {
            di += 1;
            dof = 0;
        }
    }
}

/// A driver by name and options: `self`, `shm`, `tcp`, `tcp:IFACE` or `tcp:ADDRESS` (the address
/// or interface it listens on; several are rails), `udp`, `udp:IFACE` or `udp:ADDRESS`.
pub fn by_spec(spec: &str, env: &DriverEnv) -> io::Result<Arc<dyn Driver>> {
    let (kind, arg) = spec.split_once(':').map_or((spec, None), |(k, a)| (k, Some(a)));
    match kind {
        "self" => Ok(Arc::new(self_driver::SelfDriver::new(env)?)),
        "shm" => shm::ShmDriver::create(env),
        "tcp" => tcp::TcpDriver::create(env, arg),
        "udp" => udp::UdpDriver::create(env, arg),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("unknown driver `{spec}` (known: self, shm, tcp, tcp:IFACE, udp, udp:IFACE)"),
        )),
    }
}
