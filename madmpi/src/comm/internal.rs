//! Internal collectives for communicator management: the members exchange fixed-size
//! contributions (Bruck's allgather) or combine bit sets (a dissemination AND-reduction), both in
//! ⌈log2 n⌉ rounds over nmad point-to-point messages with [`Kind::Management`] tags.
//!
//! Owns nothing. It must not serve user-visible collectives (they belong to the collective layer)
//! and must not be called concurrently on one communicator with the same sequence number (MPI
//! requires the members to call collective operations on a communicator in the same order; the
//! caller numbers them).

use crate::comm::tags::{self, Kind};
use nmad::{Error, Session, Source, scope};

/// The members of a communicator, as an internal operation sees them.
pub(crate) struct Members<'a> {
    pub session: &'a Session,
    /// World rank of each member, in communicator order.
    pub ranks: &'a [u32],
    /// This process's index in `ranks`.
    pub me: usize,
    /// What sets this operation's messages apart from others in the session.
    pub space: Space,
    /// The first round of the calls made through these members (see [`Members::shifted`]).
    base: u32,
}

/// How an internal operation's messages are told apart from others of the same session.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Space {
    /// Number of this operation among the communicator's internal operations (same at all
    /// members): operations collective over the whole communicator.
    Seq(u64),
    /// An operation of some members only (`MPI_Comm_create_group`): the others do not count
    /// it, so a tag given by the program keeps concurrent ones apart.
    Tag { kind: Kind, tag: u32 },
}

impl<'a> Members<'a> {
    /// Members numbered by the communicator's sequence of internal operations.
    pub(crate) fn new(session: &'a Session, ranks: &'a [u32], me: usize, seq: u64) -> Members<'a> {
        Members { session, ranks, me, space: Space::Seq(seq), base: 0 }
    }

    /// Members of an operation of some members only, told apart by `space`.
    pub(crate) fn tagged(session: &'a Session, ranks: &'a [u32], me: usize, space: Space) -> Members<'a> {
        Members { session, ranks, me, space, base: 0 }
    }

    /// The same members, their round `r` being round `k + r` here: for a protocol that uses
    /// rounds `0..k` itself and then calls another one that numbers its rounds from 0.
    pub(crate) fn shifted(&self, k: u32) -> Members<'a> {
        Members { base: self.base + k, ..*self }
    }
}

/// Rounds one call may use; a call's `round` argument selects its block of steps.
const STEPS_PER_ROUND: u32 = 64;

impl Members<'_> {
    fn tag(&self, round: u32, step: u32) -> u64 {
        let step = (self.base + round) * STEPS_PER_ROUND + step;
        match self.space {
            Space::Seq(seq) => tags::internal(Kind::Management, seq, step),
            Space::Tag { kind, tag } => tags::tagged(kind, tag, step),
        }
    }

    /// Sends `out` to member `to` while receiving exactly `into.len()` bytes from member `from`.
    fn exchange(&self, tag: u64, to: usize, out: &[u8], from: usize, into: &mut [u8]) -> Result<(), Error> {
        let want = into.len() as u64;
        let st = scope(|sc| -> Result<nmad::Status, Error> {
            let r = sc.irecv(self.session, Source::Rank(self.ranks[from]), tag, into)?;
            self.session.send(self.ranks[to], tag, out)?;
            r.wait();
            r.result().expect("waited")
        })?;
        if st.len != want {
            return Err(Error::Protocol(format!(
                "internal exchange: {} bytes from rank {} where {want} were expected",
                st.len, self.ranks[from]
            )));
        }
        Ok(())
    }
}

/// Every member's `mine` (all of the same length), concatenated in member order.
pub(crate) fn allgather(m: &Members<'_>, round: u32, mine: &[u8]) -> Result<Vec<u8>, Error> {
    let (n, len) = (m.ranks.len(), mine.len());
    // Block j holds the contribution of member (me + j) mod n.
    let mut buf = vec![0u8; n * len];
    buf[..len].copy_from_slice(mine);
    let (mut have, mut step) = (1, 0);
    while have < n {
        let cnt = have.min(n - have);
        let (held, rest) = buf.split_at_mut(have * len);
        let to = (m.me + n - have) % n;
        let from = (m.me + have) % n;
        m.exchange(m.tag(round, step), to, &held[..cnt * len], from, &mut rest[..cnt * len])?;
        have += cnt;
        step += 1;
    }
    let mut out = vec![0u8; n * len];
    for (j, block) in buf.chunks_exact(len.max(1)).enumerate().take(if len == 0 { 0 } else { n }) {
        let r = (m.me + j) % n;
        out[r * len..(r + 1) * len].copy_from_slice(block);
    }
    Ok(out)
}

/// ANDs `bits` across all members (every member ends with the same result).
pub(crate) fn allreduce_and(m: &Members<'_>, round: u32, bits: &mut [u64]) -> Result<(), Error> {
    let n = m.ranks.len();
    let mut out: Vec<u8> = Vec::with_capacity(bits.len() * 8);
    let mut inp = vec![0u8; bits.len() * 8];
    let (mut dist, mut step) = (1, 0);
    // After the round with distance d, each member holds the AND over the 2d members ending at
    // itself; AND is idempotent, so overlapping spans at the end do no harm.
    while dist < n {
        out.clear();
        out.extend(bits.iter().flat_map(|w| w.to_le_bytes()));
        m.exchange(m.tag(round, step), (m.me + dist) % n, &out, (m.me + n - dist) % n, &mut inp)?;
        for (w, b) in bits.iter_mut().zip(inp.chunks_exact(8)) {
            *w &= u64::from_le_bytes(b.try_into().expect("8 bytes"));
        }
        dist *= 2;
        step += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{finalize_all, ranks};
    use nmad::Nmad;

    /// Runs `f(rank, members)` on every rank of `nms` at once (members = all ranks, reversed to
    /// check that member order, not world order, is what counts).
    fn on_all<T: Send>(nms: &[Nmad], seq: u64, f: impl Fn(usize, &Members<'_>) -> T + Sync) -> Vec<T> {
        let n = nms.len();
        let order: Vec<u32> = (0..n as u32).rev().collect();
        std::thread::scope(|t| {
            let hs: Vec<_> = nms
                .iter()
                .map(|nm| {
                    let (order, f) = (&order, &f);
                    t.spawn(move || {
                        let s = nm.session(9);
                        let me = order.iter().position(|&r| r == nm.rank()).unwrap();
                        f(me, &Members::new(&s, order, me, seq))
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    #[test]
    fn allgather_and_allreduce_over_every_size() {
        for n in [1u32, 2, 3, 5] {
            let nms = ranks(n);
            for (seq, len) in [(1u64, 0usize), (2, 1), (3, 8), (4, 1000)] {
                let got = on_all(&nms, seq, |me, m| allgather(m, 0, &vec![me as u8 + 1; len]).unwrap());
                let want: Vec<u8> = (0..n as usize).flat_map(|i| vec![i as u8 + 1; len]).collect();
                assert!(got.iter().all(|g| *g == want), "n={n} len={len}");
            }
            let got = on_all(&nms, 10, |me, m| {
                // Member i clears bit i: the AND has the first n bits clear and the rest set.
                let mut bits = vec![u64::MAX; 2];
                bits[0] &= !(1 << me);
                allreduce_and(m, 3, &mut bits).unwrap();
                bits
            });
            let want = vec![u64::MAX << n, u64::MAX];
            assert!(got.iter().all(|g| *g == want), "n={n}: {got:x?}");
            finalize_all(nms);
        }
    }
}
