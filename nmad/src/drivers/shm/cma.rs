//! Cross-memory attach: copying a peer's memory straight into ours with `process_vm_readv` (one
//! copy, no ring), for rendezvous data.
//!
//! It owns nothing; it maps the system's refusals (`EPERM`: ptrace policy such as Yama, `ENOSYS`:
//! seccomp or an old kernel) to `PermissionDenied`/`Unsupported`, on which the core falls back to
//! the pipelined copy through the ring.

use crate::drivers::{Segment, SegmentMut};
use std::io;

/// At most this many iovecs per call (the kernel's UIO_MAXIOV).
const IOV_MAX: usize = libc::UIO_MAXIOV as usize;

/// A position in a list of segments.
struct Cursor<'a, T> {
    segs: &'a [T],
    index: usize,
    offset: usize,
}

impl<T: Copy> Cursor<'_, T> {
    /// Up to IOV_MAX iovecs for what remains.
    fn iovecs(&self, base_len: impl Fn(T) -> (usize, usize)) -> Vec<libc::iovec> {
        let mut v = Vec::new();
        for (i, &s) in self.segs.iter().enumerate().skip(self.index).take(IOV_MAX) {
            let (base, len) = base_len(s);
            let skip = if i == self.index { self.offset } else { 0 };
            if len > skip {
                v.push(libc::iovec { iov_base: (base + skip) as *mut libc::c_void, iov_len: len - skip });
            }
        }
        v
    }

    fn advance(&mut self, mut n: usize, len: impl Fn(T) -> usize) {
        while n > 0 && self.index < self.segs.len() {
            let left = len(self.segs[self.index]) - self.offset;
            if n < left {
                self.offset += n;
                return;
            }
            n -= left;
            self.index += 1;
            self.offset = 0;
        }
    }
}

fn total<T: Copy>(segs: &[T], len: impl Fn(T) -> usize) -> Option<usize> {
    segs.iter().try_fold(0usize, |a, &s| a.checked_add(len(s)))
}

/// Copies `remote` (addresses in process `pid`) into `local`.
///
/// # Safety
/// `local` must be valid for writes. `remote` is checked by the kernel, not trusted.
pub(crate) unsafe fn read(pid: u32, remote: &[Segment], local: &[SegmentMut]) -> io::Result<()> {
    let (want, have) = (total(remote, |s| s.len), total(local, |s| s.len));
    if want.is_none() || want != have {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "remote and local lengths differ"));
    }
    let mut left = want.unwrap_or(0);
    let mut r = Cursor { segs: remote, index: 0, offset: 0 };
    let mut l = Cursor { segs: local, index: 0, offset: 0 };
    while left > 0 {
        let rv = r.iovecs(|s| (s.ptr as usize, s.len));
        let lv = l.iovecs(|s| (s.ptr as usize, s.len));
        // SAFETY: `lv` describes memory the caller guarantees writable; the kernel checks `rv`
        // against the peer's address space. Both vectors outlive the call.
        let n = unsafe {
            libc::process_vm_readv(
                pid as libc::pid_t,
                lv.as_ptr(),
                lv.len() as libc::c_ulong,
                rv.as_ptr(),
                rv.len() as libc::c_ulong,
                0,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            let kind = match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EPERM) => io::ErrorKind::PermissionDenied,
                Some(libc::ENOSYS) => io::ErrorKind::Unsupported,
                Some(libc::ESRCH) => io::ErrorKind::ConnectionReset,
                _ => io::ErrorKind::InvalidInput,
            };
            return Err(io::Error::new(kind, format!("process_vm_readv from pid {pid}: {e}")));
        }
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("process_vm_readv from pid {pid} made no progress ({left} bytes left)"),
            ));
        }
        let n = (n as usize).min(left);
        r.advance(n, |s| s.len);
        l.advance(n, |s| s.len);
        left -= n;
    }
    Ok(())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn reads_scattered_memory_of_this_process_across_many_iovecs() {
        let src: Vec<u8> = (0..300_000u32).map(|i| (i * 7) as u8).collect();
        // 2000 remote pieces (more than IOV_MAX) into 3 local ones.
        let remote: Vec<Segment> =
            src.chunks(150).map(|c| Segment { ptr: c.as_ptr(), len: c.len() }).collect();
        let mut dst = vec![0u8; src.len()];
        let (a, rest) = dst.split_at_mut(1);
        let (b, c) = rest.split_at_mut(100_000);
        let local = [a, b, c].map(|s| SegmentMut { ptr: s.as_mut_ptr(), len: s.len() });
        // SAFETY: `local` covers `dst`, which is writable.
        match unsafe { read(std::process::id(), &remote, &local) } {
            Ok(()) => assert!(dst == src),
            Err(e) if e.kind() == io::ErrorKind::Unsupported => eprintln!("no CMA here: {e}"),
            Err(e) => panic!("{e}"),
        }
        // SAFETY: as above.
        let short = unsafe { read(std::process::id(), &remote, &local[..2]) };
        assert_eq!(short.unwrap_err().kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn a_bad_remote_address_is_an_error_not_a_fallback() {
        let mut dst = [0u8; 16];
        let remote = [Segment { ptr: 8 as *const u8, len: 16 }];
        let local = [SegmentMut { ptr: dst.as_mut_ptr(), len: 16 }];
        // SAFETY: `local` covers `dst`.
        let e = unsafe { read(std::process::id(), &remote, &local) }.unwrap_err();
        assert!(matches!(e.kind(), io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported), "{e}");
    }
}
