//! The area of a communicator's node-local collectives, in a segment every member maps: per
//! member, a control line (how many members sleep waiting on it) and three buffers, used by
//! calls in turn. A buffer's first word is the number of the last call its member published
//! in it; the call's data follows, so that up to 56 bytes travel in the same cache line as the
//! number that announces them.
//!
//! The protocol (every call numbered 1, 2, … alike at every member; call `c` uses buffer
//! `c % B`, `B` = 16): each member publishes `c` once in every call `c`, after writing its data
//! if the call has it (`publish`); a member that reads another's data for call `c` first waits
//! until that member published `c` (`wait`). Before writing its buffer for call `c`, a member
//! waits until every member published `c − (B − 1)` (`wait_writable`): each finished reading
//! call `c − B`'s data before it entered call `c − (B − 1)`, so nobody still reads what is
//! overwritten. A member is thus at most `B − 1` calls ahead of the slowest: a root
//! broadcasting again and again, or members reducing to a root, do not wait for a round trip
//! per call, and ranks sharing a CPU get through many calls per time slice.
//!
//! Waiting spins first (the announcement usually comes within a cache-line transfer), then
//! sleeps on a futex of the announcing word; a publisher wakes only when its control line
//! counts sleepers. That needs the publisher's store and its look at the sleepers ordered
//! against the sleeper's count and its look at the word (a store-load barrier on both sides).
//! The publisher's side is the hot one, and a barrier there waits for its cache line to come
//! back from the reader, which doubles a 2-member allreduce: so the sleeper issues it for both
//! (`membarrier`'s global expedited command runs a barrier on every CPU running a registered
//! process) and the publisher only keeps the compiler from reordering. Where the kernel refuses
//! `membarrier`, every member fences its publishes instead (agreed at setup). Between two spins or sleeps the waiter lets pioman progress the rest of the
//! library and asks the caller whether to give up (a member failed, the communicator was
//! revoked).
//!
//! The segment's other members are processes of the same job (same user, fd passed over an
//! authenticated socket); still, nothing read from it is a length or an offset: call numbers are
//! compared, data is copied with the caller's own lengths.
//!
//! Owns the layout, the announcements and the waits; what a call exchanges is `calls`'.

use crate::error::Result;
use crate::node_shm::segment::Segment;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::*, compiler_fence, fence};
use std::time::{Duration, Instant};

/// Bytes of data a member contributes to one call at most.
pub(crate) const DATA: usize = 1024;
const LINE: usize = 64;
/// One buffer: the call number, then the data (rounded up to whole lines).
const BUF: usize = (8 + DATA).div_ceil(LINE) * LINE;
/// Buffers per member (`B` in the module docs): how far a member may run ahead.
const BUFFERS: u64 = 16;
/// One member's part: the control line and the buffers.
const MEMBER: usize = LINE + BUFFERS as usize * BUF;

/// How long a waiter spins when its CPU is its own, then sleeps.
const SPIN: Duration = Duration::from_micros(100);
/// When the node runs more processes than CPUs (the one it waits for may need this CPU), or on
/// a marcel user thread (its LWP's other threads may need it): how long a waiter spins, then
/// yields between looks, then sleeps.
const SPIN_SHARED_CPU: Duration = Duration::ZERO;
const YIELD_SHARED_CPU: Duration = Duration::from_micros(500);
/// Time between two looks at the rest of the library (progress, failures) while spinning, and
/// the longest sleep.
const LOOK_EVERY: Duration = Duration::from_micros(20);
const SLEEP_AT_MOST: Duration = Duration::from_millis(1);

/// The bytes of the segment for `n` members.
pub(crate) fn len(n: usize) -> usize {
    n * MEMBER
}

/// This member's view of the area.
pub(crate) struct Area {
    seg: Segment,
    n: u32,
    me: u32,
    /// Publishes fence (some member could not register for `membarrier`).
    fenced: bool,
}

/// What a waiter does between two spins or sleeps: progress the library, and say whether to stop
/// waiting (the error to return).
pub(crate) trait Meanwhile {
    fn look(&mut self) -> Result<()>;
    /// Whether the node runs more processes than CPUs (spin briefly).
    fn shared_cpu(&self) -> bool;
}

impl Area {
    /// The area of `n` members in `seg` (of at least [`len`]`(n)` bytes), seen by member `me`;
    /// `fenced`: publishes fence (not every member is registered for [`asymmetric_barriers`]).
    pub(crate) fn new(seg: Segment, n: u32, me: u32, fenced: bool) -> Area {
        assert!(seg.len() >= len(n as usize) && me < n, "segment too small for {n} members");
        Area { seg, n, me, fenced }
    }

    pub(crate) fn members(&self) -> u32 {
        self.n
    }

    pub(crate) fn me(&self) -> u32 {
        self.me
    }

    /// Whether publishes fence (see [`Area::new`]).
    pub(crate) fn fenced(&self) -> bool {
        self.fenced
    }

    fn part(&self, j: u32) -> *mut u8 {
        assert!(j < self.n, "member {j} of {}", self.n);
        // SAFETY: `j < n` and the segment holds `n` parts (checked in `new`).
        unsafe { self.seg.base().add(j as usize * MEMBER) }
    }

    fn sleepers(&self, j: u32) -> &AtomicU32 {
        // SAFETY: the control line starts the part (aligned: parts are whole lines from a
        // page-aligned mapping); other processes access it only atomically too.
        unsafe { &*self.part(j).cast::<AtomicU32>() }
    }

    fn buffer(&self, j: u32, c: u64) -> *mut u8 {
        // SAFETY: buffer `c % BUFFERS` lies within member `j`'s part.
        unsafe { self.part(j).add(LINE + (c % BUFFERS) as usize * BUF) }
    }

    fn number(&self, j: u32, c: u64) -> &AtomicU64 {
        // SAFETY: the buffer's first word, 8-byte aligned; accessed only atomically anywhere.
        unsafe { &*self.buffer(j, c).cast::<AtomicU64>() }
    }

    /// Whether member `j` published call `c` (or a later one).
    pub(crate) fn published(&self, j: u32, c: u64) -> bool {
        self.number(j, c).load(Acquire) >= c
    }

    /// Copies `data` into this member's buffer for call `c` (after [`Area::wait_writable`]).
    pub(crate) fn write(&self, c: u64, data: &[u8]) {
        assert!(data.len() <= DATA, "{} bytes in a buffer of {DATA}", data.len());
        // SAFETY: the buffer's data part holds DATA bytes; the protocol (module docs) keeps every
        // other member from reading it until `publish(c)`.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.buffer(self.me, c).add(8), data.len()) };
    }

    /// Copies member `j`'s data of call `c` into `out` (after waiting for its `publish(c)`).
    pub(crate) fn read(&self, j: u32, c: u64, out: &mut [u8]) {
        assert!(out.len() <= DATA, "{} bytes from a buffer of {DATA}", out.len());
        // SAFETY: as in `write`: published, and not written again before we enter call `c + 1`.
        unsafe { std::ptr::copy_nonoverlapping(self.buffer(j, c).add(8), out.as_mut_ptr(), out.len()) };
    }

    /// Member `j`'s data of call `c` (published), `len` bytes, in place.
    pub(crate) fn data(&self, j: u32, c: u64, len: usize) -> &[u8] {
        assert!(len <= DATA, "{len} bytes from a buffer of {DATA}");
        // SAFETY: as in `read`; the slice lives no longer than the call (the caller's borrow of
        // the area), during which the protocol keeps the bytes unchanged.
        unsafe { std::slice::from_raw_parts(self.buffer(j, c).add(8), len) }
    }

    /// Announces call `c` (its data written), waking the members asleep on us.
    pub(crate) fn publish(&self, c: u64) {
        let word = self.number(self.me, c);
        word.store(c, Release);
        // The store before the load of the sleepers (a waiter counts itself, then looks at the
        // word: one of us sees the other): the sleeper's membarrier orders them, or our fence.
        if self.fenced {
            fence(SeqCst);
        } else {
            compiler_fence(SeqCst);
        }
        if self.sleepers(self.me).load(Relaxed) != 0 {
            futex_wake(word);
        }
    }

    /// Waits until this member's buffer for call `c` is free: every member published
    /// `c − (BUFFERS − 1)`. A member that must wait runs ahead: it then waits until the others
    /// are at most half the buffers behind, so that it does not wait again at its next calls,
    /// each time spinning on the very line the slowest member writes next.
    pub(crate) fn wait_writable(&self, c: u64, m: &mut dyn Meanwhile) -> Result<()> {
        let free = c.saturating_sub(BUFFERS - 1);
        if (0..self.n).all(|j| self.published(j, free)) {
            return Ok(());
        }
        self.wait_all(c.saturating_sub(BUFFERS / 2), m)
    }

    /// Waits until every member published `c`.
    pub(crate) fn wait_all(&self, c: u64, m: &mut dyn Meanwhile) -> Result<()> {
        for j in 0..self.n {
            if j != self.me {
                self.wait(j, c, m)?;
            }
        }
        Ok(())
    }

    /// Waits until member `j` published `c`.
    pub(crate) fn wait(&self, j: u32, c: u64, m: &mut dyn Meanwhile) -> Result<()> {
        if self.published(j, c) {
            return Ok(());
        }
        let start = Instant::now();
        // A marcel user thread yields at once too: its LWP's other user threads may need it.
        let shared_cpu = m.shared_cpu() || marcel::is_user_thread();
        let (spin, yielding) =
            if shared_cpu { (SPIN_SHARED_CPU, YIELD_SHARED_CPU) } else { (SPIN, Duration::ZERO) };
        let mut looked = start;
        loop {
            for _ in 0..64 {
                if self.published(j, c) {
                    return Ok(());
                }
                std::hint::spin_loop();
            }
            let now = Instant::now();
            if now.duration_since(looked) >= LOOK_EVERY {
                m.look()?;
                looked = now;
            }
            let waited = now.duration_since(start);
            if waited >= spin + yielding {
                break;
            }
            if waited >= spin {
                marcel::yield_now();
            }
        }
        loop {
            if self.sleep(j, c) {
                return Ok(());
            }
            m.look()?;
        }
    }

    /// Sleeps until member `j` publishes `c` (`true`) or for [`SLEEP_AT_MOST`] (`false`).
    fn sleep(&self, j: u32, c: u64) -> bool {
        let word = self.number(j, c);
        let sleepers = self.sleepers(j);
        sleepers.fetch_add(1, SeqCst);
        if !self.fenced {
            global_barrier();
        }
        let seen = word.load(SeqCst);
        let done = seen >= c || {
            // The futex compares the word's low half (the word is little-endian): a publish
            // after our load changes it, and wakes us since we are counted.
            let low = seen as u32;
            marcel::blocking(|| futex_wait(word, low, SLEEP_AT_MOST));
            self.published(j, c)
        };
        sleepers.fetch_sub(1, Relaxed);
        done
    }
}

/// The low 32 bits of `word` as a futex address (x86-64 and aarch64 Linux are little-endian).
fn futex_addr(word: &AtomicU64) -> *const u32 {
    const { assert!(cfg!(target_endian = "little")) };
    word.as_ptr().cast_const().cast()
}

/// Sleeps while `word`'s low half is `low`, for at most `timeout` (a shared futex: other
/// processes map the word).
fn futex_wait(word: &AtomicU64, low: u32, timeout: Duration) {
    let ts =
        libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as _ };
    // SAFETY: the address is a live, aligned u32 of our mapping; the timespec is read during the
    // call. Any outcome (woken, timed out, value changed, interrupted) is handled by the caller
    // looking at the word again.
    unsafe { libc::syscall(libc::SYS_futex, futex_addr(word), libc::FUTEX_WAIT, low, &raw const ts) };
}

/// Wakes every process sleeping on `word`.
fn futex_wake(word: &AtomicU64) {
    // SAFETY: the address is a live, aligned u32 of our mapping; FUTEX_WAKE reads nothing else.
    unsafe { libc::syscall(libc::SYS_futex, futex_addr(word), libc::FUTEX_WAKE, i32::MAX) };
}

const MEMBARRIER_CMD_GLOBAL_EXPEDITED: libc::c_int = 1 << 1;
const MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED: libc::c_int = 1 << 2;

/// Whether this process is registered for `membarrier`'s global expedited barriers (asked
/// once): the other members' barriers then reach its publishes.
pub(crate) fn asymmetric_barriers() -> bool {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    *REGISTERED.get_or_init(|| {
        // SAFETY: membarrier takes two integers and touches no memory of ours.
        unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0) == 0 }
    })
}

/// A memory barrier on every CPU running a registered process (ours included).
fn global_barrier() {
    // SAFETY: as in `asymmetric_barriers`. It cannot fail once every member registered
    // (checked at setup); were it to, the sleep is bounded by its timeout anyway.
    unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0) };
}
