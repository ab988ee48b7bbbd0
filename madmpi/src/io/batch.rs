//! Many positioned reads or writes of one access in a few system calls: an io_uring the file
//! sets up at its first batch (a strided access of 16 KiB pieces makes thousands of `pwrite`
//! calls, each a kernel entry; a ring takes [`ENTRIES`] of them per entry). Only on request
//! (hint `madmpi_io_uring` `enable`): on page-cache files it loses (see `access::BATCH_FROM`).
//!
//! Owns the ring and nothing else: the caller says which bytes go where and finishes what a
//! batch left short (a short write, a read at the end of the file) with ordinary calls. Where
//! the kernel refuses a ring (old kernel, seccomp, `io_uring_disabled`), or another thread of
//! the process holds it, [`Batch::run`] says so and the caller makes the calls one by one.

use io_uring::{IoUring, opcode, types};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Requests in flight per submission.
const ENTRIES: u32 = 64;
/// Failed submissions of one chunk before the ring is given up.
const RETRIES: u32 = 1000;
/// The longest piece a request carries (a request's length is 32 bits); longer pieces are
/// few by nature and go through ordinary calls.
pub(super) const PIECE_MAX: u64 = 1 << 30;

/// One piece of a batch: `len` bytes at file position `pos`, from or to `ptr`; `result` is
/// the kernel's answer (bytes moved, or a negative errno).
pub(super) struct Piece {
    pub pos: u64,
    pub ptr: *mut u8,
    pub len: u32,
    pub result: i32,
}

/// A file's ring, set up on first use.
#[derive(Default)]
pub(super) struct Batch {
    ring: Mutex<Option<IoUring>>,
    /// The kernel refused a ring once: no more tries.
    refused: AtomicBool,
}

impl Batch {
    /// Reads (`write` false) or writes `pieces` of `fd`, filling each piece's `result`. `Ok(false)`:
    /// nothing was done (no ring here, or another thread uses it): make the calls one by one.
    /// An error of the ring itself (not of a piece) leaves some pieces done, some not: the
    /// caller makes them all again one by one.
    ///
    /// # Safety
    /// Each piece's memory is valid for its direction and length during the call, and not
    /// otherwise accessed meanwhile.
    pub(super) unsafe fn run(
        &self,
        fd: BorrowedFd<'_>,
        pieces: &mut [Piece],
        write: bool,
    ) -> std::io::Result<bool> {
        if self.refused.load(Relaxed) {
            return Ok(false);
        }
        let Ok(mut slot) = self.ring.try_lock() else {
            return Ok(false); // another thread batches on this file: this one calls
        };
        if slot.is_none() {
            match IoUring::new(ENTRIES) {
                Ok(r) => *slot = Some(r),
                Err(e) => {
                    log::debug!("io: no io_uring ({e}): one call per piece");
                    self.refused.store(true, Relaxed);
                    return Ok(false);
                }
            }
        }
        let ring = slot.as_mut().expect("set up above");
        let fd = types::Fd(fd.as_raw_fd());
        for chunk in pieces.chunks_mut(ENTRIES as usize) {
            // SAFETY: each piece's memory is valid and untouched through this call, as our
            // caller vouches; `run_chunk` needs no more.
            if let Err(e) = unsafe { run_chunk(ring, fd, chunk, write) } {
                // Never seen; the ring is given up (its close cancels what is left).
                *slot = None;
                self.refused.store(true, Relaxed);
                return Err(e);
            }
        }
        Ok(true)
    }
}

/// Submits `chunk` (at most [`ENTRIES`] pieces) and waits for all of it.
///
/// # Safety
/// As [`Batch::run`].
unsafe fn run_chunk(
    ring: &mut IoUring,
    fd: types::Fd,
    chunk: &mut [Piece],
    write: bool,
) -> std::io::Result<()> {
    {
        let mut sq = ring.submission();
        for (i, p) in chunk.iter().enumerate() {
            let entry = if write {
                opcode::Write::new(fd, p.ptr, p.len).offset(p.pos).build()
            } else {
                opcode::Read::new(fd, p.ptr, p.len).offset(p.pos).build()
            };
            // SAFETY: the entry points at the piece's memory, which the caller keeps valid and
            // untouched through this call; we wait for every completion before returning
            // (below), so the kernel is done with it by then.
            unsafe { sq.push(&entry.user_data(i as u64)) }
                .expect("a chunk holds at most ENTRIES requests and the queue is empty");
        }
    }
    let mut left = chunk.len();
    let mut failures = 0;
    while left > 0 {
        if let Err(e) = ring.submit_and_wait(left) {
            // io_uring_enter fails only for what it did not take (EINTR while waiting,
            // EAGAIN/EBUSY while the kernel is short): the entries stay queued or in flight,
            // and their memory must outlive them: try again.
            failures += 1;
            if failures > RETRIES {
                return Err(e);
            }
            if e.raw_os_error() != Some(libc::EINTR) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            continue;
        }
        for cqe in ring.completion() {
            chunk[cqe.user_data() as usize].result = cqe.result();
            left -= 1;
        }
    }
    Ok(())
}
