//! Making an intercommunicator from two disjoint groups: `MPI_Intercomm_create` and
//! `MPI_Intercomm_create_from_groups`.
//!
//! Each group runs one internal operation over its local communicator; its leader talks to the
//! other group's leader over a [`LeaderLink`] (the peer communicator and the program's tag, or
//! the world's session and the string tag):
//!
//! 1. the leaders swap their groups' members (world ranks), and tell them to their group;
//! 2. the context id is agreed as for an intracommunicator (`context::agree_joined`), the
//!    leaders swapping and ANDing their groups' bit sets (free ids, then "taken everywhere")
//!    and telling the result to their group, so both groups pick and confirm the same id.
//!
//! A leader tells its group a value with the group's AND-reduction, the others contributing
//! all ones. Owns the leaders' protocol; the agreement itself is `context`'s.

use crate::comm::context;
use crate::comm::internal::{Members, allreduce_and};
use crate::comm::tags::{self, Kind};
use crate::comm::{Comm, from_nmad};
use crate::error::{Error, Result};
use crate::group::Group;
use nmad::{Session, Source, scope};

/// How a leader reaches the other group's leader.
pub struct LeaderLink<'a> {
    session: &'a Session,
    /// The other leader's world rank.
    to: u32,
    tag: u64,
}

impl<'a> LeaderLink<'a> {
    /// Over `peer` (`MPI_Intercomm_create`'s `peer_comm`) to its rank `remote_leader`, with
    /// point-to-point tag `tag`.
    pub fn over(peer: &'a Comm, remote_leader: u32, tag: i32) -> Result<LeaderLink<'a>> {
        let tag = crate::comm::check_tag("MPI_Intercomm_create", tag)?;
        let to = peer.peer("MPI_Intercomm_create", remote_leader)?;
        Ok(LeaderLink { session: peer.session(), to, tag })
    }

    /// Over `session` to world rank `to` with nmad tag `tag`, which the caller keeps apart from
    /// other traffic (ports and joins, `dynamic`).
    pub(crate) fn in_session(session: &'a Session, to: u32, tag: u64) -> LeaderLink<'a> {
        LeaderLink { session, to, tag }
    }

    /// Swaps `out` with the other leader's words (at most `max` of them).
    fn swap(&self, out: &[u64], max: usize) -> Result<Vec<u64>> {
        let mut buf = vec![0u8; max * 8];
        let bytes: Vec<u8> = out.iter().flat_map(|w| w.to_le_bytes()).collect();
        let st = scope(|sc| -> std::result::Result<nmad::Status, nmad::Error> {
            let r = sc.irecv(self.session, Source::Rank(self.to), self.tag, &mut buf)?;
            self.session.send(self.to, self.tag, &bytes)?;
            r.wait();
            r.result().expect("waited")
        })
        .map_err(from_nmad)?;
        let len = st.received as usize;
        if !len.is_multiple_of(8) {
            return Err(Error::intern(format!("intercommunicator leaders: a message of {len} bytes")));
        }
        Ok(buf[..len].chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect())
    }
}

/// `MPI_Intercomm_create` at a member of `local` (collective over `local`, and over the other
/// group's local communicator): `link` is given at the local leader (rank `leader` of `local`)
/// only. The leaders must not be members of the other group (`MPI_ERR_COMM` if the groups
/// overlap).
pub fn intercomm_create(local: &Comm, leader: u32, link: Option<&LeaderLink<'_>>) -> Result<Comm> {
    if local.is_inter() {
        return Err(Error::comm("MPI_Intercomm_create: the local communicator is an intercommunicator"));
    }
    if leader >= local.size() {
        return Err(Error::rank(format!(
            "MPI_Intercomm_create: local leader {leader} is outside the local communicator (size {})",
            local.size()
        )));
    }
    let is_leader = local.rank() == leader;
    let link = match (is_leader, link) {
        (true, Some(l)) => Some(l),
        (true, None) => return Err(Error::intern("MPI_Intercomm_create: the leader has no peer")),
        (false, _) => None,
    };
    let world = local.runtime_nmad().capacity() as usize;
    let rt = local.runtime().clone();
    let (remote, id) = local.internal(|m| {
        // A leader's value (others: all ones) ANDed over the group: the leader's, everywhere.
        let tell = |m: &Members<'_>, round: u32, words: &mut [u64]| -> Result<()> {
            if !is_leader {
                words.fill(u64::MAX);
            }
            allreduce_and(m, round, words).map_err(from_nmad)
        };
        let mut theirs = match link {
            Some(l) => {
                let mine: Vec<u64> = local.group().members().iter().map(|&w| u64::from(w)).collect();
                l.swap(&mine, world)?
            }
            None => Vec::new(),
        };
        let mut size = [theirs.len() as u64];
        tell(m, 0, &mut size)?;
        theirs.resize(size[0] as usize, 0);
        tell(m, 1, &mut theirs)?;
        let members = theirs
            .iter()
            .map(|&w| u32::try_from(w).ok().filter(|&w| (w as usize) < world))
            .collect::<Option<Vec<u32>>>()
            .ok_or_else(|| Error::intern("MPI_Intercomm_create: the remote leader sent a bad group"))?;
        let remote = Group::new(members)?;
        if remote.is_empty() || remote.members().iter().any(|&w| local.group().contains(w)) {
            return Err(Error::comm("MPI_Intercomm_create: the local and remote groups overlap"));
        }
        // Rounds 2.. of this operation: the agreement's rounds, shifted.
        let shifted = m.shifted(2);
        let mut join = |m: &Members<'_>, round: u32, bits: &mut [u64]| -> Result<()> {
            if let Some(l) = link {
                let other = l.swap(bits, bits.len())?;
                if other.len() != bits.len() {
                    return Err(Error::intern("intercommunicator leaders: their bit sets differ"));
                }
                bits.iter_mut().zip(other).for_each(|(b, o)| *b &= o);
            }
            tell(m, round, bits)
        };
        let id = context::agree_joined(&rt.ids, &shifted, &mut join)?;
        Ok((remote, id))
    })?;
    Ok(Comm::make_with(&rt, local.group().clone(), Some(remote), id, ""))
}

/// `MPI_Intercomm_create_from_groups` at a member of `local` (collective over both groups): the
/// local communicator is made from `local` in the world's session, and the leaders (ranks
/// `local_leader` of `local` and `remote_leader` of `remote`) talk there too, both told apart
/// from other traffic by a hash of `tag` (two such calls running at once with different
/// strings whose hashes collide, over overlapping groups, would mix).
pub fn create_from_groups(
    world: &Comm,
    local: &Group,
    local_leader: u32,
    remote: &Group,
    remote_leader: u32,
    tag: &str,
) -> Result<Comm> {
    let call = "MPI_Intercomm_create_from_groups";
    let me = world.runtime_nmad().rank();
    if !local.contains(me) {
        return Err(Error::group(format!("{call}: the calling process is not in the local group")));
    }
    let rank = |g: &Group, r: u32, what: &str| {
        g.member(r).ok_or_else(|| {
            Error::rank(format!("{call}: {what} leader {r} is outside its group (size {})", g.size()))
        })
    };
    rank(local, local_leader, "local")?;
    let to = rank(remote, remote_leader, "remote")?;
    let hash = string_tag(tag);
    let space = crate::comm::internal::Space::Tag { kind: Kind::GroupsTagged, tag: hash };
    let local_comm = crate::comm_ctor::create_in(world, local, space)?
        .expect("a member of the group gets the communicator");
    // The last step of the tag space: the local creation's rounds never get there.
    let link_tag = tags::tagged(Kind::GroupsTagged, hash, (1 << tags::SEQ_BITS) - 1);
    let link = LeaderLink { session: world.session(), to, tag: link_tag };
    let is_leader = local_comm.rank() == local_leader;
    intercomm_create(&local_comm, local_leader, is_leader.then_some(&link))
}

/// The string tag of `MPI_Intercomm_create_from_groups` as a 31-bit number (FNV-1a: the same
/// in every process, unlike std's randomly seeded hasher).
fn string_tag(tag: &str) -> u32 {
    let h =
        tag.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    (h ^ (h >> 32)) as u32 & 0x7fff_ffff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_tags_are_stable_and_spread() {
        assert_eq!(string_tag("a"), string_tag("a"));
        assert_ne!(string_tag("a"), string_tag("b"));
        assert!(string_tag("org.mpi-forum.example") <= 0x7fff_ffff);
    }
}
