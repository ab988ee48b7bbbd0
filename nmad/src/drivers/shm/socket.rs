//! The Unix-socket plumbing of connection setup: checking a received eventfd and telling a live
//! control socket from a closed one; writes that cannot raise SIGPIPE, passing fds (SCM_RIGHTS)
//! and the peer's credentials are `tools::unix_socket`'s.
//!
//! It owns no socket (callers pass theirs) and knows nothing of the setup messages' meaning.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;

pub(crate) use tools::unix_socket::{Conn, peer_cred, recv_with_fds, send_with_fds};

/// Our effective uid.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// Checks that `fd` is a non-blocking eventfd (writing to anything else could block or mean
/// something else).
pub(crate) fn check_eventfd(fd: &OwnedFd) -> Result<(), String> {
    let target =
        std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).map_err(|e| e.to_string())?;
    // SAFETY: F_GETFL takes no argument.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    if target.as_os_str() != "anon_inode:[eventfd]" || flags < 0 || flags & libc::O_NONBLOCK == 0 {
        return Err(format!("the wake-up descriptor is not a non-blocking eventfd ({})", target.display()));
    }
    Ok(())
}

/// What a readable (or hung-up) control socket means: `None` if nothing after all, otherwise why
/// the link is over. After setup the peer never writes on it; it only closes it.
pub(crate) fn closed_reason(s: &UnixStream) -> Option<String> {
    let mut b = 0u8;
    // SAFETY: peeks at most one byte into `b`.
    let n = unsafe {
        libc::recv(s.as_raw_fd(), (&mut b as *mut u8).cast(), 1, libc::MSG_DONTWAIT | libc::MSG_PEEK)
    };
    match n {
        0 => Some("closed its connection (it exited, crashed or shut down)".into()),
        n if n > 0 => Some("sent unexpected bytes on its control socket".into()),
        _ => {
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => None,
                _ => Some(format!("control socket error: {e}")),
            }
        }
    }
}

/// Writes one event to an eventfd, ignoring a full counter (the reader is signalled already).
pub(crate) fn signal(fd: &OwnedFd) {
    let _ = pioman::eventfd::notify(fd.as_raw_fd());
}

/// Empties an eventfd (non-blocking).
pub(crate) fn drain(fd: &OwnedFd) {
    let mut v = 0u64;
    // SAFETY: reads 8 bytes into a local u64 from a non-blocking eventfd.
    unsafe { libc::read(fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
}

/// A new non-blocking eventfd.
pub(crate) fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: eventfd has no memory preconditions; a non-negative return is our new fd.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh fd owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn only_non_blocking_eventfds_pass() {
        assert!(check_eventfd(&eventfd().unwrap()).is_ok());
        let mut p = [0; 2];
        // SAFETY: `p` has room for the two fds pipe returns; we own them.
        assert_eq!(unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_NONBLOCK) }, 0);
        // SAFETY: fresh fds owned by nobody else.
        let (r, w) = unsafe { (OwnedFd::from_raw_fd(p[0]), OwnedFd::from_raw_fd(p[1])) };
        assert!(check_eventfd(&w).is_err());
        drop(r);
        // SAFETY: a blocking eventfd, ours.
        let blocking = unsafe { OwnedFd::from_raw_fd(libc::eventfd(0, libc::EFD_CLOEXEC)) };
        assert!(check_eventfd(&blocking).is_err());
    }

    #[test]
    fn fds_travel_and_a_closed_socket_is_told_apart() {
        let (a, b) = UnixStream::pair().unwrap();
        assert_eq!(closed_reason(&b), None, "open and silent");
        let e = eventfd().unwrap();
        send_with_fds(&a, b"12345678", &[e.as_raw_fd()]).unwrap();
        let mut buf = [0u8; 8];
        let fds = recv_with_fds(&b, &mut buf, 1).unwrap();
        assert_eq!(&buf, b"12345678");
        signal(&fds[0]);
        let mut v = 0u64;
        // SAFETY: reads 8 bytes into `v` from our eventfd.
        assert_eq!(unsafe { libc::read(e.as_raw_fd(), (&mut v as *mut u64).cast(), 8) }, 8, "same eventfd");
        send_with_fds(&a, b"12345678", &[e.as_raw_fd(), e.as_raw_fd()]).unwrap();
        assert!(recv_with_fds(&b, &mut buf, 1).is_err(), "too many fds");
        Conn(&a).write_all(b"x").unwrap();
        assert!(closed_reason(&b).unwrap().contains("unexpected"));
        drop(a);
        let (a, b) = UnixStream::pair().unwrap();
        drop(a);
        assert!(closed_reason(&b).unwrap().contains("closed"));
    }
}
