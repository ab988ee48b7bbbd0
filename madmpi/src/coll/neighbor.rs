//! Neighbourhood collectives on raw memory (`MPI_Neighbor_*` and `MPI_Ineighbor_*`, for the C
//! library): this rank's sources and destinations come as [`Links`]
//! (built by the topology, which also decides how the two ends of each message are paired),
//! the buffers as in [`super::raw`] (non-contiguous datatypes packed and unpacked by the
//! schedule itself), and the schedule is `algo::neighbor::exchange`, run in the background
//! like every other collective.
//!
//! Block j of the receive side belongs to source j, block k of the send side to destination
//! k. A source without a peer (`MPI_PROC_NULL`) leaves its block as it was, also when the
//! receive type is not contiguous (the packed temporary is then filled from the user's memory
//! first).
//!
//! Owns the binding of buffers to neighbour exchanges; it must not know topologies.

pub use super::algo::neighbor::Link;
use super::algo::neighbor::{SelfMismatch, exchange};
use super::raw::{Mem, RawBuf, RawVBuf, RawWBuf, launch, start};
use super::schedule::{RECV, Range, SEND};
use crate::coll::planned::Planned;
use crate::comm::Comm;
use crate::error::{Error, ErrorClass, Result};

/// A rank's sources (in-neighbours) and destinations (out-neighbours), in MPI's order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Links {
    pub sources: Vec<Link>,
    pub dests: Vec<Link>,
}

fn degree(n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| Error::arg("too many neighbours"))
}

fn self_mismatch(call: &str, m: SelfMismatch) -> Error {
    Error::new(
        ErrorClass::Truncate,
        format!("{call}: {} bytes sent to this rank itself for a block of {} bytes", m.0, m.1),
    )
}

/// Builds and starts the exchange of packed `sblocks` / `rblocks` over the bound `sm` / `rm`.
fn run(
    comm: &Comm,
    call: &str,
    links: &Links,
    (sm, sblocks): (Mem, Vec<Range>),
    (rm, rblocks): (Mem, Vec<Range>),
) -> Result<Planned> {
    let one = |v: Vec<Range>| v.into_iter().map(|r| vec![r]).collect::<Vec<_>>();
    let s = exchange(comm.rank(), &links.dests, &one(sblocks), &links.sources, &one(rblocks))
        .map_err(|m| self_mismatch(call, m))?;
    let keep_untouched = links.sources.iter().any(|l| l.peer.is_none());
    start(comm, s, Some(&sm), Some(&rm), keep_untouched, None)
}

/// `MPI_Ineighbor_allgather`: `send` to every destination; block j of `recv` (`recv.count`
/// elements each) from source j.
pub fn neighbor_allgather(comm: &Comm, links: &Links, send: &RawBuf, recv: &RawBuf) -> Result<Planned> {
    const CALL: &str = "MPI_Neighbor_allgather";
    let sm = Mem::of(send)?;
    let b = sm.packed_len();
    let sblocks = vec![Range::new(SEND, 0, b); links.dests.len()];
    let r = RawVBuf::uniform(recv, degree(links.sources.len())?, |v| v.mem(CALL, RECV))?;
    run(comm, CALL, links, (sm, sblocks), r)
}

/// `MPI_Ineighbor_allgatherv`: `send` to every destination; source j's block as
/// `recv.counts[j]` elements at `recv.displs[j]`.
pub fn neighbor_allgatherv(comm: &Comm, links: &Links, send: &RawBuf, recv: &RawVBuf<'_>) -> Result<Planned> {
    const CALL: &str = "MPI_Neighbor_allgatherv";
    if recv.counts.len() != links.sources.len() {
        return Err(Error::arg(format!(
            "{CALL}: {} counts for {} sources",
            recv.counts.len(),
            links.sources.len()
        )));
    }
    let sm = Mem::of(send)?;
    let sblocks = vec![Range::new(SEND, 0, sm.packed_len()); links.dests.len()];
    let r = recv.mem(CALL, RECV)?;
    run(comm, CALL, links, (sm, sblocks), r)
}

/// `MPI_Ineighbor_alltoall`: block k of `send` (`send.count` elements each) to destination k,
/// block j of `recv` from source j.
pub fn neighbor_alltoall(comm: &Comm, links: &Links, send: &RawBuf, recv: &RawBuf) -> Result<Planned> {
    const CALL: &str = "MPI_Neighbor_alltoall";
    let s = RawVBuf::uniform(send, degree(links.dests.len())?, |v| v.mem(CALL, SEND))?;
    let r = RawVBuf::uniform(recv, degree(links.sources.len())?, |v| v.mem(CALL, RECV))?;
    run(comm, CALL, links, s, r)
}

/// `MPI_Ineighbor_alltoallv`: `send.counts[k]` elements at `send.displs[k]` to destination k,
/// source j's block as `recv.counts[j]` elements at `recv.displs[j]`.
pub fn neighbor_alltoallv(
    comm: &Comm,
    links: &Links,
    send: &RawVBuf<'_>,
    recv: &RawVBuf<'_>,
) -> Result<Planned> {
    const CALL: &str = "MPI_Neighbor_alltoallv";
    if send.counts.len() != links.dests.len() || recv.counts.len() != links.sources.len() {
        return Err(Error::arg(format!(
            "{CALL}: {} send and {} receive counts for {} destinations and {} sources",
            send.counts.len(),
            recv.counts.len(),
            links.dests.len(),
            links.sources.len()
        )));
    }
    let (s, r) = (send.mem(CALL, SEND)?, recv.mem(CALL, RECV)?);
    run(comm, CALL, links, s, r)
}

/// `MPI_Ineighbor_alltoallw`: `send.counts[k]` elements of `send.dtypes[k]` at byte
/// `send.displs[k]` to destination k; source j's block as described by `recv` for j.
pub fn neighbor_alltoallw(
    comm: &Comm,
    links: &Links,
    send: &RawWBuf<'_>,
    recv: &RawWBuf<'_>,
) -> Result<Planned> {
    const CALL: &str = "MPI_Neighbor_alltoallw";
    let (sb, sblocks) = send.pieces(CALL, links.dests.len(), SEND)?;
    let (rb, rblocks) = recv.pieces(CALL, links.sources.len(), RECV)?;
    let s = exchange(comm.rank(), &links.dests, &sblocks, &links.sources, &rblocks)
        .map_err(|m| self_mismatch(CALL, m))?;
    launch(comm, s, sb, rb, None)
}
