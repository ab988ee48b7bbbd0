//! Point-to-point with derived datatypes, safely: `count` elements of a [`Datatype`] laid over a
//! borrowed slice (a column of a matrix, the fields of an array of structs), sent or received
//! without a copy, blocking or as requests that borrow the slice, after checking that every byte
//! the type map touches lies inside it.
//!
//! Owns that bounds check; the transfers are [`crate::request`]'s raw operations.

use super::{Equivalence, From, Rank, Status, Tag};
use crate::comm::Comm;
use crate::datatype::Datatype;
use crate::error::{Error, Result};
use crate::request::{Mode, RawRequest, Request};

/// Checks that `count` elements of `dtype` starting at the slice's first byte touch only bytes of
/// the slice (`len` bytes). MPI lets a type reach before its start (negative displacements);
/// here that would leave the borrowed memory, so it is an error too.
fn check_fits(op: &str, len: usize, count: i64, dtype: &Datatype) -> Result<()> {
    if count < 0 {
        return Err(Error::count(format!("{op}: negative count ({count})")));
    }
    if count == 0 || dtype.size() == 0 {
        return Ok(());
    }
    let span = |what: &str| {
        Error::buffer(format!("{op}: {count} elements of the type {what} the {len}-byte buffer"))
    };
    // The touched range of element i is [true_lb + i*extent, true_ub + i*extent).
    let last = (count - 1).checked_mul(dtype.extent()).ok_or_else(|| span("overflow"))?;
    let lo = dtype.true_lb().checked_add(last.min(0)).ok_or_else(|| span("overflow"))?;
    let hi =
        (dtype.true_lb() + dtype.true_extent()).checked_add(last.max(0)).ok_or_else(|| span("overflow"))?;
    if lo < 0 {
        return Err(span("start before"));
    }
    if hi > i64::try_from(len).unwrap_or(i64::MAX) {
        return Err(span("run past the end of"));
    }
    Ok(())
}

impl Comm {
    /// `MPI_Send` of `count` elements of `dtype` laid over `buf` (blocking, standard mode).
    /// `MPI_ERR_BUFFER` if the type map leaves `buf`.
    pub fn send_typed<T: Equivalence>(
        &self,
        buf: &[T],
        count: i64,
        dtype: &Datatype,
        dest: Rank,
        tag: i32,
    ) -> Result<()> {
        check_fits("MPI_Send", std::mem::size_of_val(buf), count, dtype)?;
        // SAFETY: every byte the layout reads lies in `buf` (checked above), which stays borrowed
        // until the send completes (send_data returns after completion).
        let data = unsafe { dtype.data(buf.as_ptr().cast_mut().cast(), count) }?;
        // SAFETY: as above.
        unsafe { self.send_data("MPI_Send", data, dest, tag, Mode::Standard) }
    }

    /// `MPI_Recv` of up to `count` elements of `dtype` laid over `buf`. `MPI_ERR_BUFFER` if the
    /// type map leaves `buf`; a longer message is `MPI_ERR_TRUNCATE`.
    pub fn recv_typed<T: Equivalence>(
        &self,
        buf: &mut [T],
        count: i64,
        dtype: &Datatype,
        from: From,
        tag: Tag,
    ) -> Result<Status> {
        check_fits("MPI_Recv", std::mem::size_of_val(buf), count, dtype)?;
        // SAFETY: every byte the layout writes lies in `buf` (checked above), borrowed exclusively
        // until the receive completes; any bytes are valid `T`s (Equivalence's contract).
        let data = unsafe { dtype.data(buf.as_mut_ptr().cast(), count) }?;
        // SAFETY: as above.
        let o = unsafe { self.recv_data("MPI_Recv", data, from, tag) }?;
        match o.error {
            Some(e) => Err(e),
            None => Ok(o.status),
        }
    }
}

impl Comm {
    /// `MPI_Isend` / `MPI_Issend` of `count` elements of `dtype` laid over `buf`, which stays
    /// borrowed until the request ends. `MPI_ERR_BUFFER` if the type map leaves `buf`.
    pub fn isend_typed<'a, T: Equivalence>(
        &self,
        buf: &'a [T],
        count: i64,
        dtype: &Datatype,
        dest: Rank,
        tag: i32,
        mode: Mode,
    ) -> Result<Request<'a>> {
        check_fits("MPI_Isend", std::mem::size_of_val(buf), count, dtype)?;
        // SAFETY: every byte the layout reads lies in `buf` (checked above), borrowed (shared) for
        // 'a, which the returned request carries.
        let data = unsafe { dtype.data(buf.as_ptr().cast_mut().cast(), count) }?;
        // SAFETY: as above.
        let raw = unsafe { RawRequest::isend(self, data, dest, tag, mode) }?;
        Ok(Request::borrowing(raw))
    }

    /// `MPI_Irecv` of up to `count` elements of `dtype` laid over `buf`, borrowed exclusively
    /// until the request ends. `MPI_ERR_BUFFER` if the type map leaves `buf`.
    pub fn irecv_typed<'a, T: Equivalence>(
        &self,
        buf: &'a mut [T],
        count: i64,
        dtype: &Datatype,
        from: From,
        tag: Tag,
    ) -> Result<Request<'a>> {
        check_fits("MPI_Irecv", std::mem::size_of_val(buf), count, dtype)?;
        // SAFETY: every byte the layout writes lies in `buf` (checked above), borrowed exclusively
        // for 'a, which the request carries; any bytes are valid `T`s (Equivalence's contract).
        let data = unsafe { dtype.data(buf.as_mut_ptr().cast(), count) }?;
        // SAFETY: as above.
        let raw = unsafe { RawRequest::irecv(self, data, from, tag) }?;
        Ok(Request::borrowing(raw))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorClass;
    use crate::testing::on_all;

    #[test]
    fn a_matrix_column_travels_and_bounds_are_checked() {
        on_all(2, |w| {
            let column =
                Datatype::vector(4, 1, 4, &Datatype::predefined(crate::datatype::Predefined::Int)).unwrap();
            column.commit().unwrap();
            if w.rank() == 0 {
                let m: Vec<i32> = (0..16).collect();
                w.send_typed(&m[1..], 1, &column, Rank::Rank(1), 7).unwrap();
                // Column 1 of a 4x4 matrix needs 13 ints from its start: 12 are too few.
                let e = w.send_typed(&m[4..], 1, &column, Rank::Rank(1), 7).unwrap_err();
                assert_eq!(e.class(), ErrorClass::Buffer, "{e}");
                let e = w.send_typed(&m, -1, &column, Rank::Rank(1), 7).unwrap_err();
                assert_eq!(e.class(), ErrorClass::Count, "{e}");
            } else {
                let mut m = [-1i32; 16];
                let st = w.recv_typed(&mut m[2..], 1, &column, From::Rank(0), Tag::Tag(7)).unwrap();
                assert_eq!(st.bytes, 16);
                let col: Vec<i32> = (0..4).map(|r| m[2 + 4 * r]).collect();
                assert_eq!(col, [1, 5, 9, 13]);
                assert_eq!(m.iter().filter(|&&x| x == -1).count(), 12, "only the column was written");
            }
        });
    }

    #[test]
    fn nonblocking_typed_requests_borrow_their_slices() {
        on_all(2, |w| {
            let int = Datatype::predefined(crate::datatype::Predefined::Int);
            let every_other = Datatype::vector(3, 1, 2, &int).unwrap();
            every_other.commit().unwrap();
            if w.rank() == 0 {
                let v = [10i32, -1, 11, -1, 12];
                let r = w.isend_typed(&v, 1, &every_other, Rank::Rank(1), 3, Mode::Synchronous).unwrap();
                r.wait().unwrap();
                let e =
                    w.isend_typed(&v[1..], 1, &every_other, Rank::Rank(1), 3, Mode::Standard).err().unwrap();
                assert_eq!(e.class(), ErrorClass::Buffer, "{e}");
            } else {
                let mut v = [0i32; 6];
                let r = w.irecv_typed(&mut v[1..], 1, &every_other, From::Any, Tag::Any).unwrap();
                let st = r.wait().unwrap();
                assert_eq!((st.bytes, st.tag), (12, 3));
                assert_eq!(v, [0, 10, 0, 11, 0, 12]);
            }
        });
    }
}
