//! A file's nonblocking and split collective operations: queued in the order they were started
//! and run by a worker thread of the file, each completing the request its caller holds. The
//! order matters for collective ones: every process starts them in the same order, and the
//! worker runs them in that order over the file's communicator. A blocking collective call (and
//! every call that changes the file's state) first waits for the queue to empty.
//!
//! The worker exists while the queue has work: it is started by the operation that finds it
//! idle and ends when the queue is empty, so an idle file has no thread.

use super::access::Dir;
use super::open::Inner;
use super::{Buffer, Mode, Position, Split};
use crate::comm::Status;
use crate::error::{Error, Result};
use crate::loom::{Condvar, Mutex, MutexGuard, thread};
use crate::request::{Outcome, Pending, RawRequest};
use std::any::Any;
use std::collections::VecDeque;
use std::sync::{Arc, PoisonError};

type Job = Box<dyn FnOnce() + Send>;

/// The jobs, and whether a worker runs them.
#[derive(Default)]
pub(crate) struct Queue {
    state: Mutex<State>,
    idle: Condvar,
}

#[derive(Default)]
struct State {
    jobs: VecDeque<Job>,
    running: bool,
    /// The active split collective: its request, buffer, direction and kind.
    split: Option<(Arc<IoRequest>, usize, Dir, Split)>,
}

impl Queue {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until every queued operation ran.
    pub(super) fn drain(&self) {
        let mut s = self.state();
        while s.running || !s.jobs.is_empty() {
            s = self.idle.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Queues `job`, starting a worker if none runs.
    fn push(self: &Arc<Self>, job: Job) -> Result<()> {
        let mut s = self.state();
        s.jobs.push_back(job);
        if s.running {
            return Ok(());
        }
        s.running = true;
        drop(s);
        let queue = self.clone();
        if let Err(e) = spawn(move || queue.work()) {
            let mut s = self.state();
            s.running = false;
            s.jobs.pop_back();
            self.idle.notify_all();
            return Err(Error::other(format!("starting the file's I/O thread: {e}")));
        }
        Ok(())
    }

    /// The worker: runs the queue until it is empty.
    fn work(&self) {
        loop {
            let job = {
                let mut s = self.state();
                match s.jobs.pop_front() {
                    Some(j) => j,
                    None => {
                        s.running = false;
                        self.idle.notify_all();
                        return;
                    }
                }
            };
            job();
        }
    }
}

#[cfg(not(loom))]
fn spawn(f: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    thread::Builder::new().name("madmpi-io".into()).spawn(f).map(drop)
}

#[cfg(loom)]
fn spawn(f: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    thread::spawn(f);
    Ok(())
}

/// The request of a queued operation.
struct IoRequest {
    done: pioman::Cond,
    outcome: std::sync::Mutex<Option<Outcome>>,
}

impl IoRequest {
    fn finish(&self, r: Result<Status>) {
        let outcome = match r {
            Ok(status) => Outcome { status, error: None, cancelled: false },
            Err(e) => Outcome { status: Outcome::DONE.status, error: Some(e), cancelled: false },
        };
        *self.outcome.lock().unwrap_or_else(PoisonError::into_inner) = Some(outcome);
        self.done.signal(nmad::COMPLETED);
    }
}

impl Pending for IoRequest {
    fn is_complete(&self) -> bool {
        self.outcome.lock().unwrap_or_else(PoisonError::into_inner).is_some()
    }

    fn cond(&self) -> &pioman::Cond {
        &self.done
    }

    fn wait(&self, pio: &pioman::Pioman) {
        while !self.is_complete() {
            pio.wait(&self.done, nmad::COMPLETED);
        }
    }

    fn outcome(&self) -> Option<Outcome> {
        self.outcome.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Queues an access; its request.
fn queue_access(
    inner: &Arc<Inner>,
    at: Position,
    mode: Mode,
    buf: Buffer,
    dir: Dir,
) -> Result<Arc<IoRequest>> {
    let req = Arc::new(IoRequest { done: pioman::Cond::new(), outcome: std::sync::Mutex::new(None) });
    let (file, r) = (inner.clone(), req.clone());
    inner.queue.push(Box::new(move || {
        // SAFETY: the caller of `start` vouched for the buffer until the request completes,
        // which is after this.
        r.finish(unsafe { file.access_now(at, mode, &buf, dir) });
    }))?;
    Ok(req)
}

/// `MPI_File_i*`: checks what can be checked now, queues the access.
///
/// # Safety
/// `buf` is valid for `dir` until the request completes.
pub(super) unsafe fn start(
    inner: &Arc<Inner>,
    at: Position,
    mode: Mode,
    buf: Buffer,
    dir: Dir,
) -> Result<RawRequest> {
    inner.check_access(at, dir)?;
    let at = claim_now(inner, at, &buf)?;
    let req = queue_access(inner, at, mode, buf, dir)?;
    Ok(RawRequest::with_pending(&inner.comm, Box::new(Shared(req))))
}

/// The explicit offset an access started now at `at` gets: the file pointers move when it
/// starts, not when the worker runs it. The view it is claimed in is the one the worker will
/// use (changing the view waits for the queue). An ordered access's offsets are agreed over
/// the file's communicator, after what is queued (collectives run in their call order).
fn claim_now(inner: &Arc<Inner>, at: Position, buf: &Buffer) -> Result<Position> {
    if at == Position::Ordered {
        inner.queue.drain();
    }
    inner.claim(&inner.view(), at, buf).map(|(start, _)| Position::At(start))
}

/// The request a [`RawRequest`] holds (the split collective keeps another reference).
struct Shared(Arc<IoRequest>);

impl Pending for Shared {
    fn is_complete(&self) -> bool {
        self.0.is_complete()
    }

    fn cond(&self) -> &pioman::Cond {
        self.0.cond()
    }

    fn wait(&self, pio: &pioman::Pioman) {
        self.0.wait(pio)
    }

    fn outcome(&self) -> Option<Outcome> {
        self.0.outcome()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `MPI_File_*_begin`: one split collective may be active per file.
///
/// # Safety
/// `buf` is valid for `dir` until the matching end.
pub(super) unsafe fn split_begin(inner: &Arc<Inner>, at: Position, buf: Buffer, dir: Dir) -> Result<()> {
    inner.check_access(at, dir)?;
    let kind =
        Split::of(at).ok_or_else(|| Error::arg("no split collective uses the shared pointer unordered"))?;
    if inner.queue.state().split.is_some() {
        return Err(Error::other("a split collective is active on this file already (one at a time)"));
    }
    let ptr = buf.ptr as usize;
    let at = claim_now(inner, at, &buf)?;
    let req = queue_access(inner, at, Mode::Collective, buf, dir)?;
    inner.queue.state().split = Some((req, ptr, dir, kind));
    Ok(())
}

/// `MPI_File_*_end`.
pub(super) fn split_end(inner: &Arc<Inner>, buf: *const u8, dir: Dir, kind: Split) -> Result<Status> {
    let req = {
        let mut s = inner.queue.state();
        match s.split.take() {
            Some((req, ptr, d, k)) if ptr == buf as usize && d == dir && k == kind => req,
            Some(other) => {
                s.split = Some(other);
                return Err(Error::other("this end does not match the active split collective's begin"));
            }
            None => return Err(Error::other("no split collective is active on this file")),
        }
    };
    req.wait(inner.comm.runtime_nmad().pioman());
    req.outcome().expect("complete after the wait").into_result()
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    /// Two threads queue a job each while a third drains: every job runs once, and the drain
    /// returns only after both ran (no wake-up is lost between the worker's last look at the
    /// queue and a new job; a job queued while the worker ends starts a new one).
    #[test]
    fn loom_drain_waits_for_every_queued_job() {
        loom::model(|| {
            let q = Arc::new(Queue::default());
            let ran = Arc::new(AtomicUsize::new(0));
            let pushers: Vec<_> = (0..2)
                .map(|_| {
                    let (q, ran) = (q.clone(), ran.clone());
                    loom::thread::spawn(move || {
                        let r = ran.clone();
                        q.push(Box::new(move || {
                            r.fetch_add(1, SeqCst);
                        }))
                        .unwrap();
                    })
                })
                .collect();
            pushers.into_iter().for_each(|p| p.join().unwrap());
            q.drain();
            assert_eq!(ran.load(SeqCst), 2);
        });
    }
}
