//! Passing a shared window's memfd from the member that created it to the other members on its
//! node: over a Unix socket in the abstract namespace (no file to clean up after a crash), with
//! SCM_RIGHTS, as nmad's shm driver passes its segments (its protocol is its own; this is a
//! separate, one-message exchange).
//!
//! The creator binds its socket before the members exchange their descriptions, so the name is
//! bound when anyone connects. It serves only the processes it expects: the kernel-checked
//! credentials of each connection must name one of the members' pids and our uid.
//!
//! Owns the socket and the fd transfer; it must not know what the fd maps.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// How long the creator waits for the members to connect (they do right after the exchange).
const ACCEPT_TIMEOUT: Duration = Duration::from_secs(60);

/// The abstract socket name of the creator `pid`'s `nonce`-th shared segment.
fn name(pid: u32, nonce: u64) -> String {
    format!("madmpi-win.{pid}.{nonce}")
}

/// A bound socket the creator serves its fd on.
pub(crate) struct Server {
    listener: UnixListener,
    /// What the members connect to, with this process's pid.
    pub(crate) nonce: u64,
}

impl Server {
    /// Binds a socket under a name no other window of this process uses.
    pub(crate) fn bind() -> io::Result<Server> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nonce = NEXT.fetch_add(1, Relaxed);
        let addr = SocketAddr::from_abstract_name(name(std::process::id(), nonce))?;
        let listener = UnixListener::bind_addr(&addr)?;
        set_timeout(listener.as_raw_fd(), ACCEPT_TIMEOUT)?;
        Ok(Server { listener, nonce })
    }

    /// Sends `fd` to each process of `pids` once, as each connects; an error if one does not
    /// connect in time or a stranger does.
    pub(crate) fn serve(&self, fd: &OwnedFd, pids: &[u32]) -> io::Result<()> {
        // A multiset: ranks may share a process (threads as ranks, in tests).
        let mut waiting: Vec<u32> = pids.to_vec();
        // SAFETY: getuid cannot fail and reads no memory.
        let uid = unsafe { libc::getuid() };
        while !waiting.is_empty() {
            let (s, _) = self.listener.accept()?;
            let (pid, peer_uid) = peer_cred(&s)?;
            let Some(i) = waiting.iter().position(|&p| p == pid).filter(|_| peer_uid == uid) else {
                log::warn!("window segment: refused a connection from pid {pid} uid {peer_uid}");
                continue;
            };
            waiting.swap_remove(i);
            send_fd(&s, fd.as_raw_fd())?;
        }
        Ok(())
    }
}

/// The fd the creator `pid` serves under `nonce`.
pub(crate) fn fetch(pid: u32, nonce: u64) -> io::Result<OwnedFd> {
    let s = UnixStream::connect_addr(&SocketAddr::from_abstract_name(name(pid, nonce))?)?;
    set_timeout(s.as_raw_fd(), ACCEPT_TIMEOUT)?;
    recv_fd(&s)
}

fn set_timeout(fd: RawFd, d: Duration) -> io::Result<()> {
    let tv = libc::timeval { tv_sec: d.as_secs() as libc::time_t, tv_usec: 0 };
    // SAFETY: `tv` is a timeval of the size passed, read by the kernel during the call.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&raw const tv).cast(),
            size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// The peer's pid (0 if in another pid namespace) and uid, from the kernel.
fn peer_cred(s: &UnixStream) -> io::Result<(u32, u32)> {
    let mut c = libc::ucred { pid: 0, uid: 0, gid: 0 };
    let mut len = size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `c` is an exclusively borrowed ucred buffer of `len` bytes.
    let r = unsafe {
        libc::getsockopt(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_PEERCRED, (&raw mut c).cast(), &mut len)
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((c.pid as u32, c.uid))
}

/// Room for the control message of one fd (u64s for its alignment).
const CONTROL_WORDS: usize = 4;

/// Sends one byte with `fd` attached.
fn send_fd(s: &UnixStream, fd: RawFd) -> io::Result<()> {
    let byte = [1u8];
    let mut control = [0u64; CONTROL_WORDS];
    let mut iov = libc::iovec { iov_base: byte.as_ptr() as *mut _, iov_len: 1 };
    // SAFETY: an all-zero msghdr is valid (no name, no buffers) until we fill it.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE is arithmetic.
    msg.msg_controllen = unsafe { libc::CMSG_SPACE(size_of::<RawFd>() as u32) } as _;
    // SAFETY: the control buffer (32 bytes) has room for CMSG_SPACE(4) = 24 bytes: one header
    // with one fd, so CMSG_FIRSTHDR is non-null and CMSG_DATA has room for the fd.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<RawFd>(), fd);
    }
    // SAFETY: `msg` points at `byte`, `iov` and `control`, all alive for the call.
    let n = unsafe { libc::sendmsg(s.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
    if n != 1 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// Receives the one byte and the one fd [`send_fd`] sends.
fn recv_fd(s: &UnixStream) -> io::Result<OwnedFd> {
    let mut byte = [0u8];
    let mut control = [0u64; CONTROL_WORDS];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    // SAFETY: as in send_fd.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = size_of_val(&control) as _;
    let n = loop {
        // SAFETY: `msg` points at `byte`, `iov` and `control`, all alive for the call.
        let n = unsafe { libc::recvmsg(s.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n >= 0 {
            break n;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    };
    let mut fds = Vec::new();
    // SAFETY: the kernel filled `msg.msg_control` with well-formed headers; we walk them with the
    // CMSG macros and take each SCM_RIGHTS payload as the fds it carries (each now ours, closed
    // when dropped).
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c);
                let count = ((*c).cmsg_len as usize - (data as usize - c as usize)) / size_of::<RawFd>();
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.cast::<RawFd>().add(i))));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    if n != 1 || msg.msg_flags & libc::MSG_CTRUNC != 0 || fds.len() != 1 {
        let why = format!("expected one byte and one fd, got {n} and {}", fds.len());
        return Err(io::Error::new(io::ErrorKind::InvalidData, why));
    }
    Ok(fds.pop().expect("one fd"))
}
