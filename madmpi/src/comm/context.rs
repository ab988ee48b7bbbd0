//! Context ids. Each communicator is the nmad session numbered by its context id; the members
//! of a new communicator agree on the lowest id free at all of them (as MPICH does), with a
//! bit set per process and an AND-reduction over the parent communicator.
//!
//! With MPI_THREAD_MULTIPLE two threads of a process may create communicators from different
//! parents at once and pick the same id: each agreement is therefore confirmed — every member
//! tries to take the id locally, and a second AND-reduction tells whether all succeeded; if not,
//! the members that took it give it back and the agreement is retried.
//!
//! Owns the per-process table of ids in use; must not create sessions (the communicator layer
//! does).

use crate::comm::from_nmad;
use crate::comm::internal::{Members, allreduce_and};
use crate::error::{Error, ErrorClass, Result};
use std::sync::Mutex;

/// Context ids per process (the bit set is `WORDS` × 64 bits).
pub const MAX_CONTEXTS: u32 = 4096;
const WORDS: usize = MAX_CONTEXTS as usize / 64;
/// `MPI_COMM_WORLD`'s and `MPI_COMM_SELF`'s ids, never agreed on.
pub const WORLD: u32 = 0;
pub const SELF: u32 = 1;
/// Agreements retried at most this often before giving up (each retry means another thread
/// took the agreed id meanwhile).
const MAX_ATTEMPTS: u32 = 1000;

/// The ids in use in this process.
pub struct ContextIds {
    /// Bit set = free.
    free: Mutex<[u64; WORDS]>,
}

impl Default for ContextIds {
    fn default() -> Self {
        let mut free = [u64::MAX; WORDS];
        free[0] &= !(1 << WORLD | 1 << SELF);
        ContextIds { free: Mutex::new(free) }
    }
}

impl ContextIds {
    fn snapshot(&self) -> [u64; WORDS] {
        *self.free.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The free-id bit set, as words (for agreements that AND them themselves).
    pub(crate) fn free_words(&self) -> Vec<u64> {
        self.snapshot().to_vec()
    }

    /// Marks `id` used; `false` if it was already.
    pub fn take(&self, id: u32) -> bool {
        let mut f = self.free.lock().unwrap_or_else(|e| e.into_inner());
        let (w, b) = (id as usize / 64, id % 64);
        let was_free = f[w] & (1 << b) != 0;
        f[w] &= !(1 << b);
        was_free
    }

    /// Gives `id` back (when its communicator is freed).
    pub fn release(&self, id: u32) {
        if id == WORLD || id == SELF || id >= MAX_CONTEXTS {
            return;
        }
        let mut f = self.free.lock().unwrap_or_else(|e| e.into_inner());
        f[id as usize / 64] |= 1 << (id % 64);
    }

    /// How many ids are in use.
    #[cfg(test)]
    pub fn in_use(&self) -> u32 {
        MAX_CONTEXTS - self.snapshot().iter().map(|w| w.count_ones()).sum::<u32>()
    }
}

/// Agrees with the other members on a context id free at all of them and takes it. Uses rounds
/// `4k` to `4k + 3` of the operation for attempt `k`.
pub(crate) fn agree(ids: &ContextIds, m: &Members<'_>) -> Result<u32> {
    agree_joined(ids, m, &mut |_, _, _| Ok(()))
}

/// How a group's agreement is joined with another group's (intercommunicators): called at every
/// member with the group's AND of a bit set and a round of the operation to use, it leaves the
/// AND over both groups in the bit set.
pub(crate) type Join<'j> = dyn FnMut(&Members<'_>, u32, &mut [u64]) -> Result<()> + 'j;

/// [`agree`] over this group and, through `join`, another one: the id is free at the members of
/// both, and taken at all of them.
pub(crate) fn agree_joined(ids: &ContextIds, m: &Members<'_>, join: &mut Join<'_>) -> Result<u32> {
    for attempt in 0..MAX_ATTEMPTS {
        let round = 4 * attempt;
        let mut bits = ids.snapshot();
        allreduce_and(m, round, &mut bits).map_err(from_nmad)?;
        join(m, round + 1, &mut bits)?;
        let Some(id) = lowest_set(&bits) else {
            return Err(Error::new(
                ErrorClass::Arg,
                format!(
                    "no context id free at every member: all {MAX_CONTEXTS} are in use (free communicators)"
                ),
            ));
        };
        let took = ids.take(id);
        let mut ok = [took as u64];
        allreduce_and(m, round + 2, &mut ok).map_err(from_nmad)?;
        join(m, round + 3, &mut ok)?;
        if ok[0] == 1 {
            return Ok(id);
        }
        if took {
            ids.release(id);
        }
    }
    Err(Error::other(format!("context id agreement kept colliding ({MAX_ATTEMPTS} attempts)")))
}

/// The lowest id free in an ANDed bit set of [`ContextIds::free_words`].
pub(crate) fn lowest_free(bits: &[u64]) -> Option<u32> {
    lowest_set(bits)
}

fn lowest_set(bits: &[u64]) -> Option<u32> {
    bits.iter().enumerate().find(|(_, w)| **w != 0).map(|(i, w)| i as u32 * 64 + w.trailing_zeros())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{finalize_all, ranks};

    #[test]
    fn ids_are_taken_and_released() {
        let ids = ContextIds::default();
        assert_eq!(ids.in_use(), 2);
        assert!(!ids.take(WORLD) && !ids.take(SELF));
        assert!(ids.take(5) && !ids.take(5));
        ids.release(5);
        assert!(ids.take(5));
        ids.release(WORLD);
        assert!(!ids.take(WORLD), "world's id is never given back");
        assert_eq!(lowest_set(&[0, 0b100]), Some(66));
        assert_eq!(lowest_set(&[0, 0]), None);
    }

    /// Every rank has already used some ids (different ones): the agreed id is the lowest free
    /// at all (without collisions), the same everywhere; and two threads per rank agreeing at once on two different
    /// "communicators" (sessions) never get the same id.
    #[test]
    fn members_agree_on_the_lowest_common_free_id_even_when_threads_race() {
        let nms = ranks(3);
        let tables: Vec<ContextIds> = (0..3).map(|_| ContextIds::default()).collect();
        for (r, t) in tables.iter().enumerate() {
            for id in 2..(4 + r as u32) {
                t.take(id);
            }
        }
        let world: Vec<u32> = (0..3).collect();
        let got: Vec<Vec<u32>> = std::thread::scope(|sc| {
            let hs: Vec<_> = nms
                .iter()
                .zip(&tables)
                .map(|(nm, ids)| {
                    let world = &world;
                    sc.spawn(move || {
                        let me = nm.rank() as usize;
                        // Two concurrent agreements per rank, on sessions 20 and 21.
                        std::thread::scope(|inner| {
                            let hs: Vec<_> = [20u32, 21]
                                .into_iter()
                                .map(|sid| {
                                    inner.spawn(move || {
                                        let s = nm.session(sid);
                                        agree(ids, &Members::new(&s, world, me, 1)).unwrap()
                                    })
                                })
                                .collect();
                            hs.into_iter().map(|h| h.join().unwrap()).collect::<Vec<u32>>()
                        })
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        // Per session (index), every rank got the same id; the two sessions got different ones.
        for k in 0..2 {
            assert!(got.iter().all(|g| g[k] == got[0][k]), "{got:?}");
        }
        assert_ne!(got[0][0], got[0][1]);
        // Rank 2 used up to 5. Without a collision the ids are 6 and 7; a collision (both
        // sessions agreeing on the same id at once) makes both retry, and may skip an id.
        assert!(got[0].iter().all(|&id| id >= 6), "{got:?}");
        finalize_all(nms);
    }
}
