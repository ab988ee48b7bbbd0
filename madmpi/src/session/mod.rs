//! MPI sessions (MPI 4.0 ch. 11): a handle on the MPI runtime that needs no `MPI_Init`, the
//! process sets it names (`psets`) and groups drawn from them, from which communicators are
//! created collectively over the group alone ([`comm_from_group`]).
//!
//! A session holds one reference on the process runtime (`crate::env::process`), shared with the
//! world model and the other sessions: the first of them starts nmad, the last finalization
//! ends it. Its thread level comes from the info key `thread_level` (`MPI_THREAD_SINGLE` …
//! `MPI_THREAD_MULTIPLE`; absent or unknown: single, as MPICH 4.0), and is always provided.
//!
//! Owns a session's lifetime and what it tells about itself; it must not keep communicators
//! (those made from its groups live on their own, as MPI says).

mod psets;

pub use psets::{PSETS, pset_group, pset_info};

use crate::comm::{Comm, Runtime};
use crate::env::universe::Threading;
use crate::error::{Error, Result};
use crate::group::Group;
use crate::info::Info;
use std::sync::Arc;

/// An open session (`MPI_Session`). Finalize it with [`Session::finalize`]; dropping it does
/// the same, without reporting errors.
pub struct Session {
    rt: Option<Arc<Runtime>>,
    threading: Threading,
}

/// The `thread_level` info value naming `t`.
pub fn threading_name(t: Threading) -> &'static str {
    match t {
        Threading::Single => "MPI_THREAD_SINGLE",
        Threading::Funneled => "MPI_THREAD_FUNNELED",
        Threading::Serialized => "MPI_THREAD_SERIALIZED",
        Threading::Multiple => "MPI_THREAD_MULTIPLE",
    }
}

fn threading_from(info: Option<&Info>) -> Threading {
    let all = [Threading::Single, Threading::Funneled, Threading::Serialized, Threading::Multiple];
    let asked = info.and_then(|i| i.get_str("thread_level"));
    asked.and_then(|v| all.into_iter().find(|&t| threading_name(t) == v)).unwrap_or(Threading::Single)
}

impl Session {
    /// `MPI_Session_init`: starts the runtime if nothing else in this process did.
    pub fn init(info: Option<&Info>) -> Result<Session> {
        pm2_log::init();
        let threading = threading_from(info);
        let rt = crate::env::process::acquire("MPI_Session_init")?;
        if !crate::env::universe::initialized() {
            crate::info::record_start(rt.nm.size(), threading);
        }
        Ok(Session { rt: Some(rt), threading })
    }

    /// The thread level the session provides.
    pub fn threading(&self) -> Threading {
        self.threading
    }

    /// `MPI_Session_get_info`: `thread_level` (the level provided).
    pub fn info(&self) -> Info {
        let mut i = Info::new();
        i.set("thread_level", threading_name(self.threading)).expect("a valid key and value");
        i
    }

    /// `MPI_Group_from_session_pset`.
    pub fn pset_group(&self, name: &str) -> Result<Group> {
        pset_group(&self.runtime()?.nm, name)
    }

    /// `MPI_Session_get_pset_info`: `mpi_size`.
    pub fn pset_info(&self, name: &str) -> Result<Info> {
        pset_info(&self.runtime()?.nm, name)
    }

    /// `MPI_COMM_WORLD` and `MPI_COMM_SELF` of the process, for a C library that keeps handles
    /// for them whichever model started it (the session model itself does not use them).
    pub fn predefined_comms(&self) -> Result<(Comm, Comm)> {
        let rt = self.runtime()?;
        Ok((Comm::world(rt), Comm::self_comm(rt)))
    }

    fn runtime(&self) -> Result<&Arc<Runtime>> {
        self.rt.as_ref().ok_or_else(|| Error::session("the session was finalized"))
    }

    /// `MPI_Session_finalize`: gives the session's reference on the runtime back; the last
    /// finalization in the process ends the runtime (collective over the job).
    pub fn finalize(mut self) -> Result<()> {
        self.release()
    }

    fn release(&mut self) -> Result<()> {
        match self.rt.take() {
            Some(rt) => {
                drop(rt);
                crate::env::process::release("MPI_Session_finalize")
            }
            None => Ok(()),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

/// `MPI_Comm_create_from_group`: a communicator over `group` (this process is a member),
/// collective over the group's members only; `tag` tells apart creations that run at once.
pub fn comm_from_group(group: &Group, tag: &str) -> Result<Comm> {
    let rt = crate::env::process::current()
        .ok_or_else(|| Error::other("no session is open and MPI is not initialized"))?;
    create_over(&rt, group, tag)
}

pub(crate) fn create_over(rt: &Arc<Runtime>, group: &Group, tag: &str) -> Result<Comm> {
    if group.is_empty() {
        return Err(Error::group("the group is empty (MPI_GROUP_EMPTY)"));
    }
    let id = crate::comm::group_context::agree(rt, group, tag)?;
    Ok(Comm::make(rt, group.clone(), id, ""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorClass;
    use crate::testing::on_all;

    #[test]
    fn thread_level_comes_from_the_info() {
        let i = |v: &str| Info::from_pairs([("thread_level", v)]).unwrap();
        assert_eq!(threading_from(None), Threading::Single);
        assert_eq!(threading_from(Some(&i("MPI_THREAD_MULTIPLE"))), Threading::Multiple);
        assert_eq!(threading_from(Some(&i("MPI_THREAD_FUNNELED"))), Threading::Funneled);
        assert_eq!(threading_from(Some(&i("bogus"))), Threading::Single);
    }

    /// Communicators from the world pset, created by every rank with two tags at once, and
    /// from each rank's self pset: they carry messages in their own context.
    #[test]
    fn communicators_from_pset_groups() {
        on_all(3, |world| {
            let rt = world.runtime().clone();
            let g = pset_group(&rt.nm, "mpi://WORLD").unwrap();
            assert_eq!(g.members(), &[0, 1, 2]);
            let (a, b) = std::thread::scope(|s| {
                let x = s.spawn(|| create_over(&rt, &g, "a").unwrap());
                let y = s.spawn(|| create_over(&rt, &g, "b").unwrap());
                (x.join().unwrap(), y.join().unwrap())
            });
            assert_ne!(a.context_id(), b.context_id());
            assert_eq!((a.rank(), a.size()), (world.rank(), 3));
            let me = world.rank();
            let to = a.world_rank((me + 1) % 3).unwrap();
            a.session().send(to, 5, &[me as u8]).unwrap();
            let mut got = [9u8];
            a.session().recv(nmad::Source::Any, 5, &mut got).unwrap();
            assert_eq!(got[0], ((me + 2) % 3) as u8);
            let s = create_over(&rt, &pset_group(&rt.nm, "mpi://SELF").unwrap(), "self").unwrap();
            assert_eq!((s.size(), s.rank()), (1, 0));
            assert_eq!(
                create_over(&rt, &Group::empty(), "e").err().map(|e| e.class()),
                Some(ErrorClass::Group)
            );
        });
    }
}
