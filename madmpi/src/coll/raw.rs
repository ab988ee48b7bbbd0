//! Collectives on raw memory, for the C library: a buffer is an address, a count and a committed
//! [`Datatype`] (C's `void *buf, int count, MPI_Datatype`), not a typed slice, and requests are
//! [`RawRequest`]s (the caller promises what the borrow checker cannot).
//!
//! The algorithms and the engine move contiguous byte ranges of *packed* elements. A contiguous
//! datatype (every predefined one, and derived ones without holes) is bound directly: its memory
//! is its packed form. A non-contiguous datatype is packed and unpacked **by the schedule
//! itself**: the algorithm's schedule is built over two packed temporaries, then wrapped:
//!
//! - a first round copies the blocks of the user's input memory (and of the output memory when
//!   it is also an input: in place, the root of a broadcast) into the temporaries;
//! - a last round, after every other, copies the packed result back to the blocks of the user's
//!   output memory.
//!
//! So the unpack runs when the collective completes, whoever completes it (a waiting thread or
//! the background progress source), before its request is signalled: nonblocking calls need no
//! completion action in the request, and the temporaries live (and die) with the schedule. The
//! copies are one local operation per merged block of the layout (`count ×` blocks of one
//! element at most).
//!
//! Reductions use the datatype as given: a builtin operation works on the packed elements (it
//! accepts a derived type whose basic elements are all one predefined type), a user operation
//! gets packed elements too, with the datatype; the C binding's wrapper of a user function
//! unpacks them to the type's memory layout when the type is not contiguous.
//!
//! Owns the binding of raw memory to schedules; argument checks are the caller's, except those
//! `api` also makes (root, operation defined on the datatype).

use super::choice::{self, Forced};
use super::engine::{Bind, Exec, Handle, Reducer};
use super::schedule::{Local, RECV, Range, Round, SEND, Schedule};
use super::{Op, algo};
use crate::comm::Comm;
use crate::datatype::Datatype;
use crate::error::{Error, Result};
use crate::request::RawRequest;
use nmad::Layout;

/// `count` elements of the committed datatype `dtype` at `base` (which may be any address,
/// `MPI_BOTTOM` included, when the type map addresses valid memory from it).
#[derive(Clone, Debug)]
pub struct RawBuf {
    pub base: *mut u8,
    pub count: usize,
    pub dtype: Datatype,
}

/// How a buffer is bound to a schedule.
enum Mem {
    /// The packed bytes are the memory `(address, length)`.
    Contiguous((*mut u8, usize)),
    /// The memory spans `span`; its merged blocks `(offset in the span, length)` in packed
    /// order add up to `packed` bytes.
    Scattered { span: (*mut u8, usize), blocks: Vec<(usize, usize)>, packed: usize },
}

impl Mem {
    fn of(b: &RawBuf) -> Result<Mem> {
        let count = i64::try_from(b.count).map_err(|_| Error::count("count too large"))?;
        let packed = b.dtype.pack_size(count).map_err(Error::from)?;
        if let Some(off) = b.dtype.contiguous_offset() {
            let at = if packed == 0 { b.base } else { b.base.wrapping_offset(off as isize) };
            return Ok(Mem::Contiguous((at, packed)));
        }
        let layout = b.dtype.layout(count).map_err(Error::from)?;
        let mut raw = Vec::new();
        layout.blocks(0, &mut |off, len| {
            if len > 0 {
                raw.push((off, len));
            }
            true
        });
        let Some(lo) = raw.iter().map(|b| b.0).min() else {
            return Ok(Mem::Contiguous((b.base, 0)));
        };
        let hi = raw.iter().map(|&(o, l)| o + l as isize).max().unwrap_or(lo);
        let blocks = raw.into_iter().map(|(o, l)| ((o - lo) as usize, l)).collect();
        Ok(Mem::Scattered { span: (b.base.wrapping_offset(lo), (hi - lo) as usize), blocks, packed })
    }

    fn packed_len(&self) -> usize {
        match self {
            Mem::Contiguous((_, len)) => *len,
            Mem::Scattered { packed, .. } => *packed,
        }
    }

    fn bind(&self) -> (*mut u8, usize) {
        match self {
            Mem::Contiguous(m) => *m,
            Mem::Scattered { span, .. } => *span,
        }
    }
}

const NONE: (*mut u8, usize) = (std::ptr::null_mut(), 0);

/// Wraps `s` (built over packed `SEND` and `RECV`) for scattered memories: the packed buffers
/// become temporaries, filled by a first round (`send`; `recv` when `recv_in`) and copied out
/// by a last round (`recv` when `recv_out`).
fn wrap(mut s: Schedule, send: Option<&Mem>, recv: Option<&Mem>, recv_in: bool, recv_out: bool) -> Schedule {
    let send_blocks = match send {
        Some(Mem::Scattered { blocks, packed, .. }) => Some((blocks, *packed)),
        _ => None,
    };
    let recv_blocks = match recv {
        Some(Mem::Scattered { blocks, packed, .. }) => Some((blocks, *packed)),
        _ => None,
    };
    if send_blocks.is_none() && recv_blocks.is_none() {
        return s;
    }
    let ps = send_blocks.map(|(_, n)| s.tmp(n));
    let pr = recv_blocks.map(|(_, n)| s.tmp(n));
    let remap = |r: &mut Range| match r.buf {
        SEND if r.len > 0 => r.buf = ps.unwrap_or(SEND),
        RECV if r.len > 0 => r.buf = pr.unwrap_or(RECV),
        _ => {}
    };
    for round in &mut s.rounds {
        for l in &mut round.local {
            match l {
                Local::Copy { from, to } => {
                    remap(from);
                    remap(to);
                }
                Local::Reduce { from, into, .. } => {
                    remap(from);
                    remap(into);
                }
            }
        }
        for x in &mut round.xfers {
            let (super::schedule::Xfer::Send { data, .. } | super::schedule::Xfer::Recv { data, .. }) = x;
            remap(data);
        }
    }
    // The blocks of a user buffer `user` and the packed temporary `tmp`, as copies.
    let copies = |blocks: &[(usize, usize)], user, tmp, into_tmp: bool| {
        let mut at = 0;
        blocks
            .iter()
            .map(|&(off, len)| {
                let (u, t) = (Range::new(user, off, len), Range::new(tmp, at, len));
                at += len;
                if into_tmp { Local::Copy { from: u, to: t } } else { Local::Copy { from: t, to: u } }
            })
            .collect::<Vec<_>>()
    };
    let mut first = Vec::new();
    if let (Some((b, _)), Some(t)) = (send_blocks, ps) {
        first.extend(copies(b, SEND, t, true));
    }
    if let (Some((b, _)), Some(t), true) = (recv_blocks, pr, recv_in) {
        first.extend(copies(b, RECV, t, true));
    }
    let mut rounds = Vec::with_capacity(s.rounds.len() + 2);
    let shift = usize::from(!first.is_empty());
    if shift == 1 {
        rounds.push(Round { deps: Vec::new(), local: first, xfers: Vec::new() });
    }
    for mut r in std::mem::take(&mut s.rounds) {
        r.deps.iter_mut().for_each(|d| *d += shift);
        if r.deps.is_empty() && shift == 1 {
            r.deps.push(0);
        }
        rounds.push(r);
    }
    if let (Some((b, _)), Some(t), true) = (recv_blocks, pr, recv_out) {
        let deps = (0..rounds.len()).collect();
        rounds.push(Round { deps, local: copies(b, RECV, t, false), xfers: Vec::new() });
    }
    s.rounds = rounds;
    s
}

/// Starts `s` on `comm` over `send` and `recv`.
///
/// # Safety
/// The memory of both bindings must stay valid and untouched by others until the request
/// completes.
unsafe fn launch(
    comm: &Comm,
    s: Schedule,
    send: (*mut u8, usize),
    recv: (*mut u8, usize),
    r: Option<Reducer>,
) -> Result<RawRequest> {
    let seq = comm.next_coll_seq();
    // SAFETY: forwarded contract.
    let exec = unsafe { Exec::start(comm, seq, s, Bind { send, recv }, r) }?;
    Ok(RawRequest::collective(comm, Handle(exec)))
}

fn check_root(comm: &Comm, call: &str, root: u32) -> Result<()> {
    if root >= comm.size() {
        return Err(Error::root(format!(
            "{call}: root {root} is outside the communicator (size {})",
            comm.size()
        )));
    }
    Ok(())
}

fn reducer(call: &str, op: &Op, dtype: &Datatype) -> Result<Reducer> {
    op.check(dtype).map_err(|e| Error::new(e.class(), format!("{call}: {}", e.message())))?;
    Ok(Reducer { op: op.clone(), dtype: dtype.clone() })
}

fn elem_size(dtype: &Datatype) -> Result<usize> {
    usize::try_from(dtype.size()).map_err(|_| Error::count("datatype too large"))
}

/// `MPI_Ibarrier`.
pub fn ibarrier(comm: &Comm) -> Result<RawRequest> {
    let a = Forced::from_env()?.barrier.unwrap_or(choice::Barrier::Dissemination);
    let s = algo::barrier(comm.size(), comm.rank(), a);
    // SAFETY: no memory is involved.
    unsafe { launch(comm, s, NONE, NONE, None) }
}

/// `MPI_Ibcast` of `buf` from `root`.
///
/// # Safety
/// `buf`'s memory must stay valid (readable at the root, writable elsewhere) and untouched by
/// others until the request completes.
pub unsafe fn ibcast(comm: &Comm, buf: &RawBuf, root: u32) -> Result<RawRequest> {
    check_root(comm, "MPI_Bcast", root)?;
    let m = Mem::of(buf)?;
    let len = m.packed_len();
    let a = choice::bcast(Forced::from_env()?.bcast, comm.size(), len);
    let s = algo::bcast(comm.size(), comm.rank(), root, len, a);
    let is_root = comm.rank() == root;
    let s = wrap(s, None, Some(&m), is_root, !is_root);
    // SAFETY: the caller's contract.
    unsafe { launch(comm, s, NONE, m.bind(), None) }
}

/// `MPI_Ireduce`: `send` (`None`: in place, the input is `recv`, at the root only) of every
/// rank combined by `op` in rank order into `recv` at `root` (`recv` is ignored elsewhere).
/// The root's `recv` must hold as many packed bytes as the input.
///
/// # Safety
/// The memories must stay valid and untouched by others until the request completes.
pub unsafe fn ireduce(
    comm: &Comm,
    send: Option<&RawBuf>,
    recv: Option<&RawBuf>,
    op: &Op,
    root: u32,
) -> Result<RawRequest> {
    check_root(comm, "MPI_Reduce", root)?;
    let is_root = comm.rank() == root;
    let recv = if is_root {
        Some(recv.ok_or_else(|| Error::buffer("MPI_Reduce: the root has no output buffer"))?)
    } else {
        None
    };
    let input = match (send, recv) {
        (Some(s), _) => s,
        (None, Some(r)) => r,
        (None, None) => return Err(Error::buffer("MPI_Reduce: MPI_IN_PLACE is only for the root")),
    };
    let r = reducer("MPI_Reduce", op, &input.dtype)?;
    let sm = send.map(Mem::of).transpose()?;
    let rm = recv.map(Mem::of).transpose()?;
    let count = input.count;
    let elem = elem_size(&input.dtype)?;
    if let Some(rm) = &rm
        && rm.packed_len() != count * elem
    {
        return Err(Error::count(format!(
            "MPI_Reduce: the root's output holds {} bytes for {} bytes of input",
            rm.packed_len(),
            count * elem
        )));
    }
    let a = choice::reduce(Forced::from_env()?.reduce, op.is_commutative());
    let from = if send.is_none() { RECV } else { SEND };
    let s = algo::reduce(comm.size(), comm.rank(), root, from, count, elem, a);
    let s = wrap(s, sm.as_ref(), rm.as_ref(), send.is_none(), true);
    let sb = sm.as_ref().map_or(NONE, Mem::bind);
    let rb = rm.as_ref().map_or(NONE, Mem::bind);
    // SAFETY: the caller's contract.
    unsafe { launch(comm, s, sb, rb, Some(r)) }
}

/// `MPI_Iallreduce`: `send` (`None`: in place, the input is `recv`) of every rank combined by
/// `op` in rank order into every `recv` (as many packed bytes as the input).
///
/// # Safety
/// The memories must stay valid and untouched by others until the request completes.
pub unsafe fn iallreduce(comm: &Comm, send: Option<&RawBuf>, recv: &RawBuf, op: &Op) -> Result<RawRequest> {
    let input = send.unwrap_or(recv);
    let r = reducer("MPI_Allreduce", op, &input.dtype)?;
    let sm = send.map(Mem::of).transpose()?;
    let rm = Mem::of(recv)?;
    let count = input.count;
    let elem = elem_size(&input.dtype)?;
    if rm.packed_len() != count * elem {
        return Err(Error::count(format!(
            "MPI_Allreduce: {} bytes of output for {} bytes of input",
            rm.packed_len(),
            count * elem
        )));
    }
    let c = op.is_commutative();
    let a = choice::allreduce(Forced::from_env()?.allreduce, comm.size(), count, count * elem, c);
    let from = if send.is_none() { RECV } else { SEND };
    let s = algo::allreduce(comm.size(), comm.rank(), from, count, elem, a, c);
    let s = wrap(s, sm.as_ref(), Some(&rm), send.is_none(), true);
    let sb = sm.as_ref().map_or(NONE, Mem::bind);
    // SAFETY: the caller's contract.
    unsafe { launch(comm, s, sb, rm.bind(), Some(r)) }
}
