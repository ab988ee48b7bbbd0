//! How MPI traffic is laid out in nmad's 64-bit tags.
//!
//! A communicator is an nmad session (its context id is the session id), so the tag only has to
//! keep apart the kinds of traffic inside one communicator:
//!
//! ```text
//!  63            40 39      32 31                      0
//! +----------------+----------+-------------------------+
//! |    sequence    |   kind   |  MPI tag (non-negative) |
//! +----------------+----------+-------------------------+
//! ```
//!
//! Point-to-point messages use kind 0 and sequence 0, so `MPI_ANY_TAG` (mask of the low 32 bits
//! cleared) can never match another kind's message. Internal operations (communicator creation,
//! later collectives and one-sided operations) use their own kind and a per-communicator sequence
//! number, so two successive operations never mix their messages.
//!
//! Owns the layout only; it must not know about communicators or requests.

use nmad::TagMatch;

/// Traffic kinds within a communicator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// MPI point-to-point messages.
    PointToPoint = 0,
    /// Collective operations (barrier, broadcast, reductions...).
    Collective = 1,
    /// Communicator management (context-id agreement, split, dup).
    Management = 2,
    /// `MPI_Comm_create_group`, by the program's tag ([`tagged`]).
    GroupCreate = 3,
    /// `MPI_Intercomm_create_from_groups`, by a hash of the program's string tag ([`tagged`]).
    GroupsTagged = 4,
    /// Partitioned communication ([`partitioned_setup`], [`partitioned_data`]).
    Partitioned = 8,
    /// Fault tolerance (ULFM): revocation notices, fault-tolerant agreements.
    FaultTolerance = 0xf0,
    /// Ports and joins (`dynamic`): the two roots' meeting, by a port's token ([`tagged`]).
    Port = 5,
    /// One-sided transfers too large for active messages ([`one_sided`]).
    OneSided = 6,
}

const KIND_SHIFT: u32 = 32;
const SEQ_SHIFT: u32 = 40;
/// Bits available to the sequence number of internal operations.
pub const SEQ_BITS: u32 = 64 - SEQ_SHIFT;

/// The largest MPI tag (`MPI_TAG_UB`): any non-negative `int`.
pub const TAG_UB: i32 = i32::MAX;

/// The nmad tag of a point-to-point message with MPI tag `tag` (non-negative, checked by the caller).
pub fn p2p(tag: i32) -> u64 {
    debug_assert!(tag >= 0);
    tag as u32 as u64
}

/// What a point-to-point receive for `tag` (or any tag when `None`) matches.
pub fn p2p_match(tag: Option<i32>) -> TagMatch {
    match tag {
        Some(t) => TagMatch::exact(p2p(t)),
        None => TagMatch { tag: 0, mask: !0xffff_ffff },
    }
}

/// The MPI tag carried by a point-to-point nmad tag.
pub fn mpi_tag(nmad_tag: u64) -> i32 {
    (nmad_tag & 0x7fff_ffff) as i32
}

/// The nmad tag of step `step` of internal operation number `seq` of kind `kind`.
pub fn internal(kind: Kind, seq: u64, step: u32) -> u64 {
    ((seq & ((1 << SEQ_BITS) - 1)) << SEQ_SHIFT) | (u64::from(kind as u8) << KIND_SHIFT) | u64::from(step)
}

/// The nmad tag of step `step` of an operation of some members only, told apart by the
/// program's `tag` (in the low bits, where point-to-point puts its tags) rather than by a
/// sequence number (the step takes the sequence's bits).
pub fn tagged(kind: Kind, tag: u32, step: u32) -> u64 {
    (u64::from(step) & ((1 << SEQ_BITS) - 1)) << SEQ_SHIFT
        | (u64::from(kind as u8) << KIND_SHIFT)
        | u64::from(tag)
}

/// The nmad tag of the handshake a partitioned send sends at `MPI_Psend_init` to the matching
/// `MPI_Precv_init` (MPI tag `tag`, sequence 0): handshakes match in initialization order.
pub fn partitioned_setup(tag: i32) -> u64 {
    internal(Kind::Partitioned, 0, tag as u32)
}

/// The nmad tag of partition `k` of partitioned channel `channel` (the sender's number for it,
/// never 0 so that it cannot be a handshake).
pub fn partitioned_data(channel: u32, k: u32) -> u64 {
    debug_assert!(channel != 0 && u64::from(channel) < 1 << SEQ_BITS);
    internal(Kind::Partitioned, u64::from(channel), k)
}

/// The nmad tag of large one-sided transfer number `seq` of one origin to one target, on the
/// window's own communicator: `answer` for the data a get brings back. The two ways apart,
/// since two processes are each other's origin and target on one session, and a get's answer
/// and a put of the same number travel between the same two processes in the same direction.
pub fn one_sided(seq: u64, answer: bool) -> u64 {
    internal(Kind::OneSided, seq, u32::from(answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(m: TagMatch, tag: u64) -> bool {
        (tag ^ m.tag) & m.mask == 0
    }

    #[test]
    fn any_tag_matches_only_point_to_point_traffic() {
        let any = p2p_match(None);
        assert!(matches(any, p2p(0)) && matches(any, p2p(TAG_UB)));
        assert!(!matches(any, internal(Kind::Management, 0, 0)));
        assert!(!matches(any, internal(Kind::Collective, 5, 3)));
        assert!(!matches(any, internal(Kind::PointToPoint, 1, 0)), "a sequence number sets it apart");
        assert!(!matches(any, one_sided(0, false)) && !matches(any, one_sided(9, true)));
        assert_ne!(one_sided(3, false), one_sided(3, true), "a put and a get's answer of one number");
    }

    #[test]
    fn exact_tags_and_round_trips() {
        assert!(matches(p2p_match(Some(7)), p2p(7)));
        assert!(!matches(p2p_match(Some(7)), p2p(8)));
        for t in [0, 1, 12345, TAG_UB] {
            assert_eq!(mpi_tag(p2p(t)), t);
        }
        assert_ne!(internal(Kind::Management, 1, 0), internal(Kind::Management, 2, 0));
        assert_ne!(internal(Kind::Management, 1, 0), internal(Kind::Management, 1, 1));
        assert_eq!(internal(Kind::Management, 1 << SEQ_BITS, 0), internal(Kind::Management, 0, 0), "wraps");
        assert_ne!(tagged(Kind::GroupCreate, 5, 0), tagged(Kind::GroupCreate, 6, 0));
        assert_ne!(tagged(Kind::GroupCreate, 5, 0), tagged(Kind::GroupCreate, 5, 1));
        assert!(!matches(p2p_match(None), tagged(Kind::GroupCreate, 5, 0)), "never a point-to-point message");
    }
}
