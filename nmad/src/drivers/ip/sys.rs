//! Thin `libc` wrappers every IP driver (tcp, udp) needs beyond std: epoll, eventfd, polling one
//! fd, socket options, socket addresses, the interfaces' addresses.
//!
//! It owns only the epoll and eventfd descriptors it creates; every other function works on fds
//! its caller owns, and keeps no state.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

pub fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok(r) }
}

pub fn check_size(r: libc::ssize_t) -> io::Result<usize> {
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

pub fn set_int(fd: RawFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
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

/// `addr` as a C socket address and its length.
pub fn sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
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
