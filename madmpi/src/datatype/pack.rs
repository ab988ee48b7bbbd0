//! `MPI_Pack`, `MPI_Unpack` and `MPI_Pack_size`: block-by-block copies along the type's layout.
//!
//! The packed format is the native one (the bytes in type-map order, no header), so a message
//! packed here can be received as `MPI_PACKED` and the other way round. The caller answers for
//! the user buffer (see the `# Safety` sections); this file only copies along the layout.

use super::Datatype;
use super::error::{Checked, ErrorKind, Result, TypeError};
use nmad::Layout;

impl Datatype {
    /// Bytes needed to pack `count` elements (`MPI_Pack_size`).
    pub fn pack_size(&self, count: i64) -> Result<usize> {
        if count < 0 {
            return Err(TypeError::count(format!("negative count ({count})")));
        }
        let size = usize::try_from(self.size()).map_err(|_| TypeError::overflow())?;
        usize::try_from(count).map_err(|_| TypeError::overflow())?.mul_(size)
    }

    /// Packs `count` elements at `inbuf` into `outbuf` from `*position`, then advances
    /// `*position` (`MPI_Pack`). Nothing is written if `outbuf` is too small.
    ///
    /// # Safety
    /// For every block `(off, len)` of [`Datatype::layout`]`(count)`, `inbuf + off .. + len` must
    /// be readable, not written concurrently, and must not overlap `outbuf`.
    pub unsafe fn pack(
        &self,
        inbuf: *const u8,
        count: i64,
        outbuf: &mut [u8],
        position: &mut usize,
    ) -> Result<()> {
        let layout = self.layout(count)?;
        let n = layout.size();
        let at = *position;
        if at > outbuf.len() || outbuf.len() - at < n {
            return Err(TypeError::new(
                ErrorKind::Truncate,
                format!("pack: {n} bytes do not fit at position {at} of a {}-byte buffer", outbuf.len()),
            ));
        }
        let mut out = &mut outbuf[at..at + n];
        layout.blocks(0, &mut |off, len| {
            let (dst, rest) = std::mem::take(&mut out).split_at_mut(len);
            // SAFETY: the caller vouches that the block is readable and disjoint from `outbuf`;
            // `dst` has exactly `len` bytes (the blocks add up to `n`).
            unsafe { std::ptr::copy_nonoverlapping(inbuf.wrapping_offset(off), dst.as_mut_ptr(), len) };
            out = rest;
            true
        });
        *position = at + n;
        Ok(())
    }

    /// Unpacks `count` elements from `inbuf` at `*position` into `outbuf`, then advances
    /// `*position` (`MPI_Unpack`). Nothing is written if `inbuf` is too short.
    ///
    /// # Safety
    /// For every block `(off, len)` of [`Datatype::layout`]`(count)`, `outbuf + off .. + len`
    /// must be writable, not accessed concurrently, and must not overlap `inbuf`.
    pub unsafe fn unpack(
        &self,
        inbuf: &[u8],
        position: &mut usize,
        outbuf: *mut u8,
        count: i64,
    ) -> Result<()> {
        let layout = self.layout(count)?;
        let n = layout.size();
        let at = *position;
        if at > inbuf.len() || inbuf.len() - at < n {
            return Err(TypeError::new(
                ErrorKind::Truncate,
                format!("unpack: {n} bytes wanted at position {at} of a {}-byte buffer", inbuf.len()),
            ));
        }
        let mut src = &inbuf[at..at + n];
        layout.blocks(0, &mut |off, len| {
            let (s, rest) = src.split_at(len);
            // SAFETY: the caller vouches that the block is writable and disjoint from `inbuf`;
            // `s` has exactly `len` bytes.
            unsafe { std::ptr::copy_nonoverlapping(s.as_ptr(), outbuf.wrapping_offset(off), len) };
            src = rest;
            true
        });
        *position = at + n;
        Ok(())
    }
}
