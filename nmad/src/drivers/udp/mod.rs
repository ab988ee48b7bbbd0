//! The `udp` driver: the PM/UDP protocol (`../shared/seeds/003`) over UDP, with the
//! acknowledgement layer of [`crate::reliable`] per link. One data socket per instance receives
//! from every peer; each link sends from a socket of its own, connected to the peer's data
//! socket (no route lookup per datagram, and a port unreachable comes back on it).
//!
//! - `handshake`: the card names a handshake socket served by a thread of its own (so that
//!   `connect` never needs the peer to poll); HELLO / WELCOME / PROOF / READY prove the job key
//!   both ways (HMAC-SHA256) and exchange each side's data port, link id, window, receive buffer
//!   and datagram limit. A stranger's datagrams are dropped and counted, never delivered.
//! - `link`: per peer, packets cut into datagram-sized fragments and bulk pieces read from the
//!   sender's memory, kept until acknowledged, sent as the congestion window and the peer's
//!   window allow (rendezvous data paced by them); in-order delivery, fragments reassembled,
//!   bulk pieces written where the core says.
//! - `wire`: the datagrams, every field checked; `sys`: `recvmmsg`, `sendmsg` to an address,
//!   forced socket buffers, a timer fd.
//! - `segmented`: on paths of small datagrams, runs of them go in one send the kernel cuts
//!   (UDP GSO).
//! - `direct`: while a rendezvous streams in, each datagram's head is peeked at and a bulk
//!   piece that is its link's next unit is received straight into the receiver's memory.
//! - `poll` (here) reads datagrams in batches, runs the timers (probes, retransmissions,
//!   delayed ACKs, peers silent too long), reports links that came up, finished bulk sends
//!   and failures. Its wait fd is an epoll set of the data socket, a timer fd armed for the
//!   next protocol deadline, and a doorbell: a progression thread asleep on it still
//!   acknowledges data, and a sender's retransmission timer still fires, while the
//!   application computes.
//!
//! A send that arms a retransmission timer while a poller sleeps until later rings it
//! (`alarm`).
//!
//! A peer that acknowledges nothing for `NMAD_UDP_DEAD_AFTER` (ms, default 10,000) while we
//! wait for it, or answers none of the heartbeats a silent link gets every
//! `NMAD_UDP_HEARTBEAT` (ms, default 1,000) for as long, is reported failed, named; a port
//! unreachable from the peer's host (its process is gone), seen by the link's next send,
//! fails the link at once;
//! `Link::close` and `shutdown` tell the peer with a CLOSE datagram.
//!
//! Environment: `NMAD_UDP_IFACE` (interface or address for a plain `udp`), `NMAD_UDP_SOCKBUF`
//! (socket buffer bytes, `K`/`M` suffixes; default 8M, forced beyond `rmem_max` when
//! privileged), `NMAD_UDP_DATAGRAM` (the largest datagram off loopback; default: the
//! interface's MTU less the IP and UDP headers), `NMAD_UDP_DEAD_AFTER`, `NMAD_UDP_BANDWIDTH`
//! (nominal MB/s for the strategies).
//!
//! This module owns its sockets, thread and fds; it knows nothing of the core's protocols
//! (cookies are opaque) and touches no other driver.

mod alarm;
mod direct;
mod handshake;
mod link;
mod segmented;
mod shared;
mod sys;
pub mod wire;

use super::ip::card::{self, Card};
use super::ip::options::{env_value, parse_size};
use super::ip::sys::{Epoll, readable};
use super::{Caps, Driver, DriverEnv, LargePath, Link, PeerId, Profile, Sink};
use crate::reliable::{Ack, Config, StatsSnapshot};
use alarm::NEVER;
use handshake::{LOOPBACK_DATAGRAM, Server, Setup};
use link::UdpLink;
use shared::{Links, Shared};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use sys::{BATCH, Got, TimerFd};
use tools::admission::RejectLog;
use wire::{Data, Header};

/// Largest packet `try_send` takes (cut into datagrams as the path needs).
pub const MAX_PACKET: usize = 64 << 10;
/// Receive batches one poll reads at most (the rest waits for the next poll).
const BATCHES_PER_POLL: usize = 4;
/// Receive buffers hold the largest datagram loopback carries.
const BUFFER: usize = 65_536;

/// Tunables of a driver instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UdpOptions {
    /// SO_RCVBUF and SO_SNDBUF of the data socket.
    pub socket_buffer: usize,
    pub handshake_timeout: Duration,
    /// A peer that acknowledges nothing, or answers no heartbeat, for this long is lost.
    pub dead_after: Duration,
    /// A peer silent for this long gets a heartbeat (whose answer, or the port-unreachable
    /// error a dead process's host sends back, tells whether it lives).
    pub heartbeat: Duration,
    /// The largest datagram off loopback (`None`: from the interface's MTU).
    pub datagram: Option<usize>,
    pub bandwidth_mbps: u64,
    pub protocol: Config,
}

impl Default for UdpOptions {
    fn default() -> UdpOptions {
        UdpOptions {
            socket_buffer: 8 << 20,
            handshake_timeout: Duration::from_secs(5),
            dead_after: Duration::from_secs(10),
            heartbeat: Duration::from_secs(1),
            datagram: None,
            bandwidth_mbps: 1000,
            protocol: Config::default(),
        }
    }
}

impl UdpOptions {
    /// The defaults, overridden by the environment (see the module's documentation).
    pub fn from_env() -> io::Result<UdpOptions> {
        let mut o = UdpOptions::default();
        if let Some(b) = env_value("NMAD_UDP_SOCKBUF", parse_size)? {
            o.socket_buffer = b;
        }
        let datagram =
            |v: &str| v.trim().parse::<usize>().ok().filter(|&n| (1024..=LOOPBACK_DATAGRAM).contains(&n));
        o.datagram = env_value("NMAD_UDP_DATAGRAM", datagram)?.or(o.datagram);
        let ms = |v: &str| v.trim().parse::<u64>().ok().filter(|&n| n > 0).map(Duration::from_millis);
        o.dead_after = env_value("NMAD_UDP_DEAD_AFTER", ms)?.unwrap_or(o.dead_after);
        o.heartbeat = env_value("NMAD_UDP_HEARTBEAT", ms)?.unwrap_or(o.heartbeat);
        let bw = env_value("NMAD_UDP_BANDWIDTH", |v| v.trim().parse::<u64>().ok().filter(|&n| n > 0))?;
        o.bandwidth_mbps = bw.unwrap_or(o.bandwidth_mbps);
        Ok(o)
    }
}

/// What one poll reuses: the receive buffers and their lengths and senders.
struct PollState {
    bufs: Vec<Vec<u8>>,
    got: Vec<Got>,
    /// One datagram of a run the kernel coalesced, copied out.
    segment: Vec<u8>,
    due: Vec<Arc<UdpLink>>,
    /// Bulk pieces are streaming in: read each datagram in place if it can (`direct`).
    direct: bool,
    /// The last DATA datagram `datagram` took carried a bulk piece.
    bulk_seen: bool,
}

/// One udp driver instance (one rail).
pub struct UdpDriver {
    name: String,
    node: String,
    card: String,
    bandwidth_mbps: u64,
    setup: Arc<Setup>,
    shared: Arc<Shared>,
    links: Arc<Links>,
    epoll: Epoll,
    timer: TimerFd,
    /// The data socket takes coalesced runs of datagrams (UDP GRO).
    gro: bool,
    poll: Mutex<PollState>,
    server: Mutex<Option<Server>>,
}

impl UdpDriver {
    /// `arg`: the interface name or address to use (`udp:ARG`), if any.
    pub fn create(env: &DriverEnv, arg: Option<&str>) -> io::Result<Arc<dyn Driver>> {
        Ok(UdpDriver::new(env, arg, UdpOptions::from_env()?)?)
    }

    /// An instance with explicit options (`create` reads them from the environment).
    pub fn new(env: &DriverEnv, arg: Option<&str>, opts: UdpOptions) -> io::Result<Arc<UdpDriver>> {
        if let Some(a) = arg
            && (a.is_empty() || a.len() > 200 || a.contains([';', '=', ' ', ',']))
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("udp:`{a}`: not an interface or address"),
            ));
        }
        let name = arg.map_or("udp".to_string(), |a| format!("udp:{a}"));
        let choice = match arg {
            Some(a) => Some(a.to_string()),
            None => std::env::var("NMAD_UDP_IFACE").ok().filter(|v| !v.is_empty()),
        };
        let plan = card::plan(choice.as_deref(), env.single_node)
            .map_err(|e| io::Error::new(e.kind(), format!("{name}: {e}")))?;
        let bind = |what: &str| {
            UdpSocket::bind((plan.bind, 0)).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("{name}: cannot bind the {what} socket on {}: {e}", plan.bind),
                )
            })
        };
        let data = bind("data")?;
        data.set_nonblocking(true)?;
        let rcvbuf = sys::set_buffers(data.as_raw_fd(), opts.socket_buffer);
        let handshake_sock = bind("handshake")?;
        let data_port = data.local_addr()?.port();
        let hs_port = handshake_sock.local_addr()?.port();
        let header = if plan.bind.is_ipv6() { 48 } else { 28 };
        let datagram = opts
            .datagram
            .or_else(|| {
                let mtu = if plan.bind.is_loopback() {
                    Some(LOOPBACK_DATAGRAM + header)
                } else if plan.bind.is_unspecified() {
                    sys::smallest_mtu()
                } else {
                    sys::mtu_of(plan.bind)
                };
                mtu.map(|m| m - header)
            })
            .unwrap_or(1500 - header)
            .min(LOOPBACK_DATAGRAM);
        // Small datagrams: let the kernel hand over runs of them at once (and keep a peer's
        // segmented send whole). Large ones are read in place instead (`direct`), which a
        // coalesced run would defeat.
        let gro = segmented::worth_it(datagram) && sys::enable_gro(data.as_raw_fd());
        let rejects = RejectLog::new(format!("nmad {name} (rank {})", env.rank), Duration::from_secs(5));
        let timeouts = (opts.dead_after.as_micros() as u64, opts.heartbeat.as_micros() as u64);
        let busy = opts.protocol.window as usize;
        let shared = Arc::new(Shared::new(
            (env.rank, env.size),
            (data, plan.bind, opts.socket_buffer),
            opts.protocol,
            (MAX_PACKET, busy),
            timeouts,
            rejects,
        )?);
        let links = Arc::new(Links::new(env.size));
        let setup = Arc::new(Setup {
            shared: shared.clone(),
            links: links.clone(),
            key: env.job_key.clone(),
            data_port,
            rcvbuf: rcvbuf.min(u32::MAX as usize) as u32,
            max_datagram: datagram as u32,
            timeout: opts.handshake_timeout,
            local: plan.local,
        });
        let epoll = Epoll::new()?;
        let timer = TimerFd::new()?;
        epoll.add(shared.sock_fd(), 0, false)?;
        epoll.add(timer.fd(), 1, false)?;
        epoll.add(shared.doorbell.fd(), 2, false)?;
        let server = Server::spawn(handshake_sock, setup.clone())?;
        let node = card::card_node(&env.node);
        let card = Card { node: node.clone(), port: hs_port, addrs: plan.advertised }.to_string();
        let bufs = (0..BATCH).map(|_| vec![0u8; BUFFER]).collect();
        Ok(Arc::new(UdpDriver {
            name,
            node,
            card,
            bandwidth_mbps: opts.bandwidth_mbps,
            setup,
            shared,
            links,
            epoll,
            timer,
            gro,
            poll: Mutex::new(PollState {
                bufs,
                got: vec![Got::default(); BATCH],
                segment: Vec::new(),
                due: Vec::new(),
                direct: false,
                bulk_seen: false,
            }),
            server: Mutex::new(Some(server)),
        }))
    }

    /// Datagrams dropped so far because they came from no peer of ours or failed their checks.
    pub fn strangers(&self) -> u64 {
        self.shared.strangers.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The data socket's address (what the handshake tells peers, with its port).
    pub fn data_addr(&self) -> io::Result<SocketAddr> {
        self.shared.sock.local_addr()
    }

    /// One datagram (the first `len` bytes of `buf`, from `from`): checked, then handed to
    /// its link. Returns the units it delivered (or 1 for a control datagram that did
    /// something); `bulk_seen` tells whether it was DATA and carried a bulk piece.
    fn datagram(
        &self,
        buf: &mut Vec<u8>,
        (len, from): (usize, Option<SocketAddr>),
        bulk_seen: &mut bool,
        sink: &mut dyn Sink,
    ) -> usize {
        let from_str = || from.map_or("an unknown address".to_string(), |a| a.to_string());
        if len > buf.len() {
            self.shared.stranger(from_str(), "a datagram longer than any we send");
            return 0;
        }
        let Some(h) = Header::decode(&buf[..len]) else {
            self.shared.stranger(from_str(), "not one of our datagrams");
            return 0;
        };
        let Some(link) = self.links.get(h.from).filter(|l| l.local_id == h.link_id) else {
            self.shared.stranger(from_str(), "a datagram for no link of ours");
            return 0;
        };
        match link.remote() {
            Some(r) if Some(r.from) == from => {}
            // The peer knows the link's secret id: its handshake is finishing (our READY is on
            // its way); what it sent comes again.
            None => return 0,
            Some(_) => {
                self.shared.stranger(from_str(), "a link's id from another address");
                return 0;
            }
        }
        if link.is_closed() {
            return 0;
        }
        let now = self.shared.now();
        link.heard(now);
        let malformed = |what: &str| {
            io::Error::new(io::ErrorKind::InvalidData, format!("rank {}: malformed {what} datagram", h.from))
        };
        match h.kind {
            wire::KIND_DATA => {
                let Some(d) = Data::decode(&buf[..len]) else {
                    link.fail(malformed("data"));
                    return 1;
                };
                if let Some(a) = &d.ack {
                    link.on_ack(a, now);
                }
                *bulk_seen = d.bulk.is_some();
                let n = link.on_data(buf, len, d, now, sink);
                if buf.is_empty() {
                    *buf = vec![0u8; BUFFER]; // kept by the link for later
                }
                n
            }
            wire::KIND_ACK => {
                match Ack::decode(&buf[wire::HEADER..len]) {
                    Some((a, n)) if wire::HEADER + n == len => link.on_ack(&a, now),
                    _ => link.fail(malformed("ACK")),
                }
                0
            }
            wire::KIND_PING if len == wire::HEADER => {
                link.answer_ping(now);
                0
            }
            wire::KIND_CLOSE if len == wire::HEADER => {
                link.fail(io::Error::new(
                    io::ErrorKind::ConnectionReset,
                    format!("rank {} closed the link (it shut down or cut us off)", h.from),
                ));
                1
            }
            _ => {
                link.fail(malformed("unknown"));
                1
            }
        }
    }

    /// What receive `i` of the batch brought: a datagram, or a run of them the kernel
    /// coalesced (each taken apart and copied out).
    fn received(&self, st: &mut PollState, i: usize, sink: &mut dyn Sink) -> usize {
        let Got { len, from, segment } = st.got[i];
        let PollState { bufs, segment: one, bulk_seen, .. } = st;
        if segment == 0 || len <= segment || len > bufs[i].len() {
            return self.datagram(&mut bufs[i], (len, from), bulk_seen, sink);
        }
        let mut handled = 0;
        for piece in bufs[i][..len].chunks(segment) {
            one.clear();
            one.extend_from_slice(piece);
            handled += self.datagram(one, (piece.len(), from), bulk_seen, sink);
            if self.shared.is_closed() {
                break;
            }
        }
        handled
    }

    /// Timers, finished bulk sends and failures: the work no datagram brought.
    fn service(&self, st: &mut PollState, sink: &mut dyn Sink) -> usize {
        let now = self.shared.now();
        st.due.clear();
        self.links.each(|l| {
            if l.due() <= now || l.has_finished() {
                st.due.push(l.clone());
            }
        });
        let mut handled = 0;
        for l in st.due.drain(..) {
            l.service(now);
            for token in l.take_finished() {
                sink.bulk_sent(l.peer, token);
                handled += 1;
            }
        }
        for peer in self.shared.take_failed() {
            if let Some(l) = self.links.get(peer)
                && let Some(e) = l.take_failure()
            {
                sink.link_failed(peer, e);
                handled += 1;
            }
        }
        handled
    }
}

impl Drop for UdpDriver {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Driver for UdpDriver {
    fn name(&self) -> &str {
        &self.name
    }

    fn caps(&self) -> Caps {
        Caps {
            max_packet: MAX_PACKET,
            eager_limit: 32 << 10,
            iovec: true,
            large: LargePath::Bulk,
            blocking: true,
        }
    }

    fn profile(&self) -> Profile {
        Profile { latency_ns: 25_000, bandwidth_mbps: self.bandwidth_mbps }
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
        let link = handshake::connect(&self.setup, peer, &candidates).map_err(|e| {
            io::Error::new(e.kind(), format!("{}: cannot connect to rank {peer}: {e}", self.name))
        })?;
        if link.is_closed() {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                format!("{}: the link to rank {peer} failed", self.name),
            ));
        }
        Ok(link)
    }

    fn poll(&self, sink: &mut dyn Sink) -> usize {
        let Ok(mut guard) = self.poll.try_lock() else { return 0 }; // another thread is polling
        let st = &mut *guard;
        if self.shared.is_closed() {
            return 0;
        }
        let mut handled = 0;
        if self.shared.rung() {
            self.shared.clear_rung();
            for l in self.shared.take_announced() {
                sink.link_up(l);
                handled += 1;
            }
        }
        let mut budget = BATCH * BATCHES_PER_POLL;
        while budget > 0 {
            if st.direct {
                let Some(n) = self.receive_direct(st, sink) else { break };
                handled += n;
                budget -= 1;
                if self.shared.is_closed() {
                    return handled;
                }
                continue;
            }
            let n = match sys::recv_batch(self.shared.sock_fd(), &mut st.bufs, &mut st.got) {
                Ok(n) => n,
                Err(e) => {
                    log::debug!("{}: receiving: {e}", self.name);
                    break;
                }
            };
            st.bulk_seen = false;
            for i in 0..n {
                handled += self.received(st, i, sink);
                if self.shared.is_closed() {
                    return handled; // the sink shut us down
                }
            }
            // A batch ending with a bulk piece: a rendezvous streams in; read it in place.
            st.direct = st.bulk_seen && !self.gro;
            budget = budget.saturating_sub(BATCH);
            if n < BATCH {
                break;
            }
        }
        handled + self.service(st, sink)
    }

    fn wait_fd(&self) -> Option<RawFd> {
        Some(self.epoll.fd())
    }

    fn arm(&self) -> bool {
        let earliest = || {
            let mut due = NEVER;
            self.links.each(|l| due = due.min(l.due()));
            due
        };
        let (now, due) = (self.shared.now(), earliest());
        self.timer.set((due != NEVER).then(|| Duration::from_micros(due.saturating_sub(now))));
        // Published before the last looks, so that a sender arming an earlier deadline rings.
        let undisturbed = self.shared.alarm.sleep(due, earliest);
        undisturbed && due > now && !self.shared.rung() && !readable(self.shared.sock_fd(), 0)
    }

    fn disarm(&self) {
        self.shared.alarm.woke();
        self.timer.set(None);
    }

    fn protocol_stats(&self) -> Option<StatsSnapshot> {
        Some(self.shared.stats.snapshot())
    }

    fn shutdown(&self) {
        if self.shared.is_closed() {
            return;
        }
        self.links.each(|l| l.close());
        self.shared.close();
        if let Some(mut s) = self.server.lock().unwrap().take() {
            s.stop();
        }
        self.shared.rejects.flush();
    }
}
