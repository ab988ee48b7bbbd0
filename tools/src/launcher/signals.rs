//! The self-pipe: turns signals (SIGINT, SIGTERM, SIGHUP, SIGCHLD) and wake-ups from helper
//! threads into bytes the event loop polls for. The signal handler only writes one byte.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};

/// The write end of the pipe, for the signal handler (-1: none).
static WAKE_FD: AtomicI32 = AtomicI32::new(-1);

/// The byte a [`Waker`] writes (signal numbers are never 0).
pub const WAKE: u8 = 0;

extern "C" fn on_signal(sig: libc::c_int) {
    let fd = WAKE_FD.load(Ordering::Relaxed);
    if fd < 0 {
        return;
    }
    let byte = sig as u8;
    // SAFETY: __errno_location and write are async-signal-safe; errno is saved and restored so
    // that the interrupted code does not see our write's errno; the pipe is non-blocking and
    // never closed (see `SelfPipe`), and we write 1 byte from a local.
    unsafe {
        let errno = libc::__errno_location();
        let saved = *errno;
        libc::write(fd, (&byte as *const u8).cast(), 1);
        *errno = saved;
    }
}

/// Wakes the event loop from another thread.
#[derive(Clone, Copy, Debug)]
pub struct Waker(&'static File);

impl Waker {
    pub fn wake(&self) {
        // A full pipe already guarantees a wake-up: errors are irrelevant.
        let _ = (&mut &*self.0).write(&[WAKE]);
    }
}

/// The read end the event loop polls, and the handlers it installed.
#[derive(Debug)]
pub struct SelfPipe {
    read: File,
    write: &'static File,
    signals: Vec<libc::c_int>,
}

impl SelfPipe {
    /// Creates the pipe and routes `signals` to it. Call once per process.
    pub fn install(signals: &[libc::c_int]) -> io::Result<SelfPipe> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: pipe2 writes two descriptors into our array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 just created these descriptors; we are their only owner.
        let (read, write) = unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
        // The write end is never closed: a handler running on another thread could otherwise
        // write to a reused descriptor.
        let write: &'static File = Box::leak(Box::new(write));
        WAKE_FD.store(write.as_raw_fd(), Ordering::SeqCst);
        for &sig in signals {
            set_handler(sig, on_signal as *const () as libc::sighandler_t)?;
        }
        Ok(SelfPipe { read, write, signals: signals.to_vec() })
    }

    pub fn waker(&self) -> Waker {
        Waker(self.write)
    }

    pub fn fd(&self) -> RawFd {
        self.read.as_raw_fd()
    }

    /// The bytes received since the last call: signal numbers, and [`WAKE`] for wake-ups.
    pub fn drain(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = [0u8; 256];
        loop {
            match (&self.read).read(&mut buf) {
                Ok(0) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        out
    }
}

impl Drop for SelfPipe {
    fn drop(&mut self) {
        for &sig in &self.signals {
            let _ = set_handler(sig, libc::SIG_DFL);
        }
        WAKE_FD.store(-1, Ordering::SeqCst);
    }
}

fn set_handler(sig: libc::c_int, handler: libc::sighandler_t) -> io::Result<()> {
    // SAFETY: sigaction is plain data; all-zero is a valid (empty) value that we fill in.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = handler;
    sa.sa_flags = libc::SA_RESTART | if sig == libc::SIGCHLD { libc::SA_NOCLDSTOP } else { 0 };
    // SAFETY: sa_mask belongs to our struct; the handler only does async-signal-safe work.
    let r = unsafe {
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut())
    };
    if r != 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}
