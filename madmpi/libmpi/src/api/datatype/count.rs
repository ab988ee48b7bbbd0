//! The arrays of count arguments of either width ([`CInt`]: `int`, or `MPI_Count` in the `_c`
//! forms), widened to the engine's `i64`.
//!
//! Owns these array conversions; the width of one argument is [`CInt`]'s.

use crate::check::CInt;
use madmpi::error::Error;

/// Widens an array of either width.
pub(crate) fn widen<C: CInt>(v: &[C]) -> Vec<i64> {
    v.iter().map(|x| x.wide()).collect()
}

/// Block lengths of either width: `MPI_ERR_COUNT` for a negative one.
pub(crate) fn blocklengths<C: CInt>(bls: &[C]) -> Result<Vec<i64>, Error> {
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
    use madmpi::abi;
    use madmpi::datatype::Datatype;
    use madmpi::error::ErrorClass;
    use std::ffi::c_int;

    #[test]
    fn widths_convert_and_undefined_marks_what_does_not_fit() {
        assert_eq!(<c_int as CInt>::or_undefined(Some(1 << 31)), abi::MPI_UNDEFINED);
        assert_eq!(<c_int as CInt>::or_undefined(Some(7)), 7);
        assert_eq!(<c_int as CInt>::or_undefined(None), abi::MPI_UNDEFINED);
        assert_eq!(<i64 as CInt>::or_undefined(Some(1 << 31)), 1 << 31);
        assert_eq!(<i64 as CInt>::or_undefined(Some(u64::MAX)), i64::from(abi::MPI_UNDEFINED));
        assert_eq!((-1i64).count().unwrap_err().class(), ErrorClass::Count);
        assert_eq!(((1i64 << 40) + 7).count().unwrap(), (1 << 40) + 7);
        assert_eq!(blocklengths(&[1i64, -2]).unwrap_err().class(), ErrorClass::Count);
        assert_eq!(widen(&[-3 as c_int]), vec![-3]);
        let int = Datatype::predefined(madmpi::datatype::Predefined::Int);
        assert!(<i64 as CInt>::built(Datatype::contiguous(2, &int).unwrap()).has_large_counts());
        assert!(!<c_int as CInt>::built(Datatype::contiguous(2, &int).unwrap()).has_large_counts());
    }
}
