//! Loom models of the ring and of the wake protocol, on tiny rings
//! (`RUSTFLAGS="--cfg loom" cargo test -p nmad --lib --release loom`): no record is lost, torn or
//! reordered, and a context that decides to sleep is always signalled by the peer's next publish
//! it sleeps for (every one, or the urgent ones for a progression thread) or release, even while
//! contexts of the other kind come and go.
//!
//! The wake models are explored exhaustively; the ring model with at most 3 preemptions (its
//! exhaustive run takes about ten minutes and passes too). Loom does not model load buffering, so
//! the Release on the consumer's `head` (the producer must not overwrite bytes still being read)
//! is argued in `ring.rs`, not checked here.

use super::ring::test_mem::TestMem;
use super::ring::{self, Body, Producer, RingMem, Sleep, record_size};
use super::wake::{Sleeper, Sleepers};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, Ordering::*};

fn model(preemptions: Option<usize>, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = preemptions;
    b.check(f);
}

fn payload(i: u64, len: usize) -> Vec<u8> {
    (0..len).map(|k| (i as usize * 16 + k + 1) as u8).collect()
}

/// Sends one packet, spinning while the ring is full.
fn send(p: &mut Producer, m: &TestMem, data: &[u8]) {
    let size = record_size(ring::PACKET_HEADER, data.len() as u64);
    loop {
        if let Some(pos) = p.reserve(m, size, 0).unwrap() {
            m.write(pos + ring::PACKET_HEADER, data);
            p.publish(m, Body::Packet, data.len() as u64);
            return;
        }
        loom::thread::yield_now();
    }
}

/// A producer sends records of `lens` bytes through a 256-byte ring while the consumer takes
/// each with `read` (which returns its bytes) and then releases its space.
fn ring_model(lens: &'static [usize], read: fn(&TestMem, &ring::Record) -> Vec<u8>) {
    model(Some(3), move || {
        let m = Arc::new(TestMem::new(256));
        let pm = m.clone();
        let producer = loom::thread::spawn(move || {
            let mut p = Producer::new(256);
            for (i, &len) in lens.iter().enumerate() {
                send(&mut p, &pm, &payload(i as u64, len));
            }
        });
        let mut head = 0;
        for (i, &len) in lens.iter().enumerate() {
            let r = loop {
                match ring::peek(&*m, head).expect("an honest ring is never malformed") {
                    Some(r) => break r,
                    None => loom::thread::yield_now(),
                }
            };
            assert_eq!(read(&m, &r), payload(i as u64, len), "record {i} torn, changed or out of order");
            head = r.end;
            ring::release(&*m, head);
        }
        producer.join().unwrap();
        assert_eq!(ring::peek(&*m, head).unwrap(), None, "no extra record");
    });
}

#[test]
fn loom_ring_records_arrive_whole_and_in_order() {
    // 256 data bytes: at most three one-slot records in flight, so the ring wraps; the third
    // record takes two slots.
    ring_model(&[8, 48, 56, 8, 16], |m, r| {
        let mut got = vec![0; r.len as usize];
        m.read(r.payload, &mut got);
        got
    });
}

#[test]
fn loom_ring_lent_records_stay_whole_until_released() {
    // A lent packet (`receive.rs`, `RingPacket`) is read in pieces while it stays in the ring:
    // its first bytes (the core's header window), then its payload, the producer running in
    // between and wrapping around; its space is released only after the last piece.
    ring_model(&[48, 56, 40, 24], |m, r| {
        let mut got = vec![0; r.len as usize];
        let (window, rest) = got.split_at_mut(16);
        m.read(r.payload, window);
        loom::thread::yield_now();
        m.read(r.payload + 16, rest);
        got
    });
}

/// The consumer side of one ring, as the driver's link is.
struct Rx {
    m: Arc<TestMem>,
    head: u64,
}

impl Sleeper for Arc<Rx> {
    fn set_asleep(&self, how: Sleep) {
        ring::set_sleeping(&*self.m, how);
    }
    fn ready(&self) -> bool {
        ring::has_record(&*self.m, self.head)
    }
}

/// Publishes one record (`urgent` or not) and signals if the consumer sleeps for it.
fn publish_and_signal(m: &TestMem, signalled: &AtomicBool, urgent: bool) {
    let mut p = Producer::new(m.cap());
    send(&mut p, m, &[1; 8]);
    if ring::consumer_sleeping(m).wants(urgent) {
        signalled.store(true, Relaxed);
    }
}

/// A consumer that sleeps as `how` says is signalled by a publish it wants (`urgent`).
fn sleeper_is_signalled(how: Sleep, urgent: bool) {
    model(None, move || {
        let m = Arc::new(TestMem::new(256));
        let sleepers = Sleepers::new();
        sleepers.add(Arc::new(Rx { m: m.clone(), head: 0 }));
        let signalled = Arc::new(AtomicBool::new(false));
        let (pm, ps) = (m.clone(), signalled.clone());
        let producer = loom::thread::spawn(move || publish_and_signal(&pm, &ps, urgent));
        let slept = sleepers.arm(how);
        producer.join().unwrap();
        assert!(!slept || signalled.load(Relaxed), "the consumer slept and was never signalled");
    });
}

#[test]
fn loom_wake_a_sleeping_consumer_is_signalled() {
    sleeper_is_signalled(Sleep::Any, false);
    sleeper_is_signalled(Sleep::Any, true);
    sleeper_is_signalled(Sleep::Urgent, true);
}

/// A context of kind `brief` arming and leaving while another sleeps as `how` does not lower
/// the flags that one relies on (a publish it wants still signals it).
fn others_leaving_keep_the_flag(how: Sleep, brief: Sleep, urgent: bool) {
    model(None, move || {
        let m = Arc::new(TestMem::new(256));
        let sleepers = Arc::new(Sleepers::new());
        sleepers.add(Arc::new(Rx { m: m.clone(), head: 0 }));
        let signalled = Arc::new(AtomicBool::new(false));
        let (pm, ps) = (m.clone(), signalled.clone());
        let producer = loom::thread::spawn(move || publish_and_signal(&pm, &ps, urgent));
        let other = sleepers.clone();
        let passer = loom::thread::spawn(move || {
            other.arm(brief);
            other.disarm(brief);
        });
        let slept = sleepers.arm(how);
        producer.join().unwrap();
        passer.join().unwrap();
        assert!(!slept || signalled.load(Relaxed), "a disarm cleared the flag of a sleeper");
    });
}

#[test]
fn loom_wake_another_context_leaving_does_not_clear_the_flag() {
    others_leaving_keep_the_flag(Sleep::Any, Sleep::Any, false);
    others_leaving_keep_the_flag(Sleep::Any, Sleep::Urgent, false);
    others_leaving_keep_the_flag(Sleep::Urgent, Sleep::Any, true);
}

/// The producer side of a full ring, as the driver's stalled link is.
struct Tx {
    m: Arc<TestMem>,
    seen_head: u64,
}

impl Sleeper for Arc<Tx> {
    fn set_asleep(&self, how: Sleep) {
        ring::set_waiting(&*self.m, how != Sleep::Awake);
    }
    fn ready(&self) -> bool {
        ring::released(&*self.m) != self.seen_head
    }
}

#[test]
fn loom_wake_a_producer_waiting_for_space_is_signalled() {
    model(None, || {
        let m = Arc::new(TestMem::new(256));
        let mut p = Producer::new(256);
        for _ in 0..3 {
            send(&mut p, &m, &[2; 40]);
        }
        assert_eq!(p.reserve(&*m, 64, 0).unwrap(), None, "the ring is full");
        let sleepers = Sleepers::new();
        sleepers.add(Arc::new(Tx { m: m.clone(), seen_head: p.seen_head() }));
        let signalled = Arc::new(AtomicBool::new(false));
        let (cm, cs) = (m.clone(), signalled.clone());
        let consumer = loom::thread::spawn(move || {
            let r = ring::peek(&*cm, 0).unwrap().unwrap();
            ring::release(&*cm, r.end);
            assert!(ring::space_check_due(&*cm, r.end, 0));
            if ring::producer_waiting(&*cm) {
                cs.store(true, Relaxed);
            }
        });
        let slept = sleepers.arm(Sleep::Urgent);
        consumer.join().unwrap();
        assert!(!slept || signalled.load(Relaxed), "the producer slept and was never signalled");
        if !slept {
            assert!(p.reserve(&*m, 64, 0).unwrap().is_some(), "woken for space that is there");
        }
    });
}
