//! Blocking collectives run inline: the calling thread advances the schedule itself, waiting on
//! its pending requests in turn (each wait drives progress as pioman's policy says, polling a
//! shared-memory peer first), instead of starting an [`Exec`](super::engine::Exec) that the
//! background source advances. The schedule is the same, and so are the messages; what a
//! blocking call saves is the background machinery it cannot use anyway — the shared running
//! state and its lock, the request monitors, the queue pushes (and the wake-ups of a sleeping
//! progression thread they cost), the completion condition.
//!
//! A thread keeps what a run needs besides the schedule — the round states, the requests, the
//! buffer table and temporaries — for its next blocking collective ([`Workspace`]): a repeated
//! collective allocates nothing.
//!
//! Owns the blocking run; it must not choose algorithms (see `raw`).

use super::bound::{Bind, Bound, Host, Reducer, Storage};
use super::rounds::{Advance, Rounds};
use super::schedule::Schedule;
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::loom::atomic::AtomicUsize;
use std::cell::Cell;
use std::pin::Pin;
use std::sync::Arc;

/// What one blocking run leaves for the next on the same thread.
#[derive(Default)]
struct Workspace {
    rounds: Option<Rounds<Pin<Box<nmad::Request>>>>,
    /// Completed requests, reset, ready to post again.
    pool: Vec<Pin<Box<nmad::Request>>>,
    mem: Storage,
}

thread_local! {
    /// Taken for the length of a run (so a run inside a run, should one ever happen, gets a
    /// fresh one instead of sharing).
    static WORKSPACE: Cell<Option<Box<Workspace>>> = const { Cell::new(None) };
}

/// Runs `sched` over `bind` as collective number `seq` of `comm`, to the end: the error it
/// ended with, if any (once nothing it posted is in flight any more).
///
/// # Safety
/// `bind`'s memory must stay valid (the input for reads, the output for writes and reads) and
/// not be touched by anyone else until this returns.
pub(crate) unsafe fn run(
    comm: &Comm,
    seq: u64,
    sched: Arc<Schedule>,
    bind: Bind,
    reducer: Option<Reducer>,
) -> Result<Option<Error>> {
    let mut ws = WORKSPACE.take().unwrap_or_default();
    let mem = std::mem::take(&mut ws.mem);
    // SAFETY: our contract, passed on.
    let bound = unsafe { Bound::new_in(comm, seq, sched, bind, reducer, mem) }?;
    let deps = bound.sched.rounds.iter().map(|r| r.deps.as_slice());
    let rounds = match &mut ws.rounds {
        Some(r) => {
            r.reset(deps);
            r
        }
        none => none.insert(Rounds::new(deps)),
    };
    let mut error = None;
    // No monitor reports completions here: the waits below see them.
    let unreported = AtomicUsize::new(0);
    loop {
        let mut host = Host { bound: &bound, monitor: None, error: &mut error, pool: Some(&mut ws.pool) };
        if rounds.advance(&mut host, &unreported) == Advance::Finished {
            break;
        }
        if let Some(q) = rounds.first_pending() {
            q.wait();
        }
    }
    ws.mem = bound.into_storage();
    WORKSPACE.set(Some(ws));
    Ok(error)
}
