//! Setting a link up over the peer's Unix socket, from both ends:
//! 1. the kernel names the peer (`SO_PEERCRED`): another uid is refused at once;
//! 2. both prove the job key (`tools::secret`, HMAC both ways);
//! 3. the connector creates the segment and sends `hello` (its rank, ring size, CMA on/off, the
//!    pid it sees for the acceptor) with the segment's fd and its eventfd;
//! 4. the acceptor checks all of it, maps the segment, and answers `reply` (its rank, CMA, the pid
//!    it sees for the connector) with its eventfd.
//!
//! The socket then stays open, silent, as the liveness channel. The whole setup is bounded by
//! [`TIMEOUT`] (one deadline, not one per read). It owns the setup messages; it does not register links with the driver.
//!
//! Pids: each side reads the other's from the kernel (translated into its own pid namespace) and
//! uses that for its cross-memory reads; processes in pid namespaces that cannot see each other
//! get pid 0 and no cross-memory attach.

use super::link::{Parts, ShmLink, Side};
use super::memory::{Mapping, segment_len};
use super::options::{ShmOptions, valid_ring};
use super::socket::{Conn, check_eventfd, euid, peer_cred, recv_with_fds, send_with_fds};
use crate::drivers::PeerId;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixStream};
use std::sync::Arc;
use std::time::Duration;
use tools::admission::{Deadline, Ticket, Timed};
use tools::secret::{HandshakeError, JobKey, client_handshake, server_handshake};

/// Bound on a whole setup, either side.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(10);

const MAGIC: &[u8; 8] = b"NMSHM001";
const HELLO_LEN: usize = 32;
const REPLY_LEN: usize = 24;
const FLAG_CMA: u32 = 1;

/// What setting up a link needs from this process's driver.
pub(crate) struct Local {
    pub rank: PeerId,
    pub size: u32,
    pub key: JobKey,
    pub opts: ShmOptions,
    /// The driver's eventfd, given to peers.
    pub wake: Arc<OwnedFd>,
}

impl Local {
    fn flags(&self) -> u32 {
        if self.opts.cma { FLAG_CMA } else { 0 }
    }

    /// The peer's pid for our reads, if we read at all.
    fn read_pid(&self, pid: u32) -> Option<u32> {
        (self.opts.cma && pid != 0).then_some(pid)
    }

    /// Whether the peer may reach our memory: both sides allow it and it sees our pid.
    fn exposable(&self, peer_flags: u32, pid_seen_by_peer: u32) -> bool {
        self.opts.cma && peer_flags & FLAG_CMA != 0 && pid_seen_by_peer != 0
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The connector's message.
struct Hello {
    rank: u32,
    flags: u32,
    ring: u64,
    your_pid: u32,
}

impl Hello {
    fn encode(&self) -> [u8; HELLO_LEN] {
        let mut b = [0u8; HELLO_LEN];
        b[..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&self.rank.to_le_bytes());
        b[12..16].copy_from_slice(&self.flags.to_le_bytes());
        b[16..24].copy_from_slice(&self.ring.to_le_bytes());
        b[24..28].copy_from_slice(&self.your_pid.to_le_bytes());
        b
    }

    fn decode(b: &[u8; HELLO_LEN]) -> Result<Hello, String> {
        if &b[..8] != MAGIC {
            return Err("setup message has the wrong magic (another nmad version?)".into());
        }
        Ok(Hello { rank: u32_at(b, 8), flags: u32_at(b, 12), ring: u64_at(b, 16), your_pid: u32_at(b, 24) })
    }
}

/// The acceptor's answer.
struct Reply {
    rank: u32,
    flags: u32,
    your_pid: u32,
}

impl Reply {
    fn encode(&self) -> [u8; REPLY_LEN] {
        let mut b = [0u8; REPLY_LEN];
        b[..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&self.rank.to_le_bytes());
        b[12..16].copy_from_slice(&self.flags.to_le_bytes());
        b[16..20].copy_from_slice(&self.your_pid.to_le_bytes());
        b
    }

    fn decode(b: &[u8; REPLY_LEN]) -> Result<Reply, String> {
        if &b[..8] != MAGIC {
            return Err("setup reply has the wrong magic (another nmad version?)".into());
        }
        Ok(Reply { rank: u32_at(b, 8), flags: u32_at(b, 12), your_pid: u32_at(b, 16) })
    }
}

/// The abstract socket address of a listener name.
pub(crate) fn address(name: &str) -> io::Result<SocketAddr> {
    SocketAddr::from_abstract_name(name.as_bytes())
}

/// Connects to rank `peer` listening at `name`.
pub(crate) fn dial(local: &Local, peer: PeerId, name: &str) -> io::Result<Arc<ShmLink>> {
    let err = |kind: io::ErrorKind, what: String| {
        io::Error::new(kind, format!("shm: connecting to rank {peer}: {what}"))
    };
    let step = |what: &'static str| {
        move |e: io::Error| match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                err(io::ErrorKind::TimedOut, format!("{what}: no answer within {TIMEOUT:?}"))
            }
            kind => err(kind, format!("{what}: {e}")),
        }
    };
    let deadline = Deadline::after(TIMEOUT);
    let s = UnixStream::connect_addr(&address(name)?).map_err(step("cannot reach its socket"))?;
    let (pid, uid) = peer_cred(&s)?;
    if uid != euid() {
        return Err(err(
            io::ErrorKind::PermissionDenied,
            format!("its socket belongs to uid {uid}, not ours"),
        ));
    }
    client_handshake(&mut Timed::new(Conn(&s), s.as_raw_fd(), deadline, None), &local.key).map_err(|e| {
        match e {
            HandshakeError::Io(e) => step("job handshake")(e),
            e => err(io::ErrorKind::PermissionDenied, format!("job handshake: {e}")),
        }
    })?;
    let cap = local.opts.ring_bytes as u64;
    let (map, memfd) = Mapping::create(segment_len(cap))?;
    let hello = Hello { rank: local.rank, flags: local.flags(), ring: cap, your_pid: pid };
    deadline.arm(s.as_raw_fd()).map_err(step("setup"))?;
    send_with_fds(&s, &hello.encode(), &[memfd.as_raw_fd(), local.wake.as_raw_fd()])
        .map_err(step("setup"))?;
    drop(memfd);
    let mut b = [0u8; REPLY_LEN];
    let mut fds =
        deadline.arm(s.as_raw_fd()).and_then(|()| recv_with_fds(&s, &mut b, 1)).map_err(|e| {
            match e.kind() {
                io::ErrorKind::UnexpectedEof => {
                    err(io::ErrorKind::ConnectionRefused, "it refused the setup (its log says why)".into())
                }
                _ => step("setup reply")(e),
            }
        })?;
    let reply = Reply::decode(&b).map_err(|e| err(io::ErrorKind::InvalidData, e))?;
    if reply.rank != peer {
        return Err(err(
            io::ErrorKind::InvalidData,
            format!("the process at that card is rank {}", reply.rank),
        ));
    }
    let peer_wake = fds.pop().expect("one fd");
    check_eventfd(&peer_wake).map_err(|e| err(io::ErrorKind::InvalidData, e))?;
    Ok(ShmLink::new(Parts {
        peer,
        map,
        cap,
        side: Side::Connector,
        peer_wake,
        own_wake: local.wake.clone(),
        sock: s,
        read_pid: local.read_pid(pid),
        exposable: local.exposable(reply.flags, reply.your_pid),
    }))
}

/// Answers a connection on our socket, holding `ticket` in the pool of setups in progress;
/// `Err` says why it was refused (for the log).
pub(crate) fn answer(local: &Local, s: UnixStream, ticket: &Ticket) -> Result<Arc<ShmLink>, String> {
    let deadline = Deadline::after(TIMEOUT);
    let (pid, uid) = peer_cred(&s).map_err(|e| format!("SO_PEERCRED: {e}"))?;
    if uid != euid() {
        return Err(format!("pid {pid} runs as uid {uid}, not ours"));
    }
    let who = |what: String| format!("pid {pid}: {what}");
    let mut timed = Timed::new(Conn(&s), s.as_raw_fd(), deadline, Some(ticket));
    server_handshake(&mut timed, &local.key).map_err(|e| match e {
        HandshakeError::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            who("hung up during the job handshake (a process of another job, or dropped to make room?)"
                .into())
        }
        HandshakeError::Io(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
            who(format!("no job handshake within {TIMEOUT:?}"))
        }
        e => who(e.to_string()),
    })?;
    ticket.proven();
    let mut b = [0u8; HELLO_LEN];
    let mut fds = deadline
        .arm(s.as_raw_fd())
        .and_then(|()| recv_with_fds(&s, &mut b, 2))
        .map_err(|e| who(format!("setup message: {e}")))?;
    let hello = Hello::decode(&b).map_err(who)?;
    if hello.rank >= local.size || hello.rank == local.rank {
        return Err(who(format!(
            "claims rank {} (job of {}, we are {})",
            hello.rank, local.size, local.rank
        )));
    }
    let cap = valid_ring(hello.ring).map_err(who)?;
    let (peer_wake, memfd) = (fds.pop().expect("two fds"), fds.pop().expect("two fds"));
    check_eventfd(&peer_wake).map_err(who)?;
    let map = Mapping::attach(&memfd, segment_len(cap)).map_err(who)?;
    drop(memfd);
    let reply = Reply { rank: local.rank, flags: local.flags(), your_pid: pid };
    deadline
        .arm(s.as_raw_fd())
        .and_then(|()| send_with_fds(&s, &reply.encode(), &[local.wake.as_raw_fd()]))
        .map_err(|e| who(format!("reply: {e}")))?;
    Ok(ShmLink::new(Parts {
        peer: hello.rank,
        map,
        cap,
        side: Side::Acceptor,
        peer_wake,
        own_wake: local.wake.clone(),
        sock: s,
        read_pid: local.read_pid(pid),
        exposable: local.exposable(hello.flags, hello.your_pid),
    }))
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::drivers::shm::socket::eventfd;
    use crate::drivers::{Access, Link, Segment};
    use std::os::unix::net::UnixListener;
    use std::thread::JoinHandle;

    fn local(rank: u32, key: &JobKey, cma: bool) -> Local {
        let opts = ShmOptions { cma, ..ShmOptions::default() };
        Local { rank, size: 2, key: key.clone(), opts, wake: Arc::new(eventfd().unwrap()) }
    }

    /// A listener answering one connection in a thread.
    fn acceptor(local: Local) -> (String, JoinHandle<Result<Arc<ShmLink>, String>>) {
        let name = format!("nmad-shm.test.{}.{:?}", std::process::id(), std::thread::current().id());
        let name: String = name.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '.').collect();
        let l = UnixListener::bind_addr(&address(&name).unwrap()).unwrap();
        let pool = tools::admission::Pool::new(1);
        (
            name,
            std::thread::spawn(move || {
                let s = l.accept().unwrap().0;
                let (ticket, _) = pool.admit(&s).unwrap();
                answer(&local, s, &ticket)
            }),
        )
    }

    #[test]
    fn both_ends_agree_on_ranks_rings_and_pids() {
        let key = JobKey::generate().unwrap();
        for (cma_a, cma_b) in [(true, true), (true, false), (false, true)] {
            let (name, h) = acceptor(local(1, &key, cma_b));
            let a = dial(&local(0, &key, cma_a), 1, &name).unwrap();
            let b = h.join().unwrap().unwrap();
            assert_eq!((a.peer, b.peer), (1, 0));
            let both = cma_a && cma_b;
            let buf = [0u8; 8];
            let mem = [Segment { ptr: buf.as_ptr(), len: buf.len() }];
            for l in [&a, &b] {
                // SAFETY: `buf` outlives the exposure, dropped at once.
                let exposed = unsafe { l.expose(&mem, Access::Read) };
                assert_eq!(exposed.is_ok(), both, "{cma_a} {cma_b}");
            }
        }
    }

    /// Plays a connector that knows the key but sends `hello` with `fds`; returns the refusal.
    fn refused(hello: &[u8], fds: &[&OwnedFd]) -> String {
        let key = JobKey::generate().unwrap();
        let (name, h) = acceptor(local(1, &key, true));
        let s = UnixStream::connect_addr(&address(&name).unwrap()).unwrap();
        client_handshake(&mut Conn(&s), &key).unwrap();
        let raw: Vec<_> = fds.iter().map(|f| f.as_raw_fd()).collect();
        send_with_fds(&s, hello, &raw).unwrap();
        h.join().unwrap().err().expect("the acceptor must refuse")
    }

    #[test]
    fn the_acceptor_refuses_bad_setups() {
        let cap = ShmOptions::default().ring_bytes as u64;
        let (_map, seg) = Mapping::create(segment_len(cap)).unwrap();
        let wake = eventfd().unwrap();
        let hello = |rank, ring| Hello { rank, flags: 0, ring, your_pid: 0 }.encode();
        let mut bad_magic = hello(0, cap);
        bad_magic[0] ^= 1;
        assert!(refused(&bad_magic, &[&seg, &wake]).contains("magic"));
        assert!(refused(&hello(5, cap), &[&seg, &wake]).contains("claims rank 5"));
        assert!(refused(&hello(1, cap), &[&seg, &wake]).contains("claims rank 1"), "our own rank");
        assert!(refused(&hello(0, cap + 64), &[&seg, &wake]).contains("power of two"));
        assert!(refused(&hello(0, cap * 2), &[&seg, &wake]).contains("memory file"), "too small");
        assert!(refused(&hello(0, cap), &[&seg]).contains("file descriptors"));
        assert!(refused(&hello(0, cap), &[&seg, &seg]).contains("eventfd"));
        // SAFETY: a plain memfd with no seals; we own the returned fd.
        let unsealed = unsafe { libc::memfd_create(c"x".as_ptr(), libc::MFD_CLOEXEC) };
        // SAFETY: fresh fd.
        let unsealed = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(unsealed) };
        // SAFETY: resizes our own memfd.
        unsafe { libc::ftruncate(unsealed.as_raw_fd(), segment_len(cap) as libc::off_t) };
        assert!(refused(&hello(0, cap), &[&unsealed, &wake]).contains("sealed"));
    }

    #[test]
    fn a_wrong_key_fails_both_ends() {
        let (name, h) = acceptor(local(1, &JobKey::generate().unwrap(), true));
        let e = dial(&local(0, &JobKey::generate().unwrap(), true), 1, &name).err().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
        // The client detects the fake server first and hangs up before proving anything.
        assert!(h.join().unwrap().err().unwrap().contains("hung up during the job handshake"));
    }

    #[test]
    fn dialing_the_wrong_rank_fails() {
        let key = JobKey::generate().unwrap();
        let (name, h) = acceptor(local(1, &key, true));
        let e = dial(&local(0, &key, true), 3, &name).err().unwrap();
        assert!(e.to_string().contains("is rank 1"), "{e}");
        drop(h.join());
    }
}
