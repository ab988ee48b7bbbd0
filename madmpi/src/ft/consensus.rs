//! A fault-tolerant agreement among the members of a communicator: every surviving member ends
//! with the same AND of the members' contributions (bit vectors of one length) and the same set
//! of failed members, whatever processes fail meanwhile (crash failures, detected by nmad when
//! a link breaks or cannot be made).
//!
//! The protocol floods knowledge in rounds, with early decision (Dolev, Reischuk and Strong,
//! "Early stopping in Byzantine agreement", JACM 1990, for crash failures): in round `k` every
//! member sends what it knows (the contributions it has seen, the members it knows failed) to
//! every member not known failed, then waits for round `k` from each of them, a failed receive
//! marking its sender failed. A round that taught a member nothing (no new contribution, no new
//! failure) is *clean*: whatever any survivor knew at the round's start, it knows too, so it
//! decides on what it knows. A message carrying a decision is adopted as is. A member that
//! decided sends its decision one round more (without waiting for that round), then stops;
//! everyone still running receives it (or sees its sender fail) in that round and decides too,
//! so nobody waits for a member that stopped. Two members cleanly
//! deciding in the same round have exchanged everything, hence decide the same.
//!
//! Costs n(n−1) messages of O(n × words) bytes per round and at least two rounds: fine for the
//! recovery paths it serves (MPICH's agreement is logarithmic; documented).
//!
//! Owns the protocol and its wire format; it must not know communicators beyond the members'
//! world ranks and the session it is given.

use crate::comm::tags::{self, Kind};
use nmad::{Error, Session, Source, scope};

/// Who takes part and where the messages go.
pub(crate) struct Round<'a> {
    pub session: &'a Session,
    /// World rank of each member.
    pub ranks: &'a [u32],
    pub me: usize,
    /// Number of this agreement on its session (the same at every member).
    pub seq: u64,
    /// Members known failed at the start.
    pub failed: Vec<bool>,
}

/// What the members agreed on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Decision {
    /// The AND of the contributions known when deciding (a failed member's may be in it).
    pub and: Vec<u64>,
    /// Failed members, by index.
    pub failed: Vec<bool>,
}

/// Rounds after which an agreement gives up: every round without decision saw a new failure or
/// contribution, so 2n + 2 rounds always suffice; more means a broken peer.
fn max_rounds(n: usize) -> u32 {
    2 * n as u32 + 4
}

struct Knowledge {
    /// Contribution of each member, once seen.
    values: Vec<Option<Vec<u64>>>,
    failed: Vec<bool>,
}

impl Knowledge {
    fn encode(&self, decided: bool, words: usize) -> Vec<u8> {
        let mut out = vec![u8::from(decided)];
        for (v, f) in self.values.iter().zip(&self.failed) {
            out.push(u8::from(v.is_some()) | (u8::from(*f) << 1));
            let zero = vec![0u64; words];
            out.extend(v.as_deref().unwrap_or(&zero).iter().flat_map(|w| w.to_le_bytes()));
        }
        out
    }

    /// Merges a message; whether it carried a decision, and whether it taught us anything.
    fn merge(&mut self, msg: &[u8], words: usize) -> (bool, bool) {
        let mut learned = false;
        let entry = 1 + 8 * words;
        for (i, e) in msg[1..].chunks_exact(entry).enumerate() {
            if e[0] & 1 != 0 && self.values[i].is_none() {
                self.values[i] = Some(
                    e[1..].chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().expect("8"))).collect(),
                );
                learned = true;
            }
            if e[0] & 2 != 0 && !self.failed[i] {
                self.failed[i] = true;
                learned = true;
            }
        }
        (msg[0] == 1, learned)
    }

    fn decision(&self, words: usize) -> Decision {
        let mut and = vec![u64::MAX; words];
        for v in self.values.iter().flatten() {
            for (a, w) in and.iter_mut().zip(v) {
                *a &= w;
            }
        }
        Decision { and, failed: self.failed.clone() }
    }

    fn from_decision(d: &Decision, n: usize) -> Knowledge {
        let mut values = vec![None; n];
        values[0] = Some(d.and.clone());
        Knowledge { values, failed: d.failed.clone() }
    }
}

/// Agrees on the AND of `mine` (same length at every member) and on the failed members.
pub(crate) fn agree(r: &Round<'_>, mine: &[u64]) -> Result<Decision, Error> {
    let (n, words) = (r.ranks.len(), mine.len());
    let mut k = Knowledge { values: vec![None; n], failed: r.failed.clone() };
    k.values[r.me] = Some(mine.to_vec());
    k.failed[r.me] = false;
    let mut decided: Option<Decision> = None;
    let msg_len = 1 + n * (1 + 8 * words);
    for round in 0..=max_rounds(n) {
        let tag = tags::internal(Kind::FaultTolerance, r.seq, 1 + round);
        let peers: Vec<usize> = (0..n).filter(|&i| i != r.me && !k.failed[i]).collect();
        if let Some(d) = &decided {
            // One round more, without waiting: a peer that decided a round earlier has stopped.
            let out = Knowledge::from_decision(d, n).encode(true, words);
            for &p in &peers {
                let _ = r.session.send(r.ranks[p], tag, &out);
            }
            break;
        }
        let out = k.encode(false, words);
        let mut bufs = vec![vec![0u8; msg_len]; peers.len()];
        let results: Vec<Result<usize, Error>> = scope(|sc| {
            let reqs: Vec<_> = peers
                .iter()
                .zip(bufs.iter_mut())
                .map(|(&p, b)| sc.irecv(r.session, Source::Rank(r.ranks[p]), tag, b))
                .collect();
            for &p in &peers {
                // A failed send shows as the failed receive from the same peer.
                let _ = r.session.send(r.ranks[p], tag, &out);
            }
            reqs.into_iter()
                .map(|q| {
                    let q = q?;
                    q.wait();
                    q.result().expect("waited").map(|st| st.len as usize)
                })
                .collect()
        });
        let mut learned = false;
        let mut adopted: Option<Decision> = None;
        for ((&p, b), res) in peers.iter().zip(&bufs).zip(results) {
            match res {
                Ok(len) if len == msg_len => {
                    let (is_decision, l) = if b[0] == 1 {
                        let mut d = Knowledge { values: vec![None; n], failed: vec![false; n] };
                        d.merge(b, words);
                        adopted.get_or_insert_with(|| d.decision(words));
                        (true, false)
                    } else {
                        k.merge(b, words)
                    };
                    learned |= l && !is_decision;
                }
                Ok(len) => {
                    return Err(Error::Protocol(format!(
                        "fault-tolerant agreement: {len} bytes from rank {} where {msg_len} were expected",
                        r.ranks[p]
                    )));
                }
                Err(Error::PeerFailed { .. }) => {
                    k.failed[p] = true;
                    learned = true;
                }
                Err(e) => return Err(e),
            }
        }
        if let Some(d) = adopted {
            decided = Some(d);
        } else if !learned {
            decided = Some(k.decision(words));
        }
    }
    decided.ok_or_else(|| {
        Error::Protocol(format!("fault-tolerant agreement: no decision after {} rounds", max_rounds(n)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{finalize_all, ranks, watchdog};

    fn run(n: u32, failed_at_start: &[usize], contrib: impl Fn(usize) -> Vec<u64> + Sync) -> Vec<Decision> {
        let _dog = watchdog("consensus test", std::time::Duration::from_secs(60));
        let nms = ranks(n);
        let world: Vec<u32> = (0..n).collect();
        let out = std::thread::scope(|t| {
            let hs: Vec<_> = nms
                .iter()
                .enumerate()
                .filter(|(i, _)| !failed_at_start.contains(i))
                .map(|(i, nm)| {
                    let (world, contrib) = (&world, &contrib);
                    t.spawn(move || {
                        let s = nm.session(77);
                        let mut failed = vec![false; n as usize];
                        for &f in failed_at_start {
                            failed[f] = true;
                        }
                        let r = Round { session: &s, ranks: world, me: i, seq: 3, failed };
                        agree(&r, &contrib(i)).unwrap()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        finalize_all(nms);
        out
    }

    #[test]
    fn every_member_decides_the_same_and() {
        for n in [1u32, 2, 4] {
            let got = run(n, &[], |i| vec![!(1u64 << i), u64::MAX ^ 0xf0]);
            let want =
                Decision { and: vec![u64::MAX << n, u64::MAX ^ 0xf0], failed: vec![false; n as usize] };
            assert!(got.iter().all(|d| *d == want), "n={n}: {got:?}");
        }
    }

    /// Members already known failed take no part and are reported failed by everyone.
    #[test]
    fn members_known_failed_are_skipped() {
        let got = run(4, &[2], |i| vec![i as u64 | 0x10]);
        assert_eq!(got.len(), 3);
        assert!(got.iter().all(|d| *d == got[0]), "{got:?}");
        assert_eq!(got[0].failed, [false, false, true, false]);
        assert_eq!(got[0].and, [0x10]);
    }
}
