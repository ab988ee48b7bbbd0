//! `MPI_Type_match_size` and `MPI_Type_create_f90_integer`, `_real` and `_complex`.
//!
//! The f90 types are predefined-like, as in MPICH: the same arguments give the same handle
//! every time, and `MPI_Type_free` refuses them (`MPI_ERR_TYPE`; MPICH 4.0.2 frees them and
//! later aborts on the stale handle). The engine chooses the types (`madmpi::datatype::f90`);
//! this file keeps their handles. `MPI_Type_match_size` answers with C types: this library has
//! no Fortran named types (MPICH answers `MPI_INTEGER4`, `MPI_REAL8`... of the same sizes).

use crate::check;
use crate::check::CInt;
use crate::datatypes::predefined_handle;
use crate::errors::Outcome;
use crate::export::export;
use crate::state::state;
use madmpi::abi;
use madmpi::datatype::{Datatype, F90Kind, Predefined, TypeClass};
use madmpi::error::Error;
use std::ffi::c_int;
use std::sync::{Mutex, PoisonError};

/// `MPI_TYPECLASS_REAL`, `_INTEGER` and `_COMPLEX` in MPICH's `mpi.h`.
fn type_class(c: c_int) -> Result<TypeClass, Error> {
    match c {
        1 => Ok(TypeClass::Real),
        2 => Ok(TypeClass::Integer),
        3 => Ok(TypeClass::Complex),
        _ => Err(Error::arg(format!("invalid type class {c} (MPI_TYPECLASS_REAL, _INTEGER or _COMPLEX)"))),
    }
}

/// The f90 types made so far: arguments, handle and object id.
type Made = Vec<((F90Kind, Option<i64>, i64), abi::Datatype, usize)>;
static MADE: Mutex<Made> = Mutex::new(Vec::new());

/// The handle of `t` if it is an f90 type (the one `get_contents` must return).
pub(super) fn f90_handle(t: &Datatype) -> Option<abi::Datatype> {
    t.f90_kind()?;
    let made = MADE.lock().unwrap_or_else(PoisonError::into_inner);
    made.iter().find(|(_, _, id)| *id == t.object_id()).map(|(_, h, _)| *h)
}

/// `MPI_Type_create_f90_*`: the handle for these arguments, made on first use.
///
/// # Safety
/// `newtype` as [`check::out`].
unsafe fn f90(kind: F90Kind, p: Option<c_int>, r: c_int, newtype: *mut abi::Datatype) -> Outcome {
    let st = state()?;
    // SAFETY: null and misaligned pointers are rejected before use; a valid one is writable (this function's
    // `# Safety`).
    let out = unsafe { check::out(newtype, "newtype") }?;
    let key = (kind, p.map(i64::from), i64::from(r));
    // Held while a new type is stored, so that two threads asking at once get one handle.
    let mut made = MADE.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, h, _)) = made.iter().find(|(k, _, _)| *k == key) {
        *out = *h;
        return Ok(());
    }
    let t = Datatype::f90(kind, key.1, key.2)?;
    let id = t.object_id();
    let h = st.add_datatype(t)?;
    made.push((key, h, id));
    *out = h;
    Ok(())
}

export! {
    /// `MPI_Type_match_size`: MPICH's Fortran type (`MPI_INTEGER4`, `MPI_REAL8`, ...) of `typeclass` and `size` bytes
    /// (`MPI_ERR_ARG` if none, as MPICH).
    fn MPI_Type_match_size / PMPI_Type_match_size(typeclass: c_int, size: c_int, datatype: *mut abi::Datatype) {
        let class = type_class(typeclass)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(datatype, "datatype") }?;
        let p = Predefined::matching(class, size.wide())
            .ok_or_else(|| Error::arg(format!("no {class:?} type of {size} bytes")))?;
        *out = predefined_handle(p);
        Ok(())
    }

    /// `MPI_Type_create_f90_integer`: the integer type of decimal range `r`.
    fn MPI_Type_create_f90_integer / PMPI_Type_create_f90_integer(r: c_int, newtype: *mut abi::Datatype) {
        // SAFETY: `newtype` is the caller's output handle (checked in the body).
        unsafe { f90(F90Kind::Integer, None, r, newtype) }
    }

    /// `MPI_Type_create_f90_real`: the real type of precision `p` and range `r`.
    fn MPI_Type_create_f90_real / PMPI_Type_create_f90_real(p: c_int, r: c_int, newtype: *mut abi::Datatype) {
        // SAFETY: `newtype` is the caller's output handle (checked in the body).
        unsafe { f90(F90Kind::Real, Some(p), r, newtype) }
    }

    /// `MPI_Type_create_f90_complex`: the complex type of precision `p` and range `r`.
    fn MPI_Type_create_f90_complex / PMPI_Type_create_f90_complex(p: c_int, r: c_int, newtype: *mut abi::Datatype) {
        // SAFETY: `newtype` is the caller's output handle (checked in the body).
        unsafe { f90(F90Kind::Complex, Some(p), r, newtype) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use madmpi::error::ErrorClass;

    #[test]
    fn type_classes_are_mpichs() {
        assert_eq!(type_class(1).unwrap(), TypeClass::Real);
        assert_eq!(type_class(2).unwrap(), TypeClass::Integer);
        assert_eq!(type_class(3).unwrap(), TypeClass::Complex);
        assert_eq!(type_class(0).unwrap_err().class(), ErrorClass::Arg);
    }
}
