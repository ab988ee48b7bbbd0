//! Waiting for the first of several requests to complete (`MPI_Waitany`, `MPI_Waitsome`,
//! `MPI_Waitall` over a receive from any source, and the Rust API's
//! [`wait_any`](crate::request::wait_any)).
//!
//! pioman waits on one condition at a time, so a wait on several requests alternates two
//! phases: a short spin that drives progress and looks at every request after each pass, then
//! a nap in pioman's wait on one of the requests (in turn), which drives progress or sleeps as
//! the policy says and ends when that request completes or the nap is over. Naps double from
//! [`FIRST_NAP`] to [`LONGEST_NAP`]: a request other than the one slept on is seen at most that
//! late, and an idle wait costs one wake-up per [`LONGEST_NAP`], not a spinning core.
//!
//! Generalized requests also signal a condition of the wait's own (`kinds::Watch`), which it then
//! sleeps on: a thread completing one (`MPI_Grequest_complete`) wakes it at once, and a wait on
//! generalized requests alone sleeps until then.
//!
//! A receive from `MPI_ANY_SOURCE` under ULFM's rule ([`wait_any_or_failure_pending`]) is the
//! one napped on: nmad signals [`nmad::PEER_LOST`] on its condition when a peer fails, which
//! ends the nap at once, and the wait returns if that failure stops the receive.
//!
//! Owns nothing; it must not touch nmad's internals (it uses requests' conditions only).

use crate::request::RawRequest;
use std::time::Duration;

/// Progress passes before the first nap.
const SPIN_ROUNDS: u32 = 64;
/// The first nap.
pub const FIRST_NAP: Duration = Duration::from_micros(20);
/// The longest nap: the worst delay before a completion is noticed once waiting has gone idle.
pub const LONGEST_NAP: Duration = Duration::from_millis(1);

/// Waits until at least one of `reqs` has completed; returns at once if one has, or if `reqs`
/// is empty.
pub fn wait_any_complete(reqs: &[&RawRequest]) {
    wait_for(reqs, false);
}

/// Waits until at least one of `reqs` has completed or ULFM's rule stops the wait on one of
/// them (a receive from any source while a member of its communicator is known failed and not
/// acknowledged: [`RawRequest::failure_pending`]); `true` if stopped that way (nothing
/// completed). Woken by the failure itself (nmad signals [`nmad::PEER_LOST`] on the receive),
/// not by the naps.
pub fn wait_any_or_failure_pending(reqs: &[&RawRequest]) -> bool {
    wait_for(reqs, true)
}

/// The wait of [`wait_any_complete`] and, with `ulfm`, [`wait_any_or_failure_pending`].
fn wait_for(reqs: &[&RawRequest], ulfm: bool) -> bool {
    let stopped = || ulfm && reqs.iter().any(|r| r.failure_pending().is_some());
    // A poke first: generalized requests with a poll callback progress only when polled.
    let done = || {
        reqs.iter().for_each(|r| r.poke());
        reqs.iter().any(|r| r.is_complete())
    };
    let Some(first) = reqs.first() else { return false };
    let pio = first.pioman();
    for _ in 0..SPIN_ROUNDS {
        if done() {
            return false;
        }
        if stopped() {
            return true;
        }
        pio.progress();
    }
    let mut nap = FIRST_NAP;
    let mut turn = 0;
    let watch = super::Watch::new(reqs);
    // Napping on a receive under the rule, the wait wakes as soon as a peer fails.
    let any_source = || {
        let watched = |r: &&RawRequest| r.under_any_source_rule() && !r.is_complete();
        if ulfm { reqs.iter().copied().find(watched) } else { None }
    };
    while !done() {
        if let Some(r) = any_source() {
            // Re-armed before the check: a failure found after it signals again.
            r.cond().clear(nmad::PEER_LOST);
            if stopped() {
                return true;
            }
            pio.wait_timeout(r.cond(), nmad::COMPLETED | nmad::PEER_LOST, nap);
            nap = (nap * 2).min(LONGEST_NAP);
            continue;
        }
        if let Some(w) = &watch {
            w.nap(pio, nap);
            nap = (nap * 2).min(LONGEST_NAP);
            continue;
        }
        let Some(r) = (0..reqs.len()).map(|k| reqs[(turn + k) % reqs.len()]).find(|r| !r.is_complete())
        else {
            return false;
        };
        turn += 1;
        pio.wait_timeout(r.cond(), nmad::COMPLETED, nap);
        nap = (nap * 2).min(LONGEST_NAP);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::p2p::{From, Rank, Tag};
    use crate::testing::on_all;
    use nmad::Data;
    use std::time::Instant;

    /// Rank 0 waits on three receives; rank 1 sends to the last one only, late: the wait ends
    /// with that one, and under a policy that never spins (`block`), waiting idle did not take a
    /// core: the naps sleep (the waiting thread's CPU time is well below the wall time). The
    /// default policy spins instead while nothing else wants the CPU (see pioman's `own_cpu`).
    #[test]
    fn waits_for_whichever_completes_without_spinning() {
        on_all(2, |w| {
            if w.rank() == 1 {
                std::thread::sleep(Duration::from_millis(300));
                w.send(&[7u32; 4], Rank::Rank(0), 2).unwrap();
                let mut go = [0u8; 1];
                w.recv(&mut go, From::Rank(0), Tag::Tag(9)).unwrap();
                return;
            }
            let mut bufs = [[0u32; 4]; 3];
            let reqs: Vec<RawRequest> = bufs
                .iter_mut()
                .enumerate()
                .map(|(t, b)| {
                    // SAFETY: `bufs` outlives the requests (dropped, cancelled, below).
                    let d = unsafe { Data::from_raw(b.as_mut_ptr().cast(), 16) };
                    // SAFETY: as above.
                    unsafe { RawRequest::irecv(&w, d, From::Rank(1), Tag::Tag(t as i32)) }.unwrap()
                })
                .collect();
            let refs: Vec<&RawRequest> = reqs.iter().collect();
            reqs[0].pioman().set_policy(std::sync::Arc::new(pioman::policy::BLOCK));
            let (t0, cpu0) = (Instant::now(), cpu_time());
            wait_any_complete(&refs);
            let (wall, cpu) = (t0.elapsed(), cpu_time() - cpu0);
            assert!(reqs[2].is_complete() && !reqs[0].is_complete() && !reqs[1].is_complete());
            assert!(wall >= Duration::from_millis(50), "{wall:?}");
            assert!(cpu < wall / 2, "waiting took {cpu:?} of CPU in {wall:?}");
            assert!(reqs[0].cancel() && reqs[1].cancel());
            wait_any_complete(&[]);
            drop(reqs);
            assert_eq!(bufs[2], [7; 4]);
            w.send(&[1u8], Rank::Rank(1), 9).unwrap();
        });
    }

    /// CPU time of the calling thread (other tests run in this process at the same time).
    fn cpu_time() -> Duration {
        let mut ru = std::mem::MaybeUninit::<libc::rusage>::uninit();
        // SAFETY: getrusage fills the struct it is given.
        let ru = unsafe {
            assert_eq!(libc::getrusage(libc::RUSAGE_THREAD, ru.as_mut_ptr()), 0);
            ru.assume_init()
        };
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        tv(ru.ru_utime) + tv(ru.ru_stime)
    }
}
