//! What a waiting OS thread (no marcel) can tell of its own CPU, for the policy to decide whether
//! to spin on: whether other threads of its process want to run there
//! ([`MachineState::local_ready`]), and whether anything took the CPU from it while it spun
//! ([`MachineState::contended`]). The machine-wide load (`machine::os_state`) cannot say: it
//! counts every runnable thread of the machine, a busy neighbour's as much as one's own.
//!
//! Owns per-thread caches only; reads `/proc` into stack buffers and lists the process's
//! threads with `opendir` (a waiter must not allocate: the collectives' counting-allocator test
//! waits too, and `std::fs::read_dir` allocates each entry's name). Not for marcel user threads
//! (their LWP's queue says it all).

use crate::machine::read_proc;
use crate::policy::MachineState;
use std::cell::Cell;
use std::sync::atomic::{AtomicI32, Ordering::Relaxed};
use std::time::Duration;

/// How long a thread that lost its CPU while spinning counts as contended: it waits in the
/// kernel meanwhile, then tries spinning again (a try costs the CPU's other threads at most the
/// scheduler's slice, a few % of this).
pub const CONTENDED_HOLD: Duration = Duration::from_millis(250);

/// Run-queue delay within one spin time above which the spinner's CPU was wanted: a thread
/// sharing the CPU takes whole slices (milliseconds under CFS); our own progression thread's
/// tick or a kernel worker takes tens of microseconds (up to 206 µs seen on this VM).
const CONTENDED_DELAY_NS: u64 = 500_000;

/// How old a count of the process's runnable threads may be when a wait starts, and when a
/// spinning wait re-plans (a count reads one `/proc` file per thread: tens of µs, during which
/// the spinner polls nothing). A count that found threads ready (the waiter sleeps, which costs
/// more than a count) is redone sooner: a burst of them (the library's own start-up) passes.
const READY_STALE_NS: u64 = 100_000_000;
const READY_STALE_REPLAN_NS: u64 = 10_000_000;
const BUSY_STALE_NS: u64 = 1_000_000;

/// Thread ids of pioman's own threads (progression threads stand back while an application
/// thread waits: not threads to leave the CPU to), as many as fit; 0 is a free place.
static OURS: [AtomicI32; 16] = [const { AtomicI32::new(0) }; 16];

/// Records the calling thread as one of pioman's (it starts its life in pioman).
pub(crate) fn note_pioman_thread() {
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    // Full: such a thread counts as the application's, which only makes waiters sleep more.
    let _ = OURS.iter().find(|slot| slot.compare_exchange(0, me, Relaxed, Relaxed).is_ok());
}

/// Forgets the calling thread (it ends): its id may be reused by an application thread.
pub(crate) fn forget_pioman_thread() {
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    OURS.iter().filter(|slot| slot.load(Relaxed) == me).for_each(|slot| slot.store(0, Relaxed));
}

fn is_pioman_thread(tid: i32) -> bool {
    OURS.iter().any(|slot| slot.load(Relaxed) == tid)
}

thread_local! {
    /// Until when (clock ns) the calling thread counts as contended.
    static CONTENDED_UNTIL: Cell<u64> = const { Cell::new(0) };
    /// (when counted, clock ns; threads of the process ready beside the caller).
    static READY: Cell<(u64, usize)> = const { Cell::new((0, 0)) };
}

/// Fills `m`'s per-thread fields for the calling OS thread, of which `waiting` other threads
/// wait in the library on its node (they want a CPU as soon as their message comes, asleep or
/// not), `spinning` of them spinning (runnable: they may be all the competition there is).
/// `replan`: a round after a spin ran out (the thread spins anyway: a fresher count); the first
/// round of a wait uses an older one, so that a wait that completes at once seldom pays for
/// `/proc` reads.
pub(crate) fn fill(m: &mut MachineState, replan: bool, waiting: usize, spinning: usize) {
    m.contended = contended_here();
    let now = crate::clock::now_ns();
    let (at, ready) = READY.get();
    let stale = match (ready, replan) {
        (1.., _) => BUSY_STALE_NS,
        (0, true) => READY_STALE_REPLAN_NS,
        (0, false) => READY_STALE_NS,
    };
    let fresh = at != 0 && now.saturating_sub(at) < stale;
    let ready = if fresh {
        ready
    } else {
        let r = ready_beside_caller().unwrap_or(0);
        READY.set((now.max(1), r));
        r
    };
    let beside = |n: usize| n.saturating_sub(allowed_cpus().saturating_sub(1));
    m.local_ready = ready.max(beside(waiting));
    m.waiters_only = m.local_ready > 0 && ready <= beside(spinning);
}

/// Whether the calling thread lately lost its CPU while spinning (see [`CONTENDED_HOLD`]).
fn contended_here() -> bool {
    let until = CONTENDED_UNTIL.get();
    until != 0 && crate::clock::now_ns() < until
}

/// A spinning thread's look at its run-queue delay: `before` is the value at its previous look
/// (`None` at the first); marks the thread contended if the delay grew by more than a blip.
/// Returns the value to pass next time.
pub(crate) fn note_run_delay(before: Option<u64>) -> Option<u64> {
    let now = run_delay_ns()?;
    if before.is_some_and(|b| wanted(b, now)) {
        CONTENDED_UNTIL.set(crate::clock::now_ns() + CONTENDED_HOLD.as_nanos() as u64);
    }
    Some(now)
}

/// Whether a run-queue delay going from `before` to `now` (ns) says another thread ran instead.
fn wanted(before: u64, now: u64) -> bool {
    now.saturating_sub(before) >= CONTENDED_DELAY_NS
}

/// The calling thread's time spent runnable but not running (ns), the second field of
/// `/proc/thread-self/schedstat`; `None` without schedstats.
fn run_delay_ns() -> Option<u64> {
    let mut buf = [0u8; 96];
    let n = read_proc("/proc/thread-self/schedstat", &mut buf)?;
    let field = buf[..n].split(|b| b.is_ascii_whitespace()).nth(1)?;
    std::str::from_utf8(field).ok()?.parse().ok()
}

/// Threads of this process other than the caller and pioman's own that are runnable now (state
/// `R` in `/proc/self/task/*/stat`), beyond the caller's other allowed CPUs: how many would have to
/// wait for a CPU if the caller kept its own. `None` if `/proc` cannot be read.
fn ready_beside_caller() -> Option<usize> {
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    // SAFETY: the path is a NUL-terminated literal.
    let dir = unsafe { libc::opendir(c"/proc/self/task".as_ptr()) };
    if dir.is_null() {
        return None;
    }
    let mut runnable = 0usize;
    loop {
        // SAFETY: `dir` is the open directory stream; readdir's entry stays valid until the next
        // readdir or closedir on it, and we copy what we need before either.
        let e = unsafe { libc::readdir(dir) };
        if e.is_null() {
            break;
        }
        // SAFETY: `e` is a valid dirent whose d_name is NUL-terminated.
        let name = unsafe { std::ffi::CStr::from_ptr((*e).d_name.as_ptr()) }.to_bytes();
        let Some(tid) = std::str::from_utf8(name).ok().and_then(|t| t.parse::<i32>().ok()) else {
            continue; // "." and ".."
        };
        if tid != me && !is_pioman_thread(tid) && task_runnable(tid) {
            runnable += 1;
        }
    }
    // SAFETY: `dir` came from opendir and is closed once.
    unsafe { libc::closedir(dir) };
    Some(runnable.saturating_sub(allowed_cpus().saturating_sub(1)))
}

/// Whether task `tid` of this process is in state `R`.
fn task_runnable(tid: i32) -> bool {
    use std::io::Write;
    let mut path = [0u8; 48];
    let mut w = &mut path[..];
    if write!(w, "/proc/self/task/{tid}/stat").is_err() {
        return false;
    }
    let len = 48 - w.len();
    let Ok(path) = std::str::from_utf8(&path[..len]) else { return false };
    let mut buf = [0u8; 512];
    read_proc(path, &mut buf).is_some_and(|n| state_of(&buf[..n]) == Some(b'R'))
}

/// The state letter of a `stat` line: the first field after the command, which is in
/// parentheses and may itself hold spaces and parentheses (hence the last `)`).
fn state_of(stat: &[u8]) -> Option<u8> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    stat.get(close + 2).copied()
}

/// CPUs the calling thread may run on (at least 1), read once per thread (a rank is pinned
/// before the library starts, if at all).
fn allowed_cpus() -> usize {
    thread_local! {
        static CPUS: Cell<usize> = const { Cell::new(0) };
    }
    if CPUS.get() == 0 {
        CPUS.set(read_allowed_cpus());
    }
    CPUS.get()
}

fn read_allowed_cpus() -> usize {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity(0) writes the caller's
    // mask into it, within its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) != 0 {
            return 1;
        }
        (libc::CPU_COUNT(&set) as usize).max(1)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

    fn pin_to_first_cpu() {
        crate::threads::pin_to(&[marcel::topology::allowed_cpus()[0]]);
    }

    fn spin_until(stop: &AtomicBool) {
        while !stop.load(Relaxed) {
            std::hint::spin_loop();
        }
    }

    #[test]
    fn states_are_read_after_the_last_parenthesis() {
        assert_eq!(state_of(b"42 (a) b) R 1 2"), Some(b'R'));
        assert_eq!(state_of(b"42 (sleepy) S 1"), Some(b'S'));
        assert_eq!(state_of(b"garbage"), None);
    }

    #[test]
    fn a_spinning_thread_of_the_process_is_ready_beside_a_pinned_caller() {
        std::thread::spawn(|| {
            pin_to_first_cpu();
            let stop = Arc::new(AtomicBool::new(false));
            let before = ready_beside_caller().unwrap();
            let rivals: Vec<_> = (0..3)
                .map(|_| {
                    let stop = stop.clone();
                    std::thread::spawn(move || {
                        pin_to_first_cpu();
                        spin_until(&stop);
                    })
                })
                .collect();
            std::thread::sleep(Duration::from_millis(20));
            // Three spinners on our CPU: runnable whenever looked at (other tests' threads may
            // add to the count, never take from it).
            let with_rivals = ready_beside_caller().unwrap();
            stop.store(true, Relaxed);
            rivals.into_iter().for_each(|t| t.join().unwrap());
            assert!(with_rivals >= 3, "{with_rivals} ready beside us (before: {before})");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_spinner_that_shares_its_cpu_is_contended() {
        std::thread::spawn(|| {
            pin_to_first_cpu();
            assert!(note_run_delay(None).is_some(), "schedstats");
            assert!(!contended_here(), "a first look compares with nothing");
            assert!(!wanted(1_000, 1_000 + CONTENDED_DELAY_NS - 1), "a blip");
            let stop = Arc::new(AtomicBool::new(false));
            let rival = {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    pin_to_first_cpu();
                    spin_until(&stop);
                })
            };
            let before = note_run_delay(None);
            let end = std::time::Instant::now() + Duration::from_millis(100);
            while std::time::Instant::now() < end {
                std::hint::spin_loop();
            }
            note_run_delay(before);
            stop.store(true, Relaxed);
            rival.join().unwrap();
            assert!(contended_here(), "a thread spinning beside it on its CPU");
        })
        .join()
        .unwrap();
    }
}
