//! Running a schedule: an [`Exec`] binds a [`Schedule`] to memory (the user's buffers, its own
//! temporaries), posts each round's transfers as nmad requests once the rounds it depends on are
//! done, runs local operations, and signals its condition when the last round is done (or, after
//! an error, once nothing it posted is in flight any more).
//!
//! Who advances it: the thread that starts it (the first rounds are posted before the call
//! returns), then whoever polls the process's collective progress source
//! ([`crate::request::background`]): every nmad request of a schedule carries a monitor that only
//! counts the completion and queues the schedule there; the source's poll calls
//! [`Exec::step`]. See the module docs of `coll` for why monitors do not advance schedules
//! themselves.
//!
//! Owns schedule execution state and the temporaries; it must not choose algorithms.

use super::rounds::{self, Advance, Rounds};
use super::schedule::{Local, Range, SEND, Schedule, Xfer};
use crate::comm::tags::{self, Kind};
use crate::comm::{Comm, from_nmad};
use crate::datatype::Datatype;
use crate::error::{Error, ErrorClass, Result};
use crate::loom::atomic::AtomicUsize;
use crate::request::background::{self, Progress};
use crate::request::{Outcome, Pending, RawRequest};
use nmad::{Data, Event, Monitor, SendMode, Source, TagMatch};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard};

use super::Op;

/// Condition bit of a finished schedule (the same as nmad's, so waits look alike).
pub(crate) const COMPLETED: u32 = nmad::COMPLETED;

/// The reduction of a schedule's `Reduce` operations: `inout = input op inout`, on packed elements.
pub(crate) struct Reducer {
    pub op: Op,
    pub dtype: Datatype,
}

impl Reducer {
    fn apply(&self, input: &[u8], inout: &mut [u8], count: usize) -> Result<()> {
        self.op.reduce(input, inout, count, &self.dtype)
    }
}

struct State {
    rounds: Rounds<Pin<Box<nmad::Request>>>,
    error: Option<Error>,
    finished: bool,
}

/// A schedule bound to memory and running.
pub(crate) struct Exec {
    comm: Comm,
    seq: u64,
    sched: Schedule,
    /// (address, length) of each buffer of the schedule.
    bufs: Vec<(*mut u8, usize)>,
    /// The temporaries (freed on drop).
    tmp: Vec<*mut [u8]>,
    reducer: Option<Reducer>,
    state: Mutex<State>,
    /// In the progress source's queue.
    pub(super) queued: AtomicBool,
    /// Completions reported by monitors (see `rounds`).
    events: AtomicUsize,
    monitor: Monitor,
    progress: Arc<Progress>,
    done: pioman::Cond,
    result: Mutex<Option<Error>>,
}

// SAFETY: the raw pointers are the user's buffers, valid until `done` is signalled (the request
// that owns the `Exec` borrows them and its drop waits for that), and our own temporaries. Local
// operations touch them under `state`'s lock; transfers are nmad's, on ranges that never overlap
// a range touched by another operation of the same round (`Schedule::validate`), and rounds that
// touch the same bytes are ordered by their dependencies.
unsafe impl Send for Exec {}
// SAFETY: as above.
unsafe impl Sync for Exec {}

impl Drop for Exec {
    fn drop(&mut self) {
        for &t in &self.tmp {
            // SAFETY: made by `Box::into_raw` in `start`, freed once here; no request is in
            // flight (an `Exec` is dropped only after it finished, or before it started).
            drop(unsafe { Box::from_raw(t) });
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The memory a schedule runs on: the user's input and output (address, length).
#[derive(Clone, Copy)]
pub(crate) struct Bind {
    pub send: (*mut u8, usize),
    pub recv: (*mut u8, usize),
}

impl background::Advance for Exec {
    fn queued(&self) -> &AtomicBool {
        &self.queued
    }

    fn advance(self: Arc<Self>) -> bool {
        self.step()
    }
}

impl Exec {
    /// Starts `sched` on `comm` as collective number `seq`, over `bind`: allocates the
    /// temporaries, posts what can start, and returns the running schedule.
    ///
    /// # Safety
    /// `bind`'s memory must stay valid (the input for reads, the output for writes and reads)
    /// and not be touched by anyone else until the schedule finishes (its condition is
    /// signalled).
    pub(crate) unsafe fn start(
        comm: &Comm,
        seq: u64,
        sched: Schedule,
        bind: Bind,
        reducer: Option<Reducer>,
    ) -> Result<Arc<Exec>> {
        if cfg!(debug_assertions) {
            sched
                .validate(bind.send.1, bind.recv.1)
                .map_err(|e| Error::intern(format!("bad schedule: {e}")))?;
        }
        let progress = background::of(comm.runtime())?;
        let mut bufs = vec![bind.send, bind.recv];
        let mut tmp = Vec::new();
        for &len in &sched.tmp_len[2..] {
            let t = Box::into_raw(vec![0u8; len].into_boxed_slice());
            tmp.push(t);
            bufs.push((t.cast::<u8>(), len));
        }
        let state = State {
            rounds: Rounds::new(sched.rounds.iter().map(|r| r.deps.as_slice())),
            error: None,
            finished: false,
        };
        let done = pioman::Cond::new();
        let exec = Arc::new_cyclic(|weak: &std::sync::Weak<Exec>| {
            let weak = weak.clone();
            let monitor: Monitor = Arc::new(move |ev, _| {
                if ev == Event::DataArrived {
                    return;
                }
                if let Some(e) = weak.upgrade() {
                    e.events.fetch_add(1, SeqCst);
                    e.progress.push(&e);
                }
            });
            Exec {
                comm: comm.clone(),
                seq,
                sched,
                bufs,
                tmp,
                reducer,
                state: Mutex::new(state),
                queued: AtomicBool::new(false),
                events: AtomicUsize::new(0),
                monitor,
                progress,
                done,
                result: Mutex::new(None),
            }
        });
        if exec.step() {
            exec.progress.push(&exec);
        }
        Ok(exec)
    }

    pub(crate) fn is_complete(&self) -> bool {
        self.done.test(COMPLETED)
    }

    pub(crate) fn cond(&self) -> &pioman::Cond {
        &self.done
    }

    pub(crate) fn pioman(&self) -> &pioman::Pioman {
        self.comm.runtime_nmad().pioman()
    }

    /// The error it ended with, once finished (`Some(None)`: success).
    pub(crate) fn outcome(&self) -> Option<Option<Error>> {
        self.is_complete().then(|| lock(&self.result).clone())
    }

    /// The address of range `r`.
    fn ptr(&self, r: Range) -> *mut u8 {
        // SAFETY: `validate` (and the builders) keep ranges inside their buffers.
        unsafe { self.bufs[r.buf].0.add(r.off) }
    }

    /// Runs one local operation.
    fn local(&self, l: &Local) -> Result<()> {
        let (from, to) = match *l {
            Local::Copy { from, to } | Local::Reduce { from, into: to, .. } => (from, to),
        };
        if from.len != to.len || from.overlaps(&to) || to.buf == SEND {
            return Err(Error::intern(format!("collective schedule: bad local operation {l:?}")));
        }
        // SAFETY: both ranges lie in live buffers (see `Exec`'s Send impl), do not overlap
        // (checked above), and no transfer in flight touches them (round order).
        let (src, dst) = unsafe {
            (
                std::slice::from_raw_parts(self.ptr(from), from.len),
                std::slice::from_raw_parts_mut(self.ptr(to), to.len),
            )
        };
        match *l {
            Local::Copy { .. } => dst.copy_from_slice(src),
            Local::Reduce { count, .. } => match &self.reducer {
                Some(r) => r.apply(src, dst, count)?,
                None => return Err(Error::intern("collective schedule: a reduction without an operation")),
            },
        }
        Ok(())
    }

    /// Posts one transfer; the request is pushed even when posting failed (nmad completed it
    /// with the error, which the round's end reports).
    fn post(&self, x: &Xfer, reqs: &mut Vec<Pin<Box<nmad::Request>>>) -> Result<()> {
        let (Xfer::Send { peer, step, data } | Xfer::Recv { peer, step, data }) = *x;
        let Some(world) = self.comm.coll_world_rank(peer) else {
            return Err(Error::intern(format!("collective schedule: no rank {peer}")));
        };
        let tag = tags::internal(Kind::Collective, self.seq, step);
        let mut req = Box::pin(nmad::Request::new());
        req.as_mut().set_monitor(Some(self.monitor.clone()));
        // SAFETY: the range lies in a live buffer (see `Exec`'s Send impl).
        let d = unsafe { Data::from_raw(self.ptr(data), data.len) };
        let s = self.comm.session();
        let r = match x {
            // SAFETY: the memory stays valid and untouched until the request completes (the
            // round, hence the schedule, waits for it), and the request stays pinned in `reqs`.
            Xfer::Send { .. } => unsafe { s.isend(world, tag, d, SendMode::default(), req.as_ref()) },
            // SAFETY: as above.
            Xfer::Recv { .. } => unsafe {
                s.irecv(Source::Rank(world), TagMatch::exact(tag), d, req.as_ref())
            },
        };
        reqs.push(req);
        r.map_err(from_nmad)
    }

    /// The error of a completed request of transfer `x`, if any.
    fn check(x: &Xfer, req: &nmad::Request) -> Option<Error> {
        match req.result()? {
            Err(e) => Some(from_nmad(e)),
            Ok(st) => match *x {
                Xfer::Recv { data, peer, .. } if st.len != data.len as u64 => Some(Error::new(
                    ErrorClass::Truncate,
                    format!("collective: {} bytes from rank {peer} where {} were expected", st.len, data.len),
                )),
                _ => None,
            },
        }
    }

    /// Advances the schedule as far as it can go now. Returns `true` if it must be advanced
    /// again soon: a monitor reported a completion whose request has not signalled yet.
    pub(crate) fn step(self: &Arc<Self>) -> bool {
        let mut guard = lock(&self.state);
        let st = &mut *guard;
        if st.finished {
            return false;
        }
        let mut host = Host { exec: self, error: &mut st.error };
        match st.rounds.advance(&mut host, &self.events) {
            Advance::Running(again) => again,
            Advance::Finished => {
                st.finished = true;
                *lock(&self.result) = st.error.take();
                drop(guard);
                // Last access by the engine for the waiter: it may drop its handle now.
                self.done.signal(COMPLETED);
                false
            }
        }
    }

    /// Runs round `r`'s local operations, then posts its transfers; errors go to `error`.
    fn start_round(&self, r: usize, error: &mut Option<Error>) -> Vec<Pin<Box<nmad::Request>>> {
        let round = &self.sched.rounds[r];
        for l in &round.local {
            if let Err(e) = self.local(l) {
                error.get_or_insert(e);
                return Vec::new();
            }
        }
        let mut reqs = Vec::with_capacity(round.xfers.len());
        for x in &round.xfers {
            if let Err(e) = self.post(x, &mut reqs) {
                error.get_or_insert(e);
                break;
            }
        }
        reqs
    }
}

/// The engine as the round state machine's host: posts rounds, checks finished ones.
struct Host<'a> {
    exec: &'a Exec,
    error: &'a mut Option<Error>,
}

impl rounds::Host<Pin<Box<nmad::Request>>> for Host<'_> {
    fn retire(&mut self, r: usize, reqs: Vec<Pin<Box<nmad::Request>>>) {
        for (x, q) in self.exec.sched.rounds[r].xfers.iter().zip(&reqs) {
            if let Some(e) = Exec::check(x, q) {
                self.error.get_or_insert(e);
            }
        }
    }

    fn start(&mut self, r: usize) -> Vec<Pin<Box<nmad::Request>>> {
        self.exec.start_round(r, self.error)
    }

    fn halted(&self) -> bool {
        self.error.is_some()
    }
}

/// A running collective, as a request holds it: dropping it waits for the schedule to finish
/// (collectives cannot be cancelled, and the schedule uses the request's borrowed buffers).
pub struct Handle(pub(crate) Arc<Exec>);

impl Handle {
    pub(crate) fn is_complete(&self) -> bool {
        self.0.is_complete()
    }

    pub(crate) fn cond(&self) -> &pioman::Cond {
        self.0.cond()
    }

    /// Waits until finished, driving progress as pioman's policy says.
    pub(crate) fn wait(&self) {
        if !self.0.is_complete() {
            self.0.pioman().wait(self.0.cond(), COMPLETED);
        }
    }

    pub(crate) fn outcome(&self) -> Option<Option<Error>> {
        self.0.outcome()
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.wait();
    }
}

/// A collective's request holds its handle: the schedule's completion stands for the nmad
/// request's.
impl Pending for Handle {
    fn is_complete(&self) -> bool {
        Handle::is_complete(self)
    }

    fn cond(&self) -> &pioman::Cond {
        Handle::cond(self)
    }

    fn wait(&self, _pio: &pioman::Pioman) {
        Handle::wait(self)
    }

    fn outcome(&self) -> Option<Outcome> {
        Handle::outcome(self).map(|error| Outcome { error, ..Outcome::DONE })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl RawRequest {
    /// The request of a running collective operation.
    pub(crate) fn collective(comm: &Comm, h: Handle) -> RawRequest {
        RawRequest::with_pending(comm, Box::new(h))
    }
}
