//! Datatype queries: `MPI_Type_size_x`, `MPI_Type_get_extent(_x)`,
//! `MPI_Type_get_true_extent(_x)`, `MPI_Type_get_envelope`, `MPI_Type_get_contents`,
//! `MPI_Type_set_name` and `MPI_Type_get_name`.
//!
//! Every output pointer is checked (`MPI_ERR_ARG`) before anything is written. The datatypes
//! `MPI_Type_get_contents` returns are new references: a predefined type comes back as its own
//! handle, a derived one as a new handle to the same object (MPICH gives the original handle
//! value back with one more reference; either way the program frees it with `MPI_Type_free`).
//! Owns the C side of these queries only.

use super::args::{self, output};
use crate::check;
use crate::datatypes::predefined_handle;
use crate::export::export;
use crate::state::{State, state};
use madmpi::abi;
use madmpi::datatype::Datatype;
use madmpi::error::Error;
use std::ffi::{c_char, c_int};

/// A `Count` result (`MPI_UNDEFINED` if it does not fit, which no type built here reaches).
fn count_of(v: u64) -> abi::Count {
    abi::Count::try_from(v).unwrap_or(abi::Count::from(abi::MPI_UNDEFINED))
}

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
fn room<T>(p: *mut T, max: c_int, what: &str) -> Result<usize, Error> {
    let max = usize::try_from(max).map_err(|_| Error::arg(format!("negative size ({max}) of {what}")))?;
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
    /// predefined handle, or a new handle (a new reference the program frees).
    fn returned_handle(&self, t: Datatype) -> Result<abi::Datatype, Error> {
        match t.as_predefined() {
            Some(p) => Ok(predefined_handle(p)),
            None => self.add_datatype(t),
        }
    }
}

export! {
    /// `MPI_Type_size_x`: bytes of data in one element.
    fn MPI_Type_size_x / PMPI_Type_size_x(datatype: abi::Datatype, size: *mut abi::Count) {
        let st = state()?;
        let t = st.datatype(datatype)?;
        // SAFETY: an output argument.
        let size = unsafe { check::out(size, "size") }?;
        *size = count_of(t.size());
        Ok(())
    }

    /// `MPI_Type_get_extent`: lower bound and extent.
    fn MPI_Type_get_extent / PMPI_Type_get_extent(datatype: abi::Datatype, lb: *mut abi::Aint, extent: *mut abi::Aint) {
        let st = state()?;
        let t = st.datatype(datatype)?;
        // SAFETY: output arguments.
        unsafe { write_pair(lb, extent, ["lb", "extent"], (t.lb(), t.extent())) }?;
        Ok(())
    }

    /// `MPI_Type_get_extent_x`.
    fn MPI_Type_get_extent_x / PMPI_Type_get_extent_x(datatype: abi::Datatype, lb: *mut abi::Count, extent: *mut abi::Count) {
        let st = state()?;
        let t = st.datatype(datatype)?;
        // SAFETY: output arguments.
        unsafe { write_pair(lb, extent, ["lb", "extent"], (t.lb(), t.extent())) }?;
        Ok(())
    }

    /// `MPI_Type_get_true_extent`: the bounds of the bytes the type map touches.
    fn MPI_Type_get_true_extent / PMPI_Type_get_true_extent(
        datatype: abi::Datatype,
        true_lb: *mut abi::Aint,
        true_extent: *mut abi::Aint,
    ) {
        let st = state()?;
        let t = st.datatype(datatype)?;
        // SAFETY: output arguments.
        unsafe { write_pair(true_lb, true_extent, ["true_lb", "true_extent"], (t.true_lb(), t.true_extent())) }?;
        Ok(())
    }

    /// `MPI_Type_get_true_extent_x`.
    fn MPI_Type_get_true_extent_x / PMPI_Type_get_true_extent_x(
        datatype: abi::Datatype,
        true_lb: *mut abi::Count,
        true_extent: *mut abi::Count,
    ) {
        let st = state()?;
        let t = st.datatype(datatype)?;
        // SAFETY: output arguments.
        unsafe { write_pair(true_lb, true_extent, ["true_lb", "true_extent"], (t.true_lb(), t.true_extent())) }?;
        Ok(())
    }

    /// `MPI_Type_get_envelope`: how many arguments built the type, and with which combiner.
    fn MPI_Type_get_envelope / PMPI_Type_get_envelope(
        datatype: abi::Datatype,
        num_integers: *mut c_int,
        num_addresses: *mut c_int,
        num_datatypes: *mut c_int,
        combiner: *mut c_int,
    ) {
        let st = state()?;
        let e = st.datatype(datatype)?.envelope();
        // SAFETY: output arguments (four distinct ints by MPI's contract).
        let (ni, na, nd, c) = unsafe {
            (
                check::out(num_integers, "num_integers")?,
                check::out(num_addresses, "num_addresses")?,
                check::out(num_datatypes, "num_datatypes")?,
                check::out(combiner, "combiner")?,
            )
        };
        let values = (
            args::to_int(e.num_integers, "num_integers")?,
            args::to_int(e.num_addresses, "num_addresses")?,
            args::to_int(e.num_datatypes, "num_datatypes")?,
        );
        (*ni, *na, *nd) = values;
        *c = e.combiner;
        Ok(())
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
        let st = state()?;
        let c = st.datatype(datatype)?.contents()?;
        let max_i = room(array_of_integers, max_integers, "array_of_integers")?;
        let max_a = room(array_of_addresses, max_addresses, "array_of_addresses")?;
        let max_d = room(array_of_datatypes, max_datatypes, "array_of_datatypes")?;
        fits(c.integers.len(), max_i, "array_of_integers")?;
        fits(c.addresses.len(), max_a, "array_of_addresses")?;
        fits(c.datatypes.len(), max_d, "array_of_datatypes")?;
        let ints = c
            .integers
            .iter()
            .map(|&v| c_int::try_from(v).map_err(|_| Error::count(format!("integer {v} does not fit in an int"))))
            .collect::<Result<Vec<c_int>, Error>>()?;
        // SAFETY: the arrays hold at least max_* >= the needed elements (MPI's contract), and
        // were checked non-null where elements are needed.
        let (out_i, out_a, out_d) = unsafe {
            (
                output(array_of_integers, ints.len(), "array_of_integers")?,
                output(array_of_addresses, c.addresses.len(), "array_of_addresses")?,
                output(array_of_datatypes, c.datatypes.len(), "array_of_datatypes")?,
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
        out_d.copy_from_slice(&handles);
        Ok(())
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
        unsafe { super::super::write_string(&t.name(), type_name, abi::MPI_MAX_OBJECT_NAME, resultlen, "type_name") }?;
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
        assert_eq!(room::<c_int>(std::ptr::null_mut(), 0, "a").unwrap(), 0);
        assert_eq!(room::<c_int>(std::ptr::null_mut(), 1, "a").unwrap_err().class(), ErrorClass::Arg);
        assert_eq!(room(x.as_mut_ptr(), -1, "a").unwrap_err().class(), ErrorClass::Arg);
        assert_eq!(fits(3, 2, "a").unwrap_err().class(), ErrorClass::Other);
        assert!(fits(2, 2, "a").is_ok());
        assert_eq!(count_of(u64::MAX), abi::Count::from(abi::MPI_UNDEFINED));
        assert_eq!(count_of(7), 7);
    }
}
