//! The Rust API of the reduction collectives beyond reduce and allreduce, on [`Comm`]:
//! `MPI_Reduce_scatter`, `MPI_Reduce_scatter_block`, `MPI_Scan`, `MPI_Exscan` (blocking and
//! nonblocking, typed like `api`'s), and [`reduce_local`] (`MPI_Reduce_local`, no
//! communication).
//!
//! Operations are applied in rank order (`x0 op x1 op … op xn−1`) whatever the algorithm, so
//! non-commutative operations give MPI's results.
//!
//! In place (`MPI_IN_PLACE`) has its own methods taking one `&mut` slice, as `api`'s:
//! - `reduce_scatter_in_place(buf, counts, op)`: `buf` holds the whole vector (`Σ counts`
//!   elements) on input and the rank's block on output, at its start; the elements after the
//!   block are left with unspecified values (the algorithms use them);
//! - `reduce_scatter_block_in_place(buf, op)`: the same with `buf.len() / n` elements per block
//!   (`buf.len()` must be a multiple of n);
//! - `scan_in_place(buf, op)`, `exscan_in_place(buf, op)`: `buf` is the input and receives the
//!   result.
//!
//! `MPI_Exscan`'s output on rank 0 is undefined by MPI: here rank 0's output is **left
//! untouched** (in place, it still holds rank 0's input).
//!
//! Argument errors are MPI errors before anything starts (no collective sequence number is
//! used): `MPI_ERR_COUNT` for slice lengths that do not match the counts (or the input), or
//! counts whose sum overflows; `MPI_ERR_ARG` for a `counts` slice that has not one entry per
//! rank; `MPI_ERR_OP` for an operation not defined on the type. (`MPI_ERR_BUFFER`'s cases, an
//! input aliasing the output, cannot be written with these borrows.)
//!
//! Owns argument checks and the binding of slices to the schedules of `algo::reduce_scatter`
//! and `algo::scan`.

use super::bound::Bind;
use super::choice::{self, Forced};
use super::schedule::{RECV, SEND};
use super::{Op, algo};
use crate::comm::Comm;
use crate::datatype::Equivalence;
use crate::error::{Error, Result};
use crate::request::Request;

use super::api::{Mem, NONE as IN_PLACE, input, output, reducer};
use super::api_gather::{blocking, starts};

/// `MPI_Reduce_local`: `inout[i] = input[i] op inout[i]` for every element (no communication).
/// Errors: `MPI_ERR_COUNT` if the slices differ in length, `MPI_ERR_OP` if `op` is not defined
/// on `T`.
pub fn reduce_local<T: Equivalence>(input: &[T], inout: &mut [T], op: &Op) -> Result<()> {
    let r = reducer::<T>("MPI_Reduce_local", op)?;
    if input.len() != inout.len() {
        return Err(Error::count(format!(
            "MPI_Reduce_local: {} input elements for {} inout elements",
            input.len(),
            inout.len()
        )));
    }
    let n = input.len();
    // SAFETY: `T: Equivalence` is plain data: its bytes may be read, and any bytes written by
    // the operation (elements of T's own datatype) are valid `T`s.
    let (i, o) = unsafe {
        (
            std::slice::from_raw_parts(input.as_ptr().cast::<u8>(), std::mem::size_of_val(input)),
            std::slice::from_raw_parts_mut(inout.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(inout)),
        )
    };
    r.op.reduce(i, o, n, &r.dtype)
        .map_err(|e| Error::new(e.class(), format!("MPI_Reduce_local: {}", e.message())))
}

impl Comm {
    // ------------------------------------------------------------------ reduce-scatter

    blocking! {
        /// `MPI_Reduce_scatter`: the `Σ counts` elements of `send` of every rank combined by `op`
        /// in rank order; rank i receives the `counts[i]` elements of block i (at `Σ counts[..i]`)
        /// in `recv` (of `counts[i]` elements). `counts` has one entry per rank, the same on every
        /// rank.
        fn reduce_scatter<T>(send: &[T], recv: &mut [T], counts: &[usize], op: &Op) = ireduce_scatter;
        /// `MPI_Reduce_scatter` with `MPI_IN_PLACE`: `buf` holds the whole vector (`Σ counts`
        /// elements) and receives this rank's block at its start (the rest is left unspecified).
        fn reduce_scatter_in_place<T>(buf: &mut [T], counts: &[usize], op: &Op) = ireduce_scatter_in_place;
        /// `MPI_Reduce_scatter_block`: as [`Comm::reduce_scatter`] with `recv.len()` elements for
        /// every rank (`send` holds n times as many).
        fn reduce_scatter_block<T>(send: &[T], recv: &mut [T], op: &Op) = ireduce_scatter_block;
        /// `MPI_Reduce_scatter_block` with `MPI_IN_PLACE`: `buf` holds the whole vector (a multiple
        /// of n elements) and receives this rank's block (`buf.len() / n` elements) at its start.
        fn reduce_scatter_block_in_place<T>(buf: &mut [T], op: &Op) = ireduce_scatter_block_in_place;
    }

    /// `MPI_Ireduce_scatter`.
    pub fn ireduce_scatter<'a, T: Equivalence>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        counts: &[usize],
        op: &Op,
    ) -> Result<Request<'a>> {
        let forced = Forced::from_env()?.reduce_scatter;
        self.ireduce_scatter_with::<T>("MPI_Reduce_scatter", input(send), output(recv), counts, op, forced)
    }

    /// `MPI_Ireduce_scatter` with `MPI_IN_PLACE` (see [`Comm::reduce_scatter_in_place`]).
    pub fn ireduce_scatter_in_place<'a, T: Equivalence>(
        &self,
        buf: &'a mut [T],
        counts: &[usize],
        op: &Op,
    ) -> Result<Request<'a>> {
        let forced = Forced::from_env()?.reduce_scatter;
        self.ireduce_scatter_with::<T>("MPI_Reduce_scatter", IN_PLACE, output(buf), counts, op, forced)
    }

    /// `MPI_Ireduce_scatter_block`.
    pub fn ireduce_scatter_block<'a, T: Equivalence>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        op: &Op,
    ) -> Result<Request<'a>> {
        let counts = vec![recv.len(); self.size() as usize];
        let forced = Forced::from_env()?.reduce_scatter;
        self.ireduce_scatter_with::<T>(
            "MPI_Reduce_scatter_block",
            input(send),
            output(recv),
            &counts,
            op,
            forced,
        )
    }

    /// `MPI_Ireduce_scatter_block` with `MPI_IN_PLACE`.
    pub fn ireduce_scatter_block_in_place<'a, T: Equivalence>(
        &self,
        buf: &'a mut [T],
        op: &Op,
    ) -> Result<Request<'a>> {
        let n = self.size() as usize;
        if !buf.len().is_multiple_of(n) {
            return Err(Error::count(format!(
                "MPI_Reduce_scatter_block: in place, the buffer's {} elements are not a multiple of the \
                 communicator size {n}",
                buf.len()
            )));
        }
        let counts = vec![buf.len() / n; n];
        let forced = Forced::from_env()?.reduce_scatter;
        self.ireduce_scatter_with::<T>("MPI_Reduce_scatter_block", IN_PLACE, output(buf), &counts, op, forced)
    }

    /// Checks and starts a reduce-scatter from `send` ([`IN_PLACE`]: from `recv`, which holds
    /// the whole vector) into `recv`; the caller holds both memories' borrows for `'a`.
    pub(crate) fn ireduce_scatter_with<'a, T: Equivalence>(
        &self,
        call: &str,
        send: Mem,
        recv: Mem,
        counts: &[usize],
        op: &Op,
        forced: Option<choice::ReduceScatter>,
    ) -> Result<Request<'a>> {
        let (n, me) = (self.size() as usize, self.rank() as usize);
        let elem = std::mem::size_of::<T>();
        if counts.len() != n {
            return Err(Error::arg(format!("{call}: {} counts for {n} ranks", counts.len())));
        }
        let total = counts
            .iter()
            .try_fold(0usize, |a, &c| a.checked_add(c))
            .filter(|t| t.checked_mul(elem).is_some())
            .ok_or_else(|| Error::count(format!("{call}: the counts add up to more than memory")))?;
        let in_place = send.0.is_null();
        let (input_len, output_len) =
            if in_place { (total, counts[me]) } else { (send.1 / elem.max(1), recv.1 / elem.max(1)) };
        if in_place && recv.1 / elem.max(1) != total {
            return Err(Error::count(format!(
                "{call}: in place, the buffer holds {} elements for a vector of {total}",
                recv.1 / elem.max(1)
            )));
        }
        if input_len != total || (!in_place && output_len != counts[me]) {
            return Err(Error::count(format!(
                "{call}: {input_len} input and {output_len} output elements for a vector of {total} \
                 (this rank's block: {})",
                counts[me]
            )));
        }
        let r = reducer::<T>(call, op)?;
        let a = choice::reduce_scatter(forced, total * elem, op.reorderable());
        let from = if in_place { RECV } else { SEND };
        let s = algo::reduce_scatter::schedule(me as u32, from, counts, elem, a, op.reorderable());
        // SAFETY: the callers hold the memories' borrows for 'a, which the request carries.
        let raw = unsafe { self.launch(s, Bind { send, recv }, Some(r)) }?;
        Ok(Request::borrowing(raw))
    }

    // ------------------------------------------------------------------ scan, exscan

    blocking! {
        /// `MPI_Scan`: rank r receives `send₀ op send₁ op … op send_r` in `recv` (of `send`'s
        /// length).
        fn scan<T>(send: &[T], recv: &mut [T], op: &Op) = iscan;
        /// `MPI_Scan` with `MPI_IN_PLACE`: `buf` is the input and receives the result.
        fn scan_in_place<T>(buf: &mut [T], op: &Op) = iscan_in_place;
        /// `MPI_Exscan`: rank r > 0 receives `send₀ op … op send_(r−1)` in `recv` (of `send`'s
        /// length); rank 0's `recv` is left untouched (MPI leaves it undefined).
        fn exscan<T>(send: &[T], recv: &mut [T], op: &Op) = iexscan;
        /// `MPI_Exscan` with `MPI_IN_PLACE`: `buf` is the input and receives the result (on rank 0
        /// it is left untouched: it keeps the input).
        fn exscan_in_place<T>(buf: &mut [T], op: &Op) = iexscan_in_place;
    }

    starts! {
        /// `MPI_Iscan`.
        fn iscan<'a, T>(send: &'a [T], recv: &'a mut [T], op: &Op) = iscan_checked[false];
        /// `MPI_Iscan` with `MPI_IN_PLACE`.
        fn iscan_in_place<'a, T>(buf: &'a mut [T], op: &Op) = iscan_in_place_checked[false];
        /// `MPI_Iexscan`.
        fn iexscan<'a, T>(send: &'a [T], recv: &'a mut [T], op: &Op) = iscan_checked[true];
        /// `MPI_Iexscan` with `MPI_IN_PLACE`.
        fn iexscan_in_place<'a, T>(buf: &'a mut [T], op: &Op) = iscan_in_place_checked[true];
    }

    /// Starts a scan (`exclusive`: an exscan) in place in `buf`.
    fn iscan_in_place_checked<'a, T: Equivalence>(
        &self,
        buf: &'a mut [T],
        op: &Op,
        exclusive: bool,
    ) -> Result<Request<'a>> {
        let n = buf.len();
        self.iscan_with::<T>(IN_PLACE, n, output(buf), op, exclusive, Forced::from_env()?.scan)
    }

    /// Starts a scan (`exclusive`: an exscan) from `send` into `recv`, of the same length.
    fn iscan_checked<'a, T: Equivalence>(
        &self,
        send: &'a [T],
        recv: &'a mut [T],
        op: &Op,
        exclusive: bool,
    ) -> Result<Request<'a>> {
        if send.len() != recv.len() {
            return Err(Error::count(format!(
                "{}: {} output elements for {} input elements",
                if exclusive { "MPI_Exscan" } else { "MPI_Scan" },
                recv.len(),
                send.len()
            )));
        }
        let n = send.len();
        self.iscan_with::<T>(input(send), n, output(recv), op, exclusive, Forced::from_env()?.scan)
    }

    /// Starts a scan (`exclusive`: an exscan) of `count` `T`s from `send` ([`IN_PLACE`]: from
    /// `recv`) into `recv`; the caller holds both memories' borrows for `'a`.
    pub(crate) fn iscan_with<'a, T: Equivalence>(
        &self,
        send: Mem,
        count: usize,
        recv: Mem,
        op: &Op,
        exclusive: bool,
        forced: Option<choice::Scan>,
    ) -> Result<Request<'a>> {
        let r = reducer::<T>(if exclusive { "MPI_Exscan" } else { "MPI_Scan" }, op)?;
        let elem = std::mem::size_of::<T>();
        let a = choice::scan(forced, self.size(), count * elem);
        let from = if send.0.is_null() { RECV } else { SEND };
        let (n, me, c) = (self.size(), self.rank(), op.reorderable());
        let s = algo::scan::schedule(n, me, from, count, elem, a, c, exclusive);
        // SAFETY: the callers hold the memories' borrows for 'a, which the request carries.
        let raw = unsafe { self.launch(s, Bind { send, recv }, Some(r)) }?;
        Ok(Request::borrowing(raw))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorClass;
    use crate::op::Builtin;
    use crate::testing::on_all;
    use std::sync::Arc;

    /// t ↦ a·t + b (wrapping u32) packed in a u64 (a low); `x op y` = x then y.
    fn compose(x: u64, y: u64) -> u64 {
        let (xa, xb, ya, yb) = (x as u32, (x >> 32) as u32, y as u32, (y >> 32) as u32);
        u64::from(ya.wrapping_mul(xa)) | (u64::from(ya.wrapping_mul(xb).wrapping_add(yb)) << 32)
    }

    fn affine_op() -> Op {
        Op::user(
            Arc::new(|i: &[u8], o: &mut [u8], _, _: &crate::datatype::Datatype| {
                for (i, o) in i.chunks_exact(8).zip(o.chunks_exact_mut(8)) {
                    let v = compose(
                        u64::from_ne_bytes(i.try_into().unwrap()),
                        u64::from_ne_bytes((&*o).try_into().unwrap()),
                    );
                    o.copy_from_slice(&v.to_ne_bytes());
                }
            }),
            false,
        )
    }

    fn aff(r: u32, i: usize) -> u64 {
        u64::from((r * 2 + 3).wrapping_mul(i as u32 + 1) | 1) | (u64::from((r * 7919) ^ i as u32) << 32)
    }

    #[test]
    fn reduce_local_is_typed_and_checked() {
        let mut io = [10i32, -20, 7];
        reduce_local(&[1, 2, 3], &mut io, &Op::builtin(Builtin::Sum)).unwrap();
        assert_eq!(io, [11, -18, 10]);
        reduce_local(&[5i32, -30, 1], &mut io, &Op::builtin(Builtin::Max)).unwrap();
        assert_eq!(io, [11, -18, 10]);
        reduce_local::<i32>(&[], &mut [], &Op::builtin(Builtin::Prod)).unwrap();
        // Non-commutative: inout = input op inout, input first.
        let (x, y) = (aff(1, 0), aff(2, 0));
        let mut io = [y];
        reduce_local(&[x], &mut io, &affine_op()).unwrap();
        assert_eq!(io, [compose(x, y)]);
        assert_ne!(compose(x, y), compose(y, x));
        let e = reduce_local(&[1i32, 2], &mut [0], &Op::builtin(Builtin::Sum)).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Count, "{e}");
        let e = reduce_local(&[1.0f64], &mut [0.0], &Op::builtin(Builtin::Bor)).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Op, "{e}");
        assert!(e.message().contains("MPI_Reduce_local"), "{e}");
    }

    /// Every algorithm through the engine, over real nmad ranks (threads as ranks, shm).
    #[test]
    fn reduce_scatter_and_scans_through_the_engine() {
        for n in [1u32, 2, 3, 5] {
            on_all(n, |w| {
                let me = w.rank();
                let aop = affine_op();
                let sum = Op::builtin(Builtin::Sum);
                for per in [0usize, 1, 3, 5000] {
                    // Uneven counts: rank i gets per + i elements (per = 0: some empty blocks).
                    let counts: Vec<usize> =
                        (0..n as usize).map(|i| if per == 0 { i % 2 } else { per + i }).collect();
                    let d = algo::reduce_scatter::displs(&counts);
                    let total = d[n as usize];
                    let mine: Vec<u64> = (0..total).map(|i| aff(me, i)).collect();
                    let want_a: Vec<u64> =
                        (0..total).map(|i| (1..n).fold(aff(0, i), |a, r| compose(a, aff(r, i)))).collect();
                    let want_s: Vec<u64> =
                        (0..total).map(|i| (0..n).fold(0u64, |a, r| a.wrapping_add(aff(r, i)))).collect();
                    let blk = |v: &[u64]| v[d[me as usize]..d[me as usize + 1]].to_vec();
                    for a in [
                        choice::ReduceScatter::RecursiveHalving,
                        choice::ReduceScatter::Pairwise,
                        choice::ReduceScatter::ReduceScatterv,
                    ] {
                        for (op, want) in [(&sum, &want_s), (&aop, &want_a)] {
                            let mut out = vec![0u64; counts[me as usize]];
                            w.ireduce_scatter_with::<u64>(
                                "t",
                                input(&mine),
                                output(&mut out),
                                &counts,
                                op,
                                Some(a),
                            )
                            .unwrap()
                            .wait()
                            .unwrap();
                            assert!(out == blk(want), "reduce_scatter {a:?} {op:?} n={n} per={per}");
                            let mut buf = mine.clone();
                            w.ireduce_scatter_with::<u64>(
                                "t",
                                IN_PLACE,
                                output(&mut buf),
                                &counts,
                                op,
                                Some(a),
                            )
                            .unwrap()
                            .wait()
                            .unwrap();
                            assert!(
                                buf[..counts[me as usize]] == blk(want)[..],
                                "in place {a:?} {op:?} n={n}"
                            );
                        }
                    }
                    // Scans over the first `per` elements.
                    let v = &mine[..per.min(total)];
                    let len = v.len();
                    let pre = |upto: u32| -> Vec<u64> {
                        (0..len).map(|i| (1..upto).fold(aff(0, i), |a, r| compose(a, aff(r, i)))).collect()
                    };
                    for a in [choice::Scan::RecursiveDoubling, choice::Scan::Linear] {
                        for exclusive in [false, true] {
                            let mut out = vec![7u64; len];
                            w.iscan_with::<u64>(input(v), len, output(&mut out), &aop, exclusive, Some(a))
                                .unwrap()
                                .wait()
                                .unwrap();
                            let mut buf = v.to_vec();
                            w.iscan_with::<u64>(IN_PLACE, len, output(&mut buf), &aop, exclusive, Some(a))
                                .unwrap()
                                .wait()
                                .unwrap();
                            let (want, want_ip) = match (exclusive, me) {
                                (false, _) => (pre(me + 1), pre(me + 1)),
                                (true, 0) => (vec![7; len], v.to_vec()),
                                (true, _) => (pre(me), pre(me)),
                            };
                            assert!(
                                out == want && buf == want_ip,
                                "scan {a:?} exclusive={exclusive} n={n} len={len}"
                            );
                        }
                    }
                }
                // The public entry points, blocking and not.
                let mut out = vec![0i64; 2];
                w.reduce_scatter_block(&vec![1i64; 2 * n as usize], &mut out, &Op::builtin(Builtin::Sum))
                    .unwrap();
                assert_eq!(out, [i64::from(n); 2]);
                let mut buf = vec![2i64; 3 * n as usize];
                w.reduce_scatter_block_in_place(&mut buf, &Op::builtin(Builtin::Sum)).unwrap();
                assert_eq!(buf[..3], [2 * i64::from(n); 3]);
                let mut s = [0i32];
                let r = w.iscan(&[1], &mut s, &Op::builtin(Builtin::Sum)).unwrap();
                let mut e = [-1i32];
                let r2 = w.iexscan(&[1], &mut e, &Op::builtin(Builtin::Sum)).unwrap();
                crate::request::wait_all(vec![r2, r]).unwrap();
                assert_eq!((s[0], e[0]), (me as i32 + 1, if me == 0 { -1 } else { me as i32 }));
                // Argument errors, before any message.
                let sum = Op::builtin(Builtin::Sum);
                let e = w.reduce_scatter(&[1u8], &mut [0u8], &[1], &sum);
                if n > 1 {
                    assert_eq!(e.unwrap_err().class(), ErrorClass::Arg);
                }
                let counts = vec![1usize; n as usize];
                let e = w.reduce_scatter(&vec![1u8; n as usize + 1], &mut [0u8], &counts, &sum).unwrap_err();
                assert_eq!(e.class(), ErrorClass::Count);
                let e = w.reduce_scatter(&vec![1u8; n as usize], &mut [0u8; 2], &counts, &sum).unwrap_err();
                assert_eq!(e.class(), ErrorClass::Count);
                let e = w.reduce_scatter_in_place(&mut vec![1u8; n as usize + 1], &counts, &sum).unwrap_err();
                assert_eq!(e.class(), ErrorClass::Count);
                let e = w.reduce_scatter(&[], &mut [0u8; 0], &vec![usize::MAX; n as usize], &sum);
                if n > 1 {
                    assert_eq!(e.unwrap_err().class(), ErrorClass::Count);
                }
                let e =
                    w.reduce_scatter_block(&vec![1u8; 2 * n as usize + 1], &mut [0u8; 2], &sum).unwrap_err();
                assert_eq!(e.class(), ErrorClass::Count);
                if n > 1 {
                    let e =
                        w.reduce_scatter_block_in_place(&mut vec![1u8; n as usize + 1], &sum).unwrap_err();
                    assert_eq!(e.class(), ErrorClass::Count);
                }
                assert_eq!(w.scan(&[1u8; 2], &mut [0u8; 3], &sum).unwrap_err().class(), ErrorClass::Count);
                assert_eq!(w.exscan(&[1u8; 2], &mut [0u8; 1], &sum).unwrap_err().class(), ErrorClass::Count);
                let band = Op::builtin(Builtin::Band);
                assert_eq!(w.scan(&[1.0f32], &mut [0.0], &band).unwrap_err().class(), ErrorClass::Op);
                assert_eq!(w.exscan_in_place(&mut [1.0f64], &band).unwrap_err().class(), ErrorClass::Op);
                let e = w.reduce_scatter_block(&vec![1.0f64; n as usize], &mut [0.0], &band).unwrap_err();
                assert_eq!(e.class(), ErrorClass::Op);
                // Nothing was started by the failed calls: the next collective still matches.
                w.barrier().unwrap();
            });
        }
    }
}
