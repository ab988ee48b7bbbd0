//! Active messages received from a peer that speaks the wire protocol itself (process 1, over
//! the real tcp driver): one packet with two AMs for a registered handler, then one for a
//! handler process 0 never registered. Process 0, an ordinary nmad peer, must run the handler
//! on both, in order and with their bytes intact, then report the third as a protocol violation
//! by rank, fail the peer (sends to it fail at once) and close its link, which process 1 must
//! see within [`CUT_OFF_WITHIN`].
//!
//! Process 1 is this test binary started again (as in `budget_violation.rs`).

mod common;

use common::{Cut, DirJob, ERRORS, RawPeer, pattern};
use nmad::drivers::PeerId;
use nmad::wire::{Encoder, VERSION};
use nmad::{AmHandler, Config, Error, Nmad};
use std::io::IoSlice;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tools::secret::JobKey;

const DIR_ENV: &str = "NMAD_AM_DIR";
const KEY_ENV: &str = "NMAD_AM_KEY";
const BUDGET: u64 = 1 << 20;
const UNREGISTERED: u16 = 4242;
const ECHO: u16 = 7;
const CUT_OFF_WITHIN: Duration = Duration::from_secs(60);

fn env_dir_key() -> Option<(PathBuf, JobKey)> {
    let dir = std::env::var(DIR_ENV).ok()?;
    Some((dir.into(), JobKey::from_hex(&std::env::var(KEY_ENV).unwrap()).unwrap()))
}

/// Not a test: process 1 (does nothing unless started by the test below). Sends two AMs for
/// [`ECHO`] and one for [`UNREGISTERED`] to process 0 in one packet, then waits until its link
/// fails.
#[test]
fn am_sender() {
    let Some((dir, key)) = env_dir_key() else { return };
    let RawPeer { link, tcp } = RawPeer::connect(&dir, key, 1, 2, BUDGET);
    let mut packet = vec![VERSION];
    for (i, header) in [&b"first"[..], b"second"].into_iter().enumerate() {
        let payload = pattern(i as u64, 40 + i);
        Encoder(&mut packet).am(ECHO, header, payload.len());
        packet.extend_from_slice(&payload);
    }
    Encoder(&mut packet).am(UNREGISTERED, b"", 0);
    let (start, mut sent, mut sink) = (Instant::now(), false, Cut::default());
    while sink.0.is_none() {
        assert!(start.elapsed() < CUT_OFF_WITHIN, "process 0 never closed the link");
        if !sent {
            sent = matches!(link.try_send(&[IoSlice::new(&packet)]), Ok(nmad::drivers::Sent::Done));
        }
        tcp.poll(&mut sink);
    }
    std::process::exit(0);
}

/// An AM as its handler saw it: sender, header, payload.
type Received = (PeerId, Vec<u8>, Vec<u8>);

/// Records what it is given.
#[derive(Default)]
struct Record(Mutex<Vec<Received>>);

impl AmHandler for Record {
    fn on_message(&self, from: PeerId, header: &[u8], payload: &[u8]) {
        self.0.lock().unwrap().push((from, header.to_vec(), payload.to_vec()));
    }
}

#[test]
fn active_messages_run_their_handler_in_order_and_an_unregistered_one_fails_the_sender() {
    if log::set_logger(&ERRORS).is_ok() {
        log::set_max_level(log::LevelFilter::Error);
    }
    let dir = std::env::temp_dir().join(format!("nmad-am-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = JobKey::generate().unwrap();
    let config = Config {
        drivers: Some(vec!["tcp".into()]),
        strategy: nmad::strategies::by_name("aggreg").unwrap(),
        eager_limit: usize::MAX,
        unexpected_budget: BUDGET,
        rdv_slots: 16,
        rdv_writes: nmad::RdvWrites::default(),
        fallback: None,
        failover: Some(Default::default()),
    };
    let nm: Nmad = common::start(DirJob { dir: dir.clone(), base: 0, capacity: 2, key: key.clone() }, config);
    let record = Arc::new(Record::default());
    nm.register_am(ECHO, record.clone()).unwrap();
    assert!(matches!(nm.register_am(ECHO, Arc::new(Record::default())), Err(Error::InvalidArgument(_))));
    let mut sender = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "am_sender", "--nocapture", "--test-threads=1"])
        .env(DIR_ENV, &dir)
        .env(KEY_ENV, key.to_hex())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(st) = sender.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < end, "the AM sender still runs after 2 minutes");
        nm.pioman().progress();
    };
    assert!(status.success(), "the AM sender did not see its link fail: {status}");
    while record.0.lock().unwrap().len() < 2 {
        assert!(Instant::now() < end, "the handler did not run twice: {:?}", record.0.lock().unwrap());
        nm.pioman().progress();
    }
    let got = record.0.lock().unwrap().clone();
    let want: Vec<Received> =
        vec![(1, b"first".to_vec(), pattern(0, 40)), (1, b"second".to_vec(), pattern(1, 41))];
    assert_eq!(got, want);
    let errors = ERRORS.taken();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("peer 1 broke the protocol") && e.contains("unregistered handler 4242")),
        "no error names the AM sender: {errors:?}"
    );
    assert!(matches!(nm.session(0).send(1, 0, b"x"), Err(Error::PeerFailed { peer: 1, .. })));
    nm.finalize().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
