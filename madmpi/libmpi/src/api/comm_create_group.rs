//! `MPI_Comm_create_group` (collective over the group's members only, told apart by `tag`),
//! `MPI_Comm_idup` and `MPI_Comm_idup_with_info` (nonblocking).
//!
//! As in MPICH, `MPI_Comm_idup` writes the new handle at once and copies the attributes (the
//! copy callbacks run in the calling thread, as for `MPI_Comm_dup`); the handle names a
//! placeholder until the request completes (using it before is erroneous, as MPI says), and
//! is then given the new communicator, keeping its error handler and attributes. If the
//! duplication fails, the handle is freed and the request completes with the error.

use crate::check;
use crate::comms::CommObj;
use crate::errors::On;
use crate::export::export;
use crate::infos;
use crate::state::state;
use madmpi::abi;
use madmpi::info::CommHints;
use std::ffi::c_int;

export! {
    /// `MPI_Comm_create_group`: `MPI_COMM_NULL` at a caller outside `group`; `MPI_ERR_COMM`
    /// on an intercommunicator, `MPI_ERR_GROUP` for a process outside the communicator,
    /// `MPI_ERR_TAG` for a negative tag.
    fn MPI_Comm_create_group / PMPI_Comm_create_group(
        comm: abi::Comm,
        group: abi::Group,
        tag: c_int,
        newcomm: *mut abi::Comm,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        let g = st.group(group).on(&c)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(newcomm, "newcomm") }.on(&c)?;
        *out = abi::MPI_COMM_NULL;
        let new = c.comm.create_group(&g, tag).on(&c)?;
        super::comm_create::publish(&st, &c, new, out)
    }

    /// `MPI_Comm_idup`: the duplicate keeps the parent's hints.
    fn MPI_Comm_idup / PMPI_Comm_idup(comm: abi::Comm, newcomm: *mut abi::Comm, request: *mut abi::Request) {
        // SAFETY: output arguments.
        unsafe { idup(comm, None, newcomm, request) }
    }

    /// `MPI_Comm_idup_with_info`: the duplicate takes the hints of `info`.
    fn MPI_Comm_idup_with_info / PMPI_Comm_idup_with_info(
        comm: abi::Comm,
        info: abi::Info,
        newcomm: *mut abi::Comm,
        request: *mut abi::Request,
    ) {
        // SAFETY: output arguments.
        unsafe { idup(comm, Some(info), newcomm, request) }
    }
}

/// `MPI_Comm_idup` and `MPI_Comm_idup_with_info`.
///
/// # Safety
/// `newcomm` and `request` as for [`check::out`].
unsafe fn idup(
    comm: abi::Comm,
    info: Option<abi::Info>,
    newcomm: *mut abi::Comm,
    request: *mut abi::Request,
) -> crate::errors::Outcome {
    let st = state()?;
    let c = st.comm(comm)?;
    let hints = info.map(|i| infos::hints(i).map(|i| CommHints::from_info(&i))).transpose().on(&c)?;
    // SAFETY: `newcomm` is the program's output argument (this function's # Safety); null and
    // misaligned pointers are rejected.
    let out = unsafe { check::out(newcomm, "newcomm") }.on(&c)?;
    // SAFETY: as `newcomm`, for `request`.
    let req = unsafe { check::out(request, "request") }.on(&c)?;
    *out = abi::MPI_COMM_NULL;
    // The placeholder: the parent's communicator under the new handle, until the new one exists.
    let (h, placeholder) = st.add_comm(CommObj::child(c.comm.clone(), &c)).on(&c)?;
    let copied = c.attrs.with(|t| t.copy_for_dup(&c.handle(), &h)).and_then(|r| r);
    if let Err(e) = copied.and_then(|table| placeholder.attrs.with(|t| *t = table)) {
        st.remove_comm(h);
        return Err(e).on(&c);
    }
    let state = st.clone();
    let raw = c.comm.idup(hints, move |new| {
        let made = new.and_then(|new| CommObj::replacing(new, &placeholder));
        match made.and_then(|obj| state.replace_comm(h, obj)) {
            Ok(()) => Ok(()),
            Err(e) => {
                state.remove_comm(h);
                Err(e)
            }
        }
    });
    let raw = match raw {
        Ok(r) => r,
        Err(e) => {
            st.remove_comm(h);
            return Err(e).on(&c);
        }
    };
    *req = st.add_request(raw, &c).on(&c)?;
    *out = h;
    Ok(())
}
