//! Both ends of connection setup: the job-secret handshake (`tools::secret`), then the hello
//! naming the connecting rank and rail, then the accepting side's answer. Blocking, with one
//! deadline for the whole exchange so that a silent or dribbling peer cannot hold anyone.
//!
//! It owns nothing past setup: an authenticated, tuned, nonblocking socket is handed on as a
//! [`Conn`]. Strangers are counted and logged here (one line per interval, not one each).

use super::link::Conn;
use super::shared::Shared;
use super::sys;
use super::wire::{self, ACK_BAD_RANK, ACK_CLOSED, ACK_LEN, ACK_OK, ACK_WRONG_PEER, ACK_WRONG_RAIL};
use crate::drivers::PeerId;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::Ordering::*;
use std::time::Duration;
use tools::admission::{Deadline, RejectLog, Ticket, Timed};
use tools::secret::{self, HandshakeError, JobKey};

/// What both ends need to set a connection up.
pub struct Setup {
    pub shared: Arc<Shared>,
    pub key: JobKey,
    pub rank: PeerId,
    pub size: u32,
    /// The driver's name: both ends of a connection are the same rail.
    pub rail: String,
    pub socket_buffer: Option<usize>,
    /// How long a whole handshake may take (either side).
    pub timeout: Duration,
    /// Unanswered keepalive probes or unacknowledged data for this long fail a connection.
    pub dead_after: Duration,
    /// Outgoing connections start from this address (a rail bound to one interface).
    pub local: Option<IpAddr>,
    /// Rejected connections, logged at most once per interval.
    pub rejects: RejectLog,
}

fn describe(e: HandshakeError) -> String {
    match e {
        HandshakeError::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            "closed during the job handshake (wrong job key?)".to_string()
        }
        HandshakeError::Io(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
            "silent during the job handshake (timed out)".to_string()
        }
        e => e.to_string(),
    }
}

impl Setup {
    /// Authenticates a connection someone made to us and hands it to the next poll, or rejects
    /// and logs it.
    pub fn admit(&self, s: TcpStream, addr: SocketAddr, ticket: &Ticket) {
        let result = self.server_side(&s, ticket).and_then(|peer| {
            let conn = Arc::new(Conn::new(self.shared.clone(), peer, s, addr, false));
            self.shared.adopt(conn, true).map_err(|e| e.to_string())
        });
        if let Err(why) = result {
            self.reject(addr, why);
        }
    }

    /// Counts a connection turned away, for the rate-limited log.
    pub fn reject(&self, addr: SocketAddr, why: impl std::fmt::Display) {
        self.shared.rejected.fetch_add(1, Relaxed);
        self.rejects.note(addr, why);
    }

    fn server_side(&self, s: &TcpStream, ticket: &Ticket) -> Result<PeerId, String> {
        let io = |e: io::Error| format!("I/O error: {e}");
        s.set_nonblocking(false).map_err(io)?;
        let mut s = Timed::new(s, s.as_raw_fd(), Deadline::after(self.timeout), Some(ticket));
        secret::server_handshake(&mut s, &self.key).map_err(describe)?;
        ticket.proven();
        let (peer, to, rail) =
            wire::read_hello(&mut s).map_err(|e| format!("bad hello after the handshake: {e}"))?;
        let status = if rail != self.rail {
            ACK_WRONG_RAIL
        } else if peer >= self.size {
            ACK_BAD_RANK
        } else if to != self.rank {
            ACK_WRONG_PEER
        } else if self.shared.is_closed() {
            ACK_CLOSED
        } else {
            ACK_OK
        };
        s.write_all(&wire::ack(status, self.rank)).map_err(io)?;
        match status {
            ACK_OK => {}
            ACK_WRONG_RAIL => {
                return Err(format!("rank {peer} connects to rail `{rail}`, this is `{}`", self.rail));
            }
            ACK_BAD_RANK => return Err(format!("rank {peer} is not in a job of {} processes", self.size)),
            ACK_WRONG_PEER => return Err(format!("rank {peer} wants rank {to}, this is rank {}", self.rank)),
            _ => return Err("shutting down".to_string()),
        }
        self.ready(s.get_ref()).map_err(io)?;
        Ok(peer)
    }

    /// Connects to `peer` at `addr`, proves the secret, and returns the ready socket.
    pub fn dial(&self, peer: PeerId, addr: SocketAddr) -> io::Result<TcpStream> {
        let deadline = Deadline::after(self.timeout);
        let sock = sys::connect_from(self.local, addr, self.timeout, self.socket_buffer)?;
        let mut s = Timed::new(&sock, sock.as_raw_fd(), deadline, None);
        secret::client_handshake(&mut s, &self.key).map_err(|e| match e {
            HandshakeError::Io(e) => e,
            HandshakeError::WrongKey => io::Error::new(io::ErrorKind::PermissionDenied, e.to_string()),
            e => io::Error::new(io::ErrorKind::InvalidData, e.to_string()),
        })?;
        s.write_all(&wire::hello(self.rank, peer, &self.rail))?;
        let mut ack = [0u8; ACK_LEN];
        s.read_exact(&mut ack)?;
        let refused = |kind, why: String| Err(io::Error::new(kind, why));
        match wire::parse_ack(&ack) {
            (ACK_OK, r) if r == peer => {}
            (ACK_OK, r) => {
                return refused(io::ErrorKind::InvalidInput, format!("the card belongs to rank {r}"));
            }
            (ACK_WRONG_RAIL, _) => {
                return refused(io::ErrorKind::InvalidInput, format!("the peer is not rail `{}`", self.rail));
            }
            (ACK_BAD_RANK, _) => {
                return refused(io::ErrorKind::InvalidInput, "the peer refused our rank".into());
            }
            (ACK_WRONG_PEER, r) => {
                return refused(io::ErrorKind::InvalidInput, format!("the card belongs to rank {r}"));
            }
            (ACK_CLOSED, _) => {
                return refused(io::ErrorKind::ConnectionRefused, "the peer is shutting down".into());
            }
            (code, _) => return refused(io::ErrorKind::InvalidData, format!("unknown answer {code}")),
        }
        self.ready(&sock)?;
        Ok(sock)
    }

    /// Switches an authenticated socket to what the links need.
    fn ready(&self, s: &TcpStream) -> io::Result<()> {
        // Probing starts after half the limit of silence, so a vanished host is noticed in time.
        sys::tune(s.as_raw_fd(), self.dead_after / 2, self.dead_after)?;
        if let Some(b) = self.socket_buffer {
            sys::set_buffers(s.as_raw_fd(), b)?;
        }
        s.set_read_timeout(None)?;
        s.set_write_timeout(None)?;
        s.set_nonblocking(true)
    }
}
