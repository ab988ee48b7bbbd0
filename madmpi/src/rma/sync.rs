//! The synchronizations (MPI 4.0 §12.5): fence, post/start/complete/wait/test, lock/unlock,
//! lock_all/unlock_all, the flushes, and `MPI_Win_sync`.
//!
//! - Fence: the batches leave, the answers of this process's gets come in, then one
//!   exchange of how many operations each process sent each target; each waits until it
//!   applied as many from every origin (one origin's records are applied in order, so its
//!   count says all of them are in). No acknowledgement per operation.
//! - PSCW: `post` sends a post record to each origin; `start` waits for them; `complete` sends
//!   a complete record after the epoch's operations; `wait` waits for one from each origin.
//! - Lock: requested lazily (see `origin`); unlock sends the unlock record after the
//!   operations and waits for its ack, so lock + put + unlock is one message and one answer.
//!   A lock on our own rank is acquired before `MPI_Win_lock` returns (the program may then
//!   load and store its memory).
//! - Flush: a flush record answered once the operations before it are applied. Every
//!   synchronization that completes operations also waits for this process's large transfers
//!   to the targets (`bulk`): their buffers are the program's.
//!
//! Wrong sequences are `MPI_ERR_RMA_SYNC`. Owns the epoch transitions; the target side counts.

use super::bulk::Transfer;
use super::lock::LockKind;
use super::origin::{Access, Held, Origin};
use super::service::Slot;
use super::shm::{ShmPath, wait};
use super::window::Win;
use super::wire::Record;
use crate::comm::from_nmad;
use crate::comm::internal::allgather;
use crate::error::{Error, Result};
use crate::group::Group;
use std::sync::atomic::{Ordering::SeqCst, fence};
use std::sync::{Arc, MutexGuard, PoisonError};

/// The `assert` bits of the synchronization calls (MPICH's values).
pub mod mode {
    pub const NOCHECK: i32 = 1024;
    pub const NOSTORE: i32 = 2048;
    pub const NOPUT: i32 = 4096;
    pub const NOPRECEDE: i32 = 8192;
    pub const NOSUCCEED: i32 = 16384;
}

fn sync_error(what: &str) -> Error {
    Error::rma_sync(what.to_string())
}

/// What a synchronization waits for: answer slots (acks, gets' answers) and large transfers
/// with their nmad peers.
#[derive(Default)]
struct Waits {
    slots: Vec<Arc<Slot>>,
    transfers: Vec<(Arc<Transfer>, u32)>,
}

impl Win {
    pub(super) fn origin_state(&self) -> MutexGuard<'_, Origin> {
        self.origin.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Enters epoch `a` (mirrored for the fast path's hot calls).
    fn set_access(&self, o: &mut Origin, a: Access) {
        if let Some(f) = &self.fast {
            f.mirror(&a);
        }
        o.access = a;
    }

    /// Whether the fast path holds a lock from `MPI_Win_lock` (which then excludes the
    /// other epochs).
    fn fast_locked(&self) -> bool {
        self.fast.as_ref().is_some_and(|f| f.any_locked())
    }

    /// The fault an earlier operation met at its target, if any (reported once).
    fn take_fault(&self) -> Result<()> {
        match self.core.fault.lock().unwrap_or_else(PoisonError::into_inner).take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Waits for the answers awaited from `targets`, and for the large transfers to them
    /// (under the origin state: for the collective synchronizations).
    fn wait_answers(&self, o: &mut Origin, targets: impl IntoIterator<Item = u32>) -> Result<()> {
        let mut w = Waits::default();
        self.answers_of(o, targets, &mut w);
        self.wait_for(w)
    }

    /// Adds to `w` the answers awaited from `targets` and the large transfers to them (shared,
    /// not taken: another thread's flush waits for them too).
    fn answers_of(&self, o: &mut Origin, targets: impl IntoIterator<Item = u32>, w: &mut Waits) {
        for t in targets {
            o.prune(t);
            let out = &o.to[t as usize];
            w.slots.extend(out.awaited.iter().cloned());
            w.transfers.extend(out.transfers.iter().map(|x| (x.clone(), self.core.peers[t as usize])));
        }
    }

    /// Sends `rec` (a flush or unlock answered by an ack) to each target after its batch; the
    /// acks go into `w`.
    fn send_acked(&self, o: &mut Origin, targets: &[u32], make: impl Fn(u64) -> Record, w: &mut Waits) {
        for &t in targets {
            let slot = self.core.service.slot(self.core.peers[t as usize], 0, None);
            o.push(&self.core, t, make(slot.id), &[]);
            o.flush_out(&self.core, t);
            w.slots.push(slot);
        }
    }

    /// Waits for everything in `w`: the first error, once all are in. Called without the
    /// origin state by the passive-target calls, which other threads of the process may make
    /// at once: a thread waiting for a target's answer while holding it would keep the
    /// process's other threads from the calls that let that target answer (an exclusive lock
    /// held by one of them, say).
    fn wait_for(&self, w: Waits) -> Result<()> {
        let mut first = Ok(());
        let slots = w.slots.into_iter().map(|s| s.wait(&self.core.nm));
        let transfers = w.transfers.into_iter().map(|(x, peer)| x.wait(&self.core.nm, peer));
        for r in slots.chain(transfers) {
            if first.is_ok() {
                first = r;
            }
        }
        first
    }

    fn ranks_of(&self, group: &Group) -> Result<Vec<u32>> {
        group
            .members()
            .iter()
            .map(|&w| {
                self.comm
                    .group()
                    .rank_of(w)
                    .ok_or_else(|| Error::group(format!("process {w} of the group is not in the window")))
            })
            .collect()
    }

    /// PSCW: tells each of `ranks` of a post (`POSTS`, to origins) or a complete (`COMPLETES`,
    /// to targets), after this process's operations to it.
    fn tell(&self, o: &mut Origin, ranks: &[u32], which: usize) {
        for &r in ranks {
            match &self.core.shm {
                Some(shm) => shm.raise(which, r, self.core.me),
                None => {
                    o.push(&self.core, r, if which == POSTS { Record::Post } else { Record::Complete }, &[]);
                    o.flush_out(&self.core, r);
                }
            }
        }
    }

    /// PSCW: waits until each of `ranks` told us of a post or a complete ([`Win::tell`]).
    fn heard(&self, o: &mut Origin, ranks: &[u32], which: usize) -> Result<()> {
        let watch: Vec<u32> = ranks.iter().map(|&r| self.core.peers[r as usize]).collect();
        for &r in ranks {
            match &self.core.shm {
                Some(shm) => shm_take(shm, self.core.me, o, which, r),
                None => {
                    let post = which == POSTS;
                    self.core.notify.wait_until(&self.core.nm, &watch, || self.core.consume(r, post))?
                }
            }
        }
        Ok(())
    }

    /// `MPI_Win_fence` (collective).
    pub fn fence(&self, assert: i32) -> Result<()> {
        let mut o = self.origin_state();
        if !matches!(o.access, Access::None | Access::Fence { .. })
            || o.exposure.is_some()
            || self.fast_locked()
        {
            return Err(sync_error("MPI_Win_fence inside another synchronization's epoch"));
        }
        if self.core.shm.is_some() {
            // Every operation completed in its call: a memory fence and a barrier.
            fence(SeqCst);
            if assert & mode::NOPRECEDE == 0 || assert & mode::NOSUCCEED == 0 {
                self.comm.internal(|m| allgather(m, 0, &[]).map(drop).map_err(from_nmad))?;
            }
            self.set_access(
                &mut o,
                if assert & mode::NOSUCCEED != 0 { Access::None } else { Access::Fence { used: false } },
            );
            return Ok(());
        }
        let n = self.core.members.len() as u32;
        (0..n).for_each(|t| o.flush_out(&self.core, t));
        let answers = self.wait_answers(&mut o, 0..n);
        if assert & mode::NOPRECEDE == 0 || assert & mode::NOSUCCEED == 0 {
            let mine: Vec<u8> = o.to.iter().flat_map(|t| t.ops.to_le_bytes()).collect();
            let all = self.comm.internal(|m| allgather(m, 0, &mine).map_err(from_nmad))?;
            let me = self.core.me as usize;
            let sent_to_me: Vec<u64> = all
                .chunks_exact(8 * n as usize)
                .map(|row| u64::from_le_bytes(row[8 * me..8 * me + 8].try_into().expect("8 bytes")))
                .collect();
            self.core.notify.wait_until(&self.core.nm, &self.core.peers, || {
                sent_to_me.iter().enumerate().all(|(origin, &sent)| self.core.counts(origin as u32).0 >= sent)
            })?;
        }
        self.set_access(
            &mut o,
            if assert & mode::NOSUCCEED != 0 { Access::None } else { Access::Fence { used: false } },
        );
        answers?;
        self.take_fault()
    }

    /// `MPI_Win_post`: opens an exposure epoch to the origins of `group`.
    pub fn post(&self, group: &Group, _assert: i32) -> Result<()> {
        let ranks = self.ranks_of(group)?;
        let mut o = self.origin_state();
        if o.exposure.is_some() {
            return Err(sync_error("MPI_Win_post while an exposure epoch is open"));
        }
        self.tell(&mut o, &ranks, POSTS);
        o.exposure = Some(ranks);
        Ok(())
    }

    /// `MPI_Win_start`: opens an access epoch to the targets of `group`, once each posted.
    pub fn start(&self, group: &Group, _assert: i32) -> Result<()> {
        let ranks = self.ranks_of(group)?;
        let mut o = self.origin_state();
        if !matches!(o.access, Access::None | Access::Fence { used: false }) || self.fast_locked() {
            return Err(sync_error("MPI_Win_start inside another access epoch"));
        }
        self.heard(&mut o, &ranks, POSTS)?;
        self.set_access(&mut o, Access::Pscw(ranks));
        Ok(())
    }

    /// `MPI_Win_complete`: ends the access epoch of `MPI_Win_start`.
    pub fn complete(&self) -> Result<()> {
        let mut o = self.origin_state();
        let Access::Pscw(ranks) = o.access.clone() else {
            return Err(sync_error("MPI_Win_complete without MPI_Win_start"));
        };
        self.tell(&mut o, &ranks, COMPLETES);
        self.set_access(&mut o, Access::None);
        self.wait_answers(&mut o, ranks)?;
        self.take_fault()
    }

    /// `MPI_Win_wait`: ends the exposure epoch once every origin completed.
    pub fn wait(&self) -> Result<()> {
        let mut o = self.origin_state();
        let Some(ranks) = o.exposure.clone() else {
            return Err(sync_error("MPI_Win_wait without MPI_Win_post"));
        };
        self.heard(&mut o, &ranks, COMPLETES)?;
        o.exposure = None;
        Ok(())
    }

    /// `MPI_Win_test`: [`Win::wait`] if every origin completed (true), else nothing (false).
    pub fn test(&self) -> Result<bool> {
        self.core.nm.pioman().progress();
        let mut o = self.origin_state();
        let Some(ranks) = o.exposure.clone() else {
            return Err(sync_error("MPI_Win_test without MPI_Win_post"));
        };
        if let Some(shm) = &self.core.shm {
            let me = self.core.me;
            if !ranks.iter().all(|&r| shm.count(COMPLETES, me, r) > o.seen[COMPLETES][r as usize]) {
                return Ok(false);
            }
            ranks.iter().for_each(|&r| o.seen[COMPLETES][r as usize] += 1);
            fence(SeqCst);
            o.exposure = None;
            return Ok(true);
        }
        if !ranks.iter().all(|&r| self.core.counts(r).2 > 0) {
            return Ok(false);
        }
        ranks.iter().for_each(|&r| {
            self.core.consume(r, false);
        });
        o.exposure = None;
        Ok(true)
    }

    /// Requests the lock on our own rank and waits for it.
    /// Asks for this process's own window lock and waits for it, having let the origin state
    /// go (another thread of the process may hold the lock, and need that state to release it).
    fn lock_own(&self, mut o: MutexGuard<'_, Origin>, kind: LockKind) -> Result<()> {
        let me = self.core.me;
        o.to[me as usize].lock = Held::Sent(kind);
        o.push(&self.core, me, Record::Lock { exclusive: kind == LockKind::Exclusive }, &[]);
        o.flush_out(&self.core, me);
        drop(o);
        self.core.notify.wait_until(&self.core.nm, &[], || self.core.holds_own_lock())
    }

    fn wanted(&self, kind: LockKind, assert: i32) -> Held {
        if assert & mode::NOCHECK != 0 { Held::Unchecked } else { Held::Wanted(kind) }
    }

    /// `MPI_Win_lock`.
    pub fn lock(&self, kind: LockKind, rank: u32, assert: i32) -> Result<()> {
        let n = self.core.members.len() as u32;
        if rank >= n {
            return Err(Error::rank(format!("rank {rank} is not in the window's {n} ranks")));
        }
        if let Some(r) = self.fast_lock(kind, rank, assert) {
            return r;
        }
        if self.hints().no_locks {
            return Err(sync_error("MPI_Win_lock on a window created with no_locks"));
        }
        let mut o = self.origin_state();
        match o.access {
            Access::None | Access::Fence { used: false } | Access::Locks => {}
            _ => return Err(sync_error("MPI_Win_lock inside another access epoch")),
        }
        if o.to[rank as usize].lock != Held::None {
            return Err(sync_error("MPI_Win_lock on a rank this process has locked"));
        }
        self.set_access(&mut o, Access::Locks);
        match self.wanted(kind, assert) {
            Held::Wanted(k) if self.core.shm.is_some() => {
                self.core.shm.as_ref().expect("fast path").lock(rank, k == LockKind::Exclusive);
                o.to[rank as usize].lock = Held::Sent(k);
                Ok(())
            }
            Held::Wanted(k) if rank == self.core.me => self.lock_own(o, k),
            h => {
                o.to[rank as usize].lock = h;
                Ok(())
            }
        }
    }

    /// Ends the passive epoch on `targets`: their unlock records (or a flush, for
    /// `MPI_MODE_NOCHECK`); returns the acks and answers to wait for once the origin state is
    /// let go (`Win::wait_for`).
    fn release(&self, o: &mut Origin, targets: &[u32]) -> Waits {
        let mut w = Waits::default();
        if let Some(shm) = &self.core.shm {
            fence(SeqCst);
            for &t in targets {
                if let Held::Sent(k) = std::mem::replace(&mut o.to[t as usize].lock, Held::None) {
                    shm.unlock(t, k == LockKind::Exclusive);
                }
            }
            return w;
        }
        let (mut unlock, mut flush) = (Vec::new(), Vec::new());
        for &t in targets {
            match std::mem::replace(&mut o.to[t as usize].lock, Held::None) {
                Held::Sent(_) => unlock.push(t),
                Held::Unchecked => flush.push(t),
                Held::Wanted(_) | Held::None => {}
            }
        }
        self.send_acked(o, &unlock, |reply| Record::Unlock { reply }, &mut w);
        self.send_acked(o, &flush, |reply| Record::Flush { reply }, &mut w);
        self.answers_of(o, targets.iter().copied(), &mut w);
        w
    }

    /// `MPI_Win_unlock`.
    pub fn unlock(&self, rank: u32) -> Result<()> {
        if let Some(r) = self.fast_unlock(rank) {
            return r;
        }
        let mut o = self.origin_state();
        if o.access != Access::Locks || o.to.get(rank as usize).is_none_or(|t| t.lock == Held::None) {
            return Err(sync_error("MPI_Win_unlock without MPI_Win_lock on that rank"));
        }
        let w = self.release(&mut o, &[rank]);
        if o.to.iter().all(|t| t.lock == Held::None) {
            self.set_access(&mut o, Access::None);
        }
        drop(o);
        self.wait_for(w)?;
        self.take_fault()
    }

    /// `MPI_Win_lock_all`: a shared lock on every rank.
    pub fn lock_all(&self, assert: i32) -> Result<()> {
        if self.hints().no_locks {
            return Err(sync_error("MPI_Win_lock_all on a window created with no_locks"));
        }
        let mut o = self.origin_state();
        if !matches!(o.access, Access::None | Access::Fence { used: false }) || self.fast_locked() {
            return Err(sync_error("MPI_Win_lock_all inside another access epoch"));
        }
        let held = self.wanted(LockKind::Shared, assert);
        o.to.iter_mut().for_each(|t| t.lock = held);
        self.set_access(&mut o, Access::LockAll);
        match &self.core.shm {
            Some(shm) if held != Held::Unchecked => {
                for (t, out) in o.to.iter_mut().enumerate() {
                    shm.lock(t as u32, false);
                    out.lock = Held::Sent(LockKind::Shared);
                }
                Ok(())
            }
            None if held != Held::Unchecked => self.lock_own(o, LockKind::Shared),
            _ => Ok(()),
        }
    }

    /// `MPI_Win_unlock_all`.
    pub fn unlock_all(&self) -> Result<()> {
        let mut o = self.origin_state();
        if o.access != Access::LockAll {
            return Err(sync_error("MPI_Win_unlock_all without MPI_Win_lock_all"));
        }
        let all: Vec<u32> = (0..self.core.members.len() as u32).collect();
        self.set_access(&mut o, Access::None);
        let w = self.release(&mut o, &all);
        drop(o);
        self.wait_for(w)?;
        self.take_fault()
    }

    /// Whether a flush of `rank` (or of all) is in a passive-target epoch on it.
    fn check_passive(&self, o: &Origin, rank: Option<u32>) -> Result<()> {
        let fast = |t: u32| self.fast.as_ref().is_some_and(|f| f.locked(t));
        let locked = |t: u32| o.to.get(t as usize).is_some_and(|t| t.lock != Held::None);
        match (&o.access, rank) {
            (Access::Locks | Access::LockAll, Some(t)) if locked(t) => Ok(()),
            (Access::Locks | Access::LockAll, None) => Ok(()),
            (Access::None, Some(t)) if fast(t) => Ok(()),
            (Access::None, None) if self.fast_locked() => Ok(()),
            _ => Err(sync_error("a flush outside a passive-target epoch on that rank")),
        }
    }

    fn passive_targets(&self, o: &Origin, rank: Option<u32>) -> Result<Vec<u32>> {
        let locked = |t: u32| o.to[t as usize].lock != Held::None;
        match (&o.access, rank) {
            (Access::Locks | Access::LockAll, Some(t)) if (t as usize) < o.to.len() && locked(t) => {
                Ok(vec![t])
            }
            (Access::Locks | Access::LockAll, None) => {
                Ok((0..o.to.len() as u32).filter(|&t| locked(t)).collect())
            }
            _ => Err(sync_error("a flush outside a passive-target epoch on that rank")),
        }
    }

    /// `MPI_Win_flush` (`Some(rank)`) and `MPI_Win_flush_all` (`None`): the operations to
    /// those targets are complete there.
    pub fn flush(&self, rank: Option<u32>) -> Result<()> {
        if rank.is_some_and(|t| self.flush_hot(t)) {
            return Ok(());
        }
        let mut o = self.origin_state();
        if self.core.shm.is_some() {
            self.check_passive(&o, rank)?;
            fence(SeqCst);
            return Ok(());
        }
        let targets = self.passive_targets(&o, rank)?;
        // A target whose lock request has not left got no operation.
        let sent: Vec<u32> =
            targets.iter().copied().filter(|&t| !matches!(o.to[t as usize].lock, Held::Wanted(_))).collect();
        let mut w = Waits::default();
        self.send_acked(&mut o, &sent, |reply| Record::Flush { reply }, &mut w);
        self.answers_of(&mut o, targets, &mut w);
        drop(o);
        self.wait_for(w)?;
        self.take_fault()
    }

    /// `MPI_Win_flush_local` / `_all`: the origin buffers are free again (small puts and
    /// accumulates copied them at the call; large ones left; the answers of gets are in).
    pub fn flush_local(&self, rank: Option<u32>) -> Result<()> {
        if rank.is_some_and(|t| self.flush_hot(t)) {
            return Ok(());
        }
        let mut o = self.origin_state();
        if self.core.shm.is_some() {
            return self.check_passive(&o, rank);
        }
        let targets = self.passive_targets(&o, rank)?;
        targets.iter().for_each(|&t| o.flush_out(&self.core, t));
        self.wait_answers(&mut o, targets)?;
        self.take_fault()
    }

    /// `MPI_Win_sync`: the memory of the window and this process's view of it agree.
    pub fn sync(&self) -> Result<()> {
        fence(SeqCst);
        Ok(())
    }
}

/// The fast path's PSCW counters: posts (origin side), completes (target side).
const POSTS: usize = 0;
const COMPLETES: usize = 1;

/// Waits until `from` raised counter `which` for us once more than we used, and uses it.
fn shm_take(shm: &ShmPath, me: u32, o: &mut Origin, which: usize, from: u32) {
    let used = o.seen[which][from as usize];
    wait(&|| shm.count(which, me, from) > used);
    o.seen[which][from as usize] += 1;
    fence(SeqCst);
}
