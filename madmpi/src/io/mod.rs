//! MPI-IO (MPI-4.0 chapter 14): files opened collectively over a communicator, file views made
//! of derived datatypes, and every data access MPI defines — explicit offsets, individual and
//! shared file pointers; blocking, nonblocking, collective and split collective.
//!
//! Files of the module: `amode` (the checked access mode); `open` (open, close, delete, sizes,
//! the errno → error-class mapping); `view` (a view: displacement, etype, filetype, data
//! representation, and where its bytes lie in the file); `datarep` (native, internal,
//! external32 and the representations the program registers); `hints` (the info keys the
//! file honours: ROMIO's names); `access` (independent reads and writes, with data sieving for
//! strided ones); `lock` (byte-range locks for atomic mode and sieving writes); `pointer`
//! (individual and shared file pointers: the shared one is an integer in a one-sided window
//! on the file's first process); `collective` (two-phase collective buffering); `queue` (the
//! file's background worker: nonblocking and split collective operations, run in the order
//! they were started, each the request of the caller); `typed` (the safe API over slices).
//!
//! Owns the semantics of files; the C library (`libmpi/src/api/file*.rs`) only checks
//! arguments and converts handles. It must not reach into nmad: it talks to the file system
//! and to other processes through this crate's communicators, collectives and windows.

mod access;
mod amode;
mod batch;
mod collective;
mod datarep;
mod hints;
mod lock;
mod open;
mod pointer;
mod queue;
#[cfg(test)]
mod tests;
mod typed;
mod view;

pub use amode::Amode;
pub use datarep::{Conversion, register_datarep};
pub use hints::Hints;
pub use view::{Disp, View, Whence};

use crate::comm::{Comm, Status};
use crate::datatype::Datatype;
use crate::error::Result;
use crate::group::Group;
use crate::info::Info;
use crate::request::RawRequest;
use std::sync::Arc;

/// An open file (`MPI_File`): cheap to clone; clones are the same MPI object. Closing is
/// [`File::close`] (collective); a file dropped without it is closed by its last clone.
#[derive(Clone)]
pub struct File(Arc<open::Inner>);

/// Where a data access starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    /// An explicit offset, in etypes of the view (`MPI_File_read_at`, …).
    At(i64),
    /// The process's individual file pointer (`MPI_File_read`, …), which advances.
    Individual,
    /// The shared file pointer, in the order the processes get to it (`MPI_File_read_shared`).
    Shared,
    /// The shared file pointer, in rank order (`MPI_File_read_ordered`: collective only).
    Ordered,
}

/// Which kind of begin a split collective's end completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// `MPI_File_read_all_begin`, `MPI_File_write_all_begin` (individual pointer).
    All,
    /// `_at_all_begin` (explicit offset).
    AtAll,
    /// `_ordered_begin` (shared pointer).
    Ordered,
}

impl Split {
    /// The kind of a begin at `at` (`None` for the shared pointer's independent position).
    fn of(at: Position) -> Option<Split> {
        match at {
            Position::Individual => Some(Split::All),
            Position::At(_) => Some(Split::AtAll),
            Position::Ordered => Some(Split::Ordered),
            Position::Shared => None,
        }
    }
}

/// Whether every process of the file's group makes the call (`_all`, `_ordered`, split
/// collectives) or only this one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Independent,
    Collective,
}

/// `count` elements of `datatype` at `ptr`: the memory side of a data access.
#[derive(Clone)]
pub struct Buffer {
    pub ptr: *mut u8,
    pub count: u64,
    pub datatype: Datatype,
}

// SAFETY: a `Buffer` is an address the caller vouches for (see the `unsafe` methods that take
// one); it is moved to the file's worker thread only for a nonblocking access, which the caller
// must not touch the memory of until the request completes (MPI's rule).
unsafe impl Send for Buffer {}

impl File {
    /// `MPI_File_open` (collective over `comm`): `path` opened with `amode` by every process.
    pub fn open(comm: &Comm, path: &str, amode: Amode, info: &Info) -> Result<File> {
        open::open(comm, path, amode, info).map(|i| File(Arc::new(i)))
    }

    /// `MPI_File_close` (collective). Waits for the file's nonblocking operations first.
    pub fn close(self) -> Result<()> {
        self.0.close()
    }

    /// `MPI_File_delete`: removes `path` (`MPI_ERR_NO_SUCH_FILE` if it is not there).
    pub fn delete(path: &str, info: &Info) -> Result<()> {
        open::delete(path, info)
    }

    /// The communicator the file was opened on (its group, for error reports and aborts).
    pub fn comm(&self) -> &Comm {
        self.0.user_comm()
    }

    /// `MPI_File_get_group`.
    pub fn group(&self) -> &Group {
        self.0.user_comm().group()
    }

    /// `MPI_File_get_amode`.
    pub fn amode(&self) -> Amode {
        self.0.amode
    }

    /// Whether two handles name the same open file.
    pub fn same(&self, other: &File) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// `MPI_File_set_size` (collective): truncates or extends.
    pub fn set_size(&self, size: i64) -> Result<()> {
        self.0.set_size(size)
    }

    /// `MPI_File_preallocate` (collective): at least `size` bytes are reserved.
    pub fn preallocate(&self, size: i64) -> Result<()> {
        self.0.preallocate(size)
    }

    /// `MPI_File_get_size`, in bytes.
    pub fn size(&self) -> Result<i64> {
        self.0.size()
    }

    /// `MPI_File_sync` (collective): what this process wrote is on the storage device, and
    /// visible to the other processes once they sync too.
    pub fn sync(&self) -> Result<()> {
        self.0.sync()
    }

    /// `MPI_File_set_info` (collective): hints that may still change are taken.
    pub fn set_info(&self, info: &Info) -> Result<()> {
        self.0.set_info(info)
    }

    /// `MPI_File_get_info`: the hints in use, every one the file honours.
    pub fn info(&self) -> Info {
        self.0.hints().to_info()
    }

    /// `MPI_File_set_atomicity` (collective).
    pub fn set_atomicity(&self, atomic: bool) -> Result<()> {
        self.0.set_atomicity(atomic)
    }

    /// `MPI_File_get_atomicity`.
    pub fn atomicity(&self) -> bool {
        self.0.atomic()
    }

    /// `MPI_File_set_view` (collective): both file pointers go back to 0.
    pub fn set_view(
        &self,
        disp: Disp,
        etype: &Datatype,
        filetype: &Datatype,
        datarep: &str,
        info: &Info,
    ) -> Result<()> {
        self.0.set_view(disp, etype, filetype, datarep, info)
    }

    /// `MPI_File_get_view`.
    pub fn view(&self) -> View {
        self.0.view()
    }

    /// `MPI_File_get_type_extent`: `datatype`'s extent in the view's data representation.
    pub fn type_extent(&self, datatype: &Datatype) -> Result<i64> {
        self.0.view().type_extent(datatype)
    }

    /// `MPI_File_get_byte_offset`: the absolute byte position of view offset `offset`.
    pub fn byte_offset(&self, offset: i64) -> Result<i64> {
        self.0.view().byte_offset(offset)
    }

    /// `MPI_File_seek`.
    pub fn seek(&self, offset: i64, whence: Whence) -> Result<()> {
        self.0.seek(offset, whence)
    }

    /// `MPI_File_get_position`, in etypes of the view.
    pub fn position(&self) -> i64 {
        self.0.position()
    }

    /// `MPI_File_seek_shared` (collective: every process gives the same arguments).
    pub fn seek_shared(&self, offset: i64, whence: Whence) -> Result<()> {
        self.0.seek_shared(offset, whence)
    }

    /// `MPI_File_get_position_shared`.
    pub fn position_shared(&self) -> Result<i64> {
        self.0.position_shared()
    }

    /// A blocking read into `buf` (`MPI_File_read`, `_at`, `_all`, `_at_all`, `_shared`,
    /// `_ordered`); the status counts the bytes read (fewer at the end of the file).
    ///
    /// # Safety
    /// Every block of `buf.count` elements of `buf.datatype` from `buf.ptr` must be writable
    /// and not accessed by anything else during the call.
    pub unsafe fn read(&self, at: Position, mode: Mode, buf: &Buffer) -> Result<Status> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.0.access(at, mode, buf, access::Dir::Read) }
    }

    /// A blocking write from `buf` (`MPI_File_write`, …, as [`File::read`]).
    ///
    /// # Safety
    /// Every block of `buf.count` elements of `buf.datatype` from `buf.ptr` must be readable
    /// and not written by anything else during the call.
    pub unsafe fn write(&self, at: Position, mode: Mode, buf: &Buffer) -> Result<Status> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.0.access(at, mode, buf, access::Dir::Write) }
    }

    /// A nonblocking read (`MPI_File_iread`, `_at`, `_all`, `_at_all`, `_shared`), run in the
    /// background in the order the file's nonblocking operations were started.
    ///
    /// # Safety
    /// As [`File::read`], until the request completes.
    pub unsafe fn iread(&self, at: Position, mode: Mode, buf: Buffer) -> Result<RawRequest> {
        // SAFETY: the caller's contract, passed on.
        unsafe { queue::start(&self.0, at, mode, buf, access::Dir::Read) }
    }

    /// A nonblocking write (`MPI_File_iwrite`, …, as [`File::iread`]).
    ///
    /// # Safety
    /// As [`File::write`], until the request completes.
    pub unsafe fn iwrite(&self, at: Position, mode: Mode, buf: Buffer) -> Result<RawRequest> {
        // SAFETY: the caller's contract, passed on.
        unsafe { queue::start(&self.0, at, mode, buf, access::Dir::Write) }
    }

    /// The begin of a split collective read (`MPI_File_read_all_begin`, `_at_all_begin`,
    /// `_ordered_begin`): one may be active per file.
    ///
    /// # Safety
    /// As [`File::read`], until [`File::split_end`].
    pub unsafe fn read_begin(&self, at: Position, buf: Buffer) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { queue::split_begin(&self.0, at, buf, access::Dir::Read) }
    }

    /// The begin of a split collective write (as [`File::read_begin`]).
    ///
    /// # Safety
    /// As [`File::write`], until [`File::split_end`].
    pub unsafe fn write_begin(&self, at: Position, buf: Buffer) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { queue::split_begin(&self.0, at, buf, access::Dir::Write) }
    }

    /// The end of the active split collective (`MPI_File_*_end`), whose buffer must be
    /// `buf`, direction `write` and kind `kind`: its status.
    pub fn split_end(&self, buf: *const u8, write: bool, kind: Split) -> Result<Status> {
        queue::split_end(&self.0, buf, if write { access::Dir::Write } else { access::Dir::Read }, kind)
    }
}
