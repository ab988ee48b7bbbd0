//! The `libc` calls the udp driver needs beyond std and `drivers::ip::sys`: a datagram sent from
//! scattered pieces on a connected socket, a batch of datagrams received at once (`recvmmsg`), a
//! datagram's head peeked at and the datagram then received scattered, socket
//! buffers beyond the unprivileged limit, a timer fd, an interface's MTU.
//!
//! It owns only the timer fd it creates; every other function works on fds its caller owns.

use crate::drivers::ip::sys::{check, check_size, set_int};
use std::io::{self, IoSlice};
use std::mem::{size_of, zeroed};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Sends one datagram made of `iov` on a connected socket without blocking; `WouldBlock` when
/// the socket's buffer is full, `ConnectionRefused` when the peer's host said its port is
/// closed.
pub fn send(fd: RawFd, iov: &[IoSlice<'_>]) -> io::Result<usize> {
    // SAFETY: all-zero is a valid msghdr (no name, no control data).
    let mut msg: libc::msghdr = unsafe { zeroed() };
    // IoSlice is ABI-compatible with iovec (std guarantees it on Unix).
    msg.msg_iov = iov.as_ptr().cast_mut().cast();
    msg.msg_iovlen = iov.len() as _;
    loop {
        // SAFETY: `msg` points at `iov`, alive and readable for the call.
        let r = unsafe { libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) };
        match check_size(r) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// Datagrams received at once, at most.
pub const BATCH: usize = 32;

/// Receives up to `bufs.len()` (≤ [`BATCH`]) datagrams without blocking: fills `got[i]` with
/// the length and sender of the datagram written into `bufs[i]`, and returns how many came (0:
/// none waiting). A datagram longer than its buffer is reported with its true length (the
/// caller drops it).
pub fn recv_batch(
    fd: RawFd,
    bufs: &mut [Vec<u8>],
    got: &mut [(usize, Option<SocketAddr>)],
) -> io::Result<usize> {
    let n = bufs.len().min(BATCH).min(got.len());
    // SAFETY: all-zero is valid for these plain C structures.
    let mut iov: [libc::iovec; BATCH] = unsafe { zeroed() };
    // SAFETY: as above.
    let mut names: [libc::sockaddr_storage; BATCH] = unsafe { zeroed() };
    // SAFETY: as above.
    let mut msgs: [libc::mmsghdr; BATCH] = unsafe { zeroed() };
    for i in 0..n {
        iov[i] = libc::iovec { iov_base: bufs[i].as_mut_ptr().cast(), iov_len: bufs[i].len() };
        msgs[i].msg_hdr.msg_iov = &mut iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_name = (&mut names[i] as *mut libc::sockaddr_storage).cast();
        msgs[i].msg_hdr.msg_namelen = size_of::<libc::sockaddr_storage>() as _;
    }
    let r = loop {
        // SAFETY: `msgs[..n]` point at iovecs over our buffers and at our address slots, all
        // alive and writable for the call; the kernel writes at most that much.
        let r = unsafe {
            libc::recvmmsg(fd, msgs.as_mut_ptr(), n as _, libc::MSG_DONTWAIT, std::ptr::null_mut())
        };
        match check(r) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(0),
            r => break r? as usize,
        }
    };
    for i in 0..r {
        let truncated = msgs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
        let len = msgs[i].msg_len as usize;
        got[i] = (if truncated { usize::MAX } else { len }, from_sockaddr(&names[i]));
    }
    Ok(r)
}

/// Copies the first `head.len()` bytes of the next waiting datagram into `head`, leaving it
/// queued: its whole length and sender, or `None` when nothing waits.
pub fn peek(fd: RawFd, head: &mut [u8]) -> io::Result<Option<(usize, Option<SocketAddr>)>> {
    let mut iov = libc::iovec { iov_base: head.as_mut_ptr().cast(), iov_len: head.len() };
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut name: libc::sockaddr_storage = unsafe { zeroed() };
    // SAFETY: all-zero is a valid msghdr.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_name = (&mut name as *mut libc::sockaddr_storage).cast();
    msg.msg_namelen = size_of::<libc::sockaddr_storage>() as _;
    // MSG_TRUNC: the datagram's real length, not what fitted.
    let flags = libc::MSG_PEEK | libc::MSG_DONTWAIT | libc::MSG_TRUNC;
    loop {
        // SAFETY: `msg` points at `iov` (over `head`) and at `name`, alive and writable for
        // the call; the kernel writes at most their sizes.
        let r = unsafe { libc::recvmsg(fd, &mut msg, flags) };
        match check_size(r) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            r => return Ok(Some((r?, from_sockaddr(&name)))),
        }
    }
}

/// Receives the next waiting datagram scattered over `iov`; its whole length (more than the
/// iovecs hold: it was cut).
///
/// # Safety
/// Every entry of `iov` must be writable for its length during the call.
pub unsafe fn recv_scattered(fd: RawFd, iov: &mut [libc::iovec]) -> io::Result<usize> {
    // SAFETY: all-zero is a valid msghdr.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_iov = iov.as_mut_ptr();
    msg.msg_iovlen = iov.len() as _;
    loop {
        // SAFETY: `msg` points at `iov`, whose entries the caller guarantees writable for
        // their lengths during the call.
        let r = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT | libc::MSG_TRUNC) };
        match check_size(r) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

fn from_sockaddr(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match ss.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says this is a sockaddr_in, which sockaddr_storage can hold.
            let sin = unsafe { &*(ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
            Some(SocketAddr::new(IpAddr::V4(ip), u16::from_be(sin.sin_port)))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says this is a sockaddr_in6, which sockaddr_storage can hold.
            let sin6 = unsafe { &*(ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            Some(SocketAddr::new(IpAddr::V6(ip), u16::from_be(sin6.sin6_port)))
        }
        _ => None,
    }
}

/// Sets the socket's receive and send buffers to `bytes`, beyond `net.core.rmem_max` when
/// privileged (SO_*BUFFORCE), else as far as allowed; returns the receive buffer the kernel
/// granted.
pub fn set_buffers(fd: RawFd, bytes: usize) -> usize {
    let b = bytes.min(i32::MAX as usize / 2) as libc::c_int;
    for (force, plain) in [(libc::SO_RCVBUFFORCE, libc::SO_RCVBUF), (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF)] {
        if set_int(fd, libc::SOL_SOCKET, force, b).is_err() {
            let _ = set_int(fd, libc::SOL_SOCKET, plain, b);
        }
    }
    let mut v: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes one c_int into `v`, whose size `len` gives.
    let r = unsafe {
        libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, (&mut v as *mut libc::c_int).cast(), &mut len)
    };
    // The kernel reports twice what it accounts for payload (its bookkeeping share).
    if r < 0 { bytes } else { (v.max(0) as usize) / 2 }
}

/// A nonblocking monotonic timer fd: readable once its deadline passed.
pub struct TimerFd(OwnedFd);

impl TimerFd {
    pub fn new() -> io::Result<TimerFd> {
        // SAFETY: no memory arguments; a non-negative result is a fresh fd we own.
        let fd = check(unsafe {
            libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC)
        })?;
        // SAFETY: `fd` was just created and is owned by nobody else.
        Ok(TimerFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// Fires `after` from now (`None`: disarmed). A zero delay fires at once.
    pub fn set(&self, after: Option<Duration>) {
        let ts = |d: Duration| libc::timespec { tv_sec: d.as_secs() as _, tv_nsec: d.subsec_nanos() as _ };
        let value = match after {
            None => ts(Duration::ZERO),
            Some(d) => ts(d.max(Duration::from_nanos(1))),
        };
        let spec = libc::itimerspec { it_interval: ts(Duration::ZERO), it_value: value };
        // SAFETY: `spec` is a valid itimerspec for the call; the old value is not asked for.
        unsafe { libc::timerfd_settime(self.fd(), 0, &spec, std::ptr::null_mut()) };
    }
}

/// The MTU of the interface holding `ip` (`None`: unknown).
pub fn mtu_of(ip: IpAddr) -> Option<usize> {
    let ifs = crate::drivers::ip::sys::interface_addrs().ok()?;
    let name = &ifs.iter().find(|i| i.ip == ip)?.name;
    std::fs::read_to_string(format!("/sys/class/net/{name}/mtu")).ok()?.trim().parse().ok()
}

/// The smallest MTU among the interfaces that are up and not loopback (`None`: none).
pub fn smallest_mtu() -> Option<usize> {
    let ifs = crate::drivers::ip::sys::interface_addrs().ok()?;
    ifs.iter()
        .filter(|i| !i.loopback)
        .filter_map(|i| {
            std::fs::read_to_string(format!("/sys/class/net/{}/mtu", i.name)).ok()?.trim().parse().ok()
        })
        .min()
}
