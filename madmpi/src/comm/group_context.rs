//! Context ids agreed among the members of a group alone, with no parent communicator
//! (`MPI_Comm_create_from_group`; any creation that is collective over a group only can use it).
//!
//! The members need a matching space nobody else uses while they agree. Each creation is named
//! by a caller's key (MPI's string tag), the group's members and how many times this process
//! already ran a creation with that key and group (members run them in the same order, so the
//! count is the same everywhere); the 64-bit hash of the three picks a private nmad session
//! (`GROUP_SESSIONS` + 28 bits) and the sequence number of its internal operations (24 bits).
//! Concurrent creations with different keys, or over different groups, thus never mix their
//! messages (a collision needs equal 52-bit hashes). The session is closed once agreed: every
//! message of the agreement has been received by then (each round waits for its input).
//!
//! Owns the per-process creation counts; it must not build communicators (the caller does)
//! nor touch sessions other than the private one of an agreement.

use crate::comm::Runtime;
use crate::comm::context;
use crate::comm::internal::Members;
use crate::error::{Error, Result};
use crate::group::Group;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, PoisonError};

/// First nmad session id of group agreements (communicators use ids below
/// [`context::MAX_CONTEXTS`]).
const GROUP_SESSIONS: u32 = 0x4000_0000;
const SESSION_BITS: u32 = 28;

/// How many creations this process ran per (key, members) hash.
#[derive(Default)]
pub(crate) struct Occurrences(Mutex<HashMap<u64, u64>>);

impl Occurrences {
    fn next(&self, h: u64) -> u64 {
        let mut m = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let n = m.entry(h).or_insert(0);
        *n += 1;
        *n - 1
    }
}

/// A hash that is the same in every process of the job (SipHash with fixed keys).
fn stable_hash(x: impl Hash) -> u64 {
    #[allow(deprecated)] // SipHasher is deprecated for its name only; its output is stable.
    let mut h = std::hash::SipHasher::new_with_keys(0x6d61_646d_7069, 0x6772_6f75_7073);
    x.hash(&mut h);
    h.finish()
}

/// Agrees with the other members of `group` (this process is one) on a context id free at all
/// of them, over a private channel named by `key`; the id is taken here.
pub(crate) fn agree(rt: &Runtime, group: &Group, key: &str) -> Result<u32> {
    let me = rt.nm.rank();
    let my_index = group
        .rank_of(me)
        .ok_or_else(|| Error::group(format!("this process (rank {me}) is not a member of the group")))?;
    let base = stable_hash((key, group.members()));
    let name = stable_hash((base, rt.group_ops.next(base)));
    let sid = GROUP_SESSIONS | (name as u32 & ((1 << SESSION_BITS) - 1));
    let session = rt.nm.session(sid);
    let m = Members::new(&session, group.members(), my_index as usize, name >> 40);
    let r = context::agree(&rt.ids, &m);
    drop(session);
    rt.nm.close_session(sid);
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::on_all;

    /// Two subgroups of 4 ranks create communicators at once under the same key, and the whole
    /// world twice under two keys from two threads at once: every creation agrees on one id
    /// per group, different from the others that the same process holds.
    #[test]
    fn groups_agree_alone_and_concurrent_keys_do_not_mix() {
        let got = on_all(4, |world| {
            let rt = world.runtime().clone();
            let me = world.rank();
            let half = Group::new(if me % 2 == 0 { vec![0, 2] } else { vec![3, 1] }).unwrap();
            let a = agree(&rt, &half, "half").unwrap();
            let all = world.group().clone();
            let (b, c) = std::thread::scope(|s| {
                let (rt1, rt2, g1, g2) = (&rt, &rt, &all, &all);
                let x = s.spawn(move || agree(rt1, g1, "k1").unwrap());
                let y = s.spawn(move || agree(rt2, g2, "k2").unwrap());
                (x.join().unwrap(), y.join().unwrap())
            });
            let again = agree(&rt, &all, "k1").unwrap();
            assert!(a != b && b != c && a != c && again != b && again != c, "{a} {b} {c} {again}");
            (a, b, c, again)
        });
        assert_eq!(got[0].0, got[2].0, "0 and 2 agree");
        assert_eq!(got[1].0, got[3].0, "1 and 3 agree");
        for g in &got {
            assert_eq!((g.1, g.2, g.3), (got[0].1, got[0].2, got[0].3), "{got:?}");
        }
        let stranger = on_all(2, |world| {
            let g = Group::new(vec![0]).unwrap();
            (world.rank() == 1).then(|| agree(world.runtime(), &g, "x").unwrap_err().class())
        });
        assert_eq!(stranger[1], Some(crate::error::ErrorClass::Group));
    }
}
