//! Unix-socket plumbing shared by the processes' local exchanges (nmad's shm driver setup,
//! madmpi's shared windows): writes that cannot raise SIGPIPE (the library may live in a C
//! program that did not ignore it), passing fds (SCM_RIGHTS) and the peer's kernel-checked
//! credentials.
//!
//! It owns no socket (callers pass theirs) and knows nothing of the messages' meaning.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// A stream whose writes never raise SIGPIPE (nmad may live in a C program that did not ignore
/// it), for the handshake.
pub struct Conn<'a>(pub &'a UnixStream);

impl Read for Conn<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&mut &*self.0).read(buf)
    }
}

impl Write for Conn<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            // SAFETY: sends at most `buf.len()` bytes from `buf` on a socket we borrow.
            let n =
                unsafe { libc::send(self.0.as_raw_fd(), buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Sends `data` (one message, small) with `fds` attached.
pub fn send_with_fds(s: &UnixStream, data: &[u8], fds: &[RawFd]) -> io::Result<()> {
    let fd_bytes = std::mem::size_of_val(fds) as u32;
    // SAFETY: CMSG_SPACE is arithmetic.
    let space = unsafe { libc::CMSG_SPACE(fd_bytes) } as usize;
    let mut control = vec![0u64; space.div_ceil(8)];
    let mut iov = libc::iovec { iov_base: data.as_ptr() as *mut _, iov_len: data.len() };
    // SAFETY: an all-zero msghdr is valid (no name, no buffers) until we fill it.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: `msg` describes a control buffer of `space` bytes, room for one header with
    // `fds.len()` descriptors (CMSG_SPACE), so CMSG_FIRSTHDR is non-null and CMSG_DATA has room.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(fd_bytes) as _;
        std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(c).cast(), fds.len());
    }
    // SAFETY: `msg` points at live buffers for the duration of the call.
    let n = unsafe { libc::sendmsg(s.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Conn(s).write_all(&data[n as usize..])
}

/// Receives exactly `buf.len()` bytes and the fds attached to them; an error unless exactly
/// `want` fds came (extra ones are closed).
pub fn recv_with_fds(s: &UnixStream, buf: &mut [u8], want: usize) -> io::Result<Vec<OwnedFd>> {
    // Room for more fds than expected, so that a peer sending too many is detected, not truncated.
    let fd_bytes = (8 * std::mem::size_of::<RawFd>()) as u32;
    // SAFETY: CMSG_SPACE is arithmetic.
    let space = unsafe { libc::CMSG_SPACE(fd_bytes) } as usize;
    let mut control = vec![0u64; space.div_ceil(8)];
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // SAFETY: as in send_with_fds.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    let n = loop {
        // SAFETY: `msg` points at live buffers for the duration of the call.
        let n = unsafe { libc::recvmsg(s.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n >= 0 {
            break n as usize;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    };
    let mut fds = Vec::new();
    // SAFETY: the kernel filled `msg.msg_control` with well-formed headers; we walk them with the
    // CMSG macros and read each SCM_RIGHTS payload as the fds it carries (each now ours).
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c);
                let count = ((*c).cmsg_len as usize - (data as usize - c as usize)) / size_of::<RawFd>();
                for i in 0..count {
                    let fd = std::ptr::read_unaligned(data.cast::<RawFd>().add(i));
                    fds.push(OwnedFd::from_raw_fd(fd));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    if n == 0 {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the peer closed the connection"));
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 || fds.len() != want {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("expected {want} file descriptors, got {}", fds.len()),
        ));
    }
    (&mut &*s).read_exact(&mut buf[n..])?;
    Ok(fds)
}

/// The peer's pid (as seen in our pid namespace, 0 if invisible) and uid, from the kernel.
pub fn peer_cred(s: &UnixStream) -> io::Result<(u32, u32)> {
    let mut c = libc::ucred { pid: 0, uid: 0, gid: 0 };
    let mut len = size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `c` is a ucred buffer of `len` bytes.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut c as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((c.pid.max(0) as u32, c.uid))
}
