//! The hot calls of the intra-node fast path ([`super::shm`]): `MPI_Win_lock`/`unlock`,
//! `MPI_Win_flush`, and puts, gets, accumulates (and get_accumulate, fetch_and_op) and
//! compare-and-swaps of contiguous predefined elements, with no mutex, no
//! allocation and no reference count: what the origin must remember (which targets it holds a
//! lock on, which epoch it is in) is kept here in atomics.
//!
//! On a window of the fast path, `MPI_Win_lock` and `MPI_Win_unlock` live here entirely (the
//! origin's `Access::Locks` is never used there); fence, PSCW and lock_all stay in
//! [`super::origin::Origin`] under its mutex, which mirrors its epoch in [`Fast::epoch`] so a
//! hot call knows whether it may go on. A hot operation that meets anything unusual (another
//! epoch, a rank or a range outside, no lock) declines: the caller then takes the general path,
//! which checks everything and reports what is wrong.
//!
//! Owns the per-target lock states of the fast path; the lock words themselves are `shm`'s.

use super::lock::LockKind;
use super::origin::Access;
use super::shm::ShmPath;
use super::window::Win;
use crate::datatype::Predefined;
use crate::error::{Error, Result};
use crate::op::{Builtin, Plan};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering::*, fence};

/// What this process holds on one target.
const FREE: u8 = 0;
const SHARED: u8 = 1;
const EXCLUSIVE: u8 = 2;
/// `MPI_MODE_NOCHECK`: an epoch without a lock.
const UNCHECKED: u8 = 3;
/// Between the claim and the grant of `MPI_Win_lock` (the target is not accessible yet).
const TAKING: u8 = 4;

/// The origin's epoch as the hot calls need it (mirrors `Origin::access`).
pub(crate) const QUIET: u8 = 0;
pub(crate) const LOCK_ALL: u8 = 1;
/// A fence or PSCW epoch: the hot operations decline, the general path handles them.
pub(crate) const OTHER: u8 = 2;

/// One target as the hot calls see it: what this process holds on it, and its part of the
/// window in this process's mapping (one bounds check reaches all of it).
struct Target {
    held: AtomicU8,
    base: *mut u8,
    size: usize,
    unit: usize,
}

/// The origin side of the fast path.
pub(crate) struct Fast {
    targets: Box<[Target]>,
    pub(crate) epoch: AtomicU8,
    pub(crate) no_locks: AtomicBool,
}

// SAFETY: the parts' pointers are into the window's shared mapping, which the window's core owns
// and keeps while the window (and so this value) lives; they are only used for copies MPI's
// epochs order, the lock states are atomics.
unsafe impl Send for Fast {}
// SAFETY: as for Send.
unsafe impl Sync for Fast {}

impl Target {
    fn locked(&self) -> bool {
        matches!(self.held.load(Acquire), SHARED | EXCLUSIVE | UNCHECKED)
    }
}

impl Fast {
    pub(crate) fn new(shm: &ShmPath, no_locks: bool) -> Fast {
        let targets = (0..shm.members() as u32)
            .map(|t| {
                let (base, e) = shm.part(t);
                Target { held: AtomicU8::new(FREE), base, size: e.size, unit: e.disp_unit }
            })
            .collect();
        Fast { targets, epoch: AtomicU8::new(QUIET), no_locks: AtomicBool::new(no_locks) }
    }

    /// The mirror of `access`.
    pub(crate) fn mirror(&self, access: &Access) {
        let e = match access {
            Access::None | Access::Locks => QUIET,
            Access::LockAll => LOCK_ALL,
            Access::Fence { .. } | Access::Pscw(_) => OTHER,
        };
        self.epoch.store(e, Relaxed);
    }

    /// Whether `MPI_Win_lock` gives this process access to target `t` now.
    pub(crate) fn locked(&self, t: u32) -> bool {
        self.targets.get(t as usize).is_some_and(Target::locked)
    }

    /// Whether any target is locked (or being locked) with `MPI_Win_lock`.
    pub(crate) fn any_locked(&self) -> bool {
        self.targets.iter().any(|x| x.held.load(Acquire) != FREE)
    }

    /// Whether operations may reach `t` without the general path (a lock or lock_all).
    fn open(&self, t: &Target) -> bool {
        self.epoch.load(Relaxed) == LOCK_ALL || t.locked()
    }
}

fn sync_error(what: &str) -> Error {
    Error::rma_sync(what.to_string())
}

impl Win {
    /// The fast path's two halves, when the window is on it.
    fn fast(&self) -> Option<(&Fast, &ShmPath)> {
        Some((self.fast.as_ref()?, self.core.shm.as_ref()?))
    }

    /// `MPI_Win_lock` when the fast path can grant it with no check failing: `false` (nothing
    /// done) otherwise, for [`Win::lock`] to check and report.
    pub fn lock_hot(&self, exclusive: bool, rank: u32, assert: i32) -> bool {
        let Some((f, shm)) = self.fast() else { return false };
        if f.no_locks.load(Relaxed) || f.epoch.load(Relaxed) != QUIET {
            return false;
        }
        let Some(h) = f.targets.get(rank as usize).map(|x| &x.held) else { return false };
        if h.compare_exchange(FREE, TAKING, Acquire, Relaxed).is_err() {
            return false;
        }
        let state = if assert & super::sync::mode::NOCHECK != 0 {
            UNCHECKED
        } else {
            shm.lock(rank, exclusive);
            if exclusive { EXCLUSIVE } else { SHARED }
        };
        h.store(state, Release);
        true
    }

    /// `MPI_Win_lock` on the fast path, every check made (`None`: the window is not on it).
    pub(super) fn fast_lock(&self, kind: LockKind, rank: u32, assert: i32) -> Option<Result<()>> {
        let (f, _) = self.fast()?;
        let exclusive = kind == LockKind::Exclusive;
        Some((|| {
            if self.lock_hot(exclusive, rank, assert) {
                return Ok(());
            }
            if f.no_locks.load(Relaxed) {
                return Err(sync_error("MPI_Win_lock on a window created with no_locks"));
            }
            if f.epoch.load(Relaxed) != QUIET {
                // A fence epoch no operation used yet ends here; any other refuses the lock.
                let mut o = self.origin_state();
                if o.access != (Access::Fence { used: false }) {
                    return Err(sync_error("MPI_Win_lock inside another access epoch"));
                }
                o.access = Access::None;
                f.mirror(&o.access);
                drop(o);
                if self.lock_hot(exclusive, rank, assert) {
                    return Ok(());
                }
            }
            Err(sync_error("MPI_Win_lock on a rank this process has locked"))
        })())
    }

    /// `MPI_Win_unlock` when this process holds the lock through the fast path: every
    /// operation completed in its call, so releasing the lock word (a release increment)
    /// publishes them. `false` (nothing done) otherwise.
    pub fn unlock_hot(&self, rank: u32) -> bool {
        let Some((f, shm)) = self.fast() else { return false };
        let Some(h) = f.targets.get(rank as usize).map(|x| &x.held) else { return false };
        let state = h.load(Acquire);
        if !matches!(state, SHARED | EXCLUSIVE | UNCHECKED) {
            return false;
        }
        h.store(FREE, Release);
        match state {
            SHARED | EXCLUSIVE => shm.unlock(rank, state == EXCLUSIVE),
            _ => fence(Release),
        }
        true
    }

    /// `MPI_Win_unlock` on the fast path, every check made (`None`: the window is not on it).
    pub(super) fn fast_unlock(&self, rank: u32) -> Option<Result<()>> {
        let (f, _) = self.fast()?;
        Some(match self.unlock_hot(rank) {
            true => Ok(()),
            false if rank as usize >= f.targets.len() => {
                Err(Error::rank(format!("rank {rank} is not in the window's {} ranks", f.targets.len())))
            }
            false => Err(sync_error("MPI_Win_unlock without MPI_Win_lock on that rank")),
        })
    }

    /// `MPI_Win_flush` / `flush_local` of `rank` when a lock or lock_all of the fast path
    /// covers it: the operations completed in their calls, and this orders them before what
    /// follows. `false` (nothing done) otherwise, for the general path.
    pub fn flush_hot(&self, rank: u32) -> bool {
        let open =
            self.fast.as_ref().is_some_and(|f| f.targets.get(rank as usize).is_some_and(|t| f.open(t)));
        if open {
            fence(Release);
        }
        open
    }

    /// The address of `bytes` bytes at displacement `disp` of `rank`, when the fast path may
    /// reach them now.
    #[inline]
    fn reach(&self, rank: u32, disp: u64, bytes: usize) -> Option<*mut u8> {
        let f = self.fast.as_ref()?;
        let t = f.targets.get(rank as usize)?;
        let start = usize::try_from(disp).ok()?.checked_mul(t.unit)?;
        (f.open(t) && start.checked_add(bytes)? <= t.size).then(|| t.base.wrapping_add(start))
    }

    /// `MPI_Put` of `bytes` contiguous bytes from `src` to displacement `disp` of `rank`, on
    /// the fast path inside a lock or lock_all epoch; `false` (nothing done) when that does
    /// not apply, for [`Win::put`] to check and do.
    ///
    /// # Safety
    /// `src` readable for `bytes` bytes.
    pub unsafe fn put_bytes(&self, src: *const u8, bytes: usize, rank: u32, disp: u64) -> bool {
        let Some(dst) = self.reach(rank, disp, bytes) else { return false };
        // SAFETY: `reach` put the range inside the target's part of the mapping; the caller
        // vouches for `src`.
        unsafe { copy(src, dst, bytes) };
        true
    }

    /// `MPI_Get` of `bytes` contiguous bytes into `dst`, as [`Win::put_bytes`].
    ///
    /// # Safety
    /// `dst` writable for `bytes` bytes.
    pub unsafe fn get_bytes(&self, dst: *mut u8, bytes: usize, rank: u32, disp: u64) -> bool {
        let Some(src) = self.reach(rank, disp, bytes) else { return false };
        // SAFETY: as for put_bytes, the other way.
        unsafe { copy(src, dst, bytes) };
        true
    }

    /// `MPI_Compare_and_swap` of one `size`-byte element, as [`Win::put_bytes`], under the
    /// target's accumulate lock (atomic with every accumulate-like operation on it).
    ///
    /// # Safety
    /// `new` and `compare` readable, `result` writable, for `size` bytes.
    pub unsafe fn compare_and_swap_bytes(
        &self,
        new: *const u8,
        compare: *const u8,
        result: *mut u8,
        size: usize,
        rank: u32,
        disp: u64,
    ) -> bool {
        if size > 32 {
            return false;
        }
        let Some(ptr) = self.reach(rank, disp, size) else { return false };
        let shm = self.core.shm.as_ref().expect("reach found the fast path");
        // SAFETY: `reach` checked the target element; the caller vouches for the three
        // buffers; under the accumulate lock, nobody else combines into the element.
        shm.atomically(rank, || unsafe { super::direct::swap_if_equal(ptr, new, compare, result, size) });
        true
    }
}

impl Win {
    /// `MPI_Accumulate` (`result` null), `MPI_Get_accumulate` and `MPI_Fetch_and_op` (`result`
    /// gets the old target data) of `bytes` bytes of elements of `elem` with builtin `op`, as
    /// [`Win::put_bytes`], under the target's accumulate lock (atomic with every accumulate-like
    /// operation on it). `false` (nothing done) also when `op` is not defined on `elem`: the
    /// general path reports that.
    ///
    /// # Safety
    /// `src` readable (unless `op` is `MPI_NO_OP`) and `result`, when not null, writable for
    /// `bytes` bytes.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn accumulate_bytes(
        &self,
        src: *const u8,
        result: *mut u8,
        bytes: usize,
        elem: Predefined,
        op: Builtin,
        rank: u32,
        disp: u64,
    ) -> bool {
        let Some(plan) = crate::op::combiner(op, elem) else { return false };
        if !bytes.is_multiple_of(elem.size().max(1) as usize) || (src.is_null() && op != Builtin::NoOp) {
            return false;
        }
        let Some(ptr) = self.reach(rank, disp, bytes) else { return false };
        // Overlapping buffers (the origin in our own part of the window) take the general path,
        // which copies the input first.
        let apart = |a: *const u8, b: *const u8| (a as usize).abs_diff(b as usize) >= bytes;
        if !apart(src, ptr) || (!result.is_null() && (!apart(result, ptr) || !apart(result, src))) {
            return false;
        }
        let shm = self.core.shm.as_ref().expect("reach found the fast path");
        shm.atomically(rank, || {
            // SAFETY: `reach` checked the target range; the caller vouches for `src` and
            // `result`, which do not overlap it or each other (checked above); under the
            // accumulate lock nobody else combines into the range.
            unsafe {
                if !result.is_null() {
                    copy(ptr, result, bytes);
                }
                match plan {
                    Plan::Copy => copy(src, ptr, bytes),
                    Plan::Nothing => {}
                    Plan::Kernel(k) => {
                        k(std::slice::from_raw_parts(src, bytes), std::slice::from_raw_parts_mut(ptr, bytes))
                    }
                }
            }
        });
        true
    }
}

/// Copies `n` bytes from `src` to `dst`, which may overlap (a put from our own part of the
/// window to itself); an element of 1 to 8 bytes by one load and one store, not a call.
///
/// # Safety
/// `src` readable and `dst` writable for `n` bytes.
#[inline(always)]
unsafe fn copy(src: *const u8, dst: *mut u8, n: usize) {
    // SAFETY: the caller's contract; each arm reads then writes its whole width.
    unsafe {
        match n {
            8 => dst.cast::<u64>().write_unaligned(src.cast::<u64>().read_unaligned()),
            4 => dst.cast::<u32>().write_unaligned(src.cast::<u32>().read_unaligned()),
            2 => dst.cast::<u16>().write_unaligned(src.cast::<u16>().read_unaligned()),
            1 => dst.write(src.read()),
            _ => std::ptr::copy(src, dst, n),
        }
    }
}
