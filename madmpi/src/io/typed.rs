//! The safe Rust API of files: slices of [`Equivalence`] types in, statuses out; nonblocking
//! accesses borrow their slice until the request completes (rsmpi's typed buffers).

use super::{Buffer, File, Mode, Position};
use crate::comm::Status;
use crate::datatype::{Datatype, Equivalence};
use crate::error::Result;
use crate::request::Request;

fn buffer<T: Equivalence>(ptr: *const T, len: usize) -> Buffer {
    Buffer { ptr: ptr.cast_mut().cast(), count: len as u64, datatype: Datatype::predefined(T::DATATYPE) }
}

/// `fn name(args) = (position, mode);`: a blocking read into `&mut [T]` or write from `&[T]`.
macro_rules! blocking {
    ($($(#[$doc:meta])* fn $read:ident / $write:ident ($($arg:ident: $ty:ty),*) = ($at:expr, $mode:expr);)*) => {$(
        $(#[$doc])*
        pub fn $read<T: Equivalence>(&self, $($arg: $ty,)* buf: &mut [T]) -> Result<Status> {
            // SAFETY: the slice is exclusively borrowed for the call; `T` takes any bytes.
            unsafe { self.read($at, $mode, &buffer(buf.as_ptr(), buf.len())) }
        }

        $(#[$doc])*
        pub fn $write<T: Equivalence>(&self, $($arg: $ty,)* buf: &[T]) -> Result<Status> {
            // SAFETY: the slice is borrowed for the call and only read.
            unsafe { self.write($at, $mode, &buffer(buf.as_ptr(), buf.len())) }
        }
    )*};
}

/// As `blocking!`, nonblocking: the request borrows the slice.
macro_rules! nonblocking {
    ($($(#[$doc:meta])* fn $read:ident / $write:ident ($($arg:ident: $ty:ty),*) = ($at:expr, $mode:expr);)*) => {$(
        $(#[$doc])*
        pub fn $read<'a, T: Equivalence>(&self, $($arg: $ty,)* buf: &'a mut [T]) -> Result<Request<'a>> {
            // SAFETY: the request borrows the slice exclusively until it completes (dropping it
            // waits).
            unsafe { self.iread($at, $mode, buffer(buf.as_ptr(), buf.len())) }.map(Request::borrowing)
        }

        $(#[$doc])*
        pub fn $write<'a, T: Equivalence>(&self, $($arg: $ty,)* buf: &'a [T]) -> Result<Request<'a>> {
            // SAFETY: the request borrows the slice until it completes; it is only read.
            unsafe { self.iwrite($at, $mode, buffer(buf.as_ptr(), buf.len())) }.map(Request::borrowing)
        }
    )*};
}

impl File {
    blocking! {
        /// `MPI_File_read_at` / `MPI_File_write_at`: at etype `offset` of the view.
        fn read_at_into / write_at_from(offset: i64) = (Position::At(offset), Mode::Independent);
        /// `MPI_File_read_at_all` / `MPI_File_write_at_all` (collective).
        fn read_at_all_into / write_at_all_from(offset: i64) = (Position::At(offset), Mode::Collective);
        /// `MPI_File_read` / `MPI_File_write`: at the individual file pointer.
        fn read_into / write_from() = (Position::Individual, Mode::Independent);
        /// `MPI_File_read_all` / `MPI_File_write_all` (collective).
        fn read_all_into / write_all_from() = (Position::Individual, Mode::Collective);
        /// `MPI_File_read_shared` / `MPI_File_write_shared`: at the shared file pointer.
        fn read_shared_into / write_shared_from() = (Position::Shared, Mode::Independent);
        /// `MPI_File_read_ordered` / `MPI_File_write_ordered` (collective, in rank order).
        fn read_ordered_into / write_ordered_from() = (Position::Ordered, Mode::Collective);
    }

    nonblocking! {
        /// `MPI_File_iread_at` / `MPI_File_iwrite_at`.
        fn iread_at_into / iwrite_at_from(offset: i64) = (Position::At(offset), Mode::Independent);
        /// `MPI_File_iread_at_all` / `MPI_File_iwrite_at_all` (collective).
        fn iread_at_all_into / iwrite_at_all_from(offset: i64) = (Position::At(offset), Mode::Collective);
        /// `MPI_File_iread` / `MPI_File_iwrite`.
        fn iread_into / iwrite_from() = (Position::Individual, Mode::Independent);
        /// `MPI_File_iread_all` / `MPI_File_iwrite_all` (collective).
        fn iread_all_into / iwrite_all_from() = (Position::Individual, Mode::Collective);
        /// `MPI_File_iread_shared` / `MPI_File_iwrite_shared`.
        fn iread_shared_into / iwrite_shared_from() = (Position::Shared, Mode::Independent);
    }
}
