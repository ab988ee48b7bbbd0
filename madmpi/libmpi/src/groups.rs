//! Group handles: `MPI_GROUP_EMPTY` (builtin) and the groups the library creates (a
//! [`Table`](crate::table::Table) of `madmpi::group::Group`s, which are immutable and shared).
//!
//! Every empty result is `MPI_GROUP_EMPTY`, as in MPICH; freeing it is allowed (MPICH allows
//! it, since the group calls hand it out), and leaves it valid.
//!
//! Owns the handle ↔ group mapping; it must not implement group operations (`madmpi::group`).

use crate::state::State;
use madmpi::abi::{self, Handle};
use madmpi::error::Error;
use madmpi::group::Group;

impl State {
    /// The group of handle `h`: `MPI_ERR_GROUP` for `MPI_GROUP_NULL` and anything that is not a
    /// live group handle.
    pub(crate) fn group(&self, h: Handle) -> Result<Group, Error> {
        match h {
            abi::MPI_GROUP_EMPTY => Ok(Group::empty()),
            abi::MPI_GROUP_NULL => Err(Error::group("null group (MPI_GROUP_NULL)")),
            _ => self.groups.get(h).ok_or_else(|| Error::group(format!("invalid group handle {h:#x}"))),
        }
    }

    /// A handle for `g`: `MPI_GROUP_EMPTY` if it is empty, else a new one.
    pub(crate) fn add_group(&self, g: Group) -> Result<Handle, Error> {
        if g.is_empty() {
            return Ok(abi::MPI_GROUP_EMPTY);
        }
        self.groups.insert(g).ok_or_else(|| Error::intern("too many live groups"))
    }

    /// `MPI_Group_free` of handle `h`.
    pub(crate) fn free_group(&self, h: Handle) -> Result<(), Error> {
        self.group(h)?;
        if h != abi::MPI_GROUP_EMPTY {
            drop(self.groups.remove(h));
        }
        Ok(())
    }
}
