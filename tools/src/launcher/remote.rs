//! Remote ranks (`-hosts`): which hosts are this machine, the command line that starts a rank
//! through the launcher command (`ssh` by default), and the TCP PMI port they connect back to.
//! Every TCP connection must pass the job-key handshake ([`crate::secret::server_handshake`]),
//! run in a short-lived thread per connection with 5 s timeouts; the authenticated stream is
//! then handed to the event loop over a channel (with a wake-up byte on its self-pipe).

use super::signals::Waker;
use crate::secret::{HandshakeError, JobKey, server_handshake};
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

/// How long a connecting peer has to complete the handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Handshakes in progress beyond which new connections are refused at once.
const MAX_PENDING: usize = 64;

/// The result of one connection's handshake.
#[derive(Debug)]
pub enum Accepted {
    Ok(TcpStream, SocketAddr),
    Rejected(SocketAddr, String),
}

/// The listening PMI port and its handshake threads.
#[derive(Debug)]
pub struct PmiPort {
    listener: TcpListener,
    /// `host:port` as remote ranks get it in PMI_PORT.
    pub advertised: String,
    key: JobKey,
    waker: Waker,
    tx: Sender<Accepted>,
    rx: Receiver<Accepted>,
    pending: usize,
}

impl PmiPort {
    /// Listens on `bind` (default 0.0.0.0, any port) and advertises `host` (default: the bind
    /// address if specific, else this machine's first non-loopback IPv4 address).
    pub fn open(
        bind: Option<&str>,
        host: Option<&str>,
        key: JobKey,
        waker: Waker,
    ) -> Result<PmiPort, String> {
        let addr = bind_address(bind.unwrap_or("0.0.0.0"))?;
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
        Ok(PmiPort { listener, advertised, key, waker, tx, rx, pending: 0 })
    }

    pub fn fd(&self) -> RawFd {
        self.listener.as_raw_fd()
    }

    /// Accepts every waiting connection and starts its handshake.
    pub fn accept_all(&mut self) {
        loop {
            let (stream, addr) = match self.listener.accept() {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return, // WouldBlock, or a connection that died before accept.
            };
            if self.pending >= MAX_PENDING {
                log::warn!("rejected a connection from {addr}: too many handshakes in progress");
                continue;
            }
            let (key, waker, tx) = (self.key.clone(), self.waker, self.tx.clone());
            let spawned = std::thread::Builder::new().name("madrun-handshake".into()).spawn(move || {
                let result = match handshake(&stream, &key) {
                    Ok(()) => Accepted::Ok(stream, addr),
                    Err(why) => Accepted::Rejected(addr, why),
                };
                let _ = tx.send(result);
                waker.wake();
            });
            match spawned {
                Ok(_) => self.pending += 1,
                Err(e) => {
                    log::warn!("rejected a connection from {addr}: cannot start its handshake: {e}")
                }
            }
        }
    }

    /// The handshakes finished since the last call.
    pub fn finished(&mut self) -> Vec<Accepted> {
        let done: Vec<Accepted> = self.rx.try_iter().collect();
        self.pending -= done.len().min(self.pending);
        done
    }
}

fn handshake(stream: &TcpStream, key: &JobKey) -> Result<(), String> {
    let setup = stream
        .set_nonblocking(false)
        .and_then(|()| stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT)))
        .and_then(|()| stream.set_write_timeout(Some(HANDSHAKE_TIMEOUT)));
    setup.map_err(|e| format!("socket setup failed: {e}"))?;
    let mut s = stream;
    server_handshake(&mut s, key).map_err(|e| match e {
        HandshakeError::Io(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
            format!("no job handshake within {} s", HANDSHAKE_TIMEOUT.as_secs())
        }
        HandshakeError::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            "closed the connection during the job handshake".to_string()
        }
        other => other.to_string(),
    })?;
    let ready = stream
        .set_read_timeout(None)
        .and_then(|()| stream.set_write_timeout(None))
        .and_then(|()| stream.set_nodelay(true))
        .and_then(|()| stream.set_nonblocking(true));
    ready.map_err(|e| format!("socket setup failed: {e}"))
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
    fn bind_addresses_parse() {
        assert_eq!(bind_address("127.0.0.1").unwrap(), "127.0.0.1:0".parse().unwrap());
        assert_eq!(bind_address("0.0.0.0:4000").unwrap(), "0.0.0.0:4000".parse().unwrap());
        assert!(bind_address("not an address").is_err());
    }
}
