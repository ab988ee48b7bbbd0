//! Communicator creation (collective over the parent): `MPI_Comm_dup`,
//! `MPI_Comm_dup_with_info`, `MPI_Comm_split`, `MPI_Comm_split_type`, `MPI_Comm_create`.
//!
//! Every new communicator gets a handle and its parent's error handler; a duplicate also gets
//! the attributes that the copy callbacks copy (after the collective part, so a failing
//! callback cannot leave the other members waiting in it; the new communicator is then freed
//! and the handle is `MPI_COMM_NULL`, as in MPICH). Arguments MPICH checks locally are checked
//! before the collective part, like there; a bad info argument (`MPI_ERR_INFO`: not
//! `MPI_INFO_NULL`, `MPI_INFO_ENV` nor a live info object) is reported after it, so it fails
//! only where it was given (MPICH 4.0.2 does not check direct info handles at all).
//!
//! Hints (`madmpi::info::CommHints`): a duplicate keeps its parent's, `MPI_Comm_dup_with_info`
//! and `MPI_Comm_split_type` give the defaults updated by their info (unknown keys ignored),
//! the others the defaults.

use crate::check;
use crate::comms::CommObj;
use crate::errors::{Fail, On};
use crate::export::export;
use crate::infos;
use crate::state::{State, state};
use madmpi::abi;
use madmpi::comm::Comm;
use madmpi::error::Error;
use std::ffi::c_int;
use std::sync::Arc;

/// Stores `comm` (if this process is a member), created from `parent`, and writes its handle
/// (or `MPI_COMM_NULL`) to `out`.
pub(super) fn publish(
    st: &State,
    parent: &Arc<CommObj>,
    comm: Option<Comm>,
    out: &mut abi::Comm,
) -> Result<(), Fail> {
    *out = match comm {
        Some(comm) => st.add_comm(CommObj::child(comm, parent)).on(parent)?.0,
        None => abi::MPI_COMM_NULL,
    };
    Ok(())
}

/// `MPI_Comm_dup` and `MPI_Comm_dup_with_info`.
///
/// # Safety
/// `newcomm` as for [`check::out`].
unsafe fn dup(comm: abi::Comm, info: Option<abi::Info>, newcomm: *mut abi::Comm) -> Result<(), Fail> {
    let st = state()?;
    let c = st.comm(comm)?;
    // SAFETY: the caller's contract.
    let out = unsafe { check::out(newcomm, "newcomm") }.on(&c)?;
    *out = abi::MPI_COMM_NULL;
    // Resolved now (a copy: the program may change the object meanwhile), reported after the
    // collective part.
    let hints = info.map(infos::hints);
    let new = match &hints {
        Some(Ok(info)) => c.comm.dup_with_info(info),
        _ => c.comm.dup(),
    }
    .on(&c)?;
    if let Some(Err(e)) = hints {
        return Err(e).on(&c);
    }
    let (h, obj) = st.add_comm(CommObj::child(new, &c)).on(&c)?;
    let copied = c.attrs.with(|t| t.copy_for_dup(&c.handle(), &h)).and_then(|r| r);
    let installed = copied.and_then(|table| obj.attrs.with(|t| *t = table));
    if installed.is_ok() {
        *out = h;
    } else {
        st.remove_comm(h);
    }
    installed.on(&c)
}

export! {
    /// `MPI_Comm_dup`: the same group in a new context, with the attributes the copy callbacks
    /// copy and the parent's error handler.
    fn MPI_Comm_dup / PMPI_Comm_dup(comm: abi::Comm, newcomm: *mut abi::Comm) {
        // SAFETY: an output argument.
        unsafe { dup(comm, None, newcomm) }
    }

    /// `MPI_Comm_dup_with_info`: `MPI_Comm_dup`, with the hints of `info` (any info object,
    /// `MPI_INFO_NULL` or `MPI_INFO_ENV`) instead of the parent's.
    fn MPI_Comm_dup_with_info / PMPI_Comm_dup_with_info(comm: abi::Comm, info: abi::Info, newcomm: *mut abi::Comm) {
        // SAFETY: an output argument.
        unsafe { dup(comm, Some(info), newcomm) }
    }

    /// `MPI_Comm_split`: `MPI_UNDEFINED` gets `MPI_COMM_NULL`. A negative color is
    /// `MPI_ERR_ARG` where it was given, the others going on without that process (MPICH 4.0.2
    /// takes it as a color).
    fn MPI_Comm_split / PMPI_Comm_split(comm: abi::Comm, color: c_int, key: c_int, newcomm: *mut abi::Comm) {
        let st = state()?;
        let c = st.comm(comm)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(newcomm, "newcomm") }.on(&c)?;
        *out = abi::MPI_COMM_NULL;
        let color = (color != abi::MPI_UNDEFINED).then_some(color);
        let new = c.comm.split(color, key).on(&c)?;
        publish(&st, &c, new, out)?;
        Ok(())
    }

    /// `MPI_Comm_split_type`: `MPI_COMM_TYPE_SHARED` gives the members on this node;
    /// `MPI_UNDEFINED` gives `MPI_COMM_NULL`, and so do `MPI_COMM_TYPE_HW_GUIDED` (no info
    /// naming a resource can be given) and `MPI_COMM_TYPE_HW_UNGUIDED` (no hardware level below
    /// the node is known), as in MPICH 4.0.2 with `MPI_INFO_NULL`. Other types are
    /// `MPI_ERR_ARG`. The new communicator takes the hints of `info`.
    fn MPI_Comm_split_type / PMPI_Comm_split_type(
        comm: abi::Comm,
        split_type: c_int,
        key: c_int,
        info: abi::Info,
        newcomm: *mut abi::Comm,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        let shared = match split_type {
            abi::MPI_COMM_TYPE_SHARED => true,
            abi::MPI_UNDEFINED | abi::MPI_COMM_TYPE_HW_GUIDED | abi::MPI_COMM_TYPE_HW_UNGUIDED => false,
            _ => return Err(Error::arg(format!("invalid split type {split_type}"))).on(&c),
        };
        // SAFETY: an output argument.
        let out = unsafe { check::out(newcomm, "newcomm") }.on(&c)?;
        *out = abi::MPI_COMM_NULL;
        let hints = infos::hints(info);
        let new = c.comm.split_shared_opt(shared.then_some(key)).on(&c)?;
        let hints = hints.on(&c)?;
        if let Some(new) = &new {
            new.set_info(&hints);
        }
        publish(&st, &c, new, out)?;
        Ok(())
    }

    /// `MPI_Comm_create`: a communicator of the members of `group` (a subgroup of `comm`'s,
    /// the same everywhere; `MPI_ERR_GROUP` otherwise); `MPI_COMM_NULL` outside it.
    fn MPI_Comm_create / PMPI_Comm_create(comm: abi::Comm, group: abi::Group, newcomm: *mut abi::Comm) {
        let st = state()?;
        let c = st.comm(comm)?;
        let g = st.group(group).on(&c)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(newcomm, "newcomm") }.on(&c)?;
        *out = abi::MPI_COMM_NULL;
        let new = c.comm.create(&g).on(&c)?;
        publish(&st, &c, new, out)?;
        Ok(())
    }
}
