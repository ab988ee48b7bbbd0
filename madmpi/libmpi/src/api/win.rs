//! One-sided communication, the windows (MPI 4.0 §12.2): `MPI_Win_create`, `MPI_Win_allocate`,
//! `MPI_Win_allocate_shared`, `MPI_Win_shared_query`, `MPI_Win_create_dynamic`,
//! `MPI_Win_attach`, `MPI_Win_detach`, `MPI_Win_free`, and the large-count `_c` forms.
//! (`MPI_Win_c2f` and `MPI_Win_f2c` are macros of `mpi.h`, as in MPICH's header: a window's
//! Fortran handle is its C handle.)
//!
//! Errors of a constructor go to its communicator's handler (there is no window yet), those of
//! a call on a window to the window's. Classes: a negative size is `MPI_ERR_SIZE`, a
//! displacement unit that is not positive `MPI_ERR_ARG` (as MPICH), a rank outside the window
//! `MPI_ERR_RANK`, the wrong flavour `MPI_ERR_RMA_FLAVOR`, overlapping attached memory
//! `MPI_ERR_RMA_ATTACH`, a shared window over several nodes `MPI_ERR_RMA_SHARED`.
//!
//! Owns the C signatures and the order of the checks; the windows are `madmpi::rma`'s.

use crate::api::family::widths;
use crate::check::{self, CInt};
use crate::comms::CommObj;
use crate::errors::{Fail, On, Outcome};
use crate::export::export;
use crate::infos;
use crate::state::state;
use crate::wins::{OnWin, WinObj};
use madmpi::abi;
use madmpi::error::Error;
use madmpi::rma::Win;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// A size argument: `MPI_ERR_SIZE` if negative.
fn size(n: abi::Aint) -> Result<usize, Error> {
    usize::try_from(n).map_err(|_| Error::size(format!("the window size is negative ({n})")))
}

/// A displacement unit: `MPI_ERR_ARG` unless positive.
fn disp_unit(n: abi::Aint) -> Result<usize, Error> {
    usize::try_from(n)
        .ok()
        .filter(|&u| u > 0)
        .ok_or_else(|| Error::arg(format!("the displacement unit must be positive ({n})")))
}

/// The checked arguments every constructor shares, in parameter order.
fn args(
    size_in: abi::Aint,
    unit: abi::Aint,
    info: abi::Info,
    comm: abi::Comm,
) -> Result<(Arc<CommObj>, usize, usize, madmpi::info::Info), Fail> {
    let c = state()?.comm(comm)?;
    let s = size(size_in).on(&c)?;
    let u = disp_unit(unit).on(&c)?;
    let hints = infos::hints(info).on(&c)?;
    Ok((c, s, u, hints))
}

/// Stores `win` and writes its handle to `out`.
fn store(c: &Arc<CommObj>, win: Win, out: &mut abi::Win) -> Outcome {
    *out = state()?.add_win(WinObj::new(win)).on(c)?;
    Ok(())
}

/// `MPI_Win_create`, `MPI_Win_create_c`.
fn create(
    base: *mut c_void,
    size: abi::Aint,
    unit: abi::Aint,
    info: abi::Info,
    comm: abi::Comm,
    win: *mut abi::Win,
) -> Outcome {
    let (c, size, unit, hints) = args(size, unit, info, comm)?;
    // SAFETY: an output argument.
    let out = unsafe { check::out(win, "win") }.on(&c)?;
    // SAFETY: MPI's contract: `base` holds `size` bytes that stay valid until MPI_Win_free.
    let w = unsafe { Win::create(base.cast(), size, unit, &hints, &c.comm) }.on(&c)?;
    store(&c, w, out)
}

/// `MPI_Win_allocate`, `MPI_Win_allocate_shared` and their `_c` forms: `baseptr` is a `void **`.
fn allocate(
    shared: bool,
    size: abi::Aint,
    unit: abi::Aint,
    info: abi::Info,
    comm: abi::Comm,
    baseptr: *mut c_void,
    win: *mut abi::Win,
) -> Outcome {
    let (c, size, unit, hints) = args(size, unit, info, comm)?;
    // SAFETY: output arguments (a `void *` and an `MPI_Win`).
    let (base_out, out) = unsafe {
        (check::out(baseptr.cast::<*mut c_void>(), "baseptr").on(&c)?, check::out(win, "win").on(&c)?)
    };
    let w = match shared {
        true => Win::allocate_shared(size, unit, &hints, &c.comm),
        false => Win::allocate(size, unit, &hints, &c.comm),
    }
    .on(&c)?;
    *base_out = std::ptr::with_exposed_provenance_mut(w.local().base);
    store(&c, w, out)
}

/// `MPI_Win_shared_query`, `_c`: writes the size, the unit (through `write_unit`) and the base.
fn shared_query(
    win: abi::Win,
    rank: c_int,
    size: *mut abi::Aint,
    baseptr: *mut c_void,
    write_unit: impl FnOnce(usize) -> Result<(), Error>,
) -> Outcome {
    let w = state()?.win(win)?;
    let rank = match rank {
        abi::MPI_PROC_NULL => None,
        r => Some(u32::try_from(r).map_err(|_| Error::rank(format!("invalid rank {r}"))).on_win(&w)?),
    };
    // SAFETY: output arguments (an `MPI_Aint` and a `void *`).
    let (size_out, base_out) = unsafe {
        (
            check::out(size, "size").on_win(&w)?,
            check::out(baseptr.cast::<*mut c_void>(), "baseptr").on_win(&w)?,
        )
    };
    let (ptr, bytes, unit) = w.win.shared_query(rank).on_win(&w)?;
    write_unit(unit).on_win(&w)?;
    *size_out = abi::Aint::try_from(bytes).unwrap_or(abi::Aint::MAX);
    *base_out = ptr.cast();
    Ok(())
}

widths! {
    /// Collective: exposes `size` bytes at `base` (the `_c` form's unit is an `MPI_Aint`).
    (base: *mut c_void, size: abi::Aint, disp_unit: Displ, info: abi::Info, comm: abi::Comm, win: *mut abi::Win) {
        create(base, size, disp_unit.wide(), info, comm, win)
    }
    int MPI_Win_create / PMPI_Win_create;
    large MPI_Win_create_c / PMPI_Win_create_c;

    /// Collective: `size` bytes allocated by MPI, their address written to `*(void **)baseptr`
    /// (in shared memory when every member is on one node).
    (
        size: abi::Aint,
        disp_unit: Displ,
        info: abi::Info,
        comm: abi::Comm,
        baseptr: *mut c_void,
        win: *mut abi::Win,
    ) {
        allocate(false, size, disp_unit.wide(), info, comm, baseptr, win)
    }
    int MPI_Win_allocate / PMPI_Win_allocate;
    large MPI_Win_allocate_c / PMPI_Win_allocate_c;

    /// Collective, every member on one node: this member's part of one segment all of them
    /// map; contiguous unless `alloc_shared_noncontig` is `true`.
    (
        size: abi::Aint,
        disp_unit: Displ,
        info: abi::Info,
        comm: abi::Comm,
        baseptr: *mut c_void,
        win: *mut abi::Win,
    ) {
        allocate(true, size, disp_unit.wide(), info, comm, baseptr, win)
    }
    int MPI_Win_allocate_shared / PMPI_Win_allocate_shared;
    large MPI_Win_allocate_shared_c / PMPI_Win_allocate_shared_c;

    /// Member `rank`'s part in this process's mapping (`MPI_PROC_NULL`: the first non-empty
    /// part).
    (win: abi::Win, rank: c_int, size: *mut abi::Aint, disp_unit: *mut Displ, baseptr: *mut c_void) {
        shared_query(win, rank, size, baseptr, |u| {
            // SAFETY: an output argument.
            *unsafe { check::out(disp_unit, "disp_unit") }? = Displ::try_from(u).unwrap_or(Displ::MAX);
            Ok(())
        })
    }
    int MPI_Win_shared_query / PMPI_Win_shared_query;
    large MPI_Win_shared_query_c / PMPI_Win_shared_query_c;
}

export! {
    /// `MPI_Win_create_dynamic` (collective): a window whose memory `MPI_Win_attach` adds.
    fn MPI_Win_create_dynamic / PMPI_Win_create_dynamic(info: abi::Info, comm: abi::Comm, win: *mut abi::Win) {
        let c = state()?.comm(comm)?;
        let hints = infos::hints(info).on(&c)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(win, "win") }.on(&c)?;
        let w = Win::create_dynamic(&hints, &c.comm).on(&c)?;
        store(&c, w, out)
    }

    /// `MPI_Win_attach`: `size` bytes at `base` join a dynamic window (no overlap allowed).
    fn MPI_Win_attach / PMPI_Win_attach(win: abi::Win, base: *mut c_void, size: abi::Aint) {
        let w = state()?.win(win)?;
        let len = self::size(size).on_win(&w)?;
        w.win.attach(base.cast(), len).on_win(&w)
    }

    /// `MPI_Win_detach`: the memory attached at `base` leaves the window.
    fn MPI_Win_detach / PMPI_Win_detach(win: abi::Win, base: *const c_void) {
        let w = state()?.win(win)?;
        w.win.detach(base.cast()).on_win(&w)
    }

    /// `MPI_Win_free` (collective): the attributes are deleted (their callbacks run; a failure
    /// stops the free and is returned), then the members synchronize and the memory goes;
    /// `*win` becomes `MPI_WIN_NULL`.
    fn MPI_Win_free / PMPI_Win_free(win: *mut abi::Win) {
        let st = state()?;
        // SAFETY: an in-out argument.
        let h = unsafe { check::out(win, "win") }?;
        let w = st.win(*h)?;
        let handle = *h;
        w.attrs.with(|t| t.delete_all(&handle)).and_then(|r| r).on_win(&w)?;
        w.win.quiesce().on_win(&w)?;
        st.remove_win(*h);
        *h = abi::MPI_WIN_NULL;
        Ok(())
    }
}
