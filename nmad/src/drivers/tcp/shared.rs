//! What one driver instance, its links and its acceptor share: the epoll set polled by
//! `Driver::poll` (and slept on by pioman), the doorbell that wakes it, and the queues that hand
//! new connections and finished bulk sends to the next poll.
//!
//! It owns the epoll and doorbell fds and the registry used to close every link at shutdown; it
//! never reads or writes a socket.

use super::link::Conn;
use super::sys::{Epoll, EventFd};
use crate::drivers::PeerId;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex, Weak};

/// The epoll token of the doorbell; connections get tokens from 1 up.
pub const DOORBELL: u64 = 0;

/// A connection that proved the secret, waiting for a poll to adopt it.
pub struct NewConn {
    pub conn: Arc<Conn>,
    /// Accepted (reported as `Sink::link_up`) rather than made by our own `connect`.
    pub accepted: bool,
}

pub struct Shared {
    pub epoll: Epoll,
    pub doorbell: EventFd,
    /// Set before every ring of the doorbell, cleared by the poll that drains it: a driver with
    /// no connection skips its `epoll_wait` (a system call per progress round) while this is
    /// clear.
    rung: AtomicBool,
    /// Strangers turned away (failed handshakes, bad hellos).
    pub rejected: AtomicU64,
    next_token: AtomicU64,
    closed: AtomicBool,
    new_conns: Mutex<Vec<NewConn>>,
    /// Bulk sends finished outside `poll` (`send_bulk`, `try_send`), reported by the next one.
    finished: Mutex<Vec<(PeerId, u64)>>,
    /// Every connection, to close them at shutdown (the sink may keep links alive).
    all: Mutex<Vec<Weak<Conn>>>,
}

impl Shared {
    pub fn new() -> io::Result<Arc<Shared>> {
        let (epoll, doorbell) = (Epoll::new()?, EventFd::new()?);
        epoll.add(doorbell.fd(), DOORBELL, false)?;
        Ok(Arc::new(Shared {
            epoll,
            doorbell,
            rung: AtomicBool::new(false),
            rejected: AtomicU64::new(0),
            next_token: AtomicU64::new(DOORBELL + 1),
            closed: AtomicBool::new(false),
            new_conns: Mutex::new(Vec::new()),
            finished: Mutex::new(Vec::new()),
            all: Mutex::new(Vec::new()),
        }))
    }

    pub fn token(&self) -> u64 {
        self.next_token.fetch_add(1, Relaxed)
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Acquire)
    }

    /// Watches `conn` and hands it to the next poll (the data it receives meanwhile waits in
    /// the socket).
    pub fn adopt(&self, conn: Arc<Conn>, accepted: bool) -> io::Result<()> {
        {
            // Checked under the registry lock so that `close` cannot miss this connection.
            let mut all = self.all.lock().unwrap();
            if self.is_closed() {
                conn.shut_down();
                return Err(io::Error::new(io::ErrorKind::NotConnected, "tcp driver shut down"));
            }
            self.epoll.add(conn.fd(), conn.token, false)?;
            all.retain(|w| w.strong_count() > 0);
            all.push(Arc::downgrade(&conn));
        }
        self.new_conns.lock().unwrap().push(NewConn { conn, accepted });
        self.ring();
        Ok(())
    }

    /// Rings the doorbell (after queueing what the poll must see).
    fn ring(&self) {
        self.rung.store(true, Release);
        self.doorbell.ring();
    }

    /// Whether the doorbell rang since [`Shared::clear_rung`].
    pub fn rung(&self) -> bool {
        self.rung.load(Acquire)
    }

    /// Before draining the doorbell and taking the queues: a ring after this is seen by the
    /// next poll.
    pub fn clear_rung(&self) {
        self.rung.store(false, SeqCst);
    }

    pub fn take_new_conns(&self) -> Vec<NewConn> {
        std::mem::take(&mut *self.new_conns.lock().unwrap())
    }

    pub fn bulk_finished(&self, peer: PeerId, tokens: &[u64]) {
        if tokens.is_empty() {
            return;
        }
        self.finished.lock().unwrap().extend(tokens.iter().map(|&t| (peer, t)));
        self.ring();
    }

    pub fn take_finished(&self) -> Vec<(PeerId, u64)> {
        std::mem::take(&mut *self.finished.lock().unwrap())
    }

    /// Cuts every connection to `peer` ([`Conn::cut`]); the next poll drops and reports them.
    pub fn cut_peer(&self, peer: PeerId) {
        let conns: Vec<Arc<Conn>> = {
            let all = self.all.lock().unwrap();
            all.iter().filter_map(Weak::upgrade).filter(|c| c.peer == peer).collect()
        };
        conns.iter().for_each(|c| c.cut());
        // The shut-down sockets are readable, which wakes a sleeping poller; ring anyway for a
        // connection not adopted by a poll yet.
        self.ring();
    }

    /// Closes every connection (peers see end of stream) and refuses new ones. Idempotent.
    pub fn close(&self) {
        let all = {
            let mut all = self.all.lock().unwrap();
            self.closed.store(true, Release);
            std::mem::take(&mut *all)
        };
        all.iter().filter_map(Weak::upgrade).for_each(|c| c.shut_down());
        self.new_conns.lock().unwrap().clear();
        self.ring();
    }
}
