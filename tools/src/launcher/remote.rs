//! Remote ranks (`-hosts`): which hosts are this machine, the command line that starts a rank
//! through the launcher command (`ssh` by default), and the TCP PMI port they connect back to.
//! The port listens only where the job's hosts can come from (`--pmi-bind`, else the
//! `--pmi-host` address, else this machine's address towards the remote hosts when they all
//! agree, else every interface). Every TCP connection must pass the job-key handshake
//! ([`crate::secret::server_handshake`]), run in a short-lived thread per connection within one
//! 5 s deadline, at most 64 at once (the oldest unauthenticated one is dropped to make room,
//! [`crate::admission`]); the authenticated stream is then handed to the event loop over a
//! channel (with a wake-up byte on its self-pipe). Rejections reach the event loop at most one
//! per interval, with the count of the others.

use super::signals::Waker;
use crate::admission::{Deadline, Pool, RejectLog, Ticket, Timed};
use crate::secret::{HandshakeError, JobKey, server_handshake};
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

/// How long a connecting peer has to complete the whole handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Handshakes in progress at once; one more evicts the oldest unauthenticated one.
const MAX_PENDING: usize = 64;
/// Rejections are reported at most once per interval (with a count).
const REJECT_LOG_INTERVAL: Duration = Duration::from_secs(5);

/// The result of one connection's handshake.
#[derive(Debug)]
pub enum Accepted {
    Ok(TcpStream, SocketAddr),
    Rejected(SocketAddr, String),
}

/// The listening PMI port and its handshake threads.
pub struct PmiPort {
    listener: TcpListener,
    /// `host:port` as remote ranks get it in PMI_PORT.
    pub advertised: String,
    key: JobKey,
    waker: Waker,
    tx: Sender<Accepted>,
    rx: Receiver<Accepted>,
    pool: Arc<Pool>,
    rejects: RejectLog,
}

impl std::fmt::Debug for PmiPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PmiPort")
            .field("listener", &self.listener)
            .field("advertised", &self.advertised)
            .finish()
    }
}

impl PmiPort {
    /// Listens on `bind` (default: the `host` address if it is this machine's, else the one
    /// this machine reaches `remote_hosts`, the hosts of the remote ranks, from when they all
    /// agree, else every interface) and advertises `host` (default: the bind address if
    /// specific, else this machine's first non-loopback IPv4 address).
    pub fn open(
        bind: Option<&str>,
        host: Option<&str>,
        remote_hosts: &[String],
        key: JobKey,
        waker: Waker,
    ) -> Result<PmiPort, String> {
        let addr = match bind {
            Some(b) => bind_address(b)?,
            None => SocketAddr::new(listen_address(host, remote_hosts), 0),
        };
        let listener = TcpListener::bind(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        listener.set_nonblocking(true).map_err(|e| format!("PMI port: {e}"))?;
        let port = listener.local_addr().map_err(|e| format!("PMI port: {e}"))?.port();
        let host = match host {
            Some(h) => h.to_string(),
            None if !addr.ip().is_unspecified() => addr.ip().to_string(),
            None => first_ipv4()
                .ok_or(
                    "this machine has no non-loopback IPv4 address for remote ranks to reach; use --pmi-host",
                )?
                .to_string(),
        };
        let advertised = match host.parse::<IpAddr>() {
            Ok(IpAddr::V6(v6)) => format!("[{v6}]:{port}"),
            _ => format!("{host}:{port}"),
        };
        let (tx, rx) = channel();
        let pool = Pool::new(MAX_PENDING);
        let rejects = RejectLog::new("madrun", REJECT_LOG_INTERVAL);
        Ok(PmiPort { listener, advertised, key, waker, tx, rx, pool, rejects })
    }

    pub fn fd(&self) -> RawFd {
        self.listener.as_raw_fd()
    }

    /// The address the port listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Accepts every waiting connection and starts its handshake.
    pub fn accept_all(&mut self) {
        loop {
            let (stream, addr) = match self.listener.accept() {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return, // WouldBlock, or a connection that died before accept.
            };
            let ticket = match self.pool.admit(&stream) {
                Ok((t, _evicted)) => t,
                Err(why) => {
                    let _ = self.tx.send(Accepted::Rejected(addr, why.to_string()));
                    continue;
                }
            };
            let (key, waker, tx) = (self.key.clone(), self.waker, self.tx.clone());
            let spawned = std::thread::Builder::new().name("madrun-handshake".into()).spawn(move || {
                let result = match handshake(&stream, &key, &ticket) {
                    Ok(()) => Accepted::Ok(stream, addr),
                    Err(why) => Accepted::Rejected(addr, why),
                };
                drop(ticket);
                let _ = tx.send(result);
                waker.wake();
            });
            if let Err(e) = spawned {
                let _ = self.tx.send(Accepted::Rejected(addr, format!("cannot start its handshake: {e}")));
            }
        }
    }

    /// The handshakes finished since the last call: every accepted connection, and at most one
    /// rejection per interval, which counts the others.
    pub fn finished(&mut self) -> Vec<Accepted> {
        let mut done = Vec::new();
        for a in self.rx.try_iter() {
            match a {
                Accepted::Ok(..) => done.push(a),
                Accepted::Rejected(addr, why) => {
                    if let Some(summary) = self.rejects.count(addr, &why) {
                        done.push(Accepted::Rejected(addr, summary));
                    }
                }
            }
        }
        done
    }
}

fn handshake(stream: &TcpStream, key: &JobKey, ticket: &Ticket) -> Result<(), String> {
    stream.set_nonblocking(false).map_err(|e| format!("socket setup failed: {e}"))?;
    let mut s = Timed::new(stream, stream.as_raw_fd(), Deadline::after(HANDSHAKE_TIMEOUT), Some(ticket));
    server_handshake(&mut s, key).map_err(|e| match e {
        HandshakeError::Io(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
            format!("no job handshake within {} s", HANDSHAKE_TIMEOUT.as_secs())
        }
        HandshakeError::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            "closed the connection during the job handshake (or dropped to make room)".to_string()
        }
        other => other.to_string(),
    })?;
    ticket.proven();
    let ready = stream
        .set_read_timeout(None)
        .and_then(|()| stream.set_write_timeout(None))
        .and_then(|()| stream.set_nodelay(true))
        .and_then(|()| stream.set_nonblocking(true));
    ready.map_err(|e| format!("socket setup failed: {e}"))
}

/// Where the port listens without `--pmi-bind`: the `--pmi-host` address if it is one of this
/// machine's, else the address this machine reaches every remote host from (when they agree),
/// else every interface.
fn listen_address(host: Option<&str>, remote_hosts: &[String]) -> IpAddr {
    let any = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
    if let Some(ip) =
        host.and_then(|h| h.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().ok())
    {
        return if TcpListener::bind((ip, 0)).is_ok() { ip } else { any };
    }
    let mut from: Option<IpAddr> = None;
    for h in remote_hosts {
        match (source_towards(h), from) {
            (Some(ip), None) => from = Some(ip),
            (Some(ip), Some(f)) if ip == f => {}
            _ => return any,
        }
    }
    from.filter(|ip| !ip.is_loopback()).unwrap_or(any)
}

/// The local address the kernel would send from to reach `host` (no packet is sent).
fn source_towards(host: &str) -> Option<IpAddr> {
    let target = (host.trim_start_matches('[').trim_end_matches(']'), 9).to_socket_addrs().ok()?.next()?;
    let unspecified: SocketAddr = if target.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }.parse().ok()?;
    let s = UdpSocket::bind(unspecified).ok()?;
    s.connect(target).ok()?;
    s.local_addr().ok().map(|a| a.ip())
}

/// `ADDR` or `ADDR:PORT` (port 0 when absent).
fn bind_address(s: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    let host = s.trim_start_matches('[').trim_end_matches(']');
    (host, 0)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| format!("--pmi-bind {s:?} is not an address of this machine"))
}

/// This machine's first non-loopback IPv4 address (of an interface that is up).
pub fn first_ipv4() -> Option<Ipv4Addr> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs stores a list head in our pointer; we free it below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return None;
    }
    let mut found = None;
    let mut p = list;
    while !p.is_null() && found.is_none() {
        // SAFETY: `p` is a node of the list getifaddrs returned, which is not freed yet.
        let ifa = unsafe { &*p };
        let up = ifa.ifa_flags & libc::IFF_UP as libc::c_uint != 0;
        if up && !ifa.ifa_addr.is_null() {
            // SAFETY: a non-null ifa_addr points to a sockaddr, which starts with its family.
            let family = unsafe { (*ifa.ifa_addr).sa_family };
            if i32::from(family) == libc::AF_INET {
                // SAFETY: an AF_INET address is a sockaddr_in (read unaligned: no assumption).
                let sin = unsafe { std::ptr::read_unaligned(ifa.ifa_addr.cast::<libc::sockaddr_in>()) };
                let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
                if !ip.is_loopback() && !ip.is_unspecified() {
                    found = Some(ip);
                }
            }
        }
        p = ifa.ifa_next;
    }
    // SAFETY: frees the list getifaddrs allocated; no reference into it survives.
    unsafe { libc::freeifaddrs(list) };
    found
}

/// This machine's host name.
pub fn hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into our buffer.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return None;
    }
    let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    String::from_utf8(buf[..end].to_vec()).ok().filter(|h| !h.is_empty())
}

/// `localhost`, a loopback address, or this machine's name (full or short).
pub fn is_local_host(host: &str, this_host: Option<&str>) -> bool {
    let h = host.trim().to_ascii_lowercase();
    if h == "localhost" || h.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback()) {
        return true;
    }
    let Some(me) = this_host.map(str::to_ascii_lowercase) else { return false };
    let short = |s: &str| s.split('.').next().unwrap_or("").to_string();
    h == me || (short(&h) == short(&me) && (!h.contains('.') || !me.contains('.')))
}

/// Quotes an argument for the remote shell (ssh joins its arguments into one shell command).
pub fn shell_quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-./:=,+@%".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// `LAUNCHER... HOST env VAR=VALUE... PROGRAM ARGS...` (everything after HOST shell-quoted).
pub fn remote_command(
    launcher: &str,
    host: &str,
    env: &[(String, String)],
    program: &[String],
) -> Vec<String> {
    let mut argv: Vec<String> = launcher.split_whitespace().map(str::to_string).collect();
    argv.push(host.to_string());
    argv.push("env".to_string());
    argv.extend(env.iter().map(|(k, v)| shell_quote(&format!("{k}={v}"))));
    argv.extend(program.iter().map(|a| shell_quote(a)));
    argv
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_hosts_are_recognized() {
        for h in ["localhost", "LOCALHOST", "127.0.0.1", "127.0.1.1", "::1", "vm", "vm.example.org"] {
            assert!(is_local_host(h, Some("vm")), "{h}");
        }
        assert!(is_local_host("vm", Some("vm.example.org")));
        for h in ["node2", "vm2", "10.0.0.1", "vm.other.org"] {
            assert!(!is_local_host(h, Some("vm.example.org")), "{h}");
        }
        assert!(!is_local_host("node2", None));
    }

    #[test]
    fn remote_commands_are_quoted_for_the_remote_shell() {
        let env = vec![("PMI_ID".to_string(), "3".to_string()), ("X".to_string(), "a b".to_string())];
        let argv = remote_command("ssh -x", "node2", &env, &["prog".into(), "it's".into()]);
        assert_eq!(argv, ["ssh", "-x", "node2", "env", "PMI_ID=3", "'X=a b'", "prog", "'it'\\''s'"]);
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn the_port_listens_where_the_hosts_come_from() {
        let any: IpAddr = "0.0.0.0".parse().unwrap();
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(listen_address(Some("127.0.0.1"), &[]), lo, "a --pmi-host of this machine");
        assert_eq!(listen_address(Some("192.0.2.1"), &[]), any, "not ours: every interface");
        assert_eq!(listen_address(None, &["no-such-host.invalid".into()]), any, "unresolvable");
        assert_eq!(listen_address(None, &["127.0.0.2".into()]), any, "loopback is no host's way in");
        assert_eq!(source_towards("127.0.0.1"), Some(lo));
    }

    #[test]
    fn bind_addresses_parse() {
        assert_eq!(bind_address("127.0.0.1").unwrap(), "127.0.0.1:0".parse().unwrap());
        assert_eq!(bind_address("0.0.0.0:4000").unwrap(), "0.0.0.0:4000".parse().unwrap());
        assert!(bind_address("not an address").is_err());
    }
}
