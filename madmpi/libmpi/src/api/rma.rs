//! One-sided operations (MPI 4.0 §12.3): `MPI_Put`, `MPI_Get`, `MPI_Accumulate`,
//! `MPI_Get_accumulate`, `MPI_Fetch_and_op`, `MPI_Compare_and_swap`, the request forms
//! `MPI_Rput`, `MPI_Rget`, `MPI_Raccumulate`, `MPI_Rget_accumulate`, and their `_c` forms.
//!
//! Check order (MPICH's): window, counts, datatypes, rank, then the operation; errors go to
//! the window's handler. `MPI_PROC_NULL` as target makes the call do nothing (a request form
//! returns a completed request). Owns the C signatures; the operations are `madmpi::rma`'s.

use crate::check::{self, CInt};
use crate::errors::{Fail, Outcome};
use crate::export::export;
use crate::ops;
use crate::state::{State, state};
use crate::wins::{OnWin, WinObj, hot, with_win};
use madmpi::abi;
use madmpi::datatype::{Datatype, Predefined};
use madmpi::error::Error;
use madmpi::op::{Builtin, Op};
use madmpi::request::RawRequest;
use madmpi::rma::{At, Buf};
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// One buffer argument: count and datatype checked.
struct Data {
    buf: *const c_void,
    count: i64,
    ty: Datatype,
}

impl Data {
    fn buf(&self) -> Buf<'_> {
        Buf { buf: self.buf.cast(), count: self.count, ty: &self.ty }
    }
}

fn data(
    st: &State,
    w: &Arc<WinObj>,
    buf: *const c_void,
    count: impl CInt,
    ty: abi::Datatype,
) -> Result<Data, Fail> {
    let count = check::count(count).on_win(w)?;
    let ty = st.committed_datatype(ty).on_win(w)?;
    Ok(Data { buf, count, ty })
}

/// The target rank (`None` for `MPI_PROC_NULL`) and displacement.
fn target(w: &Arc<WinObj>, rank: c_int, disp: abi::Aint) -> Result<Option<(u32, u64)>, Fail> {
    if rank == abi::MPI_PROC_NULL {
        return Ok(None);
    }
    let n = w.win.group().size();
    let r = u32::try_from(rank)
        .ok()
        .filter(|&r| r < n)
        .ok_or_else(|| Error::rank(format!("target rank {rank} is not in the window's {n} ranks")))
        .on_win(w)?;
    // A negative displacement is out of range (a dynamic window's are addresses).
    let d = u64::try_from(disp)
        .map_err(|_| Error::rma_range(format!("negative target displacement ({disp})")))
        .on_win(w)?;
    Ok(Some((r, d)))
}

/// The operation of an accumulate: a predefined one (user operations are not allowed).
fn rma_op(w: &Arc<WinObj>, op: abi::Op) -> Result<Op, Fail> {
    match ops::resolve(op).on_win(w)? {
        r @ ops::OpRef::Builtin(_) => Ok(r.op(abi::MPI_DATATYPE_NULL)),
        ops::OpRef::User(_) => {
            Err(Error::op("one-sided accumulates take predefined operations only")).on_win(w)
        }
    }
}

/// Stores `raw` as a request of window `w` and writes its handle.
fn store(st: &State, w: &Arc<WinObj>, raw: RawRequest, request: *mut abi::Request) -> Outcome {
    // SAFETY: an output argument.
    let out = unsafe { check::out(request, "request") }.on_win(w)?;
    *out = st.add_request(raw, w).on_win(w)?;
    Ok(())
}

/// Runs a call's general path apart from its hot one, so the hot function's frame stays small.
#[cold]
#[inline(never)]
fn general(f: impl FnOnce() -> Outcome) -> Outcome {
    f()
}

/// A call with a hot form: when `ready`, `run` tries it on the window of handle `win` through
/// this thread's recent window, then (in the general path) through a lookup that makes the window
/// the recent one; if it declines, `rest` does the call the general way.
#[inline(always)]
fn hot_or_general(
    win: abi::Win,
    ready: bool,
    run: impl Fn(&madmpi::rma::Win) -> bool + Copy,
    rest: impl FnOnce() -> Outcome,
) -> Outcome {
    if ready && hot(win, run) {
        return Ok(());
    }
    general(move || {
        if ready && with_win(win, |w| Ok(run(&w.win)))? {
            return Ok(());
        }
        rest()
    })
}

/// `MPI_Put`/`MPI_Get` and the like: the hot call inline (through this thread's recent window,
/// then through a lookup that makes the window the recent one), else the general path.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn put_like(
    kind: Kind,
    origin_addr: *const c_void,
    origin_count: impl CInt,
    origin_datatype: abi::Datatype,
    target_rank: c_int,
    target_disp: abi::Aint,
    target_count: impl CInt,
    target_datatype: abi::Datatype,
    op: Option<abi::Op>,
    win: abi::Win,
    request: Option<*mut abi::Request>,
) -> Outcome {
    let args = Contiguous { addr: origin_addr, count: origin_count.wide(), ty: origin_datatype };
    // An accumulate's operation must be a builtin one for the hot call.
    let b = op.map(ops::builtin);
    let bytes = (request.is_none() && b != Some(None))
        .then(|| args.bytes((target_rank, target_disp, target_count.wide(), target_datatype)))
        .flatten();
    let run = |w: &madmpi::rma::Win| {
        bytes.is_some_and(|found| args.move_bytes(w, kind, b.flatten(), found, target_rank, target_disp))
    };
    hot_or_general(win, bytes.is_some(), run, move || {
        let st = state()?;
        let w = st.win(win)?;
        let origin = data(&st, &w, origin_addr, origin_count, origin_datatype)?;
        let tgt = data(&st, &w, std::ptr::null(), target_count, target_datatype)?;
        let op = op.map(|op| rma_op(&w, op)).transpose()?;
        let Some((rank, disp)) = target(&w, target_rank, target_disp)? else {
            return request.map_or(Ok(()), |r| store(&st, &w, RawRequest::completed(w.win.comm()), r));
        };
        let at = At { rank, disp, count: tgt.count, ty: &tgt.ty };
        // SAFETY: MPI's contract: the origin buffer holds its type map, readable (and unchanged)
        // until completion for a put or an accumulate (`rput` and accumulates copy it before
        // the call returns), writable until completion for a get.
        let r = unsafe {
            match (kind, request.is_some()) {
                (Kind::Put, false) => w.win.put(origin.buf(), at).map(|()| None),
                (Kind::Put, true) => w.win.rput(origin.buf(), at).map(|()| None),
                (Kind::Acc, false) => {
                    w.win.accumulate(origin.buf(), at, op.as_ref().expect("an op")).map(|()| None)
                }
                (Kind::Acc, true) => {
                    w.win.raccumulate(origin.buf(), at, op.as_ref().expect("an op")).map(|()| None)
                }
                (Kind::Get, false) => w.win.get(origin.buf(), at).map(|()| None),
                (Kind::Get, true) => w.win.rget(origin.buf(), at).map(Some),
            }
        }
        .on_win(&w)?;
        match (request, r) {
            (Some(out), Some(raw)) => store(&st, &w, raw, out),
            (Some(out), None) => store(&st, &w, RawRequest::completed(w.win.comm()), out),
            (None, _) => Ok(()),
        }
    })
}

/// An origin buffer that may take the intra-node fast path's hot calls.
struct Contiguous {
    addr: *const c_void,
    count: i64,
    ty: abi::Datatype,
}

impl Contiguous {
    /// Its bytes and element type, when the target side (rank, displacement, count, type) is
    /// the same count of the same contiguous predefined type at a valid rank and displacement:
    /// what the hot calls take. `None` sends the call down the general path, which checks
    /// everything.
    fn bytes(
        &self,
        (rank, disp, count, ty): (c_int, abi::Aint, i64, abi::Datatype),
    ) -> Option<(usize, Predefined)> {
        let (elem, size) = crate::datatypes::builtin_elem(self.ty)?;
        let ok = ty == self.ty && count == self.count && count >= 0 && rank >= 0 && disp >= 0;
        let bytes =
            (ok && !self.addr.is_null()).then(|| usize::try_from(count).ok()?.checked_mul(size)).flatten()?;
        Some((bytes, elem))
    }

    /// The hot put, get or accumulate (with builtin `op`) of [`Contiguous::bytes`]' answer
    /// (`rank`, `disp`: as it checked).
    #[inline(always)]
    fn move_bytes(
        &self,
        w: &madmpi::rma::Win,
        kind: Kind,
        op: Option<Builtin>,
        (bytes, elem): (usize, Predefined),
        rank: c_int,
        disp: abi::Aint,
    ) -> bool {
        let (rank, disp) = (rank as u32, disp as u64);
        // SAFETY: MPI's contract: the origin buffer holds `bytes` bytes (its type is
        // contiguous), readable for a put or an accumulate, writable for a get.
        unsafe {
            match (kind, op) {
                (Kind::Put, _) => w.put_bytes(self.addr.cast(), bytes, rank, disp),
                (Kind::Get, _) => w.get_bytes(self.addr.cast_mut().cast(), bytes, rank, disp),
                (Kind::Acc, Some(op)) => {
                    w.accumulate_bytes(self.addr.cast(), std::ptr::null_mut(), bytes, elem, op, rank, disp)
                }
                (Kind::Acc, None) => false,
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Put,
    Get,
    Acc,
}

/// `MPI_Get_accumulate` and the like: the hot call inline, else the general path.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn get_accumulate(
    origin_addr: *const c_void,
    origin_count: impl CInt,
    origin_datatype: abi::Datatype,
    result_addr: *mut c_void,
    result_count: impl CInt,
    result_datatype: abi::Datatype,
    target_rank: c_int,
    target_disp: abi::Aint,
    target_count: impl CInt,
    target_datatype: abi::Datatype,
    op: abi::Op,
    win: abi::Win,
    request: Option<*mut abi::Request>,
) -> Outcome {
    let result = Contiguous { addr: result_addr, count: result_count.wide(), ty: result_datatype };
    // MPI_NO_OP ignores the origin; any other operation needs it alike the result.
    let b = ops::builtin(op);
    let origin_ok = b == Some(Builtin::NoOp)
        || (origin_datatype == result_datatype && origin_count.wide() == result_count.wide());
    let hot_call = (request.is_none() && origin_ok)
        .then(|| {
            let (bytes, elem) =
                result.bytes((target_rank, target_disp, target_count.wide(), target_datatype))?;
            Some((b?, bytes, elem))
        })
        .flatten();
    let (rank, disp) = (target_rank as u32, target_disp as u64);
    let run = |w: &madmpi::rma::Win| {
        hot_call.is_some_and(|(b, bytes, elem)| {
            // SAFETY: MPI's contract: the origin readable and the result writable, `bytes`
            // bytes each (the same contiguous type and count).
            unsafe { w.accumulate_bytes(origin_addr.cast(), result_addr.cast(), bytes, elem, b, rank, disp) }
        })
    };
    hot_or_general(win, hot_call.is_some(), run, move || {
        let st = state()?;
        let w = st.win(win)?;
        let op = rma_op(&w, op)?;
        // MPI_NO_OP ignores the origin buffer, whose datatype may then be anything valid.
        let no_op = op.as_builtin() == Some(madmpi::op::Builtin::NoOp);
        let origin = if no_op {
            Data { buf: origin_addr, count: 0, ty: Datatype::predefined(madmpi::datatype::Predefined::Byte) }
        } else {
            data(&st, &w, origin_addr, origin_count, origin_datatype)?
        };
        let result = data(&st, &w, result_addr, result_count, result_datatype)?;
        let tgt = data(&st, &w, std::ptr::null(), target_count, target_datatype)?;
        let Some((rank, disp)) = target(&w, target_rank, target_disp)? else {
            return request.map_or(Ok(()), |r| store(&st, &w, RawRequest::completed(w.win.comm()), r));
        };
        let at = At { rank, disp, count: tgt.count, ty: &tgt.ty };
        // SAFETY: MPI's contract, as for MPI_Get (result) and MPI_Accumulate (origin).
        unsafe {
            match request {
                Some(out) => {
                    let raw = w.win.rget_accumulate(origin.buf(), result.buf(), at, &op).on_win(&w)?;
                    store(&st, &w, raw, out)
                }
                None => w.win.get_accumulate(origin.buf(), result.buf(), at, &op).on_win(&w),
            }
        }
    })
}

crate::api::family::widths! {
    /// Writes the origin data to the target's window (copied before the call returns).
    (
        origin_addr: *const c_void,
        origin_count: Count,
        origin_datatype: abi::Datatype,
        target_rank: c_int,
        target_disp: abi::Aint,
        target_count: Count,
        target_datatype: abi::Datatype,
        win: abi::Win,
    ) {
        put_like(Kind::Put, origin_addr, origin_count, origin_datatype, target_rank, target_disp,
            target_count, target_datatype, None, win, None)
    }
    int MPI_Put / PMPI_Put;
    large MPI_Put_c / PMPI_Put_c;

    /// Reads the target's window into the origin buffer (complete at the next synchronization).
    (
        origin_addr: *mut c_void,
        origin_count: Count,
        origin_datatype: abi::Datatype,
        target_rank: c_int,
        target_disp: abi::Aint,
        target_count: Count,
        target_datatype: abi::Datatype,
        win: abi::Win,
    ) {
        put_like(Kind::Get, origin_addr, origin_count, origin_datatype, target_rank, target_disp,
            target_count, target_datatype, None, win, None)
    }
    int MPI_Get / PMPI_Get;
    large MPI_Get_c / PMPI_Get_c;

    /// Combines the origin data into the target's window with a predefined operation.
    (
        origin_addr: *const c_void,
        origin_count: Count,
        origin_datatype: abi::Datatype,
        target_rank: c_int,
        target_disp: abi::Aint,
        target_count: Count,
        target_datatype: abi::Datatype,
        op: abi::Op,
        win: abi::Win,
    ) {
        put_like(Kind::Acc, origin_addr, origin_count, origin_datatype, target_rank, target_disp,
            target_count, target_datatype, Some(op), win, None)
    }
    int MPI_Accumulate / PMPI_Accumulate;
    large MPI_Accumulate_c / PMPI_Accumulate_c;

    /// `MPI_Put` with a request (complete at once: the data is copied).
    (
        origin_addr: *const c_void,
        origin_count: Count,
        origin_datatype: abi::Datatype,
        target_rank: c_int,
        target_disp: abi::Aint,
        target_count: Count,
        target_datatype: abi::Datatype,
        win: abi::Win,
        request: *mut abi::Request,
    ) {
        put_like(Kind::Put, origin_addr, origin_count, origin_datatype, target_rank, target_disp,
            target_count, target_datatype, None, win, Some(request))
    }
    int MPI_Rput / PMPI_Rput;
    large MPI_Rput_c / PMPI_Rput_c;

    /// `MPI_Get` with a request, complete when the data is in the origin buffer.
    (
        origin_addr: *mut c_void,
        origin_count: Count,
        origin_datatype: abi::Datatype,
        target_rank: c_int,
        target_disp: abi::Aint,
        target_count: Count,
        target_datatype: abi::Datatype,
        win: abi::Win,
        request: *mut abi::Request,
    ) {
        put_like(Kind::Get, origin_addr, origin_count, origin_datatype, target_rank, target_disp,
            target_count, target_datatype, None, win, Some(request))
    }
    int MPI_Rget / PMPI_Rget;
    large MPI_Rget_c / PMPI_Rget_c;

    /// `MPI_Accumulate` with a request (complete at once: the data is copied).
    (
        origin_addr: *const c_void,
        origin_count: Count,
        origin_datatype: abi::Datatype,
        target_rank: c_int,
        target_disp: abi::Aint,
        target_count: Count,
        target_datatype: abi::Datatype,
        op: abi::Op,
        win: abi::Win,
        request: *mut abi::Request,
    ) {
        put_like(Kind::Acc, origin_addr, origin_count, origin_datatype, target_rank, target_disp,
            target_count, target_datatype, Some(op), win, Some(request))
    }
    int MPI_Raccumulate / PMPI_Raccumulate;
    large MPI_Raccumulate_c / PMPI_Raccumulate_c;

    /// Fetches the target data into the result buffer, then combines the origin data into it.
    (
        origin_addr: *const c_void,
        origin_count: Count,
        origin_datatype: abi::Datatype,
        result_addr: *mut c_void,
        result_count: Count,
        result_datatype: abi::Datatype,
        target_rank: c_int,
        target_disp: abi::Aint,
        target_count: Count,
        target_datatype: abi::Datatype,
        op: abi::Op,
        win: abi::Win,
    ) {
        get_accumulate(origin_addr, origin_count, origin_datatype, result_addr, result_count,
            result_datatype, target_rank, target_disp, target_count, target_datatype, op, win, None)
    }
    int MPI_Get_accumulate / PMPI_Get_accumulate;
    large MPI_Get_accumulate_c / PMPI_Get_accumulate_c;

    /// `MPI_Get_accumulate` with a request, complete when the result is in.
    (
        origin_addr: *const c_void,
        origin_count: Count,
        origin_datatype: abi::Datatype,
        result_addr: *mut c_void,
        result_count: Count,
        result_datatype: abi::Datatype,
        target_rank: c_int,
        target_disp: abi::Aint,
        target_count: Count,
        target_datatype: abi::Datatype,
        op: abi::Op,
        win: abi::Win,
        request: *mut abi::Request,
    ) {
        get_accumulate(origin_addr, origin_count, origin_datatype, result_addr, result_count,
            result_datatype, target_rank, target_disp, target_count, target_datatype, op, win, Some(request))
    }
    int MPI_Rget_accumulate / PMPI_Rget_accumulate;
    large MPI_Rget_accumulate_c / PMPI_Rget_accumulate_c;
}

export! {
    /// `MPI_Fetch_and_op`: `MPI_Get_accumulate` of one element of a predefined type.
    fn MPI_Fetch_and_op / PMPI_Fetch_and_op(
        origin_addr: *const c_void,
        result_addr: *mut c_void,
        datatype: abi::Datatype,
        target_rank: c_int,
        target_disp: abi::Aint,
        op: abi::Op,
        win: abi::Win,
    ) {
        get_accumulate(origin_addr, 1, datatype, result_addr, 1, datatype, target_rank, target_disp, 1,
            datatype, op, win, None)
    }

    /// `MPI_Compare_and_swap`: replaces one element at the target by the origin's if it equals
    /// the compare value; the old element lands in the result buffer.
    fn MPI_Compare_and_swap / PMPI_Compare_and_swap(
        origin_addr: *const c_void,
        compare_addr: *const c_void,
        result_addr: *mut c_void,
        datatype: abi::Datatype,
        target_rank: c_int,
        target_disp: abi::Aint,
        win: abi::Win,
    ) {
        let one = Contiguous { addr: origin_addr, count: 1, ty: datatype };
        if let Some((size, _)) = one.bytes((target_rank, target_disp, 1, datatype))
            && !compare_addr.is_null()
            && !result_addr.is_null()
        {
            let (rank, disp) = (target_rank as u32, target_disp as u64);
            // SAFETY: MPI's contract: one element at each address, the result written.
            let run = |w: &madmpi::rma::Win| unsafe {
                w.compare_and_swap_bytes(origin_addr.cast(), compare_addr.cast(), result_addr.cast(), size, rank, disp)
            };
            if hot(win, run) || with_win(win, |w| Ok(run(&w.win)))? {
                return Ok(());
            }
        }
        let st = state()?;
        let w = st.win(win)?;
        let ty = st.committed_datatype(datatype).on_win(&w)?;
        let Some((rank, disp)) = target(&w, target_rank, target_disp)? else { return Ok(()) };
        // SAFETY: MPI's contract: one element at each address, the result written later.
        unsafe { w.win.compare_and_swap(origin_addr.cast(), compare_addr.cast(), result_addr.cast(), &ty, rank, disp) }
            .on_win(&w)
    }
}
