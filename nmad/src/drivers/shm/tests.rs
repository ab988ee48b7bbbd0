//! A hostile peer writing into the shared rings: every kind of malformed record fails that link
//! (with `InvalidData`, reported to the sink, learnt by the peer) and nothing else; the driver
//! keeps serving other peers.

use super::ring::{KIND_BULK, KIND_PACKET, RingMem, Word};
use super::*;
use crate::drivers::conformance::Recorder;
use crate::drivers::{Sent, node_id};
use std::io::IoSlice;
use std::time::{Duration, Instant};
use tools::secret::JobKey;

fn drivers(n: u32) -> Vec<Arc<ShmDriver>> {
    let key = JobKey::generate().unwrap();
    (0..n)
        .map(|rank| {
            let env = DriverEnv { rank, size: n, job_key: key.clone(), node: node_id(), single_node: false };
            ShmDriver::with_options(&env, ShmOptions::default()).unwrap()
        })
        .collect()
}

/// Connects `from` to `to` (rank `peer`) and returns the internal link, so the test can write
/// into the ring `to` reads.
fn dial(from: &ShmDriver, to: &ShmDriver, peer: PeerId) -> Arc<ShmLink> {
    let name = card_name(&to.card, to.node()).unwrap();
    let link = setup::dial(&from.shared.local, peer, name).unwrap();
    from.shared.add_link(&link);
    link
}

fn pump(d: &ShmDriver, r: &mut Recorder, what: &str, done: impl Fn(&Recorder) -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !done(r) {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        d.poll(r);
    }
}

/// Each hostile write, and the words the failure must mention.
type Garbage = fn(&dyn RingMem);
const CASES: [(&str, Garbage, &str); 5] = [
    ("a wrong stamp", |m| m.store(Word::Data(0), 0xdead_beef, Relaxed), "stamp"),
    (
        "an unknown kind",
        |m| {
            m.store(Word::Data(8), 9 << 32 | 4, Relaxed);
            m.store(Word::Data(0), 1, Release);
        },
        "kind",
    ),
    (
        "a huge length",
        |m| {
            m.store(Word::Data(8), KIND_PACKET << 32 | 0xffff_fff0, Relaxed);
            m.store(Word::Data(0), 1, Release);
        },
        "too long",
    ),
    (
        "a bulk offset that overflows",
        |m| {
            m.store(Word::Data(16), 7, Relaxed);
            m.store(Word::Data(24), u64::MAX - 5, Relaxed);
            m.store(Word::Data(8), KIND_BULK << 32 | 100, Relaxed);
            m.store(Word::Data(0), 1, Release);
        },
        "overflows",
    ),
    (
        "a wrong stamp after a good packet",
        |m| {
            m.store(Word::Data(8), KIND_PACKET << 32 | 5, Relaxed);
            m.write(16, b"hello");
            m.store(Word::Data(0), 1, Release);
            m.store(Word::Data(64), 3, Release);
        },
        "stamp",
    ),
];

#[test]
fn malformed_records_fail_the_link_and_nothing_else() {
    for (what, garbage, words) in CASES {
        let d = drivers(3);
        let (a, b, c) = (&d[0], &d[1], &d[2]);
        let ab = dial(a, b, 1);
        let mut rb = Recorder::default();
        pump(b, &mut rb, "the hostile link", |r| r.links.len() == 1);
        garbage(ab.out_ring());
        pump(b, &mut rb, what, |r| !r.failed.is_empty());
        assert_eq!(rb.failed, [(0, io::ErrorKind::InvalidData)], "{what}");
        let msg = rb.links[0].try_send(&[IoSlice::new(b"x")]).unwrap_err().to_string();
        assert!(msg.contains(words), "{what}: `{msg}` should mention {words}");
        let good_first = what.contains("good packet");
        assert_eq!(rb.packets.len(), good_first as usize, "{what}: only the good packet");
        // The hostile side learns it through the closed socket.
        let mut ra = Recorder::default();
        pump(a, &mut ra, "the hostile side noticing", |r| !r.failed.is_empty());
        assert!(ab.try_send(&[IoSlice::new(b"x")]).is_err());
        // The driver carries on with other peers.
        let cb = c.connect(1, &b.card()).unwrap();
        assert_eq!(cb.try_send(&[IoSlice::new(b"still here")]).unwrap(), Sent::Done);
        pump(b, &mut rb, "a packet from another peer", |r| r.packets.iter().any(|(from, _)| *from == 2));
    }
}

#[test]
fn a_corrupt_consumer_index_fails_the_sender() {
    let d = drivers(2);
    let (a, b) = (&d[0], &d[1]);
    let ab = dial(a, b, 1);
    let mut rb = Recorder::default();
    pump(b, &mut rb, "the link", |r| r.links.len() == 1);
    // As if b wrote nonsense into the index a reads when its ring seems full.
    ab.out_ring().store(Word::Head, 1 << 40, Release);
    let data = [0u8; 4000];
    let err = loop {
        match ab.try_send(&[IoSlice::new(&data)]) {
            Ok(Sent::Done) => {}
            Ok(Sent::Busy) => panic!("busy: the corrupt index went unnoticed"),
            Err(e) => break e,
        }
    };
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("consumer index"), "{err}");
    let mut ra = Recorder::default();
    a.poll(&mut ra);
    assert_eq!(ra.failed, [(1, io::ErrorKind::InvalidData)]);
}

#[test]
fn cards_of_other_nodes_or_malformed_are_not_reached() {
    let d = drivers(1);
    let card = d[0].card();
    let (node, name) = card.rsplit_once(',').unwrap();
    assert!(d[0].reaches(&card));
    assert!(!d[0].reaches(&format!("other{node},{name}")), "another node");
    assert!(!d[0].reaches(&format!("{node},{name}/../x")), "odd characters");
    assert!(!d[0].reaches(&format!("{node},tcp.{name}")), "not a shm socket name");
    assert!(!d[0].reaches(node), "no name");
    assert!(d[0].connect(1, "garbage").is_err());
}

/// Whether `fd` (an eventfd) was signalled, without waiting.
fn signalled(fd: std::os::fd::RawFd) -> bool {
    let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd; no wait.
    unsafe { libc::poll(&mut pfd, 1, 0) == 1 }
}

/// A context asleep for urgent packets only is not signalled by a lazy one, is by an urgent one
/// and when its peer's ring is full; one asleep for everything is signalled by a lazy one too.
#[test]
fn a_sleeper_for_urgent_packets_is_signalled_only_for_them() {
    let d = drivers(2);
    let (a, b) = (&d[0], &d[1]);
    let ab = dial(a, b, 1);
    let mut rb = Recorder::default();
    pump(b, &mut rb, "the link", |r| r.links.len() == 1);
    let fd = b.wait_fd().unwrap();
    while b.poll(&mut rb) > 0 {}
    assert!(b.arm_for_urgent(), "nothing pending");
    assert_eq!(ab.try_send_lazy(&[IoSlice::new(b"lazy")]).unwrap(), Sent::Done);
    assert!(!signalled(fd), "a lazy packet woke a sleeper for urgent ones");
    assert_eq!(ab.try_send(&[IoSlice::new(b"urgent")]).unwrap(), Sent::Done);
    assert!(signalled(fd), "an urgent packet did not wake it");
    b.disarm_for_urgent();
    pump(b, &mut rb, "both packets", |r| r.packets.len() == 2);
    assert!(b.arm(), "nothing pending");
    assert_eq!(ab.try_send_lazy(&[IoSlice::new(b"lazy")]).unwrap(), Sent::Done);
    assert!(signalled(fd), "a lazy packet did not wake a sleeper for everything");
    b.disarm();
    pump(b, &mut rb, "the third packet", |r| r.packets.len() == 3);
    // Lazy packets left unread fill the ring: the stall signals the sleeper.
    assert!(b.arm_for_urgent(), "nothing pending");
    let data = [7u8; 8000];
    let mut n = 0;
    while ab.try_send_lazy(&[IoSlice::new(&data)]).unwrap() == Sent::Done {
        assert!(!signalled(fd), "lazy packet {n} woke it");
        n += 1;
    }
    assert!(signalled(fd), "a full ring did not wake the sleeper for urgent packets");
    b.disarm_for_urgent();
    pump(b, &mut rb, "the ring's packets", |r| r.packets.len() == 3 + n);
}
