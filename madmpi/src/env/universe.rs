//! The MPI environment of a process: initialization with a thread level, the world and self
//! communicators, wall-clock time, finalization. MPI allows one initialization per process
//! (`MPI_Init` after `MPI_Finalize` is an error), which [`init`] enforces.
//!
//! Owns the process's nmad instance (through the communicators' runtime); must not be
//! initialized twice nor used after finalize.

use crate::comm::{Comm, Runtime};
use crate::error::{Error, Result};
pub use crate::info::{Threading, processor_name};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering::SeqCst};
use std::time::Instant;

const NOT_STARTED: u8 = 0;
const RUNNING: u8 = 1;
const FINALIZED: u8 = 2;
static STATE: AtomicU8 = AtomicU8::new(NOT_STARTED);

/// Whether MPI was initialized (`MPI_Initialized`: stays true after finalize).
pub fn initialized() -> bool {
    STATE.load(SeqCst) != NOT_STARTED
}

/// Whether MPI was finalized (`MPI_Finalized`).
pub fn finalized() -> bool {
    STATE.load(SeqCst) == FINALIZED
}

/// The MPI environment (`MPI_Init_thread` … `MPI_Finalize`).
pub struct Universe {
    rt: Arc<Runtime>,
    world: Comm,
    self_comm: Comm,
    threading: Threading,
    main: std::thread::ThreadId,
    /// The intercommunicator to the parents of a spawned job (`MPI_Comm_get_parent`).
    parent: Option<Comm>,
}

/// Initializes MPI with the launcher's PMI (madrun, Hydra, Slurm; alone: one rank). Every level
/// is provided as requested: nmad and pioman are thread-safe. Installs the workspace's logging
/// backend if the program has none (`pm2_log::init`).
pub fn init(threading: Threading) -> Result<Universe> {
    pm2_log::init();
    if STATE.compare_exchange(NOT_STARTED, RUNNING, SeqCst, SeqCst).is_err() {
        return Err(Error::other(if finalized() {
            "MPI_Init: MPI was finalized (it cannot be initialized again)"
        } else {
            "MPI_Init: MPI is already initialized"
        }));
    }
    // Shared with the sessions open in this process (started by the first of them).
    let rt = crate::env::process::acquire("MPI_Init")?;
    crate::info::record_start(rt.nm.size(), threading);
    let mut u = Universe::over(rt, threading);
    // A spawned job meets its parents now: they wait in MPI_Comm_spawn.
    u.parent = crate::dynamic::connect_to_parents(&u.world)
        .map_err(|e| Error::new(e.class(), format!("MPI_Init: connecting to the parents: {e}")))?;
    Ok(u)
}

impl Universe {
    fn over(rt: Arc<Runtime>, threading: Threading) -> Universe {
        epoch();
        Universe {
            world: Comm::world(&rt),
            self_comm: Comm::self_comm(&rt),
            rt,
            threading,
            main: std::thread::current().id(),
            parent: None,
        }
    }

    /// `MPI_COMM_WORLD`.
    pub fn world(&self) -> &Comm {
        &self.world
    }

    /// `MPI_COMM_SELF`.
    pub fn self_comm(&self) -> &Comm {
        &self.self_comm
    }

    /// The intercommunicator to the parents, in a job started by `MPI_Comm_spawn`.
    pub fn parent(&self) -> Option<&Comm> {
        self.parent.as_ref()
    }

    /// The thread level provided (`MPI_Query_thread`).
    pub fn threading(&self) -> Threading {
        self.threading
    }

    /// Whether the caller is the thread that initialized MPI (`MPI_Is_thread_main`).
    pub fn is_thread_main(&self) -> bool {
        std::thread::current().id() == self.main
    }

    /// Ends the whole job with exit status `code` (`MPI_Abort`): through the launcher, so every
    /// process ends and the launcher exits with `code`; this process exits by itself if the
    /// launcher cannot.
    pub fn abort(&self, code: i32, message: &str) -> ! {
        let e = self.rt.nm.abort(code, message);
        log::error!("MPI_Abort: the launcher could not end the job ({e}); exiting this process");
        std::process::exit(code)
    }

    /// Ends MPI (`MPI_Finalize`, collective over the world): unless sessions are still open
    /// in this process, waits for every process, then shuts nmad down. Processes known failed
    /// (a link to them broke or could not be made) are not waited for: MPI is finalized
    /// without them, and the result is an `MPIX_ERR_PROC_FAILED` error naming them.
    pub fn finalize(self) -> Result<()> {
        drop(self);
        let r = crate::env::process::release("MPI_Finalize");
        STATE.store(FINALIZED, SeqCst);
        r
    }
}

fn epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Seconds since an arbitrary origin fixed at initialization (`MPI_Wtime`; not synchronized
/// across processes: `MPI_WTIME_IS_GLOBAL` is false).
pub fn wtime() -> f64 {
    epoch().elapsed().as_secs_f64()
}

/// The resolution of [`wtime`] (`MPI_Wtick`): a nanosecond clock.
pub fn wtick() -> f64 {
    1e-9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_and_names() {
        let a = wtime();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(wtime() - a >= 0.002);
        assert!(wtick() > 0.0 && wtick() < 1e-6);
        assert!(!processor_name().is_empty());
        assert!(Threading::Single < Threading::Multiple);
    }
}
