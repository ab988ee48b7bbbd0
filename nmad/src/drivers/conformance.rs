//! The driver conformance suite: one set of checks every driver must pass, run by
//! `nmad/tests/drivers.rs` over each driver (two instances in one process, talking to each
//! other as two ranks would).
//!
//! [`Recorder`] is a [`Sink`] that keeps what arrives; [`pump`] polls both sides until a
//! condition holds. Each `check_*` function panics with a message saying what broke.

use super::{Access, BulkHeader, Driver, LargePath, Link, MAX_KEY, PeerId, Segment, SegmentMut, Sent, Sink};
use std::collections::HashMap;
use std::io::{self, IoSlice};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Two driver instances that can reach each other (or one instance twice, for `self`).
pub struct Pair {
    pub a: Arc<dyn Driver>,
    pub b: Arc<dyn Driver>,
    pub a_rank: PeerId,
    pub b_rank: PeerId,
}

impl Pair {
    fn same(&self) -> bool {
        Arc::ptr_eq(&self.a, &self.b)
    }
}

/// A sink that records everything.
#[derive(Default)]
pub struct Recorder {
    pub links: Vec<Arc<dyn Link>>,
    pub packets: Vec<(PeerId, Vec<u8>)>,
    /// Bulk destinations by cookie: scattered buffers the test owns.
    pub dests: HashMap<u64, Vec<SegmentMut>>,
    pub bulk_done: Vec<(PeerId, BulkHeader)>,
    pub bulk_sent: Vec<(PeerId, u64)>,
    pub failed: Vec<(PeerId, io::ErrorKind)>,
    pub refused: u64,
}

impl Sink for Recorder {
    fn link_up(&mut self, link: Arc<dyn Link>) {
        self.links.push(link);
    }
    fn packet(&mut self, from: PeerId, bytes: &[u8]) {
        self.packets.push((from, bytes.to_vec()));
    }
    fn bulk_dest(&mut self, _from: PeerId, hdr: &BulkHeader, dest: &mut Vec<SegmentMut>) -> bool {
        let Some(segs) = self.dests.get(&hdr.cookie) else {
            self.refused += 1;
            return false;
        };
        let (start, end) = (hdr.offset as usize, (hdr.offset + hdr.len) as usize);
        let mut pos = 0;
        for s in segs {
            let (lo, hi) = (start.max(pos), end.min(pos + s.len));
            if lo < hi {
                // SAFETY: lo - pos < s.len: stays inside the test's buffer.
                dest.push(SegmentMut { ptr: unsafe { s.ptr.add(lo - pos) }, len: hi - lo });
            }
            pos += s.len;
        }
        assert!(end <= pos, "bulk header beyond the registered destination");
        true
    }
    fn bulk_done(&mut self, from: PeerId, hdr: &BulkHeader) {
        self.bulk_done.push((from, *hdr));
    }
    fn bulk_sent(&mut self, to: PeerId, token: u64) {
        self.bulk_sent.push((to, token));
    }
    fn link_failed(&mut self, peer: PeerId, error: io::Error) {
        self.failed.push((peer, error.kind()));
    }
}

/// Polls `a` (and `b` unless it is the same driver) until `done` holds; panics after `limit`.
pub fn pump(
    p: &Pair,
    ra: &mut Recorder,
    rb: &mut Recorder,
    limit: Duration,
    what: &str,
    mut done: impl FnMut(&Recorder, &Recorder) -> bool,
) {
    let end = Instant::now() + limit;
    while !done(ra, rb) {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        p.a.poll(ra);
        if !p.same() {
            p.b.poll(rb);
        }
    }
}

/// Polls `d` alone into `r` until `done` holds, resting 200 µs after an idle poll; panics
/// after `secs`.
pub fn poll_until(d: &dyn Driver, r: &mut Recorder, secs: u64, what: &str, done: impl Fn(&Recorder) -> bool) {
    let end = Instant::now() + Duration::from_secs(secs);
    while !done(r) {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        if d.poll(r) == 0 {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

/// A deterministic byte pattern, different for every (stream, index).
pub fn pattern(stream: u64, len: usize) -> Vec<u8> {
    let mut x = stream.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Connects a → b and returns (a's link to b, b's link to a), pumping until b saw the connection.
/// The peer is not polled during `connect`: drivers must accept in the background.
pub fn connect(p: &Pair, ra: &mut Recorder, rb: &mut Recorder) -> (Arc<dyn Link>, Arc<dyn Link>) {
    let ab = p.a.connect(p.b_rank, &p.b.card()).expect("connect a to b");
    assert_eq!(ab.peer(), p.b_rank);
    if p.same() {
        return (ab.clone(), ab);
    }
    pump(p, ra, rb, Duration::from_secs(10), "the accepted link", |_, rb| !rb.links.is_empty());
    let ba = rb.links[0].clone();
    assert_eq!(ba.peer(), p.a_rank, "the accepted link names the connecting rank");
    (ab, ba)
}

/// Sends `packet` on `link`, polling both sides while it is busy.
pub fn send(p: &Pair, ra: &mut Recorder, rb: &mut Recorder, link: &Arc<dyn Link>, packet: &[IoSlice<'_>]) {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        match link.try_send(packet).expect("try_send") {
            Sent::Done => return,
            Sent::Busy => {
                assert!(Instant::now() < end, "link stayed busy for 20 s");
                p.a.poll(ra);
                if !p.same() {
                    p.b.poll(rb);
                }
            }
        }
    }
}

fn sizes(max: usize) -> Vec<usize> {
    let mut v = vec![0, 1, 7, 8, 63, 64, 65, 100, 1000, 4095, 4096, 4097, 8192, max / 2, max - 1, max];
    v.retain(|&s| s <= max);
    v
}

/// Cards, reachability and capabilities are coherent.
pub fn check_cards_and_caps(p: &Pair) {
    for d in [&p.a, &p.b] {
        let card = d.card();
        assert!(!d.name().is_empty());
        assert!(
            !card.is_empty() && card.bytes().all(|b| b.is_ascii_graphic() && !b";=\\#|".contains(&b)),
            "card `{card}` must be printable ASCII without space ; = \\ # |"
        );
        let c = d.caps();
        assert!(c.max_packet >= 4096, "max_packet {} too small", c.max_packet);
        assert!(c.eager_limit + 64 <= c.max_packet, "eager_limit must leave room for headers");
        assert!(c.blocking == d.wait_fd().is_some(), "caps.blocking ⇔ wait_fd");
    }
    assert!(p.a.reaches(&p.b.card()) && p.b.reaches(&p.a.card()), "the pair reaches each other");
    assert!(!p.a.reaches("garbage"), "a malformed card is not reachable");
}

/// Packets of every size, single and scattered, arrive whole and in order, both ways.
pub fn check_packets_in_order(p: &Pair) {
    let (mut ra, mut rb) = (Recorder::default(), Recorder::default());
    let (ab, ba) = connect(p, &mut ra, &mut rb);
    let max = p.a.caps().max_packet.min(p.b.caps().max_packet);
    let mut expect = Vec::new();
    for round in 0..20u64 {
        for (i, &len) in sizes(max).iter().enumerate() {
            let data = pattern(round * 1000 + i as u64, len);
            if i % 3 == 0 && len >= 3 {
                let (x, rest) = data.split_at(len / 3);
                let (y, z) = rest.split_at(rest.len() / 2);
                send(p, &mut ra, &mut rb, &ab, &[IoSlice::new(x), IoSlice::new(y), IoSlice::new(z)]);
            } else {
                send(p, &mut ra, &mut rb, &ab, &[IoSlice::new(&data)]);
            }
            expect.push(data);
        }
    }
    let n = expect.len();
    pump(p, &mut ra, &mut rb, Duration::from_secs(20), "all packets a→b", |ra, rb| {
        (if p.same() { ra } else { rb }).packets.len() >= n
    });
    let got = if p.same() { &ra.packets } else { &rb.packets };
    assert_eq!(got.len(), n, "no extra packets");
    for (i, ((from, bytes), want)) in got.iter().zip(&expect).enumerate() {
        assert_eq!(*from, p.a_rank, "packet {i}: sender");
        assert!(bytes == want, "packet {i} ({} bytes) corrupted or out of order", want.len());
    }
    // And back.
    let back = pattern(7, 1234);
    send(p, &mut ra, &mut rb, &ba, &[IoSlice::new(&back)]);
    let before = if p.same() { n } else { 0 };
    pump(p, &mut ra, &mut rb, Duration::from_secs(10), "the reply b→a", |ra, _| ra.packets.len() > before);
    assert_eq!(ra.packets[before], (p.b_rank, back));
    assert!(ra.failed.is_empty() && rb.failed.is_empty(), "no failures: {:?} {:?}", ra.failed, rb.failed);
}

/// A sender that is not drained gets `Busy`, loses nothing, and goes on once the receiver polls.
pub fn check_busy_loses_nothing(p: &Pair) {
    let (mut ra, mut rb) = (Recorder::default(), Recorder::default());
    let (ab, _) = connect(p, &mut ra, &mut rb);
    let len = 4000;
    let mut sent = 0u64;
    let start = Instant::now();
    loop {
        let data = pattern(sent, len);
        match ab.try_send(&[IoSlice::new(&data)]).expect("try_send") {
            Sent::Done => sent += 1,
            Sent::Busy => break,
        }
        assert!(start.elapsed() < Duration::from_secs(20), "never busy after {sent} packets");
        assert!(sent < 1 << 20, "4 GB accepted without polling the receiver: no backpressure");
    }
    assert!(sent > 0, "busy before the first packet");
    for _ in 0..100 {
        let data = pattern(sent, len);
        send(p, &mut ra, &mut rb, &ab, &[IoSlice::new(&data)]);
        sent += 1;
    }
    pump(p, &mut ra, &mut rb, Duration::from_secs(30), "the backlog", |ra, rb| {
        (if p.same() { ra } else { rb }).packets.len() as u64 >= sent
    });
    let got = if p.same() { &ra.packets } else { &rb.packets };
    for (i, (_, b)) in got.iter().enumerate() {
        assert!(*b == pattern(i as u64, len), "packet {i} of {sent} lost or reordered");
    }
}

/// Bulk transfers of many sizes from scattered sources into scattered destinations, with packets
/// interleaved; discarded transfers do not disturb the link.
pub fn check_bulk(p: &Pair) {
    let (mut ra, mut rb) = (Recorder::default(), Recorder::default());
    let (ab, _) = connect(p, &mut ra, &mut rb);
    let sizes = [1usize, 4095, 65_539, 1 << 20, (8 << 20) + 5];
    let srcs: Vec<Vec<u8>> = sizes.iter().enumerate().map(|(i, &n)| pattern(100 + i as u64, n)).collect();
    let mut dsts: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![0u8; n]).collect();
    let recv = if p.same() { &mut ra } else { &mut rb };
    for (i, d) in dsts.iter_mut().enumerate() {
        // Scatter the destination: pieces of 1, 4096 and the rest.
        let base = d.as_mut_ptr();
        let n = d.len();
        let cuts = [0, 1.min(n), 4097.min(n), n];
        let segs = cuts
            .windows(2)
            .filter(|w| w[1] > w[0])
            // SAFETY: w[0] < n: inside the destination buffer.
            .map(|w| SegmentMut { ptr: unsafe { base.add(w[0]) }, len: w[1] - w[0] })
            .collect();
        recv.dests.insert(1000 + i as u64, segs);
    }
    for (i, s) in srcs.iter().enumerate() {
        let half = s.len() / 2;
        let src = [
            Segment { ptr: s.as_ptr(), len: half },
            Segment {
                // SAFETY: half <= len: inside the source buffer.
                ptr: unsafe { s.as_ptr().add(half) },
                len: s.len() - half,
            },
        ];
        let hdr = BulkHeader { cookie: 1000 + i as u64, offset: 0, len: s.len() as u64 };
        // SAFETY: `srcs` outlives the pumping below, which waits for every bulk_sent.
        unsafe { ab.send_bulk(hdr, &src, i as u64) }.expect("send_bulk");
        let small = pattern(500 + i as u64, 100);
        send(p, &mut ra, &mut rb, &ab, &[IoSlice::new(&small)]);
    }
    // A transfer nobody wants is discarded.
    let junk = pattern(9, 100_000);
    let hdr = BulkHeader { cookie: 77, offset: 0, len: junk.len() as u64 };
    // SAFETY: `junk` outlives the pump below.
    unsafe { ab.send_bulk(hdr, &[Segment { ptr: junk.as_ptr(), len: junk.len() }], 99) }.expect("send_bulk");
    let tail = pattern(10, 64);
    send(p, &mut ra, &mut rb, &ab, &[IoSlice::new(&tail)]);
    let total: u64 = sizes.iter().map(|&n| n as u64).sum();
    pump(p, &mut ra, &mut rb, Duration::from_secs(60), "bulk transfers", |ra, rb| {
        let r = if p.same() { ra } else { rb };
        ra.bulk_sent.len() == sizes.len() + 1
            && r.bulk_done.iter().map(|(_, h)| h.len).sum::<u64>() >= total
            && r.packets.len() > sizes.len()
    });
    let r = if p.same() { &ra } else { &rb };
    for (i, (s, d)) in srcs.iter().zip(&dsts).enumerate() {
        assert!(s == d, "bulk transfer {i} ({} bytes) corrupted", s.len());
        let mut covered: Vec<(u64, u64)> = r
            .bulk_done
            .iter()
            .filter(|(_, h)| h.cookie == 1000 + i as u64)
            .map(|(_, h)| (h.offset, h.len))
            .collect();
        covered.sort();
        let mut at = 0;
        for (off, len) in covered {
            assert_eq!(off, at, "bulk_done pieces of transfer {i} overlap or leave a hole");
            at += len;
        }
        assert_eq!(at, s.len() as u64, "bulk_done covers transfer {i} exactly");
    }
    assert!(r.refused > 0, "the unwanted transfer was offered to the sink");
    let mut tokens: Vec<u64> = ra.bulk_sent.iter().map(|(_, t)| *t).collect();
    tokens.sort();
    assert_eq!(
        tokens,
        (0..sizes.len() as u64).chain([99]).collect::<Vec<_>>(),
        "one bulk_sent per send_bulk"
    );
    assert!(r.packets.iter().any(|(_, b)| *b == tail), "packets after a discarded transfer arrive");
}

/// Drivers with the read-remote path expose memory by key: the peer reads and writes it at
/// offsets, within what was exposed, and only writes what was exposed for writing.
pub fn check_remote_memory(p: &Pair) {
    if p.a.caps().large != LargePath::ReadRemote {
        assert_eq!(p.a.caps().large, LargePath::Bulk, "drivers without remote access stream rendezvous data");
        return;
    }
    let (mut ra, mut rb) = (Recorder::default(), Recorder::default());
    let (ab, ba) = connect(p, &mut ra, &mut rb);
    let mut src = pattern(3, (3 << 20) + 17);
    let (head, tail) = src.split_at_mut(10);
    let mem = [
        Segment { ptr: head.as_mut_ptr().cast_const(), len: head.len() },
        Segment { ptr: tail.as_mut_ptr().cast_const(), len: tail.len() },
    ];
    // a exposes its memory to b (one process here, so its addresses are valid for the "peer").
    // SAFETY: `src` outlives `exposed` and is writable.
    let exposed = unsafe { ab.expose(&mem, Access::ReadWrite) }.expect("ReadRemote drivers expose memory");
    assert!(!exposed.key().is_empty() && exposed.key().len() <= MAX_KEY, "a key fits in a packet");
    let mut dst = vec![0u8; src.len() - 5];
    let local = [SegmentMut { ptr: dst.as_mut_ptr(), len: dst.len() }];
    // SAFETY: `dst` is valid for writes.
    match unsafe { ba.read_remote(exposed.key(), 5, &local) } {
        Ok(()) => assert!(src[5..] == dst[..], "read_remote at an offset copied the wrong bytes"),
        Err(e) if matches!(e.kind(), io::ErrorKind::PermissionDenied | io::ErrorKind::Unsupported) => {
            return eprintln!("remote access refused here ({e}): the bulk fallback is what runs");
        }
        Err(e) => panic!("read_remote: {e}"),
    }
    let news = pattern(9, 1000);
    let from = [Segment { ptr: news.as_ptr(), len: news.len() }];
    // SAFETY: `news` is readable; the key names `src`, alive and exposed for writing.
    unsafe { ba.write_remote(exposed.key(), 4, &from) }.expect("write_remote");
    assert!(src[4..1004] == news[..] && src[..4] == pattern(3, 4)[..], "write_remote wrote elsewhere");
    let past = [SegmentMut { ptr: dst.as_mut_ptr(), len: 6 }];
    let before = dst.clone();
    // SAFETY: as above.
    let e = unsafe { ba.read_remote(exposed.key(), src.len() as u64 - 5, &past) }.unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "a range past the exposed memory is refused: {e}");
    // SAFETY: as above.
    assert!(unsafe { ba.read_remote(exposed.key(), u64::MAX, &past) }.is_err(), "offsets do not wrap");
    // SAFETY: as above.
    assert!(unsafe { ba.read_remote(&[0xff; 7], 0, &past) }.is_err(), "a malformed key is refused");
    assert!(dst == before, "refused reads wrote nothing");
    drop(exposed);
    // SAFETY: `src` outlives the exposure.
    let read_only = unsafe { ab.expose(&mem, Access::Read) }.expect("expose for reading");
    // SAFETY: as above.
    let e = unsafe { ba.write_remote(read_only.key(), 0, &from) }.unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "no writes through a read-only key: {e}");
}

/// A context sleeping on `wait_fd` (after `arm`) is woken by a packet.
pub fn check_blocking_wait(p: &Pair) {
    if !p.b.caps().blocking {
        return;
    }
    let (mut ra, mut rb) = (Recorder::default(), Recorder::default());
    let (ab, _) = connect(p, &mut ra, &mut rb);
    let fd = p.b.wait_fd().unwrap();
    for i in 0..20u64 {
        while p.b.poll(if p.same() { &mut ra } else { &mut rb }) > 0 {}
        assert!(p.b.arm(), "nothing pending: arm says sleep");
        let data = pattern(i, 32);
        let t = std::thread::scope(|s| {
            let h = s.spawn(|| {
                std::thread::sleep(Duration::from_millis(2));
                assert_eq!(ab.try_send(&[IoSlice::new(&data)]).unwrap(), Sent::Done);
            });
            let t = Instant::now();
            let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd.
            let n = unsafe { libc::poll(&mut pfd, 1, 5000) };
            h.join().unwrap();
            assert_eq!(n, 1, "wait_fd was not signalled within 5 s (round {i})");
            t.elapsed()
        });
        p.b.disarm();
        assert!(t < Duration::from_secs(5));
        let r = if p.same() { &ra } else { &rb };
        let before = r.packets.len();
        pump(p, &mut ra, &mut rb, Duration::from_secs(5), "the packet after the wake-up", |ra, rb| {
            (if p.same() { ra } else { rb }).packets.len() > before
        });
    }
    // arm with something pending says "do not sleep".
    let data = pattern(99, 32);
    send(p, &mut ra, &mut rb, &ab, &[IoSlice::new(&data)]);
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let ready = !p.b.arm();
        p.b.disarm();
        if ready {
            break;
        }
        assert!(Instant::now() < end, "arm never reported the pending packet");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Several threads sending on one link at once: each thread's packets arrive in its order.
pub fn check_concurrent_senders(p: &Pair) {
    let (mut ra, mut rb) = (Recorder::default(), Recorder::default());
    let (ab, _) = connect(p, &mut ra, &mut rb);
    const THREADS: u64 = 4;
    const EACH: u64 = 2000;
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let ab = ab.clone();
            let stop = &stop;
            s.spawn(move || {
                for i in 0..EACH {
                    let mut data = pattern(t * EACH + i, 16 + (i as usize % 300));
                    data[..8].copy_from_slice(&(t * EACH + i).to_le_bytes());
                    while ab.try_send(&[IoSlice::new(&data)]).expect("try_send") == Sent::Busy {
                        assert!(!stop.load(std::sync::atomic::Ordering::Relaxed));
                        std::thread::yield_now();
                    }
                }
            });
        }
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pump(p, &mut ra, &mut rb, Duration::from_secs(30), "concurrent packets", |ra, rb| {
                (if p.same() { ra } else { rb }).packets.len() as u64 >= THREADS * EACH
            })
        }));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Err(e) = r {
            std::panic::resume_unwind(e);
        }
    });
    let got = if p.same() { &ra.packets } else { &rb.packets };
    let mut next = [0u64; THREADS as usize];
    for (_, b) in got {
        let id = u64::from_le_bytes(b[..8].try_into().unwrap());
        let (t, i) = (id / EACH, id % EACH);
        assert_eq!(i, next[t as usize], "thread {t}: packet {i} out of order");
        let mut want = pattern(id, b.len());
        want[..8].copy_from_slice(&id.to_le_bytes());
        assert!(*b == want, "packet {id} corrupted");
        next[t as usize] += 1;
    }
}

/// A peer that goes away is reported with `link_failed`, never a hang: also after a send to it
/// failed (the core fails receives from the peer only at that report), and only once every
/// packet it sent before has been delivered.
pub fn check_dead_peer(p: &Pair) {
    if p.same() {
        return;
    }
    const LAST: u64 = 20;
    let (mut ra, mut rb) = (Recorder::default(), Recorder::default());
    let (ab, ba) = connect(p, &mut ra, &mut rb);
    for i in 0..LAST {
        send(p, &mut ra, &mut rb, &ba, &[IoSlice::new(&pattern(100 + i, 1000))]);
    }
    // What the link took must leave the process before it ends (as `finalize` waits).
    pump(p, &mut ra, &mut rb, Duration::from_secs(10), "the packets to leave b", |_, _| !ba.sending());
    p.b.shutdown();
    let data = pattern(1, 100);
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        // Fails sooner or later; the report must come all the same.
        let _ = ab.try_send(&[IoSlice::new(&data)]);
        p.a.poll(&mut ra);
        if ra.failed.iter().any(|(peer, _)| *peer == p.b_rank) {
            break;
        }
        assert!(Instant::now() < end, "the peer's shutdown went unreported for 10 s");
        std::thread::sleep(Duration::from_millis(1));
    }
    let got: Vec<&Vec<u8>> = ra.packets.iter().filter(|(f, _)| *f == p.b_rank).map(|(_, b)| b).collect();
    assert_eq!(
        got.len() as u64,
        LAST,
        "packets the peer sent before leaving are delivered before its failure"
    );
    for (i, b) in got.iter().enumerate() {
        assert!(**b == pattern(100 + i as u64, 1000), "packet {i} of the departed peer corrupted");
    }
}

/// [`Link::close`] cuts one peer off: `ab.a` (also `ac.a`) closes its link to `b` while `b`
/// sends to it and a thread of its own sends on the closed link. Both sides see `link_failed`,
/// `a` delivers nothing of `b`'s after the close, every later call on the link fails, and the
/// link to `c` is unaffected.
pub fn check_close(ab: &Pair, ac: &Pair) {
    assert!(Arc::ptr_eq(&ab.a, &ac.a), "both pairs share their first driver");
    let (a, b, c) = (&ab.a, &ab.b, &ac.b);
    let (mut ra, mut rb, mut rc) = (Recorder::default(), Recorder::default(), Recorder::default());
    let (a_b, b_a) = connect(ab, &mut ra, &mut rb);
    let (a_c, c_a) = connect(ac, &mut ra, &mut rc);
    let from_b = |r: &Recorder| r.packets.iter().filter(|(f, _)| *f == ab.b_rank).count();
    let packet = pattern(7, 1000);
    send(ab, &mut ra, &mut rb, &b_a, &[IoSlice::new(&packet)]);
    pump(ab, &mut ra, &mut rb, Duration::from_secs(10), "b's first packet", |ra, _| from_b(ra) == 1);

    // A sender on the link being closed: it must get an error, not hang or crash.
    let sender = {
        let link = a_b.clone();
        std::thread::spawn(move || {
            let end = Instant::now() + Duration::from_secs(20);
            while Instant::now() < end {
                if link.try_send(&[IoSlice::new(b"racing the close")]).is_err() {
                    return true;
                }
            }
            false
        })
    };
    // b's packets fill a's side of the link, unread, when a closes it.
    for _ in 0..64 {
        let _ = b_a.try_send(&[IoSlice::new(&packet)]);
    }
    let delivered = from_b(&ra);
    a_b.close();
    let end = Instant::now() + Duration::from_secs(10);
    let failed = |r: &Recorder, peer| r.failed.iter().filter(|(p, _)| *p == peer).count();
    while failed(&rb, ab.a_rank) == 0 || failed(&ra, ab.b_rank) == 0 {
        assert!(
            Instant::now() < end,
            "no link_failed 10 s after the close (a: {:?}, b: {:?})",
            ra.failed,
            rb.failed
        );
        let _ = b_a.try_send(&[IoSlice::new(&packet)]);
        a.poll(&mut ra);
        b.poll(&mut rb);
        c.poll(&mut rc);
    }
    assert!(sender.join().unwrap(), "a send on the closed link kept succeeding");
    a_b.close(); // idempotent
    for _ in 0..100 {
        a.poll(&mut ra);
        b.poll(&mut rb);
    }
    assert_eq!(from_b(&ra), delivered, "a delivered packets of b after closing its link");
    assert_eq!((failed(&ra, ab.b_rank), failed(&rb, ab.a_rank)), (1, 1), "each side reports once");
    assert!(a_b.try_send(&[IoSlice::new(b"x")]).is_err(), "a send on the closed link succeeded");
    let src = pattern(8, 100);
    let segs = [Segment { ptr: src.as_ptr(), len: src.len() }];
    // SAFETY: refused at once (the link is closed), so the memory is never used.
    let bulk = unsafe { a_b.send_bulk(BulkHeader { cookie: 1, offset: 0, len: 100 }, &segs, 1) };
    assert!(bulk.is_err(), "a bulk send on the closed link was accepted");

    // The link to c goes on, both ways.
    send(ac, &mut ra, &mut rc, &a_c, &[IoSlice::new(b"to c")]);
    send(ac, &mut ra, &mut rc, &c_a, &[IoSlice::new(b"from c")]);
    pump(ac, &mut ra, &mut rc, Duration::from_secs(10), "a <-> c after the close", |ra, rc| {
        ra.packets.iter().any(|(f, p)| *f == ac.b_rank && p == b"from c")
            && rc.packets.iter().any(|(f, p)| *f == ac.a_rank && p == b"to c")
    });
    assert_eq!((failed(&ra, ac.b_rank), failed(&rc, ac.a_rank)), (0, 0), "the link to c failed");
}

/// A sink that closes a link at the first packet from its peer, as the core does on a protocol
/// violation.
struct ClosingSink<'a> {
    inner: &'a mut Recorder,
    link: Arc<dyn Link>,
}

impl Sink for ClosingSink<'_> {
    fn link_up(&mut self, link: Arc<dyn Link>) {
        self.inner.link_up(link);
    }
    fn packet(&mut self, from: PeerId, bytes: &[u8]) {
        self.inner.packet(from, bytes);
        if from == self.link.peer() {
            self.link.close();
        }
    }
    fn bulk_dest(&mut self, from: PeerId, hdr: &BulkHeader, dest: &mut Vec<SegmentMut>) -> bool {
        self.inner.bulk_dest(from, hdr, dest)
    }
    fn bulk_done(&mut self, from: PeerId, hdr: &BulkHeader) {
        self.inner.bulk_done(from, hdr);
    }
    fn bulk_sent(&mut self, to: PeerId, token: u64) {
        self.inner.bulk_sent(to, token);
    }
    fn link_failed(&mut self, peer: PeerId, error: io::Error) {
        self.inner.link_failed(peer, error);
    }
}

/// A link closed by the sink from inside `poll` (at a packet of the peer) delivers nothing more,
/// though more packets wait; both sides then report it failed.
pub fn check_close_from_the_sink(p: &Pair) {
    if p.same() {
        return;
    }
    const SENT: u64 = 16;
    let (mut ra, mut rb) = (Recorder::default(), Recorder::default());
    let (ab, ba) = connect(p, &mut ra, &mut rb);
    for i in 0..SENT {
        let data = pattern(200 + i, 100);
        assert_eq!(ba.try_send(&[IoSlice::new(&data)]).expect("try_send"), Sent::Done);
    }
    // Everything is on a's side (ring or socket) before a polls. A driver that keeps bytes
    // until the peer acknowledges them (udp) is `sending` until a polls: its datagrams are in
    // a's socket once sent, which a moment's polling of b ensures.
    let end = Instant::now() + Duration::from_secs(10);
    let acknowledged = Instant::now() + Duration::from_millis(300);
    while ba.sending() && !(p.b.name().starts_with("udp") && Instant::now() > acknowledged) {
        assert!(Instant::now() < end, "b's packets did not leave it");
        p.b.poll(&mut rb);
    }
    std::thread::sleep(Duration::from_millis(20));
    let mut sink = ClosingSink { inner: &mut ra, link: ab.clone() };
    let end = Instant::now() + Duration::from_secs(10);
    while sink.inner.failed.is_empty() || rb.failed.is_empty() {
        assert!(Instant::now() < end, "the close went unreported for 10 s");
        p.a.poll(&mut sink);
        p.b.poll(&mut rb);
    }
    let got = ra.packets.iter().filter(|(f, _)| *f == p.b_rank).count();
    assert_eq!(got, 1, "packets were delivered after the sink closed the link");
    assert_eq!((ra.failed[0].0, rb.failed[0].0), (p.b_rank, p.a_rank));
}

/// Runs every check on fresh pairs from `make`.
#[macro_export]
macro_rules! driver_conformance_tests {
    ($make:expr) => {
        #[test]
        fn cards_and_caps() {
            $crate::drivers::conformance::check_cards_and_caps(&$make());
        }
        #[test]
        fn packets_in_order() {
            $crate::drivers::conformance::check_packets_in_order(&$make());
        }
        #[test]
        fn busy_loses_nothing() {
            $crate::drivers::conformance::check_busy_loses_nothing(&$make());
        }
        #[test]
        fn bulk() {
            $crate::drivers::conformance::check_bulk(&$make());
        }
        #[test]
        fn remote_memory() {
            $crate::drivers::conformance::check_remote_memory(&$make());
        }
        #[test]
        fn blocking_wait() {
            $crate::drivers::conformance::check_blocking_wait(&$make());
        }
        #[test]
        fn concurrent_senders() {
            $crate::drivers::conformance::check_concurrent_senders(&$make());
        }
        #[test]
        fn close_from_the_sink() {
            $crate::drivers::conformance::check_close_from_the_sink(&$make());
        }
        #[test]
        fn dead_peer() {
            $crate::drivers::conformance::check_dead_peer(&$make());
        }
    };
}
