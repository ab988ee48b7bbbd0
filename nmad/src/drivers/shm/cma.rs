//! Cross-memory attach: copying between a peer's memory and ours with `process_vm_readv` /
//! `process_vm_writev` (one copy, no ring), for rendezvous data and exposed memory.
//!
//! It owns nothing; it maps the system's refusals (`EPERM`: ptrace policy such as Yama, `ENOSYS`:
//! seccomp or an old kernel) to `PermissionDenied`/`Unsupported`, on which the core falls back to
//! the pipelined copy through the ring. The remote pieces come from a checked key (`memkey`);
//! the kernel checks their addresses against the peer's address space.

use std::io;

/// At most this many iovecs per call (the kernel's UIO_MAXIOV).
const IOV_MAX: usize = libc::UIO_MAXIOV as usize;

/// Which way the bytes go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Way {
    /// Peer → us (`process_vm_readv`).
    Read,
    /// Us → peer (`process_vm_writev`).
    Write,
}

/// A position in a list of `(address, length)` pieces.
struct Cursor<'a> {
    pieces: &'a [(usize, usize)],
    index: usize,
    offset: usize,
}

impl Cursor<'_> {
    /// Up to IOV_MAX iovecs for what remains.
    fn iovecs(&self) -> Vec<libc::iovec> {
        let mut v = Vec::new();
        for (i, &(base, len)) in self.pieces.iter().enumerate().skip(self.index).take(IOV_MAX) {
            let skip = if i == self.index { self.offset } else { 0 };
            if len > skip {
                v.push(libc::iovec { iov_base: (base + skip) as *mut libc::c_void, iov_len: len - skip });
            }
        }
        v
    }

    fn advance(&mut self, mut n: usize) {
        while n > 0 && self.index < self.pieces.len() {
            let left = self.pieces[self.index].1 - self.offset;
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

fn total(pieces: &[(usize, usize)]) -> Option<usize> {
    pieces.iter().try_fold(0usize, |a, &(_, l)| a.checked_add(l))
}

/// Copies between `remote` (addresses in process `pid`) and `local`, `way` saying which way.
///
/// # Safety
/// `local` must be valid for writes (`Read`) or reads (`Write`). `remote` is checked by the
/// kernel, not trusted.
pub(crate) unsafe fn copy(
    pid: u32,
    way: Way,
    remote: &[(usize, usize)],
    local: &[(usize, usize)],
) -> io::Result<()> {
    let (want, have) = (total(remote), total(local));
    if want.is_none() || want != have {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "remote and local lengths differ"));
    }
    let call = if way == Way::Read { "process_vm_readv" } else { "process_vm_writev" };
    let mut left = want.unwrap_or(0);
    let mut r = Cursor { pieces: remote, index: 0, offset: 0 };
    let mut l = Cursor { pieces: local, index: 0, offset: 0 };
    while left > 0 {
        let (rv, lv) = (r.iovecs(), l.iovecs());
        let (lp, ln, rp, rn) =
            (lv.as_ptr(), lv.len() as libc::c_ulong, rv.as_ptr(), rv.len() as libc::c_ulong);
        // SAFETY: `lv` describes memory the caller guarantees writable (Read) or readable
        // (Write); the kernel checks `rv` against the peer's address space. Both vectors outlive
        // the call.
        let n = unsafe {
            match way {
                Way::Read => libc::process_vm_readv(pid as libc::pid_t, lp, ln, rp, rn, 0),
                Way::Write => libc::process_vm_writev(pid as libc::pid_t, lp, ln, rp, rn, 0),
            }
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
            return Err(io::Error::new(kind, format!("{call} with pid {pid}: {e}")));
        }
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{call} with pid {pid} made no progress ({left} bytes left)"),
            ));
        }
        let n = (n as usize).min(left);
        r.advance(n);
        l.advance(n);
        left -= n;
    }
    Ok(())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn pieces(b: &[u8], size: usize) -> Vec<(usize, usize)> {
        b.chunks(size).map(|c| (c.as_ptr() as usize, c.len())).collect()
    }

    #[test]
    fn copies_scattered_memory_of_this_process_both_ways_across_many_iovecs() {
        let src: Vec<u8> = (0..300_000u32).map(|i| (i * 7) as u8).collect();
        let mut dst = vec![0u8; src.len()];
        // 2000 remote pieces (more than IOV_MAX) against 3 local ones.
        let remote = pieces(&src, 150);
        let local = [(dst.as_mut_ptr() as usize, 1), (dst.as_mut_ptr() as usize + 1, 100_000)];
        let local = [local[0], local[1], (dst.as_mut_ptr() as usize + 100_001, src.len() - 100_001)];
        // SAFETY: `local` covers `dst`, which is writable.
        match unsafe { copy(std::process::id(), Way::Read, &remote, &local) } {
            Ok(()) => assert!(dst == src),
            Err(e) if e.kind() == io::ErrorKind::Unsupported => return eprintln!("no CMA here: {e}"),
            Err(e) => panic!("{e}"),
        }
        let mut back = vec![0u8; src.len()];
        let remote = [(back.as_mut_ptr() as usize, back.len())];
        // SAFETY: `dst` is readable; `back` is the "remote" memory, writable.
        unsafe { copy(std::process::id(), Way::Write, &remote, &pieces(&dst, 999)) }.unwrap();
        assert!(back == src);
        // SAFETY: as above.
        let short = unsafe { copy(std::process::id(), Way::Read, &remote, &local[..2]) };
        assert_eq!(short.unwrap_err().kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn a_bad_remote_address_is_an_error_not_a_fallback() {
        let mut dst = [0u8; 16];
        let local = [(dst.as_mut_ptr() as usize, 16)];
        for way in [Way::Read, Way::Write] {
            // SAFETY: `local` covers `dst`.
            let e = unsafe { copy(std::process::id(), way, &[(8, 16)], &local) }.unwrap_err();
            assert!(matches!(e.kind(), io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported), "{e}");
        }
    }
}
