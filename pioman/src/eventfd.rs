//! An eventfd as a progression source: events written by another thread or process are detected
//! by pioman (polling, or waiting on the fd). Each event carries its send time, so detection
//! latency is measured exactly, across processes too.
//!
//! Wire format of one write: `(CLOCK_MONOTONIC ns << 8) | 1`. The kernel adds up writes that
//! arrive before a read: the low byte then counts them and the upper bits sum their stamps, so the
//! mean send time of a batch stays known (batches above 255 events lose it, not the count).

use crate::cond::Cond;
use crate::source::{BlockingWait, Poll, PollCtx, Source};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::time::{Duration, Instant};

/// Bit of [`EventSource::cond`] set when events arrived.
pub const EVENT: u32 = 1;

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for clock_gettime to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Writes one stamped event to an eventfd (from any thread or process holding the fd).
pub fn notify(fd: RawFd) -> io::Result<()> {
    let v: u64 = (monotonic_ns() << 8) | 1;
    // SAFETY: writes 8 bytes from a local u64 to a caller-provided fd.
    let n = unsafe { libc::write(fd, (&v as *const u64).cast(), 8) };
    if n == 8 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// A source reading an eventfd: counts the events, signals [`EVENT`] on its condition.
pub struct EventSource {
    fd: OwnedFd,
    name: String,
    received: AtomicU64,
    cond: Arc<Cond>,
}

impl EventSource {
    /// A new eventfd (non-blocking, inheritable by child processes so they can write to it).
    pub fn new(name: &str) -> io::Result<EventSource> {
        // SAFETY: eventfd takes an initial value and flags; a non-negative return is our fd.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fresh fd owned by nobody else.
        Ok(Self::from_fd(unsafe { OwnedFd::from_raw_fd(fd) }, name))
    }

    /// Wraps an existing non-blocking eventfd (e.g. inherited from a parent process).
    pub fn from_fd(fd: OwnedFd, name: &str) -> EventSource {
        EventSource { fd, name: name.to_string(), received: AtomicU64::new(0), cond: Arc::new(Cond::new()) }
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Events detected so far.
    pub fn received(&self) -> u64 {
        self.received.load(Acquire)
    }

    /// Signalled with [`EVENT`] at each detection; clear it to wait for the next one.
    pub fn cond(&self) -> &Arc<Cond> {
        &self.cond
    }
}

impl Source for EventSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn poll(&self, ctx: &mut PollCtx) -> Poll {
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into a local u64 from our non-blocking eventfd.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
        if n != 8 || v == 0 {
            return Poll::Idle;
        }
        let count = (v & 0xff).max(1);
        let sent_ns = (v >> 8) / count;
        let now_ns = monotonic_ns();
        if sent_ns != 0 && sent_ns <= now_ns {
            ctx.event_at(Instant::now() - Duration::from_nanos(now_ns - sent_ns));
        }
        self.received.fetch_add(count, Release);
        self.cond.signal(EVENT);
        Poll::Progress
    }

    fn blocking(&self) -> BlockingWait {
        BlockingWait::Fd(self.fd.as_raw_fd())
    }
}
