//! The timer slack of pioman's progression threads: their sleeps until the next tick may end
//! up to one scheduler tick late, so that their expiry falls on an interrupt the CPU takes
//! anyway instead of one of its own (`PIOMAN_TICK_SLACK_US`; by default 4 ms, or four ticks
//! when that is less).
//!
//! A progression thread wakes at every tick (1 ms) while the application spins in the library
//! or computes on its CPU. Each of those timer interrupts is a VM exit on a virtual machine and
//! preempts the thread running there: in a ping-pong with 200–1000 µs gaps (madbench
//! `reactivity`, an idle receiver) the 1 ms tick made one message in a hundred 15 µs late and the
//! mean 40 % longer than without progression threads; with the slack the wake-up rides on the
//! scheduler's own tick (HZ = 250: every 4 ms while the CPU is busy; an idle CPU has no tick,
//! and the timer then fires at the end of the slack). Only sleeps until a tick get the slack
//! ([`until_tick`]); the threads' other waits (the handover's short wait for the application to
//! stay out) end on time.
//!
//! Owns the calling thread's `PR_SET_TIMERSLACK` during a tick sleep; it must not touch
//! application threads'.

use std::sync::OnceLock;
use std::time::Duration;

/// The slack when `PIOMAN_TICK_SLACK_US` is not set: one scheduler tick at HZ = 250 (the
/// slowest of common kernels' configurations but 100 Hz), so that the window holds one...
const ONE_SCHEDULER_TICK: Duration = Duration::from_millis(4);
/// ...or, for a tick shorter than a quarter of that, four ticks (a research setting of 100 µs
/// keeps ticks within 500 µs).
const TICKS: u32 = 4;

/// The slack of sleeps until ticks of length `tick` (`PIOMAN_TICK_SLACK_US`, 0 keeping the
/// kernel's 50 µs).
pub(crate) fn tick_slack(tick: Duration) -> Duration {
    static SET: OnceLock<Option<Duration>> = OnceLock::new();
    let set = SET.get_or_init(|| {
        let v = std::env::var("PIOMAN_TICK_SLACK_US").ok()?;
        let us = v.trim().parse().ok();
        if us.is_none() {
            log::warn!("pioman: PIOMAN_TICK_SLACK_US={v:?} is no number of microseconds; ignored");
        }
        us.map(Duration::from_micros)
    });
    set.unwrap_or((tick * TICKS).min(ONE_SCHEDULER_TICK))
}

/// Runs `sleep`, the calling thread's sleep until its next tick (or an event), with the slack
/// of ticks of length `tick`; the thread's default slack afterwards.
pub(crate) fn until_tick<R>(tick: Duration, sleep: impl FnOnce() -> R) -> R {
    let slack = tick_slack(tick);
    if slack.is_zero() {
        return sleep();
    }
    set(slack.as_nanos().min(u64::MAX as u128) as u64);
    let r = sleep();
    set(0);
    r
}

/// `prctl(PR_SET_TIMERSLACK, ns)`: 0 restores the thread's default.
fn set(ns: u64) {
    // SAFETY: PR_SET_TIMERSLACK takes a number and affects only the calling thread; it fails
    // only on a value the kernel refuses, which leaves the slack as it was.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn current() -> u64 {
        // SAFETY: PR_GET_TIMERSLACK takes no argument and reads the calling thread's slack.
        unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) as u64 }
    }

    #[test]
    fn a_tick_sleep_has_the_slack_and_the_thread_its_default_after() {
        std::thread::spawn(|| {
            let default = current();
            let tick = Duration::from_millis(1);
            let inside = until_tick(tick, current);
            if tick_slack(tick).is_zero() {
                assert_eq!(inside, default);
            } else {
                assert_eq!(inside, tick_slack(tick).as_nanos() as u64);
            }
            assert_eq!(current(), default, "restored after it");
        })
        .join()
        .unwrap();
        assert_eq!(
            tick_slack(Duration::from_secs(5)).min(ONE_SCHEDULER_TICK),
            tick_slack(Duration::from_secs(5))
        );
    }
}
