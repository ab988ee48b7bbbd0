//! What is made from an intercommunicator, collectively over both groups:
//! `MPI_Intercomm_merge`, `MPI_Comm_split` and `MPI_Comm_create`.
//!
//! Each exchanges what the members chose (an allgather over both groups, in the order of
//! [`Comm::internal_at`]), then agrees on a context id over both groups. Owns these three
//! constructions; it must not reach into the communicator's state beyond [`Comm`]'s crate API.

use super::inter;
use crate::comm::internal::allgather;
use crate::comm::{Comm, from_nmad};
use crate::error::{Error, Result};
use crate::group::Group;

/// Each member's contribution, in rank order.
type Contributions = Vec<Vec<u8>>;

/// Every member's `mine`, in the order of both groups' internal operations, split into the
/// local group's contributions and the remote group's.
fn exchange(c: &Comm, mine: &[u8]) -> Result<(Contributions, Contributions)> {
    let all = c.internal(|m| allgather(m, 0, mine).map_err(from_nmad))?;
    let mut each: Vec<Vec<u8>> = all.chunks_exact(mine.len()).map(<[u8]>::to_vec).collect();
    let nl = c.size() as usize;
    let (local, remote) = if c.is_low_group() {
        let remote = each.split_off(nl);
        (each, remote)
    } else {
        let local = each.split_off(each.len() - nl);
        (local, each)
    };
    Ok((local, remote))
}

fn word(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// `MPI_Intercomm_merge`: an intracommunicator of both groups, the group whose members gave
/// `high` false first (each group's leader's choice counts); when both gave the same, the
/// group of the lower leader (world rank) first.
pub fn merge(c: &Comm, high: bool) -> Result<Comm> {
    inter("MPI_Intercomm_merge", c)?;
    let (local, remote) = exchange(c, &[u8::from(high)])?;
    let (mine, theirs) = (local[0][0] != 0, remote[0][0] != 0);
    let local_first = if mine == theirs { c.is_low_group() } else { !mine };
    let remote_group = c.remote_group().expect("an intercommunicator");
    let (a, b) = if local_first { (c.group(), remote_group) } else { (remote_group, c.group()) };
    let group = Group::new([a.members(), b.members()].concat())?;
    let id = c.agree_context()?;
    Ok(Comm::make_with(c.runtime(), group, None, id, ""))
}

/// `MPI_Comm_split` on an intercommunicator: the members of each group giving the same
/// `color` form a local group (ranked by `key`, then by their rank), whose remote group is
/// that of the other group's members with that color. `None` (`MPI_UNDEFINED`), or a color
/// nobody in the other group gave, gets no communicator. A negative color is `MPI_ERR_ARG`
/// where it was given, that member taking part as `MPI_UNDEFINED`.
pub fn split(c: &Comm, color: Option<i32>, key: i32) -> Result<Option<Comm>> {
    let bad = color.filter(|&c| c < 0);
    let color = color.filter(|&c| c >= 0);
    let mut mine = [0u8; 8];
    mine[..4].copy_from_slice(&color.unwrap_or(-1).to_le_bytes());
    mine[4..].copy_from_slice(&key.to_le_bytes());
    let (local, remote) = exchange(c, &mine)?;
    let id = c.agree_context()?;
    // The members of `color` among `entries` of `group`, ranked by key then rank.
    let pick = |entries: &[Vec<u8>], group: &Group, color: i32| -> Vec<u32> {
        let mut chosen: Vec<(i32, usize)> = (0..entries.len())
            .filter(|&r| word(&entries[r], 0) == color)
            .map(|r| (word(&entries[r], 4), r))
            .collect();
        chosen.sort();
        chosen.iter().map(|&(_, r)| group.member(r as u32).expect("a rank of the group")).collect()
    };
    let formed = match color {
        Some(color) => {
            let ours = pick(&local, c.group(), color);
            let theirs = pick(&remote, c.remote_group().expect("an intercommunicator"), color);
            (!theirs.is_empty()).then_some((ours, theirs))
        }
        None => None,
    };
    if let Some(color) = bad {
        c.release_context(id);
        return Err(Error::arg(format!("MPI_Comm_split: color {color} is negative (and not MPI_UNDEFINED)")));
    }
    let Some((ours, theirs)) = formed else {
        c.release_context(id);
        return Ok(None);
    };
    Ok(Some(Comm::make_with(c.runtime(), Group::new(ours)?, Some(Group::new(theirs)?), id, "")))
}

/// `MPI_Comm_create` on an intercommunicator: `group` (the same at every member of a group) is
/// a subgroup of the local group, the new local group; the remote group is what the other
/// group's members gave. Members outside `group`, or whose remote group would be empty, get no
/// communicator. A process of `group` outside the local group is `MPI_ERR_GROUP`.
pub fn create(c: &Comm, group: &Group) -> Result<Option<Comm>> {
    if let Some(stranger) = group.members().iter().find(|&&w| !c.group().contains(w)) {
        return Err(Error::group(format!(
            "MPI_Comm_create: process {stranger} of the group is not in the local group"
        )));
    }
    let me = c.group().member(c.rank()).expect("a member");
    // Each member's rank in the group its side gave (-1 outside it).
    let rank = group.rank_of(me).map_or(-1, |r| r as i32);
    let (_, remote) = exchange(c, &rank.to_le_bytes())?;
    let id = c.agree_context()?;
    let mut theirs: Vec<(i32, u32)> =
        (0..remote.len()).map(|r| (word(&remote[r], 0), r as u32)).filter(|&(g, _)| g >= 0).collect();
    theirs.sort();
    let remote_group = c.remote_group().expect("an intercommunicator");
    let theirs: Vec<u32> =
        theirs.iter().map(|&(_, r)| remote_group.member(r).expect("a remote rank")).collect();
    if rank < 0 || theirs.is_empty() {
        c.release_context(id);
        return Ok(None);
    }
    Ok(Some(Comm::make_with(c.runtime(), group.clone(), Some(Group::new(theirs)?), id, "")))
}
