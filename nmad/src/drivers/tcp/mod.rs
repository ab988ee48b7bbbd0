//! The `tcp` driver: nonblocking TCP sockets with TCP_NODELAY, vectored I/O, and a connection
//! handshake that proves the job secret.
//!
//! - `card`: where an instance listens (`tcp`: every interface, loopback only in a single-node
//!   job; `tcp:IFACE` or `tcp:ADDRESS`: one, a rail) and the business card `NODE,PORT,ADDR...`;
//! - `accept` and `handshake`: a background thread accepts and authenticates connections, each
//!   within one deadline, at most 64 at once (the oldest unauthenticated one is dropped to make
//!   room; strangers are counted and logged once per interval); `connect` dials and
//!   authenticates, retrying dropped or timed-out attempts for
//!   [`CONNECT_PATIENCE`](super::retry::CONNECT_PATIENCE);
//! - [`wire`]: the hello and the frames (packets, bulk pieces), checked before anything is
//!   trusted;
//! - `link`: the send side of a connection (one writer at a time, partial writes kept in a
//!   one-packet backlog, bulk data written from the sender's memory);
//! - `recv`: the receive side, run by `poll` (packets delivered from the receive buffer, bulk
//!   data read straight into the sink's memory);
//! - `shared`: the epoll set that `poll` checks and pioman sleeps on, and the hand-off queues;
//! - `sys`: the `libc` calls std does not offer.
//!
//! Every connection carries both directions; when both sides connected at once, both send on
//! the connection the lower rank dialed and read from both (`Shared::adopt`). Failures (end of stream, reset, malformed frame,
//! keepalive or user timeout for a vanished host) are reported once as `Sink::link_failed`; the
//! link's later calls return errors. `Link::close` shuts down every connection to the peer both
//! ways (the peer reads end of stream) and `poll` reads nothing more from them; the fds are
//! closed when the last reference to a connection goes.
//!
//! Environment: `NMAD_TCP_IFACE` (interface or address for a plain `tcp`), `NMAD_TCP_SOCKBUF`
//! (socket buffer bytes, `K`/`M` suffixes; default: the kernel's autotuning),
//! `NMAD_TCP_BANDWIDTH` (nominal MB/s for the strategies).
//!
//! This module owns its sockets, threads and epoll set; it does not know about the core's
//! protocols (cookies are opaque) and touches no other driver.

mod accept;
mod handshake;
mod link;
mod recv;
mod shared;
mod sys;
pub mod wire;

use super::ip::card::{self, Card};
use super::ip::options::{env_value, parse_size};
use super::retry::with_retry;
use super::{Caps, Driver, DriverEnv, LargePath, Link, PeerId, Profile, Sink};
use accept::Acceptor;
use handshake::Setup;
use link::Conn;
use recv::Rx;
use shared::{DOORBELL, Shared};
use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::Ordering::*;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tools::admission::RejectLog;

/// Rejected connections are logged as one count per interval.
const REJECT_LOG_INTERVAL: Duration = Duration::from_secs(5);

/// Epoll events handled per poll (the rest wait for the next one).
const EVENTS_PER_POLL: usize = 64;
/// Up to this many connections, a poll with nothing else to look at reads the sockets directly.
const DIRECT_READS: usize = 2;

/// Tunables of a driver instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcpOptions {
    /// SO_SNDBUF and SO_RCVBUF of every socket; `None` keeps the kernel's autotuning.
    pub socket_buffer: Option<usize>,
    /// How long connection setup may take (connect, handshake, hello), either side.
    pub handshake_timeout: Duration,
    /// A peer host silent for this long (keepalive probes and data unacknowledged) is dead:
    /// TCP_USER_TIMEOUT, with keepalive probes from half of it.
    pub dead_after: Duration,
    /// Nominal bandwidth for the strategies.
    pub bandwidth_mbps: u64,
}

impl Default for TcpOptions {
    fn default() -> TcpOptions {
        TcpOptions {
            socket_buffer: None,
            handshake_timeout: Duration::from_secs(5),
            dead_after: Duration::from_secs(10),
            bandwidth_mbps: 1000,
        }
    }
}

impl TcpOptions {
    /// The defaults, overridden by `NMAD_TCP_SOCKBUF` and `NMAD_TCP_BANDWIDTH`.
    pub fn from_env() -> io::Result<TcpOptions> {
        let mut o = TcpOptions::default();
        o.socket_buffer =
            env_value("NMAD_TCP_SOCKBUF", |v| parse_size(v).filter(|&n| n > 0))?.or(o.socket_buffer);
        let bw = env_value("NMAD_TCP_BANDWIDTH", |v| v.trim().parse::<u64>().ok().filter(|&n| n > 0))?;
        o.bandwidth_mbps = bw.unwrap_or(o.bandwidth_mbps);
        Ok(o)
    }
}

/// One tcp driver instance (one rail).
pub struct TcpDriver {
    name: String,
    node: String,
    card: String,
    local_addr: SocketAddr,
    bandwidth_mbps: u64,
    setup: Arc<Setup>,
    shared: Arc<Shared>,
    /// Receive sides by epoll token; held by one poll at a time.
    rx: Mutex<HashMap<u64, Rx>>,
    acceptor: Mutex<Option<Acceptor>>,
}

impl TcpDriver {
    /// `arg`: the interface name or address to listen on (`tcp:ARG`), if any.
    pub fn create(env: &DriverEnv, arg: Option<&str>) -> io::Result<Arc<dyn Driver>> {
        Ok(TcpDriver::new(env, arg, TcpOptions::from_env()?)?)
    }

    /// An instance with explicit options (`create` reads them from the environment).
    pub fn new(env: &DriverEnv, arg: Option<&str>, opts: TcpOptions) -> io::Result<Arc<TcpDriver>> {
        if let Some(a) = arg
            && (a.is_empty() || a.len() > 200 || a.contains([';', '=', ' ', ',']))
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("tcp:`{a}`: not an interface or address"),
            ));
        }
        let name = arg.map_or("tcp".to_string(), |a| format!("tcp:{a}"));
        let choice = match arg {
            Some(a) => Some(a.to_string()),
            None => std::env::var("NMAD_TCP_IFACE").ok().filter(|v| !v.is_empty()),
        };
        let plan = card::plan(choice.as_deref(), env.single_node)?;
        let listener = TcpListener::bind((plan.bind, 0))
            .map_err(|e| io::Error::new(e.kind(), format!("{name}: cannot listen on {}: {e}", plan.bind)))?;
        if let Some(b) = opts.socket_buffer {
            sys::set_buffers(listener.as_raw_fd(), b)?; // accepted sockets inherit them
        }
        listener.set_nonblocking(true)?;
        let local_addr = listener.local_addr()?;
        let node = card::card_node(&env.node);
        let card = Card { node: node.clone(), port: local_addr.port(), addrs: plan.advertised }.to_string();
        let shared = Shared::new(env.rank)?;
        let setup = Arc::new(Setup {
            shared: shared.clone(),
            key: env.job_key.clone(),
            rank: env.rank,
            size: env.size,
            rail: name.clone(),
            socket_buffer: opts.socket_buffer,
            timeout: opts.handshake_timeout,
            dead_after: opts.dead_after,
            local: plan.local,
            rejects: RejectLog::new(format!("nmad {name} (rank {})", env.rank), REJECT_LOG_INTERVAL),
        });
        let acceptor = Acceptor::spawn(listener, setup.clone())?;
        Ok(Arc::new(TcpDriver {
            name,
            node,
            card,
            local_addr,
            bandwidth_mbps: opts.bandwidth_mbps,
            setup,
            shared,
            rx: Mutex::new(HashMap::new()),
            acceptor: Mutex::new(Some(acceptor)),
        }))
    }

    /// Connections turned away so far (strangers, wrong keys, bad hellos).
    pub fn rejected(&self) -> u64 {
        self.shared.rejected.load(Relaxed)
    }

    /// The listening socket's address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// One attempt at every candidate address in turn; the error names each failure and has the
    /// kind of the last one.
    fn dial_any(
        &self,
        peer: PeerId,
        candidates: &[SocketAddr],
    ) -> io::Result<(std::net::TcpStream, SocketAddr)> {
        let mut errors = Vec::new();
        let mut kind = io::ErrorKind::AddrNotAvailable;
        for &addr in candidates {
            match self.setup.dial(peer, addr) {
                Ok(s) => return Ok((s, addr)),
                Err(e) => {
                    kind = e.kind();
                    errors.push(format!("{addr}: {e}"));
                }
            }
        }
        Err(io::Error::new(kind, errors.join("; ")))
    }

    /// Adopts connections handed over since the last poll and reports bulk sends finished
    /// outside poll.
    fn drain_doorbell(&self, rx: &mut HashMap<u64, Rx>, sink: &mut dyn Sink) -> usize {
        self.shared.clear_rung();
        self.shared.doorbell.clear();
        let mut n = 0;
        for new in self.shared.take_new_conns() {
            let link: Arc<dyn Link> = new.conn.clone();
            rx.insert(new.conn.token, Rx::new(new.conn));
            if new.accepted {
                sink.link_up(link);
                n += 1;
            }
        }
        for (peer, token) in self.shared.take_finished() {
            sink.bulk_sent(peer, token);
            n += 1;
        }
        n
    }

    /// Forgets a failed connection (and the sink's bulk memory with it), then reports it, unless
    /// another connection to the same peer (both connected at once) remains: the peer is lost
    /// through this driver when its last connection is, after that one's data was read too.
    /// [`Driver::poll`] of a connection or two with no output waiting for room and nothing
    /// handed over: a read of each socket (one system call each, which finds the end of stream
    /// and errors too), where `epoll_wait` and then the read would cost two on every arrival.
    /// The epoll set stays level-triggered: what is read here is no longer reported there.
    fn read_directly(&self, rx: &mut HashMap<u64, Rx>, sink: &mut dyn Sink) -> usize {
        let mut handled = 0;
        let mut failed = None;
        for (&token, r) in rx.iter_mut() {
            if self.shared.is_closed() {
                break; // the sink shut us down
            }
            match r.receive(sink) {
                Ok(k) => handled += k,
                Err(e) => {
                    failed = Some((token, e));
                    break;
                }
            }
        }
        if let Some((token, e)) = failed {
            let r = rx.remove(&token).expect("read above");
            self.drop_link(r, e, rx, sink);
            handled += 1;
        }
        handled
    }

    fn drop_link(&self, rx: Rx, e: io::Error, others: &HashMap<u64, Rx>, sink: &mut dyn Sink) {
        let conn = rx.conn.clone();
        drop(rx);
        self.shared.epoll.delete(conn.fd());
        conn.fail(e);
        let error = conn.take_failure();
        if !others.values().any(|o| o.conn.peer == conn.peer) {
            sink.link_failed(conn.peer, error);
        }
    }
}

impl Drop for TcpDriver {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Driver for TcpDriver {
    fn name(&self) -> &str {
        &self.name
    }

    fn caps(&self) -> Caps {
        Caps {
            max_packet: wire::MAX_PACKET,
            eager_limit: 32 << 10,
            iovec: true,
            large: LargePath::Bulk,
            blocking: true,
        }
    }

    fn profile(&self) -> Profile {
        Profile { latency_ns: 20_000, bandwidth_mbps: self.bandwidth_mbps }
    }

    fn card(&self) -> String {
        self.card.clone()
    }

    fn reaches(&self, card: &str) -> bool {
        Card::reaches(card, &self.node)
    }

    fn connect(&self, peer: PeerId, card: &str) -> io::Result<Arc<dyn Link>> {
        if self.shared.is_closed() {
            return Err(io::Error::new(io::ErrorKind::NotConnected, format!("{} is shut down", self.name)));
        }
        let candidates = Card::reachable(card, &self.node, &self.name, peer)?;
        let s = with_retry(|| self.dial_any(peer, &candidates)).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("{}: cannot connect to rank {peer} (card `{card}`): {e}", self.name),
            )
        })?;
        let (s, addr) = s;
        let conn = Arc::new(Conn::new(self.shared.clone(), peer, s, addr, true));
        self.shared.adopt(conn.clone(), false)?;
        Ok(conn)
    }

    fn poll(&self, sink: &mut dyn Sink) -> usize {
        let Ok(mut rx) = self.rx.try_lock() else { return 0 }; // another thread is polling
        if self.shared.is_closed() {
            rx.clear();
            return 0;
        }
        if rx.is_empty() && !self.shared.rung() {
            return 0; // no connection, nothing handed over: spare the system call
        }
        if rx.len() <= DIRECT_READS && !self.shared.rung() && rx.values().all(|r| !r.conn.waits_for_room()) {
            return self.read_directly(&mut rx, sink);
        }
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; EVENTS_PER_POLL];
        let n = self.shared.epoll.ready_now(&mut events).unwrap_or(0);
        let events = &events[..n];
        let mut handled = 0;
        if events.iter().any(|e| ({ e.u64 }) == DOORBELL) {
            handled += self.drain_doorbell(&mut rx, sink);
        }
        let mut finished = Vec::new();
        for e in events {
            if self.shared.is_closed() {
                break; // the sink shut us down
            }
            let (token, flags) = (e.u64, e.events);
            let Some(r) = rx.get_mut(&token) else { continue };
            let mut result = Ok(());
            if flags & libc::EPOLLOUT as u32 != 0 {
                if let Err(e) = r.conn.flush_from_poll(&mut finished) {
                    // Writing failed (the peer left?): the link is failed and shut down, but
                    // what the peer sent before is still read, up to the end of stream, before
                    // the failure is reported.
                    r.conn.fail(e);
                    handled += 1;
                }
                for t in finished.drain(..) {
                    sink.bulk_sent(r.conn.peer, t);
                    handled += 1;
                }
            }
            if flags & !(libc::EPOLLOUT as u32) != 0 {
                result = r.receive(sink).map(|k| handled += k);
            }
            if let Err(e) = result {
                let r = rx.remove(&token).expect("looked up above");
                self.drop_link(r, e, &rx, sink);
                handled += 1;
            }
        }
        handled
    }

    fn wait_fd(&self) -> Option<RawFd> {
        Some(self.shared.epoll.fd())
    }

    fn arm(&self) -> bool {
        // Level-triggered: anything unhandled keeps the epoll fd readable.
        !self.shared.epoll.has_events()
    }

    fn shutdown(&self) {
        self.shared.close();
        if let Some(mut a) = self.acceptor.lock().unwrap().take() {
            a.stop();
        }
        self.setup.rejects.flush();
    }
}
