//! What records do to the window's memory: every access resolved against the window first
//! (its whole span; the attached regions of a dynamic window), then scattered, gathered or
//! combined element-wise.
//!
//! Owns the bounds checks and the data movement; it must not touch the records' order.

use super::target::{Answers, TargetState, TypeDef, WinCore, lock};
use crate::datatype::{Datatype, Predefined};
use crate::error::{Error, Result};
use crate::op::{Builtin, Op};
use crate::rma::service::elem_size;
use crate::rma::shape::Shape;
use crate::rma::window::Memory;
use crate::rma::wire::{Record, Target, TypeRef};

pub(super) fn reply_of(rec: &Record) -> Option<u64> {
    match *rec {
        Record::Get { reply, .. } | Record::GetAcc { reply, .. } | Record::Cas { reply, .. } => Some(reply),
        _ => None,
    }
}

pub(super) fn check_len(data: &[u8], len: u32) -> Result<()> {
    if data.len() != len as usize {
        return Err(Error::intern(format!("{} bytes for a {len}-byte record", data.len())));
    }
    Ok(())
}

/// The operation and element type of an accumulate record (`elem` unused by `REPLACE`/`NO_OP`).
pub(super) fn op_on(op: u8, elem: u16) -> Result<(Op, Datatype)> {
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
pub(super) unsafe fn scatter(ptr: *mut u8, shape: &Shape, off: u64, data: &[u8]) {
    shape.walk(off, data.len() as u64, |o, a, n| {
        // SAFETY: the caller vouches for the target bytes; `a + n` is within `data` (walk).
        unsafe { std::ptr::copy(data.as_ptr().add(a), ptr.wrapping_offset(o as isize), n) }
    });
}

/// Reads bytes `[off, off + len)` of an access of `shape` at `ptr`.
///
/// # Safety
/// As [`scatter`], readable.
pub(super) unsafe fn gather(ptr: *mut u8, shape: &Shape, off: u64, len: usize) -> Vec<u8> {
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
pub(super) unsafe fn combine(
    ptr: *mut u8,
    shape: &Shape,
    off: u64,
    input: &[u8],
    op: &Op,
    dt: &Datatype,
) -> Result<()> {
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

impl WinCore {
    /// The address of the displacement and the shape of an operation's target, after checking
    /// its whole span and its bytes `[off, off + len)` against the window.
    pub(super) fn resolve(
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

    pub(super) fn apply(
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
}
