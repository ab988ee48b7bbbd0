//! The two widths of count arguments: `int` in the MPI-3 calls, `MPI_Count` (64 bits) in their
//! large-count `_c` forms (MPI 4.0). Each call has one body generic over [`CountArg`], and its
//! two exported forms only pass their arguments on (as MPICH generates both from one table).
//!
//! Owns the conversions between the two widths and the engine's `i64`/`u64`: a result that does
//! not fit the `int` form's output is `MPI_UNDEFINED`, as MPI says for counts and sizes.

use madmpi::abi;
use madmpi::datatype::Datatype;
use madmpi::error::Error;
use std::ffi::c_int;

/// A count, block length, displacement or size argument of either width.
pub(crate) trait CountArg: Copy + std::fmt::Display {
    /// Whether this is the `_c` form's `MPI_Count`.
    const LARGE: bool;
    /// The value, widened.
    fn wide(self) -> i64;
    /// `v` in this width, if it fits.
    fn narrow(v: i64) -> Option<Self>;

    /// A count argument: `MPI_ERR_COUNT` if negative.
    fn count(self) -> Result<i64, Error> {
        let n = self.wide();
        if n < 0 {
            return Err(Error::count(format!("negative count ({self})")));
        }
        Ok(n)
    }

    /// A count or size result: `MPI_UNDEFINED` when `v` is unknown or does not fit.
    fn or_undefined(v: Option<u64>) -> Self {
        v.and_then(|n| i64::try_from(n).ok())
            .and_then(Self::narrow)
            .or_else(|| Self::narrow(i64::from(abi::MPI_UNDEFINED)))
            .expect("MPI_UNDEFINED fits every width")
    }

    /// A type built by a constructor of this width (marked when built by a `_c` form).
    fn built(t: Datatype) -> Datatype {
        if Self::LARGE { t.with_large_counts() } else { t }
    }
}

impl CountArg for c_int {
    const LARGE: bool = false;
    fn wide(self) -> i64 {
        i64::from(self)
    }
    fn narrow(v: i64) -> Option<Self> {
        c_int::try_from(v).ok()
    }
}

/// `MPI_Count` (and `MPI_Aint`, the same `int64_t` in MPICH's ABI).
impl CountArg for i64 {
    const LARGE: bool = true;
    fn wide(self) -> i64 {
        self
    }
    fn narrow(v: i64) -> Option<Self> {
        Some(v)
    }
}

/// Widens an array of either width.
pub(crate) fn widen<C: CountArg>(v: &[C]) -> Vec<i64> {
    v.iter().map(|x| x.wide()).collect()
}

/// Block lengths of either width: `MPI_ERR_COUNT` for a negative one.
pub(crate) fn blocklengths<C: CountArg>(bls: &[C]) -> Result<Vec<i64>, Error> {
    bls.iter()
        .enumerate()
        .map(|(i, &b)| {
            let v = b.wide();
            if v < 0 { Err(Error::count(format!("negative block length {v} at index {i}"))) } else { Ok(v) }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use madmpi::error::ErrorClass;

    #[test]
    fn widths_convert_and_undefined_marks_what_does_not_fit() {
        assert_eq!(<c_int as CountArg>::or_undefined(Some(1 << 31)), abi::MPI_UNDEFINED);
        assert_eq!(<c_int as CountArg>::or_undefined(Some(7)), 7);
        assert_eq!(<c_int as CountArg>::or_undefined(None), abi::MPI_UNDEFINED);
        assert_eq!(<i64 as CountArg>::or_undefined(Some(1 << 31)), 1 << 31);
        assert_eq!(<i64 as CountArg>::or_undefined(Some(u64::MAX)), i64::from(abi::MPI_UNDEFINED));
        assert_eq!((-1i64).count().unwrap_err().class(), ErrorClass::Count);
        assert_eq!(((1i64 << 40) + 7).count().unwrap(), (1 << 40) + 7);
        assert_eq!(blocklengths(&[1i64, -2]).unwrap_err().class(), ErrorClass::Count);
        assert_eq!(widen(&[-3 as c_int]), vec![-3]);
        let int = Datatype::predefined(madmpi::datatype::Predefined::Int);
        assert!(<i64 as CountArg>::built(Datatype::contiguous(2, &int).unwrap()).has_large_counts());
        assert!(!<c_int as CountArg>::built(Datatype::contiguous(2, &int).unwrap()).has_large_counts());
    }
}
