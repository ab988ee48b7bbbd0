//! Failure notices from Hydra and madrun: with `-disable-auto-cleanup`, Hydra's proxy (and
//! madrun) sends SIGUSR1 to the processes it runs when one of them ends without finalizing
//! PMI (MPICH's ch3/ch4 catch it and read `PMI_dead_processes`). Left at its default action, SIGUSR1 would end every survivor, so
//! [`super::Pmi::init`] installs a handler for PMI-1 jobs before it talks to the launcher
//! (MPICH installs its own in `MPI_Init`), unless the program set a disposition of its own.
//!
//! The handler counts the notice and writes a byte to a self-pipe, so a process blocked in a
//! PMI barrier that the dead will never enter wakes up ([`super::Pmi::fence_unless_failed`]).
//!
//! Owns the SIGUSR1 disposition while the program leaves it at the default; it must not do
//! anything in the handler but an atomic increment and a non-blocking `write` (both
//! async-signal-safe).

use std::os::fd::RawFd;
use std::sync::Once;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering::Relaxed};

static NOTICES: AtomicU64 = AtomicU64::new(0);
/// The self-pipe's ends (-1 until installed).
static READ_END: AtomicI32 = AtomicI32::new(-1);
static WRITE_END: AtomicI32 = AtomicI32::new(-1);
static INSTALL: Once = Once::new();

extern "C" fn on_notice(_sig: libc::c_int) {
    NOTICES.fetch_add(1, Relaxed);
    let fd = WRITE_END.load(Relaxed);
    if fd >= 0 {
        let byte = 1u8;
        // SAFETY: write(2) is async-signal-safe; `fd` is the pipe's non-blocking write end
        // (a full pipe fails with EAGAIN, which is fine: a wake-up is already pending), and
        // `byte` lives for the call.
        unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
    }
}

/// Installs the handler (once) if SIGUSR1 has its default action; leaves any other disposition.
pub fn install() {
    INSTALL.call_once(|| {
        // SAFETY: a zeroed sigaction is a valid value for the kernel to fill in.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: querying the current action (null new action) only writes `old`.
        if unsafe { libc::sigaction(libc::SIGUSR1, std::ptr::null(), &mut old) } != 0
            || old.sa_sigaction != libc::SIG_DFL
        {
            return;
        }
        let mut fds = [-1; 2];
        // SAFETY: pipe2 writes two descriptors into `fds`, which has room for them.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } == 0 {
            READ_END.store(fds[0], Relaxed);
            WRITE_END.store(fds[1], Relaxed);
        }
        // SAFETY: a zeroed sigaction is a valid value; the fields that matter are set below.
        let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
        new.sa_sigaction = on_notice as extern "C" fn(libc::c_int) as libc::sighandler_t;
        new.sa_flags = libc::SA_RESTART;
        // SAFETY: `new` is a valid action whose handler only does an atomic increment and a
        // non-blocking write (async-signal-safe); `sa_mask` is empty (zeroed), as sigemptyset
        // would make it.
        unsafe { libc::sigaction(libc::SIGUSR1, &new, std::ptr::null_mut()) };
    });
}

/// How many failure notices arrived.
pub fn count() -> u64 {
    NOTICES.load(Relaxed)
}

/// The self-pipe's read end, readable after a notice (None if no handler of ours is installed).
pub(crate) fn wake_fd() -> Option<RawFd> {
    Some(READ_END.load(Relaxed)).filter(|&fd| fd >= 0)
}

/// Empties the self-pipe (its bytes only say "a notice came"; [`count`] says how many).
pub(crate) fn drain() {
    let Some(fd) = wake_fd() else { return };
    let mut buf = [0u8; 64];
    // SAFETY: reading into a local buffer of the length given from our non-blocking pipe.
    while unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_is_counted_and_wakes_the_pipe_instead_of_ending_the_process() {
        install();
        drain();
        let before = count();
        // SAFETY: raising a signal whose handler was just installed (if the test harness had
        // set a disposition of its own, the count check below fails and says so).
        unsafe { libc::raise(libc::SIGUSR1) };
        assert_eq!(count(), before + 1, "the handler counted the notice");
        let fd = wake_fd().expect("the self-pipe exists");
        let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd, zero timeout.
        assert_eq!(unsafe { libc::poll(&mut pfd, 1, 0) }, 1, "the pipe is readable");
        drain();
        // SAFETY: as above.
        assert_eq!(unsafe { libc::poll(&mut pfd, 1, 0) }, 0, "drained");
    }
}
