//! The collectives of the Rust API, on [`Comm`]: typed like point-to-point (slices of
//! [`Equivalence`] types), blocking (start + wait) and nonblocking (requests borrowing their
//! slices until they end, completed in the background; see `coll`'s module docs).
//!
//! In place (`MPI_IN_PLACE`) has its own methods taking one `&mut` slice: `reduce_in_place`
//! (at the root the slice is the input and receives the result, elsewhere it is only the input
//! and is left unchanged, as `MPI_Reduce(MPI_IN_PLACE…)` at the root and a plain send buffer
//! elsewhere) and `allreduce_in_place`. A broadcast is in place by nature.
//!
//! Argument errors (root outside the communicator, output length, operation not defined on the
//! type) are MPI errors before anything starts; they do not use a collective sequence number.
//!
//! The blocking forms of barrier, broadcast, reduce and allreduce run their schedule in the
//! calling thread (`inline`) and, like the nonblocking ones, take it from the communicator's
//! plans (`state`): repeated, they plan nothing and allocate nothing.
//!
//! Owns argument checks and the binding of slices to schedules.

use super::Op;
use super::bound::{Bind, Reducer};
use super::choice::{self, Forced};
use super::engine::{Exec, Handle};
use super::inline;
use super::plan::{self, Site};
use super::raw::Mem as Bound;
use super::schedule::{RECV, SEND, Schedule};
use super::state::PlanKey;
use crate::comm::Comm;
use crate::datatype::Datatype;
use crate::datatype::Equivalence;
use crate::error::{Error, Result};
use crate::request::{RawRequest, Request};
use std::sync::Arc;

/// Raw memory of a call: (address, bytes). The other API files (`api_gather`, `api_reduce`)
/// share these helpers.
pub(super) type Mem = (*mut u8, usize);

pub(super) fn input<T: Equivalence>(buf: &[T]) -> Mem {
    (buf.as_ptr().cast_mut().cast(), std::mem::size_of_val(buf))
}

pub(super) fn output<T: Equivalence>(buf: &mut [T]) -> Mem {
    (buf.as_mut_ptr().cast(), std::mem::size_of_val(buf))
}

/// No memory; as an input, `MPI_IN_PLACE`.
pub(super) const NONE: Mem = (std::ptr::null_mut(), 0);

/// The reduction of `T`s by `op`, if `op` is defined on `T`'s datatype.
pub(super) fn reducer<T: Equivalence>(call: &str, op: &Op) -> Result<Reducer> {
    let dtype = Datatype::predefined(T::DATATYPE);
    op.check(&dtype).map_err(|e| Error::new(e.class(), format!("{call}: {}", e.message())))?;
    Ok(Reducer { op: op.clone(), dtype })
}

impl Comm {
    pub(super) fn check_root(&self, call: &str, root: u32) -> Result<()> {
        if root >= self.size() {
            return Err(Error::root(format!(
                "{call}: root {root} is outside the communicator (size {})",
                self.size()
            )));
        }
        Ok(())
    }

    /// Where this rank's collectives run (with the node layout unless `f` turns hierarchies off;
    /// fewer than 3 ranks never need one).
    pub(super) fn coll_site(&self, f: &Forced) -> Result<Site> {
        let layout =
            if f.hierarchical == Some(false) || self.size() < 3 { None } else { self.coll_layout()? };
        Ok(Site { n: self.size(), me: self.rank(), ctx: self.context_id(), layout })
    }

    /// Starts `sched` over `bind` as this communicator's next collective.
    ///
    /// # Safety
    /// `bind`'s memory must stay valid and untouched by others until the request ends.
    pub(super) unsafe fn launch(
        &self,
        sched: impl Into<Arc<Schedule>>,
        bind: Bind,
        reducer: Option<Reducer>,
    ) -> Result<RawRequest> {
        self.check_intra()?;
        let seq = self.next_coll_seq();
        // SAFETY: forwarded contract.
        let exec = unsafe { Exec::start(self, seq, sched.into(), bind, reducer) }?;
        Ok(RawRequest::collective(self, Handle(exec)))
    }

    /// Runs `sched` over `bind` as this communicator's next collective, to the end, in the
    /// calling thread (a blocking call).
    ///
    /// # Safety
    /// `bind`'s memory must stay valid and untouched by others until this returns.
    unsafe fn run_inline(&self, sched: Arc<Schedule>, bind: Bind, reducer: Option<Reducer>) -> Result<()> {
        self.check_intra()?;
        let seq = self.next_coll_seq();
        // SAFETY: forwarded contract.
        match unsafe { inline::run(self, seq, sched, bind, reducer) }? {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Starts a planned reduction (schedule, binding, reducer) as a request.
    ///
    /// # Safety
    /// The memory bound must stay valid and untouched by others for `'a`.
    unsafe fn start_planned<'a>(&self, (s, bind, r): (Arc<Schedule>, Bind, Reducer)) -> Result<Request<'a>> {
        // SAFETY: forwarded contract.
        let raw = unsafe { self.launch(s, bind, Some(r)) }?;
        Ok(Request::borrowing(raw))
    }

    fn check_intra(&self) -> Result<()> {
        if self.is_inter() {
            // Their schedules are another shape (`coll::inter`), reached through `raw`.
            return Err(Error::comm(
                "the Rust API's collectives take intracommunicators (intercommunicators: coll::raw)",
            ));
        }
        Ok(())
    }

    // ------------------------------------------------------------------ barrier

    /// `MPI_Barrier`.
    pub fn barrier(&self) -> Result<()> {
        if let Some(done) = self.barrier_now() {
            return done;
        }
        // SAFETY: no memory is involved.
        unsafe { self.run_inline(self.barrier_plan()?, Bind { send: NONE, recv: NONE }, None) }
    }

    /// `MPI_Ibarrier`.
    pub fn ibarrier(&self) -> Result<Request<'static>> {
        // SAFETY: no memory is involved.
        let raw = unsafe { self.launch(self.barrier_plan()?, Bind { send: NONE, recv: NONE }, None) }?;
        Ok(Request::borrowing(raw))
    }

    fn barrier_plan(&self) -> Result<Arc<Schedule>> {
        let f = Forced::from_env()?;
        self.planned(PlanKey::of("barrier", f), || Ok(plan::barrier(&self.coll_site(&f)?, &f)))
    }

    // ------------------------------------------------------------------ broadcast

    /// `MPI_Bcast`: `buf` of `root` to every rank's `buf` (all of the same length).
    pub fn bcast<T: Equivalence>(&self, buf: &mut [T], root: u32) -> Result<()> {
        let (at, len) = (buf.as_mut_ptr().cast(), std::mem::size_of_val(buf));
        // SAFETY: `buf` is borrowed exclusively for the call; any bytes are valid `T`s.
        if let Some(done) = unsafe { self.bcast_now(at, len, root) } {
            return done;
        }
        let s = self.bcast_plan(std::mem::size_of_val(buf), root, Forced::from_env()?.bcast)?;
        // SAFETY: `buf` is borrowed exclusively for the call; any bytes are valid `T`s.
        unsafe { self.run_inline(s, Bind { send: NONE, recv: output(buf) }, None) }
    }

    /// `MPI_Ibcast`.
    pub fn ibcast<'a, T: Equivalence>(&self, buf: &'a mut [T], root: u32) -> Result<Request<'a>> {
        self.ibcast_with(buf, root, Forced::from_env()?.bcast)
    }

    pub(crate) fn ibcast_with<'a, T: Equivalence>(
        &self,
        buf: &'a mut [T],
        root: u32,
        forced: Option<choice::Bcast>,
    ) -> Result<Request<'a>> {
        let s = self.bcast_plan(std::mem::size_of_val(buf), root, forced)?;
        // SAFETY: `buf` is borrowed exclusively for 'a, which the request carries; any bytes are
        // valid `T`s (Equivalence).
        let raw = unsafe { self.launch(s, Bind { send: NONE, recv: output(buf) }, None) }?;
        Ok(Request::borrowing(raw))
    }

    fn bcast_plan(&self, len: usize, root: u32, forced: Option<choice::Bcast>) -> Result<Arc<Schedule>> {
        self.check_root("MPI_Bcast", root)?;
        let f = Forced { bcast: forced, ..Forced::from_env()? };
        let key = PlanKey { root: root as usize, len, ..PlanKey::of("api bcast", f) };
        self.planned(key, || Ok(plan::bcast(&self.coll_site(&f)?, &f, root, len)))
    }

    // ------------------------------------------------------------------ reduce

    /// `MPI_Reduce`: `send` of every rank combined by `op` in rank order into `recv` at `root`
    /// (of `send`'s length there; ignored elsewhere: pass `&mut []`).
    pub fn reduce<T: Equivalence>(&self, send: &[T], recv: &mut [T], op: &Op, root: u32) -> Result<()> {
        let len = std::mem::size_of_val(send);
        let input = Bound::Contiguous((send.as_ptr().cast_mut().cast(), len));
        let output = (self.rank() == root && recv.len() == send.len())
            .then(|| Bound::Contiguous((recv.as_mut_ptr().cast(), len)));
        let dtype = Datatype::predefined(T::DATATYPE);
        // SAFETY: the slices are borrowed for the call (`recv` exclusively).
        let shared = unsafe {
            self.shared_reduce(Some(&input), output.as_ref(), Some(root), send.len(), (op, &dtype))
        };
        if let Some(done) = shared {
            return done;
        }
        let forced = Forced::from_env()?.reduce;
        let (s, bind, r) = self.reduce_plan::<T>(send, Some(recv), op, root, forced)?;
        // SAFETY: the slices are borrowed for the call.
        unsafe { self.run_inline(s, bind, Some(r)) }
    }

    /// `MPI_Ireduce`.
    pub fn ireduce<'a, T: Equivalence>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        op: &Op,
        root: u32,
    ) -> Result<Request<'a>> {
        self.ireduce_with(send, Some(recv), op, root, Forced::from_env()?.reduce)
    }

    /// `MPI_Reduce` with `MPI_IN_PLACE` at the root: there `buf` is the input and receives the
    /// result; elsewhere it is the input only.
    pub fn reduce_in_place<T: Equivalence>(&self, buf: &mut [T], op: &Op, root: u32) -> Result<()> {
        let m = Bound::Contiguous((buf.as_mut_ptr().cast(), std::mem::size_of_val(buf)));
        let dtype = Datatype::predefined(T::DATATYPE);
        let (send, recv) = if self.rank() == root { (None, Some(&m)) } else { (Some(&m), None) };
        // SAFETY: `buf` is borrowed exclusively for the call.
        if let Some(done) = unsafe { self.shared_reduce(send, recv, Some(root), buf.len(), (op, &dtype)) } {
            return done;
        }
        let forced = Forced::from_env()?.reduce;
        let (s, bind, r) = if self.rank() == root {
            let n = buf.len();
            self.reduce_raw_plan::<T>(NONE, n, Some(output(buf)), op, root, forced)?
        } else {
            self.reduce_plan::<T>(buf, None, op, root, forced)?
        };
        // SAFETY: `buf` is borrowed exclusively for the call.
        unsafe { self.run_inline(s, bind, Some(r)) }
    }

    /// `MPI_Ireduce` with `MPI_IN_PLACE` at the root (see [`Comm::reduce_in_place`]).
    pub fn ireduce_in_place<'a, T: Equivalence>(
        &self,
        buf: &'a mut [T],
        op: &Op,
        root: u32,
    ) -> Result<Request<'a>> {
        let forced = Forced::from_env()?.reduce;
        if self.rank() == root {
            let n = buf.len();
            // In place: the input is the output's memory, borrowed exclusively for 'a.
            let p = self.reduce_raw_plan::<T>(NONE, n, Some(output(buf)), op, root, forced)?;
            // SAFETY: `buf` is borrowed exclusively for 'a, which the request carries.
            unsafe { self.start_planned(p) }
        } else {
            self.ireduce_with(buf, None, op, root, forced)
        }
    }

    pub(crate) fn ireduce_with<'a, T: Equivalence>(
        &self,
        send: &'a [T],
        recv: Option<&'a mut [T]>,
        op: &Op,
        root: u32,
        forced: Option<choice::Reduce>,
    ) -> Result<Request<'a>> {
        let p = self.reduce_plan(send, recv, op, root, forced)?;
        // SAFETY: the callers hold the slices' borrows for 'a, which the request carries.
        unsafe { self.start_planned(p) }
    }

    /// The reduce of `send` into `recv` (the root's), checked and planned.
    fn reduce_plan<T: Equivalence>(
        &self,
        send: &[T],
        recv: Option<&mut [T]>,
        op: &Op,
        root: u32,
        forced: Option<choice::Reduce>,
    ) -> Result<(Arc<Schedule>, Bind, Reducer)> {
        self.check_root("MPI_Reduce", root)?;
        let recv = recv.map(output);
        if self.rank() == root && recv.is_none_or(|r| r.1 != std::mem::size_of_val(send)) {
            return Err(Error::count(format!(
                "MPI_Reduce: the root's output holds {} bytes for {} bytes of input",
                recv.map_or(0, |r| r.1),
                std::mem::size_of_val(send)
            )));
        }
        self.reduce_raw_plan::<T>(input(send), send.len(), recv, op, root, forced)
    }

    /// A reduce of `count` `T`s from `send` (`NONE`: in place, from `recv`) into `recv`, planned.
    fn reduce_raw_plan<T: Equivalence>(
        &self,
        send: (*mut u8, usize),
        count: usize,
        recv: Option<(*mut u8, usize)>,
        op: &Op,
        root: u32,
        forced: Option<choice::Reduce>,
    ) -> Result<(Arc<Schedule>, Bind, Reducer)> {
        self.check_root("MPI_Reduce", root)?;
        let r = reducer::<T>("MPI_Reduce", op)?;
        let f = Forced { reduce: forced, ..Forced::from_env()? };
        let from = if send.0.is_null() { RECV } else { SEND };
        let elem = std::mem::size_of::<T>();
        let reorderable = op.reorderable();
        let key = PlanKey {
            root: root as usize,
            count,
            elem,
            reorderable,
            in_place: from == RECV,
            ..PlanKey::of("api reduce", f)
        };
        let s = self.planned(key, || {
            Ok(plan::reduce(&self.coll_site(&f)?, &f, root, from, count, elem, reorderable))
        })?;
        Ok((s, Bind { send, recv: recv.unwrap_or(NONE) }, r))
    }

    // ------------------------------------------------------------------ allreduce

    /// `MPI_Allreduce`: `send` of every rank combined by `op` in rank order into every `recv`
    /// (of `send`'s length).
    pub fn allreduce<T: Equivalence>(&self, send: &[T], recv: &mut [T], op: &Op) -> Result<()> {
        Self::same_length(send, recv)?;
        let (from, to, dtype) =
            (send.as_ptr().cast(), recv.as_mut_ptr().cast(), Datatype::predefined(T::DATATYPE));
        // SAFETY: the slices are borrowed for the call (`recv` exclusively); any bytes are
        // valid `T`s.
        if let Some(done) = unsafe { self.allreduce_now(Some(from), to, send.len(), &dtype, op) } {
            return done;
        }
        let forced = Forced::from_env()?.allreduce;
        let (s, bind, r) = self.allreduce_plan::<T>(input(send), send.len(), output(recv), op, forced)?;
        // SAFETY: the slices are borrowed for the call.
        unsafe { self.run_inline(s, bind, Some(r)) }
    }

    fn same_length<T>(send: &[T], recv: &[T]) -> Result<()> {
        if send.len() != recv.len() {
            return Err(Error::count(format!(
                "MPI_Allreduce: {} output elements for {} input elements",
                recv.len(),
                send.len()
            )));
        }
        Ok(())
    }

    /// `MPI_Iallreduce`.
    pub fn iallreduce<'a, T: Equivalence>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        op: &Op,
    ) -> Result<Request<'a>> {
        Self::same_length(send, recv)?;
        let forced = Forced::from_env()?.allreduce;
        let p = self.allreduce_plan::<T>(input(send), send.len(), output(recv), op, forced)?;
        // SAFETY: the slices are borrowed for 'a, which the request carries.
        unsafe { self.start_planned(p) }
    }

    /// `MPI_Allreduce` with `MPI_IN_PLACE`: `buf` is the input and receives the result.
    pub fn allreduce_in_place<T: Equivalence>(&self, buf: &mut [T], op: &Op) -> Result<()> {
        let n = buf.len();
        let dtype = Datatype::predefined(T::DATATYPE);
        // SAFETY: `buf` is borrowed exclusively for the call; any bytes are valid `T`s.
        if let Some(done) = unsafe { self.allreduce_now(None, buf.as_mut_ptr().cast(), n, &dtype, op) } {
            return done;
        }
        let forced = Forced::from_env()?.allreduce;
        let (s, bind, r) = self.allreduce_plan::<T>(NONE, n, output(buf), op, forced)?;
        // SAFETY: `buf` is borrowed exclusively for the call.
        unsafe { self.run_inline(s, bind, Some(r)) }
    }

    /// `MPI_Iallreduce` with `MPI_IN_PLACE`.
    pub fn iallreduce_in_place<'a, T: Equivalence>(&self, buf: &'a mut [T], op: &Op) -> Result<Request<'a>> {
        let n = buf.len();
        let p = self.allreduce_plan::<T>(NONE, n, output(buf), op, Forced::from_env()?.allreduce)?;
        // SAFETY: `buf` is borrowed exclusively for 'a, which the request carries.
        unsafe { self.start_planned(p) }
    }

    /// An allreduce of `count` `T`s from `send` (`NONE`: in place) into `recv`, planned.
    fn allreduce_plan<T: Equivalence>(
        &self,
        send: (*mut u8, usize),
        count: usize,
        recv: (*mut u8, usize),
        op: &Op,
        forced: Option<choice::Allreduce>,
    ) -> Result<(Arc<Schedule>, Bind, Reducer)> {
        let r = reducer::<T>("MPI_Allreduce", op)?;
        let elem = std::mem::size_of::<T>();
        let f = Forced { allreduce: forced, ..Forced::from_env()? };
        let from = if send.0.is_null() { RECV } else { SEND };
        let reorderable = op.reorderable();
        let key =
            PlanKey { count, elem, reorderable, in_place: from == RECV, ..PlanKey::of("api allreduce", f) };
        let s = self
            .planned(key, || Ok(plan::allreduce(&self.coll_site(&f)?, &f, from, count, elem, reorderable)))?;
        Ok((s, Bind { send, recv }, r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorClass;
    use crate::op::Builtin;
    use crate::testing::{allocations, on_all};

    /// A blocking barrier, broadcast, reduce or allreduce repeated with the same arguments
    /// allocates nothing in the calling thread (its plan, requests, round states and buffers are
    /// kept; an 8-byte message arriving before its receive is kept inline), and still computes
    /// the right results. Allowed: what a waiter's sleeps build once and pool — a wait set per
    /// context sleeping at the same time (its doorbell, its fd list, the pool's growth), the
    /// condition's waiter list growing — about 4 allocations per set, which a loaded machine
    /// (the full test run) makes the calling thread pay for up to 3 sets (12 seen, 0 unloaded).
    /// A per-call allocation would show 500 or more here.
    #[test]
    fn repeated_blocking_collectives_allocate_nothing() {
        let counts = on_all(2, |w| {
            let sum = Op::builtin(Builtin::Sum);
            let me = u64::from(w.rank());
            let (mine, mut out, mut b) = ([me + 1; 1], [0u64; 1], [0u64; 1]);
            let mut round = |w: &Comm, i: u64| {
                w.barrier().unwrap();
                b[0] = if me == 0 { i } else { 0 };
                w.bcast(&mut b, 0).unwrap();
                w.allreduce(&mine, &mut out, &sum).unwrap();
                assert_eq!((b[0], out[0]), (i, 3));
                w.reduce(&mine, &mut out, &sum, 1).unwrap();
            };
            for i in 0..20 {
                round(&w, i);
            }
            let before = allocations();
            for i in 0..500 {
                round(&w, i);
            }
            let n = allocations() - before;
            w.barrier().unwrap();
            n
        });
        assert!(
            counts.iter().all(|&n| n <= 24),
            "allocations per rank over 500 rounds of 4 collectives: {counts:?}"
        );
    }

    /// Every algorithm through the engine, over real nmad ranks (threads as ranks, shm).
    #[test]
    fn collectives_through_the_engine() {
        for n in [1u32, 2, 3, 5] {
            on_all(n, |w| {
                let me = w.rank();
                let sum = Op::builtin(Builtin::Sum);
                w.barrier().unwrap();
                for len in [0usize, 3, 5000, 70_000] {
                    for a in [choice::Bcast::Binomial, choice::Bcast::ScatterRing] {
                        let root = (len as u32) % n;
                        let want: Vec<u32> = (0..len as u32).map(|i| i * 3 + root).collect();
                        let mut b = if me == root { want.clone() } else { vec![0; len] };
                        w.ibcast_with(&mut b, root, Some(a)).unwrap().wait().unwrap();
                        assert!(b == want, "bcast {a:?} n={n} len={len}");
                    }
                    let mine: Vec<i64> = (0..len as i64).map(|i| i + i64::from(me) * 1000).collect();
                    let want: Vec<i64> = (0..len as i64)
                        .map(|i| i * i64::from(n) + 1000 * i64::from(n * (n - 1) / 2))
                        .collect();
                    for a in [
                        choice::Allreduce::RecursiveDoubling,
                        choice::Allreduce::Rabenseifner,
                        choice::Allreduce::ReduceBcast,
                    ] {
                        let mut out = vec![0i64; len];
                        let p = w.allreduce_plan::<i64>(input(&mine), len, output(&mut out), &sum, Some(a));
                        // SAFETY: both vectors outlive the wait.
                        unsafe { w.start_planned(p.unwrap()) }.unwrap().wait().unwrap();
                        assert!(out == want, "allreduce {a:?} n={n} len={len}");
                    }
                    for a in [choice::Reduce::Binomial, choice::Reduce::Ordered] {
                        let root = n - 1;
                        let mut out = vec![0i64; if me == root { len } else { 0 }];
                        w.ireduce_with(&mine, Some(&mut out), &sum, root, Some(a)).unwrap().wait().unwrap();
                        if me == root {
                            assert!(out == want, "reduce {a:?} n={n} len={len}");
                        }
                    }
                    let mut inplace = mine.clone();
                    w.allreduce_in_place(&mut inplace, &sum).unwrap();
                    assert!(inplace == want);
                }
                // Several nonblocking collectives in flight at once, completed in any order.
                let (mut a, mut b) = (vec![me as u64; 100], vec![0u64; 100]);
                let src = vec![1u64; 100];
                let r1 = w.iallreduce_in_place(&mut a, &sum).unwrap();
                let r2 = w.iallreduce(&src, &mut b, &sum).unwrap();
                let r3 = w.ibarrier().unwrap();
                crate::request::wait_all(vec![r3, r2, r1]).unwrap();
                assert!(
                    a.iter().all(|&v| v == u64::from(n * (n - 1) / 2))
                        && b.iter().all(|&v| v == u64::from(n))
                );
                // Argument errors.
                assert_eq!(w.bcast(&mut [0u8; 4], n).unwrap_err().class(), ErrorClass::Root);
                assert_eq!(
                    w.allreduce(&[1u8; 4], &mut [0u8; 3], &sum).unwrap_err().class(),
                    ErrorClass::Count
                );
                let e = w.allreduce(&[1.0f64], &mut [0.0], &Op::builtin(Builtin::Band)).unwrap_err();
                assert_eq!(e.class(), ErrorClass::Op, "{e}");
                w.barrier().unwrap();
            });
        }
    }
}
