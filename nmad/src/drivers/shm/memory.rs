//! The shared segment of a link: an anonymous memory file (memfd), sealed against resizing, mapped
//! by both processes, holding the two rings (connector → acceptor first).
//!
//! A memfd never has a name in the file system: nothing can be left in `/dev/shm` by a crash, and
//! only the processes it is passed to (over the authenticated socket) can map it. Its mode is set
//! to 0600 anyway. The seals forbid shrinking and growing, so the peer cannot truncate the file
//! under our mapping (which would turn our next access into SIGBUS); the attaching side checks
//! them and the size before mapping.
//!
//! It owns the mapping and the [`RingMem`] view of each ring; it does not interpret ring contents.

use super::ring::{CTRL_BYTES, RingMem, Word};
use crate::small_copy::copy;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

const SEALS: libc::c_int = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;

/// Bytes of a segment holding two rings of `cap` data bytes.
pub(crate) fn segment_len(cap: u64) -> usize {
    (2 * (CTRL_BYTES + cap)) as usize
}

/// A shared mapping, unmapped on drop.
pub(crate) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain shared memory; every access goes through atomics or byte copies
// whose synchronization the ring protocol provides.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` is a mapping we own; nothing borrows it once the last Arc is gone.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

fn check(r: libc::c_int, what: &str) -> io::Result<libc::c_int> {
    if r < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("shm segment: {what}: {e}")));
    }
    Ok(r)
}

impl Mapping {
    /// A new zeroed, sealed, mode-0600 segment of `len` bytes, and its fd (to pass to the peer).
    pub(crate) fn create(len: usize) -> io::Result<(Arc<Mapping>, OwnedFd)> {
        // SAFETY: the name is a NUL-terminated literal; a non-negative return is our new fd.
        let fd =
            unsafe { libc::memfd_create(c"nmad-shm".as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
        let fd = check(fd, "memfd_create")?;
        // SAFETY: `fd` is fresh and owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let raw = fd.as_raw_fd();
        // SAFETY: plain fd syscalls on our own descriptor.
        unsafe {
            check(libc::fchmod(raw, 0o600), "fchmod")?;
            check(libc::ftruncate(raw, len as libc::off_t), "ftruncate")?;
            check(libc::fcntl(raw, libc::F_ADD_SEALS, SEALS), "sealing")?;
        }
        Ok((Arc::new(Mapping::map(&fd, len)?), fd))
    }

    /// Maps a segment the peer created, after checking that it is a sealed memory file of exactly
    /// `len` bytes.
    pub(crate) fn attach(fd: &OwnedFd, len: usize) -> Result<Arc<Mapping>, String> {
        let raw = fd.as_raw_fd();
        // SAFETY: an all-zero stat is a valid buffer for fstat to fill.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `st` is a valid stat buffer; `raw` is an fd we own.
        if unsafe { libc::fstat(raw, &mut st) } < 0 {
            return Err(format!("segment fstat: {}", io::Error::last_os_error()));
        }
        if st.st_mode & libc::S_IFMT != libc::S_IFREG || st.st_size as u64 != len as u64 {
            return Err(format!("segment is not a {len}-byte memory file (size {})", st.st_size));
        }
        // SAFETY: F_GET_SEALS takes no argument.
        let seals = unsafe { libc::fcntl(raw, libc::F_GET_SEALS) };
        if seals < 0
            || seals & (libc::F_SEAL_SHRINK | libc::F_SEAL_GROW) != libc::F_SEAL_SHRINK | libc::F_SEAL_GROW
        {
            return Err("segment is not sealed against resizing".into());
        }
        Mapping::map(fd, len).map(Arc::new).map_err(|e| e.to_string())
    }

    fn map(fd: &OwnedFd, len: usize) -> io::Result<Mapping> {
        // SAFETY: a fresh shared mapping of a file we hold; the kernel picks the address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("shm segment: mmap: {e}")));
        }
        Ok(Mapping { ptr: NonNull::new(p.cast()).expect("mmap never returns null on success"), len })
    }
}

/// One ring of a segment: `which` 0 carries connector → acceptor, 1 the other way.
pub(crate) struct ShmRing {
    /// Keeps `base` valid.
    _map: Arc<Mapping>,
    base: *mut u8,
    cap: u64,
}

// SAFETY: `base` points into `map`, which the ring keeps alive; see `Mapping`.
unsafe impl Send for ShmRing {}
// SAFETY: as above.
unsafe impl Sync for ShmRing {}

impl ShmRing {
    pub(crate) fn new(map: &Arc<Mapping>, cap: u64, which: usize) -> ShmRing {
        let offset = which * (CTRL_BYTES + cap) as usize;
        assert!(which < 2 && segment_len(cap) <= map.len, "ring outside its segment");
        // SAFETY: `offset` < map.len (checked above), inside the mapping.
        let base = unsafe { map.ptr.as_ptr().add(offset) };
        ShmRing { _map: map.clone(), base, cap }
    }

    fn word(&self, w: Word) -> &AtomicU64 {
        // SAFETY: Word::offset is < CTRL_BYTES + cap and 8-aligned (the ring starts on a 128-byte
        // boundary of a page-aligned mapping), so the pointer is in bounds and aligned; the
        // mapping lives as long as `self`. The peer writes these words with atomics too (a
        // hostile peer could write them any way: we only ever see some u64 value).
        unsafe { AtomicU64::from_ptr(self.base.add(w.offset(self.cap) as usize).cast()) }
    }

    fn data(&self, off: u64) -> *mut u8 {
        // SAFETY: off < cap: inside this ring's data area.
        unsafe { self.base.add((CTRL_BYTES + off) as usize) }
    }

    /// Splits `len` bytes from `pos` into the (at most two) pieces before and after the wrap.
    fn split(&self, pos: u64, len: usize) -> (u64, usize, usize) {
        let off = pos & (self.cap - 1);
        let first = len.min((self.cap - off) as usize);
        (off, first, len - first)
    }
}

impl RingMem for ShmRing {
    fn cap(&self) -> u64 {
        self.cap
    }

    #[inline]
    fn load(&self, w: Word, o: Ordering) -> u64 {
        self.word(w).load(o)
    }

    #[inline]
    fn store(&self, w: Word, v: u64, o: Ordering) {
        self.word(w).store(v, o)
    }

    #[inline]
    fn write(&self, pos: u64, src: &[u8]) {
        let (off, first, rest) = self.split(pos, src.len());
        // SAFETY: both pieces lie inside the data area (split bounds them by cap); `src` is
        // private memory, so the ranges do not overlap. The ring protocol gives this producer
        // exclusive use of the bytes until it publishes them.
        unsafe {
            copy(src.as_ptr(), self.data(off), first);
            copy(src.as_ptr().add(first), self.data(0), rest);
        }
    }

    #[inline]
    fn read(&self, pos: u64, dst: &mut [u8]) {
        let (off, first, rest) = self.split(pos, dst.len());
        // SAFETY: both pieces lie inside the data area; `dst` is private memory. An honest peer
        // does not write published bytes until we release them; a hostile one can only change
        // which bytes we copy (we treat them as opaque data, never as lengths or offsets).
        unsafe {
            copy(self.data(off), dst.as_mut_ptr(), first);
            copy(self.data(0), dst.as_mut_ptr().add(first), rest);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn mapped(m: &Mapping) -> bool {
        let start = format!("{:x}-", m.ptr.as_ptr() as usize);
        std::fs::read_to_string("/proc/self/maps").unwrap().lines().any(|l| l.starts_with(&start))
    }

    #[test]
    fn a_segment_is_private_sealed_nameless_and_unmapped_when_dropped() {
        let (map, fd) = Mapping::create(4096).unwrap();
        // SAFETY: an all-zero stat is a valid buffer.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: valid buffer, our fd.
        assert_eq!(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) }, 0);
        assert_eq!(st.st_mode & 0o777, 0o600);
        // SAFETY: plain fd syscalls on our own descriptor.
        unsafe {
            assert_eq!(libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS), SEALS);
            assert!(libc::ftruncate(fd.as_raw_fd(), 100) < 0, "cannot shrink");
            assert!(libc::ftruncate(fd.as_raw_fd(), 1 << 20) < 0, "cannot grow");
        }
        let link = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap();
        assert!(link.to_string_lossy().starts_with("/memfd:nmad-shm"), "{link:?}");
        let other = Mapping::attach(&fd, 4096).unwrap();
        assert!(Mapping::attach(&fd, 8192).is_err(), "wrong size");
        assert!(mapped(&map) && mapped(&other));
        let ring = ShmRing::new(&map, 1024, 1);
        ring.write(1020, b"wrapping");
        let mut back = [0u8; 8];
        ShmRing::new(&other, 1024, 1).read(1020, &mut back);
        assert_eq!(&back, b"wrapping", "both mappings share the bytes, wrapping at the end");
        drop(map);
        assert!(mapped(ring._map.as_ref()), "a ring keeps its mapping");
        let m = ring._map.clone();
        drop(ring);
        let probe = Mapping { ptr: m.ptr, len: 0 };
        drop(m);
        assert!(!mapped(&probe), "unmapped with its last user");
        std::mem::forget(probe);
    }

    #[test]
    fn short_and_long_copies_are_exact() {
        let src: Vec<u8> = (1..=40).collect();
        for n in 0..=40 {
            let mut dst = [0u8; 41];
            // SAFETY: both buffers hold at least `n` bytes.
            unsafe { copy(src.as_ptr(), dst.as_mut_ptr(), n) };
            assert_eq!(&dst[..n], &src[..n], "{n} bytes");
            assert!(dst[n..].iter().all(|&b| b == 0), "{n} bytes: nothing beyond");
        }
    }

    #[test]
    fn a_file_that_is_not_a_sealed_memfd_is_refused() {
        let f = std::fs::File::open("/proc/self/status").unwrap();
        assert!(Mapping::attach(&OwnedFd::from(f), 4096).is_err());
    }
}
