//! MPI's envelope on a communicator: where a message goes ([`Rank`]), which messages a receive
//! takes ([`From`], [`Tag`]), what it found ([`Status`]), and their mapping onto nmad's (world
//! rank in the communicator's session, 64-bit tag laid out by [`super::tags`]), with MPI's
//! argument checks (rank, tag) and `MPI_PROC_NULL`.
//!
//! Owns that mapping, which point-to-point, requests and partitioned communication share; it
//! must not send or receive.

use super::Comm;
use super::tags;
use crate::error::{Error, Result};
use nmad::Source;

/// Where a message goes or comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rank {
    Rank(u32),
    /// `MPI_PROC_NULL`: the operation completes at once and moves nothing.
    ProcNull,
}

/// Which messages a receive takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum From {
    Rank(u32),
    Any,
    ProcNull,
}

/// Which tags a receive takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {
    Tag(i32),
    Any,
}

/// What a receive or probe found (`MPI_Status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    /// The sender's rank in the communicator (`None` for `MPI_PROC_NULL`).
    pub source: Option<u32>,
    /// The message's tag (`MPI_ANY_TAG`'s value, -1, for `MPI_PROC_NULL`).
    pub tag: i32,
    /// Bytes received (or, for a probe, the message's length).
    pub bytes: u64,
}

impl Status {
    pub(crate) const PROC_NULL: Status = Status { source: None, tag: -1, bytes: 0 };

    /// Elements of `T` received (`MPI_Get_count`; `None` when not a whole number).
    pub fn count<T: crate::datatype::Equivalence>(&self) -> Option<u64> {
        let size = std::mem::size_of::<T>() as u64;
        self.bytes.is_multiple_of(size).then_some(self.bytes / size)
    }
}

/// The nmad tag of a point-to-point message with MPI tag `tag`, which must be valid for `op`.
pub(crate) fn check_tag(op: &str, tag: i32) -> Result<u64> {
    if !(0..=tags::TAG_UB).contains(&tag) {
        return Err(Error::tag(format!("{op}: tag {tag} is outside 0..={}", tags::TAG_UB)));
    }
    Ok(tags::p2p(tag))
}

impl Comm {
    /// The world rank of rank `r` as point-to-point names it, or an `MPI_ERR_RANK` of `op`.
    pub(crate) fn peer(&self, op: &str, r: u32) -> Result<u32> {
        self.world_rank(r).ok_or_else(|| {
            Error::rank(format!("{op}: rank {r} is outside the communicator (size {})", self.peer_size()))
        })
    }

    /// nmad's source for `from` (`None` for `MPI_PROC_NULL`).
    pub(crate) fn source(&self, op: &str, from: From) -> Result<Option<Source>> {
        Ok(match from {
            From::Rank(r) => Some(Source::Rank(self.peer(op, r)?)),
            From::Any => Some(Source::Any),
            From::ProcNull => None,
        })
    }

    /// The status of a message nmad found (`bytes` received, or its length for a probe).
    pub(crate) fn status(&self, st: nmad::Status, bytes: u64) -> Status {
        Status { source: self.rank_of_world(st.source), tag: tags::mpi_tag(st.tag), bytes }
    }

    /// nmad's tag match for receiving `tag` (checked for `op`).
    pub(crate) fn match_of(&self, op: &str, tag: Tag) -> Result<nmad::TagMatch> {
        Ok(match tag {
            Tag::Tag(t) => {
                check_tag(op, t)?;
                tags::p2p_match(Some(t))
            }
            Tag::Any => tags::p2p_match(None),
        })
    }
}
