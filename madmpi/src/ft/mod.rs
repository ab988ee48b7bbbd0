//! User-level failure mitigation (ULFM) as MPICH exports it: `MPIX_Comm_revoke`,
//! `MPIX_Comm_shrink`, `MPIX_Comm_agree`, `MPIX_Comm_failure_ack`,
//! `MPIX_Comm_failure_get_acked`.
//!
//! Failures come from nmad: a link to a dead process breaks (or cannot be made), the requests
//! involving it fail with `PeerFailed` (`MPIX_ERR_PROC_FAILED`), and [`nmad::Nmad::failed_peers`]
//! lists them; the launcher keeps the job running when asked to (`madrun
//! -disable-auto-cleanup`, as Hydra, whose SIGUSR1 notices `tools::pmi::notice` catches). What the
//! agreements learn is kept in `FtState`.
//!
//! Revocation: the revoking member sends a notice to every other member on the
//! communicator's own session (tag kind [`Kind::FaultTolerance`]); every communicator's session
//! carries a monitor (`forward`) that, when a notice arrives on a session not yet revoked, sends
//! it on to the other members (so a revoker dying mid-broadcast still revokes everyone, as in
//! MPICH), then revokes the nmad session, from the progress engine, so a member blocked in a
//! receive on it learns at once: its pending receives complete with `MPIX_ERR_REVOKED`, and
//! later sends and receives fail with it. Messages nmad drops unmatched on a revoked session
//! are refused to their senders: a rendezvous or synchronous send waiting for that answer fails
//! with `MPIX_ERR_REVOKED` too. Agreement and shrink work on revoked communicators: they run on
//! a shadow session per context id (`SHADOW_SESSIONS` + id) that revocation does not touch,
//! numbered by the communicator's internal operation count, and use the fault-tolerant
//! `consensus` (O(n²) messages per round: MPICH's is logarithmic).
//!
//! Receives from `MPI_ANY_SOURCE` follow ULFM's rule (`pending`): while a member is known failed
//! and not acknowledged, `MPI_Wait`/`MPI_Test` and their `all`/`any`/`some` forms report
//! `MPIX_ERR_PROC_FAILED_PENDING` for it (the request stays pending; the `all`/`some` forms
//! through `MPI_ERR_IN_STATUS`) and a blocking receive `MPIX_ERR_PROC_FAILED`; nmad wakes their
//! waiters when a peer fails. `MPI_Sendrecv` from any source does not apply it (it waits for a
//! message or a revocation).
//!
//! Test hook: `MADMPI_TEST_REVOKER_DIES_AFTER=k` makes `MPIX_Comm_revoke` send only `k` notices,
//! see them out of the process, then kill the process (SIGKILL): a revoker dying mid-broadcast,
//! for the tests of forwarding. Nothing else reads it.
//!
//! Limits: the last-round messages an agreement leaves unreceived could, in theory, be taken by
//! an agreement of a later communicator with the same context id, members, operation number and
//! round; likewise a notice (original or forwarded) still in flight when its receiver frees the
//! communicator (without a collective with the notice's sender in between: a shrink orders
//! them) revokes the next communicator with that id. An epoch would need one agreed by the
//! members when the communicator is made (its context id is all they share), which comm creation
//! does not provide.
//!
//! Owns the failure knowledge, the acknowledgements per communicator and the revocation
//! protocol; it must not reach into nmad beyond sessions, monitors and `failed_peers`.

mod consensus;
mod forward;
mod pending;
pub mod rails;

pub(crate) use pending::FailurePending;
/// How many failure notices Hydra sent this process (see [`tools::pmi::notice`]).
pub use tools::pmi::notice::count as notices;

use crate::comm::tags::{self, Kind};
use crate::comm::{Comm, Extension, Lifecycle, Runtime, from_nmad};
use crate::error::{Error, ErrorClass, Result};
use crate::group::Group;
use consensus::Round;
use nmad::Session;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

/// First nmad session id of the shadow sessions (below the group agreements' range).
const SHADOW_SESSIONS: u32 = 0x2000_0000;
/// Attempts of a shrink before giving up (each one saw a failure or an id collision).
const SHRINK_ATTEMPTS: u32 = 64;

/// The revocation notice's tag on a communicator's session.
fn revoke_tag() -> u64 {
    tags::internal(Kind::FaultTolerance, 0, 0)
}

/// What this process knows of failures.
#[derive(Default)]
pub(crate) struct FtState {
    /// World ranks found failed by agreements (nmad's own list has the ones seen here).
    learned: Mutex<BTreeSet<u32>>,
    /// Per context id: the world ranks acknowledged failed (`MPIX_Comm_failure_ack`).
    acked: Mutex<HashMap<u32, Vec<u32>>>,
}

impl Extension for FtState {}

impl FtState {
    /// The process's state.
    fn of(rt: &Runtime) -> &FtState {
        rt.extensions().get_or_default()
    }

    /// A communicator with context `id` is gone (not a predefined one: several objects of the
    /// process stand for those): its acknowledgements and its shadow session go with it.
    pub(crate) fn forget(&self, nm: &nmad::Nmad, id: u32) {
        self.acked.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
        nm.close_session(SHADOW_SESSIONS | id);
    }

    fn learned_nothing(&self) -> bool {
        self.learned.lock().unwrap_or_else(PoisonError::into_inner).is_empty()
    }

    fn learn(&self, ranks: impl IntoIterator<Item = u32>) {
        self.learned.lock().unwrap_or_else(PoisonError::into_inner).extend(ranks);
    }
}

/// Fault tolerance's hooks on communicators: every one's session watches for revocation
/// notices, and what was kept for a freed one is forgotten.
pub(crate) struct Revocation;

impl Lifecycle for Revocation {
    fn made(&self, comm: &Comm) {
        forward::watch(comm);
    }

    fn freed(&self, rt: &Runtime, id: u32) {
        FtState::of(rt).forget(&rt.nm, id);
    }
}

/// The world ranks of `comm`'s members known failed here.
fn known_failed(comm: &Comm) -> Vec<u32> {
    let all = failed_ids(comm.runtime());
    comm.group().members().iter().copied().filter(|w| all.binary_search(w).is_ok()).collect()
}

/// `MPIX_Comm_revoke`: tells the other members (failed ones are skipped: a notice that cannot
/// be sent is a failure already known), then revokes `comm` here. If a notice revoked it
/// here first, the sending is refused: its sender told everyone already.
pub fn revoke(comm: &Comm) -> Result<()> {
    let me = comm.runtime_nmad().rank();
    let failed = known_failed(comm);
    let dies_after = revoker_dies_after();
    for (i, &w) in comm.group().members().iter().filter(|&&w| w != me && !failed.contains(&w)).enumerate() {
        if dies_after == Some(i) {
            die(comm);
        }
        let _ = comm.session().send(w, revoke_tag(), &[]);
    }
    if dies_after.is_some() {
        die(comm);
    }
    comm.session().revoke(&format!("by rank {me}"));
    Ok(())
}

/// The test hook's number of notices a revoker sends before dying (see the module doc).
fn revoker_dies_after() -> Option<usize> {
    std::env::var("MADMPI_TEST_REVOKER_DIES_AFTER").ok()?.trim().parse().ok()
}

/// The test hook's death: what was sent leaves the process, then it is killed (SIGKILL).
fn die(comm: &Comm) -> ! {
    comm.runtime_nmad().drain_output(std::time::Duration::from_secs(10));
    log::warn!("MADMPI_TEST_REVOKER_DIES_AFTER: the revoker kills itself");
    // SAFETY: raising a signal has no memory-safety precondition; SIGKILL ends the process.
    unsafe { libc::raise(libc::SIGKILL) };
    std::process::abort()
}

/// Whether `comm` was revoked (here, or by a notice that arrived).
pub fn is_revoked(comm: &Comm) -> bool {
    comm.session().revoked().is_some()
}

/// Consensus numbers one operation may use: every consensus on a shadow session has its own
/// (a member that decided leaves its last round's messages unreceived at the others).
const CONSENSUS_PER_OP: u64 = 2 * SHRINK_ATTEMPTS as u64;

/// The shadow session of `comm` and the first consensus number of this operation on it.
fn shadow(comm: &Comm) -> (Session, u64) {
    let session = comm.runtime_nmad().session(SHADOW_SESSIONS | comm.context_id());
    (session, comm.next_internal_seq() * CONSENSUS_PER_OP)
}

fn round<'a>(comm: &'a Comm, session: &'a Session, seq: u64) -> Round<'a> {
    let failed = known_failed(comm);
    let ranks = comm.group().members();
    Round {
        session,
        ranks,
        me: comm.rank() as usize,
        seq,
        failed: ranks.iter().map(|w| failed.contains(w)).collect(),
    }
}

/// Runs one consensus and records the failures it found.
fn consensus_on(comm: &Comm, session: &Session, seq: u64, mine: &[u64]) -> Result<consensus::Decision> {
    let d = consensus::agree(&round(comm, session, seq), mine).map_err(from_nmad)?;
    let ranks = comm.group().members();
    FtState::of(comm.runtime()).learn(d.failed.iter().zip(ranks).filter(|(f, _)| **f).map(|(_, &w)| w));
    Ok(d)
}

/// What `MPIX_Comm_agree` agreed on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Agreed {
    /// The bitwise AND of the flags of the surviving members (the same at every one).
    pub flag: i32,
    /// World ranks of the members that failed and that this process has not acknowledged.
    pub unacknowledged: Vec<u32>,
}

impl Agreed {
    /// The flag, or `MPIX_ERR_PROC_FAILED` if a failure was not acknowledged here.
    pub fn checked(&self) -> Result<i32> {
        if self.unacknowledged.is_empty() {
            return Ok(self.flag);
        }
        Err(Error::new(
            ErrorClass::MpixProcFailed,
            format!(
                "processes {:?} (world ranks) failed and were not acknowledged (agreed flag {:#x})",
                self.unacknowledged, self.flag
            ),
        ))
    }
}

/// `MPIX_Comm_agree`: agrees on the bitwise AND of `flag` over the surviving members, and on the
/// members that failed (checked against this process's acknowledgements: [`Agreed::checked`]).
/// Every survivor returns, whatever fails meanwhile.
pub fn agree(comm: &Comm, flag: i32) -> Result<Agreed> {
    let (session, seq) = shadow(comm);
    let d = consensus_on(comm, &session, seq, &[u64::from(flag as u32)])?;
    let acked = acked(comm);
    let ranks = comm.group().members();
    let unacknowledged =
        d.failed.iter().zip(ranks).filter(|(f, w)| **f && !acked.contains(w)).map(|(_, &w)| w).collect();
    Ok(Agreed { flag: d.and[0] as u32 as i32, unacknowledged })
}

/// `MPIX_Comm_shrink`: a communicator of the surviving members, in their order here, agreed
/// among them despite failures meanwhile.
pub fn shrink(comm: &Comm) -> Result<Comm> {
    let (session, seq) = shadow(comm);
    let rt = comm.runtime();
    let ranks = comm.group().members();
    for attempt in 0..SHRINK_ATTEMPTS {
        // Two agreements per attempt: the failed members and the ids free at all survivors,
        // then whether every survivor could take the lowest one and saw no new failure.
        let base = seq + 2 * u64::from(attempt);
        let free = rt.ids.free_words();
        let d = consensus_on(comm, &session, base, &free)?;
        let Some(id) = crate::comm::context::lowest_free(&d.and) else {
            return Err(Error::other("MPIX_Comm_shrink: no context id free at every survivor"));
        };
        let took = rt.ids.take(id);
        let confirm = consensus_on(comm, &session, base + 1, &[u64::from(took)])?;
        if confirm.and[0] == 1 && confirm.failed == d.failed {
            let survivors: Vec<u32> =
                ranks.iter().zip(&d.failed).filter(|(_, f)| !**f).map(|(&w, _)| w).collect();
            return Ok(Comm::make(rt, Group::new(survivors)?, id, ""));
        }
        if took {
            rt.ids.release(id);
        }
    }
    Err(Error::other(format!("MPIX_Comm_shrink: no agreement after {SHRINK_ATTEMPTS} attempts")))
}

/// Whether this process knows of a failed process of its own job (seen by nmad or learned in
/// an agreement): what decides whether finalize may use the launcher's fence, which is the
/// job's. A lost process of another job (a spawned child, a parent, a connected job) does not
/// count: it usually just ended after `MPI_Comm_disconnect`, and whether it is seen lost
/// depends on timing, so counting it would let the members of one job disagree, some waiting
/// in the fence and the others in [`survivors_barrier`], forever.
pub(crate) fn failures_known(rt: &Runtime) -> bool {
    !failed_of_job(rt).is_empty()
}

/// The processes known failed here (seen by nmad or learned by agreements), as nmad ids
/// (universe-wide), in order.
fn failed_ids(rt: &Runtime) -> Vec<u32> {
    let mut all: BTreeSet<u32> = rt.nm.failed_peers().into_iter().collect();
    all.extend(FtState::of(rt).learned.lock().unwrap_or_else(PoisonError::into_inner).iter());
    all.into_iter().collect()
}

/// The world ranks of this job's processes known failed here, in order (other jobs' processes
/// do not count: see [`failures_known`]).
pub(crate) fn failed_of_job(rt: &Runtime) -> Vec<u32> {
    let (base, size) = (rt.nm.base(), rt.nm.size());
    failed_ids(rt).into_iter().filter(|w| (base..base + size).contains(w)).map(|w| w - base).collect()
}

/// A barrier among the surviving processes of the job, whatever fails meanwhile (a
/// fault-tolerant agreement over the world's shadow session, numbered apart from the world
/// communicator's own operations).
/// Returns the world ranks agreed failed (the same list at every survivor).
pub(crate) fn survivors_barrier(rt: &Arc<Runtime>) -> Result<Vec<u32>> {
    let world = Comm::world(rt);
    let session = rt.nm.session(SHADOW_SESSIONS | world.context_id());
    // The largest consensus number a shadow session can carry (24 bits), never reached by
    // the operations of a communicator.
    let seq = (1 << tags::SEQ_BITS) - 1;
    let d = consensus_on(&world, &session, seq, &[])?;
    let ranks = world.group().members();
    Ok(d.failed.iter().zip(ranks).filter(|(f, _)| **f).map(|(_, &w)| w).collect())
}

/// `MPIX_Comm_failure_ack`: acknowledges the failures of `comm`'s members known here now.
pub fn failure_ack(comm: &Comm) {
    let failed = known_failed(comm);
    FtState::of(comm.runtime())
        .acked
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(comm.context_id(), failed);
}

/// World ranks of `comm`'s members acknowledged failed, in communicator order.
fn acked(comm: &Comm) -> Vec<u32> {
    let ft = FtState::of(comm.runtime());
    ft.acked
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&comm.context_id())
        .cloned()
        .unwrap_or_default()
}

/// `MPIX_Comm_failure_get_acked`: the group of the members acknowledged failed.
pub fn failed_acked(comm: &Comm) -> Result<Group> {
    Group::new(acked(comm))
}

#[cfg(test)]
mod tests;
