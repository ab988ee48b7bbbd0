//! `MPI_Comm_create_group`: a communicator of `group`'s members made by them alone, in the
//! parent's session, their messages told apart by the program's tag (kind
//! [`Kind::GroupCreate`]) instead of the parent's sequence of internal operations, which the
//! parent's other members do not follow. Two calls with the same tag over overlapping groups
//! must not run at once (MPI's rule); successive ones keep their messages apart by nmad's
//! order between two processes.

use crate::comm::Comm;
use crate::comm::context;
use crate::comm::internal::{Members, Space};
use crate::comm::tags::Kind;
use crate::error::{Error, Result};
use crate::group::Group;

impl Comm {
    /// `MPI_Comm_create_group` (collective over the members of `group`, a subgroup of this
    /// intracommunicator's group): `None` at a caller outside `group`. `MPI_ERR_COMM` on an
    /// intercommunicator, `MPI_ERR_TAG` for a negative tag, `MPI_ERR_GROUP` if `group` has a
    /// process outside this communicator.
    pub fn create_group(&self, group: &Group, tag: i32) -> Result<Option<Comm>> {
        let call = "MPI_Comm_create_group";
        if self.is_inter() {
            return Err(Error::comm(format!("{call}: an intercommunicator")));
        }
        let tag = crate::comm::check_tag(call, tag)? as u32;
        create_in(self, group, Space::Tag { kind: Kind::GroupCreate, tag })
    }
}

/// A communicator of `group`'s members (a subgroup of `parent`'s) made by them in `parent`'s
/// session, their messages in `space`; `None` outside `group`.
pub(crate) fn create_in(parent: &Comm, group: &Group, space: Space) -> Result<Option<Comm>> {
    if let Some(stranger) = group.members().iter().find(|&&w| !parent.group().contains(w)) {
        return Err(Error::group(format!("process {stranger} of the group is not in the communicator")));
    }
    let me = parent.runtime_nmad().rank();
    let Some(rank) = group.rank_of(me) else { return Ok(None) };
    let m = Members::tagged(parent.session(), group.members(), rank as usize, space);
    let id = context::agree(&parent.runtime().ids, &m)?;
    Ok(Some(Comm::make_with(parent.runtime(), group.clone(), None, id, "")))
}
