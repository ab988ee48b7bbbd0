//! Failure notifications from Hydra: with `-disable-auto-cleanup`, Hydra's proxy sends SIGUSR1
//! to the surviving processes when one dies (MPICH's ch3/ch4 catch it, then read the PMI key
//! `PMI_dead_processes`). Left at its default action, SIGUSR1 would end every survivor. Like
//! MPICH, the runtime installs a handler at start-up if the program has none; it only counts
//! the notices (nmad detects the death itself when a link breaks or cannot be made).
//!
//! Owns the SIGUSR1 disposition while the program leaves it at the default; it must not do
//! anything in the handler but an atomic increment (async-signal safety).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

static NOTICES: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_notice(_sig: libc::c_int) {
    NOTICES.fetch_add(1, Relaxed);
}

/// Installs the handler if SIGUSR1 has its default action; leaves any other disposition.
pub(crate) fn install() {
    // SAFETY: a zeroed sigaction is a valid value for the kernel to fill in.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: querying the current action (null new action) only writes `old`.
    if unsafe { libc::sigaction(libc::SIGUSR1, std::ptr::null(), &mut old) } != 0
        || old.sa_sigaction != libc::SIG_DFL
    {
        return;
    }
    // SAFETY: as above, a zeroed sigaction is valid; fields set below.
    let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
    new.sa_sigaction = on_notice as extern "C" fn(libc::c_int) as libc::sighandler_t;
    new.sa_flags = libc::SA_RESTART;
    // SAFETY: `new` is a valid action whose handler only does an atomic increment (async-signal
    // safe); `sa_mask` is empty (zeroed), which sigemptyset would also give.
    unsafe { libc::sigaction(libc::SIGUSR1, &new, std::ptr::null_mut()) };
}

/// How many failure notices arrived.
pub fn notices() -> u64 {
    NOTICES.load(Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_is_counted_instead_of_ending_the_process() {
        install();
        let before = notices();
        // SAFETY: raising a signal whose handler was just installed (or that the test harness
        // already handles: then the count check below tells).
        unsafe { libc::raise(libc::SIGUSR1) };
        assert_eq!(notices(), before + 1);
    }
}
