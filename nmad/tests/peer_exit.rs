//! A peer process that sends and exits at once (a spawned MPI child leaving right after
//! `MPI_Comm_disconnect`): everything it sent is still received, after its departure is known,
//! over `shm` and `tcp`; a receive nothing can match then fails at once.
//!
//! The two processes are jobs of one each in a universe of two (as madrun's parents and the
//! children they spawn): this test binary is started again as peer 1, and they find each other's
//! business cards in a directory.

mod common;

use common::{DirJob, pattern};
use nmad::{Config, Error, Nmad, Source};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc::{RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};
use tools::secret::JobKey;

const DIR_ENV: &str = "NMAD_PEER_EXIT_DIR";
const KEY_ENV: &str = "NMAD_PEER_EXIT_KEY";
const DRIVER_ENV: &str = "NMAD_PEER_EXIT_DRIVER";
const SESSION: u32 = 3;
/// Messages the peer sends before it exits: about 3.8 MB, more than a ring or socket buffer
/// holds, so the peer waits for the receiver on the way and its last messages are in flight
/// when it exits.
const MESSAGES: u64 = 256;
/// A tag nobody sends.
const NEVER: u64 = 1 << 40;

fn len_of(i: u64) -> usize {
    (i as usize * 7919) % 30_000 + 1
}

fn start(dir: PathBuf, base: u32, key: JobKey, driver: &str) -> Nmad {
    let config = Config {
        drivers: Some(vec![driver.to_string()]),
        strategy: nmad::strategies::by_name("aggreg").unwrap(),
        eager_limit: usize::MAX,
        unexpected_budget: 64 << 20,
        rdv_slots: 64,
        rdv_writes: nmad::RdvWrites::default(),
        fallback: None,
        failover: Some(Default::default()),
    };
    common::start(DirJob { dir, base, capacity: 2, key }, config)
}

/// Ends the process if the test outlives `limit` (a receive that hangs must fail the test).
struct Watchdog(Sender<()>);

fn watchdog(what: &'static str, limit: Duration) -> Watchdog {
    let (tx, rx) = channel::<()>();
    std::thread::spawn(move || {
        if let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
            eprintln!("{what}: still running after {limit:?}: a receive hangs");
            std::process::exit(101);
        }
    });
    Watchdog(tx)
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// Not a test: peer 1 of the tests below (does nothing unless started by them). Sends every
/// message, finalizes and exits at once.
#[test]
fn exiting_peer() {
    let Ok(dir) = std::env::var(DIR_ENV) else { return };
    let key = JobKey::from_hex(&std::env::var(KEY_ENV).unwrap()).unwrap();
    let nm = start(dir.into(), 1, key, &std::env::var(DRIVER_ENV).unwrap());
    let s = nm.session(SESSION);
    for i in 0..MESSAGES {
        s.send(0, i, &pattern(i, len_of(i))).unwrap();
    }
    nm.finalize().unwrap();
    std::process::exit(0);
}

fn messages_of_an_exited_peer_are_received(driver: &'static str) {
    let _w = watchdog(driver, Duration::from_secs(60));
    let dir = std::env::temp_dir().join(format!("nmad-peer-exit-{}-{driver}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = JobKey::generate().unwrap();
    let nm = start(dir.clone(), 0, key.clone(), driver);
    let s = nm.session(SESSION);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "exiting_peer", "--nocapture", "--test-threads=1"])
        .env(DIR_ENV, &dir)
        .env(KEY_ENV, key.to_hex())
        .env(DRIVER_ENV, driver)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Receive nothing yet: only progress (what arrives waits as unexpected messages, and the
    // peer's sends go on), until the peer is gone.
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        nm.pioman().progress();
    };
    assert!(status.success(), "{driver}: the peer process failed: {status}");

    // Its departure is known: a receive from it that nothing matches fails...
    let mut none = [0u8; 8];
    match s.recv(Source::Rank(1), NEVER, &mut none) {
        Err(Error::PeerFailed { peer: 1, .. }) => {}
        r => panic!("{driver}: expected the peer's failure, got {r:?}"),
    }
    // ...but every message it sent before is received.
    for i in 0..MESSAGES {
        let mut buf = vec![0u8; 30_000];
        let st = s
            .recv(Source::Rank(1), i, &mut buf)
            .unwrap_or_else(|e| panic!("{driver}: message {i} of the exited peer: {e}"));
        assert_eq!(st.len, len_of(i) as u64, "{driver}: message {i}");
        assert!(buf[..len_of(i)] == pattern(i, len_of(i)), "{driver}: message {i} corrupted");
    }
    assert_eq!(s.unexpected_len(), 0);
    // A receive posted now fails at once, and so does a send.
    let t = Instant::now();
    match s.recv(Source::Rank(1), NEVER, &mut none) {
        Err(Error::PeerFailed { peer: 1, .. }) => {}
        r => panic!("{driver}: expected the peer's failure at once, got {r:?}"),
    }
    assert!(matches!(s.send(1, 0, b"late"), Err(Error::PeerFailed { peer: 1, .. })), "{driver}");
    assert!(t.elapsed() < Duration::from_secs(2), "{driver}: failing took {:?}", t.elapsed());
    nm.finalize().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn messages_of_a_peer_that_exits_right_after_finalize_are_received_over_shm() {
    messages_of_an_exited_peer_are_received("shm");
}

#[test]
fn messages_of_a_peer_that_exits_right_after_finalize_are_received_over_tcp() {
    messages_of_an_exited_peer_are_received("tcp");
}
