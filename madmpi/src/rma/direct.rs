//! The operations of the intra-node fast path ([`super::shm`]): the origin reads and writes
//! the target's part of the segment itself, complete when the call returns. Accumulate-like
//! operations run under the target's accumulate lock, so they stay element-wise atomic with
//! each other whichever process issues them.
//!
//! Owns the copies along both datatypes; the checks (epoch, ranks, range, element type) were
//! made by `ops` before any of these runs.

use super::ops::{At, Buf};
use super::shm::ShmPath;
use crate::datatype::{Datatype, Predefined};
use crate::error::Result;
use crate::op::{Builtin, Op};
use nmad::Layout;
use std::borrow::Cow;

/// The address of the target's displacement (checked inside its part by `ops`).
fn address(shm: &ShmPath, at: &At<'_>) -> *mut u8 {
    let (base, e) = shm.part(at.rank);
    base.wrapping_add(at.disp as usize * e.disp_unit)
}

/// The packed bytes of `count` elements of `ty` at `ptr`.
///
/// # Safety
/// `ptr` must be readable along the type for the duration of the borrow.
unsafe fn read<'a>(ptr: *const u8, ty: &Datatype, count: i64, bytes: usize) -> Result<Cow<'a, [u8]>> {
    if let Some(off) = ty.contiguous_offset() {
        // SAFETY: the caller vouches for the type map; a contiguous one is `bytes` bytes here.
        return Ok(Cow::Borrowed(unsafe {
            std::slice::from_raw_parts(ptr.wrapping_offset(off as isize), bytes)
        }));
    }
    let layout = ty.layout(count)?;
    let mut v = Vec::with_capacity(bytes);
    layout.blocks(0, &mut |o, n| {
        // SAFETY: `o` is a block of the type map the caller vouches for.
        v.extend_from_slice(unsafe { std::slice::from_raw_parts(ptr.wrapping_offset(o), n) });
        true
    });
    Ok(Cow::Owned(v))
}

/// Writes packed `data` as `count` elements of `ty` at `ptr`.
///
/// # Safety
/// `ptr` must be writable along the type, and `data` must not overlap it.
unsafe fn write(ptr: *mut u8, ty: &Datatype, count: i64, data: &[u8]) -> Result<()> {
    if let Some(off) = ty.contiguous_offset() {
        // SAFETY: the caller vouches for the type map, `data.len()` bytes from its start.
        unsafe { std::ptr::copy(data.as_ptr(), ptr.wrapping_offset(off as isize), data.len()) };
        return Ok(());
    }
    let mut src = data;
    ty.layout(count)?.blocks(0, &mut |o, n| {
        let (piece, rest) = src.split_at(n.min(src.len()));
        // SAFETY: `o` is a block of the type map the caller vouches for.
        unsafe { std::ptr::copy(piece.as_ptr(), ptr.wrapping_offset(o), piece.len()) };
        src = rest;
        !src.is_empty()
    });
    Ok(())
}

/// `MPI_Put`.
///
/// # Safety
/// The origin buffer readable along its type; the target range checked inside the window.
pub(crate) unsafe fn put(shm: &ShmPath, origin: Buf<'_>, at: At<'_>, bytes: usize) -> Result<()> {
    // SAFETY: the caller's contract, for both sides.
    unsafe {
        let data = read(origin.buf, origin.ty, origin.count, bytes)?;
        write(address(shm, &at), at.ty, at.count, &data)
    }
}

/// `MPI_Get`.
///
/// # Safety
/// The result buffer writable along its type; the target range checked inside the window.
pub(crate) unsafe fn get(shm: &ShmPath, result: Buf<'_>, at: At<'_>, bytes: usize) -> Result<()> {
    let from = address(shm, &at);
    // SAFETY: the caller's contract, for both sides (a memmove: a get from our own part may
    // land in it).
    unsafe {
        if let (Some(t), Some(r)) = (at.ty.contiguous_offset(), result.ty.contiguous_offset()) {
            let (src, dst) =
                (from.wrapping_offset(t as isize), result.buf.cast_mut().wrapping_offset(r as isize));
            std::ptr::copy(src, dst, bytes);
            return Ok(());
        }
        let data = read(from, at.ty, at.count, bytes)?.into_owned();
        write(result.buf.cast_mut(), result.ty, result.count, &data)
    }
}

/// `target = input op target` on the target of `at`, under its accumulate lock; the old
/// target bytes when `fetch`.
///
/// # Safety
/// `input` packed for the access; the target range checked inside the window.
unsafe fn combine(
    shm: &ShmPath,
    at: &At<'_>,
    bytes: usize,
    input: &[u8],
    op: &Op,
    elem: u16,
    fetch: bool,
) -> Result<Vec<u8>> {
    let b = op.as_builtin();
    let dt = Datatype::predefined(Predefined::ALL.get(elem as usize).copied().unwrap_or(Predefined::Byte));
    let count = bytes / (dt.size() as usize).max(1);
    let ptr = address(shm, at);
    shm.atomically(at.rank, || {
        // SAFETY: the caller's contract; the accumulate lock orders this with every other
        // accumulate-like access to this member's part.
        unsafe {
            let old_copy = if fetch { read(ptr, at.ty, at.count, bytes)?.into_owned() } else { Vec::new() };
            match (b, at.ty.contiguous_offset()) {
                (Some(Builtin::NoOp), _) => {}
                (Some(Builtin::Replace), _) => write(ptr, at.ty, at.count, input)?,
                // A contiguous target: combined in place (its packed form is its memory).
                (_, Some(off)) => {
                    let target = std::slice::from_raw_parts_mut(ptr.wrapping_offset(off as isize), bytes);
                    op.reduce(input, target, count, &dt)?;
                }
                (_, None) => {
                    let mut packed = read(ptr, at.ty, at.count, bytes)?.into_owned();
                    op.reduce(input, &mut packed, count, &dt)?;
                    write(ptr, at.ty, at.count, &packed)?;
                }
            }
            Ok(old_copy)
        }
    })
}

/// `MPI_Accumulate`.
///
/// # Safety
/// As [`put`].
pub(crate) unsafe fn accumulate(
    shm: &ShmPath,
    origin: Buf<'_>,
    at: At<'_>,
    bytes: usize,
    op: &Op,
    elem: u16,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe {
        let input = read(origin.buf, origin.ty, origin.count, bytes)?;
        combine(shm, &at, bytes, &input, op, elem, false).map(drop)
    }
}

/// `MPI_Get_accumulate` (`origin` is `None` for `MPI_NO_OP`).
///
/// # Safety
/// As [`put`] for `origin`, as [`get`] for `result`.
pub(crate) unsafe fn get_accumulate(
    shm: &ShmPath,
    origin: Option<Buf<'_>>,
    result: Buf<'_>,
    at: At<'_>,
    bytes: usize,
    op: &Op,
    elem: u16,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe {
        let input = match origin {
            Some(o) => read(o.buf, o.ty, o.count, bytes)?,
            None => Cow::Borrowed(&[][..]),
        };
        let old = combine(shm, &at, bytes, &input, op, elem, true)?;
        write(result.buf.cast_mut(), result.ty, result.count, &old)
    }
}

/// `MPI_Compare_and_swap` of one element of `size` bytes.
///
/// # Safety
/// `new`, `compare` readable and `result` writable for one element; the target checked.
pub(crate) unsafe fn compare_and_swap(
    shm: &ShmPath,
    new: *const u8,
    compare: *const u8,
    result: *mut u8,
    at: At<'_>,
    size: usize,
) {
    let ptr = address(shm, &at);
    // SAFETY: the caller's contract; under the member's accumulate lock.
    shm.atomically(at.rank, || unsafe { swap_if_equal(ptr, new, compare, result, size) })
}

/// The compare-and-swap itself: the `size`-byte element at `ptr` becomes `new` if it equals
/// `compare`; its old value lands in `result`. An 8-byte element is one load and one compare.
///
/// # Safety
/// All four pointers valid for `size` bytes; the caller holds the target's accumulate lock.
pub(crate) unsafe fn swap_if_equal(
    ptr: *mut u8,
    new: *const u8,
    compare: *const u8,
    result: *mut u8,
    size: usize,
) {
    // SAFETY: the caller's contract.
    unsafe {
        if size == 8 {
            let old = ptr.cast::<u64>().read_unaligned();
            if old == compare.cast::<u64>().read_unaligned() {
                std::ptr::copy(new, ptr, 8);
            }
            result.cast::<u64>().write_unaligned(old);
            return;
        }
        // Predefined elements are at most 32 bytes (a long double complex).
        let mut stack = [0u8; 32];
        let mut heap = Vec::new();
        let old: &mut [u8] = if size <= stack.len() {
            &mut stack[..size]
        } else {
            heap.resize(size, 0);
            &mut heap
        };
        std::ptr::copy_nonoverlapping(ptr, old.as_mut_ptr(), size);
        if *old == *std::slice::from_raw_parts(compare, size) {
            std::ptr::copy(new, ptr, size);
        }
        std::ptr::copy(old.as_ptr(), result, size);
    }
}
