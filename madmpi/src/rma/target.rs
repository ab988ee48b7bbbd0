//! A window's target side: what every origin's records do to this process's memory, under one
//! lock per window (accumulates are element-wise atomic and ordered: one origin's records are
//! applied in its send order, and local operations of the window's own rank take the same
//! lock), plus the passive-target lock queue, the counts fence and PSCW wait on, and the
//! derived types origins described, and the large transfers in flight (`bulk`: the target posts
//! its side when it reaches the record; an origin's later synchronizations, and accumulates after
//! a large accumulate, wait for them; the process's background-work source resumes them).
//!
//! Bounds: every operation is checked against the window before a byte moves (its whole span,
//! for a derived target type): outside, nothing is written and the origin gets
//! `MPI_ERR_RMA_RANGE` (in the answer of a get-like operation, or as a fault reported at its
//! next synchronization). Records of an origin whose lock is not granted yet wait, in order.
//!
//! Owns [`WinCore`] (shared between the window and the service's handler) and the answers it
//! sends; it must not wait (it runs on progression threads) nor touch origin-side state.

use super::bulk::{Transfer, Way};
use super::lock::{LockKind, LockQueue};
use super::notify::Notify;
use super::service::{Service, elem_size};
use super::shape::{Element, MAX_BLOCKS, Shape};
use super::shm::ShmPath;
use super::window::{Exposure, Memory};
use super::wire::{self, Malformed, Record, Target, TypeRef};
use crate::comm::Comm;
use crate::datatype::{Datatype, Predefined};
use crate::error::{Error, ErrorClass, Result};
use crate::op::{Builtin, Op};
use crate::request::background::{self, Advance, Progress};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
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
    background: Arc<Progress>,
    queued: AtomicBool,
    /// Large transfers of this target completed per their monitors (`reaped` counts those seen).
    finished: AtomicU64,
    this: Weak<WinCore>,
    /// The last large accumulate's buffer, for the next (page faults cost as much as the copy).
    scratch: Mutex<Vec<u8>>,
    state: Mutex<TargetState>,
    pub(crate) notify: Notify,
    /// A fault an origin operation of this process met at a target, until reported.
    pub(crate) fault: Mutex<Option<Error>>,
}

/// A derived type an origin is describing or has described.
enum TypeDef {
    Partial { extent: i64, total: u32, blocks: Vec<(i64, u64)> },
    Done(Arc<Element>),
}

#[derive(Default)]
struct PerOrigin {
    held: Option<LockKind>,
    /// Its lock request waits: its later records wait with it.
    waiting: bool,
    deferred: VecDeque<(Record, Vec<u8>)>,
    applied: u64,
    posts: u64,
    posts_used: u64,
    completes: u64,
    completes_used: u64,
    types: HashMap<u64, TypeDef>,
    /// Its large transfers in flight (see [`PerOrigin::must_wait`]).
    bulk: Vec<Bulk>,
}

impl PerOrigin {
    /// Whether `rec` must wait for this origin's large transfers in flight: a synchronization
    /// waits for all of them; an accumulate-like operation for the large accumulates (MPI's
    /// default ordering of accumulates). Puts and gets go on: MPI orders them with nothing in
    /// an epoch (a conflicting access would be erroneous), so the transfers overlap. Once one
    /// record waits, the later ones wait behind it.
    fn must_wait(&self, rec: &Record) -> bool {
        if self.waiting || !self.deferred.is_empty() {
            return true;
        }
        match rec {
            Record::Unlock { .. } | Record::Flush { .. } | Record::Complete => !self.bulk.is_empty(),
            Record::Acc { .. } | Record::GetAcc { .. } | Record::Cas { .. } | Record::AccBulk { .. } => {
                self.bulk.iter().any(|b| b.combine.is_some())
            }
            _ => false,
        }
    }
}

/// A large transfer in flight at the target, and for an accumulate what to do once it is in.
struct Bulk {
    transfer: Transfer,
    combine: Option<Combine>,
}

/// A large accumulate's data, received apart, then combined into the window at `ptr`.
struct Combine {
    ptr: *mut u8,
    data: Vec<u8>,
    op: Op,
    dt: Datatype,
}

// SAFETY: `ptr` is window memory that `resolve` checked for the whole of `data`, valid while
// the window lives; it is only written under the target state's lock, like every operation.
unsafe impl Send for Combine {}

/// Which large transfer a record starts.
#[derive(Clone, Copy)]
enum BulkKind {
    Put,
    Get,
    Acc { op: u8, elem: u16 },
}

#[derive(Default)]
struct TargetState {
    lock: LockQueue,
    of: Vec<PerOrigin>,
    /// Large transfers completed and taken out of `of`.
    reaped: u64,
}

/// Messages to send once the state's lock is released: (window rank, header, payload).
#[derive(Default)]
struct Answers {
    done: Vec<(u32, Vec<u8>, Vec<u8>)>,
    open: HashMap<u32, (Vec<u8>, Vec<u8>)>,
}

impl Answers {
    fn push(&mut self, core: &WinCore, to: u32, rec: Record, data: &[u8]) {
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

    fn send(mut self, core: &WinCore) {
        self.done.extend(self.open.drain().map(|(to, (h, p))| (to, h, p)));
        for (to, h, p) in self.done {
            core.send(to, h, p);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
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
    fn replay(
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

    /// Posts this side of a large transfer: the receive into the window (put) or into a
    /// buffer to combine (accumulate), or the send from the window (get). A refused one (out
    /// of range, a bad operation) is reported in a fault record, and its message still drained
    /// (put, accumulate) or answered empty (get), so the origin's side completes.
    #[allow(clippy::too_many_arguments)]
    fn start_bulk(
        &self,
        st: &TargetState,
        origin: u32,
        kind: BulkKind,
        at: &Target,
        len: u64,
        seq: u64,
        out: &mut Answers,
    ) -> Result<Bulk> {
        let place = self.resolve(st, origin, at, 0, len).and_then(|(ptr, shape)| match shape {
            Shape::Bytes(_) => Ok(ptr),
            Shape::Derived { .. } => {
                Err(Error::intern("a large transfer to a derived target type".to_string()))
            }
        });
        let place = place.and_then(|ptr| match kind {
            BulkKind::Acc { op, elem } => {
                let (op, dt) = op_on(op, elem)?;
                if dt.size() == 0 || !len.is_multiple_of(dt.size()) {
                    return Err(Error::intern(format!("{len} accumulate bytes are not whole elements")));
                }
                // `len` is within the window (resolve): the buffer is no larger than it.
                let mut data = std::mem::take(&mut *lock(&self.scratch));
                data.resize(len as usize, 0);
                Ok((ptr, Some(Combine { ptr, data, op, dt })))
            }
            _ => Ok((ptr, None)),
        });
        let refused = place.is_err();
        let expect = if refused { 0 } else { len };
        let (data, mut combine) = match place {
            Ok((_, Some(mut c))) => {
                // SAFETY: the buffer lives in the `Combine` kept with the transfer until it
                // completes; moving a Vec does not move its heap buffer.
                (unsafe { nmad::Data::from_raw(c.data.as_mut_ptr(), c.data.len()) }, Some(c))
            }
            // SAFETY: resolve checked `[ptr, ptr + len)` inside this process's window memory,
            // which outlives the transfer (the window is freed only after every epoch ended,
            // and an epoch ends after this origin's records that wait for the transfer).
            Ok((ptr, None)) if len > 0 => (unsafe { nmad::Data::from_raw(ptr, len as usize) }, None),
            Ok(_) => (nmad::Data::default(), None),
            Err(e) => {
                out.push(self, origin, Record::Fault { class: e.class().code() as u16 }, &[]);
                (nmad::Data::default(), None)
            }
        };
        let peer = self.peers[origin as usize];
        let this = self.this.clone();
        let monitor: nmad::Monitor = Arc::new(move |ev, _| {
            if ev == nmad::Event::DataArrived {
                return;
            }
            if let Some(core) = this.upgrade() {
                core.finished.fetch_add(1, SeqCst);
                core.background.push(&core);
            }
        });
        // SAFETY: `data` is window memory checked above, or the combine buffer (or empty),
        // valid until completion.
        let mut transfer = unsafe {
            match kind {
                BulkKind::Get => {
                    Transfer::send(&self.session, peer, (seq, Way::ToOrigin), data, Some(monitor))
                }
                _ => Transfer::recv(
                    &self.session,
                    peer,
                    (seq, Way::ToTarget),
                    data,
                    Some(expect),
                    Some(monitor),
                ),
            }
        }?;
        transfer.refused = refused;
        Ok(Bulk { transfer, combine: combine.take() })
    }

    /// Takes the completed large transfers out, counts them applied, and applies what their
    /// origins deferred. Returns whether a monitor reported a completion not signalled yet.
    fn resume(&self) -> bool {
        let mut out = Answers::default();
        let again = {
            let mut st = lock(&self.state);
            for o in 0..st.of.len() {
                let all = std::mem::take(&mut st.of[o].bulk);
                let (done, going): (Vec<Bulk>, Vec<Bulk>) =
                    all.into_iter().partition(|b| b.transfer.is_done());
                st.of[o].bulk = going;
                if done.is_empty() {
                    continue;
                }
                st.reaped += done.len() as u64;
                st.of[o].applied += done.len() as u64;
                for Bulk { transfer, combine: acc } in done {
                    let r = transfer.outcome().and_then(|()| match &acc {
                        // SAFETY: `start_bulk` checked the accumulate's bytes inside the window.
                        Some(c) => unsafe {
                            combine(c.ptr, &Shape::Bytes(c.data.len() as u64), 0, &c.data, &c.op, &c.dt)
                        },
                        None => Ok(()),
                    });
                    if let Some(c) = acc {
                        *lock(&self.scratch) = c.data; // the next large accumulate's buffer
                    }
                    if let (Err(e), false) = (r, transfer.refused) {
                        out.push(self, o as u32, Record::Fault { class: e.class().code() as u16 }, &[]);
                    }
                }
                if !st.of[o].waiting
                    && let Err(Malformed(e)) = self.replay(&mut st, o as u32, &mut out)
                {
                    log::error!("one-sided: from rank {o}: window {}: {e}", self.ctx);
                }
            }
            self.finished.load(SeqCst) > st.reaped
        };
        self.notify.notify_all();
        out.send(self);
        again
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

    /// The address of the displacement and the shape of an operation's target, after checking
    /// its whole span and its bytes `[off, off + len)` against the window.
    fn resolve(
        &self,
        st: &TargetState,
        origin: u32,
        at: &Target,
        off: u64,
        len: u64,
    ) -> Result<(*mut u8, Shape)> {
        let shape = match at.ty {
            TypeRef::Bytes { span } => Shape::Bytes(span),
            TypeRef::Derived { id, count } => match st.of[origin as usize].types.get(&id) {
                Some(TypeDef::Done(e)) => Shape::Derived { elem: e.clone(), count },
                _ => return Err(Error::intern(format!("rank {origin} used target type {id} undescribed"))),
            },
        };
        let range = |what: String| Error::rma_range(format!("rank {origin}'s access {what}"));
        let size = shape.size().ok_or_else(|| range("overflows".into()))?;
        if off.checked_add(len).is_none_or(|end| end > size) {
            return Err(range(format!("of bytes {off}+{len} beyond its {size} bytes")));
        }
        let (lo, hi) = shape.span().ok_or_else(|| range("overflows".into()))?;
        if lo == hi {
            return Ok((std::ptr::null_mut(), shape));
        }
        let Ok(width) = usize::try_from(hi - lo) else { return Err(range("overflows".into())) };
        match &self.memory {
            Memory::Dynamic(regions) => {
                let start = (at.disp as i64).checked_add(lo).and_then(|s| usize::try_from(s).ok());
                let covered = start.is_some_and(|s| lock(regions).covers(s, width));
                if !covered {
                    return Err(range(format!("at address {:#x} is outside the attached memory", at.disp)));
                }
                Ok((at.disp as usize as *mut u8, shape))
            }
            _ => {
                let e = self.members[self.me as usize];
                let at_byte = i64::try_from(at.disp)
                    .ok()
                    .and_then(|d| d.checked_mul(e.disp_unit as i64))
                    .filter(|b| b.checked_add(lo).is_some_and(|s| s >= 0))
                    .filter(|b| b.checked_add(hi).is_some_and(|end| end as u64 <= e.size as u64));
                let Some(at_byte) = at_byte else {
                    return Err(range(format!(
                        "at displacement {} (bytes {lo}..{hi} from it) is outside the window's {} bytes",
                        at.disp, e.size
                    )));
                };
                Ok(((e.base as *mut u8).wrapping_offset(at_byte as isize), shape))
            }
        }
    }

    fn apply(
        &self,
        st: &TargetState,
        origin: u32,
        rec: Record,
        data: &[u8],
        out: &mut Answers,
    ) -> Result<()> {
        match rec {
            Record::Put { at, off, len } => {
                let (ptr, shape) = self.resolve(st, origin, &at, off, len as u64)?;
                check_len(data, len)?;
                // SAFETY: resolve checked the access inside this process's window memory.
                unsafe { scatter(ptr, &shape, off, data) };
            }
            Record::Get { at, off, len, reply } => {
                let (ptr, shape) = self.resolve(st, origin, &at, off, len as u64)?;
                // SAFETY: as for Put.
                let old = unsafe { gather(ptr, &shape, off, len as usize) };
                out.push(self, origin, Record::Data { reply, off, len }, &old);
            }
            Record::Acc { at, off, len, op, elem } => {
                let (ptr, shape) = self.resolve(st, origin, &at, off, len as u64)?;
                check_len(data, len)?;
                let (op, dt) = op_on(op, elem)?;
                // SAFETY: as for Put.
                unsafe { combine(ptr, &shape, off, data, &op, &dt)? };
            }
            Record::GetAcc { at, off, len, op, elem, reply } => {
                let (ptr, shape) = self.resolve(st, origin, &at, off, len as u64)?;
                let (op, dt) = op_on(op, elem)?;
                // SAFETY: as for Put.
                let old = unsafe { gather(ptr, &shape, off, len as usize) };
                if op.as_builtin() != Some(Builtin::NoOp) {
                    check_len(data, len)?;
                    // SAFETY: as for Put.
                    unsafe { combine(ptr, &shape, off, data, &op, &dt)? };
                }
                out.push(self, origin, Record::Data { reply, off, len }, &old);
            }
            Record::Cas { disp, elem, reply } => {
                let size = elem_size(elem).ok_or_else(|| Error::datatype("unknown element type"))?;
                let at = Target { disp, ty: TypeRef::Bytes { span: size } };
                let (ptr, shape) = self.resolve(st, origin, &at, 0, size)?;
                // SAFETY: as for Put.
                let old = unsafe { gather(ptr, &shape, 0, size as usize) };
                let (new, compare) = data.split_at(size as usize);
                if old == compare {
                    // SAFETY: as for Put.
                    unsafe { scatter(ptr, &shape, 0, new) };
                }
                out.push(self, origin, Record::Data { reply, off: 0, len: size as u32 }, &old);
            }
            _ => unreachable!("not an operation"),
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

impl Advance for WinCore {
    fn queued(&self) -> &AtomicBool {
        &self.queued
    }

    fn advance(self: Arc<Self>) -> bool {
        self.resume()
    }
}

fn reply_of(rec: &Record) -> Option<u64> {
    match *rec {
        Record::Get { reply, .. } | Record::GetAcc { reply, .. } | Record::Cas { reply, .. } => Some(reply),
        _ => None,
    }
}

fn check_len(data: &[u8], len: u32) -> Result<()> {
    if data.len() != len as usize {
        return Err(Error::intern(format!("{} bytes for a {len}-byte record", data.len())));
    }
    Ok(())
}

/// The operation and element type of an accumulate record (`elem` unused by `REPLACE`/`NO_OP`).
fn op_on(op: u8, elem: u16) -> Result<(Op, Datatype)> {
    let b = *Builtin::ALL.get(op as usize).ok_or_else(|| Error::op(format!("operation {op}")))?;
    let p = match Predefined::ALL.get(elem as usize) {
        Some(p) => *p,
        None if matches!(b, Builtin::Replace | Builtin::NoOp) => Predefined::Byte,
        None => return Err(Error::datatype(format!("element type {elem}"))),
    };
    let (op, dt) = (Op::builtin(b), Datatype::predefined(p));
    op.check(&dt)?;
    Ok((op, dt))
}

/// Writes `data`, bytes `[off, ..)` of an access of `shape` at `ptr`.
///
/// # Safety
/// Every byte the shape maps `[off, off + data.len())` to must be writable memory of the window.
unsafe fn scatter(ptr: *mut u8, shape: &Shape, off: u64, data: &[u8]) {
    shape.walk(off, data.len() as u64, |o, a, n| {
        // SAFETY: the caller vouches for the target bytes; `a + n` is within `data` (walk).
        unsafe { std::ptr::copy(data.as_ptr().add(a), ptr.wrapping_offset(o as isize), n) }
    });
}

/// Reads bytes `[off, off + len)` of an access of `shape` at `ptr`.
///
/// # Safety
/// As [`scatter`], readable.
unsafe fn gather(ptr: *mut u8, shape: &Shape, off: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    shape.walk(off, len as u64, |o, a, n| {
        // SAFETY: the caller vouches for the target bytes; `a + n` is within `v` (walk).
        unsafe { std::ptr::copy(ptr.wrapping_offset(o as isize), v.as_mut_ptr().add(a), n) }
    });
    v
}

/// `target = input op target` over bytes `[off, ..)` of an access of `shape` at `ptr`.
///
/// # Safety
/// As [`scatter`], readable and writable.
unsafe fn combine(ptr: *mut u8, shape: &Shape, off: u64, input: &[u8], op: &Op, dt: &Datatype) -> Result<()> {
    let size = dt.size() as usize;
    let whole = size > 0 && input.len().is_multiple_of(size) && off.is_multiple_of(size as u64);
    let Some(count) = input.len().checked_div(size).filter(|_| whole) else {
        return Err(Error::intern(format!(
            "{} accumulate bytes at {off} are not whole elements",
            input.len()
        )));
    };
    if let Shape::Bytes(_) = shape {
        // SAFETY: the caller vouches for these bytes; a contiguous target's packed form is its
        // memory form, so the elements are combined in place.
        let target =
            unsafe { std::slice::from_raw_parts_mut(ptr.wrapping_offset(off as isize), input.len()) };
        return op.reduce(input, target, count, dt);
    }
    // SAFETY: the caller vouches for the bytes the shape maps the range to.
    let mut packed = unsafe { gather(ptr, shape, off, input.len()) };
    op.reduce(input, &mut packed, count, dt)?;
    // SAFETY: as above.
    unsafe { scatter(ptr, shape, off, &packed) };
    Ok(())
}
