//! The `libc` calls the udp driver needs beyond std and `drivers::ip::sys`: a datagram sent from
//! scattered pieces on a connected socket (or several, cut by the kernel: UDP GSO), a batch of datagrams received at once (`recvmmsg`), a
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

/// `UDP_SEGMENT` (linux/udp.h): a send's payload is cut into datagrams of this many bytes.
const UDP_SEGMENT: libc::c_int = 103;

/// Sends the bytes of `iov` as datagrams of `segment` bytes each (the last may be shorter) in
/// one call: the kernel cuts them late (UDP GSO), so a path of small datagrams costs one trip
/// through the stack per call, not per datagram. Errors as [`send`]'s; `InvalidInput` or
/// `Unsupported` where the kernel cannot.
pub fn send_segmented(fd: RawFd, iov: &[IoSlice<'_>], segment: u16) -> io::Result<usize> {
    // Room for one cmsg carrying a u16, aligned as cmsghdr wants.
    let mut control = [0u64; 4];
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(size_of::<u16>() as u32) } as usize;
    debug_assert!(space <= size_of::<[u64; 4]>());
    // SAFETY: all-zero is a valid msghdr.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_iov = iov.as_ptr().cast_mut().cast();
    msg.msg_iovlen = iov.len() as _;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: `msg` has a control buffer of `space` bytes, enough for one cmsg holding a u16
    // (checked above), so CMSG_FIRSTHDR is non-null and its data has room for the u16.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_UDP;
        (*c).cmsg_type = UDP_SEGMENT;
        (*c).cmsg_len = libc::CMSG_LEN(size_of::<u16>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), segment);
    }
    loop {
        // SAFETY: `msg` points at `iov` and `control`, alive and readable for the call.
        let r = unsafe { libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) };
        match check_size(r) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// Datagrams received at once, at most.
pub const BATCH: usize = 32;

/// What one receive of a batch brought.
#[derive(Clone, Copy, Debug, Default)]
pub struct Got {
    /// Its length (`usize::MAX`: longer than its buffer).
    pub len: usize,
    pub from: Option<SocketAddr>,
    /// Datagrams of this many bytes coalesced by the kernel (UDP GRO; the last may be
    /// shorter); 0: one datagram.
    pub segment: usize,
}

/// `UDP_GRO` (linux/udp.h): the kernel may hand over runs of datagrams of one size at once.
const UDP_GRO: libc::c_int = 104;

/// Lets the kernel coalesce runs of datagrams of one size from one sender (UDP GRO; a run the
/// sender's kernel did not cut yet stays whole). Whether the kernel took it.
pub fn enable_gro(fd: RawFd) -> bool {
    set_int(fd, libc::SOL_UDP, UDP_GRO, 1).is_ok()
}

/// Receives up to `bufs.len()` (≤ [`BATCH`]) datagrams without blocking: fills `got[i]` with
/// the length, sender and coalescing of what was written into `bufs[i]`, and returns how many
/// came (0: none waiting). A datagram longer than its buffer is reported with length
/// `usize::MAX` (the caller drops it).
pub fn recv_batch(fd: RawFd, bufs: &mut [Vec<u8>], got: &mut [Got]) -> io::Result<usize> {
    let n = bufs.len().min(BATCH).min(got.len());
    // SAFETY: all-zero is valid for these plain C structures.
    let mut iov: [libc::iovec; BATCH] = unsafe { zeroed() };
    // SAFETY: as above.
    let mut names: [libc::sockaddr_storage; BATCH] = unsafe { zeroed() };
    // SAFETY: as above.
    let mut msgs: [libc::mmsghdr; BATCH] = unsafe { zeroed() };
    // Room for one cmsg holding an int per message (u64s: aligned as cmsghdr wants).
    let mut control = [[0u64; 4]; BATCH];
    for i in 0..n {
        iov[i] = libc::iovec { iov_base: bufs[i].as_mut_ptr().cast(), iov_len: bufs[i].len() };
        let h = &mut msgs[i].msg_hdr;
        h.msg_iov = &mut iov[i];
        h.msg_iovlen = 1;
        h.msg_name = (&mut names[i] as *mut libc::sockaddr_storage).cast();
        h.msg_namelen = size_of::<libc::sockaddr_storage>() as _;
        h.msg_control = control[i].as_mut_ptr().cast();
        h.msg_controllen = size_of::<[u64; 4]>() as _;
    }
    let r = loop {
        // SAFETY: `msgs[..n]` point at iovecs over our buffers, at our address slots and at
        // our control buffers, all alive and writable for the call; the kernel writes at most
        // their sizes.
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
        let h = &msgs[i].msg_hdr;
        let truncated = h.msg_flags & libc::MSG_TRUNC != 0;
        let len = msgs[i].msg_len as usize;
        got[i] = Got {
            len: if truncated { usize::MAX } else { len },
            from: from_sockaddr(&names[i]),
            segment: gro_segment(h),
        };
    }
    Ok(r)
}

/// The segment size a `UDP_GRO` control message of `h` gives (0: none).
fn gro_segment(h: &libc::msghdr) -> usize {
    if h.msg_controllen == 0 || h.msg_flags & libc::MSG_CTRUNC != 0 {
        return 0;
    }
    // SAFETY: `h` was filled by recvmmsg: its control buffer holds `msg_controllen` bytes of
    // well-formed cmsgs, which CMSG_FIRSTHDR/CMSG_NXTHDR walk within.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == UDP_GRO {
                let v = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>());
                return v.max(0) as usize;
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    0
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
