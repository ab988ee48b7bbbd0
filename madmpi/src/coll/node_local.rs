//! Where a blocking barrier, broadcast, reduce or allreduce meets the node-local path
//! ([`shared`](super::shared)): the choice every member makes alike (the call's packed size,
//! the algorithms forced, a trace; then whether the communicator has an area), and the packing
//! of the caller's memory around the call — the express calls pass contiguous bytes, the C
//! library's general path (`Planned::run`) the memory `raw` bound, derived types included.
//!
//! Owns that glue; the area, its setup and the calls' steps are `shared`'s.

use super::bound::Reducer;
use super::choice::{self, Forced};
use super::raw::Mem;
use super::shared::{self, Area};
use crate::comm::Comm;
use crate::datatype::Datatype;
use crate::error::Result;
use crate::op::Op;

/// Bytes per member a call carries at most (packed).
pub(crate) use super::shared::MAX_BYTES;

/// The collectives the node-local path runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Which {
    Barrier,
    Bcast,
    Reduce,
    Allreduce,
}

/// A blocking collective the C library's general path may run node-locally (`Planned::run`):
/// the memory is the call's, as `raw` bound it.
pub(super) enum SharedCall {
    Barrier,
    Bcast {
        buf: Mem,
        root: u32,
    },
    /// `recv: None` away from the root; `send: None`: in place (the input is `recv`).
    Reduce {
        send: Option<Mem>,
        recv: Option<Mem>,
        root: u32,
        count: usize,
    },
    Allreduce {
        send: Option<Mem>,
        recv: Mem,
        count: usize,
    },
}

impl Comm {
    /// The area and the number of this call if `which` of `bytes` (packed, per member) runs
    /// node-locally; `None`: the message path runs it; `Some(Err)`: the setup failed (a member
    /// failed during it).
    fn shared_call(&self, which: Which, bytes: usize) -> Option<Result<(&Area, u64)>> {
        if bytes > MAX_BYTES || self.is_inter() || choice::tracing() {
            return None;
        }
        let forced = if Forced::nothing_forced() {
            Some(false)
        } else {
            Forced::peek(|f| {
                f.hierarchical.is_some()
                    || match which {
                        Which::Barrier => f.barrier.is_some(),
                        Which::Bcast => f.bcast.is_some(),
                        Which::Reduce => f.reduce.is_some(),
                        Which::Allreduce => f.allreduce.is_some(),
                    }
            })
        };
        if forced != Some(false) {
            return None;
        }
        super::shared::call(self)
    }

    /// `MPI_Barrier` node-locally; `None`: declined.
    pub(super) fn shared_barrier(&self) -> Option<Result<()>> {
        Some(
            self.shared_call(Which::Barrier, 0)?
                .and_then(|(a, c)| shared::barrier(a, c, &mut shared::watch(self))),
        )
    }

    /// `MPI_Bcast` of `buf` (bound by `raw`) from `root` node-locally; `None`: declined.
    ///
    /// # Safety
    /// `buf`'s memory is valid (readable at the root, writable elsewhere) and untouched by
    /// others during the call.
    pub(super) unsafe fn shared_bcast(&self, buf: &Mem, root: u32) -> Option<Result<()>> {
        let len = buf.packed_len();
        if root >= self.size() {
            return None; // the message path reports it
        }
        let (a, c) = match self.shared_call(Which::Bcast, len)? {
            Ok(x) => x,
            Err(e) => return Some(Err(e)),
        };
        let is_root = self.rank() == root;
        let mut tmp = Packed::default();
        // SAFETY: readable at the root, writable elsewhere (our contract).
        let bytes = unsafe { tmp.of(buf, is_root) };
        let r = shared::bcast(a, c, root, bytes, &mut shared::watch(self));
        if r.is_ok() && !is_root {
            // SAFETY: writable away from the root (our contract).
            unsafe { tmp.unpack_into(buf) };
        }
        Some(r)
    }

    /// `MPI_Reduce` (`root: Some`) or `MPI_Allreduce` (`None`) of `count` elements of the
    /// datatype, combined by the operation, from `send` (`None`: in place, the input is `recv`)
    /// into `recv` (`None` away from a reduce's root) node-locally; `None`: declined.
    ///
    /// # Safety
    /// The memories are valid (`send` readable, `recv` writable, and readable when in place)
    /// and untouched by others during the call, `send` apart from `recv`.
    pub(super) unsafe fn shared_reduce(
        &self,
        send: Option<&Mem>,
        recv: Option<&Mem>,
        root: Option<u32>,
        count: usize,
        (op, dtype): (&Op, &Datatype),
    ) -> Option<Result<()>> {
        let len = send.or(recv)?.packed_len();
        let elem = usize::try_from(dtype.size()).ok()?;
        let gets = root.is_none_or(|x| x == self.rank());
        if count.checked_mul(elem) != Some(len)
            || recv.is_some_and(|m| m.packed_len() != len)
            || root.is_some_and(|x| x >= self.size())
            || gets && recv.is_none()
        {
            return None; // the message path reports it
        }
        let combine = op.prepared(dtype).ok()?;
        let which = if root.is_some() { Which::Reduce } else { Which::Allreduce };
        let (a, c) = match self.shared_call(which, len)? {
            Ok(x) => x,
            Err(e) => return Some(Err(e)),
        };
        let (mut inp, mut out) = (Packed::default(), Packed::default());
        // SAFETY: `send` is readable (our contract).
        let input = send.map(|m| &*unsafe { inp.of(m, true) });
        let output = match recv {
            // SAFETY: writable, and readable when in place (our contract), apart from `send`.
            Some(m) if gets => unsafe { out.of(m, send.is_none()) },
            _ => &mut [],
        };
        let fold = |i: &[u8], o: &mut [u8]| combine.reduce(i, o, count);
        let res = shared::reduce(a, c, root, input, output, &fold, &mut shared::watch(self));
        if let (Ok(()), true, Some(recv)) = (&res, gets, recv) {
            // SAFETY: writable (our contract).
            unsafe { out.unpack_into(recv) };
        }
        Some(res)
    }

    /// Runs `call` node-locally (the C library's general path, `Planned::run`); `None`:
    /// declined.
    ///
    /// # Safety
    /// As the matching `shared_*` function.
    pub(super) unsafe fn run_shared(&self, call: &SharedCall, r: Option<&Reducer>) -> Option<Result<()>> {
        match call {
            SharedCall::Barrier => self.shared_barrier(),
            // SAFETY: our contract.
            SharedCall::Bcast { buf, root } => unsafe { self.shared_bcast(buf, *root) },
            // SAFETY: our contract.
            SharedCall::Reduce { send, recv, root, count } => unsafe {
                self.shared_reduce(
                    send.as_ref(),
                    recv.as_ref(),
                    Some(*root),
                    *count,
                    r.map(|r| (&r.op, &r.dtype))?,
                )
            },
            // SAFETY: our contract.
            SharedCall::Allreduce { send, recv, count } => unsafe {
                self.shared_reduce(send.as_ref(), Some(recv), None, *count, r.map(|r| (&r.op, &r.dtype))?)
            },
        }
    }
}

/// A call's view of the caller's memory as packed bytes: the memory itself when it is
/// contiguous, else a packed copy here (unpacked back by [`Packed::unpack_into`]).
#[derive(Default)]
struct Packed {
    /// The packed copy of scattered memory (none for contiguous memory: nothing allocated).
    tmp: Vec<u8>,
}

impl Packed {
    /// `m`'s packed bytes (at most [`MAX_BYTES`]), with its content when `read`.
    ///
    /// # Safety
    /// `m`'s memory is valid, readable when `read`, writable if the caller writes the bytes,
    /// and no other reference to it lives as long as the bytes.
    unsafe fn of(&mut self, m: &Mem, read: bool) -> &mut [u8] {
        let len = m.packed_len();
        assert!(len <= MAX_BYTES, "{len} bytes for the node-local path");
        match m {
            // SAFETY: valid for `len` bytes, not otherwise referenced (our contract).
            Mem::Contiguous((p, _)) if len > 0 => unsafe { std::slice::from_raw_parts_mut(*p, len) },
            Mem::Contiguous(_) => &mut [],
            Mem::Scattered { span, blocks, .. } => {
                self.tmp = vec![0; len];
                if read {
                    // SAFETY: the blocks lie in the span, readable (our contract), and add up
                    // to `len`, the copy's length.
                    unsafe { copy_blocks(span.0, blocks, self.tmp.as_mut_ptr(), true) };
                }
                &mut self.tmp
            }
        }
    }

    /// Copies the packed bytes back into `m`'s blocks, if they were copied out of it.
    ///
    /// # Safety
    /// `m` is the memory [`Packed::of`] viewed, writable.
    unsafe fn unpack_into(&self, m: &Mem) {
        let Mem::Scattered { span, blocks, packed } = m else { return };
        if self.tmp.len() != *packed {
            return; // not copied out of it
        }
        // SAFETY: as in `of`, the span writable; `tmp` holds the blocks' `packed` bytes.
        unsafe { copy_blocks(span.0, blocks, self.tmp.as_ptr().cast_mut(), false) };
    }
}

/// Copies the blocks `(offset, length)` of the memory at `span` into consecutive bytes at
/// `packed` (`to_packed`), or back.
///
/// # Safety
/// Each block lies in readable (or, back, writable) memory from `span`; `packed` holds the
/// blocks' total length, writable when `to_packed`; the two do not overlap.
unsafe fn copy_blocks(span: *mut u8, blocks: &[(usize, usize)], packed: *mut u8, to_packed: bool) {
    let mut off = 0;
    for &(o, l) in blocks {
        // SAFETY: within the block and within `packed` (our contract).
        let (user, flat) = unsafe { (span.add(o), packed.add(off)) };
        let (from, to) = if to_packed { (user.cast_const(), flat) } else { (flat.cast_const(), user) };
        // SAFETY: `l` bytes readable at `from`, writable at `to`, apart (our contract).
        unsafe { std::ptr::copy_nonoverlapping(from, to, l) };
        off += l;
    }
}
