//! The `shm` driver: the conformance suite (with and without cross-memory attach), strangers,
//! segments, and real peer processes (cross-process reads, a peer killed with SIGKILL).

use nmad::drivers::conformance::Pair;
use nmad::drivers::shm::{ShmDriver, ShmOptions};
use nmad::drivers::{Driver, DriverEnv, node_id};
use std::sync::Arc;
use tools::secret::JobKey;

fn env(rank: u32, key: &JobKey) -> DriverEnv {
    DriverEnv { rank, size: 2, job_key: key.clone(), node: node_id(), single_node: false }
}

fn pair(opts: ShmOptions) -> Pair {
    let key = JobKey::generate().unwrap();
    let a: Arc<dyn Driver> = ShmDriver::with_options(&env(0, &key), opts.clone()).unwrap();
    let b: Arc<dyn Driver> = ShmDriver::with_options(&env(1, &key), opts).unwrap();
    Pair { a, b, a_rank: 0, b_rank: 1 }
}

mod with_cma {
    use super::*;
    fn make() -> Pair {
        pair(ShmOptions::default())
    }
    nmad::driver_conformance_tests!(make);
}

mod without_cma {
    use super::*;
    fn make() -> Pair {
        pair(ShmOptions { cma: false, ..ShmOptions::default() })
    }
    nmad::driver_conformance_tests!(make);
}

use nmad::drivers::conformance::{Recorder, pattern};
use nmad::drivers::{Access, BulkHeader, Link, PeerId, Segment, SegmentMut, Sent, Sink, memkey};
use std::io::{self, BufRead, BufReader, IoSlice, Read, Write};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn driver(rank: u32, key: &JobKey) -> Arc<ShmDriver> {
    ShmDriver::with_options(&env(rank, key), ShmOptions::default()).unwrap()
}

fn poll_until(
    d: &ShmDriver,
    r: &mut Recorder,
    limit: Duration,
    what: &str,
    done: impl Fn(&Recorder) -> bool,
) {
    let end = Instant::now() + limit;
    while !done(r) {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        d.poll(r);
    }
}

fn send(d: &ShmDriver, r: &mut Recorder, link: &Arc<dyn Link>, data: &[u8]) {
    while link.try_send(&[IoSlice::new(data)]).expect("try_send") == Sent::Busy {
        d.poll(r);
    }
}

fn socket_of(card: &str) -> SocketAddr {
    SocketAddr::from_abstract_name(card.rsplit_once(',').unwrap().1.as_bytes()).unwrap()
}

/// Whether the driver hangs up on a stranger (EOF, or a reset when our bytes were left unread).
fn hung_up(mut s: UnixStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut rest = Vec::new();
    match s.read_to_end(&mut rest) {
        Ok(_) => true,
        Err(e) => e.kind() == io::ErrorKind::ConnectionReset,
    }
}

#[test]
fn strangers_are_rejected_and_the_driver_carries_on() {
    let key = JobKey::generate().unwrap();
    let b = driver(1, &key);
    let addr = socket_of(&b.card());
    // Garbage instead of the handshake.
    let mut s = UnixStream::connect_addr(&addr).unwrap();
    let _ = s.write_all(b"GET / HTTP/1.1\r\nHost: nmad\r\n\r\n");
    assert!(hung_up(s), "a stranger speaking HTTP is hung up on");
    // The wrong job key.
    let mut s = UnixStream::connect_addr(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert!(tools::secret::client_handshake(&mut s, &JobKey::generate().unwrap()).is_err());
    // The right key, then a setup message without the segment.
    let mut s = UnixStream::connect_addr(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    tools::secret::client_handshake(&mut s, &key).unwrap();
    let _ = s.write_all(&[0x55; 32]);
    assert!(hung_up(s), "a malformed setup is hung up on");
    // A silent stranger holds its own setup thread, nobody else.
    let _silent = UnixStream::connect_addr(&addr).unwrap();
    let a = driver(0, &key);
    let start = Instant::now();
    let ab = a.connect(1, &b.card()).expect("a job member still connects");
    assert!(start.elapsed() < Duration::from_secs(5), "the silent stranger delayed a legitimate connect");
    let mut rb = Recorder::default();
    send(&a, &mut Recorder::default(), &ab, b"hello");
    poll_until(&b, &mut rb, Duration::from_secs(10), "the legitimate packet", |r| !r.packets.is_empty());
    assert_eq!(rb.packets, [(0, b"hello".to_vec())]);
    assert_eq!(rb.links.len(), 1, "strangers never become links");
    assert!(rb.failed.is_empty());
}

#[test]
fn shutdown_closes_the_listener_and_every_link() {
    let key = JobKey::generate().unwrap();
    let (a, b) = (driver(0, &key), driver(1, &key));
    let ab = a.connect(1, &b.card()).unwrap();
    let mut rb = Recorder::default();
    poll_until(&b, &mut rb, Duration::from_secs(10), "the link", |r| r.links.len() == 1);
    b.shutdown();
    b.shutdown();
    let e = UnixStream::connect_addr(&socket_of(&b.card())).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused, "nobody listens after shutdown: {e}");
    assert_eq!(rb.links[0].try_send(&[IoSlice::new(b"x")]).unwrap_err().kind(), io::ErrorKind::NotConnected);
    assert!(a.connect(1, &b.card()).is_err());
    let mut ra = Recorder::default();
    poll_until(&a, &mut ra, Duration::from_secs(5), "the peer's shutdown", |r| !r.failed.is_empty());
    assert!(ab.try_send(&[IoSlice::new(b"x")]).is_err());
}

fn dev_shm_entries() -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

#[test]
fn segments_are_memfds_never_in_dev_shm() {
    let key = JobKey::generate().unwrap();
    let (a, b) = (driver(0, &key), driver(1, &key));
    let ab = a.connect(1, &b.card()).unwrap();
    let mut rb = Recorder::default();
    send(&a, &mut Recorder::default(), &ab, b"x");
    poll_until(&b, &mut rb, Duration::from_secs(10), "the packet", |r| !r.packets.is_empty());
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    assert!(maps.contains("/memfd:nmad-shm"), "the segment is a mapped memfd");
    let leftovers: Vec<_> = dev_shm_entries().into_iter().filter(|n| n.contains("nmad")).collect();
    assert!(leftovers.is_empty(), "segments left in /dev/shm: {leftovers:?}");
}

// ---- Real peer processes: this test binary, started again as rank 1 -------------------------

const CHILD_ENV: &str = "NMAD_SHM_TEST_CHILD";
const CHILD_BUF: usize = (1 << 20) + 3;
/// Packets the peer sends before exiting at once.
const BURST: u64 = 500;

/// Echoes every packet back; `exit` ends the process, `burst` sends [`BURST`] packets and ends it.
#[derive(Default)]
struct Echo {
    link: Option<Arc<dyn Link>>,
    got: Vec<Vec<u8>>,
}

impl Sink for Echo {
    fn link_up(&mut self, link: Arc<dyn Link>) {
        self.link = Some(link);
    }
    fn packet(&mut self, _from: PeerId, bytes: &[u8]) {
        self.got.push(bytes.to_vec());
    }
    fn bulk_dest(&mut self, _: PeerId, _: &BulkHeader, _: &mut Vec<SegmentMut>) -> bool {
        false
    }
    fn bulk_done(&mut self, _: PeerId, _: &BulkHeader) {}
    fn bulk_sent(&mut self, _: PeerId, _: u64) {}
    fn link_failed(&mut self, _: PeerId, _: io::Error) {
        std::process::exit(2);
    }
}

/// Not a test: the peer process of the tests below (does nothing unless started by them).
#[test]
fn child_peer() {
    let Ok(key) = std::env::var(CHILD_ENV) else { return };
    let key = JobKey::from_hex(&key).unwrap();
    let d = driver(1, &key);
    let buf = pattern(42, CHILD_BUF);
    println!("CARD {}", d.card());
    println!("BUF {}", buf.as_ptr() as usize);
    io::stdout().flush().unwrap();
    let mut sink = Echo::default();
    let end = Instant::now() + Duration::from_secs(30);
    while Instant::now() < end {
        d.poll(&mut sink);
        for p in std::mem::take(&mut sink.got) {
            if p == b"exit" {
                std::process::exit(0);
            }
            if p == b"burst" {
                let link = sink.link.clone().unwrap();
                for i in 0..BURST {
                    let data = pattern(i, 1000);
                    while link.try_send(&[IoSlice::new(&data)]).unwrap() == Sent::Busy {
                        d.poll(&mut sink);
                    }
                }
                std::process::exit(0);
            }
            let link = sink.link.clone().unwrap();
            while link.try_send(&[IoSlice::new(&p)]).unwrap() == Sent::Busy {
                d.poll(&mut sink);
            }
        }
    }
    std::process::exit(1);
}

/// The peer process; killed when dropped.
struct Peer {
    child: std::process::Child,
    card: String,
    buf: usize,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn_peer(key: &JobKey) -> Peer {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_peer", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, key.to_hex())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut field = |tag: &str| loop {
        let line = lines.next().expect("the peer process died before its card").unwrap();
        // The harness prints `test child_peer ... ` without a newline before our first line.
        if let Some(i) = line.find(tag) {
            return line[i + tag.len()..].to_string();
        }
    };
    let card = field("CARD ");
    let buf = field("BUF ").parse().unwrap();
    Peer { child, card, buf }
}

#[test]
fn a_peer_process_is_read_and_echoes_then_leaves_cleanly() {
    let key = JobKey::generate().unwrap();
    let peer = spawn_peer(&key);
    let a = driver(0, &key);
    let link = a.connect(1, &peer.card).unwrap();
    let mut dst = vec![0u8; CHILD_BUF];
    // The key the peer's link would give for its buffer (address keys are public: `memkey`).
    let remote = [
        Segment { ptr: peer.buf as *const u8, len: 1000 },
        Segment { ptr: (peer.buf + 1000) as *const u8, len: CHILD_BUF - 1000 },
    ];
    let key = memkey::encode(&remote, Access::ReadWrite).unwrap();
    let local = [SegmentMut { ptr: dst.as_mut_ptr(), len: dst.len() }];
    // SAFETY: `dst` is writable; the key is checked by the driver, its addresses by the kernel.
    match unsafe { link.read_remote(&key, 0, &local) } {
        Ok(()) => {
            assert!(dst == pattern(42, CHILD_BUF), "read_remote copied the wrong bytes");
            let news = pattern(7, 3000);
            // SAFETY: `news` is readable; the peer's buffer is what the key names.
            unsafe { link.write_remote(&key, 999, &[Segment { ptr: news.as_ptr(), len: news.len() }]) }
                .expect("write_remote into the peer process");
            let back = [SegmentMut { ptr: dst.as_mut_ptr(), len: 3000 }];
            // SAFETY: as above.
            unsafe { link.read_remote(&key, 999, &back) }.unwrap();
            assert!(dst[..3000] == news[..], "write_remote across segments wrote the wrong bytes");
            let past = [SegmentMut { ptr: dst.as_mut_ptr(), len: 2 }];
            // SAFETY: as above.
            let e = unsafe { link.read_remote(&key, CHILD_BUF as u64 - 1, &past) }.unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
        }
        Err(e) if matches!(e.kind(), io::ErrorKind::PermissionDenied | io::ErrorKind::Unsupported) => {
            eprintln!("cross-memory attach refused here: {e}")
        }
        Err(e) => panic!("read_remote from the peer process: {e}"),
    }
    let mut r = Recorder::default();
    let sizes: Vec<usize> = (0..200).map(|i| (i * 331) % 65536).collect();
    for (i, &n) in sizes.iter().enumerate() {
        send(&a, &mut r, &link, &pattern(i as u64, n));
    }
    poll_until(&a, &mut r, Duration::from_secs(20), "the echoes", |r| r.packets.len() == sizes.len());
    for (i, (&n, (from, p))) in sizes.iter().zip(&r.packets).enumerate() {
        assert!(*from == 1 && *p == pattern(i as u64, n), "echo {i} corrupted");
    }
    // A rough round trip (meaningful in release builds only; printed, not asserted).
    let rounds = 2000;
    let start = Instant::now();
    for _ in 0..rounds {
        let before = r.packets.len();
        send(&a, &mut r, &link, &[7; 8]);
        while r.packets.len() == before {
            a.poll(&mut r);
        }
    }
    eprintln!("shm 8-byte one-way latency between processes: {:?}", start.elapsed() / (2 * rounds));
    send(&a, &mut r, &link, b"exit");
    poll_until(&a, &mut r, Duration::from_secs(10), "the peer's departure", |r| !r.failed.is_empty());
    assert_eq!(r.failed, [(1, io::ErrorKind::ConnectionReset)]);
    assert!(link.try_send(&[IoSlice::new(b"late")]).is_err(), "sends to a gone peer fail");
}

#[test]
fn packets_sent_just_before_a_peer_exits_are_delivered() {
    let key = JobKey::generate().unwrap();
    let mut peer = spawn_peer(&key);
    let a = driver(0, &key);
    let link = a.connect(1, &peer.card).unwrap();
    let mut r = Recorder::default();
    send(&a, &mut r, &link, b"burst");
    // Let the peer finish and its exit be noticed before reading anything.
    peer.child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    poll_until(&a, &mut r, Duration::from_secs(10), "the peer's departure", |r| !r.failed.is_empty());
    assert_eq!(r.packets.len() as u64, BURST, "every packet written before the exit arrives");
    for (i, (_, p)) in r.packets.iter().enumerate() {
        assert!(*p == pattern(i as u64, 1000), "packet {i} corrupted");
    }
    assert_eq!(r.failed, [(1, io::ErrorKind::ConnectionReset)]);
}

#[test]
fn a_peer_that_connects_sends_and_leaves_before_any_poll_is_heard() {
    let key = JobKey::generate().unwrap();
    let (a, b) = (driver(0, &key), driver(1, &key));
    let ab = a.connect(1, &b.card()).unwrap();
    send(&a, &mut Recorder::default(), &ab, b"last words");
    a.shutdown();
    std::thread::sleep(Duration::from_millis(50));
    let mut rb = Recorder::default();
    poll_until(&b, &mut rb, Duration::from_secs(10), "the departure", |r| !r.failed.is_empty());
    assert_eq!(rb.links.len(), 1, "the link is announced");
    assert_eq!(rb.packets, [(0, b"last words".to_vec())]);
    assert_eq!(rb.failed, [(0, io::ErrorKind::ConnectionReset)]);
}

#[test]
fn a_peer_killed_with_sigkill_is_reported() {
    let key = JobKey::generate().unwrap();
    let mut peer = spawn_peer(&key);
    let a = driver(0, &key);
    let link = a.connect(1, &peer.card).unwrap();
    let mut r = Recorder::default();
    send(&a, &mut r, &link, b"ping");
    poll_until(&a, &mut r, Duration::from_secs(10), "the echo", |r| !r.packets.is_empty());
    peer.child.kill().unwrap();
    peer.child.wait().unwrap();
    let killed = Instant::now();
    poll_until(&a, &mut r, Duration::from_secs(5), "the dead peer's report", |r| !r.failed.is_empty());
    eprintln!("SIGKILLed peer reported after {:?}", killed.elapsed());
    assert_eq!(r.failed, [(1, io::ErrorKind::ConnectionReset)]);
    assert!(link.try_send(&[IoSlice::new(b"ping")]).is_err());
    let leftovers: Vec<_> = dev_shm_entries().into_iter().filter(|n| n.contains("nmad")).collect();
    assert!(leftovers.is_empty(), "segments left in /dev/shm: {leftovers:?}");
}

#[test]
fn closing_one_link_cuts_that_peer_off_only() {
    let key = JobKey::generate().unwrap();
    let mk = |rank| -> Arc<dyn Driver> {
        let env = DriverEnv { rank, size: 3, job_key: key.clone(), node: node_id(), single_node: false };
        ShmDriver::with_options(&env, ShmOptions::default()).unwrap()
    };
    let (a, b, c) = (mk(0), mk(1), mk(2));
    nmad::drivers::conformance::check_close(
        &Pair { a: a.clone(), b, a_rank: 0, b_rank: 1 },
        &Pair { a, b: c, a_rank: 0, b_rank: 2 },
    );
}
