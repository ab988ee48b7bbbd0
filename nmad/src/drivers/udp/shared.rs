//! What every link of a udp driver instance, its handshake thread and its `poll` share: the
//! data socket, the clock, the protocol's settings and counters, and the hand-off queues (links
//! to announce, links that failed) with the doorbell that wakes a sleeping poller for them; and
//! the links by peer rank ([`Links`]).

use super::alarm::Alarm;
use super::link::UdpLink;
use crate::drivers::PeerId;
use crate::drivers::ip::sys::EventFd;
use crate::reliable::{Config, Micros, Stats};
use std::net::{IpAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::Ordering::*;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;
use tools::admission::RejectLog;

pub struct Shared {
    pub rank: u32,
    pub size: u32,
    pub sock: UdpSocket,
    /// The address links' sockets bind to, and their send buffer.
    pub bind: IpAddr,
    pub sockbuf: usize,
    epoch: Instant,
    pub stats: Arc<Stats>,
    pub protocol: Config,
    pub max_packet: usize,
    /// Units queued unsent on a link beyond which `try_send` says `Busy`.
    pub busy_units: usize,
    /// A peer that acknowledges nothing, or answers no heartbeat, for this long is lost.
    pub dead_after: Micros,
    /// A peer silent for this long gets a heartbeat.
    pub heartbeat: Micros,
    /// Datagrams dropped because they came from no peer of ours (or failed their checks).
    pub strangers: AtomicU64,
    pub rejects: RejectLog,
    pub doorbell: EventFd,
    rung: AtomicBool,
    /// Pollers asleep on the wait fd, and until when.
    pub alarm: Alarm,
    failed: Mutex<Vec<PeerId>>,
    announce: Mutex<Vec<Arc<UdpLink>>>,
    closed: AtomicBool,
}

impl Shared {
    /// `(rank, size)`: ours and the job's; `(dead_after, heartbeat)`: the silence bounds.
    pub fn new(
        (rank, size): (u32, u32),
        (sock, bind, sockbuf): (UdpSocket, IpAddr, usize),
        protocol: Config,
        (max_packet, busy_units): (usize, usize),
        (dead_after, heartbeat): (Micros, Micros),
        rejects: RejectLog,
    ) -> std::io::Result<Shared> {
        Ok(Shared {
            rank,
            size,
            sock,
            bind,
            sockbuf,
            epoch: Instant::now(),
            stats: Arc::default(),
            protocol,
            max_packet,
            busy_units,
            dead_after,
            heartbeat,
            strangers: AtomicU64::new(0),
            rejects,
            doorbell: EventFd::new()?,
            rung: AtomicBool::new(false),
            alarm: Alarm::new(),
            failed: Mutex::new(Vec::new()),
            announce: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
        })
    }

    /// Microseconds since the instance started (the protocol's clock).
    pub fn now(&self) -> Micros {
        self.epoch.elapsed().as_micros() as Micros
    }

    pub fn sock_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }

    /// Wakes a poller sleeping on the wait fd.
    pub fn ring(&self) {
        if !self.rung.swap(true, AcqRel) {
            self.doorbell.ring();
        }
    }

    pub fn rung(&self) -> bool {
        self.rung.load(Acquire)
    }

    pub fn clear_rung(&self) {
        if self.rung.swap(false, AcqRel) {
            self.doorbell.clear();
        }
    }

    /// The link to `peer` failed: the next poll reports it.
    pub fn failed(&self, peer: PeerId) {
        self.failed.lock().unwrap().push(peer);
        self.ring();
    }

    pub fn take_failed(&self) -> Vec<PeerId> {
        std::mem::take(&mut *self.failed.lock().unwrap())
    }

    /// A peer connected to us: the next poll reports the link.
    pub fn announce(&self, link: Arc<UdpLink>) {
        self.announce.lock().unwrap().push(link);
        self.ring();
    }

    pub fn take_announced(&self) -> Vec<Arc<UdpLink>> {
        std::mem::take(&mut *self.announce.lock().unwrap())
    }

    pub fn close(&self) {
        self.closed.store(true, Release);
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Acquire)
    }

    pub fn stranger(&self, from: impl std::fmt::Display, why: &str) {
        self.strangers.fetch_add(1, Relaxed);
        self.rejects.note(from, why);
    }
}

/// The links by peer rank: made once per peer (by whichever comes first, our `connect` or the
/// peer's handshake), never replaced.
pub struct Links {
    by_rank: RwLock<Vec<Option<Arc<UdpLink>>>>,
}

impl Links {
    pub fn new(size: u32) -> Links {
        Links { by_rank: RwLock::new(vec![None; size as usize]) }
    }

    pub fn get(&self, rank: PeerId) -> Option<Arc<UdpLink>> {
        self.by_rank.read().unwrap().get(rank as usize)?.clone()
    }

    /// The link to `rank`, made (with a fresh random id and a socket of its own) if there is
    /// none; `None` for a rank outside the job, or when no socket can be had.
    pub fn get_or_make(&self, shared: &Arc<Shared>, rank: PeerId) -> Option<Arc<UdpLink>> {
        if let Some(l) = self.get(rank) {
            return Some(l);
        }
        let mut all = self.by_rank.write().unwrap();
        let slot = all.get_mut(rank as usize)?;
        if slot.is_none() {
            let mut id = [0u8; 8];
            tools::secret::random_bytes(&mut id).ok()?;
            let sock = UdpSocket::bind((shared.bind, 0))
                .and_then(|s| s.set_nonblocking(true).map(|()| s))
                .map_err(|e| log::warn!("udp: no socket for a link to rank {rank}: {e}"))
                .ok()?;
            super::sys::set_buffers(std::os::fd::AsRawFd::as_raw_fd(&sock), shared.sockbuf);
            *slot = Some(Arc::new(UdpLink::new(shared.clone(), rank, u64::from_le_bytes(id), sock)));
        }
        slot.clone()
    }

    /// Calls `f` on every link (under the read lock: `f` must not call the sink).
    pub fn each(&self, mut f: impl FnMut(&Arc<UdpLink>)) {
        for l in self.by_rank.read().unwrap().iter().flatten() {
            f(l);
        }
    }
}
