//! The `self` driver: messages a process sends to itself. Packets are copied into an in-process
//! queue; rendezvous data is copied once, straight from the sender's buffer into the receiver's
//! (`read_remote` within one address space, memory named by `memkey` keys).
//!
//! It owns its queue and its eventfd; it reaches only the process (and core instance) that
//! created it.

use super::{
    Access, BulkHeader, Caps, Driver, DriverEnv, Exposed, LargePath, Link, PeerId, Profile, Segment,
    SegmentMut, Sent, Sink, copy_segments, memkey,
};
use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex};

/// Bytes of packets the queue holds before `try_send` answers `Busy`.
const QUEUE_LIMIT: usize = 4 << 20;
const MAX_PACKET: usize = 64 << 10;

enum Item {
    Packet(Vec<u8>),
    Bulk { hdr: BulkHeader, src: Vec<Segment>, token: u64 },
}

struct Shared {
    rank: PeerId,
    queue: Mutex<(VecDeque<Item>, usize)>,
    /// Readable while items wait and a context sleeps (`sleepers > 0`).
    event: OwnedFd,
    /// Items in the queue: an empty poll reads this and takes no lock.
    queued: AtomicUsize,
    /// The eventfd was written since the last poll drained it (only then is it read: a system
    /// call per poll would double the cost of an idle poll round).
    signalled: AtomicBool,
    sleepers: AtomicU32,
    closed: AtomicBool,
}

impl Shared {
    fn push(&self, item: Item, bytes: usize) -> io::Result<Sent> {
        if self.closed.load(Acquire) {
            return Err(io::Error::new(io::ErrorKind::NotConnected, "self driver shut down"));
        }
        {
            let mut q = self.queue.lock().unwrap();
            if bytes > 0 && q.1 + bytes > QUEUE_LIMIT {
                return Ok(Sent::Busy);
            }
            q.0.push_back(item);
            q.1 += bytes;
            self.queued.fetch_add(1, Release);
        }
        std::sync::atomic::fence(SeqCst);
        if self.sleepers.load(SeqCst) > 0 {
            pioman::eventfd::notify(self.event.as_raw_fd())?;
            // After the write: a poll that saw the flag then always finds the count to reset.
            self.signalled.store(true, Release);
        }
        Ok(Sent::Done)
    }
}

/// The driver context.
pub struct SelfDriver {
    shared: Arc<Shared>,
    /// Identifies this instance in its card: the card of another core instance (or process)
    /// does not match.
    instance: u64,
}

static INSTANCES: AtomicU64 = AtomicU64::new(1);

impl SelfDriver {
    pub fn new(env: &DriverEnv) -> io::Result<SelfDriver> {
        // SAFETY: eventfd has no memory preconditions; we own the returned fd.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor nobody else owns.
        let event = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        Ok(SelfDriver {
            shared: Arc::new(Shared {
                rank: env.rank,
                queue: Mutex::new((VecDeque::new(), 0)),
                event,
                queued: AtomicUsize::new(0),
                signalled: AtomicBool::new(false),
                sleepers: AtomicU32::new(0),
                closed: AtomicBool::new(false),
            }),
            instance: INSTANCES.fetch_add(1, Relaxed),
        })
    }

    fn my_card(&self) -> String {
        format!("{}.{}.{}", std::process::id(), self.instance, self.shared.rank)
    }
}

impl Driver for SelfDriver {
    fn name(&self) -> &str {
        "self"
    }

    fn caps(&self) -> Caps {
        Caps {
            max_packet: MAX_PACKET,
            eager_limit: 16 << 10,
            iovec: true,
            large: LargePath::ReadRemote,
            blocking: true,
        }
    }

    fn profile(&self) -> Profile {
        Profile { latency_ns: 100, bandwidth_mbps: 10_000 }
    }

    fn card(&self) -> String {
        self.my_card()
    }

    fn reaches(&self, card: &str) -> bool {
        card == self.my_card()
    }

    fn connect(&self, peer: PeerId, card: &str) -> io::Result<Arc<dyn Link>> {
        if peer != self.shared.rank || !self.reaches(card) {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the self driver only reaches its own process",
            ));
        }
        Ok(Arc::new(SelfLink(self.shared.clone())))
    }

    fn poll(&self, sink: &mut dyn Sink) -> usize {
        if self.shared.signalled.load(Relaxed) && self.shared.signalled.swap(false, AcqRel) {
            let mut b = [0u8; 8];
            // SAFETY: reads at most 8 bytes into `b` from our nonblocking eventfd (resets it).
            unsafe { libc::read(self.shared.event.as_raw_fd(), b.as_mut_ptr().cast(), 8) };
        }
        if self.shared.queued.load(Acquire) == 0 {
            return 0;
        }
        let mut n = 0;
        let mut dest = Vec::new();
        loop {
            // One item at a time, lock released before the sink runs (it may send to us).
            let item = {
                let mut q = self.shared.queue.lock().unwrap();
                let item = q.0.pop_front();
                if item.is_some() {
                    self.shared.queued.fetch_sub(1, Relaxed);
                }
                if let Some(Item::Packet(p)) = &item {
                    q.1 -= p.len();
                }
                item
            };
            let Some(item) = item else { return n };
            n += 1;
            match item {
                Item::Packet(p) => sink.packet(self.shared.rank, &p),
                Item::Bulk { hdr, src, token } => {
                    dest.clear();
                    if sink.bulk_dest(self.shared.rank, &hdr, &mut dest) {
                        if dest.iter().map(|d| d.len as u64).sum::<u64>() == hdr.len {
                            // SAFETY: the sender keeps `src` valid until bulk_sent; the sink keeps
                            // `dest` valid until bulk_done; both describe `hdr.len` bytes.
                            unsafe { copy_segments(&src, &dest) };
                        }
                        sink.bulk_done(self.shared.rank, &hdr);
                    }
                    sink.bulk_sent(self.shared.rank, token);
                }
            }
        }
    }

    fn wait_fd(&self) -> Option<RawFd> {
        Some(self.shared.event.as_raw_fd())
    }

    fn arm(&self) -> bool {
        self.shared.sleepers.fetch_add(1, SeqCst);
        self.shared.queue.lock().unwrap().0.is_empty()
    }

    fn disarm(&self) {
        self.shared.sleepers.fetch_sub(1, SeqCst);
    }

    fn shutdown(&self) {
        self.shared.closed.store(true, Release);
    }
}

struct SelfLink(Arc<Shared>);

impl Link for SelfLink {
    fn peer(&self) -> PeerId {
        self.0.rank
    }

    fn try_send(&self, packet: &[IoSlice<'_>]) -> io::Result<Sent> {
        let len: usize = packet.iter().map(|s| s.len()).sum();
        if len > MAX_PACKET {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "packet larger than max_packet"));
        }
        let mut p = Vec::with_capacity(len);
        for s in packet {
            p.extend_from_slice(s);
        }
        self.0.push(Item::Packet(p), len.max(1))
    }

    unsafe fn send_bulk(&self, hdr: BulkHeader, src: &[Segment], token: u64) -> io::Result<()> {
        self.0.push(Item::Bulk { hdr, src: src.to_vec(), token }, 0).map(|_| ())
    }

    unsafe fn expose(&self, mem: &[Segment], access: Access) -> io::Result<Exposed> {
        memkey::encode(mem, access).map(Exposed::new)
    }

    unsafe fn read_remote(&self, key: &[u8], offset: u64, local: &[SegmentMut]) -> io::Result<()> {
        let remote = memkey::range(key, Access::Read, offset, local.iter().map(|s| s.len).sum())?;
        let remote: Vec<Segment> =
            remote.into_iter().map(|(a, len)| Segment { ptr: a as *const u8, len }).collect();
        // SAFETY: same address space: the key names memory this process exposed and keeps valid
        // while exposed (`expose`'s contract), `local` is valid for writes (caller's contract),
        // and MPI forbids a receive buffer overlapping its send buffer.
        unsafe { copy_segments(&remote, local) };
        Ok(())
    }

    unsafe fn write_remote(&self, key: &[u8], offset: u64, src: &[Segment]) -> io::Result<()> {
        let remote = memkey::range(key, Access::ReadWrite, offset, src.iter().map(|s| s.len).sum())?;
        let remote: Vec<SegmentMut> =
            remote.into_iter().map(|(a, len)| SegmentMut { ptr: a as *mut u8, len }).collect();
        // SAFETY: as in `read_remote`, the other way: the exposed memory is writable while
        // exposed for writing (the key said so: `range` checked) and `src` is readable.
        unsafe { copy_segments(src, &remote) };
        Ok(())
    }
}
