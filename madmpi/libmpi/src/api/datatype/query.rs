//! Datatype queries: `MPI_Type_size_x`, `MPI_Type_get_extent(_x, _c)`,
//! `MPI_Type_get_true_extent(_x, _c)`, `MPI_Type_get_envelope(_c)`, `MPI_Type_get_contents(_c)`,
//! `MPI_Type_set_name` and `MPI_Type_get_name`.
//!
//! A type built by a `_c` constructor has large counts: its `int` envelope and contents are
//! `MPI_ERR_OTHER` (as MPICH), the `_c` forms give them.
//!
//! Every output pointer is checked (`MPI_ERR_ARG`) before anything is written. The datatypes
//! `MPI_Type_get_contents` returns are new references: a predefined type comes back as its own
//! handle, a derived one as a new handle to the same object (MPICH gives the original handle
//! value back with one more reference; either way the program frees it with `MPI_Type_free`).
//! Owns the C side of these queries only.

use super::args::{self, output};
use crate::api::family::widths;
use crate::check;
use crate::check::CInt;
use crate::datatypes::predefined_handle;
use crate::errors::Outcome;
use crate::export::export;
use crate::state::{State, state};
use madmpi::abi;
use madmpi::datatype::Datatype;
use madmpi::error::Error;
use std::ffi::{c_char, c_int};

/// Writes a pair of results after checking both pointers.
///
/// # Safety
/// As [`check::out`], for both pointers.
unsafe fn write_pair<T>(a: *mut T, b: *mut T, names: [&str; 2], values: (T, T)) -> Result<(), Error> {
    // SAFETY: the caller's contract.
    let a = unsafe { check::out(a, names[0]) }?;
    // SAFETY: the caller's contract.
    let b = unsafe { check::out(b, names[1]) }?;
    (*a, *b) = values;
    Ok(())
}

/// A room argument of `MPI_Type_get_contents`: `max` must not be negative, and the array not
/// null while `max > 0`. Returns `max`.
fn room<T, C: CInt>(p: *mut T, max: C, what: &str) -> Result<usize, Error> {
    let max =
        usize::try_from(max.wide()).map_err(|_| Error::arg(format!("negative size ({max}) of {what}")))?;
    if max > 0 && (p.is_null() || !p.is_aligned()) {
        return Err(Error::arg(format!("{what} ({p:p}) is a null or misaligned pointer")));
    }
    Ok(max)
}

/// `MPI_ERR_OTHER` (MPICH's class) when `needed` values do not fit in `max`.
fn fits(needed: usize, max: usize, what: &str) -> Result<(), Error> {
    if needed > max {
        return Err(Error::other(format!("{what} has room for {max} values, the datatype has {needed}")));
    }
    Ok(())
}

impl State {
    /// The handle to give the program for `t`, a datatype `get_contents` returns: the
    /// predefined handle (that of an f90 type too), or a new handle (a new reference the
    /// program frees).
    fn returned_handle(&self, t: Datatype) -> Result<abi::Datatype, Error> {
        if let Some(h) = super::fortran::f90_handle(&t) {
            return Ok(h);
        }
        match t.as_predefined() {
            Some(p) => Ok(predefined_handle(p)),
            None => self.add_datatype(t),
        }
    }
}

/// The bounds `(lb, extent)` (`true_`: the true bounds) of `datatype` to `lb` and `extent`.
///
/// # Safety
/// Both pointers as [`check::out`].
unsafe fn bounds(datatype: abi::Datatype, true_: bool, lb: *mut i64, extent: *mut i64) -> Outcome {
    let st = state()?;
    let t = st.datatype(datatype)?;
    let (names, values) = match true_ {
        false => (["lb", "extent"], (t.lb(), t.extent())),
        true => (["true_lb", "true_extent"], (t.true_lb(), t.true_extent())),
    };
    // SAFETY: output arguments (the caller's contract).
    unsafe { write_pair(lb, extent, names, values) }?;
    Ok(())
}

/// `MPI_Type_get_envelope(_c)`; `num_large_counts` is null in the `int` form, which refuses a
/// type with large counts.
///
/// # Safety
/// Every non-null pointer as [`check::out`].
unsafe fn envelope<C: CInt>(
    datatype: abi::Datatype,
    num_integers: *mut C,
    num_addresses: *mut C,
    num_large_counts: *mut C,
    num_datatypes: *mut C,
    combiner: *mut c_int,
) -> Outcome {
    let st = state()?;
    let e = st.datatype(datatype)?.envelope();
    if !C::LARGE && e.num_large_counts > 0 {
        return Err(Error::other("the datatype has large counts: use MPI_Type_get_envelope_c").into());
    }
    // SAFETY: output arguments (distinct by MPI's contract).
    let (ni, na, nd, c) = unsafe {
        (
            check::out(num_integers, "num_integers")?,
            check::out(num_addresses, "num_addresses")?,
            check::out(num_datatypes, "num_datatypes")?,
            check::out(combiner, "combiner")?,
        )
    };
    // SAFETY: as the others, in the `_c` form only.
    let nl = if C::LARGE { Some(unsafe { check::out(num_large_counts, "num_large_counts") }?) } else { None };
    let fit = |n: usize, what: &str| {
        i64::try_from(n)
            .ok()
            .and_then(C::narrow)
            .ok_or_else(|| Error::count(format!("{what} ({n}) does not fit")))
    };
    let values = (
        fit(e.num_integers, "num_integers")?,
        fit(e.num_addresses, "num_addresses")?,
        fit(e.num_datatypes, "num_datatypes")?,
    );
    let large = fit(e.num_large_counts, "num_large_counts")?;
    (*ni, *na, *nd) = values;
    if let Some(nl) = nl {
        *nl = large;
    }
    *c = e.combiner;
    Ok(())
}

/// The output arrays of `MPI_Type_get_contents(_c)`, with their room.
struct ContentsOut<C> {
    max_integers: C,
    max_addresses: C,
    max_large_counts: C,
    max_datatypes: C,
    integers: *mut c_int,
    addresses: *mut abi::Aint,
    large_counts: *mut abi::Count,
    datatypes: *mut abi::Datatype,
}

/// `MPI_Type_get_contents(_c)` (`large_counts` unused in the `int` form, which refuses a type
/// with large counts).
///
/// # Safety
/// Each array valid for writes of its `max_*` elements.
unsafe fn contents<C: CInt>(datatype: abi::Datatype, o: ContentsOut<C>) -> Outcome {
    let st = state()?;
    let t = st.datatype(datatype)?;
    if !C::LARGE && t.has_large_counts() {
        return Err(Error::other("the datatype has large counts: use MPI_Type_get_contents_c").into());
    }
    let c = t.contents()?;
    let max_i = room(o.integers, o.max_integers, "array_of_integers")?;
    let max_a = room(o.addresses, o.max_addresses, "array_of_addresses")?;
    let max_l = if C::LARGE { room(o.large_counts, o.max_large_counts, "array_of_large_counts")? } else { 0 };
    let max_d = room(o.datatypes, o.max_datatypes, "array_of_datatypes")?;
    fits(c.integers.len(), max_i, "array_of_integers")?;
    fits(c.addresses.len(), max_a, "array_of_addresses")?;
    fits(c.large_counts.len(), max_l, "array_of_large_counts")?;
    fits(c.datatypes.len(), max_d, "array_of_datatypes")?;
    let ints = c
        .integers
        .iter()
        .map(|&v| c_int::try_from(v).map_err(|_| Error::count(format!("integer {v} does not fit in an int"))))
        .collect::<Result<Vec<c_int>, Error>>()?;
    // SAFETY: the arrays hold at least max_* >= the needed elements (the caller's contract),
    // and were checked non-null where elements are needed.
    let (out_i, out_a, out_l, out_d) = unsafe {
        (
            output(o.integers, ints.len(), "array_of_integers")?,
            output(o.addresses, c.addresses.len(), "array_of_addresses")?,
            output(o.large_counts, c.large_counts.len(), "array_of_large_counts")?,
            output(o.datatypes, c.datatypes.len(), "array_of_datatypes")?,
        )
    };
    let mut handles = Vec::with_capacity(c.datatypes.len());
    for t in c.datatypes {
        match st.returned_handle(t) {
            Ok(h) => handles.push(h),
            Err(e) => {
                // Nothing was returned: take back the references made so far.
                handles.into_iter().for_each(|h| drop(st.datatypes.remove(h)));
                return Err(e.into());
            }
        }
    }
    out_i.copy_from_slice(&ints);
    out_a.copy_from_slice(&c.addresses);
    out_l.copy_from_slice(&c.large_counts);
    out_d.copy_from_slice(&handles);
    Ok(())
}

widths! {
    /// Lower bound and extent.
    (datatype: abi::Datatype, lb: *mut abi::Aint, extent: *mut abi::Aint) {
        // SAFETY: `lb`/`extent` are the caller's two outputs; the body checks both before writing.
        unsafe { bounds(datatype, false, lb, extent) }
    }
    int MPI_Type_get_extent / PMPI_Type_get_extent;
    large MPI_Type_get_extent_x / PMPI_Type_get_extent_x, MPI_Type_get_extent_c / PMPI_Type_get_extent_c;

    /// The bounds of the bytes the type map touches.
    (datatype: abi::Datatype, true_lb: *mut abi::Aint, true_extent: *mut abi::Aint) {
        // SAFETY: `lb`/`extent` are the caller's two outputs; the body checks both before writing.
        unsafe { bounds(datatype, true, true_lb, true_extent) }
    }
    int MPI_Type_get_true_extent / PMPI_Type_get_true_extent;
    large MPI_Type_get_true_extent_x / PMPI_Type_get_true_extent_x,
        MPI_Type_get_true_extent_c / PMPI_Type_get_true_extent_c;
}

export! {
    /// `MPI_Type_get_envelope`: how many arguments built the type, and with which combiner.
    fn MPI_Type_get_envelope / PMPI_Type_get_envelope(
        datatype: abi::Datatype,
        num_integers: *mut c_int,
        num_addresses: *mut c_int,
        num_datatypes: *mut c_int,
        combiner: *mut c_int,
    ) {
        // SAFETY: the counts and `combiner` are the caller's outputs; the body checks each before writing.
        unsafe {
            envelope(
                datatype,
                num_integers,
                num_addresses,
                std::ptr::null_mut(),
                num_datatypes,
                combiner,
            )
        }
    }

    /// `MPI_Type_get_envelope_c`.
    fn MPI_Type_get_envelope_c / PMPI_Type_get_envelope_c(
        datatype: abi::Datatype,
        num_integers: *mut abi::Count,
        num_addresses: *mut abi::Count,
        num_large_counts: *mut abi::Count,
        num_datatypes: *mut abi::Count,
        combiner: *mut c_int,
    ) {
        // SAFETY: the counts and `combiner` are the caller's outputs; the body checks each before writing.
        unsafe { envelope(datatype, num_integers, num_addresses, num_large_counts, num_datatypes, combiner) }
    }

    /// `MPI_Type_get_contents`: the arguments that built a derived type (`MPI_ERR_TYPE` for a
    /// predefined one, as MPICH; `MPI_ERR_OTHER` when an array is too small).
    fn MPI_Type_get_contents / PMPI_Type_get_contents(
        datatype: abi::Datatype,
        max_integers: c_int,
        max_addresses: c_int,
        max_datatypes: c_int,
        array_of_integers: *mut c_int,
        array_of_addresses: *mut abi::Aint,
        array_of_datatypes: *mut abi::Datatype,
    ) {
        let o = ContentsOut {
            max_integers,
            max_addresses,
            max_large_counts: 0,
            max_datatypes,
            integers: array_of_integers,
            addresses: array_of_addresses,
            large_counts: std::ptr::null_mut(),
            datatypes: array_of_datatypes,
        };
        // SAFETY: each array has room for its `max_*` elements (MPI's rule for this call); the body checks
        // null and the room.
        unsafe { contents(datatype, o) }
    }

    /// `MPI_Type_get_contents_c`.
    fn MPI_Type_get_contents_c / PMPI_Type_get_contents_c(
        datatype: abi::Datatype,
        max_integers: abi::Count,
        max_addresses: abi::Count,
        max_large_counts: abi::Count,
        max_datatypes: abi::Count,
        array_of_integers: *mut c_int,
        array_of_addresses: *mut abi::Aint,
        array_of_large_counts: *mut abi::Count,
        array_of_datatypes: *mut abi::Datatype,
    ) {
        let o = ContentsOut {
            max_integers,
            max_addresses,
            max_large_counts,
            max_datatypes,
            integers: array_of_integers,
            addresses: array_of_addresses,
            large_counts: array_of_large_counts,
            datatypes: array_of_datatypes,
        };
        // SAFETY: each array has room for its `max_*` elements (MPI's rule for this call); the body checks
        // null and the room.
        unsafe { contents(datatype, o) }
    }

    /// `MPI_Type_set_name` (at most `MPI_MAX_OBJECT_NAME - 1` bytes are kept, as MPICH does).
    fn MPI_Type_set_name / PMPI_Type_set_name(datatype: abi::Datatype, type_name: *const c_char) {
        let st = state()?;
        let t = st.datatype(datatype)?;
        // SAFETY: a C string (MPI's contract).
        let name = unsafe { args::name(type_name) }?;
        t.set_name(&name);
        Ok(())
    }

    /// `MPI_Type_get_name`: the name set, the predefined name (`"MPI_INT"`), or `""`.
    fn MPI_Type_get_name / PMPI_Type_get_name(datatype: abi::Datatype, type_name: *mut c_char, resultlen: *mut c_int) {
        let st = state()?;
        let t = st.datatype(datatype)?;
        // SAFETY: `type_name` has room for MPI_MAX_OBJECT_NAME bytes (MPI's contract).
        unsafe {
            super::super::write_string(
                &t.name(),
                type_name,
                abi::MPI_MAX_OBJECT_NAME,
                resultlen,
                "type_name",
            )
        }?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use madmpi::error::ErrorClass;

    #[test]
    fn rooms_and_counts() {
        let mut x = [0; 4];
        assert_eq!(room(x.as_mut_ptr(), 4, "a").unwrap(), 4);
        assert_eq!(room::<c_int, c_int>(std::ptr::null_mut(), 0, "a").unwrap(), 0);
        assert_eq!(room::<c_int, i64>(std::ptr::null_mut(), 1, "a").unwrap_err().class(), ErrorClass::Arg);
        assert_eq!(room(x.as_mut_ptr(), -1i64, "a").unwrap_err().class(), ErrorClass::Arg);
        assert_eq!(fits(3, 2, "a").unwrap_err().class(), ErrorClass::Other);
        assert!(fits(2, 2, "a").is_ok());
    }
}
