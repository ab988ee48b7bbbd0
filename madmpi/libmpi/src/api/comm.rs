//! Communicator queries and management: `MPI_Comm_size`, `MPI_Comm_rank`, `MPI_Comm_compare`,
//! `MPI_Comm_group`, `MPI_Comm_set_name`, `MPI_Comm_get_name`, `MPI_Comm_set_info`,
//! `MPI_Comm_get_info`, `MPI_Comm_free` (creation is in [`comm_create`](super::comm_create)).
//!
//! Info hints: the four assertions of MPI 4.0 are recorded and reported, other keys ignored
//! (see `madmpi::info::CommHints`).
//!
//! Errors go to the communicator's handler once it is resolved (for `MPI_Comm_compare`, the
//! first one's).

use super::write_string;
use crate::check;
use crate::errors::On;
use crate::export::export;
use crate::infos;
use crate::state::state;
use madmpi::abi;
use madmpi::comm::Comparison;
use madmpi::error::Error;
use std::ffi::{c_char, c_int};

/// Longest name kept, in bytes: names are cut there (as MPICH does), the NUL fitting in
/// `MPI_MAX_OBJECT_NAME`.
const NAME_BYTES: usize = abi::MPI_MAX_OBJECT_NAME as usize - 1;

/// The name at `p`, read up to its NUL or [`NAME_BYTES`] bytes, whichever comes first (bytes
/// that are not UTF-8 become U+FFFD, and the name is cut again on a character boundary).
///
/// # Safety
/// `p`, if not null, must point to a NUL-terminated string or to at least `NAME_BYTES` bytes.
pub(super) unsafe fn read_name(p: *const c_char) -> Result<String, Error> {
    if p.is_null() {
        return Err(Error::arg("the name is a null pointer"));
    }
    let mut bytes = Vec::new();
    while bytes.len() < NAME_BYTES {
        // SAFETY: within the string or its first NAME_BYTES bytes (the caller's contract): the
        // loop stops at the NUL.
        let b = unsafe { *p.add(bytes.len()) } as u8;
        if b == 0 {
            break;
        }
        bytes.push(b);
    }
    let mut name = String::from_utf8_lossy(&bytes).into_owned();
    let mut n = name.len().min(NAME_BYTES);
    while !name.is_char_boundary(n) {
        n -= 1;
    }
    name.truncate(n);
    Ok(name)
}

export! {
    /// `MPI_Comm_size`.
    fn MPI_Comm_size / PMPI_Comm_size(comm: abi::Comm, size: *mut c_int) {
        let c = state()?.comm(comm)?;
        // SAFETY: an output argument.
        *unsafe { check::out(size, "size") }.on(&c)? = c.comm.size() as c_int;
        Ok(())
    }

    /// `MPI_Comm_rank`.
    fn MPI_Comm_rank / PMPI_Comm_rank(comm: abi::Comm, rank: *mut c_int) {
        let c = state()?.comm(comm)?;
        // SAFETY: an output argument.
        *unsafe { check::out(rank, "rank") }.on(&c)? = c.comm.rank() as c_int;
        Ok(())
    }

    /// `MPI_Comm_compare`: `MPI_IDENT` for the same communicator, `MPI_CONGRUENT` for the same
    /// members in the same order, `MPI_SIMILAR` in another order, else `MPI_UNEQUAL`.
    fn MPI_Comm_compare / PMPI_Comm_compare(comm1: abi::Comm, comm2: abi::Comm, result: *mut c_int) {
        let st = state()?;
        let c1 = st.comm(comm1)?;
        let c2 = st.comm(comm2).on(&c1)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(result, "result") }.on(&c1)?;
        *out = match c1.comm.compare(&c2.comm) {
            Comparison::Ident => abi::MPI_IDENT,
            Comparison::Congruent => abi::MPI_CONGRUENT,
            Comparison::Similar => abi::MPI_SIMILAR,
            Comparison::Unequal => abi::MPI_UNEQUAL,
        };
        Ok(())
    }

    /// `MPI_Comm_group`: a new handle to the communicator's group (MPICH hands out the same
    /// handle each time; either is to be freed once).
    fn MPI_Comm_group / PMPI_Comm_group(comm: abi::Comm, group: *mut abi::Group) {
        let st = state()?;
        let c = st.comm(comm)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(group, "group") }.on(&c)?;
        *out = st.add_group(c.comm.group().clone()).on(&c)?;
        Ok(())
    }

    /// `MPI_Comm_set_name`: names longer than `MPI_MAX_OBJECT_NAME - 1` bytes are cut there.
    fn MPI_Comm_set_name / PMPI_Comm_set_name(comm: abi::Comm, comm_name: *const c_char) {
        let c = state()?.comm(comm)?;
        // SAFETY: a C string (MPI's contract).
        let name = unsafe { read_name(comm_name) }.on(&c)?;
        c.comm.set_name(&name);
        Ok(())
    }

    /// `MPI_Comm_get_name`: `MPI_COMM_WORLD`, `MPI_COMM_SELF`, the name set, or the empty
    /// string for a communicator never named (as in MPICH).
    fn MPI_Comm_get_name / PMPI_Comm_get_name(comm: abi::Comm, comm_name: *mut c_char, resultlen: *mut c_int) {
        let c = state()?.comm(comm)?;
        // SAFETY: `comm_name` has MPI_MAX_OBJECT_NAME bytes (MPI's contract).
        unsafe { write_string(&c.comm.name(), comm_name, abi::MPI_MAX_OBJECT_NAME, resultlen, "comm_name") }
            .on(&c)
    }

    /// `MPI_Comm_set_info`: takes the hints of `info` MadMPI recognizes, with a valid value;
    /// other keys are ignored, as MPI allows (`MPI_INFO_NULL`: nothing changes; MPICH 4.0.2
    /// says `MPI_ERR_ARG`). Collective in MPI's terms, but no hint needs the members to agree,
    /// so nothing is exchanged.
    fn MPI_Comm_set_info / PMPI_Comm_set_info(comm: abi::Comm, info: abi::Info) {
        let c = state()?.comm(comm)?;
        c.comm.set_info(&infos::hints(info).on(&c)?);
        Ok(())
    }

    /// `MPI_Comm_get_info`: a new info object with every recognized hint and its current value
    /// (the program frees it).
    fn MPI_Comm_get_info / PMPI_Comm_get_info(comm: abi::Comm, info_used: *mut abi::Info) {
        let c = state()?.comm(comm)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(info_used, "info_used") }.on(&c)?;
        *out = infos::add(c.comm.get_info()).on(&c)?;
        Ok(())
    }

    /// `MPI_Comm_free`: deletes the attributes (their delete callbacks run; if one fails, the
    /// call returns its code and the communicator stays), then sets the handle to
    /// `MPI_COMM_NULL`. Pending operations on it complete normally. Local, as in MPICH.
    fn MPI_Comm_free / PMPI_Comm_free(comm: *mut abi::Comm) {
        let st = state()?;
        // SAFETY: an in-out argument.
        let h = unsafe { check::out(comm, "comm") }?;
        let c = st.comm(*h)?;
        if matches!(*h, abi::MPI_COMM_WORLD | abi::MPI_COMM_SELF) {
            return Err(Error::comm(format!("{} cannot be freed", c.comm.name()))).on(&c);
        }
        c.attrs.with(|t| t.delete_all(h)).and_then(|r| r).on(&c)?;
        st.remove_comm(*h);
        *h = abi::MPI_COMM_NULL;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cut() {
        // SAFETY: NUL-terminated strings.
        unsafe {
            assert_eq!(read_name(c"hello".as_ptr()).unwrap(), "hello");
            let long = std::ffi::CString::new("é".repeat(100)).unwrap();
            let name = read_name(long.as_ptr()).unwrap();
            assert_eq!(name, "é".repeat(63), "127 bytes cut to whole characters");
            assert!(read_name(std::ptr::null()).is_err());
        }
    }
}
