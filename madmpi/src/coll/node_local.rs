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
        let f = Forced::from_env().ok()?;
        let forced = match which {
            Which::Barrier => f.barrier.is_some(),
            Which::Bcast => f.bcast.is_some(),
            Which::Reduce => f.reduce.is_some(),
            Which::Allreduce => f.allreduce.is_some(),
        };
        if forced || f.hierarchical.is_some() {
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
        let mut tmp = [0u8; MAX_BYTES];
        let tmp = &mut tmp[..len];
        let is_root = self.rank() == root;
        if is_root {
            // SAFETY: readable at the root (our contract).
            unsafe { pack(buf, tmp) };
        }
        let r = shared::bcast(a, c, root, tmp, &mut shared::watch(self));
        if r.is_ok() && !is_root {
            // SAFETY: writable away from the root (our contract).
            unsafe { unpack(tmp, buf) };
        }
        Some(r)
    }

    /// `MPI_Reduce` (`root: Some`) or `MPI_Allreduce` (`None`) of `count` elements of the
    /// datatype, combined by the operation, from `send` (`None`: in place, the input is `recv`) into `recv` (`None` away from a
    /// reduce's root) node-locally; `None`: declined.
    ///
    /// # Safety
    /// The memories are valid (`send` readable, `recv` writable, and readable when in place)
    /// and untouched by others during the call.
    pub(super) unsafe fn shared_reduce(
        &self,
        send: Option<&Mem>,
        recv: Option<&Mem>,
        root: Option<u32>,
        count: usize,
        (op, dtype): (&Op, &Datatype),
    ) -> Option<Result<()>> {
        let input = send.or(recv)?;
        let len = input.packed_len();
        let elem = usize::try_from(dtype.size()).ok()?;
        if count.checked_mul(elem) != Some(len)
            || recv.is_some_and(|m| m.packed_len() != len)
            || root.is_some_and(|x| x >= self.size() || x == self.rank() && recv.is_none())
            || op.check(dtype).is_err()
        {
            return None; // the message path reports it
        }
        let which = if root.is_some() { Which::Reduce } else { Which::Allreduce };
        let (a, c) = match self.shared_call(which, len)? {
            Ok(x) => x,
            Err(e) => return Some(Err(e)),
        };
        let (mut inp, mut out) = ([0u8; MAX_BYTES], [0u8; MAX_BYTES]);
        let (inp, out) = (&mut inp[..len], &mut out[..len]);
        // SAFETY: the input is readable (our contract).
        unsafe { pack(input, inp) };
        let res = shared::reduce(a, c, root, inp, out, (count, op, dtype), &mut shared::watch(self));
        let gets = root.is_none_or(|x| x == self.rank());
        if let (Ok(()), true, Some(recv)) = (&res, gets, recv) {
            // SAFETY: writable (our contract).
            unsafe { unpack(out, recv) };
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

/// Copies `m`'s packed bytes into `out` (of its packed length).
///
/// # Safety
/// `m`'s memory is readable.
unsafe fn pack(m: &Mem, out: &mut [u8]) {
    match m {
        // SAFETY: readable (our contract), `out.len()` = the packed length.
        Mem::Contiguous((p, _)) => unsafe { std::ptr::copy_nonoverlapping(*p, out.as_mut_ptr(), out.len()) },
        Mem::Scattered { span, blocks, .. } => {
            let mut at = 0;
            for &(off, len) in blocks {
                // SAFETY: each block lies in the span, readable (our contract); the blocks add
                // up to the packed length.
                unsafe { std::ptr::copy_nonoverlapping(span.0.add(off), out[at..].as_mut_ptr(), len) };
                at += len;
            }
        }
    }
}

/// Copies packed `inp` into `m`'s memory.
///
/// # Safety
/// `m`'s memory is writable.
unsafe fn unpack(inp: &[u8], m: &Mem) {
    match m {
        // SAFETY: writable (our contract), `inp.len()` = the packed length.
        Mem::Contiguous((p, _)) => unsafe { std::ptr::copy_nonoverlapping(inp.as_ptr(), *p, inp.len()) },
        Mem::Scattered { span, blocks, .. } => {
            let mut at = 0;
            for &(off, len) in blocks {
                // SAFETY: as in `pack`, writable.
                unsafe { std::ptr::copy_nonoverlapping(inp[at..].as_ptr(), span.0.add(off), len) };
                at += len;
            }
        }
    }
}
