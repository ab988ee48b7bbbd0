//! Passing a shared segment's memfd from the member that created it to the other members on its
//! node: over a Unix socket in the abstract namespace (no file to clean up after a crash), with
//! SCM_RIGHTS (`tools::unix_socket`, which nmad's shm driver uses too; this one-message exchange
//! is separate from the driver's protocol).
//!
//! The creator binds its socket before the members exchange their descriptions, so the name is
//! bound when anyone connects. It serves only the processes it expects: the kernel-checked
//! credentials of each connection must name one of the members' pids and our uid.
//!
//! Owns the socket and the fd transfer; it must not know what the fd maps.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;
use tools::unix_socket::{peer_cred, recv_with_fds, send_with_fds};

/// How long the creator waits for the members to connect (they do right after the exchange).
const ACCEPT_TIMEOUT: Duration = Duration::from_secs(60);

/// The abstract socket name of the creator `pid`'s `nonce`-th shared segment.
fn name(pid: u32, nonce: u64) -> String {
    format!("madmpi-seg.{pid}.{nonce}")
}

/// A bound socket the creator serves its fd on.
pub(crate) struct Server {
    listener: UnixListener,
    /// What the members connect to, with this process's pid.
    pub(crate) nonce: u64,
}

impl Server {
    /// Binds a socket under a name no other segment of this process uses.
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
                log::warn!("shared segment: refused a connection from pid {pid} uid {peer_uid}");
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

/// Sends one byte with `fd` attached.
fn send_fd(s: &UnixStream, fd: RawFd) -> io::Result<()> {
    send_with_fds(s, &[1], &[fd])
}

/// Receives the one byte and the one fd [`send_fd`] sends.
fn recv_fd(s: &UnixStream) -> io::Result<OwnedFd> {
    let mut fds = recv_with_fds(s, &mut [0], 1)?;
    Ok(fds.pop().expect("exactly one fd"))
}
