//! The udp driver: the conformance suite (loopback, and datagrams cut to an Ethernet MTU so that
//! packets travel in fragments), then what only a datagram driver faces: strangers' datagrams
//! on both sockets, another job's key, a rank outside the job, forged link ids, a closed link.

use nmad::drivers::conformance::{self, Pair, Recorder, poll_until};
use nmad::drivers::udp::{UdpDriver, UdpOptions, wire};
use nmad::drivers::{Driver, DriverEnv, Sent, by_spec, node_id};
use std::io::{self, IoSlice};
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tools::secret::JobKey;

fn env(rank: u32, size: u32, key: &JobKey) -> DriverEnv {
    DriverEnv { rank, size, job_key: key.clone(), node: node_id(), single_node: false }
}

fn driver(rank: u32, key: &JobKey, opts: &UdpOptions) -> Arc<UdpDriver> {
    UdpDriver::new(&env(rank, 2, key), None, opts.clone()).unwrap()
}

mod conformance_suite {
    use super::*;
    fn make() -> Pair {
        let key = JobKey::generate().unwrap();
        let a = by_spec("udp", &env(0, 2, &key)).unwrap();
        let b = by_spec("udp", &env(1, 2, &key)).unwrap();
        Pair { a, b, a_rank: 0, b_rank: 1 }
    }
    nmad::driver_conformance_tests!(make);
}

/// Datagrams of an Ethernet MTU (bound to an address, not loopback's 64 KiB): every packet above
/// 1.4 KB and every bulk transfer goes in many fragments.
mod ethernet_sized_datagrams {
    use super::*;
    fn make() -> Pair {
        let key = JobKey::generate().unwrap();
        let opts = UdpOptions { datagram: Some(1472), ..UdpOptions::default() };
        let mk = |rank| -> Arc<dyn Driver> {
            UdpDriver::new(&env(rank, 2, &key), Some("127.0.0.1"), opts.clone()).unwrap()
        };
        Pair { a: mk(0), b: mk(1), a_rank: 0, b_rank: 1 }
    }
    #[test]
    fn packets_arrive_whole_and_in_order() {
        conformance::check_packets_in_order(&make());
    }
    #[test]
    fn bulk_arrives_intact() {
        conformance::check_bulk(&make());
    }
    #[test]
    fn concurrent_senders_keep_their_order() {
        conformance::check_concurrent_senders(&make());
    }
}

#[test]
fn closing_one_link_cuts_that_peer_off_only() {
    let key = JobKey::generate().unwrap();
    let mk = |rank| by_spec("udp", &env(rank, 3, &key)).unwrap();
    let (a, b, c) = (mk(0), mk(1), mk(2));
    conformance::check_close(
        &Pair { a: a.clone(), b, a_rank: 0, b_rank: 1 },
        &Pair { a, b: c, a_rank: 0, b_rank: 2 },
    );
}

/// The handshake port and the data port of `d` on loopback.
fn ports(d: &UdpDriver) -> (SocketAddr, SocketAddr) {
    let hs: u16 = d.card().split(',').nth(1).unwrap().parse().unwrap();
    let data = d.data_addr().unwrap().port();
    (SocketAddr::from(([127, 0, 0, 1], hs)), SocketAddr::from(([127, 0, 0, 1], data)))
}

#[test]
fn strangers_datagrams_are_dropped_and_counted_and_the_driver_carries_on() {
    let key = JobKey::generate().unwrap();
    let opts = UdpOptions { handshake_timeout: Duration::from_secs(1), ..UdpOptions::default() };
    let b = driver(1, &key, &opts);
    let (hs, data) = ports(&b);
    let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
    stranger.send_to(b"GET / HTTP/1.1\r\n\r\n", hs).unwrap();
    stranger.send_to(b"GET / HTTP/1.1\r\n\r\n", data).unwrap();
    // A well-formed DATA datagram naming rank 0 and a guessed link id.
    let mut forged = Vec::new();
    wire::Data::encode_head(
        &wire::Header { kind: wire::KIND_DATA, from: 0, link_id: 1 },
        0,
        1,
        wire::FIRST | wire::LAST,
        None,
        None,
        &mut forged,
    );
    forged.extend_from_slice(b"injected");
    stranger.send_to(&forged, data).unwrap();

    let other_job = driver(0, &JobKey::generate().unwrap(), &opts);
    let e = other_job.connect(1, &b.card()).err().expect("another job's key is refused");
    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
    let outsider = UdpDriver::new(&env(5, 6, &key), None, opts.clone()).unwrap();
    let e = outsider.connect(1, &b.card()).err().expect("rank 5 of a job of 2 is refused");
    assert_eq!(e.kind(), io::ErrorKind::TimedOut, "no answer to a rank outside the job: {e}");

    let mut rb = Recorder::default();
    poll_until(&*b, &mut rb, 5, "the strangers' datagrams", |_| b.strangers() >= 4);
    let a = driver(0, &key, &opts);
    let ab = a.connect(1, &b.card()).expect("legitimate connect");
    assert_eq!(ab.try_send(&[IoSlice::new(b"hello")]).unwrap(), Sent::Done);
    poll_until(&*b, &mut rb, 5, "the packet", |r| !r.packets.is_empty());
    // The forged datagram again, now that rank 0 has a link: still not ours.
    stranger.send_to(&forged, data).unwrap();
    let before = b.strangers();
    poll_until(&*b, &mut rb, 5, "the forged datagram", |_| b.strangers() > before);
    assert_eq!(rb.packets, vec![(0, b"hello".to_vec())], "nothing of the strangers delivered");
    assert_eq!(rb.links.len(), 1, "no stranger became a link");
    assert!(rb.failed.is_empty(), "strangers do not fail real links: {:?}", rb.failed);
}

#[test]
fn a_peer_that_stops_answering_is_reported_within_the_bound() {
    let key = JobKey::generate().unwrap();
    let opts = UdpOptions { dead_after: Duration::from_millis(300), ..UdpOptions::default() };
    let (a, b) = (driver(0, &key, &opts), driver(1, &key, &opts));
    let ab = a.connect(1, &b.card()).unwrap();
    let up = Instant::now();
    let (mut ra, mut rb) = (Recorder::default(), Recorder::default());
    assert_eq!(ab.try_send(&[IoSlice::new(b"first")]).unwrap(), Sent::Done);
    poll_until(&*b, &mut rb, 5, "the first packet", |r| r.packets.len() == 1);
    // b stops polling (as a process stopped by a signal): nothing it receives is acknowledged.
    let start = Instant::now();
    assert_eq!(ab.try_send(&[IoSlice::new(b"unanswered")]).unwrap(), Sent::Done);
    poll_until(&*a, &mut ra, 5, "the silent peer's report", |r| !r.failed.is_empty());
    // Silent since the link came up at the most (b never acknowledged): not before the bound.
    let (silent, waited) = (up.elapsed(), start.elapsed());
    assert!(silent >= Duration::from_millis(300) && waited < Duration::from_secs(2), "{silent:?} {waited:?}");
    assert_eq!(ra.failed, vec![(1, io::ErrorKind::TimedOut)]);
    assert!(ab.try_send(&[IoSlice::new(b"after")]).is_err(), "a failed link refuses sends");
}
