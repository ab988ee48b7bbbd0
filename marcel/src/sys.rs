//! Thin wrappers over the Linux system calls marcel needs (futex, scheduling policy, thread id).
//!
//! Owns nothing but the calls themselves; every `unsafe` block here is a plain syscall on
//! arguments that are valid by construction.

use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// Waits while `*word == expected`, for at most `timeout` (forever if `None`).
/// Returns early on a wake-up, on a value change and spuriously: callers re-check.
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let ts_ptr = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a live AtomicU32 (same layout as u32); the kernel only reads it and the
    // optional timespec, which outlives the call.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            ts_ptr,
        );
    }
}

/// Wakes up to `n` threads waiting on `word`.
pub(crate) fn futex_wake(word: &AtomicU32, n: u32) {
    // SAFETY: `word` is a live AtomicU32; FUTEX_WAKE does not dereference anything else.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, n);
    }
}

/// Switches the calling kernel thread to SCHED_IDLE: it then runs only when its core has nothing
/// else to run (the kernel still gives it rare short slices). Unprivileged threads cannot undo this.
pub(crate) fn set_current_sched_idle() -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 means the calling thread; `param` is a valid sched_param.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
    if rc == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

/// Gives the core to another runnable thread of the same or higher priority, if any.
pub(crate) fn sched_yield() {
    // SAFETY: sched_yield takes no arguments and cannot fail on Linux.
    unsafe {
        libc::sched_yield();
    }
}

/// Pins the calling kernel thread to one OS CPU. Failure (e.g. a CPU outside a container's
/// cpuset) is reported to the caller, which decides whether to go on unpinned.
pub(crate) fn pin_current_to(os_cpu: usize) -> bool {
    core_affinity::set_for_current(core_affinity::CoreId { id: os_cpu })
}
