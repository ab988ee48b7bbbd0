//! One data access, from the call to the file: the position (explicit, individual or shared
//! pointer), the stream bytes (the buffer itself when it is contiguous and native, else encoded
//! or decoded through the data representation), and the independent reads and writes.
//!
//! A strided independent read sieves: it reads the span its ranges cover, a buffer
//! (`ind_rd_buffer_size`) at a time, and picks its bytes out, unless the holes dominate. A
//! strided write writes its ranges one by one: writing a sieved span back would need every
//! other writer to lock the bytes in its holes. Many pieces go to the kernel in batches
//! (`batch`). Atomic mode locks the span of each access.
//! Collective accesses go to `collective`.

use super::batch::{self, Piece};
use super::datarep;
use super::hints::Switch;
use super::open::{Inner, os_error};
use super::view::View;
use super::{Buffer, Mode, Position, collective};
use crate::comm::Status;
use crate::error::{Error, Result};
use std::os::unix::fs::FileExt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    Read,
    Write,
}

/// What an access moved: stream bytes, and bytes of the memory buffer.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Done {
    pub stream: u64,
    pub memory: u64,
}

/// A sieve reads at most this many times the bytes it needs.
const SIEVE_SPAN_FACTOR: u64 = 8;
/// Ranges this long on average are read one by one: a read call each costs less than reading
/// the holes between them (measured on tmpfs with 4 processes: 2 KiB ranges 1 in 4 read at
/// 12.4 GB/s one by one, 4.3 GB/s sieved).
const SIEVE_BELOW: u64 = 1024;
/// Collective reads whose pieces are this long on average go one by one too: the page cache
/// serves 4 readers at once, and gathering costs more than the calls it saves (16 KiB pieces
/// of 256 MiB: 9.9–10.1 GB/s read directly, 4.4–4.6 GB/s by ROMIO's gathering).
pub(super) const CB_BELOW: u64 = 1024;
/// With `madmpi_io_uring` `enable`, an access of this many pieces goes to the kernel in
/// batches. Not by default: on the page cache a ring loses to one call per piece (Linux 6.18,
/// 4 processes on 2 CPUs, 16 KiB pieces, 256 MiB: tmpfs strided reads 4.3–5.0 GB/s against
/// 10.5–11.6, checkerboard writes 1.45–1.62 against 1.88–1.95; ext4 the same way): the kernel
/// hands buffered requests to its io-wq worker threads, which compete for the CPUs.
const BATCH_FROM: usize = 2;

/// The file ranges of stream bytes `start..start + len`, in order.
pub(super) fn ranges_of(view: &View, start: u64, len: u64) -> Vec<(i64, u64)> {
    let mut out = Vec::new();
    view.ranges(start, len, &mut |p, l| {
        out.push((p, l));
        true
    });
    out
}

/// Reads at `pos` until `buf` is full or the file ends: the bytes read.
pub(super) fn pread_full(inner: &Inner, pos: i64, buf: &mut [u8]) -> Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match inner.file.read_at(&mut buf[got..], (pos as u64) + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(os_error("read", &inner.path, e)),
        }
    }
    Ok(got)
}

pub(super) fn pwrite_all(inner: &Inner, pos: i64, data: &[u8]) -> Result<()> {
    inner.file.write_all_at(data, pos as u64).map_err(|e| os_error("write", &inner.path, e))
}

impl Inner {
    /// Checks what the access mode allows.
    pub(super) fn check_access(&self, at: Position, dir: Dir) -> Result<()> {
        use super::Amode;
        match dir {
            Dir::Read if !self.amode.can_read() => {
                return Err(Error::access("reading a file opened with MPI_MODE_WRONLY"));
            }
            Dir::Write if !self.amode.can_write() => {
                return Err(Error::read_only("writing a file opened with MPI_MODE_RDONLY"));
            }
            _ => {}
        }
        if self.amode.has(Amode::SEQUENTIAL) && matches!(at, Position::At(_) | Position::Individual) {
            return Err(Error::unsupported_operation(
                "a file opened with MPI_MODE_SEQUENTIAL is accessed through its shared pointer only",
            ));
        }
        Ok(())
    }

    /// A blocking access (see `File::read`).
    ///
    /// # Safety
    /// `buf` is valid for `dir` during the call.
    pub(super) unsafe fn access(&self, at: Position, mode: Mode, buf: &Buffer, dir: Dir) -> Result<Status> {
        self.check_access(at, dir)?;
        if mode == Mode::Collective {
            // The file's collectives run in the order they were called: queued ones first.
            self.queue.drain();
        }
        // SAFETY: passed on.
        unsafe { self.access_now(at, mode, buf, dir) }
    }

    /// Where an access of `buf` at `at` starts, in etypes of `view`, the file pointer it uses
    /// moved past it now (MPI moves them when the access starts, also for a nonblocking one);
    /// and its length in stream bytes. `Ordered` is collective.
    pub(super) fn claim(&self, view: &View, at: Position, buf: &Buffer) -> Result<(i64, u64)> {
        let per = view.datarep.stream_size(&buf.datatype)?;
        let len = per.checked_mul(buf.count).ok_or_else(|| Error::count("the access overflows"))?;
        let esize = view.etype_size();
        if !len.is_multiple_of(esize) {
            return Err(Error::io(format!(
                "only whole etypes can be accessed ({len} bytes, etypes of {esize} bytes)"
            )));
        }
        let n = (len / esize) as i64;
        let start = match at {
            Position::At(off) if off < 0 => return Err(Error::arg(format!("negative offset ({off})"))),
            Position::At(off) => off,
            Position::Individual => self.advance(n),
            Position::Shared => self.shared.fetch_add(n)?,
            Position::Ordered => self.shared.ordered(&self.comm, n)?,
        };
        Ok((start, len))
    }

    /// The access itself (on the caller's thread, or on the file's worker with `at` claimed
    /// when it was started).
    ///
    /// # Safety
    /// `buf` is valid for `dir` during the call.
    pub(super) unsafe fn access_now(
        &self,
        at: Position,
        mode: Mode,
        buf: &Buffer,
        dir: Dir,
    ) -> Result<Status> {
        let view = self.view();
        let (start, len) = self.claim(&view, at, buf)?;
        let esize = view.etype_size();
        let start = (start as u64).checked_mul(esize).ok_or_else(|| Error::arg("the offset overflows"))?;
        // SAFETY: the caller vouches for `buf`.
        let done = unsafe {
            match (mode, dir) {
                (Mode::Collective, Dir::Write) => collective::write(self, &view, start, buf),
                (Mode::Collective, Dir::Read) => collective::read(self, &view, start, buf),
                (Mode::Independent, Dir::Write) => self.write_independent(&view, start, buf),
                (Mode::Independent, Dir::Read) => self.read_independent(&view, start, buf),
            }
        }?;
        if at == Position::Individual && done.stream < len {
            // A short read moves the pointer as far as it read.
            self.retreat(((len - done.stream) / esize) as i64);
        }
        Ok(Status { source: None, tag: -1, bytes: done.memory })
    }

    /// Holds what atomic mode needs over `ranges`: this process's threads ordered, the span
    /// locked against the other processes.
    fn atomic_span(&self, ranges: &[(i64, u64)], write: bool) -> Result<Option<AtomicSpan<'_>>> {
        if !self.atomic() || ranges.is_empty() {
            return Ok(None);
        }
        let (lo, hi) = span(ranges);
        let local = self.local.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let lock = super::lock::lock(self.fd(), lo, hi - lo, write)?;
        Ok(Some(AtomicSpan { _lock: lock, _local: local }))
    }

    /// # Safety
    /// `buf` is readable during the call.
    pub(super) unsafe fn write_independent(&self, view: &View, start: u64, buf: &Buffer) -> Result<Done> {
        // SAFETY: the caller vouches for the buffer for the call.
        let data = unsafe { datarep::stream_of(&view.datarep, buf) }?;
        let data: &[u8] = &data;
        let ranges = ranges_of(view, start, data.len() as u64);
        let _atomic = self.atomic_span(&ranges, true)?;
        self.write_ranges(&ranges, data, self.hints().io_uring)?;
        Ok(Done { stream: data.len() as u64, memory: buf.datatype.size() * buf.count })
    }

    /// # Safety
    /// `buf` is writable during the call.
    pub(super) unsafe fn read_independent(&self, view: &View, start: u64, buf: &Buffer) -> Result<Done> {
        let per = view.datarep.stream_size(&buf.datatype)?;
        let len = per * buf.count;
        let ranges = ranges_of(view, start, len);
        let _atomic = self.atomic_span(&ranges, false)?;
        if let Some((p, n)) = datarep::contiguous(&view.datarep, buf) {
            // SAFETY: the caller vouches for the buffer: writable, `n` bytes from `p`.
            let out = unsafe { std::slice::from_raw_parts_mut(p, n) };
            let got = self.read_ranges(&ranges, out)?;
            return Ok(Done { stream: got as u64, memory: got as u64 });
        }
        let mut stream = vec![0u8; len as usize];
        let got = self.read_ranges(&ranges, &mut stream)?;
        // SAFETY: the caller vouches for the buffer.
        let memory = unsafe { view.datarep.decode(&stream[..got], buf) }?;
        Ok(Done { stream: got as u64, memory })
    }

    /// Reads `ranges` into `out` (their bytes in order), sieving when it pays: the bytes read
    /// before the end of the file.
    pub(super) fn read_ranges(&self, ranges: &[(i64, u64)], out: &mut [u8]) -> Result<usize> {
        let hints = self.hints();
        let (lo, hi) = span(ranges);
        let data = out.len() as u64;
        let sieve = ranges.len() > 1
            && match hints.ds_read {
                Switch::Enable => true,
                Switch::Disable => false,
                Switch::Automatic => {
                    data / (ranges.len() as u64) < SIEVE_BELOW
                        && ((hi - lo) as u64) <= data.saturating_mul(SIEVE_SPAN_FACTOR)
                }
            };
        if sieve {
            return sieve_read(self, ranges, out, hints.ind_rd_buffer_size.max(1));
        }
        if let Some(pieces) = self.batched(hints.io_uring, ranges, out.as_mut_ptr(), Dir::Read) {
            // Each piece read in full, or short at the end of the file (or by a signal:
            // finished by ordinary calls).
            let mut at = 0usize;
            for p in &pieces {
                let mut got = checked(p, "read", self)?;
                if got < p.len as usize {
                    let rest = &mut out[at + got..at + p.len as usize];
                    got += pread_full(self, (p.pos + got as u64) as i64, rest)?;
                }
                at += got;
                if got < p.len as usize {
                    break;
                }
            }
            return Ok(at);
        }
        let mut at = 0usize;
        for &(pos, len) in ranges {
            let got = pread_full(self, pos, &mut out[at..at + len as usize])?;
            at += got;
            if got < len as usize {
                break;
            }
        }
        Ok(at)
    }

    /// Writes `data` to `ranges` (its bytes in order); `ring`: the `madmpi_io_uring` hint.
    fn write_ranges(&self, ranges: &[(i64, u64)], data: &[u8], ring: Switch) -> Result<()> {
        // The kernel only reads through a write's pointer.
        if let Some(pieces) = self.batched(ring, ranges, data.as_ptr().cast_mut(), Dir::Write) {
            let mut at = 0usize;
            for p in &pieces {
                let done = checked(p, "write", self)?;
                if done < p.len as usize {
                    pwrite_all(self, (p.pos + done as u64) as i64, &data[at + done..at + p.len as usize])?;
                }
                at += p.len as usize;
            }
            return Ok(());
        }
        let mut at = 0usize;
        for &(pos, len) in ranges {
            pwrite_all(self, pos, &data[at..at + len as usize])?;
            at += len as usize;
        }
        Ok(())
    }

    /// `ranges` read into or written from the memory at `base` (their bytes in order) through
    /// the file's batch, if the `madmpi_io_uring` hint (`ring`) and the ranges call for one and
    /// the batch ran: the pieces with the kernel's answers. `None`: make the calls one by one
    /// (also after a failure of the ring itself, which gives the ring up).
    fn batched(&self, ring: Switch, ranges: &[(i64, u64)], base: *mut u8, dir: Dir) -> Option<Vec<Piece>> {
        let wanted = ring == Switch::Enable && ranges.len() >= BATCH_FROM;
        if !wanted || ranges.iter().any(|&(_, len)| len > batch::PIECE_MAX) {
            return None;
        }
        let mut at = 0usize;
        let mut pieces: Vec<Piece> = ranges
            .iter()
            .map(|&(pos, len)| {
                // The ranges' bytes lie in order in the caller's memory from `base`.
                let ptr = base.wrapping_add(at);
                at += len as usize;
                Piece { pos: pos as u64, ptr, len: len as u32, result: 0 }
            })
            .collect();
        // SAFETY: the pieces cover the caller's buffer (`out` or `data`, borrowed by our caller
        // for the call, mutably for reads) piece by piece without overlap; nothing else touches
        // it until `run` returns, after the kernel's last completion.
        match unsafe { self.batch.run(self.fd(), &mut pieces, dir == Dir::Write) } {
            Ok(true) => Some(pieces),
            Ok(false) => None,
            Err(e) => {
                log::warn!("io: io_uring failed ({e}): one call per piece from now on");
                None
            }
        }
    }
}

/// A batched piece's bytes moved, or its error.
fn checked(p: &Piece, what: &str, inner: &Inner) -> Result<usize> {
    if p.result < 0 {
        return Err(os_error(what, &inner.path, std::io::Error::from_raw_os_error(-p.result)));
    }
    Ok((p.result as usize).min(p.len as usize))
}

struct AtomicSpan<'a> {
    _lock: super::lock::RangeLock<'a>,
    _local: std::sync::MutexGuard<'a, ()>,
}

/// The file span `ranges` cover (they are in file order).
pub(super) fn span(ranges: &[(i64, u64)]) -> (i64, i64) {
    match (ranges.first(), ranges.last()) {
        (Some(&(lo, _)), Some(&(p, l))) => (lo, p + l as i64),
        _ => (0, 0),
    }
}

/// Reads the span of `ranges` a window of `window` bytes at a time and copies their bytes to
/// `out`; the bytes before the end of the file.
fn sieve_read(inner: &Inner, ranges: &[(i64, u64)], out: &mut [u8], window: usize) -> Result<usize> {
    // No bigger than the span: a short access does not fault in the whole window's pages.
    let (lo, hi) = span(ranges);
    let window = window.min((hi - lo) as usize).max(1);
    let mut buf = vec![0u8; window];
    let (mut r, mut skip) = (0usize, 0u64); // the next range, and bytes of it already copied
    let mut at = 0usize;
    while r < ranges.len() {
        let (pos, len) = ranges[r];
        let w0 = pos + skip as i64;
        // A range longer than the window is read into place directly.
        if len - skip >= window as u64 {
            let n = (len - skip) as usize;
            let got = pread_full(inner, w0, &mut out[at..at + n])?;
            at += got;
            if got < n {
                return Ok(at);
            }
            (r, skip) = (r + 1, 0);
            continue;
        }
        let (_, hi) = span(&ranges[r..]);
        let wlen = ((hi - w0) as usize).min(window);
        let got = pread_full(inner, w0, &mut buf[..wlen])?;
        let wend = w0 + wlen as i64;
        while r < ranges.len() && ranges[r].0 + (skip as i64) < wend {
            let (pos, len) = ranges[r];
            let from = pos + skip as i64;
            let n = ((pos + len as i64).min(wend) - from) as usize;
            let off = (from - w0) as usize;
            let avail = got.saturating_sub(off).min(n);
            out[at..at + avail].copy_from_slice(&buf[off..off + avail]);
            at += avail;
            if avail < n {
                return Ok(at); // the end of the file
            }
            if skip + n as u64 == len {
                (r, skip) = (r + 1, 0);
            } else {
                skip += n as u64;
                break;
            }
        }
    }
    Ok(at)
}
