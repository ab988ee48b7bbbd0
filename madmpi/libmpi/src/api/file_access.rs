//! Data access (MPI 4.0 §14.4): every read and write, at an explicit offset (`_at`), at the
//! individual file pointer, or at the shared one (`_shared`, and `_ordered` in rank order);
//! blocking, nonblocking (`MPI_File_i*`), collective (`_all`, `_ordered`) and split collective
//! (`_begin` / `_end`); each with a count but the `_end`s in its `int` and large-count (`_c`)
//! forms.
//!
//! The calls are not written out: `accesses!` generates them from one line each (the form,
//! the direction, where the access starts, whether it is collective, the names), over four
//! bodies: `blocking` (fills the `MPI_Status *`), `nonblocking` (returns a request of the
//! table every request is in, so `MPI_Wait` and friends complete it, its errors going to the
//! file's handler), `begin` and `end` (split collectives).
//!
//! Checks, in parameter order as ROMIO: the file (`MPI_ERR_FILE`), a negative offset
//! (`MPI_ERR_ARG`), the count (`MPI_ERR_COUNT`), the datatype (`MPI_ERR_TYPE`, also when not
//! committed), a null buffer with data (`MPI_ERR_BUFFER`), the status or request pointer
//! (`MPI_ERR_ARG`; `MPI_STATUS_IGNORE` is fine). What depends on the file (its access mode,
//! sequential access, whole etypes, a split collective already active) is `madmpi::io`'s.
//! Errors go to the file's handler.
//!
//! Owns the C signatures and the order of the checks; the accesses are `madmpi::io`'s.

use super::file::open_file;
use crate::check::{self, CInt};
use crate::datareps;
use crate::errors::{Fail, On, Outcome};
use crate::export::export;
use crate::files::{CFile, FileObj};
use crate::state::State;
use madmpi::abi::{self, Status};
use madmpi::error::Error;
use madmpi::io::{Buffer, Mode, Position, Split};
use std::ffi::c_void;
use std::sync::Arc;

/// Whether a call reads or writes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    Read,
    Write,
}

/// Where an access starts, as the C call names it.
#[derive(Clone, Copy)]
enum Pos {
    At(abi::Offset),
    Individual,
    Shared,
    Ordered,
}

/// The buffer type of a read (`void *`) or a write (`const void *`).
macro_rules! buf_type {
    (Read) => { *mut c_void };
    (Write) => { *const c_void };
}

/// The checked arguments of an access, in parameter order.
fn args(
    fh: CFile,
    pos: Pos,
    buf: *const c_void,
    count: impl CInt,
    datatype: abi::Datatype,
) -> Result<(Arc<State>, Arc<FileObj>, Position, Buffer), Fail> {
    let (st, f) = open_file(fh)?;
    let position = match pos {
        Pos::At(o) if o < 0 => return Err(Error::arg(format!("negative offset ({o})"))).on(&f),
        Pos::At(o) => Position::At(o),
        Pos::Individual => Position::Individual,
        Pos::Shared => Position::Shared,
        Pos::Ordered => Position::Ordered,
    };
    let n = check::count(count).on(&f)?;
    let ty = st.committed_datatype(datatype).on(&f)?;
    check::buffer(buf, n, &ty).on(&f)?;
    datareps::remember(&ty, datatype);
    Ok((st, f, position, Buffer { ptr: buf.cast_mut().cast(), count: n as u64, datatype: ty }))
}

/// A blocking access (independent or collective): its status in `status`.
#[allow(clippy::too_many_arguments)]
fn blocking(
    dir: Dir,
    mode: Mode,
    fh: CFile,
    pos: Pos,
    buf: *const c_void,
    count: impl CInt,
    datatype: abi::Datatype,
    status: *mut Status,
) -> Outcome {
    let (_, f, at, buffer) = args(fh, pos, buf, count, datatype)?;
    // SAFETY: an output argument (`MPI_STATUS_IGNORE` allowed).
    let status = unsafe { check::status(status) }.on(&f)?;
    // SAFETY: MPI's contract for a blocking access: the buffer's type map is writable (a read)
    // or readable (a write) and not otherwise accessed until the call returns.
    let s = unsafe {
        match dir {
            Dir::Read => f.file.read(at, mode, &buffer),
            Dir::Write => f.file.write(at, mode, &buffer),
        }
    }
    .on(&f)?;
    crate::status::fill(status, &s);
    Ok(())
}

/// A nonblocking access: its request in `request`.
#[allow(clippy::too_many_arguments)]
fn nonblocking(
    dir: Dir,
    mode: Mode,
    fh: CFile,
    pos: Pos,
    buf: *const c_void,
    count: impl CInt,
    datatype: abi::Datatype,
    request: *mut abi::Request,
) -> Outcome {
    let (st, f, at, buffer) = args(fh, pos, buf, count, datatype)?;
    // SAFETY: an output argument.
    let out = unsafe { check::out(request, "request") }.on(&f)?;
    // SAFETY: MPI's contract for a nonblocking access: the buffer stays valid, and untouched by
    // the program, until the request completes.
    let raw = unsafe {
        match dir {
            Dir::Read => f.file.iread(at, mode, buffer),
            Dir::Write => f.file.iwrite(at, mode, buffer),
        }
    }
    .on(&f)?;
    *out = st.add_request(raw, &f).on(&f)?;
    Ok(())
}

/// The begin of a split collective access (`mode` is always collective).
fn begin(
    dir: Dir,
    _mode: Mode,
    fh: CFile,
    pos: Pos,
    buf: *const c_void,
    count: impl CInt,
    datatype: abi::Datatype,
) -> Outcome {
    let (_, f, at, buffer) = args(fh, pos, buf, count, datatype)?;
    // SAFETY: MPI's contract for a split collective: the buffer stays valid, and untouched by
    // the program, until the matching end call.
    unsafe {
        match dir {
            Dir::Read => f.file.read_begin(at, buffer),
            Dir::Write => f.file.write_begin(at, buffer),
        }
    }
    .on(&f)
}

/// The end of the active split collective, which must have begun with `buf` in direction
/// `dir`: its status in `status`.
fn end(dir: Dir, kind: Split, fh: CFile, buf: *const c_void, status: *mut Status) -> Outcome {
    let (_, f) = open_file(fh)?;
    // SAFETY: an output argument (`MPI_STATUS_IGNORE` allowed).
    let status = unsafe { check::status(status) }.on(&f)?;
    let s = f.file.split_end(buf.cast(), dir == Dir::Write, kind).on(&f)?;
    crate::status::fill(status, &s);
    Ok(())
}

/// Defines the accesses with a count, in their `int` and `_c` forms, from lines
///
/// ```text
/// /// doc
/// form Direction Start Mode: MPI_X / PMPI_X, MPI_X_c / PMPI_X_c;
/// ```
///
/// `form` being `blocking`, `nonblocking` or `begin` (the body called, and the last
/// parameter: a status, a request, none), `Direction` `Read` or `Write`, `Start` `At` (an
/// `MPI_Offset offset` parameter follows the file), `Individual`, `Shared` or `Ordered`,
/// `Mode` `Independent` or `Collective`. The lines become one `widths!` table.
macro_rules! accesses {
    (@table [$($out:tt)*]) => { $crate::api::family::widths! { $($out)* } };
    // Each form's last parameter.
    (@table [$($out:tt)*] $(#[$doc:meta])* blocking $($rest:tt)*) => {
        accesses!(@entry [$($out)*] [$(#[$doc])*] [status: *mut Status] blocking $($rest)*);
    };
    (@table [$($out:tt)*] $(#[$doc:meta])* nonblocking $($rest:tt)*) => {
        accesses!(@entry [$($out)*] [$(#[$doc])*] [request: *mut abi::Request] nonblocking $($rest)*);
    };
    (@table [$($out:tt)*] $(#[$doc:meta])* begin $($rest:tt)*) => {
        accesses!(@entry [$($out)*] [$(#[$doc])*] [] begin $($rest)*);
    };
    // At an explicit offset: one more parameter.
    (@entry [$($out:tt)*] [$($doc:tt)*] [$($last:ident: $lty:ty)?]
        $form:ident $dir:ident At $mode:ident: $name:ident / $pname:ident, $name_c:ident / $pname_c:ident;
        $($rest:tt)*
    ) => {
        accesses!(@table [$($out)*
            $($doc)*
            (
                fh: CFile,
                offset: abi::Offset,
                buf: buf_type!($dir),
                count: Count,
                datatype: abi::Datatype
                $(, $last: $lty)?
            ) {
                $form(Dir::$dir, Mode::$mode, fh, Pos::At(offset), buf, count, datatype $(, $last)?)
            }
            int $name / $pname;
            large $name_c / $pname_c;
        ] $($rest)*);
    };
    (@entry [$($out:tt)*] [$($doc:tt)*] [$($last:ident: $lty:ty)?]
        $form:ident $dir:ident $pos:ident $mode:ident: $name:ident / $pname:ident, $name_c:ident / $pname_c:ident;
        $($rest:tt)*
    ) => {
        accesses!(@table [$($out)*
            $($doc)*
            (fh: CFile, buf: buf_type!($dir), count: Count, datatype: abi::Datatype $(, $last: $lty)?) {
                $form(Dir::$dir, Mode::$mode, fh, Pos::$pos, buf, count, datatype $(, $last)?)
            }
            int $name / $pname;
            large $name_c / $pname_c;
        ] $($rest)*);
    };
    ($($lines:tt)*) => { accesses!(@table [] $($lines)*); };
}

accesses! {
    /// Reads at the individual file pointer.
    blocking Read Individual Independent: MPI_File_read / PMPI_File_read, MPI_File_read_c / PMPI_File_read_c;
    /// Reads at an explicit offset.
    blocking Read At Independent: MPI_File_read_at / PMPI_File_read_at, MPI_File_read_at_c / PMPI_File_read_at_c;
    /// Reads at the shared file pointer.
    blocking Read Shared Independent:
        MPI_File_read_shared / PMPI_File_read_shared, MPI_File_read_shared_c / PMPI_File_read_shared_c;
    /// Collective: reads at the individual file pointer.
    blocking Read Individual Collective:
        MPI_File_read_all / PMPI_File_read_all, MPI_File_read_all_c / PMPI_File_read_all_c;
    /// Collective: reads at an explicit offset.
    blocking Read At Collective:
        MPI_File_read_at_all / PMPI_File_read_at_all, MPI_File_read_at_all_c / PMPI_File_read_at_all_c;
    /// Collective: reads at the shared file pointer, in rank order.
    blocking Read Ordered Collective:
        MPI_File_read_ordered / PMPI_File_read_ordered, MPI_File_read_ordered_c / PMPI_File_read_ordered_c;
    /// Writes at the individual file pointer.
    blocking Write Individual Independent: MPI_File_write / PMPI_File_write, MPI_File_write_c / PMPI_File_write_c;
    /// Writes at an explicit offset.
    blocking Write At Independent:
        MPI_File_write_at / PMPI_File_write_at, MPI_File_write_at_c / PMPI_File_write_at_c;
    /// Writes at the shared file pointer.
    blocking Write Shared Independent:
        MPI_File_write_shared / PMPI_File_write_shared, MPI_File_write_shared_c / PMPI_File_write_shared_c;
    /// Collective: writes at the individual file pointer.
    blocking Write Individual Collective:
        MPI_File_write_all / PMPI_File_write_all, MPI_File_write_all_c / PMPI_File_write_all_c;
    /// Collective: writes at an explicit offset.
    blocking Write At Collective:
        MPI_File_write_at_all / PMPI_File_write_at_all, MPI_File_write_at_all_c / PMPI_File_write_at_all_c;
    /// Collective: writes at the shared file pointer, in rank order.
    blocking Write Ordered Collective:
        MPI_File_write_ordered / PMPI_File_write_ordered, MPI_File_write_ordered_c / PMPI_File_write_ordered_c;

    /// Starts a read at the individual file pointer.
    nonblocking Read Individual Independent: MPI_File_iread / PMPI_File_iread, MPI_File_iread_c / PMPI_File_iread_c;
    /// Starts a read at an explicit offset.
    nonblocking Read At Independent:
        MPI_File_iread_at / PMPI_File_iread_at, MPI_File_iread_at_c / PMPI_File_iread_at_c;
    /// Starts a read at the shared file pointer.
    nonblocking Read Shared Independent:
        MPI_File_iread_shared / PMPI_File_iread_shared, MPI_File_iread_shared_c / PMPI_File_iread_shared_c;
    /// Collective: starts a read at the individual file pointer.
    nonblocking Read Individual Collective:
        MPI_File_iread_all / PMPI_File_iread_all, MPI_File_iread_all_c / PMPI_File_iread_all_c;
    /// Collective: starts a read at an explicit offset.
    nonblocking Read At Collective:
        MPI_File_iread_at_all / PMPI_File_iread_at_all, MPI_File_iread_at_all_c / PMPI_File_iread_at_all_c;
    /// Starts a write at the individual file pointer.
    nonblocking Write Individual Independent:
        MPI_File_iwrite / PMPI_File_iwrite, MPI_File_iwrite_c / PMPI_File_iwrite_c;
    /// Starts a write at an explicit offset.
    nonblocking Write At Independent:
        MPI_File_iwrite_at / PMPI_File_iwrite_at, MPI_File_iwrite_at_c / PMPI_File_iwrite_at_c;
    /// Starts a write at the shared file pointer.
    nonblocking Write Shared Independent:
        MPI_File_iwrite_shared / PMPI_File_iwrite_shared, MPI_File_iwrite_shared_c / PMPI_File_iwrite_shared_c;
    /// Collective: starts a write at the individual file pointer.
    nonblocking Write Individual Collective:
        MPI_File_iwrite_all / PMPI_File_iwrite_all, MPI_File_iwrite_all_c / PMPI_File_iwrite_all_c;
    /// Collective: starts a write at an explicit offset.
    nonblocking Write At Collective:
        MPI_File_iwrite_at_all / PMPI_File_iwrite_at_all, MPI_File_iwrite_at_all_c / PMPI_File_iwrite_at_all_c;

    /// Begins a split collective read at the individual file pointer.
    begin Read Individual Collective:
        MPI_File_read_all_begin / PMPI_File_read_all_begin, MPI_File_read_all_begin_c / PMPI_File_read_all_begin_c;
    /// Begins a split collective read at an explicit offset.
    begin Read At Collective:
        MPI_File_read_at_all_begin / PMPI_File_read_at_all_begin,
        MPI_File_read_at_all_begin_c / PMPI_File_read_at_all_begin_c;
    /// Begins a split collective read at the shared file pointer, in rank order.
    begin Read Ordered Collective:
        MPI_File_read_ordered_begin / PMPI_File_read_ordered_begin,
        MPI_File_read_ordered_begin_c / PMPI_File_read_ordered_begin_c;
    /// Begins a split collective write at the individual file pointer.
    begin Write Individual Collective:
        MPI_File_write_all_begin / PMPI_File_write_all_begin,
        MPI_File_write_all_begin_c / PMPI_File_write_all_begin_c;
    /// Begins a split collective write at an explicit offset.
    begin Write At Collective:
        MPI_File_write_at_all_begin / PMPI_File_write_at_all_begin,
        MPI_File_write_at_all_begin_c / PMPI_File_write_at_all_begin_c;
    /// Begins a split collective write at the shared file pointer, in rank order.
    begin Write Ordered Collective:
        MPI_File_write_ordered_begin / PMPI_File_write_ordered_begin,
        MPI_File_write_ordered_begin_c / PMPI_File_write_ordered_begin_c;
}

/// Defines the ends of split collectives (no count, one form each) from lines
/// `Direction Kind: MPI_X / PMPI_X;` (the kind of begin it completes).
macro_rules! ends {
    ($($(#[$doc:meta])* $dir:ident $kind:ident: $name:ident / $pname:ident;)*) => {
        export! {$(
            $(#[$doc])*
            fn $name / $pname(fh: CFile, buf: buf_type!($dir), status: *mut Status) {
                end(Dir::$dir, Split::$kind, fh, buf, status)
            }
        )*}
    };
}

ends! {
    /// `MPI_File_read_all_end`: completes `MPI_File_read_all_begin`.
    Read All: MPI_File_read_all_end / PMPI_File_read_all_end;
    /// `MPI_File_read_at_all_end`: completes `MPI_File_read_at_all_begin`.
    Read AtAll: MPI_File_read_at_all_end / PMPI_File_read_at_all_end;
    /// `MPI_File_read_ordered_end`: completes `MPI_File_read_ordered_begin`.
    Read Ordered: MPI_File_read_ordered_end / PMPI_File_read_ordered_end;
    /// `MPI_File_write_all_end`: completes `MPI_File_write_all_begin`.
    Write All: MPI_File_write_all_end / PMPI_File_write_all_end;
    /// `MPI_File_write_at_all_end`: completes `MPI_File_write_at_all_begin`.
    Write AtAll: MPI_File_write_at_all_end / PMPI_File_write_at_all_end;
    /// `MPI_File_write_ordered_end`: completes `MPI_File_write_ordered_begin`.
    Write Ordered: MPI_File_write_ordered_end / PMPI_File_write_ordered_end;
}
