//! A one-permit parker for kernel threads (idle LWPs, spare LWPs, sentinels).
//!
//! `park` blocks the calling kernel thread until `unpark` (a permit left by an earlier `unpark` is
//! consumed at once). `unpark` costs one uncontended atomic when nobody sleeps, so wakers may call
//! it freely; only a sleeping thread costs a `futex` wake. Under loom it is a Mutex/Condvar pair.

#[cfg(not(loom))]
mod imp {
    use crate::sys::{futex_wait, futex_wake};
    use std::sync::atomic::{AtomicU32, Ordering::*};
    use std::time::Duration;

    const EMPTY: u32 = 0;
    const NOTIFIED: u32 = 1;
    const PARKED: u32 = u32::MAX;

    #[derive(Debug, Default)]
    pub(crate) struct Parker {
        state: AtomicU32,
    }

    impl Parker {
        pub(crate) fn new() -> Self {
            Parker { state: AtomicU32::new(EMPTY) }
        }

        /// Blocks until unparked or `timeout` elapsed (spurious returns are possible; callers
        /// re-check their condition).
        pub(crate) fn park(&self, timeout: Option<Duration>) {
            // NOTIFIED -> EMPTY consumes the permit; EMPTY -> PARKED announces the sleep.
            if self.state.fetch_sub(1, Acquire) == NOTIFIED {
                return;
            }
            futex_wait(&self.state, PARKED, timeout);
            self.state.swap(EMPTY, Acquire);
        }

        pub(crate) fn unpark(&self) {
            if self.state.swap(NOTIFIED, Release) == PARKED {
                futex_wake(&self.state, 1);
            }
        }
    }
}

#[cfg(loom)]
mod imp {
    use loom::sync::{Condvar, Mutex};
    use std::time::Duration;

    #[derive(Debug, Default)]
    pub(crate) struct Parker {
        permit: Mutex<bool>,
        cv: Condvar,
    }

    impl Parker {
        pub(crate) fn new() -> Self {
            Parker::default()
        }
        pub(crate) fn park(&self, _timeout: Option<Duration>) {
            let mut p = self.permit.lock().unwrap();
            while !*p {
                p = self.cv.wait(p).unwrap();
            }
            *p = false;
        }
        pub(crate) fn unpark(&self) {
            *self.permit.lock().unwrap() = true;
            self.cv.notify_one();
        }
    }
}

pub(crate) use imp::Parker;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[test]
    fn permit_makes_next_park_return() {
        let p = Parker::new();
        p.unpark();
        let t = Instant::now();
        p.park(Some(Duration::from_secs(5)));
        assert!(t.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn timeout_returns() {
        let p = Parker::new();
        let t = Instant::now();
        p.park(Some(Duration::from_millis(20)));
        assert!(t.elapsed() >= Duration::from_millis(19));
    }

    #[test]
    fn cross_thread_wake() {
        let p = Arc::new(Parker::new());
        let p2 = p.clone();
        let h = std::thread::spawn(move || {
            p2.park(None);
        });
        std::thread::sleep(Duration::from_millis(20));
        p.unpark();
        h.join().unwrap();
    }
}
