//! Admitting connections from untrusted peers before they prove the job key: a deadline for a
//! whole handshake (not per read), a bounded pool of handshakes in progress that makes room by
//! dropping the oldest connection that has not got furthest, and rate-limited logging of the
//! connections turned away.
//!
//! Used by every listening socket of a job (nmad's tcp and shm drivers, madrun's PMI port). It
//! owns duplicates of the sockets in its pool (to shut them down when evicting) and nothing else;
//! it never reads or writes the protocol.

use std::fmt::Display;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A point in time by which a whole exchange must be over.
#[derive(Clone, Copy, Debug)]
pub struct Deadline(Instant);

impl Deadline {
    pub fn after(d: Duration) -> Deadline {
        Deadline(Instant::now() + d)
    }

    /// The time left, or a `TimedOut` error once it is over.
    pub fn left(&self) -> io::Result<Duration> {
        let left = self.0.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "the handshake deadline passed"));
        }
        Ok(left)
    }

    /// Sets `fd`'s receive and send timeouts to the time left, so that the next blocking call
    /// ends by the deadline (call it before each one).
    pub fn arm(&self, fd: RawFd) -> io::Result<()> {
        let left = self.left()?;
        let tv = libc::timeval {
            tv_sec: left.as_secs().min(i32::MAX as u64) as libc::time_t,
            // At least 1 µs: a zero timeval means "no timeout".
            tv_usec: (left.subsec_micros().max(1)) as libc::suseconds_t,
        };
        for opt in [libc::SO_RCVTIMEO, libc::SO_SNDTIMEO] {
            // SAFETY: passes a timeval of the size given; the kernel copies it.
            let r = unsafe {
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    opt,
                    (&tv as *const libc::timeval).cast(),
                    size_of::<libc::timeval>() as libc::socklen_t,
                )
            };
            if r < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// A blocking stream whose reads and writes all end by one deadline, and which tells its pool
/// [`Ticket`] how far the peer got.
pub struct Timed<'t, S> {
    inner: S,
    fd: RawFd,
    deadline: Deadline,
    ticket: Option<&'t Ticket>,
    read: usize,
}

/// Bytes after which the peer has sent a whole first handshake message (`tools::secret`'s hello
/// is 24): a peer that got this far outranks one that did not when the pool must drop someone.
const SPOKE_AFTER: usize = 24;

impl<'t, S> Timed<'t, S> {
    /// `fd` is the socket under `inner` (blocking).
    pub fn new(inner: S, fd: RawFd, deadline: Deadline, ticket: Option<&'t Ticket>) -> Timed<'t, S> {
        Timed { inner, fd, deadline, ticket, read: 0 }
    }

    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S: Read> Read for Timed<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.deadline.arm(self.fd)?;
        let n = self.inner.read(buf)?;
        let before = self.read;
        self.read += n;
        if before < SPOKE_AFTER
            && self.read >= SPOKE_AFTER
            && let Some(t) = self.ticket
        {
            t.spoke();
        }
        Ok(n)
    }
}

impl<S: Write> Write for Timed<'_, S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.deadline.arm(self.fd)?;
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// How far a connection in the pool got; eviction takes the lowest stage, oldest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    Silent,
    Spoke,
    /// Proved the key: never evicted.
    Proven,
}

struct Slot {
    id: u64,
    stage: Stage,
    /// A duplicate of the connection's socket, shut down to evict it.
    sock: OwnedFd,
}

/// Handshakes in progress on one listening socket, at most `capacity`.
pub struct Pool {
    capacity: usize,
    slots: Mutex<Vec<Slot>>,
    next: AtomicU64,
}

/// A connection's place in its [`Pool`], freed when dropped.
pub struct Ticket {
    pool: Arc<Pool>,
    id: u64,
}

/// Why a connection got no place.
#[derive(Debug)]
pub enum Refused {
    /// Every place is held by a connection that proved the key.
    Full,
    /// The socket could not be duplicated.
    Io(io::Error),
}

impl Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Full => f.write_str("too many handshakes in progress"),
            Refused::Io(e) => write!(f, "cannot track its handshake: {e}"),
        }
    }
}

impl Pool {
    pub fn new(capacity: usize) -> Arc<Pool> {
        Arc::new(Pool { capacity: capacity.max(1), slots: Mutex::new(Vec::new()), next: AtomicU64::new(0) })
    }

    /// Gives `sock` a place, making room by shutting down the oldest connection of the lowest
    /// stage (silent, then spoke; never one that proved the key) if the pool is full (its handshake then fails at once).
    /// Returns the ticket and whether someone was evicted.
    pub fn admit(self: &Arc<Pool>, sock: &impl AsFd) -> Result<(Ticket, bool), Refused> {
        let dup = sock.as_fd().try_clone_to_owned().map_err(Refused::Io)?;
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        let mut evicted = false;
        if slots.len() >= self.capacity {
            // Slots are in admission order: the first of the lowest stage is the oldest.
            let victim = slots
                .iter()
                .enumerate()
                .filter(|(_, s)| s.stage < Stage::Proven)
                .min_by_key(|(i, s)| (s.stage, *i))
                .map(|(i, _)| i)
                .ok_or(Refused::Full)?;
            let v = slots.remove(victim);
            // SAFETY: shutdown on a socket we own a duplicate of; the handshake thread holding
            // the original sees end of stream or an error and gives up.
            unsafe { libc::shutdown(v.sock.as_raw_fd(), libc::SHUT_RDWR) };
            evicted = true;
        }
        let id = self.next.fetch_add(1, Relaxed);
        slots.push(Slot { id, stage: Stage::Silent, sock: dup });
        Ok((Ticket { pool: self.clone(), id }, evicted))
    }

    /// Handshakes in progress.
    pub fn len(&self) -> usize {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn raise(&self, id: u64, stage: Stage) {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(s) = slots.iter_mut().find(|s| s.id == id) {
            s.stage = s.stage.max(stage);
        }
    }
}

impl Ticket {
    /// The peer sent a whole first message.
    pub fn spoke(&self) {
        self.pool.raise(self.id, Stage::Spoke);
    }

    /// The peer proved the job key: this connection is never evicted.
    pub fn proven(&self) {
        self.pool.raise(self.id, Stage::Proven);
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut slots = self.pool.slots.lock().unwrap_or_else(PoisonError::into_inner);
        slots.retain(|s| s.id != self.id);
    }
}

/// Counts rejected connections and logs at most one line per interval through `log::warn!`:
/// "rejected 812 connections in the last 5 s (last: 127.0.0.1:4321, bad key)".
pub struct RejectLog {
    what: String,
    interval: Duration,
    state: Mutex<LogState>,
}

struct LogState {
    since: Instant,
    count: u64,
    last: String,
}

impl RejectLog {
    /// `what` starts every line (e.g. `nmad tcp (rank 1)`).
    pub fn new(what: impl Into<String>, interval: Duration) -> RejectLog {
        let state = LogState { since: Instant::now() - interval, count: 0, last: String::new() };
        RejectLog { what: what.into(), interval, state: Mutex::new(state) }
    }

    /// Counts one rejection; logs the count if the interval since the last line has passed (so
    /// the first rejection after a quiet interval is logged at once).
    pub fn note(&self, from: impl Display, why: impl Display) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.count += 1;
        s.last = format!("{from}, {why}");
        if s.since.elapsed() >= self.interval {
            self.emit(&mut s);
        }
    }

    /// Counts one rejection like [`note`](Self::note) but, instead of logging, returns what to
    /// report when a report is due: `why`, followed by the count of the others since the last
    /// report (for a caller that reports through its own channel).
    pub fn count(&self, from: impl Display, why: &str) -> Option<String> {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.count += 1;
        s.last = format!("{from}, {why}");
        if s.since.elapsed() < self.interval {
            return None;
        }
        let others = s.count - 1;
        let secs = s.since.elapsed().min(self.interval).as_secs();
        s.count = 0;
        s.since = Instant::now();
        Some(if others == 0 {
            why.to_string()
        } else {
            format!("{why} (and {others} more rejected in the last {secs} s)")
        })
    }

    /// Logs what was counted and not yet logged (at shutdown).
    pub fn flush(&self) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if s.count > 0 {
            self.emit(&mut s);
        }
    }

    fn emit(&self, s: &mut LogState) {
        let secs = s.since.elapsed().min(self.interval).as_secs_f64().max(0.001);
        if s.count == 1 {
            log::warn!("{}: rejected a connection from {}", self.what, s.last);
        } else {
            log::warn!(
                "{}: rejected {} connections in the last {secs:.0} s (last: {})",
                self.what,
                s.count,
                s.last
            );
        }
        s.count = 0;
        s.since = Instant::now();
    }
}

impl Drop for RejectLog {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;

    /// Whether `s` was shut down (reads end of stream at once); never blocks.
    fn shut(s: &UnixStream) -> bool {
        s.set_nonblocking(true).unwrap();
        matches!((&*s).read(&mut [0u8; 1]), Ok(0))
    }

    #[test]
    fn a_full_pool_evicts_the_oldest_of_the_lowest_stage_never_a_proven_one() {
        let pool = Pool::new(3);
        let (_peers, socks): (Vec<UnixStream>, Vec<UnixStream>) =
            (0..6).map(|_| UnixStream::pair().unwrap()).unzip();
        let (proven, _) = pool.admit(&socks[0]).unwrap();
        proven.proven();
        let (spoke, _) = pool.admit(&socks[1]).unwrap();
        spoke.spoke();
        let (silent, evicted) = pool.admit(&socks[2]).unwrap();
        assert!(!evicted);
        let (newer, evicted) = pool.admit(&socks[3]).unwrap();
        assert!(evicted && shut(&socks[2]), "full: the silent one goes");
        assert!(!shut(&socks[0]) && !shut(&socks[1]) && !shut(&socks[3]));
        newer.spoke();
        let (_s4, evicted) = pool.admit(&socks[4]).unwrap();
        assert!(evicted && shut(&socks[1]), "then the oldest that spoke");
        assert!(!shut(&socks[3]));
        drop(silent); // already evicted: dropping its ticket frees nothing more
        assert_eq!(pool.len(), 3);
        let (p5, _) = pool.admit(&socks[5]).unwrap();
        assert!(shut(&socks[4]), "the silent one before the one that spoke");
        p5.proven();
        let (p3, _) = pool.admit(&socks[3]).unwrap_or_else(|_| panic!("room is made"));
        p3.proven();
        let extra = UnixStream::pair().unwrap();
        assert!(matches!(pool.admit(&extra.1), Err(Refused::Full)), "only proven ones left");
        assert!(!shut(&socks[0]) && !shut(&socks[5]), "proven ones are untouched");
        drop((proven, newer, p5, p3, spoke, _s4));
        assert!(pool.is_empty());
    }

    #[test]
    fn the_deadline_covers_the_whole_exchange() {
        let (a, b) = UnixStream::pair().unwrap();
        let deadline = Deadline::after(Duration::from_millis(300));
        let dribbler = std::thread::spawn(move || {
            for _ in 0..10 {
                std::thread::sleep(Duration::from_millis(100));
                if (&a).write_all(b"x").is_err() {
                    return;
                }
            }
        });
        let started = Instant::now();
        let mut t = Timed::new(&b, b.as_raw_fd(), deadline, None);
        let mut buf = [0u8; 10];
        let e = t.read_exact(&mut buf).unwrap_err();
        assert!(matches!(e.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock), "{e}");
        assert!(started.elapsed() < Duration::from_millis(900), "each read was not given 300 ms");
        drop(b);
        dribbler.join().unwrap();
    }

    #[test]
    fn rejections_are_counted_between_lines() {
        let log = RejectLog::new("test", Duration::from_secs(3600));
        log.note("a", "bad key");
        for i in 0..5 {
            log.note(i, "silent");
        }
        let s = log.state.lock().unwrap();
        assert_eq!((s.count, s.last.as_str()), (5, "4, silent"), "the first one was logged at once");
        drop(s);
        let quiet = RejectLog::new("test", Duration::ZERO);
        assert_eq!(quiet.count("a", "bad key").as_deref(), Some("bad key"));
        let busy = RejectLog::new("test", Duration::from_secs(3600));
        assert_eq!(busy.count("a", "bad key").as_deref(), Some("bad key"), "the first is due at once");
        assert_eq!(busy.count("b", "silent"), None);
        let mut s = busy.state.lock().unwrap();
        s.since -= Duration::from_secs(3600);
        drop(s);
        let r = busy.count("c", "silent").unwrap();
        assert!(r.starts_with("silent (and 1 more rejected in the last 3600 s)"), "{r}");
    }
}
