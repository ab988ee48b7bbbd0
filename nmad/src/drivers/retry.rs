//! Retrying a lazy connect: a peer whose listening socket is flooded may drop or time out our
//! first attempts (its handshake pool evicts the oldest unauthenticated connection to make
//! room), so `connect` tries again with backoff for [`CONNECT_PATIENCE`] before the peer is
//! declared failed. A refused connection (nobody listens: the peer is gone), a wrong key or a
//! wrong peer fail at once.
//!
//! It owns no state; the drivers' `connect` calls it around one whole attempt.

use std::io;
use std::time::{Duration, Instant};

/// How long `connect` keeps retrying transient failures (attempts back off from 20 ms to
/// 500 ms); an attempt started within it may take its own handshake timeout more.
pub const CONNECT_PATIENCE: Duration = Duration::from_secs(3);
const FIRST_BACKOFF: Duration = Duration::from_millis(20);
const MAX_BACKOFF: Duration = Duration::from_millis(500);

/// Whether a failed attempt may succeed if repeated: the connection was dropped or timed out
/// during setup.
pub fn transient(e: &io::Error) -> bool {
    use io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof | TimedOut | WouldBlock
    )
}

/// Runs `attempt` until it succeeds, fails for good, or [`CONNECT_PATIENCE`] is spent; the
/// last error says how many attempts were made when there were several.
pub fn with_retry<T>(mut attempt: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    let start = Instant::now();
    let mut backoff = FIRST_BACKOFF;
    let mut tries = 1;
    loop {
        match attempt() {
            Ok(t) => return Ok(t),
            Err(e) if transient(&e) && start.elapsed() + backoff < CONNECT_PATIENCE => {
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(MAX_BACKOFF);
                tries += 1;
            }
            Err(e) if tries > 1 => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("{e} (after {tries} attempts in {:.1?})", start.elapsed()),
                ));
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_failures_are_retried_others_are_not() {
        let mut n = 0;
        let r = with_retry(|| {
            n += 1;
            if n < 3 { Err(io::Error::from(io::ErrorKind::ConnectionReset)) } else { Ok(n) }
        });
        assert_eq!(r.unwrap(), 3);
        let mut n = 0;
        let e = with_retry::<()>(|| {
            n += 1;
            Err(io::Error::from(io::ErrorKind::ConnectionRefused))
        });
        assert_eq!((e.unwrap_err().kind(), n), (io::ErrorKind::ConnectionRefused, 1));
        let start = Instant::now();
        let e = with_retry::<()>(|| Err(io::Error::from(io::ErrorKind::BrokenPipe))).unwrap_err();
        assert!(start.elapsed() < CONNECT_PATIENCE + MAX_BACKOFF, "bounded");
        assert!(e.to_string().contains("attempts"), "{e}");
    }
}
