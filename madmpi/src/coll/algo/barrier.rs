//! Barrier: dissemination (Hensgen, Finkel and Manber): in round k each rank sends an empty
//! message to rank `me + 2^k` and receives one from `me - 2^k` (mod n); after ⌈log2 n⌉ rounds
//! every rank has heard, directly or not, from every other.

use crate::coll::schedule::{Range, Schedule};

pub(crate) fn dissemination(s: &mut Schedule, n: u32, me: u32) {
    let base = s.steps();
    let (mut dist, mut k) = (1u32, 0u32);
    while dist < n {
        let r = s.round();
        s.send(r, (me + dist) % n, base + k, Range::EMPTY);
        s.recv(r, (me + n - dist) % n, base + k, Range::EMPTY);
        dist *= 2;
        k += 1;
    }
}
