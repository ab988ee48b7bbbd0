//! The state a `shm` driver shares with its background threads (the monitor and the setups of
//! incoming connections): the links, the connections waiting to be announced, and the flags that
//! tell `poll` and sleeping contexts that something happened.
//!
//! It owns the link lists; it never calls the sink (only `poll` does).

use super::link::ShmLink;
use super::setup::Local;
use super::socket::signal;
use super::wake::Sleepers;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tools::admission::{Pool, RejectLog};

/// Incoming setups allowed at once; one more evicts the oldest that has not proved the key.
const MAX_SETUPS: usize = 64;
/// Rejected connections are logged as one count per interval.
const REJECT_LOG_INTERVAL: Duration = Duration::from_secs(5);

pub(crate) struct Shared {
    pub local: Local,
    /// Wakes the monitor thread (new link to watch, shutdown).
    pub ctl: OwnedFd,
    pub closed: AtomicBool,
    /// Links `poll` reads and the monitor watches; `generation` changes with the list.
    pub links: Mutex<Vec<Arc<ShmLink>>>,
    pub generation: AtomicU64,
    /// Accepted links not yet announced with `link_up`.
    pub accepted: Mutex<Vec<Arc<ShmLink>>>,
    /// A connection was accepted or a link failed: `poll` has work beyond the rings.
    pub events: AtomicBool,
    /// A context armed since `poll` last emptied the eventfd.
    pub armed: AtomicBool,
    pub sleepers: Sleepers<Arc<ShmLink>>,
    /// Setups of incoming connections in progress (bounded; the oldest unauthenticated one is
    /// dropped to make room).
    pub setups: Arc<Pool>,
    /// Rejected connections, logged at most once per interval.
    pub rejects: RejectLog,
}

impl Shared {
    pub(crate) fn new(local: Local, ctl: OwnedFd) -> Shared {
        let rank = local.rank;
        Shared {
            local,
            ctl,
            closed: AtomicBool::new(false),
            links: Mutex::new(Vec::new()),
            generation: AtomicU64::new(0),
            accepted: Mutex::new(Vec::new()),
            events: AtomicBool::new(false),
            armed: AtomicBool::new(false),
            sleepers: Sleepers::new(),
            setups: Pool::new(MAX_SETUPS),
            rejects: RejectLog::new(format!("nmad shm (rank {rank})"), REJECT_LOG_INTERVAL),
        }
    }

    /// Tells `poll` (and wakes a sleeping context) that something beyond the rings happened.
    pub(crate) fn raise_event(&self) {
        self.events.store(true, SeqCst);
        signal(&self.local.wake);
    }

    /// Starts polling, watching and flagging `link`.
    pub(crate) fn add_link(&self, link: &Arc<ShmLink>) {
        self.links.lock().unwrap_or_else(PoisonError::into_inner).push(link.clone());
        self.generation.fetch_add(1, Release);
        self.sleepers.add(link.clone());
        signal(&self.ctl);
    }

    /// Forgets failed links whose failure was reported.
    pub(crate) fn forget_reported(&self) {
        let gone = |l: &Arc<ShmLink>| l.failed() && l.reported.load(Acquire);
        self.links.lock().unwrap_or_else(PoisonError::into_inner).retain(|l| !gone(l));
        self.generation.fetch_add(1, Release);
        self.sleepers.retain(|l| !gone(l));
    }

    /// A connection accepted by a setup thread, for the next `poll` to announce.
    pub(crate) fn push_accepted(&self, link: Arc<ShmLink>) {
        self.accepted.lock().unwrap_or_else(PoisonError::into_inner).push(link.clone());
        if self.closed.load(SeqCst) {
            link.fail(std::io::ErrorKind::NotConnected, "shm driver shut down".into());
        }
        self.raise_event();
    }

    /// Takes the accepted links, even one whose peer already left: what it sent before leaving
    /// is still delivered (then its failure).
    pub(crate) fn take_accepted(&self) -> Vec<Arc<ShmLink>> {
        std::mem::take(&mut *self.accepted.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Fails every link (shutdown).
    pub(crate) fn close_all(&self) {
        let links = std::mem::take(&mut *self.links.lock().unwrap_or_else(PoisonError::into_inner));
        let accepted = std::mem::take(&mut *self.accepted.lock().unwrap_or_else(PoisonError::into_inner));
        for l in links.iter().chain(&accepted) {
            l.fail(std::io::ErrorKind::NotConnected, "shm driver shut down".into());
        }
        self.generation.fetch_add(1, Release);
        self.sleepers.retain(|_| false);
    }
}
