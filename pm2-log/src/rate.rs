//! Rate-limited notes: an event that may repeat without bound (a stranger knocking, a peer
//! sending garbage, `accept` failing for want of descriptors) speaks at most once per interval,
//! with the count of what happened since it last spoke. Owns only its counters; what is said,
//! and at which level, is the caller's.

use std::fmt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::time::{Duration, Instant};

/// One kind of repeated event. Usually a `static` beside the code that notes it:
///
/// ```
/// use pm2_log::RateLimited;
/// use std::time::Duration;
///
/// static REJECTED: RateLimited = RateLimited::new(Duration::from_secs(5));
/// # let addr = "127.0.0.1:4321";
/// REJECTED.note(|n| log::warn!("rejected a connection from {addr}{}", pm2_log::repeats(n)));
/// ```
pub struct RateLimited {
    interval: Duration,
    /// Events since the last message.
    pending: AtomicU64,
    /// When the last message was written, in nanoseconds since [`epoch`] plus one (0: never).
    last: AtomicU64,
}

impl RateLimited {
    pub const fn new(interval: Duration) -> RateLimited {
        RateLimited { interval, pending: AtomicU64::new(0), last: AtomicU64::new(0) }
    }

    /// Counts one event and, if the interval has passed since the last message (or there was
    /// none), calls `say` with the number of events since then, this one included. One caller
    /// wins when several threads race at the end of an interval. Returns whether `say` ran.
    pub fn note(&self, say: impl FnOnce(u64)) -> bool {
        self.note_at(epoch().elapsed(), say)
    }

    /// [`RateLimited::note`] at time `at` since [`epoch`].
    fn note_at(&self, at: Duration, say: impl FnOnce(u64)) -> bool {
        self.pending.fetch_add(1, AcqRel);
        let now = at.as_nanos().min(u128::from(u64::MAX - 1)) as u64 + 1;
        let last = self.last.load(Acquire);
        let due = last == 0 || u128::from(now - last.min(now)) >= self.interval.as_nanos();
        if !due || self.last.compare_exchange(last, now, AcqRel, Acquire).is_err() {
            return false;
        }
        // A racing winner of the previous interval may have taken our event with its count.
        say(self.pending.swap(0, AcqRel).max(1));
        true
    }
}

/// A process-wide origin for [`RateLimited`]'s clock (so that `new` can be `const`).
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// The suffix for a message that stands for `count` events: nothing for one, else
/// ` (N times since the last report)`.
pub fn repeats(count: u64) -> impl fmt::Display {
    Repeats(count)
}

struct Repeats(u64);

impl fmt::Display for Repeats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 | 1 => Ok(()),
            n => write!(f, " ({n} times since the last report)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_first_event_speaks_then_the_rest_are_counted_until_the_interval_ends() {
        let r = RateLimited::new(Duration::from_secs(5));
        let mut said = Vec::new();
        let at = |ms| Duration::from_millis(ms);
        assert!(r.note_at(at(1000), |n| said.push(n)));
        for t in 0..9 {
            assert!(!r.note_at(at(1000 + t * 500), |n| said.push(n)));
        }
        assert_eq!(said, [1]);
        assert!(r.note_at(at(6000), |n| said.push(n)));
        assert_eq!(said, [1, 10], "nine counted in the interval, plus the one that speaks");
        assert!(!r.note_at(at(10_999), |n| said.push(n)));
        assert!(r.note_at(at(11_000), |n| said.push(n)));
        assert_eq!(said, [1, 10, 2]);
    }

    #[test]
    fn a_zero_interval_speaks_every_time() {
        let r = RateLimited::new(Duration::ZERO);
        let mut said = Vec::new();
        for _ in 0..3 {
            r.note(|n| said.push(n));
        }
        assert_eq!(said, [1, 1, 1]);
    }

    #[test]
    fn racing_threads_lose_no_event_and_one_speaks_per_interval() {
        let r = Arc::new(RateLimited::new(Duration::from_secs(3600)));
        let spoken = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (r, spoken) = (r.clone(), spoken.clone());
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        r.note(|n| {
                            spoken.fetch_add(n, Relaxed);
                        });
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        // One message within the hour; the other events wait in the count.
        assert!(spoken.load(Relaxed) >= 1);
        assert_eq!(spoken.load(Relaxed) + r.pending.load(Relaxed), 4000);
    }

    #[test]
    fn repeats_says_nothing_for_one() {
        assert_eq!(repeats(1).to_string(), "");
        assert_eq!(repeats(812).to_string(), " (812 times since the last report)");
    }
}
