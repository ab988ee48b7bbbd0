//! Neighbourhood exchanges (`MPI_Neighbor_*`): one round where this rank sends block k to its
//! k-th destination and receives block j from its j-th source, each message tagged with the
//! link's pairing step ([`Link`]). A link without a peer (`MPI_PROC_NULL`) moves
//! nothing and leaves its block untouched; zero-length blocks move nothing either (MPI makes
//! both ends agree on the length). A message to this rank itself is a local copy.
//!
//! A block is a list of byte ranges (the pieces of a non-contiguous `w` block): one piece is
//! sent or received as is, several are packed into (unpacked from) a temporary in a round
//! before (after) the exchange. Receive blocks that overlap (erroneous in MPI, but MPICH runs
//! it) are received in successive rounds rather than at once, so no two receives of a round
//! write the same bytes.
//!
//! Owns the schedule shape; the neighbour lists and their pairing are the topology's.

use crate::coll::schedule::{Range, Schedule};

/// A message of a block from this rank to itself whose length differs from the receiving
/// block's (the type signatures disagree): (sent, expected) bytes.
/// One neighbour of a rank: its rank (`None`: `MPI_PROC_NULL`) and the step that pairs the
/// message with its other end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    pub peer: Option<u32>,
    pub step: u32,
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) struct SelfMismatch(pub usize, pub usize);

fn total(p: &[Range]) -> usize {
    p.iter().map(|r| r.len).sum()
}

/// `me`'s schedule: `sends[k]` (a block) to `dests[k]`, `recvs[j]` from `sources[j]`.
pub(crate) fn exchange(
    me: u32,
    dests: &[Link],
    sends: &[Vec<Range>],
    sources: &[Link],
    recvs: &[Vec<Range>],
) -> Result<Schedule, SelfMismatch> {
    debug_assert!(dests.len() == sends.len() && sources.len() == recvs.len());
    let mut s = Schedule::new();
    let base = s.steps();
    let pre = s.round();
    // Each block as one range: itself, or a packed temporary.
    let sblocks: Vec<Range> = sends
        .iter()
        .zip(dests)
        .map(|(p, l)| match p.len() {
            _ if l.peer.is_none() || total(p) == 0 => Range::EMPTY,
            1 => p[0],
            _ => {
                let t = s.tmp(total(p));
                let mut at = 0;
                for r in p {
                    s.copy(pre, *r, Range::new(t, at, r.len));
                    at += r.len;
                }
                Range::new(t, 0, at)
            }
        })
        .collect();
    let mut unpack = Vec::new();
    let rblocks: Vec<Range> = recvs
        .iter()
        .zip(sources)
        .map(|(p, l)| match p.len() {
            _ if l.peer.is_none() || total(p) == 0 => Range::EMPTY,
            1 => p[0],
            _ => {
                let t = s.tmp(total(p));
                unpack.push((t, p));
                Range::new(t, 0, total(p))
            }
        })
        .collect();
    // Receives, in rounds of pairwise disjoint ranges (one round unless blocks overlap).
    let mut rounds: Vec<(usize, Vec<Range>)> = vec![(s.round(), Vec::new())];
    for (j, l) in sources.iter().enumerate() {
        let (Some(peer), rb) = (l.peer, rblocks[j]) else { continue };
        if rb.len == 0 {
            continue;
        }
        if peer == me {
            let k = (0..dests.len()).find(|&k| dests[k].peer == Some(me) && dests[k].step == l.step);
            let sb = k.map_or(Range::EMPTY, |k| sblocks[k]);
            if sb.len != rb.len {
                return Err(SelfMismatch(sb.len, rb.len));
            }
            s.copy(rounds[0].0, sb, rb);
            continue;
        }
        let slot = match rounds.iter().position(|(_, taken)| !taken.iter().any(|t| t.overlaps(&rb))) {
            Some(i) => i,
            None => {
                let prev = rounds[rounds.len() - 1].0;
                rounds.push((s.round_after(&[prev]), Vec::new()));
                rounds.len() - 1
            }
        };
        rounds[slot].1.push(rb);
        s.recv(rounds[slot].0, peer, base + l.step, rb);
    }
    for (k, l) in dests.iter().enumerate() {
        match l.peer {
            Some(peer) if peer != me && sblocks[k].len > 0 => {
                s.send(rounds[0].0, peer, base + l.step, sblocks[k])
            }
            _ => {}
        }
    }
    if !unpack.is_empty() {
        let post = s.round_after(&rounds.iter().map(|r| r.0).collect::<Vec<_>>());
        for (t, p) in unpack {
            let mut at = 0;
            for r in p {
                s.copy(post, Range::new(t, at, r.len), *r);
                at += r.len;
            }
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coll::schedule::{RECV, SEND};
    use crate::coll::sim;

    const B: usize = 4;

    fn link(peer: Option<u32>, step: u32) -> Link {
        Link { peer, step }
    }

    /// Rank `r` of a ring of `n` (periodic or not): per MPI, sources and destinations are the
    /// −1 then the +1 neighbour; the block sent towards +1 lands in the −1 slot.
    fn ring(n: u32, r: u32, periodic: bool) -> (Vec<Link>, Vec<Link>) {
        let left = if r > 0 { Some(r - 1) } else { periodic.then_some(n - 1) };
        let right = if r + 1 < n { Some(r + 1) } else { periodic.then_some(0) };
        (vec![link(left, 1), link(right, 0)], vec![link(left, 0), link(right, 1)])
    }

    fn blocks(buf: usize, n: usize) -> Vec<Vec<Range>> {
        (0..n).map(|k| vec![Range::new(buf, k * B, B)]).collect()
    }

    /// Runs an alltoall over `links[r] = (sources, dests)`: rank r's block k holds `10 r + k`;
    /// receive blocks start as 0xaa.
    fn alltoall(links: &[(Vec<Link>, Vec<Link>)]) -> Vec<Vec<u8>> {
        let scheds = links
            .iter()
            .enumerate()
            .map(|(r, (src, dst))| {
                exchange(r as u32, dst, &blocks(SEND, dst.len()), src, &blocks(RECV, src.len())).unwrap()
            })
            .collect();
        let send = links
            .iter()
            .enumerate()
            .map(|(r, (_, d))| (0..d.len()).flat_map(|k| [(10 * r + k) as u8; B]).collect())
            .collect();
        let recv = links.iter().map(|(s, _)| vec![0xaa; s.len() * B]).collect();
        sim::run(scheds, send, recv, &|_, _, _| unreachable!()).unwrap()
    }

    #[test]
    fn rings_pair_directions_as_mpi_says() {
        for n in 1..=5u32 {
            for periodic in [true, false] {
                let links: Vec<_> = (0..n).map(|r| ring(n, r, periodic)).collect();
                let out = alltoall(&links);
                for r in 0..n {
                    let (src, _) = &links[r as usize];
                    // From the left neighbour: its +1 block (1); from the right: its −1 block (0).
                    for (j, own_block) in [(0usize, 1u32), (1, 0)] {
                        let want = match src[j].peer {
                            Some(p) => (10 * p + own_block) as u8,
                            None => 0xaa,
                        };
                        assert_eq!(
                            out[r as usize][j * B..(j + 1) * B],
                            [want; B],
                            "n {n} periodic {periodic} rank {r}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn repeated_edges_pair_by_occurrence_and_overlaps_run() {
        // 0 → 1 twice, 1 → 0 once; rank 1 receives both into overlapping blocks in a second run.
        let links = vec![
            (vec![link(Some(1), 0)], vec![link(Some(1), 0), link(Some(1), 1)]),
            (vec![link(Some(0), 0), link(Some(0), 1)], vec![link(Some(0), 0)]),
        ];
        let out = alltoall(&links);
        assert_eq!(out[1], [[0u8; B], [1u8; B]].concat());
        assert_eq!(out[0], [10u8; B]);
        let overlapping = vec![vec![Range::new(RECV, 0, B)], vec![Range::new(RECV, 0, B)]];
        let s1 = exchange(1, &links[1].1, &blocks(SEND, 1), &links[1].0, &overlapping).unwrap();
        assert!(s1.rounds.len() >= 3, "the second receive waits for the first");
        let s0 = exchange(0, &links[0].1, &blocks(SEND, 2), &links[0].0, &blocks(RECV, 1)).unwrap();
        let out =
            sim::run(vec![s0, s1], vec![vec![7; 2 * B], vec![8; B]], vec![vec![0; B]; 2], &|_, _, _| {})
                .unwrap();
        assert_eq!(out[1], [7; B]);
    }

    #[test]
    fn pieces_are_packed_and_self_messages_copied() {
        // One rank, a periodic ring of 1: it is its own −1 and +1 neighbour. Block 0 is sent
        // from two pieces and received into two pieces, reversed.
        let (src, dst) = ring(1, 0, true);
        let sends = vec![vec![Range::new(SEND, 0, 2), Range::new(SEND, 4, 2)], vec![Range::new(SEND, 2, 2)]];
        // Source 0 (−1) gets the +1 block [3, 4]; source 1 (+1) the −1 block [1, 2, 5, 6].
        let recvs = vec![vec![Range::new(RECV, 0, 2)], vec![Range::new(RECV, 5, 1), Range::new(RECV, 2, 3)]];
        let s = exchange(0, &dst, &sends, &src, &recvs).unwrap();
        let out = sim::run(vec![s], vec![vec![1, 2, 3, 4, 5, 6]], vec![vec![0; 6]], &|_, _, _| {}).unwrap();
        assert_eq!(out[0], [3, 4, 2, 5, 6, 1]);
        let short = vec![vec![Range::new(RECV, 0, 2)], vec![Range::new(RECV, 2, 1)]];
        assert_eq!(exchange(0, &dst, &sends, &src, &short).unwrap_err(), SelfMismatch(4, 1));
    }
}
