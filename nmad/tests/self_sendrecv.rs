//! The core over the `self` driver: one rank talking to itself exercises eager and rendezvous
//! protocols, matching, probes, cancel, truncation, deferred receives and monitors.

use nmad::bootstrap::LocalJob;
use nmad::{Config, Data, Error, Nmad, Request, SendMode, Source, TagMatch, scope};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::*};

fn one_rank(strategy: &str) -> Nmad {
    let b = LocalJob::ranks(1).unwrap().pop().unwrap();
    let config = Config {
        drivers: Some(vec!["self".into()]),
        strategy: nmad::strategies::by_name(strategy).unwrap(),
        eager_limit: usize::MAX,
        unexpected_budget: 1 << 20,
        rdv_slots: 64,
        rdv_writes: nmad::RdvWrites::default(),
        fallback: None,
        failover: Some(Default::default()),
    };
    let pio = pioman::Pioman::builder().without_marcel().build().unwrap();
    Nmad::builder().bootstrap(Arc::new(b)).pioman(pio).config(config).build().unwrap()
}

fn pattern(seed: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| (seed.wrapping_mul(31).wrapping_add(i as u64 * 7) >> 1) as u8).collect()
}

#[test]
fn messages_of_every_size_reach_oneself_posted_or_not() {
    for strategy in ["default", "aggreg", "split_balance"] {
        let nm = one_rank(strategy);
        let s = nm.session(3);
        for (i, len) in
            [0usize, 1, 100, 4096, 16 << 10, (16 << 10) + 1, 100_000, 3 << 20].into_iter().enumerate()
        {
            let data = pattern(i as u64, len);
            // Unexpected first: send, then receive.
            scope(|sc| {
                let r = sc.isend(&s, 0, 10 + i as u64, &data, SendMode::default()).unwrap();
                let mut buf = vec![0u8; len];
                let st = s.recv(Source::Rank(0), 10 + i as u64, &mut buf).unwrap();
                r.wait();
                assert_eq!((st.len, st.received, st.source), (len as u64, len as u64, 0));
                assert!(buf == data, "{strategy}: {len} bytes, unexpected");
            });
            // Posted first.
            let mut buf = vec![0u8; len];
            scope(|sc| {
                let r = sc.irecv(&s, Source::Any, TagMatch::ANY, &mut buf).unwrap();
                s.send(0, 99, &data).unwrap();
                r.wait();
                assert_eq!(r.result().unwrap().unwrap().tag, 99);
            });
            assert!(buf == data, "{strategy}: {len} bytes, posted");
        }
        assert_eq!(nm.stats().unexpected_bytes, 0, "everything consumed");
        nm.finalize().unwrap();
    }
}

#[test]
fn order_is_kept_per_source_and_tag_masks_select() {
    let nm = one_rank("aggreg");
    let s = nm.session(1);
    for i in 0..200u64 {
        s.send(0, 0x100 | (i % 3), &i.to_le_bytes()).unwrap();
    }
    let mut got = Vec::new();
    for _ in 0..200 {
        let mut b = [0u8; 8];
        let st = s.recv(Source::Any, TagMatch { tag: 0x100, mask: !0xff }, &mut b).unwrap();
        assert_eq!(st.tag & !0xff, 0x100);
        got.push(u64::from_le_bytes(b));
    }
    assert_eq!(got, (0..200).collect::<Vec<_>>(), "non-overtaking");
    // A specific tag skips the others, in order among its own.
    for i in 0..30u64 {
        s.send(0, i % 3, &i.to_le_bytes()).unwrap();
    }
    let mut b = [0u8; 8];
    for want in (2..30).step_by(3) {
        s.recv(Source::Rank(0), 2, &mut b).unwrap();
        assert_eq!(u64::from_le_bytes(b), want);
    }
    assert_eq!(s.unexpected_len(), 20);
    nm.close_session(1);
    assert_eq!(nm.stats().unexpected_bytes, 0, "closing drops them");
    nm.finalize().unwrap();
}

#[test]
fn probe_cancel_truncation_and_sync_sends() {
    let nm = one_rank("aggreg");
    let s = nm.session(2);
    assert!(s.iprobe(Source::Any, TagMatch::ANY).is_none());
    s.send(0, 5, b"hello world").unwrap();
    // A probe may miss a message another context is delivering at that moment (a progression
    // thread polling the self driver): it sees it within a few tries, as MPI_Iprobe in a loop.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let st = loop {
        match s.iprobe(Source::Rank(0), 5) {
            Some(st) => break st,
            None => assert!(std::time::Instant::now() < deadline, "probe never sees it"),
        }
    };
    assert_eq!((st.len, st.tag), (11, 5));
    assert!(s.iprobe(Source::Rank(0), 5).is_some(), "probe does not consume");
    let mut small = [0u8; 5];
    match s.recv(Source::Any, 5, &mut small) {
        Err(Error::Truncated { len: 11, capacity: 5 }) => assert_eq!(&small, b"hello"),
        r => panic!("expected truncation, got {r:?}"),
    }
    // Truncating a rendezvous.
    let big = pattern(1, 1 << 20);
    let mut half = vec![0u8; 1 << 19];
    scope(|sc| {
        let r = sc.isend(&s, 0, 6, &big, SendMode::default()).unwrap();
        assert!(matches!(s.recv(Source::Any, 6, &mut half), Err(Error::Truncated { .. })));
        r.wait();
        assert!(r.result().unwrap().is_ok(), "the sender is fine");
    });
    assert!(half[..] == big[..1 << 19]);
    // Cancel.
    let req = pin!(Request::new());
    let mut buf = [0u8; 4];
    // SAFETY: `buf` outlives the request, which completes (cancelled) below.
    unsafe { s.irecv(Source::Any, 77, Data::from_raw(buf.as_mut_ptr(), 4), req.as_ref()).unwrap() };
    assert!(s.cancel(&req));
    assert_eq!(req.result(), Some(Err(Error::Cancelled)));
    assert!(!s.cancel(&req), "only once");
    // Synchronous sends complete once matched.
    scope(|sc| {
        let r = sc.isend(&s, 0, 8, b"sync", SendMode::SYNC).unwrap();
        for _ in 0..1000 {
            nm.pioman().progress();
        }
        assert!(!r.test(), "a synchronous send waits for its receive");
        let mut b = [0u8; 4];
        s.recv(Source::Any, 8, &mut b).unwrap();
        r.wait();
    });
    nm.finalize().unwrap();
}

#[test]
fn deferred_receives_peek_before_providing_the_buffer() {
    let nm = one_rank("aggreg");
    let s = nm.session(4);
    for len in [64usize, 1 << 20] {
        let data = pattern(len as u64, len);
        scope(|sc| {
            sc.isend(&s, 0, 1, &data, SendMode { sync: false, header_len: 16 }).unwrap();
            let req = pin!(Request::new());
            s.irecv_deferred(Source::Any, 1, req.as_ref()).unwrap();
            req.wait_matched();
            let st = req.status().unwrap();
            assert_eq!(st.len, len as u64);
            let mut head = [0u8; 16];
            assert_eq!(s.peek(&req, &mut head).unwrap(), 16);
            assert_eq!(head[..], data[..16]);
            let mut buf = vec![0u8; len];
            // SAFETY: `buf` outlives the wait below.
            unsafe { s.unpack(req.as_ref(), Data::from_raw(buf.as_mut_ptr(), len)).unwrap() };
            req.wait();
            assert!(buf == data);
        });
    }
    // Matched probe + receive. A completed send to oneself has left, not necessarily arrived:
    // MPI promises that repeated probes find it, not the first one.
    s.send(0, 9, b"mprobe").unwrap();
    let req = pin!(Request::new());
    let found = (0..100_000).any(|_| {
        let hit = s.improbe(Source::Any, 9, req.as_ref()).unwrap();
        if !hit {
            nm.pioman().progress();
        }
        hit
    });
    assert!(found, "a matched probe finds the message sent to this process");
    assert!(s.iprobe(Source::Any, 9).is_none(), "the message is claimed");
    let mut b = [0u8; 6];
    // SAFETY: `b` outlives the wait.
    unsafe { s.unpack(req.as_ref(), Data::from_raw(b.as_mut_ptr(), 6)).unwrap() };
    req.wait();
    assert_eq!(&b, b"mprobe");
    nm.finalize().unwrap();
}

#[test]
fn session_monitors_see_unexpected_messages_and_may_receive_them() {
    let nm = one_rank("aggreg");
    let s = nm.session(5);
    let seen = Arc::new(AtomicU64::new(0));
    let got = Arc::new(AtomicU64::new(0));
    let (seen2, got2) = (seen.clone(), got.clone());
    let id = s.monitor(
        Source::Any,
        TagMatch { tag: 0x5000, mask: 0xf000 },
        Arc::new(move |sess, st| {
            seen2.fetch_add(1, Relaxed);
            let mut b = [0u8; 8];
            let r = sess.recv(Source::Rank(st.source), st.tag, &mut b).unwrap();
            got2.fetch_add(u64::from_le_bytes(b) + r.len, Relaxed);
        }),
    );
    s.send(0, 0x5001, &7u64.to_le_bytes()).unwrap();
    s.send(0, 0x6001, &1u64.to_le_bytes()).unwrap();
    // Delivery may take more than one progress call (a background thread may hold the
    // engine): progress until both messages are in, then count what the monitor saw.
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while got.load(Relaxed) != 15 || s.unexpected_len() != 1 {
        assert!(std::time::Instant::now() < end, "both messages delivered");
        nm.pioman().progress();
    }
    assert_eq!(seen.load(Relaxed), 1, "only the matching message");
    assert!(s.unmonitor(id));
    assert_eq!(s.unexpected_len(), 1);
    nm.finalize().unwrap();
}
