//! A schedule bound to memory: the user's buffers and the schedule's own temporaries, the
//! collective's number, its reduction — what both runners share: the background [`engine`]
//! (nonblocking and persistent collectives) and the [`inline`] runner (blocking calls). It runs
//! a round's local operations, posts its transfers as nmad requests, and checks them when the
//! round is retired ([`Host`], the round state machine's host).
//!
//! Owns the binding and the temporaries; it must not decide who advances the rounds.
//!
//! [`engine`]: super::engine
//! [`inline`]: super::inline

use super::rounds;
use super::schedule::{Local, Range, SEND, Schedule, Xfer};
use crate::comm::tags::{self, Kind};
use crate::comm::{Comm, from_nmad};
use crate::datatype::Datatype;
use crate::error::{Error, ErrorClass, Result};
use nmad::{Data, Monitor, SendMode, Source, TagMatch};
use std::pin::Pin;
use std::sync::Arc;

use super::Op;

/// The reduction of a schedule's `Reduce` operations: `inout = input op inout`, on packed elements.
pub(crate) struct Reducer {
    pub op: Op,
    pub dtype: Datatype,
}

impl Reducer {
    fn apply(&self, input: &[u8], inout: &mut [u8], count: usize) -> Result<()> {
        self.op.reduce(input, inout, count, &self.dtype)
    }
}

/// The memory a schedule runs on: the user's input and output (address, length).
#[derive(Clone, Copy)]
pub(crate) struct Bind {
    pub send: (*mut u8, usize),
    pub recv: (*mut u8, usize),
}

/// A bound schedule's memory that may serve the next one: its buffer table and temporaries
/// (a blocking collective repeated reuses them instead of allocating).
#[derive(Default)]
pub(crate) struct Storage {
    bufs: Vec<(*mut u8, usize)>,
    /// Made by `Box::into_raw`; owned here, freed on drop.
    tmp: Vec<*mut [u8]>,
}

impl Drop for Storage {
    fn drop(&mut self) {
        for &t in &self.tmp {
            // SAFETY: made by `Box::into_raw` in `Bound::new_in`, freed once here; a storage
            // holds no temporary a running schedule uses (it is taken back only from a finished
            // `Bound`).
            drop(unsafe { Box::from_raw(t) });
        }
    }
}

/// A schedule bound to memory: see the module docs.
pub(crate) struct Bound {
    pub(super) comm: Comm,
    seq: u64,
    pub(super) sched: Arc<Schedule>,
    /// (address, length) of each buffer of the schedule, and the temporaries (freed on drop
    /// unless taken back by [`Bound::into_storage`]).
    mem: Storage,
    reducer: Option<Reducer>,
}

// SAFETY: the raw pointers are the user's buffers, valid until the schedule finishes (the
// request or the blocking call that runs it borrows them until then), and our own temporaries.
// Local operations touch them from one advancing context at a time (the engine's state lock, or
// the one thread of a blocking call); transfers are nmad's, on ranges that never overlap a range
// touched by another operation of the same round (`Schedule::validate`), and rounds that touch
// the same bytes are ordered by their dependencies.
unsafe impl Send for Bound {}
// SAFETY: as above.
unsafe impl Sync for Bound {}

impl Bound {
    /// Binds `sched` to `bind` as collective number `seq` of `comm`, allocating its temporaries.
    ///
    /// # Safety
    /// `bind`'s memory must stay valid (the input for reads, the output for writes and reads)
    /// and not be touched by anyone else until the schedule finishes.
    pub(super) unsafe fn new(
        comm: &Comm,
        seq: u64,
        sched: Arc<Schedule>,
        bind: Bind,
        reducer: Option<Reducer>,
    ) -> Result<Bound> {
        // SAFETY: our contract, passed on.
        unsafe { Bound::new_in(comm, seq, sched, bind, reducer, Storage::default()) }
    }

    /// As [`Bound::new`], in `mem` (a temporary there as long as needed is zeroed and reused).
    ///
    /// # Safety
    /// As [`Bound::new`].
    pub(super) unsafe fn new_in(
        comm: &Comm,
        seq: u64,
        sched: Arc<Schedule>,
        bind: Bind,
        reducer: Option<Reducer>,
        mut mem: Storage,
    ) -> Result<Bound> {
        if cfg!(debug_assertions) {
            sched
                .validate(bind.send.1, bind.recv.1)
                .map_err(|e| Error::intern(format!("bad schedule: {e}")))?;
        }
        mem.bufs.clear();
        mem.bufs.extend([bind.send, bind.recv]);
        for (i, &len) in sched.tmp_len[2..].iter().enumerate() {
            match mem.tmp.get(i) {
                // SAFETY: a live temporary of ours (see `Storage`), used by nobody now.
                Some(&t) if t.len() >= len => unsafe { t.cast::<u8>().write_bytes(0, len) },
                old => {
                    let t = Box::into_raw(vec![0u8; len].into_boxed_slice());
                    if old.is_some() {
                        // SAFETY: as in `Storage::drop`: ours, unused, freed once (replaced).
                        drop(unsafe { Box::from_raw(std::mem::replace(&mut mem.tmp[i], t)) });
                    } else {
                        mem.tmp.push(t);
                    }
                }
            }
            mem.bufs.push((mem.tmp[i].cast::<u8>(), len));
        }
        Ok(Bound { comm: comm.clone(), seq, sched, mem, reducer })
    }

    /// The memory of a finished schedule, for the next one.
    pub(super) fn into_storage(self) -> Storage {
        self.mem
    }

    /// The address of range `r`.
    fn ptr(&self, r: Range) -> *mut u8 {
        // SAFETY: `validate` (and the builders) keep ranges inside their buffers.
        unsafe { self.mem.bufs[r.buf].0.add(r.off) }
    }

    /// Runs one local operation.
    fn local(&self, l: &Local) -> Result<()> {
        let (from, to) = match *l {
            Local::Copy { from, to } | Local::Reduce { from, into: to, .. } => (from, to),
        };
        if from.len != to.len || from.overlaps(&to) || to.buf == SEND {
            return Err(Error::intern(format!("collective schedule: bad local operation {l:?}")));
        }
        // SAFETY: both ranges lie in live buffers (see the Send impl), do not overlap (checked
        // above), and no transfer in flight touches them (round order).
        let (src, dst) = unsafe {
            (
                std::slice::from_raw_parts(self.ptr(from), from.len),
                std::slice::from_raw_parts_mut(self.ptr(to), to.len),
            )
        };
        match *l {
            Local::Copy { .. } => dst.copy_from_slice(src),
            Local::Reduce { count, .. } => match &self.reducer {
                Some(r) => r.apply(src, dst, count)?,
                None => return Err(Error::intern("collective schedule: a reduction without an operation")),
            },
        }
        Ok(())
    }

    /// Posts one transfer, its request carrying `monitor` if given; the request is pushed even
    /// when posting failed (nmad completed it with the error, which the round's end reports).
    fn post(
        &self,
        x: &Xfer,
        monitor: Option<&Monitor>,
        reqs: &mut Vec<Pin<Box<nmad::Request>>>,
        pool: &mut Option<&mut Vec<Pin<Box<nmad::Request>>>>,
    ) -> Result<()> {
        let (Xfer::Send { peer, step, data } | Xfer::Recv { peer, step, data }) = *x;
        let Some(world) = self.comm.coll_world_rank(peer) else {
            return Err(Error::intern(format!("collective schedule: no rank {peer}")));
        };
        let tag = tags::internal(Kind::Collective, self.seq, step);
        let s = self.comm.session();
        let mut req = pool.as_mut().and_then(|p| p.pop()).unwrap_or_else(|| Box::pin(nmad::Request::new()));
        if let Xfer::Send { .. } = x
            && monitor.is_none()
        {
            let bytes = match data.len {
                0 => &[][..],
                // SAFETY: the range lies in a live buffer (see the Send impl), read during the
                // call; with data, its address is not null.
                len => unsafe { std::slice::from_raw_parts(self.ptr(data), len) },
            };
            if s.send_now(world, tag, bytes) {
                // The message left: a request never submitted stands for it (complete, no error).
                reqs.push(req);
                return Ok(());
            }
        }
        if let Some(m) = monitor {
            req.as_mut().set_monitor(Some(m.clone()));
        }
        // SAFETY: the range lies in a live buffer (see the Send impl).
        let d = unsafe { Data::from_raw(self.ptr(data), data.len) };
        let r = match x {
            // SAFETY: the memory stays valid and untouched until the request completes (the
            // round, hence the schedule, waits for it), and the request stays pinned in `reqs`.
            Xfer::Send { .. } => unsafe { s.isend(world, tag, d, SendMode::default(), req.as_ref()) },
            // SAFETY: as above.
            Xfer::Recv { .. } => unsafe {
                s.irecv(Source::Rank(world), TagMatch::exact(tag), d, req.as_ref())
            },
        };
        reqs.push(req);
        r.map_err(from_nmad)
    }

    /// The error of a completed request of transfer `x`, if any.
    fn check(x: &Xfer, req: &nmad::Request) -> Option<Error> {
        match req.result()? {
            Err(e) => Some(from_nmad(e)),
            Ok(st) => match *x {
                Xfer::Recv { data, peer, .. } if st.len != data.len as u64 => Some(Error::new(
                    ErrorClass::Truncate,
                    format!("collective: {} bytes from rank {peer} where {} were expected", st.len, data.len),
                )),
                _ => None,
            },
        }
    }

    /// Runs round `r`'s local operations, then posts its transfers; errors go to `error`.
    fn start_round(&self, r: usize, host: &mut Host<'_>, reqs: &mut Vec<Pin<Box<nmad::Request>>>) {
        let round = &self.sched.rounds[r];
        for l in &round.local {
            if let Err(e) = self.local(l) {
                host.error.get_or_insert(e);
                return;
            }
        }
        reqs.reserve(round.xfers.len());
        for x in &round.xfers {
            if let Err(e) = self.post(x, host.monitor, reqs, &mut host.pool) {
                host.error.get_or_insert(e);
                break;
            }
        }
    }
}

/// A bound schedule as the round state machine's host: posts rounds (their requests carrying
/// `monitor`, for the background engine), checks finished ones; the first error halts it.
/// With a `pool`, requests come from it and go back to it when their round is retired.
pub(super) struct Host<'a> {
    pub(super) bound: &'a Bound,
    pub(super) monitor: Option<&'a Monitor>,
    pub(super) error: &'a mut Option<Error>,
    pub(super) pool: Option<&'a mut Vec<Pin<Box<nmad::Request>>>>,
}

impl rounds::Host<Pin<Box<nmad::Request>>> for Host<'_> {
    fn retire(&mut self, r: usize, reqs: &mut Vec<Pin<Box<nmad::Request>>>) {
        for (x, q) in self.bound.sched.rounds[r].xfers.iter().zip(reqs.iter()) {
            if let Some(e) = Bound::check(x, q) {
                self.error.get_or_insert(e);
            }
        }
        if let Some(pool) = self.pool.as_mut() {
            for mut q in reqs.drain(..) {
                // Completed: nmad is done with it, and a fresh request stands in its place.
                q.set(nmad::Request::new());
                pool.push(q);
            }
        }
    }

    fn start(&mut self, r: usize, reqs: &mut Vec<Pin<Box<nmad::Request>>>) {
        let bound = self.bound;
        bound.start_round(r, self, reqs)
    }

    fn halted(&self) -> bool {
        self.error.is_some()
    }
}
