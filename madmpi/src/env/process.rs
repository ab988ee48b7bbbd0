//! The process's runtime (nmad and what every communicator shares), started by the first of
//! `MPI_Init` and `MPI_Session_init` and finalized with the last of `MPI_Finalize` and
//! `MPI_Session_finalize`: MPI 4.0 lets the world model and any number of sessions coexist.
//!
//! Finalizing the runtime is collective over the job (nmad's finalize waits for every process),
//! which is what MPI asks of the last finalization of each process. Once finalized it cannot
//! start again: PMI, hence nmad, initializes once per process (MPICH can restart sessions;
//! documented deviation).
//!
//! Owns the reference count and the runtime's start and end, and assembles the runtime from
//! the features that hook into it; it must not know communicators beyond creating the runtime
//! they share.

use crate::comm::Runtime;
use crate::error::{Error, ErrorClass, Result};
use nmad::{Fence, Nmad};
use std::sync::{Arc, Mutex, PoisonError};

struct Holder {
    runtime: Option<Arc<Runtime>>,
    /// MPI_Init (until MPI_Finalize) and every open session.
    users: usize,
    /// The runtime was finalized: it cannot start again.
    ended: bool,
}

static HOLDER: Mutex<Holder> = Mutex::new(Holder { runtime: None, users: 0, ended: false });

/// The runtime over `nm`, with the hooks of the features that follow communicators' lives
/// (fault tolerance's revocation monitor). Every runtime is made here (and by the tests'
/// harness through here), so no feature is forgotten.
pub(crate) fn assemble(nm: Nmad) -> Arc<Runtime> {
    Runtime::new(nm, vec![Box::new(crate::ft::Revocation)], Some(Box::new(crate::ft::FailurePending)))
}

/// One more user of the runtime, started if it is not running (`who` names the call for
/// errors).
pub(crate) fn acquire(who: &str) -> Result<Arc<Runtime>> {
    let mut h = HOLDER.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(rt) = &h.runtime {
        let rt = rt.clone();
        h.users += 1;
        return Ok(rt);
    }
    if h.ended {
        return Err(Error::other(format!(
            "{who}: MPI was finalized in this process (its runtime cannot start again)"
        )));
    }
    let nm = Nmad::init().map_err(|e| Error::other(format!("{who}: starting nmad: {e}")))?;
    crate::tools::attach(&nm);
    let rt = assemble(nm);
    h.runtime = Some(rt.clone());
    h.users = 1;
    Ok(rt)
}

/// One user fewer; the last one finalizes the runtime (collective over the job, without the
/// processes known failed: then it ends with `MPIX_ERR_PROC_FAILED` once finalized).
pub(crate) fn release(who: &str) -> Result<()> {
    let rt = {
        let mut h = HOLDER.lock().unwrap_or_else(PoisonError::into_inner);
        h.users = h.users.saturating_sub(1);
        if h.users > 0 {
            return Ok(());
        }
        h.ended = true;
        h.runtime.take()
    };
    let Some(rt) = rt else { return Ok(()) };
    let nm = rt.nm.clone();
    crate::tools::detach();
    let rank = nm.rank();
    let err = |e: std::io::Error| Error::other(format!("{who}: {e}"));
    // The job's fence, unless failures are known or the launcher reports one meanwhile: a
    // launcher's fence may then never complete (Hydra's waits for the dead), and the
    // survivors agree among themselves instead.
    let fenced = !crate::ft::failures_known(&rt) && nm.finalize_fence().map_err(err)? == Fence::Done;
    let failed = if fenced {
        drop(rt);
        nm.finalize_fenced().map_err(err)?;
        Vec::new()
    } else {
        let agreed = crate::ft::survivors_barrier(&rt);
        drop(rt);
        nm.finalize_survivors().map_err(err)?;
        agreed?
    };
    if failed.is_empty() {
        return Ok(());
    }
    // Finalized without them (nothing waited for them); the caller still learns the job lost
    // processes (fatal under MPI_ERRORS_ARE_FATAL, so the launcher ends the job).
    let e = Error::new(
        ErrorClass::MpixProcFailed,
        format!("{who}: finalized without the failed processes {failed:?} (world ranks)"),
    );
    log::error!("rank {rank}: {}", e.message());
    Err(e)
}

/// The running runtime, if any (for calls that need one without holding it, such as
/// `MPI_Comm_create_from_group`).
pub(crate) fn current() -> Option<Arc<Runtime>> {
    HOLDER.lock().unwrap_or_else(PoisonError::into_inner).runtime.clone()
}
