//! A window's target side: what every origin's records do to this process's memory, under one
//! lock per window (accumulates are element-wise atomic and ordered: one origin's records are
//! applied in its send order, and local operations of the window's own rank take the same
//! lock), plus the passive-target lock queue, the counts fence and PSCW wait on, and the
//! derived types origins described, and the large transfers in flight (`large`: the target posts
//! its side when it reaches the record; an origin's later synchronizations, and accumulates after
//! a large accumulate, wait for them; the process's background-work source resumes them).
//!
//! Bounds: every operation is checked against the window before a byte moves (its whole span,
//! for a derived target type): outside, nothing is written and the origin gets
//! `MPI_ERR_RMA_RANGE` (in the answer of a get-like operation, or as a fault reported at its
//! next synchronization). Records of an origin whose lock is not granted yet wait, in order.
//!
//! Files: this one (the shared state, records taken in order, locks, counts, type
//! descriptions), `target_apply` (bounds and the data movement), `target_large` (large
//! transfers).
//!
//! Owns [`WinCore`] (shared between the window and the service's handler) and the answers it
//! sends; it must not wait (it runs on progression threads) nor touch origin-side state.

use super::lock::{LockKind, LockQueue};
use super::notify::Notify;
use super::service::Service;
use super::shape::{Element, MAX_BLOCKS};
use super::shm::ShmPath;
use super::target_apply::reply_of;
use super::target_large::{Bulk, BulkKind};
use super::window::{Exposure, Memory};
use super::wire::{self, Malformed, Record};
use crate::comm::Comm;
use crate::error::{Error, ErrorClass, Result};
use crate::request::background::{self, Progress};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

/// Most derived types one origin may describe to one window.
const MAX_TYPES: usize = 4096;

/// What the window and the message handler share.
pub(crate) struct WinCore {
    pub(crate) ctx: u32,
    /// This process's rank in the window.
    pub(crate) me: u32,
    /// Window rank → nmad peer.
    pub(crate) peers: Vec<u32>,
    ranks: HashMap<u32, u32>,
    pub(crate) members: Vec<Exposure>,
    pub(crate) memory: Memory,
    /// Every member's memory mapped here: operations are loads and stores (`shm`).
    pub(crate) shm: Option<ShmPath>,
    pub(crate) nm: nmad::Nmad,
    /// The window communicator's session: large transfers ([`super::bulk`]).
    pub(crate) session: nmad::Session,
    pub(crate) service: Arc<Service>,
    /// Resumes origins whose large transfer completed (from its request's monitor).
    pub(super) background: Arc<Progress>,
    pub(super) queued: AtomicBool,
    /// Large transfers of this target completed per their monitors (`reaped` counts those seen).
    pub(super) finished: AtomicU64,
    pub(super) this: Weak<WinCore>,
    /// The last large accumulate's buffer, for the next (page faults cost as much as the copy).
    pub(super) scratch: Mutex<Vec<u8>>,
    pub(super) state: Mutex<TargetState>,
    pub(crate) notify: Notify,
    /// A fault an origin operation of this process met at a target, until reported.
    pub(crate) fault: Mutex<Option<Error>>,
}

/// A derived type an origin is describing or has described.
pub(super) enum TypeDef {
    Partial { extent: i64, total: u32, blocks: Vec<(i64, u64)> },
    Done(Arc<Element>),
}

#[derive(Default)]
pub(super) struct PerOrigin {
    held: Option<LockKind>,
    /// Its lock request waits: its later records wait with it.
    pub(super) waiting: bool,
    pub(super) deferred: VecDeque<(Record, Vec<u8>)>,
    pub(super) applied: u64,
    posts: u64,
    posts_used: u64,
    completes: u64,
    completes_used: u64,
    pub(super) types: HashMap<u64, TypeDef>,
    /// Its large transfers in flight (see [`PerOrigin::must_wait`]).
    pub(super) bulk: Vec<Bulk>,
}

#[derive(Default)]
pub(super) struct TargetState {
    lock: LockQueue,
    pub(super) of: Vec<PerOrigin>,
    /// Large transfers completed and taken out of `of`.
    pub(super) reaped: u64,
}

/// Messages to send once the state's lock is released: (window rank, header, payload).
#[derive(Default)]
pub(super) struct Answers {
    done: Vec<(u32, Vec<u8>, Vec<u8>)>,
    open: HashMap<u32, (Vec<u8>, Vec<u8>)>,
}

impl Answers {
    pub(super) fn push(&mut self, core: &WinCore, to: u32, rec: Record, data: &[u8]) {
        let cap = core.capacity(to);
        let (h, p) = self.open.entry(to).or_insert_with(|| (wire::header(core.ctx), Vec::new()));
        if h.len() + wire::MAX_RECORD > nmad::wire::MAX_AM_HEADER
            || h.len() + p.len() + data.len() + wire::MAX_RECORD > cap
        {
            let full = std::mem::replace(h, wire::header(core.ctx));
            self.done.push((to, full, std::mem::take(p)));
        }
        rec.encode(h);
        p.extend_from_slice(data);
    }

    fn ack(&mut self, core: &WinCore, to: u32, reply: u64, r: Result<()>) {
        let class = r.err().map_or(0, |e| e.class().code() as u16);
        self.push(core, to, Record::Ack { reply, class }, &[]);
    }

    pub(super) fn send(mut self, core: &WinCore) {
        self.done.extend(self.open.drain().map(|(to, (h, p))| (to, h, p)));
        for (to, h, p) in self.done {
            core.send(to, h, p);
        }
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl WinCore {
    /// The target side of a window over `comm` (its members' nmad peers, what each exposed).
    pub(crate) fn new(
        comm: &Comm,
        peers: Vec<u32>,
        members: Vec<Exposure>,
        memory: Memory,
        service: Arc<Service>,
    ) -> Result<Arc<WinCore>> {
        let ranks = peers.iter().enumerate().map(|(r, &p)| (p, r as u32)).collect();
        let n = peers.len();
        let of = (0..n).map(|_| PerOrigin::default()).collect();
        let state = TargetState { lock: LockQueue::default(), of, reaped: 0 };
        let background = background::of(comm.runtime())?;
        let shm = match &memory {
            Memory::Segment { segment, offsets, control } => {
                // SAFETY: `create::layout` placed the parts and the control area of `n` members
                // inside the segment, which lives in `memory` as long as this value.
                Some(unsafe { ShmPath::new(segment.base(), offsets, *control, members.clone()) })
            }
            _ => None,
        };
        Ok(Arc::new_cyclic(|this| WinCore {
            shm,
            ctx: comm.context_id(),
            me: comm.rank(),
            peers,
            ranks,
            members,
            memory,
            nm: comm.runtime_nmad().clone(),
            session: comm.session().clone(),
            service,
            background,
            queued: AtomicBool::new(false),
            finished: AtomicU64::new(0),
            this: this.clone(),
            scratch: Mutex::new(Vec::new()),
            state: Mutex::new(state),
            notify: Notify::default(),
            fault: Mutex::new(None),
        }))
    }

    /// The most header and payload bytes of one message to window rank `to`.
    pub(crate) fn capacity(&self, to: u32) -> usize {
        if to == self.me {
            return usize::MAX;
        }
        self.nm.am_capacity(self.peers[to as usize]).unwrap_or(16 << 10)
    }

    /// Sends a message to window rank `to` (handled here at once for our own rank). A failed
    /// peer is not an error here: whoever waits for an answer finds it failed.
    pub(crate) fn send(&self, to: u32, header: Vec<u8>, payload: Vec<u8>) {
        let peer = self.peers[to as usize];
        if to == self.me {
            self.service.handle(peer, &header, &payload);
        } else if let Err(e) = self.nm.send_am(peer, wire::AM_ID, header, payload) {
            log::debug!("one-sided: to process {peer}: {e}");
        }
    }

    /// Records from nmad peer `from`.
    pub(crate) fn receive(
        &self,
        from: u32,
        records: Vec<(Record, &[u8])>,
    ) -> std::result::Result<(), Malformed> {
        let origin =
            *self.ranks.get(&from).ok_or_else(|| Malformed(format!("process {from} is not a member")))?;
        let mut out = Answers::default();
        let r = {
            let mut st = lock(&self.state);
            records.into_iter().try_for_each(|(rec, data)| self.take(&mut st, origin, rec, data, &mut out))
        };
        self.notify.notify_all();
        out.send(self);
        r
    }

    fn take(
        &self,
        st: &mut TargetState,
        origin: u32,
        rec: Record,
        data: &[u8],
        out: &mut Answers,
    ) -> std::result::Result<(), Malformed> {
        let o = origin as usize;
        match rec {
            Record::Post => st.of[o].posts += 1,
            Record::Fault { .. } => return Err(Malformed("a fault routed to a target".into())),
            _ if st.of[o].must_wait(&rec) => st.of[o].deferred.push_back((rec, data.to_vec())),
            Record::Lock { exclusive } => {
                if st.of[o].held.is_some() {
                    return Err(Malformed(format!("rank {origin} locks a window it holds")));
                }
                let kind = if exclusive { LockKind::Exclusive } else { LockKind::Shared };
                if st.lock.request(origin, kind) {
                    st.of[o].held = Some(kind);
                } else {
                    st.of[o].waiting = true;
                }
            }
            Record::Unlock { reply } => match st.of[o].held.take() {
                None => out.ack(self, origin, reply, Err(Error::rma_sync("unlock without the lock"))),
                Some(kind) => {
                    out.ack(self, origin, reply, Ok(()));
                    for (who, k) in st.lock.release(kind) {
                        let w = &mut st.of[who as usize];
                        (w.held, w.waiting) = (Some(k), false);
                        self.replay(st, who, out)?;
                    }
                }
            },
            Record::Flush { reply } => out.ack(self, origin, reply, Ok(())),
            Record::Complete => st.of[o].completes += 1,
            Record::TypeDef { id, extent, total, first, n } => {
                Self::define(st, o, id, extent, total, first, n, data)?
            }
            Record::Put { .. }
            | Record::Acc { .. }
            | Record::Get { .. }
            | Record::GetAcc { .. }
            | Record::Cas { .. } => {
                st.of[o].applied += 1;
                if let Err(e) = self.apply(st, origin, rec, data, out) {
                    match reply_of(&rec) {
                        Some(reply) => out.ack(self, origin, reply, Err(e)),
                        None => out.push(self, origin, Record::Fault { class: e.class().code() as u16 }, &[]),
                    }
                }
            }
            Record::PutBulk { at, len, seq }
            | Record::GetBulk { at, len, seq }
            | Record::AccBulk { at, len, seq, .. } => {
                let kind = match rec {
                    Record::PutBulk { .. } => BulkKind::Put,
                    Record::AccBulk { op, elem, .. } => BulkKind::Acc { op, elem },
                    _ => BulkKind::Get,
                };
                match self.start_bulk(st, origin, kind, &at, len, seq, out) {
                    Ok(t) => st.of[o].bulk.push(t),
                    Err(e) => {
                        st.of[o].applied += 1;
                        out.push(self, origin, Record::Fault { class: e.class().code() as u16 }, &[]);
                    }
                }
            }
            Record::Ack { .. } | Record::Data { .. } => {
                return Err(Malformed("an answer routed to a target".into()));
            }
        }
        Ok(())
    }

    /// Applies `origin`'s deferred records again (its lock was granted, or its large transfer
    /// completed); they stop, deferred anew, at the next wait.
    pub(super) fn replay(
        &self,
        st: &mut TargetState,
        origin: u32,
        out: &mut Answers,
    ) -> std::result::Result<(), Malformed> {
        for (r, d) in std::mem::take(&mut st.of[origin as usize].deferred) {
            self.take(st, origin, r, &d, out)?;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn define(
        st: &mut TargetState,
        o: usize,
        id: u64,
        extent: i64,
        total: u32,
        first: u32,
        n: u32,
        data: &[u8],
    ) -> std::result::Result<(), Malformed> {
        let types = &mut st.of[o].types;
        if total == 0
            || total > MAX_BLOCKS
            || (first == 0 && types.len() >= MAX_TYPES && !types.contains_key(&id))
        {
            return Err(Malformed(format!("a type of {total} blocks, or too many types")));
        }
        if first == 0 {
            let blocks = Vec::with_capacity(total.min(4096) as usize);
            types.insert(id, TypeDef::Partial { extent, total, blocks });
        }
        let Some(TypeDef::Partial { extent, total, blocks }) = types.get_mut(&id) else {
            return Err(Malformed(format!("blocks for type {id}, which is not being described")));
        };
        if blocks.len() != first as usize || first as u64 + n as u64 > *total as u64 {
            return Err(Malformed(format!("blocks {first}+{n} of type {id} out of order")));
        }
        for b in data.chunks_exact(wire::TYPE_BLOCK) {
            let off = i64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
            let len = u64::from_le_bytes(b[8..].try_into().expect("8 bytes"));
            blocks.push((off, len));
        }
        if blocks.len() == *total as usize {
            let elem = Element::new(std::mem::take(blocks), *extent)
                .ok_or_else(|| Malformed(format!("type {id}: empty or overflowing blocks")))?;
            types.insert(id, TypeDef::Done(Arc::new(elem)));
        }
        Ok(())
    }

    /// An operation of ours to nmad peer `from` failed there (error class `class`): kept for
    /// the next synchronization to report.
    pub(crate) fn fault(&self, from: u32, class: u16) {
        let class = ErrorClass::from_code(i32::from(class)).unwrap_or(ErrorClass::Other);
        let rank = self.ranks.get(&from).copied().unwrap_or(u32::MAX);
        lock(&self.fault)
            .get_or_insert_with(|| Error::new(class, format!("an operation to rank {rank} failed there")));
    }

    /// Window rank `origin`'s applied operations, the posts it sent us, the completes it sent
    /// us (see [`WinCore::consume`]).
    pub(crate) fn counts(&self, origin: u32) -> (u64, u64, u64) {
        let st = lock(&self.state);
        let o = &st.of[origin as usize];
        (o.applied, o.posts - o.posts_used, o.completes - o.completes_used)
    }

    /// Uses one post (`post`) or one complete of `origin`: false if none is there.
    pub(crate) fn consume(&self, origin: u32, post: bool) -> bool {
        let mut st = lock(&self.state);
        let o = &mut st.of[origin as usize];
        let (have, used) =
            if post { (o.posts, &mut o.posts_used) } else { (o.completes, &mut o.completes_used) };
        if have > *used {
            *used += 1;
            return true;
        }
        false
    }

    /// Whether this process's own lock request on its window is granted.
    pub(crate) fn holds_own_lock(&self) -> bool {
        lock(&self.state).of[self.me as usize].held.is_some()
    }
}
