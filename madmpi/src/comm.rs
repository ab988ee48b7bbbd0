//! Communicators: a group of processes, this process's rank in it, and the nmad session named by
//! the communicator's context id (so each communicator is its own matching space).
//!
//! Creating one (dup, split, split by node, create from a group) is collective over the parent:
//! the members agree on a context id free at all of them (`context`), exchanging what they must
//! with the parent's internal operations (`internal`), numbered by a per-communicator sequence so
//! that successive operations never mix their messages.
//!
//! An intercommunicator is a communicator with a remote group as well (`MPI_Comm_size`, `rank`
//! and `group` give the local group): point-to-point ranks name the remote group, collectives
//! number their peers across both (`coll::inter`), and its internal operations run over the
//! members of both groups. Its constructors are in `intercomm`; `MPI_Comm_create_group` and
//! `MPI_Comm_idup` in `comm_ctor`.
//!
//! Each communicator also keeps its info hints ([`CommHints`]: `MPI_Comm_set_info`,
//! `MPI_Comm_get_info`); a duplicate copies them, [`Comm::dup_with_info`] takes its info's.
//!
//! Owns communicator state (group, context id, name, hints) and its session's lifetime; it must
//! not touch nmad beyond its session interface. Error handlers and attributes attach here later.

use crate::context::{self, ContextIds};
use crate::error::{Error, ErrorClass, Result};
use crate::group::{Group, GroupComparison};
use crate::info::{CommHints, Info};
use crate::internal::{Members, allgather};
use nmad::{Nmad, Session};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// What every communicator of a process shares.
pub(crate) struct Runtime {
    pub(crate) nm: Nmad,
    pub(crate) ids: ContextIds,
    /// Identifies this process's node (`MPI_COMM_TYPE_SHARED`): a hash of nmad's node id.
    pub(crate) node: u64,
    /// The buffer attached for buffered sends.
    pub(crate) bsend: crate::bsend::Pool,
    /// The collectives' progress source.
    pub(crate) coll: crate::coll::RuntimeState,
    /// Process failures known here and revoked communicators (ULFM).
    pub(crate) ft: crate::ft::FtState,
    /// Creations collective over a group alone, counted per key.
    pub(crate) group_ops: crate::group_context::Occurrences,
}

impl Runtime {
    pub(crate) fn new(nm: Nmad) -> Arc<Runtime> {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        nmad::drivers::node_id().hash(&mut h);
        Arc::new(Runtime {
            nm,
            ids: ContextIds::default(),
            node: h.finish(),
            bsend: Default::default(),
            coll: Default::default(),
            ft: Default::default(),
            group_ops: Default::default(),
        })
    }
}

/// How two communicators compare (`MPI_Comm_compare`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// The same communicator.
    Ident,
    /// Same members in the same order, another context.
    Congruent,
    /// Same members, another order.
    Similar,
    Unequal,
}

/// A communicator (cheap to clone: clones are the same communicator).
#[derive(Clone)]
pub struct Comm(Arc<Inner>);

struct Inner {
    rt: Arc<Runtime>,
    group: Group,
    /// This process's rank in `group`.
    rank: u32,
    /// The remote group of an intercommunicator (`group` is then the local group); `None` for
    /// an intracommunicator.
    remote: Option<Group>,
    context: u32,
    session: Session,
    /// Internal operations started on this communicator (the same count at every member).
    ops: AtomicU64,
    /// Collective operations started on this communicator (the same count at every member).
    coll_ops: AtomicU64,
    /// The node layout of the members, for hierarchical collectives (computed on first use).
    coll_layout: std::sync::OnceLock<Option<Arc<crate::coll::Layout>>>,
    name: Mutex<String>,
    hints: Mutex<CommHints>,
    /// The process topology (`topo`), attached once after creation; shared by duplicates.
    topology: std::sync::OnceLock<Arc<crate::topo::Topology>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if self.context != context::WORLD && self.context != context::SELF {
            self.rt.ft.forget(&self.rt.nm, self.context);
            self.rt.nm.close_session(self.context);
            self.rt.ids.release(self.context);
        }
    }
}

/// An nmad failure as an MPI error.
pub(crate) fn from_nmad(e: nmad::Error) -> Error {
    match e {
        nmad::Error::Truncated { len, capacity } => {
            Error::new(ErrorClass::Truncate, format!("message of {len} bytes into a buffer of {capacity}"))
        }
        nmad::Error::PeerFailed { peer, reason } => {
            Error::new(ErrorClass::MpixProcFailed, format!("process {peer} failed: {reason}"))
        }
        nmad::Error::Cancelled => Error::new(ErrorClass::Other, "cancelled"),
        nmad::Error::Revoked(m) => Error::new(ErrorClass::MpixRevoked, format!("communicator revoked: {m}")),
        nmad::Error::Protocol(m) => Error::new(ErrorClass::Other, m),
        nmad::Error::InvalidArgument(m) => Error::new(ErrorClass::Arg, m),
    }
}

impl Comm {
    pub(crate) fn make(rt: &Arc<Runtime>, group: Group, context: u32, name: &str) -> Comm {
        Comm::make_with(rt, group, None, context, name)
    }

    /// A communicator (an intercommunicator when `remote` is given) in context `context`.
    pub(crate) fn make_with(
        rt: &Arc<Runtime>,
        group: Group,
        remote: Option<Group>,
        context: u32,
        name: &str,
    ) -> Comm {
        let me = rt.nm.rank();
        let rank = group.rank_of(me).expect("a communicator is made only at its members");
        let session = rt.nm.session(context);
        crate::ft::watch(&session);
        Comm(Arc::new(Inner {
            rt: rt.clone(),
            group,
            rank,
            remote,
            context,
            session,
            ops: AtomicU64::new(0),
            coll_ops: AtomicU64::new(0),
            coll_layout: std::sync::OnceLock::new(),
            name: Mutex::new(name.to_string()),
            hints: Mutex::new(CommHints::default()),
            topology: std::sync::OnceLock::new(),
        }))
    }

    /// `MPI_COMM_WORLD`.
    pub(crate) fn world(rt: &Arc<Runtime>) -> Comm {
        let (base, size) = (rt.nm.base(), rt.nm.size());
        let members = Group::new((base..base + size).collect()).expect("distinct ids");
        Comm::make(rt, members, context::WORLD, "MPI_COMM_WORLD")
    }

    /// `MPI_COMM_SELF`.
    pub(crate) fn self_comm(rt: &Arc<Runtime>) -> Comm {
        let g = Group::new(vec![rt.nm.rank()]).expect("one member");
        Comm::make(rt, g, context::SELF, "MPI_COMM_SELF")
    }

    pub fn size(&self) -> u32 {
        self.0.group.size()
    }

    pub fn rank(&self) -> u32 {
        self.0.rank
    }

    /// The group (the local group of an intercommunicator).
    pub fn group(&self) -> &Group {
        &self.0.group
    }

    /// Whether this is an intercommunicator (`MPI_Comm_test_inter`).
    pub fn is_inter(&self) -> bool {
        self.0.remote.is_some()
    }

    /// The remote group of an intercommunicator (`MPI_Comm_remote_group`).
    pub fn remote_group(&self) -> Option<&Group> {
        self.0.remote.as_ref()
    }

    /// How many ranks point-to-point names: the remote group's size on an intercommunicator.
    pub fn peer_size(&self) -> u32 {
        self.peer_group().size()
    }

    /// The group point-to-point ranks name: the remote group of an intercommunicator.
    fn peer_group(&self) -> &Group {
        self.0.remote.as_ref().unwrap_or(&self.0.group)
    }

    /// The world rank of peer `p` of a collective schedule: local rank `p` below the local
    /// size, remote rank `p - local size` above it (intercommunicators only).
    pub(crate) fn coll_world_rank(&self, p: u32) -> Option<u32> {
        match (&self.0.remote, p.checked_sub(self.size())) {
            (Some(remote), Some(r)) => remote.member(r),
            _ => self.0.group.member(p),
        }
    }

    /// The runtime shared by every communicator of the process.
    pub(crate) fn runtime(&self) -> &Arc<Runtime> {
        &self.0.rt
    }

    /// The context id, which is also the nmad session id.
    pub fn context_id(&self) -> u32 {
        self.0.context
    }

    pub(crate) fn session(&self) -> &Session {
        &self.0.session
    }

    pub(crate) fn runtime_nmad(&self) -> &Nmad {
        &self.0.rt.nm
    }

    /// The number of the next internal operation on this communicator (the same at every
    /// member), for operations run outside its session (fault tolerance).
    pub(crate) fn next_internal_seq(&self) -> u64 {
        self.0.ops.fetch_add(1, Relaxed)
    }

    /// The sequence number of the next collective operation on this communicator.
    pub(crate) fn next_coll_seq(&self) -> u64 {
        self.0.coll_ops.fetch_add(1, Relaxed)
    }

    /// The members' node layout if it calls for hierarchical collectives (several nodes, one
    /// of them with several members), from the nodes nmad's peers published; computed once.
    pub(crate) fn coll_layout(&self) -> Result<Option<Arc<crate::coll::Layout>>> {
        if self.is_inter() {
            return Ok(None);
        }
        if let Some(l) = self.0.coll_layout.get() {
            return Ok(l.clone());
        }
        let nodes = (0..self.size())
            .map(|r| self.0.rt.nm.node_of(self.0.group.member(r).expect("a member")))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(from_nmad)?;
        let l = crate::coll::Layout::new(&nodes);
        let l = l.is_hierarchical().then(|| Arc::new(l));
        Ok(self.0.coll_layout.get_or_init(|| l).clone())
    }

    /// The process's collective state (progress source).
    pub(crate) fn coll_state(&self) -> &crate::coll::RuntimeState {
        &self.0.rt.coll
    }

    /// The process's buffered-send pool (`MPI_Buffer_attach` / `detach`).
    pub fn bsend_pool(&self) -> &crate::bsend::Pool {
        &self.0.rt.bsend
    }

    /// The world rank (nmad peer) of rank `r` as point-to-point names it (in the remote group
    /// of an intercommunicator), if there is such a rank.
    pub fn world_rank(&self, r: u32) -> Option<u32> {
        self.peer_group().member(r)
    }

    /// The rank point-to-point gives world rank `w` (in the remote group of an
    /// intercommunicator).
    pub fn rank_of_world(&self, w: u32) -> Option<u32> {
        self.peer_group().rank_of(w)
    }

    pub fn name(&self) -> String {
        self.0.name.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn set_name(&self, name: &str) {
        *self.0.name.lock().unwrap_or_else(|e| e.into_inner()) = name.to_string();
    }

    /// The info hints MadMPI recognizes, with their current values.
    pub fn hints(&self) -> CommHints {
        *self.0.hints.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `MPI_Comm_set_info`: takes the hints of `info` that MadMPI recognizes, with a valid value
    /// (the others keep theirs; unknown keys are ignored). Local here: no hint needs the other
    /// members to agree.
    pub fn set_info(&self, info: &Info) {
        self.0.hints.lock().unwrap_or_else(|e| e.into_inner()).update(info);
    }

    /// `MPI_Comm_get_info`: every recognized hint with its current value, as a new info.
    pub fn get_info(&self) -> Info {
        self.hints().to_info()
    }

    pub(crate) fn replace_hints(&self, hints: CommHints) {
        *self.0.hints.lock().unwrap_or_else(|e| e.into_inner()) = hints;
    }

    /// `MPI_Comm_compare`: an intercommunicator compares its local and its remote groups (the
    /// weaker result of the two), and is unequal to any intracommunicator.
    pub fn compare(&self, other: &Comm) -> Comparison {
        if Arc::ptr_eq(&self.0, &other.0) {
            return Comparison::Ident;
        }
        let of = |c| match c {
            GroupComparison::Ident => Comparison::Congruent,
            GroupComparison::Similar => Comparison::Similar,
            GroupComparison::Unequal => Comparison::Unequal,
        };
        let local = of(self.0.group.compare(&other.0.group));
        match (&self.0.remote, &other.0.remote) {
            (None, None) => local,
            // The variants are declared from the strongest to the weakest.
            (Some(a), Some(b)) => {
                let remote = of(a.compare(b));
                if (remote as u8) > (local as u8) { remote } else { local }
            }
            _ => Comparison::Unequal,
        }
    }

    /// Reserves the sequence number of the next internal operation (collective calls reserve
    /// theirs in call order, even when the operation runs later: `MPI_Comm_idup`).
    pub(crate) fn reserve_internal(&self) -> u64 {
        self.0.ops.fetch_add(1, Relaxed)
    }

    /// Runs internal operation `f` with the members as seen from here, numbered by the next
    /// sequence number of this communicator.
    pub(crate) fn internal<T>(&self, f: impl FnOnce(&Members<'_>) -> Result<T>) -> Result<T> {
        self.internal_at(self.reserve_internal(), f)
    }

    /// Runs internal operation number `seq` (see [`Comm::reserve_internal`]). The members of an
    /// intercommunicator are those of both groups, the group of the lower leader (world rank)
    /// first.
    pub(crate) fn internal_at<T>(&self, seq: u64, f: impl FnOnce(&Members<'_>) -> Result<T>) -> Result<T> {
        let all;
        let (ranks, me) = match &self.0.remote {
            None => (self.0.group.members(), self.0.rank as usize),
            Some(remote) => {
                let (local, remote) = (self.0.group.members(), remote.members());
                let low = self.is_low_group();
                all = if low { [local, remote].concat() } else { [remote, local].concat() };
                (&all[..], self.0.rank as usize + if low { 0 } else { remote.len() })
            }
        };
        f(&Members::new(&self.0.session, ranks, me, seq))
    }

    /// Whether the local group of this intercommunicator comes first where both groups are
    /// ordered (its leader has the lower world rank; both groups compute the same answer).
    pub(crate) fn is_low_group(&self) -> bool {
        match &self.0.remote {
            Some(remote) => self.0.group.member(0) < remote.member(0),
            None => true,
        }
    }

    /// A new context id agreed with the other members of this communicator.
    pub(crate) fn agree_context(&self) -> Result<u32> {
        self.agree_context_at(self.reserve_internal())
    }

    /// [`Comm::agree_context`] as internal operation `seq`.
    pub(crate) fn agree_context_at(&self, seq: u64) -> Result<u32> {
        self.internal_at(seq, |m| context::agree(&self.0.rt.ids, m))
    }

    /// Gives back a context id agreed on but not used.
    pub(crate) fn release_context(&self, id: u32) {
        self.0.rt.ids.release(id);
    }

    /// `MPI_Comm_dup` (collective): the same group (groups) in a new context, with the same
    /// hints.
    pub fn dup(&self) -> Result<Comm> {
        self.dup_at(self.reserve_internal())
    }

    /// [`Comm::dup`] as internal operation `seq`.
    pub(crate) fn dup_at(&self, seq: u64) -> Result<Comm> {
        let id = self.agree_context_at(seq)?;
        let c = Comm::make_with(&self.0.rt, self.0.group.clone(), self.0.remote.clone(), id, "");
        c.replace_hints(self.hints());
        if let Some(t) = self.topology() {
            c.attach_topology(t.clone());
        }
        Ok(c)
    }

    /// The process topology attached to this communicator, if any.
    pub fn topology(&self) -> Option<&Arc<crate::topo::Topology>> {
        self.0.topology.get()
    }

    /// Attaches `t` to a communicator just made (the first topology attached stays).
    pub(crate) fn attach_topology(&self, t: Arc<crate::topo::Topology>) {
        let _ = self.0.topology.set(t);
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
    /// On an intercommunicator, see [`crate::intercomm::split`].
    ///
    /// A negative color is an `MPI_ERR_ARG` at the member that gave it, found after the exchange:
    /// that member takes part as `MPI_UNDEFINED`, so the others get their communicators rather
    /// than wait for it (MPICH 4.0.2 takes a negative color as any other color).
    pub fn split(&self, color: Option<i32>, key: i32) -> Result<Option<Comm>> {
        if self.is_inter() {
            return crate::intercomm::split(self, color, key);
        }
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

    /// `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)` (collective): the members on this node.
    pub fn split_shared(&self, key: i32) -> Result<Comm> {
        Ok(self.split_shared_opt(Some(key))?.expect("this member takes part"))
    }

    /// `MPI_Comm_split_type` (collective) where each member gives either
    /// `MPI_COMM_TYPE_SHARED` with its `key` (`Some`: it gets the communicator of the members on
    /// its node that take part) or `MPI_UNDEFINED` (`None`: it gets no communicator). On an
    /// intercommunicator: the intercommunicator between the members of each group on this node.
    pub fn split_shared_opt(&self, key: Option<i32>) -> Result<Option<Comm>> {
        if self.is_inter() {
            // As in MPICH: a split of both groups by node (colors from the node's hash).
            let color = key.map(|_| (self.0.rt.node & 0x7fff_ffff) as i32);
            return crate::intercomm::split(self, color, key.unwrap_or(0));
        }
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
    /// `group` (a subgroup of this one; the same at every caller); `None` outside it. On an
    /// intercommunicator, see [`crate::intercomm::create`].
    pub fn create(&self, group: &Group) -> Result<Option<Comm>> {
        if self.is_inter() {
            return crate::intercomm::create(self, group);
        }
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::internal::tests::{finalize_all, ranks, watchdog};

    /// Runs `f(world)` on `n` ranks at once (threads as ranks over shm), under a watchdog;
    /// returns each rank's result. The multi-rank tests of every module use it.
    pub(crate) fn on_all<T: Send>(n: u32, f: impl Fn(Comm) -> T + Sync) -> Vec<T> {
        let _dog = watchdog("a multi-rank test", std::time::Duration::from_secs(120));
        let nms = ranks(n);
        let out = std::thread::scope(|t| {
            let hs: Vec<_> = nms
                .iter()
                .map(|nm| {
                    let f = &f;
                    t.spawn(move || f(Comm::world(&Runtime::new(nm.clone()))))
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        finalize_all(nms);
        out
    }

    /// A message from every member to every member of `c`, checked.
    fn all_to_all(c: &Comm) {
        let me = c.rank();
        for r in 0..c.size() {
            let to = c.world_rank(r).unwrap();
            c.session().send(to, u64::from(me), &[me as u8, c.context_id() as u8]).unwrap();
        }
        for r in 0..c.size() {
            let mut b = [0u8; 2];
            let from = c.world_rank(r).unwrap();
            c.session().recv(nmad::Source::Rank(from), u64::from(r), &mut b).unwrap();
            assert_eq!(b, [r as u8, c.context_id() as u8]);
        }
    }

    #[test]
    fn dup_split_create_and_shared() {
        let got = on_all(4, |world| {
            let me = world.rank();
            let dup = world.dup().unwrap();
            assert_eq!(world.compare(&dup), Comparison::Congruent);
            assert_eq!(world.compare(&world.clone()), Comparison::Ident);
            assert_ne!(dup.context_id(), world.context_id());
            all_to_all(&dup);
            // Odd and even ranks, reversed by key; rank 3 opts out.
            let color = if me == 3 { None } else { Some((me % 2) as i32) };
            let half = world.split(color, -(me as i32)).unwrap();
            if let Some(h) = &half {
                all_to_all(h);
            }
            let half_members = half.as_ref().map(|h| h.group().members().to_vec());
            let g = Group::new(vec![2, 0]).unwrap();
            let created = dup.create(&g).unwrap();
            if let Some(c) = &created {
                all_to_all(c);
            }
            let shared = world.split_shared(0).unwrap();
            all_to_all(&shared);
            // Freeing and creating again reuses ids without mixing messages.
            drop(dup);
            let again = world.dup().unwrap();
            all_to_all(&again);
            (half_members, created.map(|c| c.rank()), shared.size())
        });
        assert_eq!(got[0].0, Some(vec![2, 0]));
        assert_eq!(got[1].0, Some(vec![1]));
        assert_eq!(got[2].0, Some(vec![2, 0]));
        assert_eq!(got[3].0, None);
        assert_eq!(got.iter().map(|g| g.1).collect::<Vec<_>>(), [Some(1), None, Some(0), None]);
        assert!(got.iter().all(|g| g.2 == 4), "one node: everybody shares it");
    }

    #[test]
    fn hints_are_set_copied_by_dup_and_replaced_by_dup_with_info() {
        on_all(2, |world| {
            assert_eq!(world.hints(), CommHints::default());
            world.set_info(&Info::from_pairs([("mpi_assert_no_any_tag", "true"), ("unknown", "x")]).unwrap());
            assert!(world.hints().no_any_tag);
            assert!(!world.get_info().contains("unknown"), "unknown keys are ignored");
            let d = world.dup().unwrap();
            assert_eq!(d.hints(), world.hints(), "a duplicate has the same hints");
            let overtaking = Info::from_pairs([("mpi_assert_allow_overtaking", "true")]).unwrap();
            let e = world.dup_with_info(&overtaking).unwrap();
            assert_eq!(e.hints(), CommHints { allow_overtaking: true, ..Default::default() });
            assert_eq!(e.get_info().get_str("mpi_assert_allow_overtaking"), Some("true"));
            all_to_all(&e);
            let s = world.split(Some(0), 0).unwrap().unwrap();
            assert_eq!(s.hints(), CommHints::default(), "other new communicators start with the defaults");
        });
    }

    #[test]
    fn bad_arguments_are_errors() {
        on_all(2, |world| {
            assert_eq!(world.split(Some(-2), 0).err().unwrap().class(), ErrorClass::Arg);
            let stranger = Group::new(vec![0, 7]).unwrap();
            assert_eq!(world.create(&stranger).err().unwrap().class(), ErrorClass::Group);
        });
    }

    #[test]
    fn a_negative_color_fails_there_and_the_others_go_on() {
        let got = on_all(3, |world| {
            let me = world.rank();
            let color = if me == 1 { Some(-5) } else { Some(0) };
            match world.split(color, 0) {
                Ok(c) => c.map(|c| c.group().members().to_vec()).ok_or(ErrorClass::Other),
                Err(e) => Err(e.class()),
            }
        });
        assert_eq!(got, [Ok(vec![0, 2]), Err(ErrorClass::Arg), Ok(vec![0, 2])]);
    }

    #[test]
    fn shared_split_with_members_opting_out() {
        let got = on_all(3, |world| {
            let me = world.rank();
            let key = if me == 0 { None } else { Some(-(me as i32)) };
            let c = world.split_shared_opt(key).unwrap();
            if let Some(c) = &c {
                all_to_all(c);
            }
            c.map(|c| c.group().members().to_vec())
        });
        assert_eq!(got, [None, Some(vec![2, 1]), Some(vec![2, 1])]);
    }
}
