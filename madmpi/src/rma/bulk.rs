//! Large one-sided transfers on nmad's message path: a put, get or accumulate (any target type)
//! above [`BULK_MIN`] bytes travels as one tagged nmad message on the window's communicator
//! (rendezvous: zero-copy from the origin's buffer into the window, or from the window into
//! the origin's buffer, at the driver's bulk rate) instead of active-message chunks, each
//! copied twice and paced by credits. The record ([`Record::PutBulk`], [`Record::GetBulk`])
//! still goes in the origin's batch, so it is applied in order with the others: the target
//! posts its side of the message when it reaches the record, and holds that origin's later
//! records (an unlock, a flush, the next operation) until the message completed.
//!
//! Owns the transfers' nmad requests on both sides; the target's deferral is `target`'s, the
//! origin's waits `sync`'s.
//!
//! [`Record::PutBulk`]: super::wire::Record::PutBulk
//! [`Record::GetBulk`]: super::wire::Record::GetBulk

use crate::comm::tags;
use crate::error::{Error, Result};
use nmad::{Data, Monitor, Request, SendMode, Session, Source, TagMatch};
use std::pin::Pin;

/// Smallest transfer sent apart: below it, active messages (no rendezvous round trip) win
/// (over tcp at 64 KiB they streamed 1.6–1.9 GB/s against 1.4–1.7, and a passive target's
/// 64 KiB put + get + accumulate took 0.6–0.8 ms against 1.3–1.7 ms: three rendezvous, each
/// waiting for the target's progression).
pub(crate) const BULK_MIN: u64 = 256 << 10;

/// Which way a transfer's data goes: a put's or an accumulate's to the target, a get's back.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Way {
    ToTarget,
    ToOrigin,
}

/// One transfer's nmad request, on either side.
pub(crate) struct Transfer {
    req: Pin<Box<Request>>,
    /// Bytes a get's origin expects (a refused get arrives empty).
    expect: Option<u64>,
    /// The target refused the operation: its side only drains or answers empty.
    pub(crate) refused: bool,
}

// SAFETY: the request's memory (the program's buffer or the window) is kept valid by MPI's
// rules until the transfer completes, and the request itself is only touched through its
// thread-safe condition and, once complete, its result.
unsafe impl Send for Transfer {}

impl Transfer {
    /// Sends `data` as transfer `seq` to nmad peer `peer`.
    ///
    /// # Safety
    /// `data` must stay valid and unchanged until the transfer completes.
    pub(crate) unsafe fn send(
        session: &Session,
        peer: u32,
        (seq, way): (u64, Way),
        data: Data,
        monitor: Option<Monitor>,
    ) -> Result<Transfer> {
        let mut req = Box::pin(Request::new());
        req.as_mut().set_monitor(monitor);
        let tag = tags::one_sided(seq, way == Way::ToOrigin);
        // SAFETY: the caller's contract for `data`; the request is pinned in its box, which
        // the transfer keeps until it completes (a dropped request waits).
        unsafe { session.isend(peer, tag, data, SendMode::default(), req.as_ref()) }
            .map_err(crate::comm::from_nmad)?;
        Ok(Transfer { req, expect: None, refused: false })
    }

    /// Receives transfer `seq` from nmad peer `peer` into `data` (`expect` bytes for a get's
    /// origin).
    ///
    /// # Safety
    /// `data` must stay valid for writes until the transfer completes.
    pub(crate) unsafe fn recv(
        session: &Session,
        peer: u32,
        (seq, way): (u64, Way),
        data: Data,
        expect: Option<u64>,
        monitor: Option<Monitor>,
    ) -> Result<Transfer> {
        let mut req = Box::pin(Request::new());
        req.as_mut().set_monitor(monitor);
        let tag = TagMatch::exact(tags::one_sided(seq, way == Way::ToOrigin));
        // SAFETY: as for `send`.
        unsafe { session.irecv(Source::Rank(peer), tag, data, req.as_ref()) }
            .map_err(crate::comm::from_nmad)?;
        Ok(Transfer { req, expect, refused: false })
    }

    pub(crate) fn is_done(&self) -> bool {
        self.req.test()
    }

    /// Waits until the transfer completed (or `peer` failed): its outcome.
    pub(crate) fn wait(&self, nm: &nmad::Nmad, peer: u32) -> Result<()> {
        let failed = || format!("process {peer} failed during a one-sided transfer");
        super::service::wait_unless_failed(nm, self.req.cond(), peer, failed)?;
        self.outcome()
    }

    /// The outcome of a completed transfer: an nmad error, or a get answered with fewer bytes
    /// than asked (the target refused it and reported why in a fault record).
    pub(crate) fn outcome(&self) -> Result<()> {
        match self.req.result() {
            Some(Ok(st)) => match self.expect {
                Some(n) if st.received != n => {
                    Err(Error::rma_range(format!("the target answered {} of {n} bytes", st.received)))
                }
                _ => Ok(()),
            },
            Some(Err(e)) => Err(crate::comm::from_nmad(e)),
            None => Err(Error::intern("a one-sided transfer is not complete".to_string())),
        }
    }
}
