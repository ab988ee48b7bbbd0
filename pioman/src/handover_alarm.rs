//! The handover's alarm: when a progression thread asked for the handover (it stands back while
//! the application waits in the library: `threads::stand_back`), the last waiter to leave arms
//! its node's alarm to ring [`APP_QUIET`](crate::threads::APP_QUIET) later, and the thread,
//! asleep on it, then takes the sources over if the application stayed out.
//!
//! The waiter used to unpark the thread at once. On the application's one CPU the thread runs at
//! nice −10, so it preempted the application just as it returned from its wait — only to wait
//! out `APP_QUIET` before taking over anyway. In a ping-pong with gaps (madbench `reactivity`,
//! an idle receiver) that was one reply every few milliseconds 3–5 µs late. Armed, the alarm
//! costs the leaving waiter one `timerfd_settime`, and the thread wakes while the application
//! computes (which is when the handover is for) or, if it came back, stands back again.
//!
//! Owns one timerfd per NUMA node; it must not decide when the thread asks (`threads`) nor
//! count the waiters (`waiters`).

use crate::waitset::Doorbell;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

pub(crate) struct HandoverAlarm {
    fd: OwnedFd,
}

impl HandoverAlarm {
    pub(crate) fn new() -> io::Result<HandoverAlarm> {
        // SAFETY: timerfd_create takes a clock id and flags; a non-negative return is our fd.
        let fd =
            unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh fd owned by nobody else.
        Ok(HandoverAlarm { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    /// Rings once, `after` from now (a later arming replaces an earlier one).
    pub(crate) fn arm(&self, after: Duration) {
        let after = after.max(Duration::from_nanos(1)); // zero would disarm it
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: after.subsec_nanos() as _,
            },
        };
        // SAFETY: our timerfd, a valid itimerspec read during the call, no old value asked for.
        // It fails only on invalid arguments, which these are not.
        unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
    }

    /// Sleeps until the alarm or `bell` rings, or `timeout`; resets what rang. `true` if the
    /// alarm did.
    pub(crate) fn wait(&self, bell: &Doorbell, timeout: Duration) -> bool {
        let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as i32;
        let mut fds = [
            libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: bell.raw(), events: libc::POLLIN, revents: 0 },
        ];
        // SAFETY: two valid pollfds on fds we hold for the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
        if n <= 0 {
            return false;
        }
        if fds[1].revents != 0 {
            bell.drain();
        }
        if fds[0].revents == 0 {
            return false;
        }
        let mut expirations: u64 = 0;
        // SAFETY: reads 8 bytes into a local u64 from our non-blocking timerfd.
        unsafe { libc::read(self.fd.as_raw_fd(), (&mut expirations as *mut u64).cast(), 8) };
        true
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn the_alarm_rings_once_after_its_delay_and_the_bell_wakes_too() {
        let alarm = HandoverAlarm::new().unwrap();
        let bell = Doorbell::new().unwrap();
        assert!(!alarm.wait(&bell, Duration::from_millis(5)), "not armed");
        let t = Instant::now();
        alarm.arm(Duration::from_millis(20));
        assert!(alarm.wait(&bell, Duration::from_secs(5)));
        assert!(t.elapsed() >= Duration::from_millis(19), "{:?}", t.elapsed());
        assert!(!alarm.wait(&bell, Duration::from_millis(5)), "reset once rung");
        bell.ring();
        let t = Instant::now();
        assert!(!alarm.wait(&bell, Duration::from_secs(5)), "the bell is no alarm");
        assert!(t.elapsed() < Duration::from_secs(1));
    }
}
