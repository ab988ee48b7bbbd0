//! Memory shared by the processes of one node (a shared window, a communicator's collective
//! area): one anonymous memory file (memfd), sealed against resizing, mapped by every member at
//! an address of its own.
//!
//! A memfd has no name in the file system (a crash leaves nothing in `/dev/shm`) and only the
//! processes it is passed to can map it ([`super::fdpass`]). The seals forbid shrinking and
//! growing, so no member can truncate the file under another's mapping (which would turn that
//! member's next load into SIGBUS); the attaching side checks them and the size before mapping.
//!
//! Owns the mapping; what lives in it is its user's (`rma::window`, `coll::shared`).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;

const SEALS: libc::c_int = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;

/// A shared mapping of a segment, unmapped on drop.
#[derive(Debug)]
pub(crate) struct Segment {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory its users access through their own pointers;
// the handle itself only holds its address and length.
unsafe impl Send for Segment {}
// SAFETY: as for Send: no method reads or writes the memory.
unsafe impl Sync for Segment {}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` is a mapping this value made and nothing else unmaps.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

fn check(r: libc::c_int, what: &str) -> io::Result<libc::c_int> {
    if r < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("shared segment: {what}: {e}")));
    }
    Ok(r)
}

/// `len` rounded up to whole pages, at least one (a mapping cannot be empty).
pub(crate) fn page_rounded(len: usize) -> usize {
    let page = page_size();
    len.max(1).div_ceil(page) * page
}

/// The system's page size.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf only reads a system constant.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p).ok().filter(|&p| p > 0).unwrap_or(4096)
}

impl Segment {
    /// A new zeroed, sealed, mode-0600 segment of `len` bytes (a whole number of pages), and its
    /// fd to pass to the other members.
    pub(crate) fn create(len: usize) -> io::Result<(Segment, OwnedFd)> {
        // SAFETY: the name is a NUL-terminated literal; a non-negative return is our new fd.
        let fd = unsafe {
            libc::memfd_create(c"madmpi-seg".as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING)
        };
        let fd = check(fd, "memfd_create")?;
        // SAFETY: `fd` was just returned by memfd_create and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let raw = fd.as_raw_fd();
        let size = libc::off_t::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, format!("{len} bytes is too large")))?;
        // SAFETY: fchmod, ftruncate and fcntl on a descriptor we own, with plain integer arguments.
        unsafe {
            check(libc::fchmod(raw, 0o600), "fchmod")?;
            check(libc::ftruncate(raw, size), "ftruncate")?;
            check(libc::fcntl(raw, libc::F_ADD_SEALS, SEALS), "sealing")?;
        }
        Ok((Segment::map(&fd, len)?, fd))
    }

    /// Maps a segment another member created, once it is checked to be a memory file of exactly
    /// `len` bytes sealed against resizing.
    pub(crate) fn attach(fd: &OwnedFd, len: usize) -> io::Result<Segment> {
        let raw = fd.as_raw_fd();
        // SAFETY: an all-zero stat is a valid buffer for fstat to fill.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `st` is a valid, exclusively borrowed stat buffer; `raw` is an fd we own.
        check(unsafe { libc::fstat(raw, &mut st) }, "fstat")?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG || u64::try_from(st.st_size).ok() != Some(len as u64) {
            let why = format!("not a {len}-byte memory file (size {})", st.st_size);
            return Err(io::Error::new(io::ErrorKind::InvalidData, why));
        }
        // SAFETY: F_GET_SEALS takes no argument and only reads the file's seals.
        let seals = check(unsafe { libc::fcntl(raw, libc::F_GET_SEALS) }, "F_GET_SEALS")?;
        if seals & (libc::F_SEAL_SHRINK | libc::F_SEAL_GROW) != libc::F_SEAL_SHRINK | libc::F_SEAL_GROW {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "segment not sealed against resizing"));
        }
        Segment::map(fd, len)
    }

    fn map(fd: &OwnedFd, len: usize) -> io::Result<Segment> {
        // SAFETY: a new shared mapping of a file we hold open, at an address the kernel picks:
        // it aliases no Rust object.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("shared segment: mmap: {e}")));
        }
        Ok(Segment { ptr: NonNull::new(p.cast()).expect("mmap never returns null on success"), len })
    }

    /// The first byte of this process's mapping.
    pub(crate) fn base(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Its length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}
