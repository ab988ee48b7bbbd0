//! Thin `libc` wrappers the tcp driver needs beyond std: epoll, eventfd, vectored send and receive
//! (without SIGPIPE), socket options, connecting from a chosen local address, interface addresses.
//!
//! It owns only the epoll and eventfd descriptors it creates; every other function works on fds
//! its caller owns, and keeps no state.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Most segments one `sendmsg`/`readv` takes (Linux's `IOV_MAX`).
pub const IOV_MAX: usize = 1024;

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok(r) }
}

fn check_size(r: libc::ssize_t) -> io::Result<usize> {
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok(r as usize) }
}

/// A level-triggered epoll instance; each registered fd carries a `u64` token.
pub struct Epoll(OwnedFd);

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: no memory arguments; a non-negative result is a fresh fd we own.
        let fd = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: `fd` was just created and is owned by nobody else.
        Ok(Epoll(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, token: u64, writable: bool) -> io::Result<()> {
        let mut events = libc::EPOLLIN | libc::EPOLLRDHUP;
        if writable {
            events |= libc::EPOLLOUT;
        }
        let mut ev = libc::epoll_event { events: events as u32, u64: token };
        // SAFETY: `ev` is a valid epoll_event for the duration of the call.
        check(unsafe { libc::epoll_ctl(self.fd(), op, fd, &mut ev) }).map(drop)
    }

    /// Watches `fd` for input (and for room to write when `writable`).
    pub fn add(&self, fd: RawFd, token: u64, writable: bool) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, token, writable)
    }

    pub fn modify(&self, fd: RawFd, token: u64, writable: bool) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, token, writable)
    }

    pub fn delete(&self, fd: RawFd) {
        // SAFETY: EPOLL_CTL_DEL ignores the event pointer; errors (already gone) do not matter.
        unsafe { libc::epoll_ctl(self.fd(), libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) };
    }

    /// The ready fds, without waiting: `(token, events)` pairs written into `out`.
    pub fn ready_now(&self, out: &mut [libc::epoll_event]) -> io::Result<usize> {
        // SAFETY: the kernel writes at most `out.len()` events into `out`.
        let n = unsafe { libc::epoll_wait(self.fd(), out.as_mut_ptr(), out.len() as libc::c_int, 0) };
        match check(n) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
            r => r.map(|n| n as usize),
        }
    }

    /// Whether some watched fd is ready (the epoll fd itself is readable).
    pub fn has_events(&self) -> bool {
        readable(self.fd(), 0)
    }
}

/// Whether `fd` becomes readable within `timeout_ms` (-1: forever).
pub fn readable(fd: RawFd, timeout_ms: libc::c_int) -> bool {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut p, 1, timeout_ms) > 0 }
}

/// A nonblocking eventfd used as a doorbell.
pub struct EventFd(OwnedFd);

impl EventFd {
    pub fn new() -> io::Result<EventFd> {
        // SAFETY: no memory arguments; a non-negative result is a fresh fd we own.
        let fd = check(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
        // SAFETY: `fd` was just created and is owned by nobody else.
        Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    pub fn ring(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a local u64; a full counter (EAGAIN) still leaves it readable.
        unsafe { libc::write(self.fd(), (&one as *const u64).cast(), 8) };
    }

    pub fn clear(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads at most 8 bytes into a local u64 (EAGAIN when already clear).
        unsafe { libc::read(self.fd(), (&mut v as *mut u64).cast(), 8) };
    }
}

/// Sends from `iov` without blocking and without SIGPIPE; `WouldBlock` when the socket is full.
///
/// # Safety
/// Every iovec must describe memory valid for reads.
pub unsafe fn send_vectored(fd: RawFd, iov: &[libc::iovec]) -> io::Result<usize> {
    // SAFETY: all-zero is a valid msghdr (no name, no control data).
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_iov = iov.as_ptr().cast_mut();
    msg.msg_iovlen = iov.len().min(IOV_MAX) as _;
    loop {
        // SAFETY: `msg` points at `iov`, whose memory is readable (caller's contract).
        let r = unsafe { libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) };
        match check_size(r) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// Reads into `iov` (nonblocking socket): `Ok(0)` is end of stream, `WouldBlock` means no data.
///
/// # Safety
/// Every iovec must describe memory valid for writes.
pub unsafe fn recv_vectored(fd: RawFd, iov: &[libc::iovec]) -> io::Result<usize> {
    loop {
        // SAFETY: the iovecs describe writable memory (caller's contract).
        let r = unsafe { libc::readv(fd, iov.as_ptr(), iov.len().min(IOV_MAX) as libc::c_int) };
        match check_size(r) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

fn set_int(fd: RawFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: passes a pointer to a local c_int and its size.
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as _,
        )
    })
    .map(drop)
}

/// Sets SO_SNDBUF and SO_RCVBUF (disables the kernel's autotuning of that socket).
pub fn set_buffers(fd: RawFd, bytes: usize) -> io::Result<()> {
    let b = bytes.min(i32::MAX as usize) as libc::c_int;
    set_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, b)?;
    set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, b)
}

/// No Nagle delay; keepalive probes after `idle` of silence; unacknowledged data or unanswered
/// probes for `dead_after` kill the connection, so a vanished host is noticed.
pub fn tune(fd: RawFd, idle: Duration, dead_after: Duration) -> io::Result<()> {
    let secs = |d: Duration| d.as_secs().clamp(1, 3600) as libc::c_int;
    set_int(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1)?;
    set_int(fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1)?;
    set_int(fd, libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, secs(idle))?;
    set_int(fd, libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, 1)?;
    set_int(fd, libc::IPPROTO_TCP, libc::TCP_KEEPCNT, secs(dead_after))?;
    set_int(fd, libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT, dead_after.as_millis().min(i32::MAX as u128) as _)
}

/// Bytes written to the socket that the peer has not acknowledged yet (unsent or unacknowledged;
/// `SIOCOUTQ`); 0 when the kernel cannot say.
pub fn unacknowledged(fd: RawFd) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: SIOCOUTQ (TIOCOUTQ on Linux) writes one int into `n`, which outlives the call.
    let r = unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut n as *mut libc::c_int) };
    if r < 0 { 0 } else { n.max(0) as usize }
}

/// Stops both directions: the peer sees end of stream, local reads return 0 once what arrived
/// was read.
pub fn shutdown_both(fd: RawFd) {
    // SAFETY: no memory arguments; errors (already shut down) do not matter.
    unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
}

fn sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut ss: libc::sockaddr_storage = unsafe { zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as _,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from(*a.ip()).to_be() },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin) };
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as _,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr { s6_addr: a.ip().octets() },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin6) };
            size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// Connects to `remote` from `local` (any port) if given, within `timeout`; `buffers` sets the
/// socket buffers before the SYN so the window scale matches. Returns a blocking stream.
pub fn connect_from(
    local: Option<IpAddr>,
    remote: SocketAddr,
    timeout: Duration,
    buffers: Option<usize>,
) -> io::Result<TcpStream> {
    let family = if remote.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    let flags = libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
    // SAFETY: no memory arguments; a non-negative result is a fresh fd we own.
    let fd = check(unsafe { libc::socket(family, flags, 0) })?;
    // SAFETY: `fd` was just created; the stream closes it on every path below.
    let stream = unsafe { TcpStream::from_raw_fd(fd) };
    if let Some(b) = buffers {
        set_buffers(fd, b)?;
    }
    if let Some(ip) = local {
        let (sa, len) = sockaddr(SocketAddr::new(ip, 0));
        // SAFETY: `sa` holds a valid address of `len` bytes.
        check(unsafe { libc::bind(fd, (&sa as *const libc::sockaddr_storage).cast(), len) })?;
    }
    let (sa, len) = sockaddr(remote);
    // SAFETY: `sa` holds a valid address of `len` bytes.
    let r = unsafe { libc::connect(fd, (&sa as *const libc::sockaddr_storage).cast(), len) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
        let mut p = libc::pollfd { fd, events: libc::POLLOUT, revents: 0 };
        let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut p, 1, ms) } <= 0 {
            return Err(io::Error::new(io::ErrorKind::TimedOut, format!("connecting to {remote} timed out")));
        }
        if let Some(e) = stream.take_error()? {
            return Err(e);
        }
    }
    stream.set_nonblocking(false)?;
    Ok(stream)
}

/// An address of a network interface that is up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IfAddr {
    pub name: String,
    pub ip: IpAddr,
    pub loopback: bool,
}

/// The addresses of the interfaces that are up (IPv4 and IPv6).
pub fn interface_addrs() -> io::Result<Vec<IfAddr>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list we free below.
    check(unsafe { libc::getifaddrs(&mut head) })?;
    let mut out = Vec::new();
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, alive until freeifaddrs.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        let up = ifa.ifa_flags & libc::IFF_UP as libc::c_uint != 0;
        if ifa.ifa_addr.is_null() || !up {
            continue;
        }
        // SAFETY: ifa_addr is non-null and points at a sockaddr whose family field is valid.
        let ip = match unsafe { (*ifa.ifa_addr).sa_family } as libc::c_int {
            libc::AF_INET => {
                // SAFETY: the family says this is a sockaddr_in.
                let sin = unsafe { &*ifa.ifa_addr.cast::<libc::sockaddr_in>() };
                IpAddr::V4(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)))
            }
            libc::AF_INET6 => {
                // SAFETY: the family says this is a sockaddr_in6.
                let sin6 = unsafe { &*ifa.ifa_addr.cast::<libc::sockaddr_in6>() };
                IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr))
            }
            _ => continue,
        };
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) }.to_string_lossy().into_owned();
        out.push(IfAddr { name, ip, loopback: ifa.ifa_flags & libc::IFF_LOOPBACK as libc::c_uint != 0 });
    }
    // SAFETY: `head` came from getifaddrs and is freed once; no reference into it survives.
    unsafe { libc::freeifaddrs(head) };
    Ok(out)
}
