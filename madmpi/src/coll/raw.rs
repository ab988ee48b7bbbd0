//! Collectives on raw memory, for the C library: a buffer is an address, a count and a committed
//! [`Datatype`] (C's `void *buf, int count, MPI_Datatype`), not a typed slice. Each function
//! checks and plans one collective (algorithm chosen, schedule built and bound to the memory)
//! and returns it as a [`Planned`]: started once for a blocking or nonblocking call, or made
//! persistent (`MPI_Bcast_init`...) and started many times; the caller promises what the
//! borrow checker cannot when it starts it.
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
//! The unrooted collectives serve intercommunicators too, through `raw_inter` (the rooted ones
//! take `inter::Root` there, for `MPI_ROOT` and `MPI_PROC_NULL`).
//!
//! Owns the binding of raw memory to schedules; argument checks are the caller's, except those
//! `api` also makes (root, operation defined on the datatype).

use super::bound::{Bind, Reducer};
use super::choice::{self, Forced};
use super::node_local::{MAX_BYTES as SHARED_BYTES, SharedCall};
use super::plan;
pub use super::planned::{Persistent, Planned};
use super::schedule::{BufId, Local, RECV, Range, Round, SEND, Schedule};
use super::state::PlanKey;
use super::{Op, algo, api_gather};
use crate::comm::Comm;
use crate::datatype::Datatype;
use crate::error::{Error, Result};
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
pub(super) enum Mem {
    /// The packed bytes are the memory `(address, length)`.
    Contiguous((*mut u8, usize)),
    /// The memory spans `span`; its merged blocks `(offset in the span, length)` in packed
    /// order add up to `packed` bytes.
    Scattered { span: (*mut u8, usize), blocks: Vec<(usize, usize)>, packed: usize },
}

impl Mem {
    /// Scattered memory: [`wrap`] adds packing temporaries to the schedule.
    pub(super) fn is_scattered(&self) -> bool {
        matches!(self, Mem::Scattered { .. })
    }

    pub(super) fn of(b: &RawBuf) -> Result<Mem> {
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

    pub(super) fn packed_len(&self) -> usize {
        match self {
            Mem::Contiguous((_, len)) => *len,
            Mem::Scattered { packed, .. } => *packed,
        }
    }

    pub(super) fn bind(&self) -> (*mut u8, usize) {
        match self {
            Mem::Contiguous(m) => *m,
            Mem::Scattered { span, .. } => *span,
        }
    }
}

pub(super) const NONE: (*mut u8, usize) = (std::ptr::null_mut(), 0);

/// Wraps `s` (built over packed `SEND` and `RECV`) for scattered memories: the packed buffers
/// become temporaries, filled by a first round (`send`; `recv` when `recv_in`) and copied out
/// by a last round (`recv` when `recv_out`).
pub(super) fn wrap(
    mut s: Schedule,
    send: Option<&Mem>,
    recv: Option<&Mem>,
    recv_in: bool,
    recv_out: bool,
) -> Schedule {
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

/// `s` on `comm` over `send` and `recv`, planned (started by [`Planned::start`]).
pub(super) fn launch(
    comm: &Comm,
    s: Schedule,
    send: (*mut u8, usize),
    recv: (*mut u8, usize),
    r: Option<Reducer>,
) -> Result<Planned> {
    Ok(Planned::new(comm, std::sync::Arc::new(s), Bind { send, recv }, r))
}

/// `plan`'s schedule, kept per communicator under `key` unless a buffer is `scattered` (its
/// packing, part of the schedule, depends on the buffer's layout, which the key does not hold).
fn kept(
    comm: &Comm,
    scattered: bool,
    key: PlanKey,
    plan: impl FnOnce() -> Result<Schedule>,
) -> Result<std::sync::Arc<Schedule>> {
    if scattered { plan().map(std::sync::Arc::new) } else { comm.planned(key, plan) }
}

fn check_root(comm: &Comm, call: &str, root: u32) -> Result<()> {
    if comm.is_inter() {
        return Err(Error::comm(format!(
            "{call}: an intercommunicator's root is an inter::Root (coll::raw_inter)"
        )));
    }
    if root >= comm.size() {
        return Err(Error::root(format!(
            "{call}: root {root} is outside the communicator (size {})",
            comm.size()
        )));
    }
    Ok(())
}

pub(super) fn reducer(call: &str, op: &Op, dtype: &Datatype) -> Result<Reducer> {
    op.check(dtype).map_err(|e| Error::new(e.class(), format!("{call}: {}", e.message())))?;
    Ok(Reducer { op: op.clone(), dtype: dtype.clone() })
}

/// A reduction's count and datatype in basic elements: a builtin operation on a derived type
/// whose elements are all one predefined type works on that type's packed elements, so every
/// rank plans the same schedule whatever type it passed (MPI makes only the type signatures
/// agree: one rank's 4 × `MPI_INT` is another's 1 × a contiguous type of 4 ints, and an
/// algorithm that splits the vector by elements must split both alike).
fn in_elements(op: &Op, count: usize, dtype: &Datatype) -> (usize, Datatype) {
    if op.as_builtin().is_some()
        && dtype.as_predefined().is_none()
        && let Ok(Some(p)) = crate::op::element(dtype)
    {
        let basic = Datatype::predefined(p);
        let (size, unit) = (dtype.size(), basic.size());
        if unit > 0 && size % unit == 0 {
            return (count * (size / unit) as usize, basic);
        }
    }
    (count, dtype.clone())
}

pub(super) fn elem_size(dtype: &Datatype) -> Result<usize> {
    usize::try_from(dtype.size()).map_err(|_| Error::count("datatype too large"))
}

/// `MPI_Ibarrier`.
pub fn barrier(comm: &Comm) -> Result<Planned> {
    if comm.is_inter() {
        return super::raw_inter::barrier(comm);
    }
    let f = Forced::from_env()?;
    let key = PlanKey::of("barrier", f);
    let s = comm.planned(key, || Ok(plan::barrier(&comm.coll_site(&f)?, &f)))?;
    Ok(Planned::new(comm, s, Bind { send: NONE, recv: NONE }, None).with_shared(SharedCall::Barrier))
}

/// `MPI_Ibcast` of `buf` from `root`.
///
pub fn bcast(comm: &Comm, buf: &RawBuf, root: u32) -> Result<Planned> {
    check_root(comm, "MPI_Bcast", root)?;
    let m = Mem::of(buf)?;
    let len = m.packed_len();
    let f = Forced::from_env()?;
    let is_root = comm.rank() == root;
    let plan =
        || Ok(wrap(plan::bcast(&comm.coll_site(&f)?, &f, root, len), None, Some(&m), is_root, !is_root));
    let s =
        kept(comm, m.is_scattered(), PlanKey { root: root as usize, len, ..PlanKey::of("bcast", f) }, plan)?;
    let p = Planned::new(comm, s, Bind { send: NONE, recv: m.bind() }, None);
    Ok(if len <= SHARED_BYTES { p.with_shared(SharedCall::Bcast { buf: m, root }) } else { p })
}

/// `MPI_Ireduce`: `send` (`None`: in place, the input is `recv`, at the root only) of every
/// rank combined by `op` in rank order into `recv` at `root` (`recv` is ignored elsewhere).
/// The root's `recv` must hold as many packed bytes as the input.
///
pub fn reduce(
    comm: &Comm,
    send: Option<&RawBuf>,
    recv: Option<&RawBuf>,
    op: &Op,
    root: u32,
) -> Result<Planned> {
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
    let (count, dtype) = in_elements(op, input.count, &input.dtype);
    let r = reducer("MPI_Reduce", op, &dtype)?;
    let sm = send.map(Mem::of).transpose()?;
    let rm = recv.map(Mem::of).transpose()?;
    let elem = elem_size(&dtype)?;
    if let Some(rm) = &rm
        && rm.packed_len() != count * elem
    {
        return Err(Error::count(format!(
            "MPI_Reduce: the root's output holds {} bytes for {} bytes of input",
            rm.packed_len(),
            count * elem
        )));
    }
    let f = Forced::from_env()?;
    let from = if send.is_none() { RECV } else { SEND };
    let plan = || {
        let s = plan::reduce(&comm.coll_site(&f)?, &f, root, from, count, elem, op.reorderable());
        Ok(wrap(s, sm.as_ref(), rm.as_ref(), send.is_none(), true))
    };
    let key = PlanKey {
        root: root as usize,
        count,
        elem,
        reorderable: op.reorderable(),
        in_place: send.is_none(),
        ..PlanKey::of("reduce", f)
    };
    let scattered = rm.as_ref().is_some_and(Mem::is_scattered) || sm.as_ref().is_some_and(Mem::is_scattered);
    let s = kept(comm, scattered, key, plan)?;
    let sb = sm.as_ref().map_or(NONE, Mem::bind);
    let rb = rm.as_ref().map_or(NONE, Mem::bind);
    let p = Planned::new(comm, s, Bind { send: sb, recv: rb }, Some(r));
    Ok(if count * elem <= SHARED_BYTES {
        p.with_shared(SharedCall::Reduce { send: sm, recv: rm, root, count })
    } else {
        p
    })
}

/// `MPI_Iallreduce`: `send` (`None`: in place, the input is `recv`) of every rank combined by
/// `op` in rank order into every `recv` (as many packed bytes as the input).
///
pub fn allreduce(comm: &Comm, send: Option<&RawBuf>, recv: &RawBuf, op: &Op) -> Result<Planned> {
    if comm.is_inter() {
        return super::raw_inter::allreduce(comm, send, recv, op);
    }
    let input = send.unwrap_or(recv);
    let (count, dtype) = in_elements(op, input.count, &input.dtype);
    let r = reducer("MPI_Allreduce", op, &dtype)?;
    let sm = send.map(Mem::of).transpose()?;
    let rm = Mem::of(recv)?;
    let elem = elem_size(&dtype)?;
    if rm.packed_len() != count * elem {
        return Err(Error::count(format!(
            "MPI_Allreduce: {} bytes of output for {} bytes of input",
            rm.packed_len(),
            count * elem
        )));
    }
    let f = Forced::from_env()?;
    let from = if send.is_none() { RECV } else { SEND };
    let plan = || {
        let s = plan::allreduce(&comm.coll_site(&f)?, &f, from, count, elem, op.reorderable());
        Ok(wrap(s, sm.as_ref(), Some(&rm), send.is_none(), true))
    };
    let key = PlanKey {
        count,
        elem,
        reorderable: op.reorderable(),
        in_place: send.is_none(),
        ..PlanKey::of("allreduce", f)
    };
    let s = kept(comm, rm.is_scattered() || sm.as_ref().is_some_and(Mem::is_scattered), key, plan)?;
    let sb = sm.as_ref().map_or(NONE, Mem::bind);
    let p = Planned::new(comm, s, Bind { send: sb, recv: rm.bind() }, Some(r));
    Ok(if count * elem <= SHARED_BYTES {
        p.with_shared(SharedCall::Allreduce { send: sm, recv: rm, count })
    } else {
        p
    })
}

// ---------------------------------------------------------------------- gather family

/// A `v` buffer (`MPI_Gatherv` and co.): `counts[i]` elements of the committed `dtype` at
/// `base + displs[i] × extent` for each rank i.
#[derive(Clone, Debug)]
pub struct RawVBuf<'a> {
    pub base: *mut u8,
    pub counts: &'a [usize],
    pub displs: &'a [isize],
    pub dtype: Datatype,
}

impl RawVBuf<'_> {
    /// `n` consecutive blocks of `count` elements (the buffer of `MPI_Gather` and co.).
    pub(super) fn uniform(
        b: &RawBuf,
        n: u32,
        f: impl FnOnce(&RawVBuf<'_>) -> Result<(Mem, Vec<Range>)>,
    ) -> Result<(Mem, Vec<Range>)> {
        let counts = vec![b.count; n as usize];
        let displs = (0..n as usize)
            .map(|i| isize::try_from(i * b.count).map_err(|_| Error::count("count too large")))
            .collect::<Result<Vec<_>>>()?;
        f(&RawVBuf { base: b.base, counts: &counts, displs: &displs, dtype: b.dtype.clone() })
    }

    /// The binding of the buffer and each block's range in the bound memory (contiguous type)
    /// or the packed temporary (otherwise) of schedule buffer `buf`.
    pub(super) fn mem(&self, call: &str, buf: BufId) -> Result<(Mem, Vec<Range>)> {
        let n = self.counts.len();
        if self.displs.len() != n {
            return Err(Error::arg(format!("{call}: {n} counts and {} displacements", self.displs.len())));
        }
        let size = elem_size(&self.dtype)?;
        let extent = isize::try_from(self.dtype.extent()).map_err(|_| Error::count("extent too large"))?;
        let overflow = || Error::arg(format!("{call}: a block's address overflows"));
        let mut ranges = Vec::with_capacity(n);
        if let Some(off) = self.dtype.contiguous_offset() {
            let off = off as isize;
            let mut spans = Vec::with_capacity(n);
            for (&c, &d) in self.counts.iter().zip(self.displs) {
                let len = c.checked_mul(size).filter(|&l| isize::try_from(l).is_ok()).ok_or_else(overflow)?;
                let at = d.checked_mul(extent).and_then(|x| x.checked_add(off)).ok_or_else(overflow)?;
                at.checked_add(len as isize).ok_or_else(overflow)?;
                spans.push((at, len));
            }
            let used = spans.iter().filter(|s| s.1 > 0);
            let Some(lo) = used.clone().map(|s| s.0).min() else {
                return Ok((Mem::Contiguous((self.base, 0)), vec![Range::new(buf, 0, 0); n]));
            };
            let hi = used.map(|s| s.0 + s.1 as isize).max().unwrap_or(lo);
            ranges.extend(
                spans
                    .iter()
                    .map(|&(at, len)| Range::new(buf, if len > 0 { (at - lo) as usize } else { 0 }, len)),
            );
            return Ok((Mem::Contiguous((self.base.wrapping_offset(lo), (hi - lo) as usize)), ranges));
        }
        let mut raw = Vec::new();
        let mut at = 0usize;
        for (&c, &d) in self.counts.iter().zip(self.displs) {
            let count = i64::try_from(c).map_err(|_| Error::count("count too large"))?;
            let layout = self.dtype.layout(count).map_err(Error::from)?;
            let shift = d.checked_mul(extent).ok_or_else(overflow)?;
            layout.blocks(0, &mut |o, l| {
                if l > 0 {
                    raw.push((o + shift, l));
                }
                true
            });
            let len = c.checked_mul(size).ok_or_else(overflow)?;
            ranges.push(Range::new(buf, if len > 0 { at } else { 0 }, len));
            at += len;
        }
        let Some(lo) = raw.iter().map(|b| b.0).min() else {
            return Ok((Mem::Contiguous((self.base, 0)), vec![Range::new(buf, 0, 0); n]));
        };
        let hi = raw.iter().map(|&(o, l)| o + l as isize).max().unwrap_or(lo);
        let blocks = raw.into_iter().map(|(o, l)| ((o - lo) as usize, l)).collect();
        let span = (self.base.wrapping_offset(lo), (hi - lo) as usize);
        Ok((Mem::Scattered { span, blocks, packed: at }, ranges))
    }
}

pub(super) fn bytes_mismatch(call: &str, what: &str, got: usize, want: usize) -> Error {
    Error::count(format!("{call}: {what} holds {got} bytes, {want} expected (type signatures differ)"))
}

/// Wraps and binds a schedule.
pub(super) fn start(
    comm: &Comm,
    s: Schedule,
    sm: Option<&Mem>,
    rm: Option<&Mem>,
    recv_in: bool,
    r: Option<Reducer>,
) -> Result<Planned> {
    let s = wrap(s, sm, rm, recv_in, true);
    let sb = sm.map_or(NONE, Mem::bind);
    let rb = rm.map_or(NONE, Mem::bind);
    launch(comm, s, sb, rb, r)
}

/// `MPI_Igather`: every rank's `send` to the root's `recv` (`recv.count` elements per rank, in
/// rank order; ignored elsewhere). `send` `None`: in place at the root, its block already in
/// its slot.
///
pub fn gather(comm: &Comm, send: Option<&RawBuf>, recv: Option<&RawBuf>, root: u32) -> Result<Planned> {
    const CALL: &str = "MPI_Gather";
    check_root(comm, CALL, root)?;
    let (n, me) = (comm.size(), comm.rank());
    let sm = send.map(Mem::of).transpose()?;
    let (rm, mine, b) = if me == root {
        let recv = recv.ok_or_else(|| Error::buffer(format!("{CALL}: the root has no output buffer")))?;
        let (rm, blocks) = RawVBuf::uniform(recv, n, |v| v.mem(CALL, RECV))?;
        let b = blocks[0].len;
        let mine = match &sm {
            Some(sm) if sm.packed_len() != b => {
                return Err(bytes_mismatch(CALL, "the root's input", sm.packed_len(), b));
            }
            Some(_) => Range::new(SEND, 0, b),
            None => blocks[root as usize],
        };
        (Some(rm), mine, b)
    } else {
        let sm =
            sm.as_ref().ok_or_else(|| Error::buffer(format!("{CALL}: MPI_IN_PLACE is only for the root")))?;
        let b = sm.packed_len();
        (None, Range::new(SEND, 0, b), b)
    };
    let s = api_gather::gather_schedule(n, me, root, mine, b, choice::gather(Forced::from_env()?.gather, b));
    start(comm, s, sm.as_ref(), rm.as_ref(), send.is_none(), None)
}

/// `MPI_Igatherv`: every rank's `send` to the root's `recv` (rank i's block as
/// `recv.counts[i]` elements at `recv.displs[i]`; ignored elsewhere). `send` `None`: in place
/// at the root.
///
pub fn gatherv(comm: &Comm, send: Option<&RawBuf>, recv: Option<&RawVBuf<'_>>, root: u32) -> Result<Planned> {
    const CALL: &str = "MPI_Gatherv";
    check_root(comm, CALL, root)?;
    let (n, me) = (comm.size(), comm.rank());
    let sm = send.map(Mem::of).transpose()?;
    let (rm, mine, blocks) = if me == root {
        let recv = recv.ok_or_else(|| Error::buffer(format!("{CALL}: the root has no output buffer")))?;
        if recv.counts.len() != n as usize {
            return Err(Error::arg(format!("{CALL}: {} counts for {n} ranks", recv.counts.len())));
        }
        let (rm, blocks) = recv.mem(CALL, RECV)?;
        let own = blocks[root as usize];
        let mine = match &sm {
            Some(sm) if sm.packed_len() != own.len => {
                return Err(bytes_mismatch(CALL, "the root's input", sm.packed_len(), own.len));
            }
            Some(_) => Range::new(SEND, 0, own.len),
            None => own,
        };
        (Some(rm), mine, blocks)
    } else {
        let sm =
            sm.as_ref().ok_or_else(|| Error::buffer(format!("{CALL}: MPI_IN_PLACE is only for the root")))?;
        (None, Range::new(SEND, 0, sm.packed_len()), vec![Range::EMPTY; n as usize])
    };
    let mut s = Schedule::new();
    algo::gather::linear(&mut s, n, me, root, mine, &blocks);
    start(comm, s, sm.as_ref(), rm.as_ref(), send.is_none(), None)
}

/// `MPI_Iscatter`: block i of the root's `send` (`send.count` elements per rank; ignored
/// elsewhere) to rank i's `recv`. `recv` `None`: in place at the root (its block stays).
///
pub fn scatter(comm: &Comm, send: Option<&RawBuf>, recv: Option<&RawBuf>, root: u32) -> Result<Planned> {
    const CALL: &str = "MPI_Scatter";
    check_root(comm, CALL, root)?;
    let (n, me) = (comm.size(), comm.rank());
    let rm = recv.map(Mem::of).transpose()?;
    let (sm, b) = if me == root {
        let send = send.ok_or_else(|| Error::buffer(format!("{CALL}: the root has no input buffer")))?;
        let (sm, blocks) = RawVBuf::uniform(send, n, |v| v.mem(CALL, SEND))?;
        let b = blocks[0].len;
        if let Some(rm) = rm.as_ref().filter(|rm| rm.packed_len() != b) {
            return Err(bytes_mismatch(CALL, "the root's output", rm.packed_len(), b));
        }
        (Some(sm), b)
    } else {
        let rm =
            rm.as_ref().ok_or_else(|| Error::buffer(format!("{CALL}: MPI_IN_PLACE is only for the root")))?;
        (None, rm.packed_len())
    };
    let out = rm.as_ref().map(|_| Range::new(RECV, 0, b));
    let a = choice::gather(Forced::from_env()?.scatter, b);
    let s = api_gather::scatter_schedule(n, me, root, out, b, a);
    start(comm, s, sm.as_ref(), rm.as_ref(), false, None)
}

/// `MPI_Iscatterv`: block i of the root's `send` (`send.counts[i]` elements at
/// `send.displs[i]`; ignored elsewhere) to rank i's `recv`. `recv` `None`: in place at the root.
///
pub fn scatterv(
    comm: &Comm,
    send: Option<&RawVBuf<'_>>,
    recv: Option<&RawBuf>,
    root: u32,
) -> Result<Planned> {
    const CALL: &str = "MPI_Scatterv";
    check_root(comm, CALL, root)?;
    let (n, me) = (comm.size(), comm.rank());
    let rm = recv.map(Mem::of).transpose()?;
    let (sm, blocks) = if me == root {
        let send = send.ok_or_else(|| Error::buffer(format!("{CALL}: the root has no input buffer")))?;
        if send.counts.len() != n as usize {
            return Err(Error::arg(format!("{CALL}: {} counts for {n} ranks", send.counts.len())));
        }
        let (sm, blocks) = send.mem(CALL, SEND)?;
        let own = blocks[root as usize].len;
        if let Some(rm) = rm.as_ref().filter(|rm| rm.packed_len() != own) {
            return Err(bytes_mismatch(CALL, "the root's output", rm.packed_len(), own));
        }
        (Some(sm), blocks)
    } else {
        if rm.is_none() {
            return Err(Error::buffer(format!("{CALL}: MPI_IN_PLACE is only for the root")));
        }
        (None, vec![Range::EMPTY; n as usize])
    };
    let out = rm.as_ref().map(|m| Range::new(RECV, 0, m.packed_len()));
    let mut s = Schedule::new();
    algo::scatter::linear(&mut s, n, me, root, out, &blocks);
    start(comm, s, sm.as_ref(), rm.as_ref(), false, None)
}

/// `MPI_Iallgather`: every rank's `send` to every `recv` (`recv.count` elements per rank, in
/// rank order). `send` `None`: in place, this rank's block already in its slot.
///
pub fn allgather(comm: &Comm, send: Option<&RawBuf>, recv: &RawBuf) -> Result<Planned> {
    if comm.is_inter() {
        return super::raw_inter::allgather(comm, send, recv);
    }
    const CALL: &str = "MPI_Allgather";
    let (n, me) = (comm.size(), comm.rank());
    let sm = send.map(Mem::of).transpose()?;
    let (rm, blocks) = RawVBuf::uniform(recv, n, |v| v.mem(CALL, RECV))?;
    let b = blocks[0].len;
    let mine = match &sm {
        Some(sm) if sm.packed_len() != b => {
            return Err(bytes_mismatch(CALL, "the input", sm.packed_len(), b));
        }
        Some(_) => Range::new(SEND, 0, b),
        None => blocks[me as usize],
    };
    let a = choice::allgather(Forced::from_env()?.allgather, n, n as usize * b);
    let s = api_gather::allgather_schedule(n, me, mine, b, a);
    start(comm, s, sm.as_ref(), Some(&rm), send.is_none(), None)
}

/// `MPI_Iallgatherv`: every rank's `send` to every `recv` (rank i's block as `recv.counts[i]`
/// elements at `recv.displs[i]`). `send` `None`: in place.
///
pub fn allgatherv(comm: &Comm, send: Option<&RawBuf>, recv: &RawVBuf<'_>) -> Result<Planned> {
    if comm.is_inter() {
        return super::raw_inter::allgatherv(comm, send, recv);
    }
    const CALL: &str = "MPI_Allgatherv";
    let (n, me) = (comm.size(), comm.rank());
    if recv.counts.len() != n as usize {
        return Err(Error::arg(format!("{CALL}: {} counts for {n} ranks", recv.counts.len())));
    }
    let sm = send.map(Mem::of).transpose()?;
    let (rm, blocks) = recv.mem(CALL, RECV)?;
    let own = blocks[me as usize];
    let mine = match &sm {
        Some(sm) if sm.packed_len() != own.len => {
            return Err(bytes_mismatch(CALL, "the input", sm.packed_len(), own.len));
        }
        Some(_) => Range::new(SEND, 0, own.len),
        None => own,
    };
    let s = api_gather::allgatherv_schedule(
        n,
        me,
        mine,
        &blocks,
        choice::allgatherv(Forced::from_env()?.allgatherv),
    );
    start(comm, s, sm.as_ref(), Some(&rm), send.is_none(), None)
}

/// `MPI_Ialltoall`: block j of rank i's `send` to block i of rank j's `recv` (`count` elements
/// per rank each). `send` `None`: in place, `recv` is the input too.
///
pub fn alltoall(comm: &Comm, send: Option<&RawBuf>, recv: &RawBuf) -> Result<Planned> {
    if comm.is_inter() {
        return super::raw_inter::alltoall(comm, send, recv);
    }
    const CALL: &str = "MPI_Alltoall";
    let (n, me) = (comm.size(), comm.rank());
    let (rm, blocks) = RawVBuf::uniform(recv, n, |v| v.mem(CALL, RECV))?;
    let b = blocks[0].len;
    let sm = match send {
        Some(s) => {
            let (sm, sb) = RawVBuf::uniform(s, n, |v| v.mem(CALL, SEND))?;
            if sb[0].len != b {
                return Err(bytes_mismatch(CALL, "each input block", sb[0].len, b));
            }
            Some(sm)
        }
        None => None,
    };
    let s = api_gather::alltoall_schedule(
        n,
        me,
        send.is_none(),
        b,
        choice::alltoall(Forced::from_env()?.alltoall, n, b),
    );
    start(comm, s, sm.as_ref(), Some(&rm), send.is_none(), None)
}

/// `MPI_Ialltoallv`: `send.counts[j]` elements at `send.displs[j]` of rank i's `send` to rank
/// j's `recv` at `recv.displs[i]`. `send` `None`: in place, the input laid out as `recv`.
///
pub fn alltoallv(comm: &Comm, send: Option<&RawVBuf<'_>>, recv: &RawVBuf<'_>) -> Result<Planned> {
    if comm.is_inter() {
        return super::raw_inter::alltoallv(comm, send, recv);
    }
    const CALL: &str = "MPI_Alltoallv";
    let (n, me) = (comm.size(), comm.rank());
    for c in std::iter::once(recv.counts.len()).chain(send.map(|s| s.counts.len())) {
        if c != n as usize {
            return Err(Error::arg(format!("{CALL}: {c} counts for {n} ranks")));
        }
    }
    let (rm, rblocks) = recv.mem(CALL, RECV)?;
    let (sm, sblocks) = match send {
        Some(s) => {
            let (m, b) = s.mem(CALL, SEND)?;
            (Some(m), Some(b))
        }
        None => (None, None),
    };
    let largest = rblocks.iter().chain(sblocks.iter().flatten()).map(|r| r.len).max().unwrap_or(0);
    let a = choice::alltoallv(Forced::from_env()?.alltoallv, largest);
    let s = api_gather::alltoallv_schedule(n, me, sblocks.as_deref(), &rblocks, a);
    start(comm, s, sm.as_ref(), Some(&rm), send.is_none(), None)
}

// ---------------------------------------------------------------------- reduce-scatter, scans

/// `MPI_Ireduce_scatter`: the `Σ counts` elements of `send` of every rank combined by `op` in
/// rank order; rank i receives block i (`counts[i]` elements) in `recv`. `send` `None`: in
/// place, `recv` holds the whole vector (`recv.count` must be `Σ counts`) and receives the
/// block at its start (the rest is left unspecified).
///
pub fn reduce_scatter(
    comm: &Comm,
    send: Option<&RawBuf>,
    recv: &RawBuf,
    counts: &[usize],
    op: &Op,
) -> Result<Planned> {
    if comm.is_inter() {
        return super::raw_inter::reduce_scatter(comm, send, recv, counts, op);
    }
    const CALL: &str = "MPI_Reduce_scatter";
    let (n, me) = (comm.size() as usize, comm.rank() as usize);
    if counts.len() != n {
        return Err(Error::arg(format!("{CALL}: {} counts for {n} ranks", counts.len())));
    }
    let input = send.unwrap_or(recv);
    let r = reducer(CALL, op, &input.dtype)?;
    let elem = elem_size(&input.dtype)?;
    let total = counts
        .iter()
        .try_fold(0usize, |a, &c| a.checked_add(c))
        .filter(|t| t.checked_mul(elem).is_some())
        .ok_or_else(|| Error::count(format!("{CALL}: the counts add up to more than memory")))?;
    let sm = send.map(Mem::of).transpose()?;
    let rm = Mem::of(recv)?;
    let want_out = if send.is_none() { total } else { counts[me] } * elem;
    if let Some(sm) = sm.as_ref().filter(|m| m.packed_len() != total * elem) {
        return Err(bytes_mismatch(CALL, "the input", sm.packed_len(), total * elem));
    }
    if rm.packed_len() != want_out {
        return Err(bytes_mismatch(CALL, "the output", rm.packed_len(), want_out));
    }
    let c = op.reorderable();
    let a = choice::reduce_scatter(Forced::from_env()?.reduce_scatter, total * elem, c);
    let from = if send.is_none() { RECV } else { SEND };
    let s = algo::reduce_scatter::schedule(me as u32, from, counts, elem, a, c);
    start(comm, s, sm.as_ref(), Some(&rm), send.is_none(), Some(r))
}

/// `MPI_Iscan` (`exclusive`: `MPI_Iexscan`): rank r receives the reduction of the inputs of
/// ranks `0..=r` (`0..r`) in `recv`. `send` `None`: in place, `recv` is the input. Exscan
/// leaves rank 0's `recv` untouched.
///
pub fn scan(comm: &Comm, send: Option<&RawBuf>, recv: &RawBuf, op: &Op, exclusive: bool) -> Result<Planned> {
    if comm.is_inter() {
        return Err(Error::comm("MPI_Scan and MPI_Exscan are not defined on intercommunicators"));
    }
    let call = if exclusive { "MPI_Exscan" } else { "MPI_Scan" };
    let input = send.unwrap_or(recv);
    let r = reducer(call, op, &input.dtype)?;
    let sm = send.map(Mem::of).transpose()?;
    let rm = Mem::of(recv)?;
    let count = input.count;
    let elem = elem_size(&input.dtype)?;
    if rm.packed_len() != count * elem {
        return Err(bytes_mismatch(call, "the output", rm.packed_len(), count * elem));
    }
    let (n, me, c) = (comm.size(), comm.rank(), op.reorderable());
    let a = choice::scan(Forced::from_env()?.scan, n, count * elem);
    let from = if send.is_none() { RECV } else { SEND };
    let s = algo::scan::schedule(n, me, from, count, elem, a, c, exclusive);
    // Exscan never writes rank 0's output: do not unpack a packed temporary over it either.
    let s = wrap(s, sm.as_ref(), Some(&rm), send.is_none(), !(exclusive && me == 0));
    let sb = sm.as_ref().map_or(NONE, Mem::bind);
    launch(comm, s, sb, rm.bind(), Some(r))
}

/// Memory bound to a schedule buffer: (address, length).
type Span = (*mut u8, usize);

/// A `w` buffer (`MPI_Alltoallw`): `counts[i]` elements of the committed `dtypes[i]` at byte
/// `base + displs[i]` for each rank i.
#[derive(Clone, Debug)]
pub struct RawWBuf<'a> {
    pub base: *mut u8,
    pub counts: &'a [usize],
    pub displs: &'a [isize],
    pub dtypes: &'a [Datatype],
}

impl RawWBuf<'_> {
    /// The span of memory the blocks cover (bound as is: the schedule packs non-contiguous
    /// blocks itself) and each block's pieces in it (packed order, adjacent ones merged).
    pub(super) fn pieces(&self, call: &str, n: usize, buf: BufId) -> Result<(Span, Vec<Vec<Range>>)> {
        if self.counts.len() != n || self.displs.len() != n || self.dtypes.len() != n {
            return Err(Error::arg(format!(
                "{call}: {} counts, {} displacements and {} types for {n} ranks",
                self.counts.len(),
                self.displs.len(),
                self.dtypes.len()
            )));
        }
        let overflow = || Error::arg(format!("{call}: a block's address overflows"));
        let mut abs: Vec<Vec<(isize, usize)>> = Vec::with_capacity(n);
        for i in 0..n {
            let (c, ty) = (self.counts[i], &self.dtypes[i]);
            let mut v: Vec<(isize, usize)> = Vec::new();
            if c > 0 && ty.size() > 0 {
                let blocks = ty.blocks().ok_or_else(|| {
                    Error::datatype(format!("{call}: the datatype of block {i} is not committed"))
                })?;
                let ext = isize::try_from(ty.extent()).map_err(|_| overflow())?;
                for k in 0..c {
                    let at = isize::try_from(k).ok().and_then(|k| k.checked_mul(ext));
                    let at = at.and_then(|a| a.checked_add(self.displs[i])).ok_or_else(overflow)?;
                    for &(off, l) in blocks.iter().filter(|b| b.1 > 0) {
                        let start = at.checked_add(off).ok_or_else(overflow)?;
                        match v.last_mut() {
                            Some(last) if last.0 + last.1 as isize == start => last.1 += l,
                            _ => v.push((start, l)),
                        }
                    }
                }
            }
            abs.push(v);
        }
        let all = abs.iter().flatten();
        let Some(lo) = all.clone().map(|p| p.0).min() else {
            return Ok(((self.base, 0), vec![Vec::new(); n]));
        };
        let hi = all.map(|p| p.0 + p.1 as isize).max().unwrap_or(lo);
        let rel = abs
            .into_iter()
            .map(|v| v.into_iter().map(|(o, l)| Range::new(buf, (o - lo) as usize, l)).collect())
            .collect();
        Ok(((self.base.wrapping_offset(lo), (hi - lo) as usize), rel))
    }
}

/// `MPI_Ialltoallw`: `send.counts[j]` elements of `send.dtypes[j]` at byte `send.displs[j]` of
/// rank i's `send` to rank j, which receives them as described by `recv` for rank i. `send`
/// `None`: in place, the input laid out as `recv`.
///
pub fn alltoallw(comm: &Comm, send: Option<&RawWBuf<'_>>, recv: &RawWBuf<'_>) -> Result<Planned> {
    if comm.is_inter() {
        return super::raw_inter::alltoallw(comm, send, recv);
    }
    const CALL: &str = "MPI_Alltoallw";
    let (n, me) = (comm.size(), comm.rank());
    let (rb, rblocks) = recv.pieces(CALL, n as usize, RECV)?;
    let (sb, sblocks) = match send {
        Some(s) => {
            let (b, p) = s.pieces(CALL, n as usize, SEND)?;
            (b, Some(p))
        }
        None => (NONE, None),
    };
    let len = |p: &[Range]| p.iter().map(|r| r.len).sum::<usize>();
    if let Some(sbl) = &sblocks {
        let (a, b) = (len(&sbl[me as usize]), len(&rblocks[me as usize]));
        if a != b {
            return Err(bytes_mismatch(CALL, "the block to this rank itself", a, b));
        }
    }
    let largest = rblocks.iter().chain(sblocks.iter().flatten()).map(|p| len(p)).max().unwrap_or(0);
    let a = choice::alltoallv(Forced::from_env()?.alltoallv, largest);
    let s = api_gather::alltoallw_schedule(n, me, sblocks.as_deref(), &rblocks, rb.1, a);
    launch(comm, s, sb, rb, None)
}
