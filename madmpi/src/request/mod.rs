//! Requests: one [`RawRequest`] type for every kind of operation (point-to-point, send-receive,
//! and the operations that complete on their own, collectives, partitioned and generalized
//! ones: see `Kind` and [`Pending`]), and waits on several of them ([`completion`]).
//!
//! A [`Request`] owns a pinned nmad request and borrows the user's buffer for its lifetime `'a`,
//! so the buffer cannot be touched or freed while the operation runs; dropping a request that
//! has not completed cancels it if it is an unmatched receive and otherwise waits (nmad's rule:
//! the core never touches freed memory). [`RawRequest`] is the same without the borrow, for the
//! C library, whose callers promise what the borrow checker cannot.
//!
//! Files: this one (the request, its kinds, completion, the typed [`Request`]); `sendrecv`
//! (`MPI_Isendrecv(_replace)`); `kinds` (the kinds other modules run, [`Pending`], and
//! generalized requests); [`completion`] (waiting for the first of several); `pool` (spare nmad
//! requests per thread); `background` (the
//! pioman source that advances work nmad request monitors queued). The operations the
//! C binding runs, starts once or keeps as persistent templates are [`crate::operation`]'s.
//!
//! Owns request state and completion; it must not touch nmad's internals, nor import the
//! modules whose operations it stands for (collectives, partitioned communication): they hand
//! it a [`Pending`].

use crate::comm::tags;
use crate::comm::{Comm, From, Rank, Status, Tag, check_tag, from_nmad};
use crate::datatype::Equivalence;
use crate::error::{Error, Result};
use nmad::{Data, SendMode, Source};
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;

pub(crate) mod background;
pub mod completion;
mod kinds;
mod pool;
pub mod recycle;
mod sendrecv;

use pool::Slot;

pub use kinds::Pending;
pub(crate) use kinds::Watch;

/// What the operation was, for its status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Send,
    Recv,
    /// With `MPI_PROC_NULL`: complete at once, empty status.
    Null,
}

/// A request without a borrow of its buffer (the C library's view).
pub struct RawRequest {
    inner: Slot,
    comm: Comm,
    op: Op,
    kind: Kind,
    /// A receive from `MPI_ANY_SOURCE`: ULFM's rule applies to its waits (the runtime's `AnySourceRule`).
    any_source: bool,
}

/// What runs behind a [`RawRequest`]: one request type for every kind of operation, so that
/// waits, tests and statuses treat them alike. A persistent request is a template that makes
/// one of these at each start ([`operation`]).
enum Kind {
    /// A point-to-point operation in `inner` (or nothing, for [`Op::Null`]).
    Point,
    /// `MPI_Isendrecv(_replace)`: the receive in `inner`, the send here; complete when both are,
    /// with the receive's status.
    SendRecv(Box<sendrecv::SendHalf>),
    /// An operation another thread runs and finishes (`MPI_Comm_idup`; `inner` is unused).
    Deferred(Arc<Deferred>),
    /// An operation that completes on its own: a collective schedule, a partitioned or a
    /// generalized operation (`inner` is unused): its completion stands for the nmad
    /// request's in every method below.
    Pending(Box<dyn Pending>),
}

/// The completion of an operation run by another thread (`MPI_Comm_idup`): it calls
/// [`Deferred::finish`] once, which signals the condition waiters use.
pub(crate) struct Deferred {
    done: pioman::Cond,
    error: std::sync::Mutex<Option<Error>>,
}

impl Deferred {
    pub(crate) fn new() -> Arc<Deferred> {
        Arc::new(Deferred { done: pioman::Cond::new(), error: std::sync::Mutex::new(None) })
    }

    /// Completes the operation, with its error if it failed.
    pub(crate) fn finish(&self, error: Option<Error>) {
        *self.error.lock().unwrap_or_else(|e| e.into_inner()) = error;
        self.done.signal(nmad::COMPLETED);
    }

    fn is_complete(&self) -> bool {
        self.done.test(nmad::COMPLETED)
    }

    fn error(&self) -> Option<Error> {
        self.error.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// What a completed operation left: its status, and its error if it failed. A truncated receive
/// has both (what arrived, and `MPI_ERR_TRUNCATE`), which `MPI_Recv` reports together. A
/// cancelled receive is no failure: it completed with `cancelled` set (`MPI_Test_cancelled`),
/// an empty status and no error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub status: Status,
    pub error: Option<Error>,
    pub cancelled: bool,
}

impl Outcome {
    /// The status of an operation with `MPI_PROC_NULL` (and of a send: no source, no tag).
    pub(crate) const EMPTY: Status = Status { source: None, tag: -1, bytes: 0 };

    /// The outcome of an operation that completed at once with nothing to report.
    pub const DONE: Outcome = Outcome { status: Outcome::EMPTY, error: None, cancelled: false };

    /// The outcome as a `Result` (the status is lost on error; a cancellation is an error
    /// here, the Rust API's way of reporting it).
    pub fn into_result(self) -> Result<Status> {
        if self.cancelled {
            return Err(Error::new(crate::error::ErrorClass::Other, "cancelled"));
        }
        self.error.map_or(Ok(self.status), Err)
    }
}

/// How a nonblocking send should go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    #[default]
    Standard,
    /// Completes once the receiver matched the message (`MPI_Issend`).
    Synchronous,
}

impl RawRequest {
    fn null(comm: &Comm) -> RawRequest {
        RawRequest {
            inner: Slot::new(),
            comm: comm.clone(),
            op: Op::Null,
            kind: Kind::Point,
            any_source: false,
        }
    }

    /// A request that is already complete, with an empty status: the request of an operation
    /// done by the time it is returned (`MPI_Ibsend`, whose message was copied away).
    pub fn completed(comm: &Comm) -> RawRequest {
        RawRequest::null(comm)
    }

    /// The receive of a message matched by a probe, running in `inner` (`p2p::mprobe`).
    pub(crate) fn matched_recv(inner: Pin<Box<nmad::Request>>, comm: &Comm) -> RawRequest {
        RawRequest {
            inner: Slot::from_box(inner),
            comm: comm.clone(),
            op: Op::Recv,
            kind: Kind::Point,
            any_source: false,
        }
    }

    /// Starts sending `data` to `dest` with `tag`.
    ///
    /// # Safety
    /// `data` must stay valid and unchanged until the request completes (or is dropped).
    pub unsafe fn isend(comm: &Comm, data: Data, dest: Rank, tag: i32, mode: Mode) -> Result<RawRequest> {
        let t = check_tag("MPI_Isend", tag)?;
        let Rank::Rank(r) = dest else { return Ok(RawRequest::null(comm)) };
        let to = comm.peer("MPI_Isend", r)?;
        let req = RawRequest {
            inner: Slot::new(),
            comm: comm.clone(),
            op: Op::Send,
            kind: Kind::Point,
            any_source: false,
        };
        let m = SendMode { sync: mode == Mode::Synchronous, header_len: 0 };
        // SAFETY: the caller keeps `data` valid; the request is pinned in its box and its Drop
        // waits for completion.
        unsafe { comm.session().isend(to, t, data, m, req.inner.as_ref()) }.map_err(from_nmad)?;
        Ok(req)
    }

    /// Starts receiving into `data` a message from `from` with `tag`.
    ///
    /// # Safety
    /// `data` must stay valid for writes until the request completes (or is dropped).
    pub unsafe fn irecv(comm: &Comm, data: Data, from: From, tag: Tag) -> Result<RawRequest> {
        let tm = comm.match_of("MPI_Irecv", tag)?;
        let src = match from {
            From::Rank(r) => Source::Rank(comm.peer("MPI_Irecv", r)?),
            From::Any => Source::Any,
            From::ProcNull => return Ok(RawRequest::null(comm)),
        };
        let req = RawRequest {
            inner: Slot::new(),
            comm: comm.clone(),
            op: Op::Recv,
            kind: Kind::Point,
            any_source: src == Source::Any,
        };
        // SAFETY: as in `isend`.
        unsafe { comm.session().irecv(src, tm, data, req.inner.as_ref()) }.map_err(from_nmad)?;
        Ok(req)
    }

    /// The request of an operation another thread runs and finishes through `d`.
    pub(crate) fn deferred(comm: &Comm, d: Arc<Deferred>) -> RawRequest {
        RawRequest { kind: Kind::Deferred(d), ..RawRequest::null(comm) }
    }

    /// The request of an operation that completes on its own, on `comm` (whose progression
    /// engine its waits use).
    pub(crate) fn with_pending(comm: &Comm, p: Box<dyn Pending>) -> RawRequest {
        RawRequest { kind: Kind::Pending(p), ..RawRequest::null(comm) }
    }

    /// The operation that completes on its own, if this is one (its module downcasts it).
    pub(crate) fn pending(&self) -> Option<&dyn Pending> {
        match &self.kind {
            Kind::Pending(p) => Some(&**p),
            _ => None,
        }
    }

    /// Whether the operation completed.
    pub fn is_complete(&self) -> bool {
        match &self.kind {
            Kind::Point => self.inner.test(),
            Kind::SendRecv(h) => self.inner.test() && h.send.is_complete(),
            Kind::Deferred(d) => d.is_complete(),
            Kind::Pending(p) => p.is_complete(),
        }
    }

    /// The condition signalled with `nmad::COMPLETED` at completion (to wait on several
    /// requests at once).
    pub fn cond(&self) -> &pioman::Cond {
        match &self.kind {
            Kind::Point => self.inner.cond(),
            // The half still running (a waiter on several requests rechecks after each nap).
            Kind::SendRecv(h) if self.inner.test() => h.send.cond(),
            Kind::SendRecv(_) => self.inner.cond(),
            Kind::Deferred(d) => &d.done,
            Kind::Pending(p) => p.cond(),
        }
    }

    /// Whether the operation completed, after driving progress once (`MPI_Test`: a program
    /// polling with it must see its messages arrive even without progression threads). When it
    /// has not, the caller yields its core ([`found_nothing`]).
    pub fn test(&self) -> bool {
        if self.is_complete() {
            return true;
        }
        if let Kind::Pending(p) = &self.kind {
            p.poke();
        }
        self.comm.runtime_nmad().pioman().progress();
        let done = self.is_complete();
        if !done {
            found_nothing();
        }
        done
    }

    /// The outcome, once complete.
    pub fn status(&self) -> Option<Result<Status>> {
        self.outcome().map(Outcome::into_result)
    }

    /// The status and error, once complete (a truncated receive keeps its status).
    pub fn outcome(&self) -> Option<Outcome> {
        match &self.kind {
            Kind::Point => {}
            Kind::SendRecv(h) => {
                let send = h.send.outcome()?;
                let r = self.inner.result()?;
                let mut o = outcome_of(&self.comm, self.op, r, self.inner.status());
                o.error = o.error.or(send.error);
                return Some(o);
            }
            Kind::Deferred(d) => {
                return d.is_complete().then(|| Outcome { error: d.error(), ..Outcome::DONE });
            }
            Kind::Pending(p) => return p.outcome(),
        }
        let r = self.inner.result()?;
        Some(outcome_of(&self.comm, self.op, r, self.inner.status()))
    }

    /// [`RawRequest::outcome`]'s error alone, for a caller that ignores the status: `None` if
    /// the operation succeeded, was cancelled, or has not completed.
    pub fn outcome_error(&self) -> Option<Error> {
        match &self.kind {
            Kind::Point => match self.inner.result()? {
                Ok(_) | Err(nmad::Error::Cancelled) => None,
                Err(e) => Some(from_nmad(e)),
            },
            _ => self.outcome()?.error,
        }
    }

    /// Waits for completion; returns the outcome.
    pub fn wait(&self) -> Result<Status> {
        self.wait_done();
        self.status().expect("completed")
    }

    /// Waits for completion, leaving the outcome to be read (a completion call reads it once,
    /// when it reports).
    pub fn wait_done(&self) {
        match &self.kind {
            Kind::Point => self.inner.wait(),
            Kind::SendRecv(h) => {
                self.inner.wait();
                let _ = h.send.wait();
            }
            Kind::Deferred(d) => {
                if !d.is_complete() {
                    self.pioman().wait(&d.done, nmad::COMPLETED);
                }
            }
            Kind::Pending(p) => p.wait(self.pioman()),
        }
    }

    /// `MPI_Wait`'s wait: for completion; but a receive from `MPI_ANY_SOURCE` returns
    /// `MPIX_ERR_PROC_FAILED_PENDING`, still pending, while a member of its communicator is
    /// known failed and not acknowledged (ULFM; the runtime's `AnySourceRule`). Other errors are the outcome's.
    pub fn wait_unless_failure_pending(&self) -> Result<()> {
        if self.under_any_source_rule() {
            self.comm.runtime().wait_any_source(&self.comm, &self.inner)?;
        }
        self.wait_done();
        Ok(())
    }

    /// `MPI_Test`'s error for an incomplete request: `MPIX_ERR_PROC_FAILED_PENDING` for a receive
    /// from `MPI_ANY_SOURCE` while a member of its communicator is known failed and not
    /// acknowledged (see [`RawRequest::wait_unless_failure_pending`]).
    pub fn failure_pending(&self) -> Option<Error> {
        if !self.under_any_source_rule() || self.is_complete() {
            return None;
        }
        self.comm.runtime().any_source_stopped(&self.comm)
    }

    /// Whether ULFM's rule for receives from `MPI_ANY_SOURCE` applies to this request's waits.
    pub fn under_any_source_rule(&self) -> bool {
        self.any_source && matches!(self.kind, Kind::Point)
    }

    /// Cancels a receive that has not matched yet (`MPI_Cancel`); `true` if it was cancelled
    /// (it then completes with [`Outcome::cancelled`]). Sends cannot be cancelled once started
    /// (as in MPICH for sent messages), nor can receives of messages matched by a probe.
    pub fn cancel(&self) -> bool {
        self.op == Op::Recv && matches!(self.kind, Kind::Point) && self.comm.session().cancel(&self.inner)
    }

    /// The nmad request (for a [`Pending`] kind: an unused, completed one; see
    /// [`RawRequest::cond`]).
    pub fn nmad(&self) -> &nmad::Request {
        &self.inner
    }

    /// The progression engine that completes this request.
    pub(crate) fn pioman(&self) -> &pioman::Pioman {
        self.comm.runtime_nmad().pioman()
    }
}

/// The outcome of a completed nmad request `r` (with `status`, its nmad status) of kind `op`.
fn outcome_of(
    comm: &Comm,
    op: Op,
    r: std::result::Result<nmad::Status, nmad::Error>,
    status: Option<nmad::Status>,
) -> Outcome {
    if let Err(nmad::Error::Cancelled) = r {
        return Outcome { cancelled: true, ..Outcome::DONE };
    }
    let status = match (op, status) {
        (Op::Recv, Some(st)) => {
            Status { source: comm.rank_of_world(st.source), tag: tags::mpi_tag(st.tag), bytes: st.received }
        }
        _ => Outcome::EMPTY,
    };
    Outcome { status, error: r.err().map(from_nmad), cancelled: false }
}

impl Comm {
    /// Sends `data` to `dest` and waits until its memory is free (`MPI_Send`, or `MPI_Ssend`
    /// with [`Mode::Synchronous`]); `op` names the call in error messages.
    ///
    /// # Safety
    /// `data` must be valid for reads until this returns.
    pub unsafe fn send_data(&self, op: &str, data: Data, dest: Rank, tag: i32, mode: Mode) -> Result<()> {
        let t = check_tag(op, tag)?;
        let Rank::Rank(r) = dest else { return Ok(()) };
        let to = self.peer(op, r)?;
        let req = std::pin::pin!(nmad::Request::new());
        let m = SendMode { sync: mode == Mode::Synchronous, header_len: 0 };
        // SAFETY: the caller keeps `data` valid; we wait for completion before returning, and
        // the request stays pinned on this stack frame until then.
        unsafe { self.session().isend(to, t, data, m, req.as_ref()) }.map_err(from_nmad)?;
        req.wait();
        req.result().expect("completed").map(drop).map_err(from_nmad)
    }

    /// Receives into `data` a message from `from` with `tag` (`MPI_Recv`); the outcome keeps
    /// the status of a truncated message. Argument errors come back as `Err`.
    ///
    /// # Safety
    /// `data` must be valid for writes until this returns.
    pub unsafe fn recv_data(&self, op: &str, data: Data, from: From, tag: Tag) -> Result<Outcome> {
        let tm = self.match_of(op, tag)?;
        let src = match from {
            From::Rank(r) => Source::Rank(self.peer(op, r)?),
            From::Any => Source::Any,
            From::ProcNull => return Ok(Outcome::DONE),
        };
        let req = std::pin::pin!(nmad::Request::new());
        // SAFETY: as in `send_data`.
        unsafe { self.session().irecv(src, tm, data, req.as_ref()) }.map_err(from_nmad)?;
        if src == Source::Any
            && let Err(pending) = self.runtime().wait_any_source(self, &req)
            && let Some(failed) = give_up(self, &req, pending)
        {
            return Ok(Outcome { error: Some(failed), ..Outcome::DONE });
        }
        req.wait();
        Ok(outcome_of(self, Op::Recv, req.result().expect("completed"), req.status()))
    }
}

/// A blocking receive from any source that found a member's failure unacknowledged
/// (`pending`): cancelled, it fails with `MPIX_ERR_PROC_FAILED` (ULFM); `None` if it matched a
/// message meanwhile (then it completes normally).
fn give_up(comm: &Comm, req: &nmad::Request, pending: Error) -> Option<Error> {
    comm.session().cancel(req).then(|| {
        Error::new(crate::error::ErrorClass::MpixProcFailed, format!("cancelled: {}", pending.message()))
    })
}

/// What a nonblocking call that found nothing (`MPI_Test` of an incomplete request,
/// `MPI_Iprobe`, `MPI_Improbe` without a message) does before returning: if its progress pass
/// found a source busy in another thread, it yields the core (`marcel::yield_now`: the other user
/// threads of the LWP run; on an OS thread, `sched_yield`).
///
/// Programs call these in loops. Under MPI_THREAD_MULTIPLE with more threads than cores, a thread
/// preempted by the kernel in the middle of a progress pass keeps the pass's sources to itself
/// (a source is polled by one context at a time), and the other threads, spinning on their tests,
/// could not poll them either until the kernel ran it again, a whole time slice later: each message
/// then took milliseconds. Yielding lets the preempted thread finish its pass; a single-threaded
/// test loop never finds a source busy and pays nothing.
pub fn found_nothing() {
    if pioman::Pioman::progress_was_contended() {
        marcel::yield_now();
    }
}

/// A nonblocking operation borrowing its buffer for `'a`.
#[must_use = "a request must be waited for (dropping it waits, or cancels an unmatched receive)"]
pub struct Request<'a> {
    raw: RawRequest,
    _buf: PhantomData<&'a mut [u8]>,
}

impl<'a> Request<'a> {
    /// A request over memory borrowed for `'a` (the caller made `raw` from that memory).
    pub(crate) fn borrowing(raw: RawRequest) -> Request<'a> {
        Request { raw, _buf: PhantomData }
    }

    /// Waits for completion (`MPI_Wait`). A receive from any source whose communicator has a
    /// failed member not acknowledged is cancelled and fails with `MPIX_ERR_PROC_FAILED`, as a
    /// blocking receive (the request is consumed: it cannot stay pending).
    pub fn wait(self) -> Result<Status> {
        if let Err(pending) = self.raw.wait_unless_failure_pending()
            && let Some(failed) = give_up(&self.raw.comm, &self.raw.inner, pending)
        {
            let _ = self.raw.wait(); // cancelled: completes at once
            return Err(failed);
        }
        self.raw.wait()
    }

    /// The outcome if complete (`MPI_Test`: drives progress once, and yields the core if not
    /// complete), else the request back.
    pub fn test(self) -> std::result::Result<Result<Status>, Request<'a>> {
        self.raw.test();
        match self.raw.status() {
            Some(r) => Ok(r),
            None => Err(self),
        }
    }

    /// Cancels an unmatched receive (`MPI_Cancel`); waiting on it then reports the cancellation
    /// as an error. See [`RawRequest::cancel`].
    pub fn cancel(&self) -> bool {
        self.raw.cancel()
    }
}

/// Waits for every request (`MPI_Waitall`); the first error is returned after all completed.
pub fn wait_all(reqs: Vec<Request<'_>>) -> Result<Vec<Status>> {
    let mut out = Vec::with_capacity(reqs.len());
    let mut first_err: Option<Error> = None;
    for r in reqs {
        match r.wait() {
            Ok(s) => out.push(s),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    first_err.map_or(Ok(out), Err)
}

/// Waits until one request completes (`MPI_Waitany`): removes it from `reqs` and returns its
/// index and outcome; `None` if `reqs` is empty.
pub fn wait_any(reqs: &mut Vec<Request<'_>>) -> Option<(usize, Result<Status>)> {
    if reqs.is_empty() {
        return None;
    }
    let raws: Vec<&RawRequest> = reqs.iter().map(|r| &r.raw).collect();
    completion::wait_any_complete(&raws);
    let i = reqs.iter().position(|r| r.raw.is_complete()).expect("one completed");
    let r = reqs.remove(i);
    Some((i, r.wait()))
}

impl Comm {
    /// `MPI_Isend` / `MPI_Issend`.
    pub fn isend<'a, T: Equivalence>(
        &self,
        buf: &'a [T],
        dest: Rank,
        tag: i32,
        mode: Mode,
    ) -> Result<Request<'a>> {
        // SAFETY: `buf` is borrowed (shared) for 'a, which the request carries.
        let data = unsafe { Data::from_raw(buf.as_ptr().cast_mut().cast(), std::mem::size_of_val(buf)) };
        // SAFETY: as above: the borrow keeps the data valid and unchanged until the request ends.
        let raw = unsafe { RawRequest::isend(self, data, dest, tag, mode) }?;
        Ok(Request { raw, _buf: PhantomData })
    }

    /// `MPI_Irecv`.
    pub fn irecv<'a, T: Equivalence>(&self, buf: &'a mut [T], from: From, tag: Tag) -> Result<Request<'a>> {
        // SAFETY: `buf` is borrowed exclusively for 'a; any bytes are valid `T`s (Equivalence).
        let data = unsafe { Data::from_raw(buf.as_mut_ptr().cast(), std::mem::size_of_val(buf)) };
        // SAFETY: as above.
        let raw = unsafe { RawRequest::irecv(self, data, from, tag) }?;
        Ok(Request { raw, _buf: PhantomData })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::on_all;

    #[test]
    fn nonblocking_exchanges_wait_all_any_and_cancel() {
        on_all(2, |w| {
            let peer = 1 - w.rank();
            let out: Vec<Vec<u64>> = (0..8u64).map(|i| vec![i + 100 * u64::from(w.rank()); 5000]).collect();
            let mut inp = vec![vec![0u64; 5000]; 8];
            let mut reqs = Vec::new();
            for (i, b) in inp.iter_mut().enumerate() {
                reqs.push(w.irecv(b, From::Rank(peer), Tag::Tag(i as i32)).unwrap());
            }
            // Sends in reverse tag order: matching is by tag, not by arrival.
            for (i, b) in out.iter().enumerate().rev() {
                let mode = if i % 2 == 0 { Mode::Synchronous } else { Mode::Standard };
                reqs.push(w.isend(b, Rank::Rank(peer), i as i32, mode).unwrap());
            }
            let (_, first) = wait_any(&mut reqs).unwrap();
            first.unwrap();
            let st = wait_all(reqs).unwrap();
            assert_eq!(st.len(), 15);
            for (i, b) in inp.iter().enumerate() {
                assert!(b.iter().all(|&v| v == i as u64 + 100 * u64::from(peer)), "message {i}");
            }
            // A receive nobody sends to is cancelled; a PROC_NULL one completes at once.
            let mut lonely = [0u8; 4];
            let r = w.irecv(&mut lonely, From::Any, Tag::Tag(999)).unwrap();
            assert!(r.cancel());
            assert!(r.wait().is_err(), "a cancelled receive reports it");
            let st = w.irecv(&mut [0u8; 4], From::ProcNull, Tag::Any).unwrap().wait().unwrap();
            assert_eq!(st.source, None);
        });
    }

    #[test]
    fn raw_blocking_data_keeps_the_status_of_a_truncated_message() {
        on_all(2, |w| {
            let peer = 1 - w.rank();
            let out = [7u8; 40];
            // SAFETY: `out` outlives the blocking call.
            let data = unsafe { Data::from_raw(out.as_ptr().cast_mut(), out.len()) };
            // SAFETY: as above.
            unsafe { w.send_data("MPI_Send", data, Rank::Rank(peer), 9, Mode::Standard) }.unwrap();
            let mut small = [0u8; 16];
            // SAFETY: `small` outlives the blocking call.
            let data = unsafe { Data::from_raw(small.as_mut_ptr(), small.len()) };
            // SAFETY: as above.
            let o = unsafe { w.recv_data("MPI_Recv", data, From::Any, Tag::Any) }.unwrap();
            assert_eq!(o.status, Status { source: Some(peer), tag: 9, bytes: 16 });
            assert_eq!(o.error.map(|e| e.class()), Some(crate::error::ErrorClass::Truncate));
            assert_eq!(small, [7; 16]);
            // Argument errors are errors of the call, PROC_NULL an empty outcome.
            // SAFETY: no memory is involved.
            let bad = unsafe { w.recv_data("MPI_Recv", Data::None, From::Rank(5), Tag::Any) };
            assert_eq!(bad.unwrap_err().class(), crate::error::ErrorClass::Rank);
            // SAFETY: no memory is involved.
            let null = unsafe { w.recv_data("MPI_Recv", Data::None, From::ProcNull, Tag::Any) }.unwrap();
            assert_eq!(null, Outcome::DONE);
            // A posted receive completes under `test` alone.
            let mut b = [0u8; 4];
            // SAFETY: `b` outlives the request, which is waited for below.
            let r = unsafe {
                RawRequest::irecv(&w, Data::from_raw(b.as_mut_ptr(), 4), From::Rank(peer), Tag::Tag(1))
            }
            .unwrap();
            w.send(&[1u8, 2, 3, 4], Rank::Rank(peer), 1).unwrap();
            while !r.test() {}
            assert_eq!(r.outcome().unwrap().status.bytes, 4);
            assert_eq!(b, [1, 2, 3, 4]);
            // A synchronous send returns once matched (one way: both ways would deadlock).
            let mut c = [5u8; 3];
            // SAFETY: `c` outlives the blocking calls.
            let data = unsafe { Data::from_raw(c.as_mut_ptr(), 3) };
            if w.rank() == 0 {
                // SAFETY: as above.
                unsafe { w.send_data("MPI_Ssend", data, Rank::Rank(1), 2, Mode::Synchronous) }.unwrap();
            } else {
                c = [0; 3];
                // SAFETY: as above.
                let o = unsafe { w.recv_data("MPI_Recv", data, From::Rank(0), Tag::Tag(2)) }.unwrap();
                assert_eq!((o.status.bytes, o.error, c), (3, None, [5; 3]));
            }
        });
    }
}
