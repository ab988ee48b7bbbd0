//! Communicators: a group of processes, this process's rank in it, and the nmad session named by
//! the communicator's context id (so each communicator is its own matching space).
//!
//! Creating one (dup, split, split by node, create from a group: `split`) is collective over the
//! parent: the members agree on a context id free at all of them (`context`), exchanging what
//! they must with the parent's internal operations (`internal`), numbered by a per-communicator
//! sequence so that successive operations never mix their messages. A communicator created
//! over a group alone (sessions, `MPI_Comm_create_group`) agrees with `group_context`.
//!
//! An intercommunicator is a communicator with a remote group as well (`MPI_Comm_size`, `rank`
//! and `group` give the local group): point-to-point ranks name the remote group, collectives
//! number their peers across both (`coll::inter`), and its internal operations run over the
//! members of both groups. Its constructors, and the public `split` and `create` that serve
//! both kinds, are in `intercomm`; `MPI_Comm_create_group` and `MPI_Comm_idup` in `comm_ctor`.
//!
//! Each communicator also keeps its info hints ([`CommHints`]: `MPI_Comm_set_info`,
//! `MPI_Comm_get_info`); a duplicate copies them, [`Comm::dup_with_info`] takes its info's.
//! The features above (collectives, topologies, buffered sends, fault tolerance) keep their
//! state here without being named: in the communicator's or the runtime's `Extensions`
//! (`ext`), typed by each feature, and hook into communicators' lives through the runtime
//! (`runtime`). The envelope of messages (ranks, tags, statuses: `envelope`) and the layout of
//! nmad tags ([`tags`]) are the communicator's too, shared by everything that communicates.
//!
//! Owns communicator state (group, context id, name, hints, the features' slots) and its
//! session's lifetime; it must not touch nmad beyond its session interface, nor import a
//! feature above it (point-to-point, requests, collectives, topologies, fault tolerance...).

pub(crate) mod context;
mod envelope;
mod ext;
pub(crate) mod group_context;
pub(crate) mod internal;
mod runtime;
mod split;
pub mod tags;
#[cfg(test)]
mod tests;

use context::agree;
pub(crate) use envelope::check_tag;
pub use envelope::{From, Rank, Status, Tag};
pub(crate) use ext::{Extension, Extensions};
pub(crate) use runtime::{AnySourceRule, Lifecycle, Runtime};

use crate::error::{Error, ErrorClass, Result};
use crate::group::{Group, GroupComparison};
use crate::info::{CommHints, Info};
use internal::Members;
use nmad::{Nmad, Session};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

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
    name: Mutex<String>,
    hints: Mutex<CommHints>,
    /// The state features keep on this communicator (collectives, topology...).
    ext: Extensions,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if self.context != context::WORLD && self.context != context::SELF {
            self.rt.lifecycle().for_each(|l| l.freed(&self.rt, self.context));
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
        Comm::make_full(rt, group, remote, context, name, Extensions::default())
    }

    /// [`Comm::make_with`], with the features' state `ext` (a duplicate's).
    fn make_full(
        rt: &Arc<Runtime>,
        group: Group,
        remote: Option<Group>,
        context: u32,
        name: &str,
        ext: Extensions,
    ) -> Comm {
        let me = rt.nm.rank();
        let rank = group.rank_of(me).expect("a communicator is made only at its members");
        let session = rt.nm.session(context);
        let c = Comm(Arc::new(Inner {
            rt: rt.clone(),
            group,
            rank,
            remote,
            context,
            session,
            ops: AtomicU64::new(0),
            name: Mutex::new(name.to_string()),
            hints: Mutex::new(CommHints::default()),
            ext,
        }));
        rt.lifecycle().for_each(|l| l.made(&c));
        c
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

    /// The state features keep on this communicator.
    pub(crate) fn extensions(&self) -> &Extensions {
        &self.0.ext
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
        self.internal_at(seq, |m| agree(&self.0.rt.ids, m))
    }

    /// Gives back a context id agreed on but not used.
    pub(crate) fn release_context(&self, id: u32) {
        self.0.rt.ids.release(id);
    }
}
