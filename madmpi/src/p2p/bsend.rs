//! Buffered sends (`MPI_Buffer_attach`, `MPI_Bsend`, `MPI_Ibsend`, `MPI_Buffer_detach`): the
//! message is copied into the buffer the user attached and sent from there, so the call returns
//! at once whatever the receiver does. Each message takes its size plus `MPI_BSEND_OVERHEAD`
//! bytes of the buffer (programs size their buffers with that constant) until its send
//! completes; a message that does not fit is an `MPI_ERR_BUFFER` error, as MPI requires.
//!
//! Owns the attached buffer's bookkeeping (one per process, in the runtime's extensions); must
//! not touch nmad's internals.

use super::{Equivalence, Rank};
use crate::abi::MPI_BSEND_OVERHEAD;
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::request::{Mode, RawRequest};
use std::sync::Mutex;

/// An attached buffer: raw memory lent by the user until detach.
struct Attached {
    base: *mut u8,
    size: usize,
    /// Messages in flight: (offset, bytes taken, request), in offset order.
    live: Vec<(usize, usize, RawRequest)>,
}

// SAFETY: the buffer is lent to the process as a whole (MPI semantics); every access goes
// through the pool's mutex.
unsafe impl Send for Attached {}

/// The process's buffered-send pool (kept in the runtime's extensions).
#[derive(Default)]
pub struct Pool(Mutex<Option<Attached>>);

impl crate::comm::Extension for Pool {}

impl Comm {
    /// The process's buffered-send pool (`MPI_Buffer_attach` / `detach`).
    pub fn bsend_pool(&self) -> &Pool {
        self.runtime().extensions().get_or_default()
    }
}

impl Pool {
    /// `MPI_Buffer_attach`.
    ///
    /// # Safety
    /// `base..base+size` must stay valid for reads and writes, and untouched by the caller,
    /// until [`Pool::detach`] returns it.
    pub unsafe fn attach(&self, base: *mut u8, size: usize) -> Result<()> {
        let mut a = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if a.is_some() {
            return Err(Error::buffer("MPI_Buffer_attach: a buffer is already attached"));
        }
        if base.is_null() && size > 0 {
            return Err(Error::buffer("MPI_Buffer_attach: null buffer"));
        }
        *a = Some(Attached { base, size, live: Vec::new() });
        Ok(())
    }

    /// `MPI_Buffer_detach`: waits for the buffered messages to be sent, then gives the buffer
    /// back (`None` if none was attached).
    pub fn detach(&self) -> Option<(*mut u8, usize)> {
        let mut a = self.0.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        for (_, _, r) in a.live.drain(..) {
            let _ = r.wait();
        }
        Some((a.base, a.size))
    }

    /// Copies the `len` bytes `fill` writes into the buffer and starts sending them; `op` names
    /// the call in error messages.
    fn send(
        &self,
        comm: &Comm,
        op: &str,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
        dest: Rank,
        tag: i32,
    ) -> Result<()> {
        super::check_tag(op, tag)?;
        if dest == Rank::ProcNull {
            return Ok(());
        }
        let mut guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let Some(a) = guard.as_mut() else {
            return Err(Error::buffer(format!("{op}: no buffer attached (MPI_Buffer_attach)")));
        };
        a.live.retain(|(_, _, r)| !r.is_complete());
        let need = len + MPI_BSEND_OVERHEAD as usize;
        let Some(at) = first_fit(&a.live, a.size, need) else {
            let used: usize = a.live.iter().map(|l| l.1).sum();
            return Err(Error::buffer(format!(
                "{op}: {len} bytes (+{MPI_BSEND_OVERHEAD} overhead) do not fit in the attached buffer \
                 ({} bytes, {used} in use)",
                a.size
            )));
        };
        // SAFETY: `at + len <= at + need <= size` (first_fit), inside the attached buffer, which
        // no live message overlaps.
        let dst = unsafe { a.base.add(at) };
        // SAFETY: as above: `len` bytes of the attached buffer that nothing else uses now.
        fill(unsafe { std::slice::from_raw_parts_mut(dst, len) });
        // SAFETY: the copy stays valid and unchanged until its request completes: its range is
        // reserved in `live` until then, and detach waits for it.
        let data = unsafe { nmad::Data::from_raw(dst, len) };
        // SAFETY: as above.
        let r = unsafe { RawRequest::isend(comm, data, dest, tag, Mode::Standard) }?;
        let pos = a.live.partition_point(|l| l.0 < at);
        a.live.insert(pos, (at, need, r));
        Ok(())
    }
}

/// The lowest offset where `need` bytes fit between the live ranges (sorted by offset).
fn first_fit(live: &[(usize, usize, RawRequest)], size: usize, need: usize) -> Option<usize> {
    let mut at = 0usize;
    for (off, len, _) in live {
        if off.checked_sub(at)? >= need {
            return Some(at);
        }
        at = off + len;
    }
    (size.checked_sub(at)? >= need).then_some(at)
}

impl Comm {
    /// `MPI_Bsend`: copies the message into the attached buffer and returns.
    pub fn bsend<T: Equivalence>(&self, buf: &[T], dest: Rank, tag: i32) -> Result<()> {
        // SAFETY: `T` has no padding (Equivalence): its memory is initialized bytes.
        let bytes =
            unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), std::mem::size_of_val(buf)) };
        self.bsend_pool().send(self, "MPI_Bsend", bytes.len(), |b| b.copy_from_slice(bytes), dest, tag)
    }

    /// `MPI_Bsend` / `MPI_Ibsend` of the bytes `data` describes (any layout): packs them into
    /// the attached buffer and returns; `op` names the call in error messages.
    ///
    /// # Safety
    /// The memory `data` describes must be valid for reads during the call.
    pub unsafe fn bsend_data(&self, op: &str, data: &nmad::Data, dest: Rank, tag: i32) -> Result<()> {
        let fill = |out: &mut [u8]| {
            // SAFETY: readable by the caller's contract; `out` is exactly `data.len()` bytes.
            let n = unsafe { data.pack(0, out) };
            debug_assert_eq!(n, out.len());
        };
        self.bsend_pool().send(self, op, data.len(), fill, dest, tag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorClass;
    use crate::p2p::{From, Tag};
    use crate::testing::on_all;

    /// Elements of a message: above the eager limit, so its send lasts until it is received.
    const BIG: usize = 40_000;

    #[test]
    fn buffered_sends_return_at_once_and_refuse_what_does_not_fit() {
        on_all(2, |w| {
            if w.rank() == 1 {
                // Receives only after rank 0 finished all its buffered sends.
                let mut go = [0u8; 1];
                w.recv(&mut go, From::Rank(0), Tag::Tag(99)).unwrap();
                for i in 0..3u32 {
                    let mut b = vec![0u32; BIG];
                    w.recv(&mut b, From::Rank(0), Tag::Tag(i as i32)).unwrap();
                    assert!(b.iter().all(|&v| v == i));
                }
                let mut packed = [0u32; 4];
                w.recv(&mut packed, From::Rank(0), Tag::Tag(3)).unwrap();
                assert_eq!(packed, [0, 2, 4, 6]);
                return;
            }
            assert_eq!(w.bsend(&[1u8], Rank::Rank(1), 0).unwrap_err().class(), ErrorClass::Buffer);
            let size = 3 * (4 * BIG + MPI_BSEND_OVERHEAD as usize);
            let mut space = vec![0u8; size];
            // SAFETY: `space` outlives the attachment (detached below) and is not touched.
            unsafe { w.bsend_pool().attach(space.as_mut_ptr(), space.len()) }.unwrap();
            for i in 0..3u32 {
                // Returns although the receiver has not posted anything yet (and these
                // rendezvous messages cannot complete before it does).
                w.bsend(&vec![i; BIG], Rank::Rank(1), i as i32).unwrap();
            }
            let e = w.bsend(&[0u8; 1], Rank::Rank(1), 50).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Buffer, "{e}");
            // SAFETY: no memory (the call fails before reading any).
            let e = unsafe { w.bsend_data("MPI_Ibsend", &nmad::Data::None, Rank::Rank(1), 50) }.unwrap_err();
            assert!(e.message().starts_with("MPI_Ibsend: 0 bytes"), "{e}");
            w.send(&[1u8], Rank::Rank(1), 99).unwrap();
            let (p, n) = w.bsend_pool().detach().unwrap();
            assert_eq!((p, n), (space.as_mut_ptr(), size));
            assert!(w.bsend_pool().detach().is_none());
            // A strided layout is packed into the buffer: every other u32 of 8.
            let mut space = vec![0u8; 16 + MPI_BSEND_OVERHEAD as usize];
            // SAFETY: `space` outlives the attachment (detached below).
            unsafe { w.bsend_pool().attach(space.as_mut_ptr(), space.len()) }.unwrap();
            let src: Vec<u32> = (0..8).collect();
            let layout = std::sync::Arc::new(nmad::Strided { count: 4, block: 4, stride: 8 });
            // SAFETY: the layout stays inside `src`, read during the call only.
            let data = unsafe { nmad::Data::from_layout(src.as_ptr().cast_mut().cast(), layout) };
            // SAFETY: as above.
            unsafe { w.bsend_data("MPI_Bsend", &data, Rank::Rank(1), 3) }.unwrap();
            w.bsend_pool().detach().unwrap();
        });
    }
}
