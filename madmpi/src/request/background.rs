//! The process's background-work source: a pioman source whose poll advances work that nmad
//! request monitors queued — collective schedules (see `coll`'s module docs for why monitors
//! must not advance them themselves) and one-sided transfers a target waits for.
//!
//! It is polled like nmad's own sources, from every context pioman uses: idle cores, context
//! switches and ticks under marcel, progression threads, and threads waiting in MPI (which drive
//! progress themselves). Its blocking wait is an eventfd, written only when work is queued
//! while a context sleeps armed in the sources' fds; a context about to sleep is told not to
//! (`arm` returns `false`) when work is queued. Without queued work it is inactive: busy
//! contexts skip it.
//!
//! Owns the queue, the eventfd and the per-runtime registration; it must not know what the
//! work is ([`Advance`]).

use crate::comm::{Extension, Runtime};
use crate::error::{Error, Result};
use pioman::{BlockingWait, Poll, PollCtx, Source};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

/// Work a monitor queues, advanced by the source's poll outside nmad's completion path.
pub(crate) trait Advance: Send + Sync {
    /// Set while queued, so that pushing it again before the poll queues it once.
    fn queued(&self) -> &AtomicBool;
    /// Advances as far as it can go now; `true` to be advanced again soon (a monitor reported
    /// a completion whose request has not signalled yet).
    fn advance(self: Arc<Self>) -> bool;
}

pub(crate) struct Progress {
    queue: Mutex<Vec<Arc<dyn Advance>>>,
    /// Work in `queue` (read without the lock).
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
            return Err(Error::other(format!(
                "background work: eventfd: {}",
                std::io::Error::last_os_error()
            )));
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
            .map_err(|e| Error::other(format!("cannot register the background-work source: {e}")))?;
        *p.handle.lock().unwrap_or_else(|e| e.into_inner()) = Some(h);
        Ok(p)
    }

    /// Queues `e` to be advanced (once, however often it is pushed before the next poll).
    pub(crate) fn push<T: Advance + 'static>(&self, e: &Arc<T>) {
        self.push_dyn(e.clone());
    }

    fn push_dyn(&self, e: Arc<dyn Advance>) {
        if e.queued().swap(true, SeqCst) {
            return;
        }
        {
            let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            q.push(e);
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
        "madmpi-background"
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
            e.queued().store(false, SeqCst);
            if e.clone().advance() {
                self.push_dyn(e);
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

/// The runtime's source, registered on first use.
#[derive(Default)]
struct Registered(Mutex<Option<Arc<Progress>>>);

impl Extension for Registered {}

impl Drop for Registered {
    fn drop(&mut self) {
        if let Some(p) = self.0.get_mut().unwrap_or_else(|e| e.into_inner()).take() {
            p.cancel();
        }
    }
}

/// The background-work source of runtime `rt` (registered with its pioman on first use).
pub(crate) fn of(rt: &Runtime) -> Result<Arc<Progress>> {
    let r: &Registered = rt.extensions().get_or_default();
    let mut p = r.0.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = &*p {
        return Ok(p.clone());
    }
    let new = Progress::register(rt.nm.pioman())?;
    *p = Some(new.clone());
    Ok(new)
}
