//! Runs of datagrams sent in one call and cut by the kernel (UDP GSO, `UDP_SEGMENT`). On a path
//! of Ethernet-sized datagrams each one sent alone makes a trip through the whole stack (veth,
//! bridge, IP): across two namespace hosts that capped a stream at about 220 MB/s where tcp,
//! whose segments the kernel cuts late, gives GB/s. A run is consecutive transmits of one
//! datagram size (the last may be shorter): the pieces of a rendezvous, the fragments of a
//! packet. A run carries no piggybacked ACK (its datagrams must be of one size); the receiver
//! gets plain datagrams. Where the kernel or device refuses, the link falls back to single
//! sends for good (`UdpLink::pump`).
//!
//! Owns nothing: it works on a link's send side under its lock, as `pump` does.

use super::link::{Remote, Tx, UdpLink, Unit, encode_head, job_of, payload};
use super::sys;
use super::wire::{self, Header};
use crate::drivers::Segment;
use crate::reliable::{Micros, Transmit};
use smallvec::SmallVec;
use std::io::{self, IoSlice};
use std::sync::atomic::Ordering::Relaxed;

/// Most datagrams one segmented send carries (the kernel's `UDP_MAX_SEGMENTS`).
const MAX_SEGMENTS: usize = 64;
/// Most bytes one segmented send carries (an IPv4 datagram's payload before the kernel cuts it).
const MAX_BYTES: usize = 65_000;
/// Memory pieces a bulk unit may be read from to join a run (finely strided memory goes alone).
const MAX_UNIT_PIECES: usize = 4;

/// Whether runs pay on a link whose datagrams carry `fragment` payload bytes (or whose
/// datagrams are that long): when one holds several datagrams (not on loopback, whose
/// datagrams are 64 KiB already).
pub fn worth_it(fragment: usize) -> bool {
    (fragment + wire::MAX_DATA_OVERHEAD) * 4 <= MAX_BYTES
}

/// The transmits of one run, and one taken that did not fit (it starts the next).
#[derive(Default)]
pub struct Batch {
    pub units: Vec<Transmit>,
    pub carried: Option<Transmit>,
}

impl UdpLink {
    /// The size of `t`'s datagram without a piggybacked ACK, if it may join a run.
    pub(super) fn segment_size(&self, tx: &Tx, t: &Transmit) -> Option<usize> {
        if !self.segmenting.load(Relaxed) {
            return None;
        }
        let fixed = wire::HEADER + wire::DATA_FIXED;
        match tx.sender.unit(t.seq) {
            Unit::Fragment { bytes, .. } => Some(fixed + bytes.len()),
            &Unit::Bulk { job, offset, len } => {
                let src = &job_of(&tx.jobs, job).src;
                (piece_count(src, offset, u64::from(len)) <= MAX_UNIT_PIECES)
                    .then_some(fixed + wire::BULK_FIELDS + len as usize)
            }
        }
    }

    /// Puts in `batch.units` the run `first` starts: transmits of `seg` bytes (the last may be
    /// shorter) as the windows allow.
    pub(super) fn collect(
        &self,
        tx: &mut Tx,
        remote: &Remote,
        now: Micros,
        first: Transmit,
        seg: usize,
        batch: &mut Batch,
    ) {
        batch.units.push(first);
        let mut total = seg;
        while batch.units.len() < MAX_SEGMENTS && total + seg <= MAX_BYTES {
            self.feed_bulk(tx, remote, now);
            let Some(t) = tx.sender.next_transmit(now) else { break };
            match self.segment_size(tx, &t) {
                Some(n) if n == seg => {
                    batch.units.push(t);
                    total += n;
                }
                Some(n) if n < seg => {
                    batch.units.push(t);
                    break;
                }
                _ => {
                    batch.carried = Some(t);
                    break;
                }
            }
        }
    }

    /// Sends the run `units` (datagrams of `seg` bytes, the last perhaps shorter) in one call.
    pub(super) fn transmit_segmented(
        &self,
        tx: &mut Tx,
        remote: &Remote,
        units: &[Transmit],
        seg: usize,
    ) -> io::Result<()> {
        let h = Header { kind: wire::KIND_DATA, from: self.shared.rank, link_id: remote.id };
        let Tx { sender, jobs, heads, .. } = tx;
        heads.clear();
        let mut ends: SmallVec<[usize; MAX_SEGMENTS]> = SmallVec::new();
        for t in units {
            encode_head(&h, t, sender.unit(t.seq), jobs, None, heads);
            ends.push(heads.len());
        }
        let mut iov: SmallVec<[IoSlice<'_>; 2 * MAX_SEGMENTS]> = SmallVec::new();
        let mut start = 0;
        for (t, &end) in units.iter().zip(&ends) {
            iov.push(IoSlice::new(&heads[start..end]));
            start = end;
            // SAFETY: a bulk job's memory stays valid until `bulk_sent` (send_bulk's contract),
            // which is reported only after this unit is acknowledged.
            unsafe { payload(sender.unit(t.seq), jobs, &mut iov) };
        }
        self.sent(sys::send_segmented(self.sock_fd(), &iov, seg as u16))
    }
}

/// How many of `src`'s segments bytes `offset .. offset + len` of their concatenation span.
fn piece_count(src: &[Segment], offset: u64, len: u64) -> usize {
    let (start, end) = (offset as usize, (offset + len) as usize);
    let mut pos = 0;
    let mut n = 0;
    for s in src {
        if pos >= end {
            break;
        }
        if pos + s.len > start && s.len > 0 {
            n += 1;
        }
        pos += s.len;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_counted_over_the_range_only() {
        let seg = |len| Segment { ptr: std::ptr::null(), len };
        let src = [seg(10), seg(0), seg(5), seg(20)];
        assert_eq!(piece_count(&src, 0, 10), 1);
        assert_eq!(piece_count(&src, 8, 4), 2, "the empty segment is no piece");
        assert_eq!(piece_count(&src, 12, 20), 2);
        assert_eq!(piece_count(&src, 0, 35), 3);
    }

    #[test]
    fn runs_only_where_datagrams_are_small() {
        assert!(worth_it(1472 - wire::MAX_DATA_OVERHEAD));
        assert!(!worth_it(65_507 - wire::MAX_DATA_OVERHEAD));
    }
}
