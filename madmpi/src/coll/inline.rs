//! Blocking collectives run inline: the calling thread advances the schedule itself, waiting on
//! its pending requests in turn (each wait drives progress as pioman's policy says, polling a
//! shared-memory peer first), instead of starting an [`Exec`](super::engine::Exec) that the
//! background source advances. The schedule is the same, and so are the messages; what a
//! blocking call saves is the background machinery it cannot use anyway — the shared running
//! state and its lock, the request monitors, the queue pushes (and the wake-ups of a sleeping
//! progression thread they cost), the completion condition.
//!
//! Owns the blocking run; it must not choose algorithms (see `raw`).

use super::bound::{Bind, Bound, Host, Reducer};
use super::rounds::{Advance, Rounds};
use super::schedule::Schedule;
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::loom::atomic::AtomicUsize;
use std::sync::Arc;

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
    // SAFETY: our contract, passed on.
    let bound = unsafe { Bound::new(comm, seq, sched, bind, reducer) }?;
    let mut rounds = Rounds::new(bound.sched.rounds.iter().map(|r| r.deps.as_slice()));
    let mut error = None;
    // No monitor reports completions here: the waits below see them.
    let unreported = AtomicUsize::new(0);
    loop {
        let mut host = Host { bound: &bound, monitor: None, error: &mut error };
        if rounds.advance(&mut host, &unreported) == Advance::Finished {
            return Ok(error);
        }
        if let Some(q) = rounds.first_pending() {
            q.wait();
        }
    }
}
