//! What one driver instance, its links and its acceptor share: the epoll set polled by
//! `Driver::poll` (and slept on by pioman), the doorbell that wakes it, and the queues that hand
//! new connections and finished bulk sends to the next poll.
//!
//! It owns the epoll and doorbell fds and the registry used to close every link at shutdown; it
//! never reads or writes a socket.

use super::link::Conn;
use crate::drivers::PeerId;
use crate::drivers::ip::sys::{Epoll, EventFd};
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
    /// This process's rank: which of two crossing connections is kept for sending.
    rank: PeerId,
}

impl Shared {
    pub fn new(rank: PeerId) -> io::Result<Arc<Shared>> {
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
            rank,
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
            self.uncross(&all, &conn);
            all.push(Arc::downgrade(&conn));
        }
        self.new_conns.lock().unwrap().push(NewConn { conn, accepted });
        self.ring();
        Ok(())
    }

    /// Both sides connected at once (each side's first message, or a receive posted before
    /// any, dials): both send on the connection the lower rank dialed, so that one connection
    /// carries both directions and its acknowledgements ride on the replies. Two one-way
    /// streams cost each small message about 3 µs more on loopback (a C ping-pong: 6.8–7.2 µs
    /// one way on one connection, 9.3–10.2 µs on two), the kernel acknowledging each message
    /// alone. Only the higher rank's dialed connection is redirected (to the accepted one):
    /// never in a cycle. Both are read until they close.
    fn uncross(&self, all: &[Weak<Conn>], conn: &Arc<Conn>) {
        if conn.peer >= self.rank {
            return; // our own dial is the one kept
        }
        let mut same_peer =
            all.iter().filter_map(Weak::upgrade).filter(|c| c.peer == conn.peer && !c.is_cut());
        if conn.dialed {
            if let Some(accepted) = same_peer.find(|c| !c.dialed) {
                conn.redirect_to(accepted);
            }
        } else {
            same_peer.filter(|c| c.dialed).for_each(|c| c.redirect_to(conn.clone()));
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drivers::{Link, Sent};
    use std::io::{IoSlice, Read};
    use std::net::{TcpListener, TcpStream};

    /// A connection of `shared` to `peer` over loopback, and the socket at its far end.
    fn conn(shared: &Arc<Shared>, peer: PeerId, dialed: bool) -> (Arc<Conn>, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let ours = TcpStream::connect(addr).unwrap();
        let (far, _) = l.accept().unwrap();
        ours.set_nonblocking(true).unwrap();
        let c = Arc::new(Conn::new(shared.clone(), peer, ours, addr, dialed));
        shared.adopt(c.clone(), !dialed).unwrap();
        (c, far)
    }

    #[test]
    fn crossing_connections_send_on_the_one_the_lower_rank_dialed() {
        // Rank 1 dialed rank 0, then accepted rank 0's own connection: it sends on that one.
        let one = Shared::new(1).unwrap();
        let (dialed, _) = conn(&one, 0, true);
        assert!(dialed.redirected().is_none(), "alone, a connection is used as it is");
        let (accepted, mut far) = conn(&one, 0, false);
        assert!(dialed.redirected().is_some_and(|c| Arc::ptr_eq(c, &accepted)));
        assert!(accepted.redirected().is_none(), "the kept one is never redirected");
        assert_eq!(dialed.try_send(&[IoSlice::new(b"by the other one")]).unwrap(), Sent::Done);
        far.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        let mut got = [0u8; 64];
        let n = far.read(&mut got).unwrap();
        assert!(got[..n].ends_with(b"by the other one"), "{:?}", &got[..n]);
        // The same when rank 0's connection came first.
        let one = Shared::new(1).unwrap();
        let (accepted, _) = conn(&one, 0, false);
        let (dialed, _) = conn(&one, 0, true);
        assert!(dialed.redirected().is_some_and(|c| Arc::ptr_eq(c, &accepted)));
        // Rank 0 keeps its own, whatever the order; a connection to another peer is left alone.
        let zero = Shared::new(0).unwrap();
        let (accepted, _) = conn(&zero, 1, false);
        let (dialed, _) = conn(&zero, 1, true);
        let (other, _) = conn(&zero, 2, true);
        assert!(
            dialed.redirected().is_none() && accepted.redirected().is_none() && other.redirected().is_none()
        );
        // A cut connection is not one to send on.
        let two = Shared::new(2).unwrap();
        let (accepted, _) = conn(&two, 1, false);
        accepted.cut();
        let (dialed, _) = conn(&two, 1, true);
        assert!(dialed.redirected().is_none());
    }
}
