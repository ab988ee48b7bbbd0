//! MPI groups: an ordered set of processes, named by their world ranks (`u32`), and MPI's group
//! operations (`MPI_Group_incl`, `_union`, `_translate_ranks`, `_compare`, ...).
//!
//! This module owns group contents and their rules (orders, error classes; the cases were checked
//! against MPICH 4.0.2 with `madmpi/tests/c/group_check.c`). It must not know handles nor
//! communicators: `MPI_GROUP_EMPTY`, `MPI_UNDEFINED` and `MPI_PROC_NULL` as numbers, and negative
//! ranks coming from C, belong to the C layer; here they are [`Group::empty`], [`Translated`] and
//! [`Peer`].

mod index;
mod range;
#[cfg(test)]
mod tests;

pub use range::Range;

use crate::error::{Error, Result};
use index::Index;
use std::fmt;
use std::sync::{Arc, OnceLock};

/// An ordered set of distinct processes: local rank `i` is the process of world rank
/// `members()[i]`. Cloning is cheap (shared, immutable).
#[derive(Clone)]
pub struct Group(Arc<Inner>);

struct Inner {
    members: Box<[u32]>,
    index: Index,
}

/// A rank argument that may be `MPI_PROC_NULL` (for [`Group::translate_ranks`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Peer {
    /// A rank in the group.
    Rank(u32),
    /// `MPI_PROC_NULL`.
    ProcNull,
}

/// One result of [`Group::translate_ranks`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Translated {
    /// The process's rank in the other group.
    Rank(u32),
    /// The rank was `MPI_PROC_NULL`, which translates to itself.
    ProcNull,
    /// `MPI_UNDEFINED`: the process is not in the other group.
    Undefined,
}

/// The result of [`Group::compare`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupComparison {
    /// `MPI_IDENT`: same members in the same order.
    Ident,
    /// `MPI_SIMILAR`: same members, another order.
    Similar,
    /// `MPI_UNEQUAL`: other members.
    Unequal,
}

impl Group {
    /// The group of the given processes, in that order. A repeated process is an `MPI_ERR_ARG`.
    pub fn new(members: Vec<u32>) -> Result<Group> {
        if u32::try_from(members.len()).is_err() {
            return Err(Error::arg(format!("group of {} processes is too large", members.len())));
        }
        let index = Index::build(&members)
            .map_err(|w| Error::arg(format!("process {w} appears twice in a group")))?;
        Ok(Group(Arc::new(Inner { members: members.into(), index })))
    }

    /// Processes `0..size` in order (the group of `MPI_COMM_WORLD`).
    pub fn world(size: u32) -> Group {
        Self::from_distinct((0..size).collect())
    }

    /// The empty group (`MPI_GROUP_EMPTY`); every operation whose result is empty returns it.
    pub fn empty() -> Group {
        static EMPTY: OnceLock<Group> = OnceLock::new();
        EMPTY
            .get_or_init(|| {
                Group(Arc::new(Inner { members: Box::new([]), index: Index::build_distinct(&[]) }))
            })
            .clone()
    }

    /// Members known distinct and fewer than 2^32 (subsets of a group).
    fn from_distinct(members: Vec<u32>) -> Group {
        if members.is_empty() {
            return Self::empty();
        }
        let index = Index::build_distinct(&members);
        Group(Arc::new(Inner { members: members.into(), index }))
    }

    /// Number of processes.
    pub fn size(&self) -> u32 {
        // Construction bounds the length to u32.
        self.0.members.len() as u32
    }

    /// True for the empty group.
    pub fn is_empty(&self) -> bool {
        self.0.members.is_empty()
    }

    /// The world ranks of the members, in local rank order.
    pub fn members(&self) -> &[u32] {
        &self.0.members
    }

    /// The world rank of local rank `rank`.
    pub fn member(&self, rank: u32) -> Option<u32> {
        self.0.members.get(rank as usize).copied()
    }

    /// The local rank of the process of world rank `world` (`MPI_Group_rank` when `world` is the
    /// caller), `None` (`MPI_UNDEFINED`) when it is not a member. O(1) or O(log n).
    pub fn rank_of(&self, world: u32) -> Option<u32> {
        self.0.index.rank_of(&self.0.members, world)
    }

    /// True when the process of world rank `world` is a member.
    pub fn contains(&self, world: u32) -> bool {
        self.rank_of(world).is_some()
    }

    /// `MPI_Group_union`: this group's members in order, then the other's members that are not in
    /// this group, in the other's order.
    pub fn union(&self, other: &Group) -> Group {
        let mut members = self.0.members.to_vec();
        members.extend(other.members().iter().filter(|&&w| !self.contains(w)));
        Self::from_distinct(members)
    }

    /// `MPI_Group_intersection`: this group's members that are in the other, in this group's order.
    pub fn intersection(&self, other: &Group) -> Group {
        Self::from_distinct(self.members().iter().copied().filter(|&w| other.contains(w)).collect())
    }

    /// `MPI_Group_difference`: this group's members that are not in the other, in this group's
    /// order.
    pub fn difference(&self, other: &Group) -> Group {
        Self::from_distinct(self.members().iter().copied().filter(|&w| !other.contains(w)).collect())
    }

    /// `MPI_Group_translate_ranks`: the rank in `other` of each process named by its rank here.
    /// A rank not in this group is an `MPI_ERR_RANK` (as in MPICH); `MPI_PROC_NULL` translates to
    /// itself, even from the empty group.
    pub fn translate_ranks(&self, ranks: &[Peer], other: &Group) -> Result<Vec<Translated>> {
        ranks
            .iter()
            .map(|&peer| match peer {
                Peer::ProcNull => Ok(Translated::ProcNull),
                Peer::Rank(r) => {
                    let w = self.member(r).ok_or_else(|| self.bad_rank("MPI_Group_translate_ranks", r))?;
                    Ok(other.rank_of(w).map_or(Translated::Undefined, Translated::Rank))
                }
            })
            .collect()
    }

    /// `MPI_Group_compare`.
    pub fn compare(&self, other: &Group) -> GroupComparison {
        if Arc::ptr_eq(&self.0, &other.0) || self.members() == other.members() {
            GroupComparison::Ident
        } else if self.size() == other.size() && self.members().iter().all(|&w| other.contains(w)) {
            // Same size and distinct members: inclusion is equality of the sets.
            GroupComparison::Similar
        } else {
            GroupComparison::Unequal
        }
    }

    /// The `MPI_ERR_RANK` error for `rank` not in this group, in function `func`.
    fn bad_rank(&self, func: &str, rank: u32) -> Error {
        Error::rank(format!("{func}: rank {rank} out of range (group of size {})", self.size()))
    }
}

impl PartialEq for Group {
    /// Equal when [`GroupComparison::Ident`].
    fn eq(&self, other: &Group) -> bool {
        self.members() == other.members()
    }
}

impl Eq for Group {}

impl fmt::Debug for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Group").field(&self.members()).finish()
    }
}
