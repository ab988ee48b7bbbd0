//! Communicators made collectively over a parent intracommunicator: `MPI_Comm_dup` (and with
//! info), `MPI_Comm_split`, `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`, `MPI_Comm_create`.
//!
//! Owns how the members form the new group and agree on its context id; the public entry points
//! that also serve intercommunicators are `intercomm`'s.

use super::internal::allgather;
use super::{Comm, from_nmad};
use crate::error::{Error, Result};
use crate::group::Group;
use crate::info::{CommHints, Info};

impl Comm {
    /// `MPI_Comm_dup` (collective): the same group (groups) in a new context, with the same
    /// hints.
    pub fn dup(&self) -> Result<Comm> {
        self.dup_at(self.reserve_internal())
    }

    /// [`Comm::dup`] as internal operation `seq`.
    pub(crate) fn dup_at(&self, seq: u64) -> Result<Comm> {
        let id = self.agree_context_at(seq)?;
        let (group, remote, ext) = (self.0.group.clone(), self.0.remote.clone(), self.0.ext.dup());
        let c = Comm::make_full(&self.0.rt, group, remote, id, "", ext);
        c.replace_hints(self.hints());
        Ok(c)
    }

    /// [`Comm::dup`] where every feature starts afresh (no topology, no feature state carried
    /// over): what the topology constructors build on, so a new topology replaces the parent's.
    pub(crate) fn dup_fresh(&self) -> Result<Comm> {
        let id = self.agree_context_at(self.reserve_internal())?;
        let c = Comm::make_full(
            &self.0.rt,
            self.0.group.clone(),
            self.0.remote.clone(),
            id,
            "",
            Default::default(),
        );
        c.replace_hints(self.hints());
        Ok(c)
    }

    /// `MPI_Comm_dup_with_info` (collective): [`Comm::dup`], with the default hints updated by
    /// `info` instead of this communicator's.
    pub fn dup_with_info(&self, info: &Info) -> Result<Comm> {
        let c = self.dup()?;
        c.replace_hints(CommHints::from_info(info));
        Ok(c)
    }

    /// `MPI_Comm_split` (collective): the members giving the same `color` form a communicator,
    /// ranked by `key` then by their rank here; `None` (`MPI_UNDEFINED`) gets no communicator.
    /// Intracommunicators only (`Comm::split` serves both kinds).
    ///
    /// A negative color is an `MPI_ERR_ARG` at the member that gave it, found after the exchange:
    /// that member takes part as `MPI_UNDEFINED`, so the others get their communicators rather
    /// than wait for it (MPICH 4.0.2 takes a negative color as any other color).
    pub(crate) fn split_intra(&self, color: Option<i32>, key: i32) -> Result<Option<Comm>> {
        let bad = color.filter(|&c| c < 0);
        let color = color.filter(|&c| c >= 0);
        // (color or -1, key) from every member.
        let mut mine = [0u8; 8];
        mine[..4].copy_from_slice(&color.unwrap_or(-1).to_le_bytes());
        mine[4..].copy_from_slice(&key.to_le_bytes());
        let all = self.internal(|m| allgather(m, 0, &mine).map_err(from_nmad))?;
        let entries: Vec<(i32, i32, u32)> = all
            .chunks_exact(8)
            .enumerate()
            .map(|(r, c)| {
                let color = i32::from_le_bytes(c[..4].try_into().expect("4 bytes"));
                let key = i32::from_le_bytes(c[4..].try_into().expect("4 bytes"));
                (color, key, r as u32)
            })
            .collect();
        let formed = self.form(color, &entries)?;
        if let Some(c) = bad {
            return Err(Error::arg(format!("MPI_Comm_split: color {c} is negative (and not MPI_UNDEFINED)")));
        }
        Ok(formed)
    }

    /// `MPI_Comm_split_type` (collective) where each member gives either
    /// `MPI_COMM_TYPE_SHARED` with its `key` (`Some`: it gets the communicator of the members on
    /// its node that take part) or `MPI_UNDEFINED` (`None`: it gets no communicator).
    /// Intracommunicators only (`Comm::split_shared_opt` serves both kinds).
    pub(crate) fn split_shared_intra(&self, key: Option<i32>) -> Result<Option<Comm>> {
        let mut mine = [0u8; 13];
        mine[..8].copy_from_slice(&self.0.rt.node.to_le_bytes());
        mine[8..12].copy_from_slice(&key.unwrap_or(0).to_le_bytes());
        mine[12] = u8::from(key.is_some());
        let all = self.internal(|m| allgather(m, 0, &mine).map_err(from_nmad))?;
        // Colors: the index of the first member with the same node; -1 for those not taking part.
        let nodes: Vec<u64> =
            all.chunks_exact(13).map(|c| u64::from_le_bytes(c[..8].try_into().expect("8 bytes"))).collect();
        let entries: Vec<(i32, i32, u32)> = all
            .chunks_exact(13)
            .enumerate()
            .map(|(r, c)| {
                let color = match c[12] {
                    0 => -1,
                    _ => nodes.iter().position(|&n| n == nodes[r]).expect("itself") as i32,
                };
                (color, i32::from_le_bytes(c[8..12].try_into().expect("4 bytes")), r as u32)
            })
            .collect();
        let color = key.map(|_| entries[self.0.rank as usize].0);
        self.form(color, &entries)
    }

    /// `MPI_Comm_create` (collective over this communicator): a communicator of the members of
    /// `group` (a subgroup of this one; the same at every caller); `None` outside it.
    /// Intracommunicators only (`Comm::create` serves both kinds).
    pub(crate) fn create_intra(&self, group: &Group) -> Result<Option<Comm>> {
        if let Some(stranger) = group.members().iter().find(|&&w| self.0.group.rank_of(w).is_none()) {
            return Err(Error::group(format!(
                "MPI_Comm_create: process {stranger} of the group is not in the communicator"
            )));
        }
        // Every member of the parent takes part in the agreement, so ids stay consistent.
        let id = self.agree_context()?;
        if !group.contains(self.0.rt.nm.rank()) {
            self.0.rt.ids.release(id);
            return Ok(None);
        }
        Ok(Some(Comm::make(&self.0.rt, group.clone(), id, "")))
    }

    /// Forms the communicator of `color` from `(color, key, rank here)` of every member, after
    /// an agreement on a context id over this communicator (disjoint colors may share one id:
    /// their members never talk to each other in it).
    fn form(&self, color: Option<i32>, entries: &[(i32, i32, u32)]) -> Result<Option<Comm>> {
        let id = self.agree_context()?;
        let Some(color) = color else {
            self.0.rt.ids.release(id);
            return Ok(None);
        };
        let mut mine: Vec<&(i32, i32, u32)> = entries.iter().filter(|e| e.0 == color).collect();
        mine.sort_by_key(|e| (e.1, e.2));
        let members: Vec<u32> =
            mine.iter().map(|e| self.0.group.member(e.2).expect("a rank of this communicator")).collect();
        let group = Group::new(members)?;
        Ok(Some(Comm::make(&self.0.rt, group, id, "")))
    }
}
