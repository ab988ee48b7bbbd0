//! Setting a link up over datagrams, proving the job secret both ways: the client sends HELLO
//! (its side of the link and a nonce), the server answers WELCOME (its side, its nonce and an
//! HMAC of both sides and both nonces under the job key), the client answers PROOF (its own
//! HMAC), the server READY (an HMAC that it took it). Lost datagrams are sent again every
//! [`RETRY`] until the handshake timeout; a repeated HELLO or PROOF gets the same answer.
//!
//! The server side runs on a thread of its own, on a socket of its own (the card's port), so
//! that `connect` never needs the peer to poll; the client side runs in `connect`, on a fresh
//! socket. Both make or find the one link per peer (`Links`), so crossed handshakes agree.
//! Strangers (bad magic, wrong key, ranks outside the job, a PROOF without its HELLO) are
//! counted and logged once per interval, and get no answer beyond a WELCOME.
//!
//! It owns the handshake socket and its thread; established links go to `poll` through
//! `Shared::announce`.

use super::link::{Remote, UdpLink};
use super::shared::{Links, Shared};
use super::wire::{self, Handshake, NONCE, Side};
use crate::drivers::PeerId;
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::*;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tools::secret::JobKey;

/// A handshake datagram unanswered for this long is sent again.
pub const RETRY: Duration = Duration::from_millis(50);
/// Handshakes the server remembers at once (the oldest is forgotten to make room).
const PENDING: usize = 256;
/// The largest datagram on loopback (65,535 less the IPv4 and UDP headers).
pub const LOOPBACK_DATAGRAM: usize = 65_507;
/// The smallest datagram limit a side may announce.
const MIN_DATAGRAM: usize = wire::MAX_DATA_OVERHEAD + 256;

const WELCOME: &[u8] = b"nmad-udp-welcome";
const PROOF: &[u8] = b"nmad-udp-proof";
const READY: &[u8] = b"nmad-udp-ready";

/// What both sides need to set links up.
pub struct Setup {
    pub shared: Arc<Shared>,
    pub links: Arc<Links>,
    pub key: JobKey,
    pub data_port: u16,
    /// Our data socket's receive buffer, and the largest datagram our network takes.
    pub rcvbuf: u32,
    pub max_datagram: u32,
    pub timeout: Duration,
    /// The address outgoing handshakes start from (a rail bound to one interface).
    pub local: Option<IpAddr>,
}

impl Setup {
    fn side(&self, link: &UdpLink) -> Side {
        Side {
            rank: self.shared.rank,
            data_port: self.data_port,
            send_port: link.send_port(),
            link_id: link.local_id,
            window: self.shared.protocol.window,
            rcvbuf: self.rcvbuf,
            max_datagram: self.max_datagram,
        }
    }

    /// Whether the peer's announced side makes sense for a link to it from `rank`.
    fn plausible(&self, s: &Side, rank: PeerId) -> bool {
        s.rank == rank
            && rank < self.shared.size
            && rank != self.shared.rank
            && s.data_port != 0
            && s.send_port != 0
            && s.window > 0
            && s.max_datagram as usize >= MIN_DATAGRAM
    }

    /// Points `link` at the peer's data socket (`ip`, its side's port) with both ends' limits:
    /// a datagram as large as both networks take (loopback's own limit on loopback), the peer's
    /// window, and no more units in flight than half its receive buffer holds.
    fn establish(&self, link: &UdpLink, peer: &Side, ip: IpAddr) {
        let datagram = if ip.is_loopback() {
            LOOPBACK_DATAGRAM
        } else {
            (peer.max_datagram.min(self.max_datagram) as usize).min(LOOPBACK_DATAGRAM)
        };
        let in_flight = (peer.rcvbuf as usize / 2 / datagram).clamp(4, u32::MAX as usize) as u32;
        let remote = Remote {
            addr: SocketAddr::new(ip, peer.data_port),
            from: SocketAddr::new(ip, peer.send_port),
            id: peer.link_id,
            fragment: datagram - wire::MAX_DATA_OVERHEAD,
        };
        link.establish(remote, peer.window, in_flight);
    }
}

struct Pending {
    client: Side,
    ns: [u8; NONCE],
    at: Instant,
}

/// The server side's thread.
pub struct Server {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    pub fn spawn(sock: UdpSocket, setup: Arc<Setup>) -> io::Result<Server> {
        sock.set_read_timeout(Some(RETRY))?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name(format!("nmad-udp-hs-{}", setup.shared.rank))
            .spawn(move || serve(&sock, &setup, &s))?;
        Ok(Server { stop, thread: Some(thread) })
    }

    /// Stops answering (within [`RETRY`]) and closes the socket.
    pub fn stop(&mut self) {
        self.stop.store(true, Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(sock: &UdpSocket, setup: &Setup, stop: &AtomicBool) {
    // By client nonce and address: a client tries every address of our card at once, and each
    // gets its own answer.
    let mut pending: HashMap<([u8; NONCE], SocketAddr), Pending> = HashMap::new();
    let mut buf = [0u8; 512];
    while !stop.load(Acquire) {
        let (n, addr) = match sock.recv_from(&mut buf) {
            Ok(r) => r,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => continue,
            Err(e) => {
                log::debug!("udp handshake socket: {e}");
                std::thread::sleep(RETRY);
                continue;
            }
        };
        pending.retain(|_, p| p.at.elapsed() < setup.timeout);
        match Handshake::decode(&buf[..n]) {
            Some(Handshake::Hello { client, to, nc }) => {
                if to != setup.shared.rank || !setup.plausible(&client, client.rank) {
                    setup.shared.stranger(addr, "a HELLO for another rank or job");
                    continue;
                }
                let Some(link) = setup.links.get_or_make(&setup.shared, client.rank) else { continue };
                let known = pending.get(&(nc, addr)).filter(|p| p.client == client).map(|p| p.ns);
                let ns = match known {
                    Some(ns) => ns,
                    None => {
                        let mut ns = [0u8; NONCE];
                        if tools::secret::random_bytes(&mut ns).is_err() {
                            continue;
                        }
                        if pending.len() >= PENDING
                            && let Some(oldest) = pending.iter().min_by_key(|(_, p)| p.at).map(|(k, _)| *k)
                        {
                            pending.remove(&oldest);
                        }
                        pending.insert((nc, addr), Pending { client, ns, at: Instant::now() });
                        ns
                    }
                };
                let server = setup.side(&link);
                let mac = setup.key.proof(WELCOME, &wire::transcript(&client, &server, &nc, &ns));
                let _ = sock.send_to(&Handshake::Welcome { server, nc, ns, mac }.encode(), addr);
            }
            Some(Handshake::Proof { from, nc, ns, mac }) => {
                let Some(p) = pending.get(&(nc, addr)).filter(|p| p.ns == ns && p.client.rank == from) else {
                    setup.shared.stranger(addr, "a PROOF without its HELLO");
                    continue;
                };
                let Some(link) = setup.links.get(from) else { continue };
                let t = wire::transcript(&p.client, &setup.side(&link), &nc, &ns);
                if !setup.key.verify(PROOF, &t, &mac) {
                    setup.shared.stranger(addr, "does not know the job key");
                    continue;
                }
                setup.establish(&link, &p.client, addr.ip());
                if !link.announced.swap(true, AcqRel) {
                    setup.shared.announce(link.clone());
                }
                let _ = sock
                    .send_to(&Handshake::Ready { nc, ns, mac: setup.key.proof(READY, &t) }.encode(), addr);
            }
            _ => setup.shared.stranger(addr, "not a job handshake"),
        }
    }
}

/// Sets up the link to `peer`, whose handshake socket is at one of `candidates` (tried at once;
/// the first that answers is used). Returns the link at once if it is up already (a crossed
/// handshake finished it).
pub fn connect(setup: &Setup, peer: PeerId, candidates: &[SocketAddr]) -> io::Result<Arc<UdpLink>> {
    let link = setup.links.get_or_make(&setup.shared, peer).ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("rank {peer} is not in the job"))
    })?;
    if link.is_up() || candidates.is_empty() {
        return Ok(link);
    }
    let any =
        |v6: bool| if v6 { IpAddr::V6(Ipv6Addr::UNSPECIFIED) } else { IpAddr::V4(Ipv4Addr::UNSPECIFIED) };
    let local = setup.local.unwrap_or(any(candidates[0].is_ipv6()));
    let sock = UdpSocket::bind((local, 0))?;
    sock.set_read_timeout(Some(RETRY))?;
    let deadline = Instant::now() + setup.timeout;
    let mut nc = [0u8; NONCE];
    tools::secret::random_bytes(&mut nc)?;
    let client = setup.side(&link);
    let hello = Handshake::Hello { client, to: peer, nc }.encode();
    let silent = || {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!("rank {peer} did not answer the udp handshake within {:?}", setup.timeout),
        )
    };
    // HELLO until a WELCOME proves the peer knows the key.
    let (server, ns, at, t) = loop {
        if link.is_up() {
            return Ok(link);
        }
        if Instant::now() > deadline {
            return Err(silent());
        }
        for &c in candidates {
            let _ = sock.send_to(&hello, c);
        }
        let Some((m, from)) = receive(&sock, candidates) else { continue };
        let Handshake::Welcome { server, nc: n2, ns, mac } = m else { continue };
        if n2 != nc {
            continue;
        }
        if !setup.plausible(&server, peer) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{from} answered for rank {} with an unusable side, not rank {peer}", server.rank),
            ));
        }
        let t = wire::transcript(&client, &server, &nc, &ns);
        if !setup.key.verify(WELCOME, &t, &mac) {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{from} (rank {peer}'s card) does not know the job key"),
            ));
        }
        break (server, ns, from, t);
    };
    let proof =
        Handshake::Proof { from: setup.shared.rank, nc, ns, mac: setup.key.proof(PROOF, &t) }.encode();
    loop {
        if link.is_up() {
            return Ok(link);
        }
        if Instant::now() > deadline {
            return Err(silent());
        }
        let _ = sock.send_to(&proof, at);
        let Some((Handshake::Ready { nc: n2, ns: s2, mac }, _)) = receive(&sock, &[at]) else { continue };
        if (n2, s2) == (nc, ns) && setup.key.verify(READY, &t, &mac) {
            setup.establish(&link, &server, at.ip());
            return Ok(link);
        }
    }
}

/// A handshake datagram from one of `from` within [`RETRY`].
fn receive(sock: &UdpSocket, from: &[SocketAddr]) -> Option<(Handshake, SocketAddr)> {
    let mut buf = [0u8; 512];
    let (n, addr) = sock.recv_from(&mut buf).ok()?;
    if !from.contains(&addr) {
        return None;
    }
    Some((Handshake::decode(&buf[..n])?, addr))
}
