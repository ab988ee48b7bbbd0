//! Intercommunicators: `MPI_Intercomm_create`, `MPI_Intercomm_create_from_groups`,
//! `MPI_Intercomm_merge`, `MPI_Comm_test_inter`, `MPI_Comm_remote_size`,
//! `MPI_Comm_remote_group` (the semantics are `madmpi::intercomm`'s).
//!
//! Checks follow MPICH 4.0: the local communicator first, then the leader's rank; the peer
//! communicator, the remote leader and the tag only at the local leader (they are significant
//! there only); the remote queries of an intracommunicator are `MPI_ERR_COMM`.

use crate::check;
use crate::comms::CommObj;
use crate::errors::On;
use crate::export::export;
use crate::state::state;
use madmpi::abi;
use madmpi::error::Error;
use madmpi::intercomm::{self, LeaderLink};
use std::ffi::{CStr, c_char, c_int};

/// A rank argument that must name a process (`MPI_ERR_RANK` when negative).
fn rank_arg(r: c_int, what: &str) -> Result<u32, Error> {
    u32::try_from(r).map_err(|_| Error::rank(format!("invalid {what} {r}")))
}

export! {
    /// `MPI_Intercomm_create`: the local leaders talk over `peer_comm` with `tag`.
    fn MPI_Intercomm_create / PMPI_Intercomm_create(
        local_comm: abi::Comm,
        local_leader: c_int,
        peer_comm: abi::Comm,
        remote_leader: c_int,
        tag: c_int,
        newintercomm: *mut abi::Comm,
    ) {
        let st = state()?;
        let c = st.comm(local_comm)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(newintercomm, "newintercomm") }.on(&c)?;
        *out = abi::MPI_COMM_NULL;
        let leader = rank_arg(local_leader, "local leader").on(&c)?;
        let peer = if c.comm.rank() == leader {
            let p = st.comm(peer_comm).on(&c)?;
            let r = rank_arg(remote_leader, "remote leader").on(&c)?;
            Some((p, r))
        } else {
            None
        };
        let link = match &peer {
            Some((p, r)) => Some(LeaderLink::over(&p.comm, *r, tag).on(&c)?),
            None => None,
        };
        let new = intercomm::intercomm_create(&c.comm, leader, link.as_ref()).on(&c)?;
        super::comm_create::publish(&st, &c, Some(new), out)
    }

    /// `MPI_Intercomm_create_from_groups`: both groups from the same MPI world (sessions are
    /// not implemented; `MPI_Comm_group` of `MPI_COMM_WORLD` and its descendants). The new
    /// intercommunicator gets `errhandler` and the hints of `info`; errors before it exists go
    /// to `MPI_COMM_WORLD`'s handler.
    fn MPI_Intercomm_create_from_groups / PMPI_Intercomm_create_from_groups(
        local_group: abi::Group,
        local_leader: c_int,
        remote_group: abi::Group,
        remote_leader: c_int,
        stringtag: *const c_char,
        info: abi::Info,
        errhandler: abi::Errhandler,
        newintercomm: *mut abi::Comm,
    ) {
        let st = state()?;
        let local = st.group(local_group)?;
        let leader = rank_arg(local_leader, "local leader")?;
        let remote = st.group(remote_group)?;
        let remote_leader = rank_arg(remote_leader, "remote leader")?;
        if stringtag.is_null() {
            return Err(Error::arg("the string tag is a null pointer").into());
        }
        // SAFETY: a non-null C string, as MPI requires of `stringtag`.
        let tag = unsafe { CStr::from_ptr(stringtag) }.to_string_lossy().into_owned();
        let hints = crate::infos::hints(info)?;
        crate::errhandlers::kind(errhandler)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(newintercomm, "newintercomm") }?;
        *out = abi::MPI_COMM_NULL;
        let new = intercomm::create_from_groups(&st.world.comm, &local, leader, &remote, remote_leader, &tag)?;
        new.set_info(&hints);
        let obj = CommObj::child(new, &st.world);
        obj.errhandler.set(errhandler)?;
        *out = st.add_comm(obj)?.0;
        Ok(())
    }

    /// `MPI_Intercomm_merge`: the group whose processes give `high` false comes first.
    fn MPI_Intercomm_merge / PMPI_Intercomm_merge(intercomm: abi::Comm, high: c_int, newintracomm: *mut abi::Comm) {
        let st = state()?;
        let c = st.comm(intercomm)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(newintracomm, "newintracomm") }.on(&c)?;
        *out = abi::MPI_COMM_NULL;
        let new = intercomm::merge(&c.comm, high != 0).on(&c)?;
        super::comm_create::publish(&st, &c, Some(new), out)
    }

    /// `MPI_Comm_test_inter`.
    fn MPI_Comm_test_inter / PMPI_Comm_test_inter(comm: abi::Comm, flag: *mut c_int) {
        let c = state()?.comm(comm)?;
        // SAFETY: an output argument.
        *unsafe { check::out(flag, "flag") }.on(&c)? = c_int::from(c.comm.is_inter());
        Ok(())
    }

    /// `MPI_Comm_remote_size`: `MPI_ERR_COMM` on an intracommunicator.
    fn MPI_Comm_remote_size / PMPI_Comm_remote_size(comm: abi::Comm, size: *mut c_int) {
        let c = state()?.comm(comm)?;
        let remote = remote_of(&c)?;
        // SAFETY: an output argument.
        *unsafe { check::out(size, "size") }.on(&c)? = remote.size() as c_int;
        Ok(())
    }

    /// `MPI_Comm_remote_group`: `MPI_ERR_COMM` on an intracommunicator.
    fn MPI_Comm_remote_group / PMPI_Comm_remote_group(comm: abi::Comm, group: *mut abi::Group) {
        let st = state()?;
        let c = st.comm(comm)?;
        let remote = remote_of(&c)?.clone();
        // SAFETY: an output argument.
        let out = unsafe { check::out(group, "group") }.on(&c)?;
        *out = st.add_group(remote).on(&c)?;
        Ok(())
    }
}

/// The remote group (`MPI_ERR_COMM` for an intracommunicator).
fn remote_of(c: &std::sync::Arc<CommObj>) -> Result<&madmpi::group::Group, crate::errors::Fail> {
    c.comm.remote_group().ok_or_else(|| Error::comm("not an intercommunicator")).on(c)
}
