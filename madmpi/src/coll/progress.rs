//! The process's collective progress source: a pioman source whose poll advances the schedules
//! that nmad request monitors queued (see `coll`'s module docs for why).
//!
//! It is polled like nmad's own sources, from every context pioman uses: idle marcel LWPs,
//! context switches and ticks, progression threads, and threads waiting in MPI (which drive
//! progress themselves). Its blocking wait is an eventfd, written only when a schedule is queued
//! while a context sleeps armed in the sources' fds; a context about to sleep is told not to
//! (`arm` returns `false`) when schedules are queued. Without queued schedules it is inactive:
//! busy contexts skip it.
//!
//! Owns the queue and the eventfd; it must not know algorithms.

use super::engine::Exec;
use crate::error::{Error, Result};
use pioman::{BlockingWait, Poll, PollCtx, Source};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

pub(crate) struct Progress {
    queue: Mutex<Vec<Arc<Exec>>>,
    /// Schedules in `queue` (read without the lock).
    queued: AtomicUsize,
    /// Contexts sleeping (armed) in our fd.
    armed: AtomicUsize,
    fd: OwnedFd,
    handle: Mutex<Option<pioman::LtaskHandle>>,
}

impl Progress {
    /// A new source, registered with `pio`.
    pub(crate) fn register(pio: &pioman::Pioman) -> Result<Arc<Progress>> {
        // SAFETY: eventfd takes an initial value and flags; a non-negative return is our fd.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(Error::other(format!("collectives: eventfd: {}", std::io::Error::last_os_error())));
        }
        let p = Arc::new(Progress {
            queue: Mutex::new(Vec::new()),
            queued: AtomicUsize::new(0),
            armed: AtomicUsize::new(0),
            // SAFETY: a fresh fd nobody else owns.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            handle: Mutex::new(None),
        });
        let h = pio
            .register(p.clone(), pioman::Options::default())
            .map_err(|e| Error::other(format!("collectives: cannot register the progress source: {e}")))?;
        *p.handle.lock().unwrap_or_else(|e| e.into_inner()) = Some(h);
        Ok(p)
    }

    /// Queues `e` to be advanced (once, however often it is pushed before the next poll).
    pub(crate) fn push(&self, e: &Arc<Exec>) {
        if e.queued.swap(true, SeqCst) {
            return;
        }
        {
            let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            q.push(e.clone());
            self.queued.fetch_add(1, SeqCst);
        }
        if self.armed.load(SeqCst) > 0 {
            let one: u64 = 1;
            // SAFETY: writes 8 bytes from a local u64 to our eventfd. A failure (counter full)
            // still leaves it readable, which is all that matters.
            unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
        }
    }

    /// Stops polling (the runtime is going away); returns at once, even from our own poll.
    pub(crate) fn cancel(&self) {
        if let Some(h) = self.handle.lock().unwrap_or_else(|e| e.into_inner()).take() {
            h.cancel();
        }
    }
}

impl Source for Progress {
    fn name(&self) -> &str {
        "madmpi-collectives"
    }

    fn poll(&self, _ctx: &mut PollCtx) -> Poll {
        if self.queued.load(SeqCst) == 0 {
            return Poll::Idle;
        }
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into a local u64 from our non-blocking eventfd (clears it).
        unsafe { libc::read(self.fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
        let ready = {
            let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            self.queued.store(0, SeqCst);
            std::mem::take(&mut *q)
        };
        for e in ready {
            e.queued.store(false, SeqCst);
            if e.advance() {
                self.push(&e);
            }
        }
        Poll::Progress
    }

    fn is_active(&self) -> bool {
        self.queued.load(SeqCst) > 0
    }

    fn blocking(&self) -> BlockingWait {
        BlockingWait::Fd(self.fd.as_raw_fd())
    }

    fn arm(&self) -> bool {
        self.armed.fetch_add(1, SeqCst);
        self.queued.load(SeqCst) == 0
    }

    fn disarm(&self) {
        self.armed.fetch_sub(1, SeqCst);
    }
}
