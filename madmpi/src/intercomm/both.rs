//! The communicator constructors that serve both kinds: `MPI_Comm_split`,
//! `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)` and `MPI_Comm_create` take an intra- or an
//! intercommunicator, and go to the communicator's constructions (`comm`) or to `derive`.
//!
//! Owns the choice only.

use crate::comm::Comm;
use crate::error::Result;
use crate::group::Group;

impl Comm {
    /// `MPI_Comm_split` (collective): the members giving the same `color` form a communicator,
    /// ranked by `key` then by their rank here; `None` (`MPI_UNDEFINED`) gets no communicator.
    /// On an intercommunicator, see [`super::split`].
    ///
    /// A negative color is an `MPI_ERR_ARG` at the member that gave it, found after the exchange:
    /// that member takes part as `MPI_UNDEFINED`, so the others get their communicators rather
    /// than wait for it (MPICH 4.0.2 takes a negative color as any other color).
    pub fn split(&self, color: Option<i32>, key: i32) -> Result<Option<Comm>> {
        if self.is_inter() { super::split(self, color, key) } else { self.split_intra(color, key) }
    }

    /// `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)` (collective): the members on this node.
    pub fn split_shared(&self, key: i32) -> Result<Comm> {
        Ok(self.split_shared_opt(Some(key))?.expect("this member takes part"))
    }

    /// `MPI_Comm_split_type` (collective) where each member gives either
    /// `MPI_COMM_TYPE_SHARED` with its `key` (`Some`: it gets the communicator of the members on
    /// its node that take part) or `MPI_UNDEFINED` (`None`: it gets no communicator). On an
    /// intercommunicator: the intercommunicator between the members of each group on this node.
    pub fn split_shared_opt(&self, key: Option<i32>) -> Result<Option<Comm>> {
        if !self.is_inter() {
            return self.split_shared_intra(key);
        }
        // As in MPICH: a split of both groups by node (colors from the node's hash).
        let color = key.map(|_| (self.runtime().node & 0x7fff_ffff) as i32);
        super::split(self, color, key.unwrap_or(0))
    }

    /// `MPI_Comm_create` (collective over this communicator): a communicator of the members of
    /// `group` (a subgroup of this one; the same at every caller); `None` outside it. On an
    /// intercommunicator, see [`super::create`].
    pub fn create(&self, group: &Group) -> Result<Option<Comm>> {
        if self.is_inter() { super::create(self, group) } else { self.create_intra(group) }
    }
}
