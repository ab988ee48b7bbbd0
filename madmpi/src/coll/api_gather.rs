//! The Rust API of the gather family on [`Comm`]: gather, scatter, allgather and alltoall and
//! their `v` forms, blocking and nonblocking, typed like the other collectives (contiguous
//! slices of [`Equivalence`] types; the nonblocking requests borrow the slices until they end).
//! `alltoallw` works on byte slices with a committed [`Datatype`] per block and byte
//! displacements; non-contiguous blocks are packed and unpacked through temporaries.
//!
//! Counts and displacements of the `v` forms are in elements of `T`, like MPI's; an output
//! block may not overlap another (MPI forbids writing a location twice), input blocks may.
//! Arguments significant only at the root (MPI's rule) are ignored elsewhere: pass `&mut []` /
//! `&[]`.
//!
//! In place (`MPI_IN_PLACE`) has its own methods taking one `&mut` slice, as `reduce_in_place`:
//! - `gather_in_place` / `gatherv_in_place`: at the root the slice is the output, the root's own
//!   block already in its slot; elsewhere it is the input;
//! - `scatter_in_place` / `scatterv_in_place`: at the root the slice is the input (only read:
//!   the root's block stays where it is); elsewhere it is the output;
//! - `allgather_in_place` / `allgatherv_in_place`: the output, this rank's block already in its
//!   slot;
//! - `alltoall_in_place` / `alltoallv_in_place`: the input, replaced by the output (the same
//!   counts and displacements for both).
//!
//! Argument errors are MPI errors before anything starts: root outside the communicator
//! (`MPI_ERR_ROOT`), lengths that disagree with the counts (`MPI_ERR_COUNT`), a block outside its
//! slice (`MPI_ERR_BUFFER`), counts or displacements not one per rank, or output blocks that
//! overlap (`MPI_ERR_ARG`).
//!
//! Owns these argument checks, the binding of slices to schedules and the schedules' assembly
//! from `algo::{gather, scatter, allgather, alltoall}`.

use super::algo::{allgather, alltoall, gather, scatter};
use super::bound::Bind;
use super::choice::{self, Allgather, Allgatherv, Alltoall, Alltoallv, Forced, Gather};
use super::schedule::{BufId, RECV, Range, SEND, Schedule};
use crate::comm::Comm;
use crate::datatype::Datatype;
use crate::datatype::Equivalence;
use crate::error::{Error, Result};
use crate::request::Request;

use super::api::{Mem, NONE, input, output};

/// Defines blocking methods of [`Comm`], each its nonblocking twin waited for (a blocking
/// collective is the nonblocking one and `MPI_Wait`): `fn name<T>(args) = start;` is
/// `pub fn name<T: Equivalence>(&self, args) -> Result<()>` returning when `self.start(args)`'s
/// request completes. One entry per method, its documentation first.
macro_rules! blocking {
    ($(
        $(#[$doc:meta])*
        fn $name:ident $(<$t:ident>)? ($($arg:ident: $ty:ty),* $(,)?) = $start:ident;
    )*) => {$(
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)]
        pub fn $name $(<$t: Equivalence>)? (&self, $($arg: $ty),*) -> Result<()> {
            self.$start($($arg),*)?.wait().map(drop)
        }
    )*};
}

/// Defines nonblocking methods of [`Comm`] that start a shared method with trailing arguments of
/// their own: `fn name<'a, T>(args) = with[extra];` is `pub fn name<'a, T: Equivalence>(&self,
/// args) -> Result<Request<'a>>` returning `self.with(args, extra)`.
macro_rules! starts {
    ($(
        $(#[$doc:meta])*
        fn $name:ident<$lt:lifetime, $t:ident>($($arg:ident: $ty:ty),* $(,)?) = $with:ident[$($extra:expr),*];
    )*) => {$(
        $(#[$doc])*
        pub fn $name<$lt, $t: Equivalence>(&self, $($arg: $ty),*) -> Result<Request<$lt>> {
            self.$with($($arg,)* $($extra),*)
        }
    )*};
}

pub(crate) use {blocking, starts};

/// Equal blocks of `b` bytes in `buf`.
fn uniform(buf: BufId, n: u32, b: usize) -> Vec<Range> {
    (0..n as usize).map(|i| Range::new(buf, i * b, b)).collect()
}

/// The byte ranges in `buf` (a slice of `len` elements of `elem` bytes) of the blocks given by
/// `counts` and `displs` (elements), checked: one per rank, inside the slice, and not
/// overlapping if `disjoint`.
#[allow(clippy::too_many_arguments)]
fn layout(
    call: &str,
    n: u32,
    counts: &[usize],
    displs: &[usize],
    len: usize,
    elem: usize,
    buf: BufId,
    disjoint: bool,
) -> Result<Vec<Range>> {
    if counts.len() != n as usize || displs.len() != n as usize {
        return Err(Error::arg(format!(
            "{call}: {} counts and {} displacements for {n} ranks",
            counts.len(),
            displs.len()
        )));
    }
    let mut v = Vec::with_capacity(n as usize);
    for (i, (&c, &d)) in counts.iter().zip(displs).enumerate() {
        let end = d.checked_add(c).filter(|e| e.checked_mul(elem).is_some());
        match end {
            None => return Err(Error::arg(format!("{call}: block {i} (count {c} at {d}) overflows"))),
            Some(e) if e > len && c > 0 => {
                return Err(Error::buffer(format!(
                    "{call}: block {i} (count {c} at {d}) ends past the buffer of {len} elements"
                )));
            }
            _ => v.push(Range::new(buf, if c > 0 { d * elem } else { 0 }, c * elem)),
        }
    }
    if disjoint {
        let mut sorted: Vec<(usize, &Range)> = v.iter().enumerate().filter(|(_, r)| r.len > 0).collect();
        sorted.sort_by_key(|(_, r)| r.off);
        if let Some(w) = sorted.windows(2).find(|w| w[0].1.end() > w[1].1.off) {
            return Err(Error::arg(format!("{call}: output blocks {} and {} overlap", w[0].0, w[1].0)));
        }
    }
    Ok(v)
}

fn mismatch(call: &str, what: String) -> Error {
    Error::count(format!("{call}: {what}"))
}

// ---------------------------------------------------------------------- schedules

/// Gather of equal blocks of `b` bytes; `mine`: this rank's block (input, or in place at the
/// root its slot of [`RECV`]).
pub(crate) fn gather_schedule(n: u32, me: u32, root: u32, mine: Range, b: usize, a: Gather) -> Schedule {
    let mut s = Schedule::new();
    match a {
        Gather::Binomial => gather::binomial(&mut s, n, me, root, mine, b),
        Gather::Linear => gather::linear(&mut s, n, me, root, mine, &uniform(RECV, n, b)),
    }
    s
}

/// Scatter of equal blocks of `b` bytes from the root's [`SEND`]; `out`: where this rank's
/// block goes (`None` in place at the root).
pub(crate) fn scatter_schedule(
    n: u32,
    me: u32,
    root: u32,
    out: Option<Range>,
    b: usize,
    a: Gather,
) -> Schedule {
    let mut s = Schedule::new();
    match a {
        Gather::Binomial => scatter::binomial(&mut s, n, me, root, out, b),
        Gather::Linear => scatter::linear(&mut s, n, me, root, out, &uniform(SEND, n, b)),
    }
    s
}

/// Allgather of equal blocks of `b` bytes; `mine`: this rank's block (input, or in place its
/// slot of [`RECV`]). `RecursiveDoubling` needs a power of two (the choice sees to it).
pub(crate) fn allgather_schedule(n: u32, me: u32, mine: Range, b: usize, a: Allgather) -> Schedule {
    let mut s = Schedule::new();
    match a {
        Allgather::RecursiveDoubling => allgather::recursive_doubling(&mut s, n, me, mine, b),
        Allgather::Bruck => allgather::bruck(&mut s, n, me, mine, b),
        Allgather::Ring => allgather::ring(&mut s, n, me, mine, &uniform(RECV, n, b)),
    }
    s
}

pub(crate) fn allgatherv_schedule(n: u32, me: u32, mine: Range, blocks: &[Range], a: Allgatherv) -> Schedule {
    let mut s = Schedule::new();
    match a {
        Allgatherv::Ring => allgather::ring(&mut s, n, me, mine, blocks),
        Allgatherv::Linear => allgather::linear(&mut s, n, me, mine, blocks),
    }
    s
}

/// Alltoall of equal blocks of `b` bytes, from [`SEND`] or in place from [`RECV`].
pub(crate) fn alltoall_schedule(n: u32, me: u32, in_place: bool, b: usize, a: Alltoall) -> Schedule {
    let mut s = Schedule::new();
    let input = |s: &mut Schedule| if in_place { alltoall::copy_input(s, n as usize * b) } else { SEND };
    match a {
        Alltoall::Bruck => alltoall::bruck(&mut s, n, me, if in_place { RECV } else { SEND }, b),
        Alltoall::Linear => {
            let i = input(&mut s);
            alltoall::linear(&mut s, n, me, &uniform(i, n, b), &uniform(RECV, n, b))
        }
        Alltoall::Pairwise => {
            let i = input(&mut s);
            alltoall::pairwise(&mut s, n, me, &uniform(i, n, b), &uniform(RECV, n, b))
        }
    }
    s
}

/// Alltoallv from `sblocks` (`None`: in place, the input laid out as `rblocks` in [`RECV`]).
pub(crate) fn alltoallv_schedule(
    n: u32,
    me: u32,
    sblocks: Option<&[Range]>,
    rblocks: &[Range],
    a: Alltoallv,
) -> Schedule {
    if outputs_overlap(rblocks.iter()) {
        // Erroneous but run by MPICH and Open MPI: through temporaries, as alltoallw does.
        let one_piece = |b: &[Range]| b.iter().map(|r| vec![*r]).collect::<Vec<_>>();
        let len = rblocks.iter().map(Range::end).max().unwrap_or(0);
        return alltoallw_schedule(n, me, sblocks.map(one_piece).as_deref(), &one_piece(rblocks), len, a);
    }
    let mut s = Schedule::new();
    let copied;
    let sblocks = match sblocks {
        Some(b) => b,
        None => {
            let len = rblocks.iter().map(Range::end).max().unwrap_or(0);
            let t = alltoall::copy_input(&mut s, len);
            copied = rblocks.iter().map(|r| Range { buf: t, ..*r }).collect::<Vec<_>>();
            &copied
        }
    };
    match a {
        Alltoallv::Linear => alltoall::linear(&mut s, n, me, sblocks, rblocks),
        Alltoallv::Pairwise => alltoall::pairwise(&mut s, n, me, sblocks, rblocks),
    }
    s
}

impl Comm {
    /// Starts `sched` over `send` and `recv` as this communicator's next collective.
    ///
    /// # Safety
    /// The memories must stay valid and untouched by others (`send` is only read) for `'a`.
    unsafe fn gx_launch<'a>(&self, sched: Schedule, send: Mem, recv: Mem) -> Result<Request<'a>> {
        // SAFETY: forwarded contract.
        let raw = unsafe { self.launch(sched, Bind { send, recv }, None) }?;
        Ok(Request::borrowing(raw))
    }

    // ------------------------------------------------------------------ gather

    blocking! {
        /// `MPI_Gather`: every rank's `send` (all of the same length) to `recv` at `root`, in rank
        /// order (`n` times `send`'s length there; ignored elsewhere: pass `&mut []`).
        fn gather<T>(send: &[T], recv: &mut [T], root: u32) = igather;
        /// `MPI_Gather` with `MPI_IN_PLACE` at the root: there `buf` is the output, holding the
        /// root's block in its slot already; elsewhere it is the input.
        fn gather_in_place<T>(buf: &mut [T], root: u32) = igather_in_place;
        /// `MPI_Gatherv`: every rank's `send` to the root's `recv`, rank i's at `displs[i]` (its
        /// length must be `counts[i]`). `recv`, `counts` and `displs` are ignored except at the root.
        fn gatherv<T>(send: &[T], recv: &mut [T], counts: &[usize], displs: &[usize], root: u32) = igatherv;
        /// `MPI_Gatherv` with `MPI_IN_PLACE` at the root: there `buf` is the output, holding the
        /// root's block at `displs[root]` already; elsewhere it is the input.
        fn gatherv_in_place<T>(
            buf: &mut [T],
            counts: &[usize],
            displs: &[usize],
            root: u32,
        ) = igatherv_in_place;
    }

    /// `MPI_Igather`.
    pub fn igather<'a, T: Equivalence>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        root: u32,
    ) -> Result<Request<'a>> {
        let recv = if self.rank() == root { output(recv) } else { NONE };
        self.gx_gather::<T>(input(send), recv, root, Forced::from_env()?.gather)
    }

    /// `MPI_Igather` with `MPI_IN_PLACE` at the root (see [`Comm::gather_in_place`]).
    pub fn igather_in_place<'a, T: Equivalence>(&self, buf: &'a mut [T], root: u32) -> Result<Request<'a>> {
        let f = Forced::from_env()?.gather;
        if self.rank() == root {
            self.gx_gather::<T>(NONE, output(buf), root, f)
        } else {
            self.gx_gather::<T>(input(buf), NONE, root, f)
        }
    }

    /// Gather from `send` (`NONE` in place at the root) into `recv` (the root's).
    pub(crate) fn gx_gather<'a, T: Equivalence>(
        &self,
        send: Mem,
        recv: Mem,
        root: u32,
        forced: Option<Gather>,
    ) -> Result<Request<'a>> {
        const CALL: &str = "MPI_Gather";
        self.check_root(CALL, root)?;
        let (n, me, elem) = (self.size(), self.rank(), std::mem::size_of::<T>());
        let (mine, b) = if me != root {
            (Range::new(SEND, 0, send.1), send.1)
        } else if send.0.is_null() {
            if !recv.1.is_multiple_of(n as usize * elem) {
                return Err(mismatch(CALL, format!("{} output elements for {n} ranks", recv.1 / elem)));
            }
            let b = recv.1 / n as usize;
            (Range::new(RECV, root as usize * b, b), b)
        } else {
            if recv.1 != n as usize * send.1 {
                return Err(mismatch(
                    CALL,
                    format!("{} output elements at the root for {n} × {}", recv.1 / elem, send.1 / elem),
                ));
            }
            (Range::new(SEND, 0, send.1), send.1)
        };
        let s = gather_schedule(n, me, root, mine, b, choice::gather(forced, b));
        // SAFETY: the callers hold the slices' borrows for 'a.
        unsafe { self.gx_launch(s, send, recv) }
    }

    /// `MPI_Igatherv`.
    pub fn igatherv<'a, T: Equivalence>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        counts: &[usize],
        displs: &[usize],
        root: u32,
    ) -> Result<Request<'a>> {
        let recv = if self.rank() == root { output(recv) } else { NONE };
        self.gx_gatherv::<T>(input(send), recv, counts, displs, root)
    }

    /// `MPI_Igatherv` with `MPI_IN_PLACE` at the root (see [`Comm::gatherv_in_place`]).
    pub fn igatherv_in_place<'a, T: Equivalence>(
        &self,
        buf: &'a mut [T],
        counts: &[usize],
        displs: &[usize],
        root: u32,
    ) -> Result<Request<'a>> {
        if self.rank() == root {
            self.gx_gatherv::<T>(NONE, output(buf), counts, displs, root)
        } else {
            self.gx_gatherv::<T>(input(buf), NONE, counts, displs, root)
        }
    }

    fn gx_gatherv<'a, T: Equivalence>(
        &self,
        send: Mem,
        recv: Mem,
        counts: &[usize],
        displs: &[usize],
        root: u32,
    ) -> Result<Request<'a>> {
        const CALL: &str = "MPI_Gatherv";
        self.check_root(CALL, root)?;
        let (n, me, elem) = (self.size(), self.rank(), std::mem::size_of::<T>());
        let (mine, blocks) = if me == root {
            let blocks = layout(CALL, n, counts, displs, recv.1 / elem.max(1), elem, RECV, true)?;
            let own = blocks[me as usize];
            if send.0.is_null() {
                (own, blocks)
            } else if send.1 != own.len {
                return Err(mismatch(
                    CALL,
                    format!("the root sends {} elements, counts[{root}] = {}", send.1 / elem, own.len / elem),
                ));
            } else {
                (Range::new(SEND, 0, send.1), blocks)
            }
        } else {
            (Range::new(SEND, 0, send.1), vec![Range::EMPTY; n as usize])
        };
        let mut s = Schedule::new();
        gather::linear(&mut s, n, me, root, mine, &blocks);
        // SAFETY: the callers hold the slices' borrows for 'a.
        unsafe { self.gx_launch(s, send, recv) }
    }

    // ------------------------------------------------------------------ scatter

    blocking! {
        /// `MPI_Scatter`: block i of `send` at `root` (`n` times `recv`'s length there; ignored
        /// elsewhere: pass `&[]`) to rank i's `recv`.
        fn scatter<T>(send: &[T], recv: &mut [T], root: u32) = iscatter;
        /// `MPI_Scatter` with `MPI_IN_PLACE` at the root: there `buf` is the input (only read; the
        /// root's block stays in its slot); elsewhere it is the output.
        fn scatter_in_place<T>(buf: &mut [T], root: u32) = iscatter_in_place;
        /// `MPI_Scatterv`: `counts[i]` elements at `displs[i]` of the root's `send` to rank i's
        /// `recv` (of that length). `send`, `counts` and `displs` are ignored except at the root.
        fn scatterv<T>(send: &[T], counts: &[usize], displs: &[usize], recv: &mut [T], root: u32) = iscatterv;
        /// `MPI_Scatterv` with `MPI_IN_PLACE` at the root: there `buf` is the input (only read);
        /// elsewhere it is the output.
        fn scatterv_in_place<T>(
            buf: &mut [T],
            counts: &[usize],
            displs: &[usize],
            root: u32,
        ) = iscatterv_in_place;
    }

    /// `MPI_Iscatter`.
    pub fn iscatter<'a, T: Equivalence>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        root: u32,
    ) -> Result<Request<'a>> {
        let send = if self.rank() == root { input(send) } else { NONE };
        self.gx_scatter::<T>(send, Some(output(recv)), root, Forced::from_env()?.scatter)
    }

    /// `MPI_Iscatter` with `MPI_IN_PLACE` at the root (see [`Comm::scatter_in_place`]).
    pub fn iscatter_in_place<'a, T: Equivalence>(&self, buf: &'a mut [T], root: u32) -> Result<Request<'a>> {
        let f = Forced::from_env()?.scatter;
        if self.rank() == root {
            self.gx_scatter::<T>(input(buf), None, root, f)
        } else {
            self.gx_scatter::<T>(NONE, Some(output(buf)), root, f)
        }
    }

    /// Scatter from `send` (the root's) into `recv` (`None` in place at the root).
    pub(crate) fn gx_scatter<'a, T: Equivalence>(
        &self,
        send: Mem,
        recv: Option<Mem>,
        root: u32,
        forced: Option<Gather>,
    ) -> Result<Request<'a>> {
        const CALL: &str = "MPI_Scatter";
        self.check_root(CALL, root)?;
        let (n, me, elem) = (self.size(), self.rank(), std::mem::size_of::<T>());
        let b = match recv {
            Some(r) if me != root => r.1,
            Some(r) if send.1 == n as usize * r.1 => r.1,
            Some(r) => {
                return Err(mismatch(
                    CALL,
                    format!("{} input elements at the root for {n} × {}", send.1 / elem, r.1 / elem),
                ));
            }
            None if send.1.is_multiple_of(n as usize * elem) => send.1 / n as usize,
            None => return Err(mismatch(CALL, format!("{} input elements for {n} ranks", send.1 / elem))),
        };
        let out = recv.map(|_| Range::new(RECV, 0, b));
        let s = scatter_schedule(n, me, root, out, b, choice::gather(forced, b));
        // SAFETY: the callers hold the slices' borrows for 'a.
        unsafe { self.gx_launch(s, send, recv.unwrap_or(NONE)) }
    }

    /// `MPI_Iscatterv`.
    pub fn iscatterv<'a, T: Equivalence>(
        &self,
        send: &'a [T],
        counts: &[usize],
        displs: &[usize],
        recv: &'a mut [T],
        root: u32,
    ) -> Result<Request<'a>> {
        let send = if self.rank() == root { input(send) } else { NONE };
        self.gx_scatterv::<T>(send, counts, displs, Some(output(recv)), root)
    }

    /// `MPI_Iscatterv` with `MPI_IN_PLACE` at the root (see [`Comm::scatterv_in_place`]).
    pub fn iscatterv_in_place<'a, T: Equivalence>(
        &self,
        buf: &'a mut [T],
        counts: &[usize],
        displs: &[usize],
        root: u32,
    ) -> Result<Request<'a>> {
        if self.rank() == root {
            self.gx_scatterv::<T>(input(buf), counts, displs, None, root)
        } else {
            self.gx_scatterv::<T>(NONE, counts, displs, Some(output(buf)), root)
        }
    }

    fn gx_scatterv<'a, T: Equivalence>(
        &self,
        send: Mem,
        counts: &[usize],
        displs: &[usize],
        recv: Option<Mem>,
        root: u32,
    ) -> Result<Request<'a>> {
        const CALL: &str = "MPI_Scatterv";
        self.check_root(CALL, root)?;
        let (n, me, elem) = (self.size(), self.rank(), std::mem::size_of::<T>());
        let blocks = if me == root {
            let blocks = layout(CALL, n, counts, displs, send.1 / elem.max(1), elem, SEND, false)?;
            if let Some(r) = recv.filter(|r| r.1 != blocks[me as usize].len) {
                return Err(mismatch(
                    CALL,
                    format!(
                        "the root receives {} elements, counts[{root}] = {}",
                        r.1 / elem,
                        counts[me as usize]
                    ),
                ));
            }
            blocks
        } else {
            vec![Range::EMPTY; n as usize]
        };
        let out = recv.map(|r| Range::new(RECV, 0, r.1));
        let mut s = Schedule::new();
        scatter::linear(&mut s, n, me, root, out, &blocks);
        // SAFETY: the callers hold the slices' borrows for 'a.
        unsafe { self.gx_launch(s, send, recv.unwrap_or(NONE)) }
    }

    // ------------------------------------------------------------------ allgather

    blocking! {
        /// `MPI_Allgather`: every rank's `send` (all of the same length) to every `recv`, in rank
        /// order (`n` times `send`'s length).
        fn allgather<T>(send: &[T], recv: &mut [T]) = iallgather;
        /// `MPI_Allgather` with `MPI_IN_PLACE`: `buf` is the output, holding this rank's block in
        /// its slot already.
        fn allgather_in_place<T>(buf: &mut [T]) = iallgather_in_place;
        /// `MPI_Allgatherv`: every rank's `send` to every `recv`, rank i's at `displs[i]` (its
        /// length must be `counts[i]`).
        fn allgatherv<T>(send: &[T], recv: &mut [T], counts: &[usize], displs: &[usize]) = iallgatherv;
        /// `MPI_Allgatherv` with `MPI_IN_PLACE`: `buf` is the output, holding this rank's block at
        /// `displs[rank]` already.
        fn allgatherv_in_place<T>(buf: &mut [T], counts: &[usize], displs: &[usize]) = iallgatherv_in_place;
    }

    /// `MPI_Iallgather`.
    pub fn iallgather<'a, T: Equivalence>(&self, send: &'a [T], recv: &'a mut [T]) -> Result<Request<'a>> {
        self.gx_allgather::<T>(input(send), output(recv), Forced::from_env()?.allgather)
    }

    /// `MPI_Iallgather` with `MPI_IN_PLACE`.
    pub fn iallgather_in_place<'a, T: Equivalence>(&self, buf: &'a mut [T]) -> Result<Request<'a>> {
        self.gx_allgather::<T>(NONE, output(buf), Forced::from_env()?.allgather)
    }

    pub(crate) fn gx_allgather<'a, T: Equivalence>(
        &self,
        send: Mem,
        recv: Mem,
        forced: Option<Allgather>,
    ) -> Result<Request<'a>> {
        const CALL: &str = "MPI_Allgather";
        let (n, me, elem) = (self.size(), self.rank(), std::mem::size_of::<T>());
        let (mine, b) = if send.0.is_null() {
            if !recv.1.is_multiple_of(n as usize * elem) {
                return Err(mismatch(CALL, format!("{} output elements for {n} ranks", recv.1 / elem)));
            }
            let b = recv.1 / n as usize;
            (Range::new(RECV, me as usize * b, b), b)
        } else if recv.1 != n as usize * send.1 {
            return Err(mismatch(
                CALL,
                format!("{} output elements for {n} × {}", recv.1 / elem, send.1 / elem),
            ));
        } else {
            (Range::new(SEND, 0, send.1), send.1)
        };
        let s = allgather_schedule(n, me, mine, b, choice::allgather(forced, n, recv.1));
        // SAFETY: the callers hold the slices' borrows for 'a.
        unsafe { self.gx_launch(s, send, recv) }
    }

    /// `MPI_Iallgatherv`.
    pub fn iallgatherv<'a, T: Equivalence>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<Request<'a>> {
        self.gx_allgatherv::<T>(input(send), output(recv), counts, displs, Forced::from_env()?.allgatherv)
    }

    /// `MPI_Iallgatherv` with `MPI_IN_PLACE`.
    pub fn iallgatherv_in_place<'a, T: Equivalence>(
        &self,
        buf: &'a mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<Request<'a>> {
        self.gx_allgatherv::<T>(NONE, output(buf), counts, displs, Forced::from_env()?.allgatherv)
    }

    pub(crate) fn gx_allgatherv<'a, T: Equivalence>(
        &self,
        send: Mem,
        recv: Mem,
        counts: &[usize],
        displs: &[usize],
        forced: Option<Allgatherv>,
    ) -> Result<Request<'a>> {
        const CALL: &str = "MPI_Allgatherv";
        let (n, me, elem) = (self.size(), self.rank(), std::mem::size_of::<T>());
        let blocks = layout(CALL, n, counts, displs, recv.1 / elem.max(1), elem, RECV, true)?;
        let own = blocks[me as usize];
        let mine = if send.0.is_null() {
            own
        } else if send.1 != own.len {
            return Err(mismatch(
                CALL,
                format!("{} input elements, counts[{me}] = {}", send.1 / elem, own.len / elem),
            ));
        } else {
            Range::new(SEND, 0, send.1)
        };
        let s = allgatherv_schedule(n, me, mine, &blocks, choice::allgatherv(forced));
        // SAFETY: the callers hold the slices' borrows for 'a.
        unsafe { self.gx_launch(s, send, recv) }
    }

    // ------------------------------------------------------------------ alltoall

    blocking! {
        /// `MPI_Alltoall`: block j of rank i's `send` to block i of rank j's `recv` (both of `n`
        /// equal blocks, of the same length on every rank).
        fn alltoall<T>(send: &[T], recv: &mut [T]) = ialltoall;
        /// `MPI_Alltoall` with `MPI_IN_PLACE`: `buf` is the input, replaced by the output.
        fn alltoall_in_place<T>(buf: &mut [T]) = ialltoall_in_place;
        /// `MPI_Alltoallv`: `scounts[j]` elements at `sdispls[j]` of rank i's `send` to rank j's
        /// `recv` at `rdispls[i]` (where `rcounts[i]` must be the same count).
        fn alltoallv<T>(
            send: &[T],
            scounts: &[usize],
            sdispls: &[usize],
            recv: &mut [T],
            rcounts: &[usize],
            rdispls: &[usize],
        ) = ialltoallv;
        /// `MPI_Alltoallv` with `MPI_IN_PLACE`: `buf` is the input, laid out by `counts` and
        /// `displs`, and is replaced by the output, laid out the same way.
        fn alltoallv_in_place<T>(buf: &mut [T], counts: &[usize], displs: &[usize]) = ialltoallv_in_place;
    }

    /// `MPI_Ialltoall`.
    pub fn ialltoall<'a, T: Equivalence>(&self, send: &'a [T], recv: &'a mut [T]) -> Result<Request<'a>> {
        self.gx_alltoall::<T>(input(send), output(recv), Forced::from_env()?.alltoall)
    }

    /// `MPI_Ialltoall` with `MPI_IN_PLACE`.
    pub fn ialltoall_in_place<'a, T: Equivalence>(&self, buf: &'a mut [T]) -> Result<Request<'a>> {
        self.gx_alltoall::<T>(NONE, output(buf), Forced::from_env()?.alltoall)
    }

    pub(crate) fn gx_alltoall<'a, T: Equivalence>(
        &self,
        send: Mem,
        recv: Mem,
        forced: Option<Alltoall>,
    ) -> Result<Request<'a>> {
        const CALL: &str = "MPI_Alltoall";
        let (n, me, elem) = (self.size(), self.rank(), std::mem::size_of::<T>());
        let in_place = send.0.is_null();
        if !in_place && send.1 != recv.1 {
            return Err(mismatch(
                CALL,
                format!("{} input and {} output elements", send.1 / elem, recv.1 / elem),
            ));
        }
        if !recv.1.is_multiple_of(n as usize * elem) {
            return Err(mismatch(CALL, format!("{} elements are not {n} equal blocks", recv.1 / elem)));
        }
        let b = recv.1 / n as usize;
        let s = alltoall_schedule(n, me, in_place, b, choice::alltoall(forced, n, b));
        // SAFETY: the callers hold the slices' borrows for 'a.
        unsafe { self.gx_launch(s, send, recv) }
    }

    /// `MPI_Ialltoallv`.
    pub fn ialltoallv<'a, T: Equivalence>(
        &self,
        send: &'a [T],
        scounts: &[usize],
        sdispls: &[usize],
        recv: &'a mut [T],
        rcounts: &[usize],
        rdispls: &[usize],
    ) -> Result<Request<'a>> {
        let s = Some((input(send), scounts, sdispls));
        self.gx_alltoallv::<T>(s, output(recv), rcounts, rdispls, Forced::from_env()?.alltoallv)
    }

    /// `MPI_Ialltoallv` with `MPI_IN_PLACE`.
    pub fn ialltoallv_in_place<'a, T: Equivalence>(
        &self,
        buf: &'a mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<Request<'a>> {
        self.gx_alltoallv::<T>(None, output(buf), counts, displs, Forced::from_env()?.alltoallv)
    }

    pub(crate) fn gx_alltoallv<'a, T: Equivalence>(
        &self,
        send: Option<(Mem, &[usize], &[usize])>,
        recv: Mem,
        rcounts: &[usize],
        rdispls: &[usize],
        forced: Option<Alltoallv>,
    ) -> Result<Request<'a>> {
        const CALL: &str = "MPI_Alltoallv";
        let (n, me, elem) = (self.size(), self.rank(), std::mem::size_of::<T>());
        let rblocks = layout(CALL, n, rcounts, rdispls, recv.1 / elem.max(1), elem, RECV, true)?;
        let sblocks = match send {
            Some((m, c, d)) => Some(layout(CALL, n, c, d, m.1 / elem.max(1), elem, SEND, false)?),
            None => None,
        };
        let largest = rblocks.iter().chain(sblocks.iter().flatten()).map(|r| r.len).max().unwrap_or(0);
        let s = alltoallv_schedule(n, me, sblocks.as_deref(), &rblocks, choice::alltoallv(forced, largest));
        // SAFETY: the callers hold the slices' borrows for 'a.
        unsafe { self.gx_launch(s, send.map_or(NONE, |s| s.0), recv) }
    }
}

// ---------------------------------------------------------------------- alltoallw

/// The byte ranges (packed order, adjacent ones merged) of `count` elements of `ty` at byte
/// `displ` of `buf` (`len` bytes long): an alltoallw block.
fn pieces(
    call: &str,
    peer: usize,
    (count, displ, ty): (usize, usize, &Datatype),
    buf: BufId,
    len: usize,
) -> Result<Vec<Range>> {
    if count == 0 || ty.size() == 0 {
        return Ok(Vec::new());
    }
    let Some(blocks) = ty.blocks() else {
        return Err(Error::datatype(format!("{call}: the datatype of block {peer} is not committed")));
    };
    let ext = i128::from(ty.extent());
    let mut v: Vec<Range> = Vec::new();
    for k in 0..count {
        for &(off, l) in blocks.iter().filter(|b| b.1 > 0) {
            let start = displ as i128 + k as i128 * ext + off as i128;
            if start < 0 || start + l as i128 > len as i128 {
                return Err(Error::buffer(format!(
                    "{call}: block {peer} ({count} elements at byte {displ}) leaves the buffer of {len} bytes"
                )));
            }
            let start = start as usize;
            match v.last_mut() {
                Some(last) if last.end() == start => last.len += l,
                _ => v.push(Range::new(buf, start, l)),
            }
        }
    }
    Ok(v)
}

/// Alltoallw from the blocks `send` (`None`: in place, the input laid out as `recv` in the first
/// `recv_len` bytes of [`RECV`]) into the blocks `recv`. A block of one piece is sent or received
/// as is; others are packed into (unpacked from) a temporary before (after) the exchange.
pub(crate) fn alltoallw_schedule(
    n: u32,
    me: u32,
    send: Option<&[Vec<Range>]>,
    recv: &[Vec<Range>],
    recv_len: usize,
    a: Alltoallv,
) -> Schedule {
    alltoallw_with(send, recv, recv_len, |s, sblocks, rblocks| match a {
        Alltoallv::Linear => alltoall::linear(s, n, me, sblocks, rblocks),
        Alltoallv::Pairwise => alltoall::pairwise(s, n, me, sblocks, rblocks),
    })
}

/// The blocks of an alltoallw made single ranges (packed through temporaries when they are
/// several pieces) for `exchange` to move, and unpacked after it (intercommunicators exchange
/// them otherwise).
pub(crate) fn alltoallw_with(
    send: Option<&[Vec<Range>]>,
    recv: &[Vec<Range>],
    recv_len: usize,
    exchange: impl FnOnce(&mut Schedule, &[Range], &[Range]),
) -> Schedule {
    let mut s = Schedule::new();
    let copied: Vec<Vec<Range>>;
    let send = match send {
        Some(x) => x,
        None => {
            let t = alltoall::copy_input(&mut s, recv_len);
            copied = recv.iter().map(|p| p.iter().map(|r| Range { buf: t, ..*r }).collect()).collect();
            &copied
        }
    };
    let total = |p: &[Range]| p.iter().map(|r| r.len).sum::<usize>();
    let pre = s.round();
    let mut sblocks = Vec::with_capacity(send.len());
    for p in send {
        sblocks.push(match p.len() {
            0 => Range::EMPTY,
            1 => p[0],
            _ => {
                let t = s.tmp(total(p));
                let mut at = 0;
                for r in p {
                    s.copy(pre, *r, Range::new(t, at, r.len));
                    at += r.len;
                }
                Range::new(t, 0, at)
            }
        });
    }
    // Output blocks that overlap (MPI calls it erroneous; MPICH and Open MPI run it): every
    // block lands in a temporary and is copied out in rank order, so the last rank's bytes win
    // and no two receives ever write the same memory.
    let overlapping = outputs_overlap(recv.iter().flatten());
    let (mut rblocks, mut unpack) = (Vec::with_capacity(recv.len()), Vec::new());
    for p in recv {
        rblocks.push(match p.len() {
            0 => Range::EMPTY,
            1 if !overlapping => p[0],
            _ => {
                let t = s.tmp(total(p));
                unpack.push((t, p));
                Range::new(t, 0, total(p))
            }
        });
    }
    exchange(&mut s, &sblocks, &rblocks);
    if !unpack.is_empty() {
        let post = s.round();
        for (t, p) in unpack {
            let mut at = 0;
            for r in p {
                s.copy(post, Range::new(t, at, r.len), *r);
                at += r.len;
            }
        }
    }
    s
}

/// Whether two non-empty pieces of the output blocks overlap.
fn outputs_overlap<'a>(pieces: impl Iterator<Item = &'a Range>) -> bool {
    let mut all: Vec<&Range> = pieces.filter(|r| r.len > 0).collect();
    all.sort_by_key(|r| r.off);
    all.windows(2).any(|w| w[0].end() > w[1].off)
}

/// `MPI_Alltoallw`, on bytes: blocks of any committed datatypes, displacements in bytes.
impl Comm {
    blocking! {
        /// `MPI_Alltoallw`: `scounts[j]` elements of `stypes[j]` at byte `sdispls[j]` of `send` to
        /// rank j, which receives them as `rcounts[i]` elements of `rtypes[i]` at byte `rdispls[i]`
        /// of its `recv` (the type signatures must match, as MPI requires). The algorithm is
        /// alltoallv's (`MADMPI_COLL_ALLTOALLV`); non-contiguous blocks are packed through
        /// temporaries.
        fn alltoallw(
            send: &[u8],
            scounts: &[usize],
            sdispls: &[usize],
            stypes: &[Datatype],
            recv: &mut [u8],
            rcounts: &[usize],
            rdispls: &[usize],
            rtypes: &[Datatype],
        ) = ialltoallw;
    }

    /// `MPI_Ialltoallw`.
    #[allow(clippy::too_many_arguments)]
    pub fn ialltoallw<'a>(
        &self,
        send: &'a [u8],
        scounts: &[usize],
        sdispls: &[usize],
        stypes: &[Datatype],
        recv: &'a mut [u8],
        rcounts: &[usize],
        rdispls: &[usize],
        rtypes: &[Datatype],
    ) -> Result<Request<'a>> {
        let s = Some((input(send), (scounts, sdispls, stypes)));
        let forced = Forced::from_env()?.alltoallv;
        self.gx_alltoallw(s, output(recv), (rcounts, rdispls, rtypes), forced)
    }

    blocking! {
        /// `MPI_Alltoallw` with `MPI_IN_PLACE`: `buf` is the input, laid out by `counts`, `displs`
        /// and `types`, and is replaced by the output, laid out the same way.
        fn alltoallw_in_place(
            buf: &mut [u8],
            counts: &[usize],
            displs: &[usize],
            types: &[Datatype],
        ) = ialltoallw_in_place;
    }

    /// `MPI_Ialltoallw` with `MPI_IN_PLACE`.
    pub fn ialltoallw_in_place<'a>(
        &self,
        buf: &'a mut [u8],
        counts: &[usize],
        displs: &[usize],
        types: &[Datatype],
    ) -> Result<Request<'a>> {
        let forced = Forced::from_env()?.alltoallv;
        self.gx_alltoallw(None, output(buf), (counts, displs, types), forced)
    }

    /// Alltoallw from `send` (`None`: in place) into `recv`, each with its (counts, byte
    /// displacements, types).
    #[allow(clippy::type_complexity)]
    pub(crate) fn gx_alltoallw<'a>(
        &self,
        send: Option<(Mem, (&[usize], &[usize], &[Datatype]))>,
        recv: Mem,
        rlay: (&[usize], &[usize], &[Datatype]),
        forced: Option<Alltoallv>,
    ) -> Result<Request<'a>> {
        const CALL: &str = "MPI_Alltoallw";
        let (n, me) = (self.size(), self.rank());
        let blocks = |(c, d, t): (&[usize], &[usize], &[Datatype]), buf, len| -> Result<Vec<Vec<Range>>> {
            if c.len() != n as usize || d.len() != n as usize || t.len() != n as usize {
                return Err(Error::arg(format!(
                    "{CALL}: {} counts, {} displacements and {} types for {n} ranks",
                    c.len(),
                    d.len(),
                    t.len()
                )));
            }
            (0..n as usize).map(|i| pieces(CALL, i, (c[i], d[i], &t[i]), buf, len)).collect()
        };
        let rblocks = blocks(rlay, RECV, recv.1)?;
        let mut all: Vec<&Range> = rblocks.iter().flatten().collect();
        all.sort_by_key(|r| r.off);
        if all.windows(2).any(|w| w[0].end() > w[1].off) {
            return Err(Error::arg(format!("{CALL}: output blocks overlap")));
        }
        let sblocks = match send {
            Some((m, lay)) => Some(blocks(lay, SEND, m.1)?),
            None => None,
        };
        let len = |p: &[Range]| p.iter().map(|r| r.len).sum::<usize>();
        if let Some(sb) = &sblocks {
            let (a, b) = (len(&sb[me as usize]), len(&rblocks[me as usize]));
            if a != b {
                return Err(mismatch(CALL, format!("{a} bytes to this rank itself, {b} bytes expected")));
            }
        }
        let largest = rblocks.iter().chain(sblocks.iter().flatten()).map(|p| len(p)).max().unwrap_or(0);
        let a = choice::alltoallv(forced, largest);
        let s = alltoallw_schedule(n, me, sblocks.as_deref(), &rblocks, recv.1, a);
        // SAFETY: the callers hold the slices' borrows for 'a.
        unsafe { self.gx_launch(s, send.map_or(NONE, |s| s.0), recv) }
    }
}

/// Every algorithm in the simulator (`super::sim`): n = 1..=9, every root, in place and not,
/// blocks of 0 to 24 bytes, `v` forms with uneven blocks (zeros included) out of rank order with
/// gaps, which must stay untouched.
#[cfg(test)]
mod sim_tests {
    use super::*;
    use crate::coll::sim::run;

    const GAP: u8 = 0xa5;
    const SIZES: [usize; 5] = [0, 1, 3, 8, 24];

    fn none(_: &[u8], _: &mut [u8], _: usize) {}

    /// Rank r's block of `len` bytes.
    fn blk(r: u32, len: usize) -> Vec<u8> {
        (0..len).map(|i| (r as usize * 37 + i * 11 + 1) as u8).collect()
    }

    /// The block from rank i to rank j.
    fn blk2(i: u32, j: u32, len: usize) -> Vec<u8> {
        (0..len).map(|k| (i as usize * 59 + j as usize * 13 + k * 7 + 3) as u8).collect()
    }

    fn cat(n: u32, b: usize) -> Vec<u8> {
        (0..n).flat_map(|r| blk(r, b)).collect()
    }

    /// Blocks of `counts` bytes placed in reverse rank order with a gap byte between (and at
    /// both ends); returns the ranges in `buf` and the buffer's length.
    fn vlayout(counts: &[usize], buf: BufId) -> (Vec<Range>, usize) {
        let mut v = vec![Range::EMPTY; counts.len()];
        let mut at = 1;
        for i in (0..counts.len()).rev() {
            v[i] = Range::new(buf, at, counts[i]);
            at += counts[i] + 1;
        }
        (v, at + 1)
    }

    /// A buffer of `len` gap bytes with `blocks[i]` holding `data(i)`.
    fn fill(len: usize, blocks: &[Range], data: impl Fn(u32, usize) -> Vec<u8>) -> Vec<u8> {
        let mut v = vec![GAP; len];
        for (i, r) in blocks.iter().enumerate() {
            v[r.off..r.end()].copy_from_slice(&data(i as u32, r.len));
        }
        v
    }

    fn go(what: &str, s: Vec<Schedule>, send: Vec<Vec<u8>>, recv: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        run(s, send, recv, &none).unwrap_or_else(|e| panic!("{what}: {e}"))
    }

    #[test]
    fn gather_and_scatter_every_algorithm_size_and_root() {
        for a in [Gather::Binomial, Gather::Linear] {
            for n in 1..=9u32 {
                for root in 0..n {
                    for b in SIZES {
                        for in_place in [false, true] {
                            let what = format!("gather {a:?} n={n} root={root} b={b} in_place={in_place}");
                            let ip = |me| in_place && me == root;
                            let s = (0..n)
                                .map(|me| {
                                    let mine = if ip(me) {
                                        Range::new(RECV, root as usize * b, b)
                                    } else {
                                        Range::new(SEND, 0, b)
                                    };
                                    gather_schedule(n, me, root, mine, b, a)
                                })
                                .collect();
                            let (send, recv) = (0..n)
                                .map(|me| match (me == root, ip(me)) {
                                    (false, _) => (blk(me, b), vec![]),
                                    (true, false) => (blk(me, b), vec![GAP; n as usize * b]),
                                    (true, true) => {
                                        let mut r = vec![GAP; n as usize * b];
                                        r[root as usize * b..][..b].copy_from_slice(&blk(root, b));
                                        (vec![], r)
                                    }
                                })
                                .unzip();
                            let got = go(&what, s, send, recv);
                            assert_eq!(got[root as usize], cat(n, b), "{what}");

                            let what = format!("scatter {a:?} n={n} root={root} b={b} in_place={in_place}");
                            let out = |me| (!ip(me)).then(|| Range::new(RECV, 0, b));
                            let s = (0..n).map(|me| scatter_schedule(n, me, root, out(me), b, a)).collect();
                            let (send, recv) = (0..n)
                                .map(|me| match (me == root, ip(me)) {
                                    (false, _) => (vec![], vec![GAP; b]),
                                    (true, false) => (cat(n, b), vec![GAP; b]),
                                    (true, true) => (cat(n, b), vec![]),
                                })
                                .unzip();
                            let got = go(&what, s, send, recv);
                            for me in 0..n {
                                let want = if ip(me) { vec![] } else { blk(me, b) };
                                assert_eq!(got[me as usize], want, "{what}: rank {me}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn gatherv_and_scatterv_uneven_blocks() {
        for n in 1..=9u32 {
            for seed in 0..3usize {
                let counts: Vec<usize> = (0..n as usize).map(|i| ((i + seed) * 5 % 4) * 3).collect();
                for root in 0..n {
                    for in_place in [false, true] {
                        let what = format!("gatherv n={n} root={root} counts={counts:?} in_place={in_place}");
                        let ip = |me| in_place && me == root;
                        let (blocks, len) = vlayout(&counts, RECV);
                        let s = (0..n)
                            .map(|me| {
                                let c = counts[me as usize];
                                let mine = if ip(me) { blocks[me as usize] } else { Range::new(SEND, 0, c) };
                                let mut s = Schedule::new();
                                gather::linear(&mut s, n, me, root, mine, &blocks);
                                s
                            })
                            .collect();
                        let (send, recv) = (0..n)
                            .map(|me| {
                                let c = counts[me as usize];
                                match (me == root, ip(me)) {
                                    (false, _) => (blk(me, c), vec![]),
                                    (true, false) => (blk(me, c), vec![GAP; len]),
                                    (true, true) => {
                                        let own = blocks[me as usize];
                                        let mut r = vec![GAP; len];
                                        r[own.off..own.end()].copy_from_slice(&blk(me, c));
                                        (vec![], r)
                                    }
                                }
                            })
                            .unzip();
                        let got = go(&what, s, send, recv);
                        assert_eq!(got[root as usize], fill(len, &blocks, blk), "{what}");

                        let what =
                            format!("scatterv n={n} root={root} counts={counts:?} in_place={in_place}");
                        let (sblocks, slen) = vlayout(&counts, SEND);
                        let s = (0..n)
                            .map(|me| {
                                let out = (!ip(me)).then(|| Range::new(RECV, 0, counts[me as usize]));
                                let mut s = Schedule::new();
                                scatter::linear(&mut s, n, me, root, out, &sblocks);
                                s
                            })
                            .collect();
                        let (send, recv) = (0..n)
                            .map(|me| {
                                let r = if ip(me) { vec![] } else { vec![GAP; counts[me as usize]] };
                                (if me == root { fill(slen, &sblocks, blk) } else { vec![] }, r)
                            })
                            .unzip();
                        let got = go(&what, s, send, recv);
                        for me in 0..n {
                            let want = if ip(me) { vec![] } else { blk(me, counts[me as usize]) };
                            assert_eq!(got[me as usize], want, "{what}: rank {me}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn allgather_every_algorithm_and_size() {
        for n in 1..=9u32 {
            for a in [Allgather::RecursiveDoubling, Allgather::Bruck, Allgather::Ring] {
                if a == Allgather::RecursiveDoubling && !n.is_power_of_two() {
                    continue;
                }
                for b in SIZES {
                    for in_place in [false, true] {
                        let what = format!("allgather {a:?} n={n} b={b} in_place={in_place}");
                        let s = (0..n)
                            .map(|me| {
                                let mine = if in_place {
                                    Range::new(RECV, me as usize * b, b)
                                } else {
                                    Range::new(SEND, 0, b)
                                };
                                allgather_schedule(n, me, mine, b, a)
                            })
                            .collect();
                        let (send, recv) = (0..n)
                            .map(|me| {
                                let mut r = vec![GAP; n as usize * b];
                                if in_place {
                                    r[me as usize * b..][..b].copy_from_slice(&blk(me, b));
                                    (vec![], r)
                                } else {
                                    (blk(me, b), r)
                                }
                            })
                            .unzip();
                        let got = go(&what, s, send, recv);
                        for me in 0..n {
                            assert_eq!(got[me as usize], cat(n, b), "{what}: rank {me}");
                        }
                    }
                }
            }
            for a in [Allgatherv::Ring, Allgatherv::Linear] {
                for seed in 0..3usize {
                    let counts: Vec<usize> = (0..n as usize).map(|i| ((i + seed) * 5 % 4) * 3).collect();
                    let (blocks, len) = vlayout(&counts, RECV);
                    for in_place in [false, true] {
                        let what = format!("allgatherv {a:?} n={n} counts={counts:?} in_place={in_place}");
                        let s = (0..n)
                            .map(|me| {
                                let c = counts[me as usize];
                                let mine =
                                    if in_place { blocks[me as usize] } else { Range::new(SEND, 0, c) };
                                allgatherv_schedule(n, me, mine, &blocks, a)
                            })
                            .collect();
                        let (send, recv) = (0..n)
                            .map(|me| {
                                let c = counts[me as usize];
                                if in_place {
                                    let own = blocks[me as usize];
                                    let mut r = vec![GAP; len];
                                    r[own.off..own.end()].copy_from_slice(&blk(me, c));
                                    (vec![], r)
                                } else {
                                    (blk(me, c), vec![GAP; len])
                                }
                            })
                            .unzip();
                        let got = go(&what, s, send, recv);
                        for me in 0..n {
                            assert_eq!(got[me as usize], fill(len, &blocks, blk), "{what}: rank {me}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn alltoall_every_algorithm_and_size() {
        for n in 1..=9u32 {
            for a in [Alltoall::Bruck, Alltoall::Linear, Alltoall::Pairwise] {
                for b in SIZES {
                    for in_place in [false, true] {
                        let what = format!("alltoall {a:?} n={n} b={b} in_place={in_place}");
                        let s = (0..n).map(|me| alltoall_schedule(n, me, in_place, b, a)).collect();
                        let (send, recv) = (0..n)
                            .map(|me| {
                                let mine: Vec<u8> = (0..n).flat_map(|j| blk2(me, j, b)).collect();
                                if in_place { (vec![], mine) } else { (mine, vec![GAP; n as usize * b]) }
                            })
                            .unzip();
                        let got = go(&what, s, send, recv);
                        for me in 0..n {
                            let want: Vec<u8> = (0..n).flat_map(|i| blk2(i, me, b)).collect();
                            assert_eq!(got[me as usize], want, "{what}: rank {me}");
                        }
                    }
                }
            }
            // v: uneven (zeros included), and in place with symmetric counts; even ranks linear,
            // odd ones pairwise must match too.
            for seed in 0..3u32 {
                for (in_place, mixed) in [(false, false), (true, false), (false, true), (true, true)] {
                    for a in [Alltoallv::Linear, Alltoallv::Pairwise] {
                        let c = |i: u32, j: u32| {
                            let k = if in_place { i * j + i + j + seed } else { i * 7 + j * 3 + seed };
                            (k % 4) as usize * 3
                        };
                        let what =
                            format!("alltoallv {a:?} n={n} seed={seed} in_place={in_place} mixed={mixed}");
                        let alg = |me: u32| match (mixed, me % 2) {
                            (true, 0) => Alltoallv::Linear,
                            (true, _) => Alltoallv::Pairwise,
                            _ => a,
                        };
                        let lay = |me: u32| {
                            let sc: Vec<usize> = (0..n).map(|j| c(me, j)).collect();
                            let rc: Vec<usize> = (0..n).map(|i| c(i, me)).collect();
                            (vlayout(&sc, SEND), vlayout(&rc, RECV))
                        };
                        let s = (0..n)
                            .map(|me| {
                                let ((sb, _), (rb, _)) = lay(me);
                                alltoallv_schedule(n, me, (!in_place).then_some(&sb[..]), &rb, alg(me))
                            })
                            .collect();
                        let (send, recv) = (0..n)
                            .map(|me| {
                                let ((sb, sl), (rb, rl)) = lay(me);
                                let mine = fill(sl, &sb, |j, l| blk2(me, j, l));
                                if in_place {
                                    (vec![], fill(rl, &rb, |j, l| blk2(me, j, l)))
                                } else {
                                    (mine, vec![GAP; rl])
                                }
                            })
                            .unzip();
                        let got = go(&what, s, send, recv);
                        for me in 0..n {
                            let (_, (rb, rl)) = lay(me);
                            assert_eq!(
                                got[me as usize],
                                fill(rl, &rb, |i, l| blk2(i, me, l)),
                                "{what}: rank {me}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn layouts_are_checked() {
        use crate::error::ErrorClass;
        let l = |c: &[usize], d: &[usize], len, disjoint| layout("t", 3, c, d, len, 4, RECV, disjoint);
        assert!(l(&[1, 2, 0], &[0, 1, 99], 3, true).is_ok(), "a zero count may point anywhere");
        assert_eq!(l(&[1, 2], &[0, 1], 3, true).unwrap_err().class(), ErrorClass::Arg);
        assert_eq!(l(&[1, 2, 1], &[0, 1, 3], 3, true).unwrap_err().class(), ErrorClass::Buffer);
        assert_eq!(l(&[1, 2, 1], &[0, 1, 2], 4, true).unwrap_err().class(), ErrorClass::Arg);
        assert!(l(&[1, 2, 1], &[0, 1, 2], 4, false).is_ok(), "inputs may overlap");
        assert_eq!(l(&[1, 1, 1], &[0, usize::MAX, 2], 4, false).unwrap_err().class(), ErrorClass::Arg);
        let r = l(&[1, 2, 1], &[3, 1, 0], 4, true).unwrap();
        assert_eq!(r, [Range::new(RECV, 12, 4), Range::new(RECV, 4, 8), Range::new(RECV, 0, 4)]);
    }
}

/// Every algorithm through the engine, over real nmad ranks (threads as ranks, shm), and the
/// argument errors.
#[cfg(test)]
mod engine_tests {
    use super::*;
    use crate::error::ErrorClass;
    use crate::testing::on_all;

    fn val(r: u32, i: usize) -> u32 {
        r * 100_000 + i as u32
    }

    #[test]
    fn gather_family_through_the_engine() {
        for n in [1u32, 2, 3, 5] {
            on_all(n, |w| {
                let (me, nu) = (w.rank(), n as usize);
                for k in [0usize, 3, 5000] {
                    let mine: Vec<u32> = (0..k).map(|i| val(me, i)).collect();
                    let all: Vec<u32> = (0..n).flat_map(|r| (0..k).map(move |i| val(r, i))).collect();
                    for a in [Gather::Binomial, Gather::Linear] {
                        let root = (k as u32 + 1) % n;
                        let mut out = vec![0u32; if me == root { nu * k } else { 0 }];
                        let o = if me == root { output(&mut out) } else { NONE };
                        w.gx_gather::<u32>(input(&mine), o, root, Some(a)).unwrap().wait().unwrap();
                        assert!(me != root || out == all, "gather {a:?} n={n} k={k}");
                        let src = if me == root { all.clone() } else { vec![] };
                        let mut got = vec![0u32; k];
                        w.gx_scatter::<u32>(input(&src), Some(output(&mut got)), root, Some(a))
                            .unwrap()
                            .wait()
                            .unwrap();
                        assert!(got == mine, "scatter {a:?} n={n} k={k}");
                    }
                    for a in [Allgather::RecursiveDoubling, Allgather::Bruck, Allgather::Ring] {
                        let a = choice::allgather(Some(a), n, nu * k * 4);
                        let mut out = vec![0u32; nu * k];
                        w.gx_allgather::<u32>(input(&mine), output(&mut out), Some(a))
                            .unwrap()
                            .wait()
                            .unwrap();
                        assert!(out == all, "allgather {a:?} n={n} k={k}");
                    }
                    let to: Vec<u32> = (0..nu * k).map(|i| val(me, i)).collect();
                    let want: Vec<u32> = (0..n)
                        .flat_map(|r| (me as usize * k..(me as usize + 1) * k).map(move |i| val(r, i)))
                        .collect();
                    for a in [Alltoall::Bruck, Alltoall::Linear, Alltoall::Pairwise] {
                        let mut out = vec![0u32; nu * k];
                        w.gx_alltoall::<u32>(input(&to), output(&mut out), Some(a)).unwrap().wait().unwrap();
                        assert!(out == want, "alltoall {a:?} n={n} k={k}");
                        let mut inp = to.clone();
                        w.gx_alltoall::<u32>(NONE, output(&mut inp), Some(a)).unwrap().wait().unwrap();
                        assert!(inp == want, "alltoall in place {a:?} n={n} k={k}");
                    }
                }
                // v forms: rank r contributes r + 1 elements (rank 1: none), in reverse order.
                let counts: Vec<usize> = (0..nu).map(|r| if r == 1 { 0 } else { r + 1 }).collect();
                let mut displs = vec![0; nu];
                let mut at = 0;
                for r in (0..nu).rev() {
                    displs[r] = at;
                    at += counts[r];
                }
                let mine: Vec<u32> = (0..counts[me as usize]).map(|i| val(me, i)).collect();
                let mut want = vec![0u32; at];
                for r in 0..n {
                    for i in 0..counts[r as usize] {
                        want[displs[r as usize] + i] = val(r, i);
                    }
                }
                let mut out = vec![0u32; at];
                w.allgatherv(&mine, &mut out, &counts, &displs).unwrap();
                assert_eq!(out, want);
                for a in [Allgatherv::Ring, Allgatherv::Linear] {
                    let mut inp = vec![0u32; at];
                    inp[displs[me as usize]..][..mine.len()].copy_from_slice(&mine);
                    w.gx_allgatherv::<u32>(NONE, output(&mut inp), &counts, &displs, Some(a))
                        .unwrap()
                        .wait()
                        .unwrap();
                    assert_eq!(inp, want, "allgatherv in place {a:?}");
                }
                let root = n - 1;
                let mut out = vec![0u32; if me == root { at } else { 0 }];
                w.gatherv(&mine, &mut out, &counts, &displs, root).unwrap();
                assert!(me != root || out == want);
                let mut got = vec![0u32; mine.len()];
                w.scatterv(if me == root { &want[..] } else { &[] }, &counts, &displs, &mut got, root)
                    .unwrap();
                assert_eq!(got, mine);
                // Alltoallv: i sends j (i + j) % 3 elements.
                let c = |i: u32, j: u32| ((i + j) % 3) as usize;
                let sc: Vec<usize> = (0..n).map(|j| c(me, j)).collect();
                let sd: Vec<usize> = sc.iter().scan(0, |a, &x| Some(std::mem::replace(a, *a + x))).collect();
                let send: Vec<u32> =
                    (0..n).flat_map(|j| (0..c(me, j)).map(move |i| val(me, 10 * j as usize + i))).collect();
                let want: Vec<u32> =
                    (0..n).flat_map(|r| (0..c(r, me)).map(move |i| val(r, 10 * me as usize + i))).collect();
                for a in [Alltoallv::Linear, Alltoallv::Pairwise] {
                    let mut out = vec![0u32; want.len()];
                    let s = Some((input(&send), &sc[..], &sd[..]));
                    w.gx_alltoallv::<u32>(s, output(&mut out), &sc, &sd, Some(a)).unwrap().wait().unwrap();
                    assert_eq!(out, want, "alltoallv {a:?}");
                    let mut inp = send.clone();
                    w.gx_alltoallv::<u32>(None, output(&mut inp), &sc, &sd, Some(a)).unwrap().wait().unwrap();
                    assert_eq!(inp, want, "alltoallv in place {a:?} (symmetric counts)");
                }
                // Nonblocking, several in flight.
                let (mut g, mut t) = (vec![0u32; nu * 2], vec![0u32; nu]);
                let mut ip = vec![me; nu];
                let src = vec![me; nu];
                let pair = [me, me];
                let r1 = w.iallgather(&pair, &mut g).unwrap();
                let r2 = w.ialltoall(&src, &mut t).unwrap();
                let r3 = w.ialltoall_in_place(&mut ip).unwrap();
                crate::request::wait_all(vec![r3, r1, r2]).unwrap();
                assert!(g.chunks(2).enumerate().all(|(r, c)| c == [r as u32, r as u32]));
                assert!(t == (0..n).collect::<Vec<_>>() && ip == t);
                // Argument errors.
                let class = |r: Result<()>| r.unwrap_err().class();
                assert_eq!(class(w.gather(&[1u8], &mut [0u8; 1], n)), ErrorClass::Root);
                assert_eq!(class(w.scatter(&[1u8], &mut [0u8; 1], n + 3)), ErrorClass::Root);
                assert_eq!(class(w.allgather(&[1u8; 2], &mut vec![0u8; 2 * nu + 1])), ErrorClass::Count);
                assert_eq!(class(w.alltoall(&vec![1u8; nu], &mut vec![0u8; nu + 1])), ErrorClass::Count);
                assert_eq!(
                    class(w.allgatherv(&[1u8], &mut [0u8; 4], &vec![1; nu + 1], &vec![0; nu + 1])),
                    ErrorClass::Arg,
                    "counts per rank"
                );
                let ones = vec![1usize; nu];
                let zeros = vec![0usize; nu];
                if n > 1 {
                    let e = class(w.allgatherv(&[1u8], &mut vec![0u8; nu], &ones, &zeros));
                    assert_eq!(e, ErrorClass::Arg, "overlapping output blocks");
                }
                let far: Vec<usize> = (0..nu).map(|r| r + 1).collect();
                assert_eq!(class(w.allgatherv(&[1u8], &mut vec![0u8; nu], &ones, &far)), ErrorClass::Buffer);
                if me == 0 {
                    assert_eq!(
                        class(w.gatherv(
                            &[1u8, 2],
                            &mut vec![0u8; nu],
                            &ones,
                            &(0..nu).collect::<Vec<_>>(),
                            0
                        )),
                        ErrorClass::Count
                    );
                }
                w.barrier().unwrap();
            });
        }
    }
}

/// Alltoallw: non-contiguous blocks (packed and unpacked through temporaries) in the simulator
/// for n = 1..=9 and both algorithms, in place and not; and through the engine with a vector
/// datatype.
#[cfg(test)]
mod alltoallw_tests {
    use super::*;
    use crate::coll::sim::run;
    use crate::datatype::Predefined;
    use crate::error::ErrorClass;
    use crate::testing::on_all;

    fn none(_: &[u8], _: &mut [u8], _: usize) {}

    /// Block j of 8 bytes at 8j: bytes 0 and 2..4 of it (3 bytes in two pieces).
    fn spread(n: u32, buf: BufId) -> Vec<Vec<Range>> {
        (0..n as usize).map(|j| vec![Range::new(buf, 8 * j, 1), Range::new(buf, 8 * j + 2, 2)]).collect()
    }

    #[test]
    fn alltoallw_in_the_simulator() {
        let byte = |r: u32, x: usize| (r as usize * 64 + x + 1) as u8;
        for n in 1..=9u32 {
            let nu = n as usize;
            for a in [Alltoallv::Linear, Alltoallv::Pairwise] {
                // Spread out → contiguous 3-byte blocks at 3i.
                let rb: Vec<Vec<Range>> = (0..nu).map(|i| vec![Range::new(RECV, 3 * i, 3)]).collect();
                let sb = spread(n, SEND);
                let s = (0..n).map(|me| alltoallw_schedule(n, me, Some(&sb), &rb, 3 * nu, a)).collect();
                let send = (0..n).map(|me| (0..8 * nu).map(|x| byte(me, x)).collect()).collect();
                let got = run(s, send, vec![vec![0; 3 * nu]; nu], &none).unwrap();
                for me in 0..n {
                    let want: Vec<u8> =
                        (0..n).flat_map(|i| [0, 2, 3].map(|o| byte(i, 8 * me as usize + o))).collect();
                    assert_eq!(got[me as usize], want, "{a:?} n={n} rank {me}");
                }
                // In place, spread out both ways: the other bytes stay.
                let rb = spread(n, RECV);
                let s = (0..n).map(|me| alltoallw_schedule(n, me, None, &rb, 8 * nu, a)).collect();
                let recv = (0..n).map(|me| (0..8 * nu).map(|x| byte(me, x)).collect()).collect();
                let got = run(s, vec![vec![]; nu], recv, &none).unwrap();
                for me in 0..n {
                    let mut want: Vec<u8> = (0..8 * nu).map(|x| byte(me, x)).collect();
                    for i in 0..nu {
                        for o in [0, 2, 3] {
                            want[8 * i + o] = byte(i as u32, 8 * me as usize + o);
                        }
                    }
                    assert_eq!(got[me as usize], want, "{a:?} in place n={n} rank {me}");
                }
            }
        }
    }

    #[test]
    fn alltoallw_with_a_vector_type_through_the_engine() {
        for n in [1u32, 3] {
            on_all(n, |w| {
                let (me, nu) = (w.rank(), n as usize);
                let byte = |r: u32, x: usize| (r as usize * 64 + x + 1) as u8;
                // Two elements of bytes {0, 2}, extent 3: bytes 0, 2, 3, 5 of each 8-byte block.
                let v = Datatype::vector(2, 1, 2, &Datatype::predefined(Predefined::Byte)).unwrap();
                v.commit().unwrap();
                let b = Datatype::predefined(Predefined::Byte);
                let (vs, bs) = (vec![v.clone(); nu], vec![b; nu]);
                let d8: Vec<usize> = (0..nu).map(|j| 8 * j).collect();
                let d4: Vec<usize> = (0..nu).map(|j| 4 * j).collect();
                let send: Vec<u8> = (0..8 * nu).map(|x| byte(me, x)).collect();
                let mut out = vec![0u8; 4 * nu];
                w.alltoallw(&send, &vec![2; nu], &d8, &vs, &mut out, &vec![4; nu], &d4, &bs).unwrap();
                let want: Vec<u8> =
                    (0..n).flat_map(|i| [0, 2, 3, 5].map(|o| byte(i, 8 * me as usize + o))).collect();
                assert_eq!(out, want);
                let mut inp = send.clone();
                w.alltoallw_in_place(&mut inp, &vec![2; nu], &d8, &vs).unwrap();
                let mut want = send.clone();
                for i in 0..nu {
                    for o in [0, 2, 3, 5] {
                        want[8 * i + o] = byte(i as u32, 8 * me as usize + o);
                    }
                }
                assert_eq!(inp, want);
                // Errors: an uncommitted type, a block past the end, overlapping output blocks.
                let u = vec![Datatype::vector(2, 1, 2, &Datatype::predefined(Predefined::Byte)).unwrap(); nu];
                let e = w.alltoallw_in_place(&mut inp, &vec![1; nu], &d8, &u).unwrap_err();
                assert_eq!(e.class(), ErrorClass::Type, "{e}");
                let e = w.alltoallw_in_place(&mut inp, &vec![3; nu], &d8, &vs).unwrap_err();
                assert_eq!(e.class(), ErrorClass::Buffer, "{e}");
                if n > 1 {
                    let e = w.alltoallw_in_place(&mut inp, &vec![1; nu], &vec![0; nu], &vs).unwrap_err();
                    assert_eq!(e.class(), ErrorClass::Arg, "{e}");
                }
                w.barrier().unwrap();
            });
        }
    }
}
