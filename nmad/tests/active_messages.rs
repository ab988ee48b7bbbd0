//! Active messages between ranks inside one process (threads as ranks, `LocalJob` bootstrap)
//! over the real shm and tcp drivers: request/reply round trips where the handler replies from
//! progression, and misuse refused.

mod common;

use nmad::drivers::PeerId;
use nmad::{AmHandler, Error, Nmad};
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

const REQUEST: u16 = 1;
const REPLY: u16 = 2;

fn ranks(drivers: &str, strategy: &str) -> Vec<Nmad> {
    common::ranks_in_process(2, drivers, strategy, 32 << 10, 1 << 20, 16)
}

fn finalize_all(nms: Vec<Nmad>) {
    let hs: Vec<_> = nms.into_iter().map(|n| std::thread::spawn(move || n.finalize().unwrap())).collect();
    for h in hs {
        h.join().unwrap();
    }
}

/// Answers each request with its header and its payload reversed, from inside the handler.
struct Replier(OnceLock<Nmad>);

impl AmHandler for Replier {
    fn on_message(&self, from: PeerId, header: &[u8], payload: &[u8]) {
        let back: Vec<u8> = payload.iter().rev().copied().collect();
        self.0.get().unwrap().send_am(from, REPLY, header, back.as_slice()).unwrap();
    }
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

fn payload_of(i: usize) -> Vec<u8> {
    (0..(i * 37) % 2000).map(|k| (k * 13 + i) as u8).collect()
}

/// Rank 0 sends `n` requests; rank 1's handler replies to each; rank 0 gets every reply, in
/// order. Rank 1 only progresses (its application never looks at the AMs).
fn round_trips(drivers: &str, n: usize) {
    let nms = ranks(drivers, "default");
    let replier = Arc::new(Replier(OnceLock::new()));
    replier.0.set(nms[1].clone()).ok().unwrap();
    nms[1].register_am(REQUEST, replier).unwrap();
    let record = Arc::new(Record::default());
    nms[0].register_am(REPLY, record.clone()).unwrap();
    let done = AtomicBool::new(false);
    std::thread::scope(|t| {
        let target = &nms[1];
        let done = &done;
        t.spawn(move || {
            while !done.load(Acquire) {
                target.pioman().progress();
            }
        });
        let end = Instant::now() + Duration::from_secs(60);
        for i in 0..n {
            nms[0].send_am(1, REQUEST, (i as u32).to_le_bytes(), payload_of(i)).unwrap();
        }
        while record.0.lock().unwrap().len() < n {
            assert!(Instant::now() < end, "{} replies of {n}", record.0.lock().unwrap().len());
            nms[0].pioman().progress();
        }
        done.store(true, Release);
    });
    for (i, (from, header, payload)) in record.0.lock().unwrap().iter().enumerate() {
        assert_eq!((*from, &header[..]), (1, &(i as u32).to_le_bytes()[..]), "reply {i}");
        assert!(payload.iter().rev().eq(payload_of(i).iter()), "reply {i}: payload");
    }
    finalize_all(nms);
}

#[test]
fn requests_get_replies_from_the_handler_over_shm() {
    round_trips("shm", 300);
}

#[test]
fn requests_get_replies_from_the_handler_over_tcp() {
    round_trips("tcp", 300);
}

#[test]
fn misuse_is_refused() {
    let nms = ranks("shm", "default");
    let record = Arc::new(Record::default());
    nms[0].register_am(REQUEST, record.clone()).unwrap();
    assert!(matches!(nms[0].register_am(REQUEST, record), Err(Error::InvalidArgument(_))));
    let long_header = vec![0u8; nmad::wire::MAX_AM_HEADER + 1];
    assert!(matches!(
        nms[0].send_am(1, REQUEST, long_header.as_slice(), b""),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(nms[0].send_am(1, REQUEST, b"", vec![0u8; 33 << 10]), Err(Error::InvalidArgument(_))));
    finalize_all(nms);
}
