//! The `shm` driver: processes of one node, through shared memory.
//!
//! - Each link has one segment (a sealed memfd, see `memory.rs`) holding two lock-free
//!   single-producer/single-consumer rings, one per direction (`ring.rs`). Packets and small data
//!   go through the ring as one record each; a receiver notices a record by reading one word.
//! - Rendezvous data is read straight from the sender's memory with cross-memory attach
//!   (`process_vm_readv`, `cma.rs`); where that is refused (or disabled, `NMAD_SHM_CMA=0`),
//!   `send_bulk` streams it through the ring in 64 KiB pieces, interleaved with packets and
//!   continued by `poll`: two copies, pipelined.
//! - A context that sleeps on [`Driver::wait_fd`] raises a flag in each incoming ring (and in
//!   each outgoing ring waiting for space); a peer that publishes (or frees space) and sees the
//!   flag writes our eventfd (`wake.rs`).
//! - Connections come through an abstract Unix socket named in the card (no file to leave
//!   behind), authenticated with the job key (`setup.rs`, one deadline per setup); a background
//!   thread accepts them (at most 64 setups at once, the oldest unauthenticated one dropped to
//!   make room) and watches each link's socket to detect dead peers (`monitor.rs`). `connect`
//!   retries dropped or timed-out setups for [`CONNECT_PATIENCE`](super::retry::CONNECT_PATIENCE).
//!
//! `Link::close` fails a link without draining it and shuts its control socket down: the peer's
//! monitor fails its end, our poll reads nothing more from it and reports it; the mapping and fds
//! go with the last reference.
//!
//! Card: `NODE,nmad-shm.PID.RANDOM` (the node id and the socket name).
//!
//! This module owns the driver's state, its threads and its segments' mappings. It must not touch
//! other drivers, the core, or anything a peer wrote without validating it first.

mod cma;
mod link;
mod memory;
#[cfg(all(test, loom))]
mod model;
mod monitor;
mod options;
mod receive;
mod ring;
mod setup;
mod shared;
mod socket;
#[cfg(all(test, not(loom)))]
mod tests;
mod wake;

pub use options::{MAX_RING, MIN_RING, ShmOptions};

use super::retry::with_retry;
use super::{Caps, Driver, DriverEnv, LargePath, Link, PeerId, Profile, Sink};
use link::ShmLink;
use receive::{Scratch, receive};
use ring::Sleep;
use setup::Local;
use shared::Shared;
use socket::drain;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixListener;
use std::sync::atomic::Ordering::*;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

/// Records taken from one link per poll, so that one busy peer does not starve the others.
const RECORDS_PER_POLL: usize = 64;
/// Start of every listener name.
const NAME_PREFIX: &str = "nmad-shm.";

/// What only one poller at a time touches.
struct PollState {
    links: Vec<Arc<ShmLink>>,
    generation: u64,
    scratch: Scratch,
    tokens: Vec<u64>,
}

impl PollState {
    /// Takes the driver's links again if they changed since the last look.
    #[inline]
    fn refresh(&mut self, sh: &Shared) {
        let g = sh.generation.load(Acquire);
        if g != self.generation {
            self.links = sh.links.lock().unwrap_or_else(PoisonError::into_inner).clone();
            self.generation = g;
        }
    }
}

/// A `shm` driver context.
pub struct ShmDriver {
    shared: Arc<Shared>,
    card: String,
    poll: crate::spin::SpinLock<PollState>,
    monitor: Mutex<Option<JoinHandle<()>>>,
}

/// The listener name of a card reaching `node`, if the card is well-formed.
fn card_name<'a>(card: &'a str, node: &str) -> Option<&'a str> {
    let (n, name) = card.rsplit_once(',')?;
    let ok = n == node
        && name.len() <= 64
        && name.starts_with(NAME_PREFIX)
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
    ok.then_some(name)
}

impl ShmDriver {
    /// The driver with settings from the environment (`NMAD_SHM_RING`, `NMAD_SHM_CMA`).
    pub fn create(env: &DriverEnv) -> io::Result<Arc<dyn Driver>> {
        Ok(ShmDriver::with_options(env, ShmOptions::from_env()?)?)
    }

    /// The driver with explicit settings.
    pub fn with_options(env: &DriverEnv, opts: ShmOptions) -> io::Result<Arc<ShmDriver>> {
        options::valid_ring(opts.ring_bytes as u64)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        if env.node.is_empty() || env.node.contains([',', ';', '=', ' ', '\n']) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("shm: unusable node id `{}`", env.node),
            ));
        }
        let mut random = [0u8; 8];
        tools::secret::random_bytes(&mut random)?;
        let name = format!("{NAME_PREFIX}{}.{:016x}", std::process::id(), u64::from_le_bytes(random));
        let listener = UnixListener::bind_addr(&setup::address(&name)?)?;
        let local = Local {
            rank: env.rank,
            size: env.size,
            key: env.job_key.clone(),
            opts,
            wake: Arc::new(socket::eventfd()?),
        };
        let shared = Arc::new(Shared::new(local, socket::eventfd()?));
        let monitor = monitor::spawn(shared.clone(), listener)?;
        Ok(Arc::new(ShmDriver {
            shared,
            card: format!("{},{name}", env.node),
            poll: crate::spin::SpinLock::new(PollState {
                links: Vec::new(),
                generation: 0,
                scratch: Scratch::new(),
                tokens: Vec::new(),
            }),
            monitor: Mutex::new(Some(monitor)),
        }))
    }

    fn node(&self) -> &str {
        self.card.rsplit_once(',').map_or("", |(n, _)| n)
    }

    /// Announces accepted connections; returns how many.
    fn announce_accepted(&self, sink: &mut dyn Sink) -> usize {
        let accepted = self.shared.take_accepted();
        for link in &accepted {
            self.shared.add_link(link);
            sink.link_up(link.clone());
        }
        accepted.len()
    }

    /// Reports `link`'s failure once, unless another link to the same peer (both connected at
    /// once) is not reported yet: the peer is lost through this driver when its last link is,
    /// after that link's data was delivered too.
    fn report(link: &Arc<ShmLink>, links: &[Arc<ShmLink>], sink: &mut dyn Sink) -> usize {
        if link.reported.swap(true, AcqRel) {
            return 0;
        }
        let other = |l: &Arc<ShmLink>| !Arc::ptr_eq(l, link) && l.peer == link.peer;
        if !links.iter().any(|l| other(l) && !l.reported.load(Acquire)) {
            sink.link_failed(link.peer, link.error());
        }
        1
    }

    /// Polls one link of `links` (the poller's snapshot): its failure reported (after what it
    /// still delivers), its bulk sends pushed, its records received. Returns the events and
    /// whether it is lost.
    #[inline]
    fn poll_link(
        link: &Arc<ShmLink>,
        links: &[Arc<ShmLink>],
        tokens: &mut Vec<u64>,
        scratch: &mut Scratch,
        sink: &mut dyn Sink,
    ) -> (usize, bool) {
        let mut n = 0;
        if link.failed() {
            if !link.reported.load(Acquire) && link.drain_after_failure() {
                while let Ok(k @ 1..) = receive(link, sink, scratch, RECORDS_PER_POLL) {
                    n += k;
                }
            }
            return (n + ShmDriver::report(link, links, sink), true);
        }
        match link.poll_tx(tokens) {
            Ok(_) => {
                n += tokens.len();
                for t in tokens.drain(..) {
                    sink.bulk_sent(link.peer, t);
                }
            }
            Err(_) => return (n + ShmDriver::report(link, links, sink), true),
        }
        match receive(link, sink, scratch, RECORDS_PER_POLL) {
            Ok(k) => (n + k, false),
            Err(why) => {
                let why = format!("shm: malformed data from rank {}: {why}", link.peer);
                log::error!("{why}");
                link.fail(io::ErrorKind::InvalidData, why);
                (n + ShmDriver::report(link, links, sink), true)
            }
        }
    }

    /// Arms the driver for a context woken as `how` says (see [`Driver::arm`]).
    fn arm_as(&self, how: Sleep) -> bool {
        let sh = &*self.shared;
        // Reset the eventfd before every arm, not only the first of overlapping ones: while
        // several contexts take turns sleeping, the count may never fall back to 0, and a
        // readable fd left from an old wake-up would make every sleep return at once (a spin
        // through epoll). A sleeper woken by that old write and now finding the fd reset goes
        // back to sleep: the data is seen by this arm's check of the rings, and the context
        // that polls it completes (and rings the doorbell of) whatever it finishes.
        drain(&sh.local.wake);
        let quiet = sh.sleepers.arm(how);
        sh.armed.store(true, Relaxed);
        quiet && !sh.events.load(SeqCst)
    }
}

impl Driver for ShmDriver {
    fn polls_cheaply(&self) -> bool {
        true
    }

    fn name(&self) -> &str {
        "shm"
    }

    fn caps(&self) -> Caps {
        Caps {
            max_packet: ring::MAX_PAYLOAD as usize,
            eager_limit: 32 << 10,
            iovec: true,
            large: if self.shared.local.opts.cma { LargePath::ReadRemote } else { LargePath::Bulk },
            blocking: true,
        }
    }

    fn profile(&self) -> Profile {
        Profile { latency_ns: 300, bandwidth_mbps: 8000 }
    }

    fn card(&self) -> String {
        self.card.clone()
    }

    fn reaches(&self, card: &str) -> bool {
        card_name(card, self.node()).is_some()
    }

    fn connect(&self, peer: PeerId, card: &str) -> io::Result<Arc<dyn Link>> {
        let Some(name) = card_name(card, self.node()) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("shm: `{card}` is not a shm card of this node"),
            ));
        };
        if self.shared.closed.load(Acquire) {
            return Err(io::Error::new(io::ErrorKind::NotConnected, "shm driver shut down"));
        }
        let link = with_retry(|| setup::dial(&self.shared.local, peer, name))?;
        self.shared.add_link(&link);
        if self.shared.closed.load(SeqCst) {
            link.fail(io::ErrorKind::NotConnected, "shm driver shut down".into());
            return Err(link.error());
        }
        Ok(link)
    }

    /// Something for `poll`: a connection accepted, an eventfd to drain, a link added, failed,
    /// with a record at its head or bulk data to push. A poll in another context (the lock
    /// taken) finds what there is: nothing for this one.
    fn probe(&self) -> bool {
        let sh = &*self.shared;
        if sh.events.load(Relaxed) || sh.armed.load(Relaxed) {
            return true;
        }
        let Some(st) = self.poll.try_lock() else { return false };
        sh.generation.load(Acquire) != st.generation || st.links.iter().any(|l| l.probe())
    }

    fn poll_peer(&self, peer: PeerId, sink: &mut dyn Sink) -> Option<usize> {
        let sh = &*self.shared;
        let mut guard = self.poll.try_lock()?;
        let st = &mut *guard;
        if sh.closed.load(Relaxed) {
            return None;
        }
        if sh.generation.load(Acquire) == st.generation
            && !st.links.iter().any(|l| l.peer == peer && l.probe())
        {
            return None;
        }
        st.refresh(sh);
        let (mut n, mut lost) = (0, false);
        // Usually one link; two while a failed one still delivers what it holds.
        for link in st.links.iter().filter(|l| l.peer == peer) {
            let (k, l) = ShmDriver::poll_link(link, &st.links, &mut st.tokens, &mut st.scratch, sink);
            n += k;
            lost |= l;
        }
        if lost {
            sh.forget_reported();
        }
        Some(n)
    }

    fn poll(&self, sink: &mut dyn Sink) -> usize {
        let sh = &*self.shared;
        let Some(mut guard) = self.poll.try_lock() else { return 0 };
        let st = &mut *guard;
        if sh.closed.load(Relaxed) {
            return 0;
        }
        if sh.armed.load(Relaxed) && sh.armed.swap(false, Relaxed) {
            drain(&sh.local.wake);
        }
        let mut n = 0;
        if sh.events.load(Relaxed) && sh.events.swap(false, SeqCst) {
            n += self.announce_accepted(sink);
        }
        st.refresh(sh);
        let mut lost = false;
        for link in &st.links {
            let (k, l) = ShmDriver::poll_link(link, &st.links, &mut st.tokens, &mut st.scratch, sink);
            n += k;
            lost |= l;
        }
        if lost {
            sh.forget_reported();
        }
        n
    }

    fn wait_fd(&self) -> Option<RawFd> {
        Some(self.shared.local.wake.as_raw_fd())
    }

    fn arm(&self) -> bool {
        self.arm_as(Sleep::Any)
    }

    fn disarm(&self) {
        self.shared.sleepers.disarm(Sleep::Any);
    }

    fn arm_for_urgent(&self) -> bool {
        self.arm_as(Sleep::Urgent)
    }

    fn disarm_for_urgent(&self) {
        self.shared.sleepers.disarm(Sleep::Urgent);
    }

    fn shutdown(&self) {
        let sh = &*self.shared;
        if sh.closed.swap(true, SeqCst) {
            return;
        }
        socket::signal(&sh.ctl);
        if let Some(h) = self.monitor.lock().unwrap_or_else(PoisonError::into_inner).take() {
            let _ = h.join();
        }
        sh.close_all();
        sh.rejects.flush();
    }
}

impl Drop for ShmDriver {
    fn drop(&mut self) {
        self.shutdown();
    }
}
