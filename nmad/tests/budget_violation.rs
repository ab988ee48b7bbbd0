//! A peer that ignores its credit: process 2 speaks the wire protocol itself over the real tcp
//! driver and sends 60 KB messages for a session that does not exist, as fast as it can and
//! regardless of credit (1 MiB), while process 1, an ordinary nmad peer, exchanges messages with
//! process 0. Process 0 must report process 2, fail it and close its connection, hold no more
//! than the budget allows (its counters, and its resident memory), and receive every message of
//! process 1 intact; process 2 must see its link fail (`link_failed`) within
//! [`CUT_OFF_WITHIN`] instead of flooding forever.
//!
//! The three processes are jobs of one in a universe of three (as in `peer_exit.rs`): this test
//! binary is started again as processes 1 and 2, which find the business cards in a directory.

mod common;

use common::{Cut, DirJob, ERRORS, RawPeer, pattern};
use nmad::drivers::Sent;
use nmad::wire::{Encoder, MsgHeader, VERSION};
use nmad::{Config, Data, Error, Nmad, Request, SendMode, Source};
use std::io::IoSlice;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tools::secret::JobKey;

const DIR_ENV: &str = "NMAD_BUDGET_DIR";
const KEY_ENV: &str = "NMAD_BUDGET_KEY";
const SESSION: u32 = 3;
/// A session nobody creates.
const NOWHERE: u32 = 999;
const BUDGET: u64 = 1 << 20;
const FLOOD_LEN: usize = 60_000;
/// How long the flooding peer may go on before it sees process 0 cut it off (it happens once
/// process 0 received 1 MiB beyond the credit: well under a second on an idle machine).
const CUT_OFF_WITHIN: Duration = Duration::from_secs(60);
/// Messages of the honest peer, and the tags of process 0's go-ahead and answer.
const MESSAGES: u64 = 200;
const GO: u64 = 1 << 30;
const ANSWER: u64 = GO + 1;

fn len_of(i: u64) -> usize {
    (i as usize * 7919) % 20_000 + 1
}

fn start(dir: PathBuf, base: u32, key: JobKey) -> Nmad {
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
    common::start(DirJob { dir, base, capacity: 3, key }, config)
}

fn env_dir_key() -> Option<(PathBuf, JobKey)> {
    let dir = std::env::var(DIR_ENV).ok()?;
    Some((dir.into(), JobKey::from_hex(&std::env::var(KEY_ENV).unwrap()).unwrap()))
}

/// Not a test: process 1 (does nothing unless started by the test below). Sends its messages
/// once process 0 says go, then waits for its answer.
#[test]
fn honest_peer() {
    let Some((dir, key)) = env_dir_key() else { return };
    let nm = start(dir, 1, key);
    let s = nm.session(SESSION);
    s.recv(Source::Rank(0), GO, &mut []).unwrap();
    for i in 0..MESSAGES {
        s.send(0, i, &pattern(i, len_of(i))).unwrap();
    }
    let mut answer = [0u8; 8];
    s.recv(Source::Rank(0), ANSWER, &mut answer).unwrap();
    assert_eq!(answer, MESSAGES.to_le_bytes());
    nm.finalize().unwrap();
    std::process::exit(0);
}

/// Not a test: process 2. Publishes a card as nmad would, connects to process 0 with the tcp
/// driver and floods it with DATA chunks for a session that does not exist, ignoring credit,
/// until its driver reports the link failed; fails if that takes longer than [`CUT_OFF_WITHIN`].
#[test]
fn flooding_peer() {
    let Some((dir, key)) = env_dir_key() else { return };
    let RawPeer { link, tcp } = RawPeer::connect(&dir, key, 2, 3, BUDGET);
    let payload = vec![0x5au8; FLOOD_LEN];
    let mut packet = Vec::new();
    let mut sink = Cut::default();
    let (start, mut seq, mut refused) = (Instant::now(), 0u32, None);
    while sink.0.is_none() {
        assert!(
            start.elapsed() < CUT_OFF_WITHIN,
            "still flooding after {CUT_OFF_WITHIN:?} ({seq} messages sent): process 0 never closed the link"
        );
        packet.clear();
        packet.push(VERSION);
        let h = MsgHeader { flags: 0, session: NOWHERE, tag: 1, seq };
        Encoder(&mut packet).data(&h, FLOOD_LEN, 0);
        packet.extend_from_slice(&payload);
        match link.try_send(&[IoSlice::new(&packet)]) {
            Ok(Sent::Done) => seq = seq.wrapping_add(1),
            Ok(Sent::Busy) => {}
            Err(e) => _ = refused.get_or_insert(e),
        }
        tcp.poll(&mut sink);
    }
    // On stderr: the test's parent shows it (stdout goes nowhere).
    eprintln!(
        "flooding peer: cut off after {seq} messages ({} B) in {:?}: {}; sending refused: {refused:?}",
        u64::from(seq) * FLOOD_LEN as u64,
        start.elapsed(),
        sink.0.unwrap()
    );
    std::process::exit(0);
}

/// Resident memory of this process now and at most so far (bytes).
fn rss() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb = |name: &str| -> u64 {
        let line = status.lines().find(|l| l.starts_with(name)).unwrap();
        line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
    };
    (kb("VmRSS:"), kb("VmHWM:"))
}

fn child(dir: &Path, key: &JobKey, role: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", role, "--nocapture", "--test-threads=1"])
        .env(DIR_ENV, dir)
        .env(KEY_ENV, key.to_hex())
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn a_peer_flooding_beyond_its_credit_is_cut_off_and_the_others_go_on() {
    if log::set_logger(&ERRORS).is_ok() {
        log::set_max_level(log::LevelFilter::Error);
    }
    let dir = std::env::temp_dir().join(format!("nmad-budget-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = JobKey::generate().unwrap();
    let nm = start(dir.clone(), 0, key.clone());
    let s = nm.session(SESSION);
    let mut honest = child(&dir, &key, "honest_peer");
    let end = Instant::now() + Duration::from_secs(120);
    while !dir.join("nmad-cards-1").exists() {
        assert!(Instant::now() < end, "the honest peer did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Every receive of the honest peer is posted first: its messages never wait unexpected, so
    // what process 0 holds unexpected is what the flooding peer made it hold.
    let mut bufs: Vec<Vec<u8>> = (0..MESSAGES).map(|i| vec![0u8; len_of(i)]).collect();
    let reqs: Vec<Pin<Box<Request>>> = (0..MESSAGES).map(|_| Box::pin(Request::new())).collect();
    for (i, (b, r)) in bufs.iter_mut().zip(&reqs).enumerate() {
        // SAFETY: the buffers outlive the requests' completion (waited for below).
        unsafe { s.irecv(Source::Rank(1), i as u64, Data::from_raw(b.as_mut_ptr(), b.len()), r.as_ref()) }
            .unwrap();
    }
    let (rss_before, _) = rss();
    let mut flooder = child(&dir, &key, "flooding_peer");
    s.send(1, GO, &[]).unwrap();

    let flooded = loop {
        if let Some(st) = flooder.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < end, "the flooding peer still runs after 2 minutes");
        nm.pioman().progress();
    };
    assert!(flooded.success(), "the flooding peer did not see its link fail: {flooded}");
    for (i, r) in reqs.iter().enumerate() {
        while !r.test() {
            assert!(Instant::now() < end, "message {i} of the honest peer did not arrive");
            nm.pioman().progress();
        }
        let st = r.result().unwrap().unwrap_or_else(|e| panic!("message {i} of the honest peer: {e}"));
        assert_eq!(st.len, len_of(i as u64) as u64);
        assert!(bufs[i] == pattern(i as u64, len_of(i as u64)), "message {i} of the honest peer corrupted");
    }
    s.send_mode(1, ANSWER, &MESSAGES.to_le_bytes(), SendMode::default()).unwrap();
    assert!(honest.wait().unwrap().success(), "the honest peer failed");
    let (_, rss_peak) = rss();

    // Within the budget: by the counters exactly, by the resident memory roughly (the tcp
    // driver's buffers and the allocator's slack come on top; without the check it grew by
    // everything flooded).
    let st = nm.stats();
    println!(
        "flood cut off: peak unexpected {} B (budget {} B), now {} B; resident memory grew by {} B at most",
        st.peak_unexpected_bytes,
        st.budget,
        st.unexpected_bytes,
        rss_peak.saturating_sub(rss_before)
    );
    // Reported, naming the peer.
    let errors = ERRORS.taken();
    assert!(
        errors.iter().any(|e| e.contains("peer 2 broke the protocol") && e.contains("beyond its credit")),
        "no error names the flooding peer: {errors:?}"
    );
    // Cut off as a dead peer: receives from it and sends to it fail at once.
    let mut none = [0u8; 8];
    assert!(matches!(s.recv(Source::Rank(2), 0, &mut none), Err(Error::PeerFailed { peer: 2, .. })));
    assert!(matches!(s.send(2, 0, b"x"), Err(Error::PeerFailed { peer: 2, .. })));
    assert!(st.peak_unexpected_bytes <= st.budget, "{st:?}");
    assert_eq!(st.unexpected_bytes, 0, "what the flooding peer made process 0 hold is released");
    assert!(rss_peak.saturating_sub(rss_before) < BUDGET + (8 << 20), "{rss_before} -> {rss_peak}");
    nm.finalize().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
