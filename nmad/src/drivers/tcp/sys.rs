//! Thin `libc` wrappers only the tcp driver needs (those every IP driver needs are in
//! `drivers::ip::sys`): vectored send and receive (without SIGPIPE), keepalive and timeouts,
//! connecting from a chosen local address.
//!
//! It owns no descriptor and keeps no state: every function works on fds its caller owns.

pub use crate::drivers::ip::sys::set_buffers;
use crate::drivers::ip::sys::{check, check_size, set_int, sockaddr};
use std::io;
use std::mem::zeroed;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::fd::{FromRawFd, RawFd};
use std::time::Duration;

/// Most segments one `sendmsg`/`readv` takes (Linux's `IOV_MAX`).
pub const IOV_MAX: usize = 1024;

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

/// Bytes the peer acknowledged on this connection (`TCP_INFO`'s `tcpi_bytes_acked`).
pub fn bytes_acked(fd: RawFd) -> Option<u64> {
    // SAFETY: tcp_info is plain data; zeroes are a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `info`, which outlives the call.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    // A kernel older than the field (4.2) returns a shorter structure.
    let needed = std::mem::offset_of!(libc::tcp_info, tcpi_bytes_acked) + 8;
    (r == 0 && len as usize >= needed).then_some(info.tcpi_bytes_acked)
}

/// Stops both directions: the peer sees end of stream, local reads return 0 once what arrived
/// was read.
pub fn shutdown_both(fd: RawFd) {
    // SAFETY: no memory arguments; errors (already shut down) do not matter.
    unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
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
