//! The tcp driver: the conformance suite (default buffers and tiny ones, so that writes are cut
//! short), then what only a network driver faces: strangers, hostile frames, a killed peer
//! process, rails on different addresses, concurrent pollers.

use nmad::drivers::conformance::{self, Pair, Recorder, pattern, poll_until};
use nmad::drivers::tcp::{TcpDriver, TcpOptions, wire};
use nmad::drivers::{BulkHeader, Driver, DriverEnv, Link, Segment, SegmentMut, Sent, Sink, by_spec, node_id};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{self, IoSlice, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tools::secret::{JobKey, client_handshake};

/// Records the largest allocation a thread makes while it watches (see `largest_allocation`).
struct Watching;

thread_local! {
    static WATCH: Cell<bool> = const { Cell::new(false) };
}
static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator; only records sizes.
unsafe impl GlobalAlloc for Watching {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if WATCH.with(Cell::get) {
            LARGEST.fetch_max(layout.size(), Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if WATCH.with(Cell::get) {
            LARGEST.fetch_max(new_size, Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Watching = Watching;

/// Runs `f` and returns the largest allocation this thread made meanwhile (one watcher at once).
fn largest_allocation(f: impl FnOnce()) -> usize {
    static ONE: Mutex<()> = Mutex::new(());
    let _g = ONE.lock().unwrap();
    LARGEST.store(0, Relaxed);
    WATCH.with(|w| w.set(true));
    f();
    WATCH.with(|w| w.set(false));
    LARGEST.load(Relaxed)
}

fn env(rank: u32, key: &JobKey) -> DriverEnv {
    DriverEnv { rank, size: 2, job_key: key.clone(), node: node_id(), single_node: false }
}

fn driver(rank: u32, key: &JobKey, arg: Option<&str>, opts: &TcpOptions) -> Arc<TcpDriver> {
    TcpDriver::new(&env(rank, key), arg, opts.clone()).unwrap()
}

mod conformance_suite {
    use super::*;
    fn make() -> Pair {
        let key = JobKey::generate().unwrap();
        let a = by_spec("tcp", &env(0, &key)).unwrap();
        let b = by_spec("tcp", &env(1, &key)).unwrap();
        Pair { a, b, a_rank: 0, b_rank: 1 }
    }
    nmad::driver_conformance_tests!(make);
}

/// Socket buffers of a few KiB: nearly every packet and bulk frame is written in pieces.
mod tiny_socket_buffers {
    use super::*;
    fn make() -> Pair {
        let key = JobKey::generate().unwrap();
        let opts = TcpOptions { socket_buffer: Some(4096), ..TcpOptions::default() };
        let (a, b): (Arc<dyn Driver>, Arc<dyn Driver>) =
            (driver(0, &key, None, &opts), driver(1, &key, None, &opts));
        Pair { a, b, a_rank: 0, b_rank: 1 }
    }
    #[test]
    fn packets_arrive_whole_and_in_order() {
        conformance::check_packets_in_order(&make());
    }
    #[test]
    fn busy_loses_nothing() {
        conformance::check_busy_loses_nothing(&make());
    }
    #[test]
    fn bulk_arrives_intact() {
        conformance::check_bulk(&make());
    }
    #[test]
    fn concurrent_senders_do_not_interleave_frames() {
        conformance::check_concurrent_senders(&make());
    }
}

#[test]
fn strangers_are_rejected_and_the_driver_carries_on() {
    let key = JobKey::generate().unwrap();
    let opts = TcpOptions { handshake_timeout: Duration::from_secs(2), ..TcpOptions::default() };
    let b = driver(1, &key, None, &opts);
    let addr = SocketAddr::from(([127, 0, 0, 1], b.local_addr().port()));
    let mut silent = TcpStream::connect(addr).unwrap();
    let mut garbage = TcpStream::connect(addr).unwrap();
    garbage.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let other_job = driver(0, &JobKey::generate().unwrap(), None, &opts);
    let e = other_job.connect(1, &b.card()).err().expect("another job's key is refused");
    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
    let outsider = TcpDriver::new(&DriverEnv { rank: 5, ..env(0, &key) }, None, opts.clone()).unwrap();
    assert!(outsider.connect(1, &b.card()).is_err(), "rank 5 of a job of 2 is refused");

    let mut rb = Recorder::default();
    // (`connect` tries every address of the card: at least one rejection each.)
    poll_until(&*b, &mut rb, 5, "three rejections", |_| b.rejected() >= 3);
    // A legitimate process gets in while the silent stranger still holds its connection.
    let a = driver(0, &key, None, &opts);
    let ab = a.connect(1, &b.card()).expect("legitimate connect");
    poll_until(&*b, &mut rb, 5, "the legitimate link", |r| !r.links.is_empty());
    silent.set_nonblocking(true).unwrap();
    let e = silent.read(&mut [0u8; 8]).expect_err("the silent stranger is neither answered nor closed yet");
    assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    silent.set_nonblocking(false).unwrap();
    let rejected = b.rejected();
    assert_eq!(ab.try_send(&[IoSlice::new(b"hello")]).unwrap(), Sent::Done);
    poll_until(&*b, &mut rb, 5, "the packet", |r| !r.packets.is_empty());
    assert_eq!(rb.packets[0], (0, b"hello".to_vec()));
    assert_eq!(rb.links.len(), 1, "no stranger became a link");

    // The silent one is dropped at its timeout.
    silent.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let n = silent.read(&mut [0u8; 64]).unwrap_or(0);
    assert_eq!(n, 0, "the silent stranger's connection is closed without a word");
    poll_until(&*b, &mut rb, 5, "the silent stranger's rejection", |_| b.rejected() > rejected);
    assert!(rb.failed.is_empty(), "strangers do not fail real links: {:?}", rb.failed);
}

/// A stranger that sends a byte every 300 ms is dropped when the whole handshake's 1 s is up
/// (the timeout is not per read); with 64 idle strangers holding every handshake place, a job
/// member still connects (the oldest stranger is dropped for it).
#[test]
fn dribblers_are_cut_at_the_deadline_and_idle_strangers_make_room() {
    let key = JobKey::generate().unwrap();
    let opts = TcpOptions { handshake_timeout: Duration::from_secs(1), ..TcpOptions::default() };
    let b = driver(1, &key, None, &opts);
    let addr = SocketAddr::from(([127, 0, 0, 1], b.local_addr().port()));
    let mut dribbler = TcpStream::connect(addr).unwrap();
    let start = Instant::now();
    let mut cut = false;
    while start.elapsed() < Duration::from_secs(4) {
        std::thread::sleep(Duration::from_millis(300));
        if dribbler.write_all(b"P").is_err() {
            cut = true;
            break;
        }
        dribbler.set_nonblocking(true).unwrap();
        let r = dribbler.read(&mut [0u8; 8]);
        dribbler.set_nonblocking(false).unwrap();
        if matches!(r, Ok(0)) || r.as_ref().is_err_and(|e| e.kind() != io::ErrorKind::WouldBlock) {
            cut = true;
            break;
        }
    }
    assert!(cut, "a dribbling stranger held its handshake for {:?}", start.elapsed());
    assert!(start.elapsed() < Duration::from_secs(3), "cut after {:?}", start.elapsed());

    let opts = TcpOptions { handshake_timeout: Duration::from_secs(30), ..TcpOptions::default() };
    let b = driver(1, &key, None, &opts);
    let addr = SocketAddr::from(([127, 0, 0, 1], b.local_addr().port()));
    let idle: Vec<TcpStream> = (0..64).map(|_| TcpStream::connect(addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(200)); // every one accepted, holding a place
    let a = driver(0, &key, None, &opts);
    let start = Instant::now();
    let ab = a.connect(1, &b.card()).expect("a job member gets a place");
    assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
    let mut rb = Recorder::default();
    assert_eq!(ab.try_send(&[IoSlice::new(b"hello")]).unwrap(), Sent::Done);
    poll_until(&*b, &mut rb, 5, "the packet", |r| !r.packets.is_empty());
    assert_eq!(rb.packets[0], (0, b"hello".to_vec()));
    let dropped = idle
        .iter()
        .filter(|s| {
            s.set_nonblocking(true).unwrap();
            matches!((&**s).read(&mut [0u8; 8]), Ok(0))
        })
        .count();
    assert!(dropped >= 1, "an idle stranger made room");
    assert!(b.rejected() >= dropped as u64);
}

/// A process that knows the key and the protocol, connected to `b`, one good packet ("ok") sent.
fn fake_peer(b: &TcpDriver, key: &JobKey) -> TcpStream {
    let mut s = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], b.local_addr().port()))).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    client_handshake(&mut s, key).unwrap();
    s.write_all(&wire::hello(0, 1, "tcp")).unwrap();
    let mut ack = [0u8; wire::ACK_LEN];
    s.read_exact(&mut ack).unwrap();
    assert_eq!(wire::parse_ack(&ack), (wire::ACK_OK, 1));
    let mut good = wire::packet_header(2).to_vec();
    good.extend_from_slice(b"ok");
    s.write_all(&good).unwrap();
    s
}

#[test]
fn hostile_frames_fail_the_link_without_panic_or_huge_allocation() {
    let key = JobKey::generate().unwrap();
    let b = driver(1, &key, None, &TcpOptions::default());
    let bulk = |cookie, offset, len| wire::bulk_header(&BulkHeader { cookie, offset, len });
    let mut huge_packet = wire::packet_header(0);
    huge_packet[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    let mut huge_bulk = bulk(1, 0, 1);
    huge_bulk[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    let mut reserved = wire::packet_header(1);
    reserved[2] = 9;
    let mut truncated_bulk = bulk(42, 0, 5000).to_vec();
    truncated_bulk.extend_from_slice(&[1u8; 100]);
    let cases: Vec<(&str, Vec<u8>, bool, io::ErrorKind)> = vec![
        ("a packet of 4 GiB", huge_packet.to_vec(), false, io::ErrorKind::InvalidData),
        ("a bulk frame of 4 GiB", huge_bulk.to_vec(), false, io::ErrorKind::InvalidData),
        (
            "a bulk offset that overflows",
            bulk(1, u64::MAX - 3, 10).to_vec(),
            false,
            io::ErrorKind::InvalidData,
        ),
        ("an unknown frame kind", b"GET / HTTP/1.1\r\n".to_vec(), false, io::ErrorKind::InvalidData),
        ("reserved bytes set", reserved.to_vec(), false, io::ErrorKind::InvalidData),
        (
            "a packet cut short",
            wire::packet_header(1000)[..].iter().chain(&[0u8; 10]).copied().collect(),
            true,
            io::ErrorKind::UnexpectedEof,
        ),
        ("bulk data cut short", truncated_bulk, true, io::ErrorKind::UnexpectedEof),
    ];
    let mut dest = vec![0u8; 5000];
    for (what, bytes, then_close, kind) in cases {
        let mut r = Recorder::default();
        r.dests.insert(42, vec![SegmentMut { ptr: dest.as_mut_ptr(), len: dest.len() }]);
        let mut s = fake_peer(&b, &key);
        s.write_all(&bytes).unwrap();
        if then_close {
            s.shutdown(std::net::Shutdown::Write).unwrap();
        }
        let largest = largest_allocation(|| {
            poll_until(&*b, &mut r, 5, what, |r| !r.failed.is_empty());
        });
        assert_eq!(r.packets, [(0, b"ok".to_vec())], "{what}: the good packet before it arrived");
        assert_eq!(r.failed, [(0, kind)], "{what}");
        assert!(r.bulk_done.is_empty(), "{what}: no bulk completed");
        assert!(largest < 1 << 20, "{what}: poll allocated {largest} bytes");
        let link = &r.links[0];
        assert!(link.try_send(&[IoSlice::new(b"x")]).is_err(), "{what}: the failed link refuses sends");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        assert!(matches!(s.read(&mut [0u8; 8]), Ok(0) | Err(_)), "{what}: the hostile peer is disconnected");
    }
    assert_eq!(&dest[..100], &[1u8; 100][..], "bulk bytes that came were written where the sink said");
    // The driver carries on.
    let a = driver(0, &key, None, &TcpOptions::default());
    let ab = a.connect(1, &b.card()).unwrap();
    let mut r = Recorder::default();
    assert_eq!(ab.try_send(&[IoSlice::new(b"after")]).unwrap(), Sent::Done);
    poll_until(&*b, &mut r, 5, "a packet after the hostile peers", |r| !r.packets.is_empty());
    assert_eq!(r.packets[0].1, b"after");
}

const PEER_CARD: &str = "NMAD_TCP_TEST_PEER_CARD";
const PEER_KEY: &str = "NMAD_TCP_TEST_PEER_KEY";

/// The peer process of `killed_peer_process_is_detected`: connects, says it is ready, then never
/// polls (the parent's bulk data piles up) until it is killed.
#[test]
#[ignore = "the peer process of killed_peer_process_is_detected"]
fn peer_process() {
    let (Ok(card), Ok(key)) = (std::env::var(PEER_CARD), std::env::var(PEER_KEY)) else { return };
    let key = JobKey::from_hex(&key).unwrap();
    let d = by_spec("tcp", &env(1, &key)).unwrap();
    let link = d.connect(0, &card).unwrap();
    assert_eq!(link.try_send(&[IoSlice::new(b"ready")]).unwrap(), Sent::Done);
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// A peer process, killed when dropped.
struct PeerProcess(Child);

impl Drop for PeerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `peer_process` (under `wrapper`, e.g. `ip netns exec NS`) connecting to `a`, and polls
/// `a` until it said it is ready.
fn start_peer(a: &dyn Driver, key: &JobKey, wrapper: &[&str], r: &mut Recorder) -> PeerProcess {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(wrapper.first().map_or(exe.as_os_str(), |w| w.as_ref()));
    if !wrapper.is_empty() {
        cmd.args(&wrapper[1..]).arg(&exe);
    }
    cmd.args(["--exact", "peer_process", "--ignored", "--nocapture", "--test-threads=1"])
        .env(PEER_CARD, a.card())
        .env(PEER_KEY, key.to_hex())
        .stdout(Stdio::null());
    let mut child = PeerProcess(cmd.spawn().unwrap());
    let end = Instant::now() + Duration::from_secs(20);
    while r.packets.is_empty() {
        assert!(child.0.try_wait().unwrap().is_none(), "the peer process exited early");
        assert!(Instant::now() < end, "the peer process never said it was ready");
        a.poll(r);
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(r.packets[0], (1, b"ready".to_vec()));
    child
}

#[test]
fn killed_peer_process_is_detected() {
    let key = JobKey::generate().unwrap();
    let a = by_spec("tcp", &env(0, &key)).unwrap();
    let mut r = Recorder::default();
    let mut child = start_peer(&*a, &key, &[], &mut r);
    let link = r.links[0].clone();
    let big = vec![7u8; 64 << 20];
    let hdr = BulkHeader { cookie: 1, offset: 0, len: big.len() as u64 };
    // SAFETY: `big` stays alive until the link failure is reported below.
    unsafe { link.send_bulk(hdr, &[Segment { ptr: big.as_ptr(), len: big.len() }], 5) }.unwrap();
    for _ in 0..100 {
        a.poll(&mut r);
    }
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    poll_until(&*a, &mut r, 10, "the killed peer's link failure", |r| !r.failed.is_empty());
    assert_eq!(r.failed[0].0, 1);
    assert!(r.bulk_sent.is_empty(), "64 MiB never read cannot have been sent");
    assert!(link.try_send(&[IoSlice::new(b"x")]).is_err(), "sends on the dead link fail");
    drop(big); // abandoned: the driver must not touch it any more
    for _ in 0..100 {
        a.poll(&mut r);
    }
    assert_eq!(r.failed.len(), 1, "reported once");
}

/// Runs `ip ARGS`; panics with its complaint if it fails.
fn ip(args: &[&str]) {
    let o = Command::new("ip").args(args).output().expect("the `ip` command (iproute2)");
    assert!(o.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr));
}

/// A network namespace and the veth pair into it, deleted when dropped.
struct Netns {
    name: String,
    near: String,
}

impl Netns {
    fn remove(name: &str, near: &str) {
        for args in [&["link", "del", near][..], &["netns", "del", name]] {
            let _ = Command::new("ip").args(args).stderr(Stdio::null()).status();
        }
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        Netns::remove(&self.name, &self.near);
    }
}

/// Another "host": a peer process in its own network namespace, behind a veth pair. Taking its
/// end down makes it vanish (no FIN, no RST): only keepalive and the user timeout notice.
/// Needs root, like the repository's other system tests (PM2_SKIP_SYSTEM_TESTS=1 skips it).
#[test]
fn vanished_host_is_detected() {
    if std::env::var_os("PM2_SKIP_SYSTEM_TESTS").is_some() {
        eprintln!("system test skipped (PM2_SKIP_SYSTEM_TESTS is set)");
        return;
    }
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(euid, 0, "this test needs root (network namespaces), or set PM2_SKIP_SYSTEM_TESTS=1");
    let pid = std::process::id();
    let (ns, near, far) = (format!("nmt{pid}"), format!("nmt{pid}h"), format!("nmt{pid}c"));
    let net = format!("10.{}.{}", 200 + pid % 50, (pid / 50) % 250);
    Netns::remove(&ns, &near); // leftovers of a crashed run
    ip(&["netns", "add", &ns]);
    let _ns = Netns { name: ns.clone(), near: near.clone() };
    ip(&["link", "add", &near, "type", "veth", "peer", "name", &far, "netns", &ns]);
    ip(&["addr", "add", &format!("{net}.1/30"), "dev", &near]);
    ip(&["link", "set", &near, "up"]);
    ip(&["-n", &ns, "addr", "add", &format!("{net}.2/30"), "dev", &far]);
    ip(&["-n", &ns, "link", "set", &far, "up"]);

    let key = JobKey::generate().unwrap();
    let opts = TcpOptions { dead_after: Duration::from_secs(2), ..TcpOptions::default() };
    let a = driver(0, &key, None, &opts);
    assert!(a.card().contains(&format!(",{net}.1")), "the card lists every interface: {}", a.card());
    let mut r = Recorder::default();
    let _child = start_peer(&*a, &key, &["ip", "netns", "exec", &ns], &mut r);
    let t = Instant::now();
    ip(&["-n", &ns, "link", "set", &far, "down"]);
    poll_until(&*a, &mut r, 20, "the vanished host's link failure", |r| !r.failed.is_empty());
    eprintln!("vanished host noticed after {:?}: {:?}", t.elapsed(), r.failed[0].1);
    assert_eq!(r.failed[0].0, 1);
}

/// Transfers more scattered than one system call takes, and an empty bulk transfer.
#[test]
fn scattered_and_empty_transfers() {
    let key = JobKey::generate().unwrap();
    let (a, b) = (by_spec("tcp", &env(0, &key)).unwrap(), by_spec("tcp", &env(1, &key)).unwrap());
    let ab = a.connect(1, &b.card()).unwrap();
    let (mut ra, mut rb) = (Recorder::default(), Recorder::default());
    let src = pattern(3, 1_000_000);
    // 10,000 source pieces of 100 bytes with empty ones between; 3,000 destination pieces.
    let mut segs = Vec::new();
    for (i, c) in src.chunks(100).enumerate() {
        segs.push(Segment { ptr: c.as_ptr(), len: c.len() });
        if i % 7 == 0 {
            segs.push(Segment { ptr: c.as_ptr(), len: 0 });
        }
    }
    let mut dst = vec![0u8; src.len()];
    let dsegs = dst.chunks_mut(333).map(|c| SegmentMut { ptr: c.as_mut_ptr(), len: c.len() }).collect();
    rb.dests.insert(1, dsegs);
    rb.dests.insert(2, Vec::new());
    let h1 = BulkHeader { cookie: 1, offset: 0, len: src.len() as u64 };
    let h2 = BulkHeader { cookie: 2, offset: 0, len: 0 };
    // SAFETY: `src` outlives the polling below, which waits for both bulk_sent.
    unsafe {
        ab.send_bulk(h1, &segs, 1).unwrap();
        ab.send_bulk(h2, &[], 2).unwrap();
    }
    let words: Vec<[u8; 3]> = (0..300u32).map(|i| [i as u8, (i >> 8) as u8, 0xAA]).collect();
    let parts: Vec<IoSlice> = words.iter().map(|w| IoSlice::new(w)).collect();
    let end = Instant::now() + Duration::from_secs(20);
    while ab.try_send(&parts).unwrap() == Sent::Busy {
        assert!(Instant::now() < end, "the link stayed busy");
        a.poll(&mut ra);
        b.poll(&mut rb);
    }
    while ra.bulk_sent.len() < 2 || rb.bulk_done.iter().all(|(_, h)| h.cookie != 2) || rb.packets.is_empty() {
        assert!(Instant::now() < end, "the transfers did not finish");
        a.poll(&mut ra);
        b.poll(&mut rb);
    }
    assert!(src == dst, "scattered bulk data corrupted");
    assert_eq!(rb.bulk_done.iter().filter(|(_, h)| h.cookie == 1).map(|(_, h)| h.len).sum::<u64>(), h1.len);
    assert_eq!(rb.packets[0].1, words.concat(), "a packet of 300 segments");
    assert!(ra.failed.is_empty() && rb.failed.is_empty());
}

fn port_of(card: &str) -> u16 {
    card.split(',').nth(1).unwrap().parse().unwrap()
}

#[test]
fn two_addresses_are_two_rails_to_the_same_peer() {
    let key = JobKey::generate().unwrap();
    let mk = |rank, spec| by_spec(spec, &env(rank, &key)).unwrap();
    let (a1, a2) = (mk(0, "tcp:127.0.0.1"), mk(0, "tcp:127.0.0.2"));
    let (b1, b2) = (mk(1, "tcp:127.0.0.1"), mk(1, "tcp:127.0.0.2"));
    assert_eq!((a1.name(), b2.name()), ("tcp:127.0.0.1", "tcp:127.0.0.2"));
    assert!(b2.card().ends_with(",127.0.0.2") && !b2.card().contains("127.0.0.1"), "{}", b2.card());
    assert!(
        TcpStream::connect(("127.0.0.1", port_of(&b2.card()))).is_err(),
        "rail 2 listens on its own address only"
    );
    assert!(a1.connect(1, &b2.card()).is_err(), "a rail does not connect to another rail");
    let (l1, l2) = (a1.connect(1, &b1.card()).unwrap(), a2.connect(1, &b2.card()).unwrap());

    // One rendezvous split across both rails, plus a packet on each.
    let src = pattern(5, 3 << 20);
    let mut dst = vec![0u8; src.len()];
    let half = src.len() / 2;
    let (mut r1, mut r2) = (Recorder::default(), Recorder::default());
    for r in [&mut r1, &mut r2] {
        r.dests.insert(9, vec![SegmentMut { ptr: dst.as_mut_ptr(), len: dst.len() }]);
    }
    let piece = |off: usize, len: usize| Segment { ptr: src[off..].as_ptr(), len };
    let h1 = BulkHeader { cookie: 9, offset: 0, len: half as u64 };
    let h2 = BulkHeader { cookie: 9, offset: half as u64, len: (src.len() - half) as u64 };
    // SAFETY: `src` outlives the polling below, which waits for both bulk_sent.
    unsafe {
        l1.send_bulk(h1, &[piece(0, half)], 1).unwrap();
        l2.send_bulk(h2, &[piece(half, src.len() - half)], 2).unwrap();
    }
    assert_eq!(l1.try_send(&[IoSlice::new(b"rail 1")]).unwrap(), Sent::Done);
    assert_eq!(l2.try_send(&[IoSlice::new(b"rail 2")]).unwrap(), Sent::Done);
    let (mut ra1, mut ra2) = (Recorder::default(), Recorder::default());
    let end = Instant::now() + Duration::from_secs(20);
    while r1.packets.is_empty()
        || r2.packets.is_empty()
        || ra1.bulk_sent.is_empty()
        || ra2.bulk_sent.is_empty()
    {
        assert!(Instant::now() < end, "the rails did not deliver");
        a1.poll(&mut ra1);
        a2.poll(&mut ra2);
        b1.poll(&mut r1);
        b2.poll(&mut r2);
    }
    assert_eq!((r1.packets[0].1.as_slice(), r2.packets[0].1.as_slice()), (&b"rail 1"[..], &b"rail 2"[..]));
    assert_eq!((r1.links[0].peer(), r2.links[0].peer()), (0, 0));
    assert_eq!(r1.bulk_done.iter().map(|(_, h)| h.len).sum::<u64>(), h1.len);
    assert_eq!(r2.bulk_done.iter().map(|(_, h)| h.len).sum::<u64>(), h2.len);
    assert!(r2.bulk_done.iter().all(|(_, h)| h.offset >= half as u64), "rail 2 carried the second half");
    assert!(src == dst, "the halves met in the destination");
}

/// Packets go into one shared log, whichever thread polls.
struct SharedLog(Arc<Mutex<Vec<Vec<u8>>>>);

impl Sink for SharedLog {
    fn link_up(&mut self, _: Arc<dyn Link>) {}
    fn packet(&mut self, _: u32, bytes: &[u8]) {
        self.0.lock().unwrap().push(bytes.to_vec());
    }
    fn bulk_dest(&mut self, _: u32, _: &BulkHeader, _: &mut Vec<SegmentMut>) -> bool {
        false
    }
    fn bulk_done(&mut self, _: u32, _: &BulkHeader) {}
    fn bulk_sent(&mut self, _: u32, _: u64) {}
    fn link_failed(&mut self, peer: u32, e: io::Error) {
        panic!("link to {peer} failed: {e}");
    }
}

#[test]
fn concurrent_pollers_lose_and_reorder_nothing() {
    let key = JobKey::generate().unwrap();
    let (a, b) = (by_spec("tcp", &env(0, &key)).unwrap(), by_spec("tcp", &env(1, &key)).unwrap());
    let ab = a.connect(1, &b.card()).unwrap();
    const N: u64 = 20_000;
    let log = Arc::new(Mutex::new(Vec::new()));
    std::thread::scope(|s| {
        for _ in 0..3 {
            let (b, log) = (b.clone(), log.clone());
            s.spawn(move || {
                let mut sink = SharedLog(log.clone());
                let end = Instant::now() + Duration::from_secs(20);
                while (log.lock().unwrap().len() as u64) < N {
                    assert!(Instant::now() < end, "concurrent pollers stalled");
                    b.poll(&mut sink);
                }
            });
        }
        for i in 0..N {
            let data = pattern(i, 8 + (i as usize % 200));
            let mut p = data.clone();
            p[..8].copy_from_slice(&i.to_le_bytes());
            while ab.try_send(&[IoSlice::new(&p)]).unwrap() == Sent::Busy {
                a.poll(&mut Recorder::default());
            }
        }
    });
    for (i, p) in log.lock().unwrap().iter().enumerate() {
        assert_eq!(u64::from_le_bytes(p[..8].try_into().unwrap()), i as u64, "packet {i} out of order");
    }
}

#[test]
fn closing_one_link_cuts_that_peer_off_only() {
    let key = JobKey::generate().unwrap();
    let mk = |rank| {
        let env = DriverEnv { rank, size: 3, job_key: key.clone(), node: node_id(), single_node: false };
        by_spec("tcp", &env).unwrap()
    };
    let (a, b, c) = (mk(0), mk(1), mk(2));
    conformance::check_close(
        &Pair { a: a.clone(), b, a_rank: 0, b_rank: 1 },
        &Pair { a, b: c, a_rank: 0, b_rank: 2 },
    );
}
