//! The types of Fortran's parameterized numeric kinds (`MPI_Type_create_f90_integer`, `_real`,
//! `_complex`) and `MPI_Type_match_size`.
//!
//! Rules (MPICH 4.0.2's, which follow `SELECTED_INT_KIND`/`SELECTED_REAL_KIND` of gfortran on
//! x86-64): an integer of decimal range `r` takes 1, 2, 4 or 8 bytes for `r` up to 2, 4, 9, 18;
//! a real of precision `p` and range `r` takes 4 bytes up to (6, 37) and 8 up to (15, 307)
//! (MPICH offers no larger real there); a complex is two such reals. `MPI_UNDEFINED` for `p` or
//! `r` (a negative value) means "any". Anything larger is `MPI_ERR_OTHER`, as MPICH reports it.
//! The types have the size of their Fortran kind and are built on the C type of that size; the
//! C binding makes them predefined-like (one handle per arguments, never freed).
//!
//! `MPI_Type_match_size` answers with C types (this library has no Fortran named types): the
//! fixed-size integers, `float`/`double`/`long double`, and the C complex types.

use super::error::{Result, TypeError};
use super::{COMBINER_F90_COMPLEX, COMBINER_F90_INTEGER, COMBINER_F90_REAL};
use super::{Datatype, Kind, Predefined};

/// Which `MPI_Type_create_f90_*` call built a type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum F90Kind {
    Integer,
    Real,
    Complex,
}

impl F90Kind {
    pub(super) fn combiner(self) -> i32 {
        match self {
            F90Kind::Integer => COMBINER_F90_INTEGER,
            F90Kind::Real => COMBINER_F90_REAL,
            F90Kind::Complex => COMBINER_F90_COMPLEX,
        }
    }
}

/// The type classes of `MPI_Type_match_size`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TypeClass {
    Integer,
    Real,
    Complex,
}

impl Predefined {
    /// `MPI_Type_match_size`: the Fortran type of class `class` and `size` bytes MPICH answers, if any.
    pub fn matching(class: TypeClass, size: i64) -> Option<Predefined> {
        use Predefined::*;
        let candidates: &[Predefined] = match class {
            TypeClass::Integer => &[Integer1, Integer2, Integer4, Integer8],
            TypeClass::Real => &[Real4, Real8, Real16],
            TypeClass::Complex => &[Complex8, Complex16, Complex32],
        };
        candidates.iter().copied().find(|p| p.size() as i64 == size)
    }
}

/// Whether a requested precision or range `v` is within `limit` (`MPI_UNDEFINED`, negative,
/// asks for nothing).
fn within(v: i64, limit: i64) -> bool {
    v <= limit
}

impl Datatype {
    /// `MPI_Type_create_f90_integer(r)` (`p` = `None`), `_real(p, r)` and `_complex(p, r)`: a
    /// new object each call (the binding keeps one per arguments).
    pub fn f90(kind: F90Kind, p: Option<i64>, r: i64) -> Result<Datatype> {
        use Predefined::*;
        let base = match (kind, p) {
            (F90Kind::Integer, None) => [(2, Int8), (4, Int16), (9, Int32), (18, Int64)]
                .into_iter()
                .find(|&(limit, _)| within(r, limit))
                .map(|(_, t)| t),
            (F90Kind::Real | F90Kind::Complex, Some(p)) => {
                let real = if within(p, 6) && within(r, 37) {
                    Some(Float)
                } else if within(p, 15) && within(r, 307) {
                    Some(Double)
                } else {
                    None
                };
                match kind {
                    F90Kind::Complex => real.map(|t| if t == Float { CFloatComplex } else { CDoubleComplex }),
                    _ => real,
                }
            }
            _ => return Err(TypeError::arg("f90: a precision is given for reals and complexes only")),
        };
        let what = || match p {
            Some(p) => format!("precision {p} and range {r}"),
            None => format!("range {r}"),
        };
        let base =
            base.ok_or_else(|| TypeError::other(format!("no Fortran {kind:?} kind has {}", what())))?;
        let base = Datatype::predefined(base);
        let attrs = base.0.attrs;
        let t = Datatype::new(Kind::F90 { kind, p, r, base }, attrs);
        t.commit()?;
        Ok(t)
    }

    /// The kind of a type made by [`Datatype::f90`] (such types must never be freed).
    pub fn f90_kind(&self) -> Option<F90Kind> {
        match self.0.kind {
            Kind::F90 { kind, .. } => Some(kind),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::ErrorKind;

    #[test]
    fn f90_kinds_follow_mpichs_rules() {
        let size = |k, p, r| Datatype::f90(k, p, r).map(|t| t.size());
        let undefined = -32766; // MPI_UNDEFINED: any
        for (r, bytes) in [(1, 1), (2, 1), (3, 2), (4, 2), (5, 4), (9, 4), (10, 8), (18, 8), (undefined, 1)] {
            assert_eq!(size(F90Kind::Integer, None, r).unwrap(), bytes, "range {r}");
        }
        assert_eq!(size(F90Kind::Integer, None, 19).unwrap_err().kind, ErrorKind::Other);
        for (p, r, bytes) in
            [(6, 37, 4), (7, 37, 8), (6, 38, 8), (15, 307, 8), (undefined, 37, 4), (6, undefined, 4)]
        {
            assert_eq!(size(F90Kind::Real, Some(p), r).unwrap(), bytes, "({p}, {r})");
            assert_eq!(size(F90Kind::Complex, Some(p), r).unwrap(), 2 * bytes, "({p}, {r})");
        }
        assert_eq!(size(F90Kind::Real, Some(16), 307).unwrap_err().kind, ErrorKind::Other);
        assert_eq!(size(F90Kind::Complex, Some(6), 308).unwrap_err().kind, ErrorKind::Other);
        let t = Datatype::f90(F90Kind::Real, Some(7), 37).unwrap();
        assert!(t.is_committed() && t.f90_kind() == Some(F90Kind::Real));
        assert_eq!((t.as_predefined(), t.name().as_str()), (Some(Predefined::Double), ""));
        let e = t.envelope();
        assert_eq!((e.num_integers, e.num_datatypes, e.combiner), (2, 0, COMBINER_F90_REAL));
        assert_eq!(t.contents().unwrap().integers, vec![7, 37]);
        assert_eq!(Datatype::f90(F90Kind::Integer, None, 3).unwrap().contents().unwrap().integers, vec![3]);
    }

    #[test]
    fn match_size_finds_mpichs_fortran_types() {
        use Predefined::*;
        assert_eq!(Predefined::matching(TypeClass::Integer, 1), Some(Integer1));
        assert_eq!(Predefined::matching(TypeClass::Integer, 4), Some(Integer4));
        assert_eq!(Predefined::matching(TypeClass::Integer, 8), Some(Integer8));
        assert_eq!(Predefined::matching(TypeClass::Integer, 16), None);
        assert_eq!(Predefined::matching(TypeClass::Real, 4), Some(Real4));
        assert_eq!(Predefined::matching(TypeClass::Real, 16), Some(Real16));
        assert_eq!(Predefined::matching(TypeClass::Real, 2), None);
        assert_eq!(Predefined::matching(TypeClass::Complex, 8), Some(Complex8));
        assert_eq!(Predefined::matching(TypeClass::Complex, 32), Some(Complex32));
        assert_eq!(Predefined::matching(TypeClass::Complex, 4), None);
    }
}
