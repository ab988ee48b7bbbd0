//! A stranger on the host: finds a process's listening sockets (TCP and abstract Unix ones, from
//! `/proc`) and holds idle connections on them — half silent, half dribbling one byte every
//! 3 s — re-opening each one the listener drops, until stopped.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr as UnixAddr, UnixStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A listening socket to flood.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Tcp(SocketAddr),
    /// An abstract Unix socket (name without the leading `@`).
    Unix(String),
}

/// Socket inodes of `pid`'s open descriptors.
fn socket_inodes(pid: u32) -> Vec<u64> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return Vec::new() };
    dir.filter_map(|e| {
        let link = std::fs::read_link(e.ok()?.path()).ok()?;
        let s = link.to_str()?;
        s.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
    })
    .collect()
}

/// `0100007F:1F90` (or the 32-hex-digit IPv6 form) from `/proc/net/tcp*`.
fn parse_hex_addr(s: &str) -> Option<SocketAddr> {
    let (ip, port) = s.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let ip = match ip.len() {
        8 => IpAddr::V4(Ipv4Addr::from(u32::from_str_radix(ip, 16).ok()?.swap_bytes())),
        32 => {
            let mut b = [0u8; 16];
            for (i, w) in b.chunks_mut(4).enumerate() {
                let word = u32::from_str_radix(&ip[i * 8..i * 8 + 8], 16).ok()?.swap_bytes();
                w.copy_from_slice(&word.to_be_bytes());
            }
            IpAddr::V6(Ipv6Addr::from(b))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// The sockets `pid` listens on (as seen from its network namespace); a TCP socket bound to
/// every interface is reached through loopback.
pub fn listening(pid: u32) -> Vec<Target> {
    let inodes = socket_inodes(pid);
    let mut found = Vec::new();
    for file in ["tcp", "tcp6"] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{file}")) else { continue };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 10 || f[3] != "0A" || !f[9].parse().is_ok_and(|i: u64| inodes.contains(&i)) {
                continue;
            }
            if let Some(mut a) = parse_hex_addr(f[1]) {
                if a.ip().is_unspecified() {
                    a.set_ip(if a.is_ipv4() {
                        Ipv4Addr::LOCALHOST.into()
                    } else {
                        Ipv6Addr::LOCALHOST.into()
                    });
                }
                found.push(Target::Tcp(a));
            }
        }
    }
    if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/unix")) {
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // Num RefCount Protocol Flags Type St Inode Path; Flags 00010000 = listening.
            if f.len() == 8
                && f[3] == "00010000"
                && f[6].parse().is_ok_and(|i: u64| inodes.contains(&i))
                && let Some(name) = f[7].strip_prefix('@')
            {
                found.push(Target::Unix(name.to_string()));
            }
        }
    }
    found
}

/// The bound address of a TCP socket `pid` listens on (before the loopback substitution).
pub fn tcp_bound(pid: u32) -> Vec<SocketAddr> {
    let inodes = socket_inodes(pid);
    let text = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            (f.len() >= 10 && f[3] == "0A" && f[9].parse().is_ok_and(|i: u64| inodes.contains(&i)))
                .then(|| parse_hex_addr(f[1]))
                .flatten()
        })
        .collect()
}

enum Conn {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Conn {
    fn open(t: &Target) -> Option<Conn> {
        match t {
            Target::Tcp(a) => TcpStream::connect_timeout(a, Duration::from_secs(1)).ok().map(Conn::Tcp),
            Target::Unix(n) => UnixStream::connect_addr(&UnixAddr::from_abstract_name(n.as_bytes()).ok()?)
                .ok()
                .map(Conn::Unix),
        }
    }

    fn fd(&self) -> RawFd {
        match self {
            Conn::Tcp(s) => s.as_raw_fd(),
            Conn::Unix(s) => s.as_raw_fd(),
        }
    }

    /// One byte of a plausible handshake start, without SIGPIPE.
    fn dribble(&self, i: usize) -> bool {
        let b = [b"PM2JOB01"[i % 8]];
        // SAFETY: sends one byte from a local array on a socket we own.
        unsafe { libc::send(self.fd(), b.as_ptr().cast(), 1, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) == 1 }
    }

    /// Whether the listener closed (or reset) the connection; never blocks.
    fn dropped(&self) -> bool {
        let mut b = [0u8; 64];
        // SAFETY: reads at most 64 bytes into a local buffer.
        let n = unsafe { libc::recv(self.fd(), b.as_mut_ptr().cast(), b.len(), libc::MSG_DONTWAIT) };
        n == 0 || (n < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::WouldBlock)
    }
}

struct Slot {
    conn: Option<Conn>,
    dribbler: bool,
    sent: usize,
    next_byte: Instant,
}

/// Idle connections held on targets until [`Flood::stop`].
pub struct Flood {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<u64>>,
}

impl Flood {
    /// Holds `per_target` connections on each target (one thread per target).
    pub fn start(targets: &[Target], per_target: usize) -> Flood {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = targets
            .iter()
            .cloned()
            .map(|t| {
                let stop = stop.clone();
                std::thread::spawn(move || hold(&t, per_target, &stop))
            })
            .collect();
        Flood { stop, threads }
    }

    /// Stops; returns how many connections were opened in all (more than held: re-opened ones).
    pub fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.threads.into_iter().map(|t| t.join().unwrap_or(0)).sum()
    }
}

fn hold(t: &Target, n: usize, stop: &AtomicBool) -> u64 {
    let mut slots: Vec<Slot> = (0..n)
        .map(|i| Slot { conn: None, dribbler: i % 2 == 1, sent: 0, next_byte: Instant::now() })
        .collect();
    let mut opened = 0;
    while !stop.load(Ordering::Relaxed) {
        for s in &mut slots {
            if s.conn.as_ref().is_some_and(Conn::dropped) {
                s.conn = None;
            }
            if s.conn.is_none() {
                s.conn = Conn::open(t);
                s.conn.is_some().then(|| opened += 1);
                s.next_byte = Instant::now() + Duration::from_secs(3);
            }
            if let Some(c) = &s.conn
                && s.dribbler
                && Instant::now() >= s.next_byte
            {
                if c.dribble(s.sent) {
                    s.sent += 1;
                } else {
                    s.conn = None;
                }
                s.next_byte += Duration::from_secs(3);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    opened
}
