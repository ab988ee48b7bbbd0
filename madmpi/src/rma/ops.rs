//! The one-sided operations (MPI 4.0 §12.3): `MPI_Put`, `MPI_Get`, `MPI_Accumulate`,
//! `MPI_Get_accumulate`, `MPI_Fetch_and_op`, `MPI_Compare_and_swap`, and their request forms.
//!
//! Each is checked once here (epoch, rank, committed types, matching sizes, the element type
//! of an accumulate, and the target range when the target's window size is known), then
//! becomes records in the target's batch: the origin data packed into the payload, split at
//! the message size (on element boundaries for accumulates); or, for a large put, get or
//! accumulate into a contiguous target, one record and one nmad message from or into the
//! origin buffer itself (`bulk`). A derived target type is
//! described once per target and window. Answers (a get's data) are unpacked by the handler
//! straight into the origin buffer.
//!
//! Owns the origin-side translation of a call into records; the target applies them
//! (`target`), the synchronizations complete them (`sync`).

use super::bulk::{BULK_MIN, Transfer, Way};
use super::direct;
use super::origin::{EARLY, Origin};
use super::service::{Sink, Slot};
use super::window::{Flavor, Win};
use super::wire::{Record, Target, TypeRef};
use crate::datatype::Datatype;
use crate::error::{Error, Result};
use crate::op::{Builtin, Op};
use crate::request::{Outcome, Pending, RawRequest};
use nmad::Layout;
use std::sync::Arc;

/// Room left in a message for the records around a data chunk.
const RECORD_ROOM: usize = 512;

/// The origin's side of an operation: `count` elements of `ty` at `buf`.
#[derive(Clone, Copy)]
pub struct Buf<'a> {
    pub buf: *const u8,
    pub count: i64,
    pub ty: &'a Datatype,
}

/// The target's side: `count` elements of `ty` at displacement `disp` of window rank `rank`.
#[derive(Clone, Copy)]
pub struct At<'a> {
    pub rank: u32,
    pub disp: u64,
    pub count: i64,
    pub ty: &'a Datatype,
}

/// A checked operation, ready to become records.
struct Checked {
    target: Target,
    bytes: u64,
    /// The element type of an accumulate (its index), when it has one.
    elem: u16,
}

/// The byte range `[lo, hi)` that `count` elements of `ty` touch from their address.
fn span(ty: &Datatype, count: i64) -> Option<(i64, i64)> {
    if count == 0 || ty.size() == 0 {
        return Some((0, 0));
    }
    let (lo, hi) = (ty.true_lb(), ty.true_lb().checked_add(ty.true_extent())?);
    let last = (count - 1).checked_mul(ty.extent())?;
    Some((lo.min(last.checked_add(lo)?), hi.max(last.checked_add(hi)?)))
}

fn packed(ty: &Datatype, count: i64) -> Result<u64> {
    if !ty.is_committed() {
        return Err(Error::datatype("the datatype has not been committed"));
    }
    if count < 0 {
        return Err(Error::count(format!("negative count ({count})")));
    }
    (count as u64).checked_mul(ty.size()).ok_or_else(|| Error::count("the data size overflows"))
}

impl Win {
    /// The common checks; `origin` is `None` for the origin-less side of a fetch.
    fn check(&self, o: &Origin, origin: Option<Buf<'_>>, at: At<'_>) -> Result<Checked> {
        let n = self.core.members.len() as u32;
        if at.rank >= n {
            return Err(Error::rank(format!("rank {} is not in the window's {n} ranks", at.rank)));
        }
        if !self.fast.as_ref().is_some_and(|f| f.locked(at.rank)) {
            o.check_access(at.rank)?;
        }
        let bytes = packed(at.ty, at.count)?;
        if let Some(b) = origin {
            let theirs = packed(b.ty, b.count)?;
            if theirs != bytes {
                return Err(Error::arg(format!(
                    "the origin has {theirs} bytes and the target {bytes}: the type signatures differ"
                )));
            }
        }
        if self.flavor != Flavor::Dynamic {
            let e = self.core.members[at.rank as usize];
            let (lo, hi) = span(at.ty, at.count).ok_or_else(|| Error::rma_range("the access overflows"))?;
            let inside = i64::try_from(at.disp)
                .ok()
                .and_then(|d| d.checked_mul(e.disp_unit as i64))
                .is_some_and(|b| {
                    lo == hi || (b + lo >= 0 && b.checked_add(hi).is_some_and(|h| h as u64 <= e.size as u64))
                });
            if !inside {
                return Err(Error::rma_range(format!(
                    "displacement {} (bytes {lo}..{hi} from it) is outside rank {}'s {} bytes",
                    at.disp, at.rank, e.size
                )));
            }
        }
        let ty = if at.ty.contiguous_offset() == Some(0) {
            TypeRef::Bytes { span: bytes }
        } else {
            TypeRef::Derived { id: at.ty.uid(), count: at.count as u64 }
        };
        Ok(Checked { target: Target { disp: at.disp, ty }, bytes, elem: u16::MAX })
    }

    /// The element type of an accumulate with `op` on these types (MPI: both made of one
    /// predefined type, the same; any type for `MPI_REPLACE` and `MPI_NO_OP`).
    fn element(op: &Op, origin: Option<&Datatype>, target: &Datatype) -> Result<u16> {
        let Some(b) = op.as_builtin() else {
            return Err(Error::op("one-sided accumulates take predefined operations only"));
        };
        op.check(target)?;
        let of = |t: &Datatype| crate::op::element(t).ok().flatten();
        let elem = of(target);
        if let Some(o) = origin
            && !matches!(b, Builtin::NoOp)
            && of(o) != elem
        {
            return Err(Error::datatype(
                "the origin and target datatypes are made of different predefined types",
            ));
        }
        match elem {
            Some(p) => Ok(p_index(p)),
            None if matches!(b, Builtin::Replace | Builtin::NoOp) => Ok(u16::MAX),
            None => Err(Error::datatype("an accumulate needs a datatype made of one predefined type")),
        }
    }

    /// Chunk size for target `t`: a whole number of `unit`-byte elements.
    fn chunk(&self, t: u32, unit: u64) -> u64 {
        let cap = self.core.capacity(t).min(1 << 20) as u64;
        let c = cap.saturating_sub(RECORD_ROOM as u64).max(unit);
        c - c % unit.max(1)
    }

    /// Records for the checked operation, one per chunk; `data` packs an origin chunk.
    fn emit(
        &self,
        o: &mut Origin,
        at: &At<'_>,
        c: &Checked,
        unit: u64,
        mut record: impl FnMut(Target, u64, u32) -> Record,
        data: Option<Buf<'_>>,
    ) -> Result<()> {
        self.describe_target(o, at, c)?;
        let layout = match data {
            Some(b) => Some(b.ty.layout(b.count)?),
            None => None,
        };
        let step = self.chunk(at.rank, unit);
        let mut off = 0;
        while off < c.bytes {
            let len = step.min(c.bytes - off);
            let payload = match (&layout, data) {
                (Some(l), Some(b)) => pack_range(l, b.buf, off, len as usize),
                _ => Vec::new(),
            };
            o.push(&self.core, at.rank, record(c.target, off, len as u32), &payload);
            off += len;
        }
        o.used();
        Ok(())
    }

    /// Describes a derived target type to the target before the first record that uses it.
    fn describe_target(&self, o: &mut Origin, at: &At<'_>, c: &Checked) -> Result<()> {
        match c.target.ty {
            TypeRef::Derived { .. } => o.describe(&self.core, at.rank, at.ty),
            TypeRef::Bytes { .. } => Ok(()),
        }
    }

    /// Whether an operation goes as one large transfer ([`super::bulk`]): large, to another
    /// process, and not a request form (whose request completes when the call returns, the data
    /// copied). Any target type: the target receives along a derived one's blocks.
    fn is_bulk(&self, at: &At<'_>, c: &Checked, request: bool) -> bool {
        !request && c.bytes >= BULK_MIN && at.rank != self.core.me
    }

    /// Sends `origin` as a large transfer to window rank `t` after its record.
    ///
    /// # Safety
    /// The origin buffer must stay readable and unchanged until the operation completes,
    /// which waits for the transfer (`Win::wait_answers`).
    unsafe fn send_bulk(
        &self,
        o: &mut Origin,
        origin: Buf<'_>,
        (at, c): (&At<'_>, &Checked),
        rec: impl FnOnce(u64) -> Record,
    ) -> Result<()> {
        let t = at.rank;
        self.describe_target(o, at, c)?;
        let seq = o.next_transfer(t);
        // SAFETY: the caller's contract.
        let transfer = unsafe {
            let data = origin.ty.data(origin.buf.cast_mut(), origin.count)?;
            Transfer::send(&self.core.session, self.core.peers[t as usize], (seq, Way::ToTarget), data, None)
        }?;
        o.push(&self.core, t, rec(seq), &[]);
        o.to[t as usize].transfers.push(Arc::new(transfer));
        o.used();
        Ok(())
    }

    /// `MPI_Put`.
    ///
    /// # Safety
    /// `origin.buf` must be readable along its type, and unchanged, until the operation
    /// completes (a large put is sent from it; a smaller one is copied before the call
    /// returns).
    pub unsafe fn put(&self, origin: Buf<'_>, at: At<'_>) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.put_as(origin, at, false) }
    }

    /// `MPI_Rput`: the data is copied before the call returns (its request is complete).
    ///
    /// # Safety
    /// `origin.buf` must be readable along its type for the duration of the call.
    pub unsafe fn rput(&self, origin: Buf<'_>, at: At<'_>) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.put_as(origin, at, true) }
    }

    /// # Safety
    /// As [`Win::put`] (`request`: as [`Win::rput`]).
    unsafe fn put_as(&self, origin: Buf<'_>, at: At<'_>, request: bool) -> Result<()> {
        let mut o = self.origin.lock().unwrap_or_else(|e| e.into_inner());
        let c = self.check(&o, Some(origin), at)?;
        if let Some(shm) = &self.core.shm {
            o.used();
            // SAFETY: the caller's contract; `check` put the target range inside the window.
            return unsafe { direct::put(shm, origin, at, c.bytes as usize) };
        }
        if self.is_bulk(&at, &c, request) {
            let rec = |seq| Record::PutBulk { at: c.target, len: c.bytes, seq };
            // SAFETY: the caller's contract.
            return unsafe { self.send_bulk(&mut o, origin, (&at, &c), rec) };
        }
        self.emit(&mut o, &at, &c, 1, |target, off, len| Record::Put { at: target, off, len }, Some(origin))
    }

    /// `MPI_Accumulate` (`op` a predefined operation, `MPI_REPLACE` included).
    ///
    /// # Safety
    /// As [`Win::put`].
    pub unsafe fn accumulate(&self, origin: Buf<'_>, at: At<'_>, op: &Op) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.accumulate_as(origin, at, op, false) }
    }

    /// `MPI_Raccumulate`: the data is copied before the call returns (its request is complete).
    ///
    /// # Safety
    /// As [`Win::rput`].
    pub unsafe fn raccumulate(&self, origin: Buf<'_>, at: At<'_>, op: &Op) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.accumulate_as(origin, at, op, true) }
    }

    /// # Safety
    /// As [`Win::put`] (`request`: as [`Win::rput`]).
    unsafe fn accumulate_as(&self, origin: Buf<'_>, at: At<'_>, op: &Op, request: bool) -> Result<()> {
        let mut o = self.origin.lock().unwrap_or_else(|e| e.into_inner());
        let mut c = self.check(&o, Some(origin), at)?;
        c.elem = Self::element(op, Some(origin.ty), at.ty)?;
        let code = op_code(op);
        if code == op_code(&Op::builtin(Builtin::NoOp)) {
            return Ok(());
        }
        if let Some(shm) = &self.core.shm {
            o.used();
            // SAFETY: as for put.
            return unsafe { direct::accumulate(shm, origin, at, c.bytes as usize, op, c.elem) };
        }
        let (elem, unit) = (c.elem, elem_unit(c.elem));
        if self.is_bulk(&at, &c, request) {
            let rec = |seq| Record::AccBulk { at: c.target, len: c.bytes, seq, op: code, elem };
            // SAFETY: the caller's contract.
            return unsafe { self.send_bulk(&mut o, origin, (&at, &c), rec) };
        }
        let rec = |target, off, len| Record::Acc { at: target, off, len, op: code, elem };
        self.emit(&mut o, &at, &c, unit, rec, Some(origin))
    }

    /// `MPI_Get`'s slot: the data lands in `result` as the answers come; complete at the next
    /// flush, unlock, fence or complete, or when the slot is done.
    ///
    /// # Safety
    /// `result.buf` must stay writable along its type, and not be accessed otherwise, until
    /// the operation completes.
    pub(crate) unsafe fn get_slot(&self, result: Buf<'_>, at: At<'_>, request: bool) -> Result<Arc<Slot>> {
        let mut o = self.origin.lock().unwrap_or_else(|e| e.into_inner());
        let c = self.check(&o, Some(result), at)?;
        if let Some(shm) = &self.core.shm {
            o.used();
            // SAFETY: the caller's contract; `check` put the target range inside the window.
            unsafe { direct::get(shm, result, at, c.bytes as usize) }?;
            return Ok(Slot::done());
        }
        if self.is_bulk(&at, &c, request) {
            self.describe_target(&mut o, &at, &c)?;
            let seq = o.next_transfer(at.rank);
            // SAFETY: the caller keeps the result buffer writable and untouched until the
            // operation completes, which waits for the transfer (`Win::wait_answers`).
            let t = unsafe {
                let data = result.ty.data(result.buf.cast_mut(), result.count)?;
                let peer = self.core.peers[at.rank as usize];
                Transfer::recv(&self.core.session, peer, (seq, Way::ToOrigin), data, Some(c.bytes), None)
            }?;
            o.push(&self.core, at.rank, Record::GetBulk { at: c.target, len: c.bytes, seq }, &[]);
            o.to[at.rank as usize].transfers.push(Arc::new(t));
            o.used();
            return Ok(Slot::done());
        }
        let slot = self.answer_slot(at.rank, c.bytes, result)?;
        let reply = slot.id;
        self.emit(&mut o, &at, &c, 1, |target, off, len| Record::Get { at: target, off, len, reply }, None)?;
        Ok(self.awaiting(&mut o, at.rank, slot, request || c.bytes > EARLY))
    }

    /// `MPI_Get_accumulate`'s slot (`origin` unused with `MPI_NO_OP`).
    ///
    /// # Safety
    /// As [`Win::put`] for `origin`, as [`Win::get`] for `result`.
    pub(crate) unsafe fn get_accumulate_slot(
        &self,
        origin: Buf<'_>,
        result: Buf<'_>,
        at: At<'_>,
        op: &Op,
        now: bool,
    ) -> Result<Arc<Slot>> {
        let mut o = self.origin.lock().unwrap_or_else(|e| e.into_inner());
        let no_op = op.as_builtin() == Some(Builtin::NoOp);
        let mut c = self.check(&o, Some(result), at)?;
        if !no_op {
            self.check(&o, Some(origin), at)?;
        }
        c.elem = Self::element(op, (!no_op).then_some(origin.ty), at.ty)?;
        if let Some(shm) = &self.core.shm {
            o.used();
            let (from, bytes) = ((!no_op).then_some(origin), c.bytes as usize);
            // SAFETY: as for get and accumulate.
            unsafe { direct::get_accumulate(shm, from, result, at, bytes, op, c.elem) }?;
            return Ok(Slot::done());
        }
        let slot = self.answer_slot(at.rank, c.bytes, result)?;
        let (reply, code, elem) = (slot.id, op_code(op), c.elem);
        let rec = |target, off, len| Record::GetAcc { at: target, off, len, op: code, elem, reply };
        self.emit(&mut o, &at, &c, elem_unit(elem), rec, (!no_op).then_some(origin))?;
        Ok(self.awaiting(&mut o, at.rank, slot, now || c.bytes > EARLY))
    }

    /// `MPI_Compare_and_swap`'s slot: one element of a predefined type.
    ///
    /// # Safety
    /// `new` and `compare` readable for one element during the call; `result` as [`Win::get`].
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn compare_and_swap_slot(
        &self,
        new: *const u8,
        compare: *const u8,
        result: *mut u8,
        ty: &Datatype,
        rank: u32,
        disp: u64,
        now: bool,
    ) -> Result<Arc<Slot>> {
        let Some(p) = ty.as_predefined() else {
            return Err(Error::datatype("compare-and-swap takes a predefined datatype"));
        };
        let mut o = self.origin.lock().unwrap_or_else(|e| e.into_inner());
        let at = At { rank, disp, count: 1, ty };
        let c = self.check(&o, None, at)?;
        let size = c.bytes as usize;
        if let Some(shm) = &self.core.shm {
            o.used();
            // SAFETY: the caller's contract for the three elements; `check` put the target inside.
            unsafe { direct::compare_and_swap(shm, new, compare, result, at, size) };
            return Ok(Slot::done());
        }
        let mut payload = Vec::with_capacity(2 * size);
        // SAFETY: the caller vouches for one element at `new` and at `compare`.
        unsafe {
            payload.extend_from_slice(std::slice::from_raw_parts(new, size));
            payload.extend_from_slice(std::slice::from_raw_parts(compare, size));
        }
        let slot = self.answer_slot(rank, c.bytes, Buf { buf: result, count: 1, ty })?;
        o.push(&self.core, rank, Record::Cas { disp, elem: p_index(p), reply: slot.id }, &payload);
        o.used();
        Ok(self.awaiting(&mut o, rank, slot, now))
    }

    /// `MPI_Get`.
    ///
    /// # Safety
    /// As `Win::get_slot`.
    pub unsafe fn get(&self, result: Buf<'_>, at: At<'_>) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.get_slot(result, at, false) }.map(drop)
    }

    /// `MPI_Rget`: the request completes when the data is in `result`.
    ///
    /// # Safety
    /// As `Win::get_slot`, until the request completes.
    pub unsafe fn rget(&self, result: Buf<'_>, at: At<'_>) -> Result<RawRequest> {
        // SAFETY: the caller's contract.
        let slot = unsafe { self.get_slot(result, at, true) }?;
        Ok(self.request(slot))
    }

    /// `MPI_Get_accumulate` (and `MPI_Fetch_and_op`: one element).
    ///
    /// # Safety
    /// As `Win::get_accumulate_slot`.
    pub unsafe fn get_accumulate(&self, origin: Buf<'_>, result: Buf<'_>, at: At<'_>, op: &Op) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.get_accumulate_slot(origin, result, at, op, false) }.map(drop)
    }

    /// `MPI_Rget_accumulate`.
    ///
    /// # Safety
    /// As `Win::get_accumulate_slot`, until the request completes.
    pub unsafe fn rget_accumulate(
        &self,
        origin: Buf<'_>,
        result: Buf<'_>,
        at: At<'_>,
        op: &Op,
    ) -> Result<RawRequest> {
        // SAFETY: the caller's contract.
        let slot = unsafe { self.get_accumulate_slot(origin, result, at, op, true) }?;
        Ok(self.request(slot))
    }

    /// `MPI_Compare_and_swap`.
    ///
    /// # Safety
    /// As `Win::compare_and_swap_slot`.
    pub unsafe fn compare_and_swap(
        &self,
        new: *const u8,
        compare: *const u8,
        result: *mut u8,
        ty: &Datatype,
        rank: u32,
        disp: u64,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.compare_and_swap_slot(new, compare, result, ty, rank, disp, false) }.map(drop)
    }

    /// A request done when `slot` is.
    fn request(&self, slot: Arc<Slot>) -> RawRequest {
        RawRequest::with_pending(&self.comm, Box::new(SlotRequest { slot, nm: self.core.nm.clone() }))
    }

    fn answer_slot(&self, rank: u32, bytes: u64, result: Buf<'_>) -> Result<Arc<Slot>> {
        let sink = Sink { buf: result.buf.cast_mut(), layout: result.ty.layout(result.count)? };
        let peer = self.core.peers[rank as usize];
        Ok(self.core.service.slot(peer, bytes, Some(sink)))
    }

    /// Keeps the slot for the next synchronization; sends the batch `now` (a request or a
    /// caller may wait on the answer before any synchronization, or the answer is large enough
    /// that asking early overlaps its transfer with what the origin does meanwhile).
    fn awaiting(&self, o: &mut Origin, rank: u32, slot: Arc<Slot>, now: bool) -> Arc<Slot> {
        if now {
            o.flush_out(&self.core, rank);
        }
        o.prune(rank);
        o.to[rank as usize].awaited.push(slot.clone());
        slot
    }
}

/// The request of an operation with an answer (`MPI_Rget`, `MPI_Rget_accumulate`).
struct SlotRequest {
    slot: Arc<Slot>,
    nm: nmad::Nmad,
}

impl Pending for SlotRequest {
    fn is_complete(&self) -> bool {
        self.slot.is_done()
    }

    fn cond(&self) -> &pioman::Cond {
        self.slot.cond()
    }

    fn wait(&self, _pio: &pioman::Pioman) {
        // A failed target completes the wait with its error (outcome).
        if let Err(e) = self.slot.wait(&self.nm) {
            self.slot.fail(e);
        }
    }

    fn outcome(&self) -> Option<Outcome> {
        self.slot.outcome().map(|r| Outcome { error: r.err(), ..Outcome::DONE })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Packs bytes `[off, off + len)` of the origin data's stream.
fn pack_range(layout: &impl Layout, buf: *const u8, off: u64, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    layout.blocks(off as usize, &mut |o, n| {
        let n = n.min(len - v.len());
        // SAFETY: `o` is a block of the origin type's layout, which the caller of the operation
        // vouches is readable.
        v.extend_from_slice(unsafe { std::slice::from_raw_parts(buf.wrapping_offset(o), n) });
        v.len() < len
    });
    v
}

fn op_code(op: &Op) -> u8 {
    let b = op.as_builtin().expect("checked builtin");
    Builtin::ALL.iter().position(|&x| x == b).expect("listed") as u8
}

fn p_index(p: crate::datatype::Predefined) -> u16 {
    crate::datatype::Predefined::ALL.iter().position(|&x| x == p).expect("listed") as u16
}

/// Bytes per element of element type `elem` (1 without one).
fn elem_unit(elem: u16) -> u64 {
    super::service::elem_size(elem).unwrap_or(1).max(1)
}
