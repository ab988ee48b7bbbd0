//! What happens once a receive has its message: eager data is copied into the receive buffer
//! (straight from the packet when it was posted in time), a rendezvous starts the large
//! transfer — a direct read of the sender's memory where the driver can (or, when the read
//! would run beside the application's computation, a request that the sender write it:
//! `gate::write_rdv`), otherwise a ready-to-receive naming the rails (the strategy splits the
//! data) and bulk data written by the drivers straight into the buffer.
//!
//! Receives posted without a buffer stop at "matched": the message is *claimed* by the request
//! (its owner may peek at it) until the owner provides the buffer with `unpack`.

use super::Core;
use super::gate::failover::{self, Step, Track};
use super::gate::{Control, EAGER_OVERHEAD, Gate, LargeRecv, write_rdv};
use super::matching::{Body, Remote, Unexpected};
use super::payload::Payload;
use super::request::{Error, Kind, ReqPtr};
use super::session::{InBody, Incoming};
use super::wire::FLAG_SYNC;
use crate::drivers::{BulkHeader, LargePath, PeerId, SegmentMut};
use std::borrow::Cow;
use std::io;
use std::sync::atomic::Ordering::*;

/// A direct read of the sender's memory, done by the next driver poll (progression), not by the
/// thread that matched.
pub(crate) struct ReadJob {
    peer: PeerId,
    req: ReqPtr,
    accepted: u64,
    sender_cookie: u64,
    remote: Remote,
}

fn is_deferred(req: ReqPtr) -> bool {
    // SAFETY: callers hold `req`.
    matches!(unsafe { &req.state().kind }, Kind::Recv { deferred: true, .. })
}

/// What a message dropped unmatched leaves to settle with its sender.
pub(crate) struct Dropped {
    /// The payload's length of an eager message (its credit), `None` for a rendezvous (a slot).
    eager_len: Option<u64>,
    /// The sender's cookie when it waits for an answer (a rendezvous, a synchronous send).
    answer: Option<u64>,
}

impl Dropped {
    pub(crate) fn of_arrival(inc: &Incoming<'_>) -> Dropped {
        match &inc.body {
            InBody::Data { cookie, payload } => Dropped {
                eager_len: Some(payload.len() as u64),
                answer: (inc.h.flags & FLAG_SYNC != 0).then_some(*cookie),
            },
            InBody::Rdv { cookie, .. } => Dropped { eager_len: None, answer: Some(*cookie) },
        }
    }

    pub(crate) fn of_unexpected(u: &Unexpected) -> Dropped {
        match &u.body {
            Body::Eager { data, sync_cookie } => {
                Dropped { eager_len: Some(data.len() as u64), answer: *sync_cookie }
            }
            Body::Rdv { cookie, .. } => Dropped { eager_len: None, answer: Some(*cookie) },
        }
    }
}

/// A message dropped unmatched because its session was revoked: its credit goes back to the
/// sender, and a sender waiting for an answer is told (NAK: its send fails as revoked instead of
/// waiting forever).
pub(crate) fn refuse(core: &Core, gate: &Gate, d: Dropped) {
    match d.eager_len {
        Some(len) => gate.owe(core, len + EAGER_OVERHEAD, 0),
        None => gate.owe(core, 0, 1),
    }
    if let Some(c) = d.answer {
        gate.control(core, Control::Nak(c));
    }
}

/// A posted receive matched an arriving message.
///
/// # Safety
/// The caller holds `req` (taken out of the posted list).
pub(crate) unsafe fn matched(core: &Core, gate: &Gate, req: ReqPtr, inc: Incoming<'_>) {
    let (from, tag) = (inc.from, inc.h.tag);
    match inc.body {
        InBody::Data { cookie, payload } => {
            let sync = (inc.h.flags & FLAG_SYNC != 0).then_some(cookie);
            gate.owe(core, payload.len() as u64 + EAGER_OVERHEAD, 0);
            // SAFETY: we hold it.
            unsafe { req.set_matched(from, tag, payload.len() as u64) };
            if is_deferred(req) {
                let body = Body::Eager { data: payload.keep(), sync_cookie: sync };
                // SAFETY: we hold it; signal_matched is our last access.
                unsafe { claim(req, Unexpected { source: from, tag, arrival: 0, body }) };
            } else {
                // SAFETY: we hold it.
                unsafe { finish_eager(core, gate, req, &payload, sync) };
            }
        }
        InBody::Rdv { total, cookie, header, remote } => {
            gate.owe(core, 0, 1);
            // SAFETY: we hold it.
            unsafe { req.set_matched(from, tag, total) };
            if is_deferred(req) {
                let body = Body::Rdv { total, cookie, header: header.into_owned(), remote };
                // SAFETY: as above.
                unsafe { claim(req, Unexpected { source: from, tag, arrival: 0, body }) };
            } else {
                // SAFETY: we hold it.
                unsafe { start_large(core, gate, req, total, cookie, remote) };
            }
        }
    }
}

/// A receive being posted found its message among the unexpected ones.
///
/// # Safety
/// The caller holds `req` (it was not posted).
pub(crate) unsafe fn unexpected(core: &Core, gate: &Gate, req: ReqPtr, u: Unexpected) {
    match &u.body {
        Body::Eager { data, .. } => gate.owe(core, data.len() as u64 + EAGER_OVERHEAD, 0),
        Body::Rdv { .. } => gate.owe(core, 0, 1),
    }
    // SAFETY: we hold it.
    unsafe { req.set_matched(u.source, u.tag, u.len()) };
    if is_deferred(req) {
        // SAFETY: we hold it.
        unsafe { claim(req, u) };
    } else {
        // SAFETY: we hold it.
        unsafe { consume(core, gate, req, u) };
    }
}

/// Gives a matched message to a receive that has no buffer yet; the owner takes the request
/// back at the signal.
unsafe fn claim(req: ReqPtr, u: Unexpected) {
    // SAFETY: the caller holds `req`.
    unsafe {
        req.state().claimed = Some(Box::new(u));
        req.signal_matched();
    }
}

/// Receives a matched message (from the unexpected list or a claim) into the request's buffer.
///
/// # Safety
/// The caller holds `req`, whose data is set.
pub(crate) unsafe fn consume(core: &Core, gate: &Gate, req: ReqPtr, u: Unexpected) {
    match u.body {
        Body::Eager { data, sync_cookie } => {
            // SAFETY: we hold it.
            unsafe { finish_eager(core, gate, req, &Payload::Bytes(Cow::Borrowed(&data)), sync_cookie) };
            super::buffers::release(data);
        }
        Body::Rdv { total, cookie, remote, .. } => {
            // SAFETY: we hold it.
            unsafe { start_large(core, gate, req, total, cookie, remote) }
        }
    }
}

unsafe fn finish_eager(core: &Core, gate: &Gate, req: ReqPtr, payload: &Payload<'_>, sync: Option<u64>) {
    // SAFETY: the caller holds `req`.
    let st = unsafe { req.state() };
    let cap = st.data.len();
    // SAFETY: the receive buffer is writable until completion (Data contract).
    st.received = unsafe { payload.unpack(&st.data) } as u64;
    if payload.len() > cap {
        st.error = Some(Error::Truncated { len: payload.len() as u64, capacity: cap as u64 });
    }
    if let Some(c) = sync {
        gate.control(core, Control::Ack(c));
    }
    // SAFETY: we hold it; last access.
    unsafe { req.complete(None) };
}

/// Starts receiving the data of a rendezvous into the request's buffer.
unsafe fn start_large(
    core: &Core,
    gate: &Gate,
    req: ReqPtr,
    total: u64,
    sender_cookie: u64,
    remote: Option<Remote>,
) {
    // SAFETY: the caller holds `req`.
    let st = unsafe { req.state() };
    let cap = st.data.len() as u64;
    let accepted = total.min(cap);
    if total > cap {
        st.error = Some(Error::Truncated { len: total, capacity: cap });
    }
    if accepted == 0 {
        gate.control(
            core,
            Control::Rtr { cookie: sender_cookie, recv_cookie: 0, accepted: 0, pieces: Vec::new() },
        );
        // SAFETY: we hold it; last access.
        unsafe { req.complete(None) };
        return;
    }
    let can_read = |r: &Remote| {
        !gate.no_remote_read.load(Relaxed)
            && gate.rails.get(r.rail).is_some_and(|r| r.info.caps.large == LargePath::ReadRemote)
    };
    match remote {
        Some(remote) if can_read(&remote) => {
            core.reads.push(ReadJob { peer: gate.peer, req, accepted, sender_cookie, remote });
        }
        // SAFETY: we hold it.
        _ => unsafe { bulk(core, gate, req, accepted, sender_cookie) },
    }
}

/// The bulk path: register the receive, tell the sender which rails carry which bytes.
unsafe fn bulk(core: &Core, gate: &Gate, req: ReqPtr, accepted: u64, sender_cookie: u64) {
    let (idx, infos) = gate.split_rails();
    let mut pieces: Vec<(usize, u64, u64)> = core
        .strategy
        .split(accepted, &infos)
        .into_iter()
        .filter(|p| p.len > 0)
        .map(|p| (idx[p.rail.min(infos.len() - 1)], p.offset, p.len))
        .collect();
    let covered = pieces.iter().try_fold(0u64, |at, &(_, off, len)| (off == at).then_some(at + len));
    if covered != Some(accepted) || pieces.len() > super::wire::MAX_PIECES {
        pieces = vec![(idx[0], 0, accepted)]; // a strategy bug must not lose data
    }
    let track = gate.failover.as_ref().map(|_| Box::new(Track::new(sender_cookie, pieces.clone())));
    let recv_cookie = {
        let mut large = gate.large_in.lock().unwrap();
        // Under the table's lock: `Gate::fail` sets the failure before it drains the table, so
        // a receive either is drained or sees the failure (a lost peer sends no data).
        if let Some(e) = gate.failure() {
            drop(large);
            // SAFETY: not registered: we hold it.
            unsafe { req.complete(Some(e)) };
            return;
        }
        large.insert(LargeRecv { req, accepted, received: 0, writing: None, reading: false, track })
    };
    gate.control(core, Control::Rtr { cookie: sender_cookie, recv_cookie, accepted, pieces });
    if gate.failover.is_some() {
        failover::test_cut(core, gate, Step::RtrSent);
    }
}

/// Runs the pending direct reads. Returns how many ran. A read this thread does not wait for
/// would take its time from the application's computation: the sender is asked to write its
/// share instead where it can (`write_rdv`; [`super::RdvWrites`] decides), unless the buffer is
/// finely scattered (a staged read is cheaper).
pub(crate) fn run_reads(core: &Core) -> usize {
    let mut n = 0;
    loop {
        let Some(job) = core.reads.pop() else { return n };
        n += 1;
        let Ok(gate) = core.gate(job.peer) else { continue };
        if let Some(e) = gate.failure() {
            // The peer is gone with the memory to read (a gate's failure does not know the
            // queued reads: the request is completed here).
            // SAFETY: the job holds the request; last access.
            unsafe { job.req.complete(Some(e)) };
            continue;
        }
        let asks = core.config.rdv_writes.asks(super::request::waited_here(job.req))
            && !finely_scattered(job.req, job.accepted);
        // SAFETY: the job holds the request; `ask` takes it when it says so.
        let asked = asks
            && unsafe { write_rdv::ask(core, &gate, job.req, job.accepted, job.sender_cookie, &job.remote) };
        if asked {
            continue;
        }
        // SAFETY: the job holds the request.
        match unsafe { read(core, &gate, &job) } {
            Ok(()) => {
                // SAFETY: as above.
                unsafe { job.req.state().received = job.accepted };
                gate.control(core, Control::Fin(job.sender_cookie));
                // SAFETY: as above; last access.
                unsafe { job.req.complete(None) };
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::PermissionDenied | io::ErrorKind::Unsupported) => {
                if !gate.no_remote_read.swap(true, Relaxed) {
                    log::warn!(
                        "rank {}: direct reads from peer {} refused ({e}); using copies",
                        core.rank,
                        gate.peer
                    );
                }
                // SAFETY: the job held the request.
                unsafe { bulk(core, &gate, job.req, job.accepted, job.sender_cookie) };
            }
            Err(e) => {
                // SAFETY: as above.
                unsafe {
                    job.req.state().error = Some(Error::Protocol(format!("reading the sender's memory: {e}")))
                };
                gate.control(core, Control::Fin(job.sender_cookie));
                // SAFETY: as above; last access.
                unsafe { job.req.complete(None) };
            }
        }
    }
}

/// Reads the accepted bytes from the sender's exposed memory.
///
/// # Safety
/// The caller holds the job's request.
unsafe fn read(core: &Core, gate: &Gate, job: &ReadJob) -> io::Result<()> {
    let rail = &gate.rails[job.remote.rail];
    let link = rail.link(core)?;
    let mut local: Vec<SegmentMut> = Vec::new();
    // SAFETY: the caller holds the request.
    unsafe { job.req.state() }.data.segments_mut(0..job.accepted as usize, &mut local);
    let bytes = job.accepted as usize;
    if is_fine(local.len(), bytes) {
        // A finely scattered buffer (a strided datatype of small blocks): the system's cost
        // per piece would exceed the copy, so read into one buffer and scatter from it.
        let mut staged = vec![0u8; bytes];
        let whole = [SegmentMut { ptr: staged.as_mut_ptr(), len: bytes }];
        // SAFETY: `staged` is writable for `bytes`; the driver checks the key and the range.
        unsafe { link.read_remote(&job.remote.key, 0, &whole) }?;
        let mut at = 0;
        for seg in &local {
            // SAFETY: the segments are the receive buffer's (writable until completion), `bytes`
            // long in all, and `staged` holds `bytes`: `at + seg.len` stays within it.
            unsafe { std::ptr::copy_nonoverlapping(staged.as_ptr().add(at), seg.ptr, seg.len) };
            at += seg.len;
        }
    } else {
        // SAFETY: `local` is the receive buffer (writable until completion); the driver checks
        // the key and the range, the system the addresses.
        unsafe { link.read_remote(&job.remote.key, 0, &local) }?;
    }
    core.counters.received(rail.driver, bytes);
    Ok(())
}

/// A remote read into more pieces than this, averaging under [`FINE_SEGMENT`] bytes, goes
/// through a staging buffer: `process_vm_readv` into 262,144 pieces of 4 bytes (1 MiB) took
/// 16.8 ms, the read and the scatter 3.3 ms.
const FINE_MIN_SEGMENTS: usize = 64;
const FINE_SEGMENT: usize = 256;

fn is_fine(segments: usize, bytes: usize) -> bool {
    segments > FINE_MIN_SEGMENTS && bytes / segments < FINE_SEGMENT
}

/// Whether the first `accepted` bytes of `req`'s buffer are finely scattered (see [`is_fine`]).
fn finely_scattered(req: ReqPtr, accepted: u64) -> bool {
    // SAFETY: the caller holds the request.
    let blocks = unsafe { req.state() }.data.block_count(0..accepted as usize);
    is_fine(blocks, accepted as usize)
}

/// Where bulk bytes for receive `hdr.cookie` go.
pub(crate) fn bulk_dest(gate: &Gate, hdr: &BulkHeader, dest: &mut Vec<SegmentMut>) -> bool {
    let mut l = gate.large_in.lock().unwrap();
    let Some(e) = l.get_mut(hdr.cookie) else { return false };
    match hdr.offset.checked_add(hdr.len) {
        Some(end) if end <= e.accepted => {
            // SAFETY: the table holds the request; we hold the table's lock.
            let st = unsafe { e.req.state() };
            st.data.segments_mut(hdr.offset as usize..end as usize, dest);
            true
        }
        _ => false,
    }
}

/// Bulk bytes arrived; completes the receive when all did.
pub(crate) fn bulk_done(core: &Core, gate: &Gate, hdr: &BulkHeader) {
    let done = {
        let mut l = gate.large_in.lock().unwrap();
        let Some(e) = l.get_mut(hdr.cookie) else { return };
        // On a failover gate a range may come twice (asked again after a rail failed).
        e.received += match e.track.as_mut() {
            Some(t) => t.add(hdr.offset, hdr.offset + hdr.len),
            None => hdr.len,
        };
        // A receive reading its own share (`write_rdv`) is completed by its reader.
        if e.received < e.accepted || e.reading {
            return;
        }
        l.remove(hdr.cookie)
    };
    if let Some(e) = done {
        if let Some(t) = &e.track {
            failover::test_cut(core, gate, Step::DataComplete);
            // The sender keeps its memory until told everything arrived.
            gate.control(core, Control::Fin(t.sender_cookie));
        }
        // SAFETY: removed from the table: we hold it.
        unsafe {
            e.req.state().received = e.accepted;
            e.req.complete(None);
        }
    }
}
