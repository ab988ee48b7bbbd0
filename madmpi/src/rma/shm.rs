//! The intra-node fast path: when every member of a window maps its memory (a segment of the
//! node: `MPI_Win_allocate` on one node, `MPI_Win_allocate_shared`), operations are loads and
//! stores by the origin itself, and synchronization uses atomics in the segment's control area
//! instead of messages (the paper's "shared semaphores"):
//!
//! - each member's passive-target lock is a FIFO-fair reader/writer ticket lock ([`Ticket`]):
//!   a waiting writer is never starved by later readers;
//! - each member's accumulate lock (a spin lock) makes accumulate, get_accumulate,
//!   fetch_and_op and compare_and_swap element-wise atomic with each other, whoever the origin;
//! - PSCW posts and completes are counters per (target, origin) pair;
//! - a fence is a memory fence and a barrier (operations are complete when they return).
//!
//! The control area follows the members' parts in the segment (see `create::layout`). A peer
//! can corrupt these words, which may make a wait last, but never makes us address memory: no
//! value read from the control area is used as an offset or a length.
//!
//! Owns the control area's layout and the waits on it; the operations' checks stay in `ops`.

use super::ticket::Ticket;
use super::window::Exposure;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};

/// Bytes per member of the lock lines.
const LINE: usize = 64;

/// Bytes of the control area of `n` members.
pub(crate) fn control_len(n: usize) -> usize {
    n * LINE + 2 * n * n * 4
}

/// The window as the fast path sees it: every member's part in this process's mapping, and the
/// control area.
pub(crate) struct ShmPath {
    parts: Vec<*mut u8>,
    members: Vec<Exposure>,
    control: *mut u8,
    n: usize,
}

// SAFETY: the pointers are into a shared mapping that lives as long as the window (the window
// owns both); every access through them is either an atomic or a copy MPI's epochs order.
unsafe impl Send for ShmPath {}
// SAFETY: as for Send.
unsafe impl Sync for ShmPath {}

impl ShmPath {
    /// # Safety
    /// `base` maps the segment, `offsets` are the members' parts in it, and `control` is the
    /// offset of a control area of [`control_len`]`(n)` bytes inside it, all valid while the
    /// returned value lives.
    pub(crate) unsafe fn new(
        base: *mut u8,
        offsets: &[usize],
        control: usize,
        members: Vec<Exposure>,
    ) -> ShmPath {
        ShmPath {
            parts: offsets.iter().map(|&o| base.wrapping_add(o)).collect(),
            n: members.len(),
            members,
            control: base.wrapping_add(control),
        }
    }

    /// How many members the window has.
    pub(crate) fn members(&self) -> usize {
        self.n
    }

    /// Member `t`'s part in this mapping, and its exposure.
    pub(crate) fn part(&self, t: u32) -> (*mut u8, Exposure) {
        (self.parts[t as usize], self.members[t as usize])
    }

    fn line(&self, t: u32) -> *mut u8 {
        self.control.wrapping_add(t as usize * LINE)
    }

    /// The lock's request and completion words of member `t`.
    fn lock_words(&self, t: u32) -> (&AtomicU64, &AtomicU64) {
        // SAFETY: the line is inside the control area (t < n), 64-byte aligned (the area starts
        // on a page), and only ever accessed atomically.
        unsafe { (AtomicU64::from_ptr(self.line(t).cast()), AtomicU64::from_ptr(self.line(t).add(8).cast())) }
    }

    fn acc_word(&self, t: u32) -> &AtomicU32 {
        // SAFETY: as for lock_words (bytes 16..20 of the line).
        unsafe { AtomicU32::from_ptr(self.line(t).add(16).cast()) }
    }

    /// Counter `which` (0: posts, 1: completes) that `from` raises for `at`.
    fn counter(&self, which: usize, at: u32, from: u32) -> &AtomicU32 {
        let i = (which * self.n + at as usize) * self.n + from as usize;
        // SAFETY: i < 2n², inside the counters after the lines; 4-byte aligned; atomic only.
        unsafe { AtomicU32::from_ptr(self.control.add(self.n * LINE + 4 * i).cast()) }
    }

    /// Takes member `t`'s lock (`exclusive` or shared), waiting in FIFO order.
    pub(crate) fn lock(&self, t: u32, exclusive: bool) {
        let (requests, done) = self.lock_words(t);
        Ticket { requests, done }.lock(exclusive, |ready| wait(ready));
    }

    pub(crate) fn unlock(&self, t: u32, exclusive: bool) {
        let (requests, done) = self.lock_words(t);
        Ticket { requests, done }.unlock(exclusive);
    }

    /// Runs `f` under member `t`'s accumulate lock.
    pub(crate) fn atomically<R>(&self, t: u32, f: impl FnOnce() -> R) -> R {
        let w = self.acc_word(t);
        let take = || w.compare_exchange_weak(0, 1, Acquire, Relaxed).is_ok();
        if !take() {
            wait(&take);
        }
        let r = f();
        w.store(0, Release);
        r
    }

    /// PSCW: `from` tells `at` (0: a post, 1: a complete).
    pub(crate) fn raise(&self, which: usize, at: u32, from: u32) {
        self.counter(which, at, from).fetch_add(1, Release);
    }

    /// How many `from` raised for `at`.
    pub(crate) fn count(&self, which: usize, at: u32, from: u32) -> u32 {
        self.counter(which, at, from).load(Acquire)
    }
}

/// Spins until `ready()`, yielding the core after a while (the holder may need it).
pub(crate) fn wait(ready: &dyn Fn() -> bool) {
    let mut spins = 0u32;
    while !ready() {
        spins += 1;
        if spins < 64 {
            std::hint::spin_loop();
        } else if spins < 4096 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    }
}
