//! Statuses the program writes or converts: `MPI_Status_set_cancelled`,
//! `MPI_Status_set_elements`, `MPI_Status_set_elements_x` (for generalized requests, whose
//! query callback fills the status), `MPI_Status_c2f` and `MPI_Status_f2c`, and the Fortran
//! "ignore" sentinels MPICH exports as data: `MPI_F_STATUS_IGNORE`, `MPI_F_STATUSES_IGNORE`,
//! `MPI_F08_STATUS_IGNORE`, `MPI_F08_STATUSES_IGNORE`.
//!
//! A status records bytes (see `status`): `MPI_Status_set_elements` records `count` × the
//! datatype's size (madmpi's `Datatype::status_bytes`), as MPICH does. A Fortran status is the
//! five `int`s of `MPI_Status` in order, so the conversions copy them.
//!
//! Owns these entry points and the sentinel objects; the status layout is `madmpi::abi`'s.

use crate::check;
use crate::export::export;
use crate::state::state;
use madmpi::abi::{self, Fint, Status};
use madmpi::error::Error;
use std::ffi::c_int;

/// `MPI_F_STATUS_SIZE`: a Fortran status is this many `MPI_Fint`s.
const F_STATUS_SIZE: usize = abi::MPI_F_STATUS_SIZE as usize;

/// `MPI_F08_status`: the mpi_f08 status, the same five integers as a struct.
#[repr(C)]
pub struct F08Status {
    fields: [Fint; F_STATUS_SIZE],
}

// The four sentinels are objects, as in MPICH (`nm -D`: two 8-byte `B`, two 8-byte `D`), so
// that programs compiled against MPICH's header, which hold copy relocations of that size,
// load. MPICH leaves the two `MPI_F_` ones null until its Fortran library sets them; there is
// no Fortran library here, so they stay null, and a null Fortran status is refused below like
// any null pointer. They are mutable, as C declares them; Rust code never reads or writes them.

/// `MPI_F_STATUS_IGNORE` (null: no Fortran binding).
#[unsafe(no_mangle)]
pub static mut MPI_F_STATUS_IGNORE: *mut Fint = std::ptr::null_mut();
/// `MPI_F_STATUSES_IGNORE` (null: no Fortran binding).
#[unsafe(no_mangle)]
pub static mut MPI_F_STATUSES_IGNORE: *mut Fint = std::ptr::null_mut();

/// What `MPI_F08_STATUS_IGNORE` points to: its address is the sentinel.
static mut F08_STATUS_IGNORE_OBJ: F08Status = F08Status { fields: [0; F_STATUS_SIZE] };
/// What `MPI_F08_STATUSES_IGNORE` points to.
static mut F08_STATUSES_IGNORE_OBJ: [F08Status; 1] = [F08Status { fields: [0; F_STATUS_SIZE] }];

/// `MPI_F08_STATUS_IGNORE`.
#[unsafe(no_mangle)]
pub static mut MPI_F08_STATUS_IGNORE: *mut F08Status = &raw mut F08_STATUS_IGNORE_OBJ;
/// `MPI_F08_STATUSES_IGNORE`.
#[unsafe(no_mangle)]
pub static mut MPI_F08_STATUSES_IGNORE: *mut F08Status = (&raw mut F08_STATUSES_IGNORE_OBJ).cast();

/// A status the call writes: `MPI_ERR_ARG` for `MPI_STATUS_IGNORE`, null or misaligned.
///
/// # Safety
/// As [`check::out`].
unsafe fn status_out<'a>(p: *mut Status, what: &str) -> Result<&'a mut Status, Error> {
    if p as usize == abi::MPI_STATUS_IGNORE {
        return Err(Error::arg(format!("{what} is MPI_STATUS_IGNORE, no status to write")));
    }
    // SAFETY: the caller's contract.
    unsafe { check::out(p, what) }
}

/// A status's fields as a Fortran status, and back.
fn to_fortran(s: &Status) -> [Fint; F_STATUS_SIZE] {
    [s.count_lo, s.count_hi_and_cancelled, s.source, s.tag, s.error]
}

fn from_fortran(f: &[Fint; F_STATUS_SIZE]) -> Status {
    let [count_lo, count_hi_and_cancelled, source, tag, error] = *f;
    Status { count_lo, count_hi_and_cancelled, source, tag, error }
}

/// `MPI_Status_set_elements(_x)`: records `count` elements of `datatype`.
fn set_elements(status: *mut Status, datatype: abi::Datatype, count: i64) -> Result<(), Error> {
    let st = state()?;
    // SAFETY: an output argument.
    let status = unsafe { status_out(status, "status") }?;
    let ty = st.datatype(datatype)?;
    let count = u64::try_from(count).map_err(|_| Error::count(format!("negative count {count}")))?;
    let bytes = ty.status_bytes(count).ok_or_else(|| {
        Error::count(format!("{count} elements of {} bytes do not fit in a status", ty.size()))
    })?;
    // `status_bytes` keeps within an i64.
    status.set_count(bytes as abi::Count);
    Ok(())
}

export! {
    /// `MPI_Status_set_cancelled`: what `MPI_Test_cancelled` will read (`flag` non-zero: true).
    fn MPI_Status_set_cancelled / PMPI_Status_set_cancelled(status: *mut Status, flag: c_int) {
        // SAFETY: an output argument.
        unsafe { status_out(status, "status") }?.set_cancelled(flag != 0);
        Ok(())
    }

    /// `MPI_Status_set_elements`: `count` elements of `datatype` (see the module docs).
    fn MPI_Status_set_elements / PMPI_Status_set_elements(status: *mut Status, datatype: abi::Datatype, count: c_int) {
        Ok(set_elements(status, datatype, i64::from(count))?)
    }

    /// `MPI_Status_set_elements_x`: the same with an `MPI_Count`.
    fn MPI_Status_set_elements_x / PMPI_Status_set_elements_x(
        status: *mut Status,
        datatype: abi::Datatype,
        count: abi::Count,
    ) {
        Ok(set_elements(status, datatype, count)?)
    }

    /// `MPI_Status_c2f`: copies a C status into a Fortran one (works at any time).
    fn MPI_Status_c2f / PMPI_Status_c2f(c_status: *const Status, f_status: *mut Fint) {
        // SAFETY: an input argument (MPI's contract).
        let c = unsafe { check::status_in(c_status) }?;
        // SAFETY: MPI_F_STATUS_SIZE integers to write (MPI's contract); `check::out` refuses
        // null (MPI_F_STATUS_IGNORE here) and misaligned pointers.
        let f = unsafe { check::out(f_status.cast::<[Fint; F_STATUS_SIZE]>(), "f_status") }?;
        *f = to_fortran(c);
        Ok(())
    }

    /// `MPI_Status_f2c`: copies a Fortran status into a C one (works at any time).
    fn MPI_Status_f2c / PMPI_Status_f2c(f_status: *const Fint, c_status: *mut Status) {
        // SAFETY: MPI_F_STATUS_SIZE integers to read (MPI's contract); `check::array_in`
        // refuses null (MPI_F_STATUS_IGNORE here) and misaligned pointers.
        let f = unsafe { check::array_in(f_status, F_STATUS_SIZE, "f_status") }?;
        let f = <&[Fint; F_STATUS_SIZE]>::try_from(f).map_err(|_| Error::intern("f_status: wrong length"))?;
        let converted = from_fortran(f);
        // SAFETY: an output argument.
        *unsafe { status_out(c_status, "c_status") }? = converted;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fortran_statuses_round_trip() {
        let s = Status { count_lo: 1, count_hi_and_cancelled: 3, source: 4, tag: 5, error: 6 };
        let f = to_fortran(&s);
        assert_eq!(f[abi::MPI_F_SOURCE as usize], 4);
        assert_eq!(f[abi::MPI_F_TAG as usize], 5);
        assert_eq!(f[abi::MPI_F_ERROR as usize], 6);
        let back = from_fortran(&f);
        assert_eq!(
            (back.count(), back.cancelled(), back.source, back.tag, back.error),
            (s.count(), true, 4, 5, 6)
        );
    }
}
