//! Byte-range locks between processes (open-file-description locks, `F_OFD_SETLKW`): atomic
//! mode holds one over each access, a sieving write over the span it reads and writes back.
//! Within a process the file's own mutex orders threads (an OFD lock does not: they share the
//! description).

use crate::error::{Error, Result};
use std::os::fd::{AsRawFd, BorrowedFd};

/// A held lock on bytes `start..start + len`; released on drop.
pub(super) struct RangeLock<'a> {
    fd: BorrowedFd<'a>,
    start: i64,
    len: i64,
}

fn flock(kind: i32, start: i64, len: i64) -> libc::flock {
    // SAFETY: `flock` is plain data; all-zero is a valid value (then filled in).
    let mut l: libc::flock = unsafe { std::mem::zeroed() };
    l.l_type = kind as i16;
    l.l_whence = libc::SEEK_SET as i16;
    l.l_start = start;
    l.l_len = len;
    l
}

/// Waits for and takes a lock on `start..start + len` (`write`: exclusive).
pub(super) fn lock(fd: BorrowedFd<'_>, start: i64, len: i64, write: bool) -> Result<RangeLock<'_>> {
    let l = flock(if write { libc::F_WRLCK } else { libc::F_RDLCK }, start, len.max(1));
    loop {
        // SAFETY: `fd` is open for the borrow; `l` is a valid flock for F_OFD_SETLKW (l_pid 0).
        if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_OFD_SETLKW, &l) } == 0 {
            return Ok(RangeLock { fd, start, len: len.max(1) });
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(Error::io(format!("locking bytes {start}..{}: {e}", start + len)));
        }
    }
}

impl Drop for RangeLock<'_> {
    fn drop(&mut self) {
        let l = flock(libc::F_UNLCK, self.start, self.len);
        // SAFETY: as in `lock`; unlocking a range we hold cannot block.
        unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_OFD_SETLK, &l) };
    }
}
