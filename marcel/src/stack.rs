//! User-thread stacks: memory regions, guard pages, pooling and stack-overflow detection.
//!
//! # What this module owns
//!
//! * The memory of every user-thread stack. Stacks are carved from large *regions*: one
//!   `mmap(PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK)` reserves
//!   [`STACKS_PER_REGION`] stacks at once (fewer for very large stacks), then one
//!   `mprotect(PROT_READ | PROT_WRITE)` per stack opens its usable part. Each stack is laid out as
//!   `[guard | usable]` (stacks grow down, so the guard sits right below the usable bytes and
//!   above the previous stack's usable bytes). Guards stay `PROT_NONE` and never cost memory; the
//!   usable part costs only the pages a user thread actually touched.
//! * Pooling ([`StackPool`]): a fresh mmap'd stack costs microseconds (syscalls plus page faults),
//!   a reused one a few nanoseconds, so stacks are never returned to the OS while their pool lives:
//!   [`StackPool::put`] pushes them on a free list and a pool's regions are unmapped only when the
//!   pool is dropped with every stack back (if stacks are still out when the pool is dropped the
//!   regions are leaked on purpose: a leaked coroutine may still point into them). Pages a stack
//!   touched stay resident while it sits in the pool, so a pool's memory is the high-water mark of
//!   its users' stack depth.
//! * Valgrind registration: every stack (guard + usable, exactly the range corosensei's
//!   `DefaultStack` registers) is announced with a Valgrind client request when it is carved and
//!   withdrawn when its region is unmapped, so `valgrind --tool=callgrind` follows stack switches.
//! * Overflow detection, process wide: [`install_overflow_handler`] installs `SIGSEGV`/`SIGBUS`
//!   handlers that recognise a fault inside the guard of *any* stack carved by *any* pool (through
//!   a lock-free registry of regions), print
//!   `marcel: stack overflow in user thread 42 "worker" (fault at 0x..., stack 128 KiB, guard 4 KiB); ...`
//!   on stderr and abort the process with `SIGABRT`. Every other fault is passed on to the handler
//!   that was installed before (Rust's std installs one that reports overflows of kernel-thread
//!   stacks) or to the default action. [`ensure_altstack`] gives a kernel thread the alternate
//!   signal stack the handler runs on (a thread whose stack pointer sits in a guard page cannot
//!   run a handler on that stack). [`set_thread_describer`] lets the scheduler name the faulting
//!   user thread.
//!
//! # What this module must not touch
//!
//! Scheduling and thread state: it neither knows which user thread runs where (the describer set
//! by the scheduler answers that) nor creates, switches or frees coroutines. A stack handed out by
//! [`StackPool::get`] belongs to its holder until it is given back with [`StackPool::put`].
//!
//! # Live-stack limit
//!
//! Linux keeps one VMA per run of pages with the same protection, so every guarded stack costs
//! two VMAs (its guard and its usable part) whether or not regions are shared, and a process may
//! hold at most `vm.max_map_count` VMAs (65530 by default). The process can therefore carve about
//! `vm.max_map_count / 2` stacks (≈ 32 765 by default, minus what the rest of the process maps:
//! heap arenas, libraries, kernel-thread stacks). Carved stacks count whether they are in use or
//! sitting in a pool. At the limit `mmap`/`mprotect` fail with `ENOMEM`, [`StackPool::get`]
//! returns a [`StackError`] whose message names the limit and the fix
//! (`sysctl vm.max_map_count=...`, or fewer simultaneously started user threads); nothing is
//! corrupted and stacks already handed out keep working. A region that could only be partly
//! opened keeps the stacks it could open.
//!
//! # Guard size
//!
//! A guard catches an overflow only if the overflowing code touches it. Rust code probes every
//! page of large frames, so one page is enough for it; C code with frames larger than the guard
//! (big local arrays, `alloca`) can jump over it into the stack below. Use a larger guard for such
//! code.

use std::cell::Cell;
use std::ffi::c_void;
use std::fmt;
use std::io;
use std::ops::Range;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, Once, PoisonError};

use corosensei::stack::valgrind::ValgrindStackRegistration;
use corosensei::stack::{MIN_STACK_SIZE, STACK_ALIGNMENT, Stack, StackPointer};

/// Largest number of stacks carved from one region (one `mmap`).
pub const STACKS_PER_REGION: usize = 32;

/// Regions are kept below this many bytes of address space (for very large stacks a region holds
/// fewer than [`STACKS_PER_REGION`] stacks, at least one).
const MAX_REGION_BYTES: usize = 1 << 30;

/// Capacity of the process-wide registry of regions the overflow handler searches. With
/// [`STACKS_PER_REGION`] stacks per region this covers two million stacks, far beyond what
/// `vm.max_map_count` allows by default. Slots of unmapped regions are reused. If the registry is
/// ever full, new regions still get their guard pages (an overflow still kills the process) but an
/// overflow in them is reported as a plain `SIGSEGV` instead of the marcel message.
const REGISTRY_CAPACITY: usize = 65536;

fn page_size() -> usize {
    static PAGE_SIZE: AtomicUsize = AtomicUsize::new(0);
    let cached = PAGE_SIZE.load(Ordering::Relaxed);
    if cached != 0 {
        return cached;
    }
    // SAFETY: sysconf has no preconditions.
    let ps = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let ps = if ps > 0 && (ps as usize).is_power_of_two() { ps as usize } else { 4096 };
    PAGE_SIZE.store(ps, Ordering::Relaxed);
    ps
}

fn round_up_to_page(n: usize) -> usize {
    let ps = page_size();
    n.checked_add(ps - 1).expect("stack size overflows usize") & !(ps - 1)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while these locks are held except an allocation failure, which aborts; the
    // protected data is consistent at every unlock, so a poisoned lock is still usable.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

// ---------------------------------------------------------------------------------------------
// Stacks and pools
// ---------------------------------------------------------------------------------------------

/// A user-thread stack: `size` usable bytes above a `PROT_NONE` guard.
///
/// Obtained from [`StackPool::get`] and given back with [`StackPool::put`] (after the coroutine
/// that ran on it finished: `Coroutine::into_stack`). Dropping it instead leaks it: the memory
/// stays mapped and counted as live, and its pool will leak its regions when dropped.
#[derive(Debug)]
pub struct PooledStack {
    /// Highest address of the usable part (the initial stack pointer).
    base: usize,
    /// Usable bytes.
    size: usize,
    /// Guard bytes, right below the usable part.
    guard: usize,
    /// Id of the pool the stack belongs to.
    pool: usize,
}

impl PooledStack {
    /// The usable bytes of the stack (`usable().end` is the stack base, where it starts).
    pub fn usable(&self) -> Range<usize> {
        self.base - self.size..self.base
    }

    /// The `PROT_NONE` guard right below the usable bytes.
    pub fn guard(&self) -> Range<usize> {
        let usable_start = self.base - self.size;
        usable_start - self.guard..usable_start
    }
}

// SAFETY: a PooledStack exclusively owns `size` bytes of readable and writable memory (at least
// MIN_STACK_SIZE, see StackPool::new) right above `guard` (at least one page) bytes of PROT_NONE
// guard, both mapped for as long as the PooledStack exists (regions are unmapped only when their
// pool is dropped with every stack back, and a stack that is out is not back). `base` and
// `base - size - guard` are page aligned, hence aligned to STACK_ALIGNMENT, and `limit()`
// includes the guard, as the trait requires.
unsafe impl Stack for PooledStack {
    #[inline]
    fn base(&self) -> StackPointer {
        StackPointer::new(self.base).expect("stack base is never null")
    }

    #[inline]
    fn limit(&self) -> StackPointer {
        StackPointer::new(self.base - self.size - self.guard).expect("stack limit is never null")
    }
}

/// One mapping holding `valgrind.len()` opened stacks (and possibly a never-opened tail).
struct Region {
    start: usize,
    map_len: usize,
    /// Slot in the overflow registry, if one was free.
    slot: Option<usize>,
    /// One registration per stack, withdrawn when the region is unmapped.
    valgrind: Vec<ValgrindStackRegistration>,
}

/// Thread-safe pool of [`PooledStack`]s of one size.
///
/// Stacks are carved [`STACKS_PER_REGION`] at a time from one `mmap` each; see the module
/// documentation. Regions are never returned to the OS while the pool lives; when the pool is
/// dropped they are unmapped if every stack came back, and leaked otherwise.
pub struct StackPool {
    id: usize,
    stack_size: usize,
    guard_size: usize,
    stacks_per_region: usize,
    /// Stacks ready for reuse, most recently returned last.
    free: Mutex<Vec<PooledStack>>,
    /// Every region mapped by this pool. Also serializes carving, so that threads that find the
    /// free list empty at the same time carve one region, not one each. Lock order: `regions`
    /// before `free`.
    regions: Mutex<Vec<Region>>,
    live: AtomicUsize,
    mapped: AtomicUsize,
}

impl fmt::Debug for StackPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StackPool")
            .field("stack_size", &self.stack_size)
            .field("guard_size", &self.guard_size)
            .field("live", &self.live())
            .field("mapped", &self.mapped())
            .finish_non_exhaustive()
    }
}

impl StackPool {
    /// A pool of stacks with `stack_size` usable bytes above `guard_size` bytes of guard. Both
    /// are rounded up to whole pages; the stack size is at least corosensei's `MIN_STACK_SIZE`
    /// and the guard at least one page. Maps nothing until the first [`get`](Self::get).
    ///
    /// # Panics
    ///
    /// If a stack plus its guard does not fit in a quarter of the address space.
    pub fn new(stack_size: usize, guard_size: usize) -> StackPool {
        static NEXT_ID: AtomicUsize = AtomicUsize::new(1);
        let stack_size = round_up_to_page(stack_size.max(MIN_STACK_SIZE));
        let guard_size = round_up_to_page(guard_size.max(1));
        let stride = stack_size.checked_add(guard_size).expect("stack size overflows usize");
        assert!(stride <= usize::MAX / 4, "stack size {stack_size} + guard {guard_size} is too large");
        debug_assert!(stride & (STACK_ALIGNMENT - 1) == 0);
        StackPool {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            stack_size,
            guard_size,
            stacks_per_region: (MAX_REGION_BYTES / stride).clamp(1, STACKS_PER_REGION),
            free: Mutex::new(Vec::new()),
            regions: Mutex::new(Vec::new()),
            live: AtomicUsize::new(0),
            mapped: AtomicUsize::new(0),
        }
    }

    /// Usable bytes per stack (after rounding).
    pub fn stack_size(&self) -> usize {
        self.stack_size
    }

    /// Guard bytes per stack (after rounding).
    pub fn guard_size(&self) -> usize {
        self.guard_size
    }

    /// Stacks currently handed out (got and not put back).
    pub fn live(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    /// Stacks carved so far (live or free; never decreases while the pool lives).
    pub fn mapped(&self) -> usize {
        self.mapped.load(Ordering::Relaxed)
    }

    /// A stack: the most recently returned free one, else one from a newly carved region.
    ///
    /// # Errors
    ///
    /// When no free stack is left and no region can be mapped (usually the `vm.max_map_count`
    /// limit, see the module documentation).
    pub fn get(&self) -> Result<PooledStack, StackError> {
        if let Some(s) = lock(&self.free).pop() {
            self.live.fetch_add(1, Ordering::Relaxed);
            return Ok(s);
        }
        self.get_slow()
    }

    #[cold]
    fn get_slow(&self) -> Result<PooledStack, StackError> {
        let mut regions = lock(&self.regions);
        // Another thread may have carved a region while we waited for the lock.
        if let Some(s) = lock(&self.free).pop() {
            self.live.fetch_add(1, Ordering::Relaxed);
            return Ok(s);
        }
        let mut fresh = Vec::with_capacity(self.stacks_per_region);
        if let Err(e) = self.carve(&mut regions, &mut fresh) {
            return Err(self.error(e));
        }
        let s = fresh.pop().expect("carve returns at least one stack");
        lock(&self.free).append(&mut fresh);
        self.live.fetch_add(1, Ordering::Relaxed);
        Ok(s)
    }

    /// Gives a stack back for reuse.
    ///
    /// # Panics
    ///
    /// If the stack comes from another pool.
    pub fn put(&self, s: PooledStack) {
        assert_eq!(s.pool, self.id, "stack given back to a pool it does not come from");
        lock(&self.free).push(s);
        self.live.fetch_sub(1, Ordering::Relaxed);
    }

    /// Appends `n` stacks to `out` (for per-CPU caches), taking free ones first.
    ///
    /// # Errors
    ///
    /// As [`get`](Self::get). All or nothing: on error `out` is left as it was.
    pub fn get_batch(&self, n: usize, out: &mut Vec<PooledStack>) -> Result<(), StackError> {
        let before = out.len();
        out.reserve(n);
        Self::take_free(&mut lock(&self.free), n, out);
        while out.len() - before < n {
            let mut regions = lock(&self.regions);
            Self::take_free(&mut lock(&self.free), n - (out.len() - before), out);
            let missing = n - (out.len() - before);
            if missing == 0 {
                break;
            }
            let mut fresh = Vec::with_capacity(self.stacks_per_region);
            if let Err(e) = self.carve(&mut regions, &mut fresh) {
                lock(&self.free).extend(out.drain(before..));
                return Err(self.error(e));
            }
            let keep = fresh.len().saturating_sub(missing);
            out.extend(fresh.drain(keep..));
            lock(&self.free).append(&mut fresh);
        }
        self.live.fetch_add(n, Ordering::Relaxed);
        Ok(())
    }

    /// Gives back every stack in `stacks`, leaving it empty (its capacity is kept).
    ///
    /// # Panics
    ///
    /// If a stack comes from another pool (then nothing is given back).
    pub fn put_batch(&self, stacks: &mut Vec<PooledStack>) {
        for s in stacks.iter() {
            assert_eq!(s.pool, self.id, "stack given back to a pool it does not come from");
        }
        let n = stacks.len();
        lock(&self.free).append(stacks);
        self.live.fetch_sub(n, Ordering::Relaxed);
    }

    fn take_free(free: &mut Vec<PooledStack>, n: usize, out: &mut Vec<PooledStack>) {
        let take = n.min(free.len());
        out.extend(free.drain(free.len() - take..));
    }

    /// Maps one region, opens as many of its stacks as possible (at least one, else an error)
    /// and pushes them on `out`, lowest address last.
    fn carve(&self, regions: &mut Vec<Region>, out: &mut Vec<PooledStack>) -> io::Result<()> {
        let stride = self.stack_size + self.guard_size;
        let map_len = stride * self.stacks_per_region;
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK;
        // SAFETY: an anonymous PROT_NONE mapping at an address the kernel chooses cannot alias
        // any existing memory.
        let p = unsafe { libc::mmap(ptr::null_mut(), map_len, libc::PROT_NONE, flags, -1, 0) };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let start = p as usize;
        let mut opened = 0;
        let mut failure = None;
        for i in 0..self.stacks_per_region {
            let usable = start + i * stride + self.guard_size;
            // SAFETY: [usable, usable + stack_size) lies inside the mapping created above, which
            // nothing else refers to yet.
            let rc = unsafe {
                libc::mprotect(usable as *mut c_void, self.stack_size, libc::PROT_READ | libc::PROT_WRITE)
            };
            if rc != 0 {
                failure = Some(io::Error::last_os_error());
                break;
            }
            opened += 1;
        }
        if opened == 0 {
            // SAFETY: the mapping was created above and no stack in it was handed out.
            unsafe { libc::munmap(p, map_len) };
            return Err(failure.unwrap_or_else(|| io::Error::from_raw_os_error(libc::ENOMEM)));
        }
        let valgrind = (0..opened)
            .map(|i| ValgrindStackRegistration::new((start + i * stride) as *mut u8, stride))
            .collect();
        let slot = registry_add(start, opened * stride, stride, self.guard_size);
        regions.push(Region { start, map_len, slot, valgrind });
        out.extend((0..opened).rev().map(|i| PooledStack {
            base: start + (i + 1) * stride,
            size: self.stack_size,
            guard: self.guard_size,
            pool: self.id,
        }));
        self.mapped.fetch_add(opened, Ordering::Relaxed);
        Ok(())
    }

    #[cold]
    fn error(&self, error: io::Error) -> StackError {
        let max_map_count =
            std::fs::read_to_string("/proc/sys/vm/max_map_count").ok().and_then(|s| s.trim().parse().ok());
        StackError { error, live: self.live(), mapped: self.mapped(), max_map_count }
    }
}

impl Drop for StackPool {
    fn drop(&mut self) {
        let regions = std::mem::take(self.regions.get_mut().unwrap_or_else(PoisonError::into_inner));
        if *self.live.get_mut() != 0 {
            // Stacks are still out: a leaked coroutine may still run on (or point into) them.
            // Keep everything mapped, registered with Valgrind and known to the overflow handler.
            std::mem::forget(regions);
            return;
        }
        for r in regions {
            if let Some(slot) = r.slot {
                registry_remove(slot);
            }
            drop(r.valgrind);
            // SAFETY: every stack of this region is back in the free list (live == 0), which is
            // dropped with the pool, so nothing refers to the region any more.
            unsafe { libc::munmap(r.start as *mut c_void, r.map_len) };
        }
    }
}

/// Failure to map new stacks (usually the `vm.max_map_count` limit: see the module
/// documentation). Its message says what to do.
#[derive(Debug)]
pub struct StackError {
    error: io::Error,
    live: usize,
    mapped: usize,
    max_map_count: Option<usize>,
}

impl StackError {
    /// The error `mmap`/`mprotect` returned.
    pub fn os_error(&self) -> &io::Error {
        &self.error
    }
}

impl fmt::Display for StackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot map user-thread stacks: {}; {} stacks live ({} carved by this pool)",
            self.error, self.live, self.mapped
        )?;
        if self.error.raw_os_error() == Some(libc::ENOMEM) {
            match self.max_map_count {
                Some(m) => write!(
                    f,
                    ", vm.max_map_count = {m} allows about {} guarded stacks: raise it \
                     (sysctl vm.max_map_count) or reduce the number of simultaneously started \
                     user threads",
                    m / 2
                )?,
                None => write!(
                    f,
                    ", each guarded stack costs two memory mappings and vm.max_map_count limits \
                     them: raise it (sysctl vm.max_map_count) or reduce the number of \
                     simultaneously started user threads"
                )?,
            }
        }
        Ok(())
    }
}

impl std::error::Error for StackError {}

impl From<StackError> for io::Error {
    fn from(e: StackError) -> io::Error {
        io::Error::new(e.error.kind(), e)
    }
}

// ---------------------------------------------------------------------------------------------
// Region registry (read by the signal handler)
// ---------------------------------------------------------------------------------------------

/// One region: stacks of `stride` bytes, each starting with `guard` bytes of guard, covering
/// `[start, start + len)`. `len == 0` means the slot holds nothing.
struct RegistryEntry {
    claimed: AtomicBool,
    start: AtomicUsize,
    len: AtomicUsize,
    stride: AtomicUsize,
    guard: AtomicUsize,
}

impl RegistryEntry {
    const fn new() -> RegistryEntry {
        RegistryEntry {
            claimed: AtomicBool::new(false),
            start: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
            stride: AtomicUsize::new(0),
            guard: AtomicUsize::new(0),
        }
    }
}

/// Zero-initialised (`.bss`): costs memory only for the slots in use.
static REGISTRY: [RegistryEntry; REGISTRY_CAPACITY] = [const { RegistryEntry::new() }; REGISTRY_CAPACITY];
/// Number of slots ever handed out by `fetch_add` (may exceed the capacity).
static REGISTRY_HIGH: AtomicUsize = AtomicUsize::new(0);

fn registry_add(start: usize, len: usize, stride: usize, guard: usize) -> Option<usize> {
    let fresh = REGISTRY_HIGH.fetch_add(1, Ordering::Relaxed);
    let claim = |i: usize| {
        REGISTRY[i].claimed.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
    };
    // A fresh slot is normally ours alone, but once the registry has been full, slot reuse scans
    // may have taken it: claim it like any other.
    let slot = if fresh < REGISTRY_CAPACITY && claim(fresh) {
        fresh
    } else {
        (0..REGISTRY_CAPACITY).find(|&i| claim(i))?
    };
    let e = &REGISTRY[slot];
    e.start.store(start, Ordering::Relaxed);
    e.stride.store(stride, Ordering::Relaxed);
    e.guard.store(guard, Ordering::Relaxed);
    e.len.store(len, Ordering::Release);
    Some(slot)
}

fn registry_remove(slot: usize) {
    let e = &REGISTRY[slot];
    e.len.store(0, Ordering::Release);
    e.claimed.store(false, Ordering::Release);
}

/// If `addr` lies in the guard of a registered stack, returns `(stack size, guard size)`.
/// Async-signal-safe: atomic loads only, no panics.
fn registry_lookup(addr: usize) -> Option<(usize, usize)> {
    let high = REGISTRY_HIGH.load(Ordering::Acquire).min(REGISTRY_CAPACITY);
    for e in REGISTRY.iter().take(high) {
        let len = e.len.load(Ordering::Acquire);
        if len == 0 {
            continue;
        }
        let start = e.start.load(Ordering::Relaxed);
        let offset = addr.wrapping_sub(start);
        if addr < start || offset >= len {
            continue;
        }
        let stride = e.stride.load(Ordering::Relaxed);
        let guard = e.guard.load(Ordering::Relaxed);
        if stride > guard && offset.checked_rem(stride).is_some_and(|o| o < guard) {
            return Some((stride - guard, guard));
        }
        return None;
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Overflow detection
// ---------------------------------------------------------------------------------------------

/// The action that was installed for a signal before ours (read by the handler, so atomics).
struct SavedAction {
    ready: AtomicBool,
    handler: AtomicUsize,
    flags: AtomicUsize,
}

impl SavedAction {
    const fn new() -> SavedAction {
        SavedAction {
            ready: AtomicBool::new(false),
            handler: AtomicUsize::new(0),
            flags: AtomicUsize::new(0),
        }
    }
}

static PREV_SEGV: SavedAction = SavedAction::new();
static PREV_BUS: SavedAction = SavedAction::new();
static DESCRIBER: AtomicPtr<()> = AtomicPtr::new(ptr::null_mut());

type Describer = fn(buf: &mut [u8]) -> usize;
type SigactionFn = extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut c_void);
type SighandlerFn = extern "C" fn(libc::c_int);

/// Installs (once per process; idempotent and thread-safe) the `SIGSEGV` and `SIGBUS` handlers
/// that report user-thread stack overflows, and gives the calling thread an alternate signal
/// stack ([`ensure_altstack`]).
///
/// The handlers use `SA_SIGINFO | SA_ONSTACK` (not `SA_NODEFER`: a fault inside the handler
/// itself then kills the process at once instead of recursing). The actions installed before
/// (Rust's std installs one that reports overflows of kernel-thread stacks) are saved and every
/// fault outside a user-thread guard page is passed on to them: an `SA_SIGINFO` handler is called
/// with the same arguments, a plain handler with the signal number, and `SIG_DFL`/`SIG_IGN` make
/// the handler restore `SIG_DFL` and return, so that the faulting instruction faults again and
/// the process dies of the signal as usual. The previous action's `sa_mask` and `SA_RESETHAND`
/// are not emulated.
pub fn install_overflow_handler() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        for (sig, saved) in [(libc::SIGSEGV, &PREV_SEGV), (libc::SIGBUS, &PREV_BUS)] {
            // SAFETY: sigaction is plain old data; all-zero is a valid (empty) value.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: a null new action only queries the current one into `old`.
            if unsafe { libc::sigaction(sig, ptr::null(), &mut old) } != 0 {
                continue;
            }
            // Saved before ours is installed, so the handler never runs without it.
            saved.handler.store(old.sa_sigaction, Ordering::Relaxed);
            saved.flags.store(old.sa_flags as usize, Ordering::Relaxed);
            saved.ready.store(true, Ordering::Release);
            // SAFETY: as above.
            let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
            new.sa_sigaction = overflow_handler as SigactionFn as libc::sighandler_t;
            new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            // SAFETY: `new.sa_mask` is a valid sigset_t to initialise.
            unsafe { libc::sigemptyset(&mut new.sa_mask) };
            // SAFETY: `new` is fully initialised and `overflow_handler` has the SA_SIGINFO
            // signature and is async-signal-safe.
            unsafe { libc::sigaction(sig, &new, ptr::null_mut()) };
        }
    });
    ensure_altstack();
}

/// Registers the function the overflow handler calls to describe the user thread running on the
/// faulting kernel thread (e.g. `user thread 42 "worker"`): it writes into `buf` and returns the
/// number of bytes written. Called from a signal handler, so it must be async-signal-safe: no
/// allocation, no locks, no panics. Meant to be called once; a later call replaces the function.
pub fn set_thread_describer(f: fn(buf: &mut [u8]) -> usize) {
    DESCRIBER.store(f as *mut (), Ordering::Release);
}

/// Minimum size of an existing alternate signal stack that [`ensure_altstack`] keeps: room for
/// the kernel's signal frame (`AT_MINSIGSTKSZ`) plus 4 KiB for the handler (which needs about
/// 1 KiB), and at least `SIGSTKSZ`, the size Rust's std allocates on common CPUs.
fn altstack_keep_size() -> usize {
    // SAFETY: getauxval has no preconditions; it returns 0 for unknown entries.
    let min = unsafe { libc::getauxval(libc::AT_MINSIGSTKSZ) } as usize;
    libc::SIGSTKSZ.max(min + 4096)
}

/// Size of the alternate signal stacks [`ensure_altstack`] allocates.
fn altstack_alloc_size() -> usize {
    // SAFETY: as above.
    let min = unsafe { libc::getauxval(libc::AT_MINSIGSTKSZ) } as usize;
    round_up_to_page(libc::SIGSTKSZ.max(min) + 64 * 1024)
}

/// An alternate signal stack allocated by [`ensure_altstack`]: `[guard page | stack]`.
struct OwnAltStack {
    map: usize,
    map_len: usize,
    stack: usize,
}

impl Drop for OwnAltStack {
    fn drop(&mut self) {
        // SAFETY: stack_t is plain old data; all-zero is valid.
        let mut cur: libc::stack_t = unsafe { std::mem::zeroed() };
        // SAFETY: a null new stack only queries the current one.
        if unsafe { libc::sigaltstack(ptr::null(), &mut cur) } != 0 {
            return; // cannot tell whether it is still in use: leak it rather than risk that
        }
        if cur.ss_flags & libc::SS_DISABLE == 0 && cur.ss_sp as usize == self.stack {
            let disable = libc::stack_t { ss_sp: ptr::null_mut(), ss_flags: libc::SS_DISABLE, ss_size: 0 };
            // SAFETY: disables the calling thread's alternate signal stack, which is this one
            // (the value is thread-local) and not in use (the thread is running this destructor,
            // not a signal handler on it).
            if unsafe { libc::sigaltstack(&disable, ptr::null_mut()) } != 0 {
                return; // still installed: leak it
            }
        }
        // SAFETY: the mapping was created by ensure_altstack and is no longer the thread's
        // alternate signal stack (checked above), so nothing refers to it.
        unsafe { libc::munmap(self.map as *mut c_void, self.map_len) };
    }
}

thread_local! {
    static OWN_ALTSTACK: Cell<Option<OwnAltStack>> = const { Cell::new(None) };
}

/// Ensures the calling kernel thread has an alternate signal stack large enough for the overflow
/// handler (cheap: one `sigaltstack` query when it has one).
///
/// An existing one is kept if it holds at least `max(SIGSTKSZ, AT_MINSIGSTKSZ + 4 KiB)` bytes,
/// which the ones Rust's std gives its threads do on common CPUs (std sets one up for the main
/// thread and every `std::thread::spawn`ed thread when it installed its own overflow handler,
/// which it does in normal programs; std's is only `max(SIGSTKSZ, AT_MINSIGSTKSZ)`, so it is
/// replaced on CPUs whose signal frame nearly fills `SIGSTKSZ`, e.g. with AMX). Otherwise this maps a new one (with a
/// guard page below it) and frees it in a thread-local destructor when the thread exits; if the
/// thread is already running its thread-local destructors, the new stack is leaked instead.
/// Failure (no memory) is silent: an overflow then still kills the process, with a plain
/// `SIGSEGV` instead of the marcel message.
pub fn ensure_altstack() {
    // SAFETY: stack_t is plain old data; all-zero is valid.
    let mut cur: libc::stack_t = unsafe { std::mem::zeroed() };
    // SAFETY: a null new stack only queries the current one.
    if unsafe { libc::sigaltstack(ptr::null(), &mut cur) } != 0 {
        return;
    }
    if cur.ss_flags & libc::SS_ONSTACK != 0 {
        return; // running on it: it cannot be changed now
    }
    if cur.ss_flags & libc::SS_DISABLE == 0 && cur.ss_size >= altstack_keep_size() {
        return;
    }
    let page = page_size();
    let size = altstack_alloc_size();
    let map_len = size + page;
    // SAFETY: a fresh anonymous mapping at an address the kernel chooses aliases nothing.
    let map = unsafe {
        libc::mmap(
            ptr::null_mut(),
            map_len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if map == libc::MAP_FAILED {
        return;
    }
    let own = OwnAltStack { map: map as usize, map_len, stack: map as usize + page };
    // SAFETY: the first page lies inside the mapping created above.
    if unsafe { libc::mprotect(map, page, libc::PROT_NONE) } != 0 {
        return; // `own` unmaps it
    }
    let new = libc::stack_t { ss_sp: own.stack as *mut c_void, ss_flags: 0, ss_size: size };
    // SAFETY: `new` describes `size` writable bytes that stay mapped until `own` is dropped, which
    // disables the alternate stack first.
    if unsafe { libc::sigaltstack(&new, ptr::null_mut()) } != 0 {
        return; // `own` unmaps it
    }
    let mut own = Some(own);
    // Dropping a previous OwnAltStack of this thread (replaced since by a too small one) unmaps
    // it: it is no longer the thread's alternate stack.
    if OWN_ALTSTACK.try_with(|slot| slot.set(own.take())).is_err() {
        // Thread-local storage is being torn down: keep the stack for the rest of the thread's
        // life (leaked).
        std::mem::forget(own);
    }
}

/// Async-signal-safe message buffer: writes past the end are dropped, nothing panics.
struct MsgBuf {
    buf: [u8; 512],
    len: usize,
}

impl MsgBuf {
    fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            match self.buf.get_mut(self.len) {
                Some(slot) => {
                    *slot = b;
                    self.len += 1;
                }
                None => return,
            }
        }
    }

    fn push_dec(&mut self, mut n: usize) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            if let Some(d) = digits.get_mut(i) {
                *d = b'0' + (n % 10) as u8;
            }
            n /= 10;
            if n == 0 || i == 0 {
                break;
            }
        }
        self.push(digits.get(i..).unwrap_or(&[]));
    }

    fn push_hex(&mut self, n: usize) {
        self.push(b"0x");
        let mut started = false;
        for shift in (0..usize::BITS).step_by(4).rev() {
            let nibble = (n >> shift) & 0xf;
            if nibble != 0 || started || shift == 0 {
                started = true;
                self.push(b"0123456789abcdef".get(nibble..=nibble).unwrap_or(b"?"));
            }
        }
    }

    fn push_size(&mut self, n: usize) {
        if n != 0 && n & ((1 << 20) - 1) == 0 {
            self.push_dec(n >> 20);
            self.push(b" MiB");
        } else if n != 0 && n & 1023 == 0 {
            self.push_dec(n >> 10);
            self.push(b" KiB");
        } else {
            self.push_dec(n);
            self.push(b" bytes");
        }
    }

    fn bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }
}

/// Writes all of `bytes` to stderr with `write(2)` (async-signal-safe).
fn write_stderr(mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is a valid readable buffer of `bytes.len()` bytes.
        let n = unsafe { libc::write(libc::STDERR_FILENO, bytes.as_ptr().cast(), bytes.len()) };
        if n < 0 {
            // SAFETY: errno is thread-local and always readable.
            if unsafe { *libc::__errno_location() } == libc::EINTR {
                continue;
            }
            return;
        }
        if n == 0 {
            return;
        }
        bytes = bytes.get(n as usize..).unwrap_or(&[]);
    }
}

/// Prints the overflow message and kills the process with SIGABRT.
fn report_overflow(addr: usize, stack_size: usize, guard_size: usize) -> ! {
    let mut msg = MsgBuf { buf: [0; 512], len: 0 };
    msg.push(b"marcel: stack overflow in ");
    let mut desc = [0u8; 256];
    let mut desc_len = 0;
    let f = DESCRIBER.load(Ordering::Acquire);
    if !f.is_null() {
        // SAFETY: DESCRIBER only ever holds null or a `Describer` stored by set_thread_describer.
        let f: Describer = unsafe { std::mem::transmute::<*mut (), Describer>(f) };
        desc_len = f(&mut desc).min(desc.len());
    }
    match desc.get(..desc_len) {
        Some(d) if !d.is_empty() => msg.push(d),
        _ => msg.push(b"a user thread"),
    }
    msg.push(b" (fault at ");
    msg.push_hex(addr);
    msg.push(b", stack ");
    msg.push_size(stack_size);
    msg.push(b", guard ");
    msg.push_size(guard_size);
    msg.push(b"); raise MARCEL_STACK_SIZE or use Builder::stack_size\n");
    write_stderr(msg.bytes());
    set_default_action(libc::SIGABRT);
    // SAFETY: abort is async-signal-safe; SIGABRT now has its default action (terminate).
    unsafe { libc::abort() }
}

fn set_default_action(sig: libc::c_int) {
    // SAFETY: sigaction is plain old data; all-zero is SIG_DFL with no flags and an empty mask.
    let act: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: `act` is a valid action; sigaction is async-signal-safe.
    unsafe { libc::sigaction(sig, &act, ptr::null_mut()) };
}

extern "C" fn overflow_handler(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    // SAFETY: errno is thread-local and always readable.
    let saved_errno = unsafe { *libc::__errno_location() };
    if !info.is_null() {
        // SAFETY: with SA_SIGINFO the kernel passes a valid siginfo_t.
        let code = unsafe { (*info).si_code };
        // Only kernel-generated faults (si_code > 0) carry a fault address.
        if code > 0 {
            // SAFETY: as above; for SIGSEGV/SIGBUS si_addr is the faulting address.
            let addr = unsafe { (*info).si_addr() } as usize;
            if let Some((stack_size, guard_size)) = registry_lookup(addr) {
                report_overflow(addr, stack_size, guard_size);
            }
        }
    }
    let saved = match sig {
        libc::SIGSEGV => &PREV_SEGV,
        libc::SIGBUS => &PREV_BUS,
        _ => {
            set_default_action(sig);
            return;
        }
    };
    let (handler, flags) = if saved.ready.load(Ordering::Acquire) {
        (saved.handler.load(Ordering::Relaxed), saved.flags.load(Ordering::Relaxed) as libc::c_int)
    } else {
        (libc::SIG_DFL, 0)
    };
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        // Returning re-executes the faulting instruction, which now gets the default action.
        set_default_action(sig);
    } else if flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the previous action had SA_SIGINFO, so its handler has this signature; it gets
        // the very arguments the kernel gave us.
        let prev = unsafe { std::mem::transmute::<libc::sighandler_t, SigactionFn>(handler) };
        prev(sig, info, ctx);
    } else {
        // SAFETY: without SA_SIGINFO the previous handler is a plain `void (*)(int)`.
        let prev = unsafe { std::mem::transmute::<libc::sighandler_t, SighandlerFn>(handler) };
        prev(sig);
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = saved_errno };
}

#[cfg(test)]
mod tests {
    use super::*;
    use corosensei::{Coroutine, CoroutineResult, Yielder};
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Output};

    /// Selects what a re-executed test binary does (see `run_child`).
    const CHILD_ENV: &str = "MARCEL_STACK_TEST_CHILD";
    const DESCRIPTION: &[u8] = b"user thread 42 \"worker\"";

    fn child_mode() -> Option<String> {
        std::env::var(CHILD_ENV).ok()
    }

    /// Re-executes this test binary running only `tests::<test>`, with `CHILD_ENV=mode`.
    fn run_child(test: &str, mode: &str) -> Output {
        let module = module_path!();
        // libtest names tests by their path without the crate name.
        let path = module.split_once("::").map_or(module, |(_, rest)| rest);
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", &format!("{path}::{test}"), "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, mode)
            .output()
            .unwrap()
    }

    fn describe(buf: &mut [u8]) -> usize {
        let n = DESCRIPTION.len().min(buf.len());
        buf[..n].copy_from_slice(&DESCRIPTION[..n]);
        n
    }

    fn recurse(depth: usize) -> usize {
        let mut frame = [0u8; 1024];
        frame[depth % 1024] = depth as u8;
        std::hint::black_box(&mut frame);
        if std::hint::black_box(depth) == usize::MAX {
            return 0;
        }
        recurse(depth + 1) + frame[(depth + 1) % 1024] as usize
    }

    fn overflow_in_coroutine() -> ! {
        let pool = StackPool::new(64 * 1024, 4096);
        let stack = pool.get().unwrap();
        let mut co = Coroutine::with_stack(stack, |_: &Yielder<(), ()>, ()| recurse(0));
        co.resume(());
        unreachable!("the recursion returned");
    }

    fn current_altstack() -> libc::stack_t {
        // SAFETY: stack_t is plain old data.
        let mut cur: libc::stack_t = unsafe { std::mem::zeroed() };
        // SAFETY: query only.
        assert_eq!(unsafe { libc::sigaltstack(ptr::null(), &mut cur) }, 0);
        cur
    }

    fn disable_altstack() {
        let disable = libc::stack_t { ss_sp: ptr::null_mut(), ss_flags: libc::SS_DISABLE, ss_size: 0 };
        // SAFETY: disables the calling thread's alternate stack; no handler runs on it now.
        assert_eq!(unsafe { libc::sigaltstack(&disable, ptr::null_mut()) }, 0);
        assert_ne!(current_altstack().ss_flags & libc::SS_DISABLE, 0);
    }

    fn text(b: &[u8]) -> String {
        String::from_utf8_lossy(b).into_owned()
    }

    #[test]
    fn send_sync() {
        fn send<T: Send>() {}
        fn sync<T: Send + Sync>() {}
        send::<PooledStack>();
        sync::<StackPool>();
        sync::<StackError>();
    }

    #[test]
    fn sizes_are_rounded_and_layout_is_aligned() {
        let page = page_size();
        let pool = StackPool::new(1, 0);
        assert_eq!(pool.stack_size(), round_up_to_page(MIN_STACK_SIZE));
        assert_eq!(pool.guard_size(), page);
        let pool = StackPool::new(100_000, page + 1);
        assert_eq!(pool.stack_size(), round_up_to_page(100_000));
        assert_eq!(pool.guard_size(), 2 * page);
        let s = pool.get().unwrap();
        assert_eq!(s.usable().len(), pool.stack_size());
        assert_eq!(s.guard().len(), pool.guard_size());
        assert_eq!(s.guard().end, s.usable().start);
        assert_eq!(s.base().get(), s.usable().end);
        assert_eq!(s.limit().get(), s.guard().start);
        assert_eq!(s.base().get() % STACK_ALIGNMENT, 0);
        assert_eq!(s.limit().get() % page, 0);
        // The usable part is writable from end to end.
        // SAFETY: the range is the stack's usable memory, owned by `s`.
        unsafe {
            ptr::write_bytes(s.usable().start as *mut u8, 0xa5, s.usable().len());
        }
        assert_eq!(registry_lookup(s.guard().start), Some((pool.stack_size(), pool.guard_size())));
        assert_eq!(registry_lookup(s.guard().end - 1), Some((pool.stack_size(), pool.guard_size())));
        assert_eq!(registry_lookup(s.usable().start), None);
        assert_eq!(registry_lookup(s.usable().end - 1), None);
        pool.put(s);
    }

    #[test]
    fn get_put_reuses_the_same_stack() {
        let pool = StackPool::new(64 * 1024, 4096);
        assert_eq!((pool.live(), pool.mapped()), (0, 0));
        let a = pool.get().unwrap();
        assert_eq!((pool.live(), pool.mapped()), (1, STACKS_PER_REGION));
        let range = a.usable();
        pool.put(a);
        assert_eq!(pool.live(), 0);
        let b = pool.get().unwrap();
        assert_eq!(b.usable(), range);
        let c = pool.get().unwrap();
        assert_ne!(c.usable(), range);
        pool.put(c);
        pool.put(b);
        assert_eq!((pool.live(), pool.mapped()), (0, STACKS_PER_REGION));
    }

    #[test]
    #[should_panic(expected = "does not come from")]
    fn put_into_another_pool_panics() {
        let a = StackPool::new(16 * 1024, 4096);
        let b = StackPool::new(16 * 1024, 4096);
        b.put(a.get().unwrap());
    }

    #[test]
    fn batches() {
        let pool = StackPool::new(16 * 1024, 4096);
        let mut out = Vec::new();
        pool.get_batch(STACKS_PER_REGION * 2 + 5, &mut out).unwrap();
        assert_eq!(out.len(), STACKS_PER_REGION * 2 + 5);
        assert_eq!(pool.live(), out.len());
        assert_eq!(pool.mapped(), STACKS_PER_REGION * 3);
        let mut starts: Vec<usize> = out.iter().map(|s| s.usable().start).collect();
        starts.sort_unstable();
        starts.dedup();
        assert_eq!(starts.len(), out.len(), "a stack was handed out twice");
        let single = pool.get().unwrap();
        pool.get_batch(0, &mut out).unwrap();
        assert_eq!(out.len(), STACKS_PER_REGION * 2 + 5);
        let first = out[0].usable();
        pool.put_batch(&mut out);
        assert!(out.is_empty());
        assert_eq!(pool.live(), 1);
        // Batches come from the free list first and do not carve again.
        pool.get_batch(STACKS_PER_REGION * 2 + 5, &mut out).unwrap();
        assert_eq!(pool.mapped(), STACKS_PER_REGION * 3);
        assert!(out.iter().any(|s| s.usable() == first));
        out.push(single);
        pool.put_batch(&mut out);
        assert_eq!(pool.live(), 0);
    }

    #[test]
    fn many_stacks_live_at_once() {
        let pool = StackPool::new(16 * 1024, 4096);
        let mut stacks: Vec<PooledStack> = (0..5000).map(|_| pool.get().unwrap()).collect();
        assert_eq!(pool.live(), 5000);
        assert!(pool.mapped() >= 5000 && pool.mapped() < 5000 + STACKS_PER_REGION);
        for (i, s) in stacks.iter().enumerate() {
            // SAFETY: both ends of the usable memory owned by `s`.
            unsafe {
                *(s.usable().start as *mut usize) = i;
                *((s.usable().end - 8) as *mut usize) = i;
            }
        }
        for (i, s) in stacks.iter().enumerate() {
            // SAFETY: as above.
            unsafe {
                assert_eq!(*(s.usable().start as *const usize), i);
                assert_eq!(*((s.usable().end - 8) as *const usize), i);
            }
        }
        let half = stacks.split_off(2500);
        for s in half {
            pool.put(s);
        }
        pool.put_batch(&mut stacks);
        assert_eq!(pool.live(), 0);
        // Dropping the pool unmaps its regions and frees its registry slots.
    }

    #[test]
    fn concurrent_get_put() {
        let pool = StackPool::new(16 * 1024, 4096);
        std::thread::scope(|scope| {
            for t in 0..4usize {
                let pool = &pool;
                scope.spawn(move || {
                    let mut held = Vec::new();
                    for i in 0..20_000usize {
                        let tag = t << 32 | i;
                        let s = pool.get().unwrap();
                        // SAFETY: the usable memory is owned by `s`.
                        unsafe { *(s.usable().start as *mut usize) = tag };
                        held.push((s, tag));
                        if i % 7 == 0 {
                            let mut batch = Vec::new();
                            pool.get_batch(3, &mut batch).unwrap();
                            pool.put_batch(&mut batch);
                        }
                        if held.len() > 16 || i % 3 == 0 {
                            let (s, tag) = held.swap_remove(i % held.len());
                            // SAFETY: as above; another owner would have overwritten the tag.
                            assert_eq!(unsafe { *(s.usable().start as *const usize) }, tag);
                            pool.put(s);
                        }
                    }
                    for (s, _) in held {
                        pool.put(s);
                    }
                });
            }
        });
        assert_eq!(pool.live(), 0);
        assert!(pool.mapped() <= 4 * (17 + 3) + 4 * STACKS_PER_REGION);
    }

    #[test]
    fn coroutine_runs_on_pooled_stack_and_stack_is_reused() {
        let pool = StackPool::new(64 * 1024, 4096);
        let stack = pool.get().unwrap();
        let range = stack.usable();
        let inside = range.clone();
        let mut co = Coroutine::with_stack(stack, move |y: &Yielder<u32, u32>, x: u32| {
            let local = 0u8;
            let sp = &local as *const u8 as usize;
            assert!(inside.contains(&sp), "coroutine does not run on its stack");
            let again = y.suspend(x + 1);
            recurse_to(50) + again as usize * 2
        });
        assert!(matches!(co.resume(1), CoroutineResult::Yield(2)));
        assert!(matches!(co.resume(5), CoroutineResult::Return(60)));
        let stack = co.into_stack();
        assert_eq!(stack.usable(), range);
        pool.put(stack);
        let stack = pool.get().unwrap();
        assert_eq!(stack.usable(), range);
        let mut co = Coroutine::with_stack(stack, |_: &Yielder<(), ()>, ()| 7);
        assert!(matches!(co.resume(()), CoroutineResult::Return(7)));
        pool.put(co.into_stack());
        assert_eq!(pool.live(), 0);

        fn recurse_to(n: usize) -> usize {
            let mut frame = [0u8; 512];
            std::hint::black_box(&mut frame);
            if n == 0 { 0 } else { recurse_to(n - 1) + 1 + frame[0] as usize }
        }
    }

    #[test]
    fn ensure_altstack_keeps_std_altstack_or_installs_its_own() {
        std::thread::spawn(|| {
            let before = current_altstack();
            ensure_altstack();
            let after = current_altstack();
            if before.ss_flags & libc::SS_DISABLE == 0 && before.ss_size >= altstack_keep_size() {
                assert_eq!(after.ss_sp, before.ss_sp, "an adequate altstack was replaced");
            }
            assert_eq!(after.ss_flags & libc::SS_DISABLE, 0);

            disable_altstack();
            ensure_altstack();
            let own = current_altstack();
            assert_eq!(own.ss_flags & libc::SS_DISABLE, 0);
            assert!(own.ss_size >= altstack_alloc_size());
            ensure_altstack(); // idempotent
            assert_eq!(current_altstack().ss_sp, own.ss_sp);
            // The thread exits: its thread-local destructor unmaps the stack.
        })
        .join()
        .unwrap();
    }

    #[test]
    fn message_formatting() {
        let mut m = MsgBuf { buf: [0; 512], len: 0 };
        m.push_dec(0);
        m.push(b" ");
        m.push_dec(usize::MAX);
        m.push(b" ");
        m.push_hex(0);
        m.push(b" ");
        m.push_hex(0x7f12_3456_abcd);
        m.push(b" ");
        m.push_size(128 * 1024);
        m.push(b" ");
        m.push_size(2 << 20);
        m.push(b" ");
        m.push_size(1000);
        assert_eq!(text(m.bytes()), format!("0 {} 0x0 0x7f123456abcd 128 KiB 2 MiB 1000 bytes", usize::MAX));
        let mut m = MsgBuf { buf: [0; 512], len: 0 };
        for _ in 0..100 {
            m.push(b"0123456789");
        }
        assert_eq!(m.bytes().len(), 512);
    }

    #[test]
    fn error_message() {
        let e = StackError {
            error: io::Error::from_raw_os_error(libc::ENOMEM),
            live: 32000,
            mapped: 32010,
            max_map_count: Some(65530),
        };
        let msg = e.to_string();
        assert!(msg.starts_with(
            "cannot map user-thread stacks: Cannot allocate memory (os error 12); 32000 stacks live"
        ));
        assert!(msg.contains(
            "vm.max_map_count = 65530 allows about 32765 guarded stacks: raise it (sysctl vm.max_map_count)"
        ));
        let io: io::Error = e.into();
        assert_eq!(io.kind(), io::ErrorKind::OutOfMemory);
        assert_eq!(io.to_string(), msg);
    }

    #[test]
    fn overflow_in_user_thread_is_reported() {
        match child_mode().as_deref() {
            Some("overflow") => {
                install_overflow_handler();
                set_thread_describer(describe);
                overflow_in_coroutine();
            }
            Some("overflow-own-altstack") => {
                install_overflow_handler();
                set_thread_describer(describe);
                std::thread::spawn(|| {
                    disable_altstack();
                    ensure_altstack();
                    assert_eq!(current_altstack().ss_flags & libc::SS_DISABLE, 0);
                    overflow_in_coroutine();
                })
                .join()
                .unwrap();
                unreachable!();
            }
            Some(_) => {}
            None => {
                for mode in ["overflow", "overflow-own-altstack"] {
                    let out = run_child("overflow_in_user_thread_is_reported", mode);
                    let stderr = text(&out.stderr);
                    let ctx = format!(
                        "mode {mode}: {:?}\nstdout:\n{}\nstderr:\n{stderr}",
                        out.status,
                        text(&out.stdout)
                    );
                    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{ctx}");
                    let expected = format!("marcel: stack overflow in {} (fault at 0x", text(DESCRIPTION));
                    assert!(stderr.contains(&expected), "{ctx}");
                    assert!(
                        stderr.contains(
                            ", stack 64 KiB, guard 4 KiB); raise MARCEL_STACK_SIZE or use Builder::stack_size\n"
                        ),
                        "{ctx}"
                    );
                }
            }
        }
    }

    #[test]
    fn other_segfaults_are_not_reported_as_overflows() {
        match child_mode().as_deref() {
            Some(mode) => {
                let prev = match mode {
                    "segv-after-std" => None,
                    "segv-after-dfl" => Some(libc::SIG_DFL),
                    "segv-after-ign" => Some(libc::SIG_IGN),
                    _ => return,
                };
                if let Some(action) = prev {
                    // SAFETY: sigaction is plain old data.
                    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
                    act.sa_sigaction = action;
                    // SAFETY: installs SIG_DFL/SIG_IGN for SIGSEGV in this child process.
                    unsafe { libc::sigaction(libc::SIGSEGV, &act, ptr::null_mut()) };
                }
                install_overflow_handler();
                set_thread_describer(describe);
                // Keep a pool with registered regions around, to be sure they are not matched.
                let pool = StackPool::new(16 * 1024, 4096);
                let _stack = pool.get().unwrap();
                // SAFETY: deliberately not sound: the point is to fault outside any guard page.
                unsafe { ptr::write_volatile(ptr::without_provenance_mut::<u8>(16), 1) };
                unreachable!("writing to address 16 did not fault");
            }
            None => {
                for mode in ["segv-after-std", "segv-after-dfl", "segv-after-ign"] {
                    let out = run_child("other_segfaults_are_not_reported_as_overflows", mode);
                    let stderr = text(&out.stderr);
                    let ctx = format!("mode {mode}: {:?}\nstderr:\n{stderr}", out.status);
                    assert_eq!(out.status.signal(), Some(libc::SIGSEGV), "{ctx}");
                    assert!(!stderr.contains("stack overflow"), "{ctx}");
                    assert!(!stderr.contains("overflowed"), "{ctx}");
                }
            }
        }
    }

    #[test]
    fn kernel_thread_overflow_still_reaches_std() {
        match child_mode().as_deref() {
            Some("std-overflow") => {
                install_overflow_handler();
                set_thread_describer(describe);
                let pool = StackPool::new(16 * 1024, 4096);
                let _stack = pool.get().unwrap();
                std::thread::Builder::new()
                    .name("deep".into())
                    .stack_size(256 * 1024)
                    .spawn(|| recurse(0))
                    .unwrap()
                    .join()
                    .unwrap();
                unreachable!();
            }
            Some(_) => {}
            None => {
                let out = run_child("kernel_thread_overflow_still_reaches_std", "std-overflow");
                let stderr = text(&out.stderr);
                let ctx = format!("{:?}\nstderr:\n{stderr}", out.status);
                assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{ctx}");
                assert!(
                    stderr.contains("thread 'deep'") && stderr.contains("has overflowed its stack"),
                    "{ctx}"
                );
                assert!(!stderr.contains("marcel:"), "{ctx}");
            }
        }
    }

    #[test]
    fn map_count_limit_gives_a_clear_error() {
        match child_mode().as_deref() {
            Some("map-limit") => {
                let pool = StackPool::new(MIN_STACK_SIZE, 4096);
                // Reserved up front: at the limit, growing a large Vec needs a new mapping.
                let mut stacks = Vec::with_capacity(1 << 20);
                let err = loop {
                    match pool.get() {
                        Ok(s) => stacks.push(s),
                        Err(e) => break e,
                    }
                    assert!(stacks.len() < 1 << 20, "no limit reached");
                };
                let live = stacks.len();
                assert_eq!(pool.live(), live);
                // Give back a few stacks, which can be handed out again at the limit.
                let mut some: Vec<PooledStack> = stacks.drain(live - 10..).collect();
                pool.put_batch(&mut some);
                pool.get_batch(10, &mut stacks).unwrap();
                println!("LIVE {live}\nERROR {err}");
                // The stacks and the pool are leaked: returning them would need memory.
                std::mem::forget(stacks);
                std::mem::forget(pool);
            }
            Some(_) => {}
            None => {
                let out = run_child("map_count_limit_gives_a_clear_error", "map-limit");
                let stdout = text(&out.stdout);
                let ctx = format!("{:?}\nstdout:\n{stdout}\nstderr:\n{}", out.status, text(&out.stderr));
                assert!(out.status.success(), "{ctx}");
                // With --nocapture the output follows the test name on the same line.
                let live: usize = stdout
                    .split_once("LIVE ")
                    .and_then(|(_, rest)| rest.lines().next())
                    .and_then(|n| n.trim().parse().ok())
                    .expect(&ctx);
                let max_map_count: usize =
                    std::fs::read_to_string("/proc/sys/vm/max_map_count").unwrap().trim().parse().unwrap();
                assert!(live > max_map_count / 2 - 2000 && live <= max_map_count / 2, "{ctx}");
                assert!(
                    stdout.contains(
                        "ERROR cannot map user-thread stacks: Cannot allocate memory (os error 12)"
                    ),
                    "{ctx}"
                );
                assert!(
                    stdout.contains(&format!(
                        "vm.max_map_count = {max_map_count} allows about {} guarded stacks",
                        max_map_count / 2
                    )),
                    "{ctx}"
                );
            }
        }
    }
}
