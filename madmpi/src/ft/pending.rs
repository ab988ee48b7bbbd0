//! ULFM's rule for receives from `MPI_ANY_SOURCE` (as MPICH's ch4): while a member of the
//! communicator is known failed and not acknowledged (`MPIX_Comm_failure_ack`), such a receive
//! cannot know whether its message would have come from the dead: `MPI_Wait`/`MPI_Test` on it
//! return `MPIX_ERR_PROC_FAILED_PENDING` and leave it pending, a blocking receive cancels it and
//! returns `MPIX_ERR_PROC_FAILED`. After the acknowledgement it waits normally again. The waits
//! on several requests apply the same rule (`request::completion::wait_any_or_failure_pending`,
//! through `RawRequest::failure_pending`); the C library reports it per request.
//!
//! The waiter sleeps on its nmad request's condition with [`nmad::PEER_LOST`] as well as
//! completion: nmad signals it on every posted receive from any source when a peer fails.
//!
//! Owns that rule and the wait that applies it; it must not complete or cancel requests itself.

use super::{acked, known_failed};
use crate::comm::{AnySourceRule, Comm};
use crate::error::{Error, ErrorClass, Result};

/// `MPIX_ERR_PROC_FAILED_PENDING` if a member of `comm` is known failed and not acknowledged.
pub(crate) fn unacknowledged_failure(comm: &Comm) -> Option<Error> {
    let rt = comm.runtime();
    // Cheap first: no peer lost here and nothing learned from agreements.
    if rt.nm.peers_lost() == 0 && super::FtState::of(rt).learned_nothing() {
        return None;
    }
    let acked = acked(comm);
    let unacked: Vec<u32> = known_failed(comm).into_iter().filter(|w| !acked.contains(w)).collect();
    (!unacked.is_empty()).then(|| {
        Error::new(
            ErrorClass::MpixProcFailedPending,
            format!(
                "a receive from any source: processes {unacked:?} (world ranks) failed, not acknowledged"
            ),
        )
    })
}

/// Waits for `req` (a receive from any source on `comm`) to complete, or returns
/// `MPIX_ERR_PROC_FAILED_PENDING` (the request still pending) once a member's failure is
/// known and not acknowledged. Woken by nmad when a peer fails: no polling.
pub(crate) fn wait_any_source(comm: &Comm, req: &nmad::Request) -> Result<()> {
    let cond = req.cond();
    loop {
        if req.test() {
            return Ok(());
        }
        // Re-armed before the check: a failure found after it signals again, so the wait
        // below cannot miss it.
        cond.clear(nmad::PEER_LOST);
        if let Some(e) = unacknowledged_failure(comm) {
            return Err(e);
        }
        comm.runtime_nmad().pioman().wait(cond, nmad::COMPLETED | nmad::PEER_LOST);
    }
}

/// The rule, as the runtime applies it to receives from any source.
pub(crate) struct FailurePending;

impl AnySourceRule for FailurePending {
    fn wait(&self, comm: &Comm, req: &nmad::Request) -> Result<()> {
        wait_any_source(comm, req)
    }
    fn stopped(&self, comm: &Comm) -> Option<Error> {
        unacknowledged_failure(comm)
    }
}
