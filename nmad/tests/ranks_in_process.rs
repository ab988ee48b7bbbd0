//! Several ranks inside one process (threads as ranks, `LocalJob` bootstrap) over real drivers:
//! exchanges of every size, multi-rail splitting, many threads per rank at once
//! (MPI_THREAD_MULTIPLE), and a peer that disappears.

mod common;

use nmad::{Error, Nmad, RdvWrites, SendMode, Source, TagMatch, scope};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn ranks(n: u32, drivers: &str, strategy: &str) -> Vec<Nmad> {
    common::ranks_in_process(n, drivers, strategy, usize::MAX, 8 << 20, 256)
}

fn pattern(seed: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| (seed as usize * 131 + i * 7 + (i >> 9)) as u8).collect()
}

/// Rank 0 and rank 1 swap messages of many sizes.
fn swap_all_sizes(nms: &[Nmad]) {
    const SIZES: [usize; 9] = [0, 1, 64, 4096, 32 << 10, (32 << 10) + 1, 300_000, 1 << 20, 9 << 20];
    std::thread::scope(|t| {
        for (me, nm) in nms.iter().enumerate().take(2) {
            t.spawn(move || {
                let s = nm.session(1);
                let peer = 1 - me as u32;
                for (i, &len) in SIZES.iter().enumerate() {
                    let out = pattern(me as u64 * 100 + i as u64, len);
                    let mut inp = vec![0u8; len];
                    scope(|sc| {
                        let r = sc.irecv(&s, Source::Rank(peer), i as u64, &mut inp).unwrap();
                        s.send(peer, i as u64, &out).unwrap();
                        r.wait();
                        assert_eq!(r.result().unwrap().unwrap().len, len as u64);
                    });
                    assert!(inp == pattern(u64::from(peer) * 100 + i as u64, len), "{len} bytes from {peer}");
                }
            });
        }
    });
}

fn finalize_all(nms: Vec<Nmad>) {
    let hs: Vec<_> = nms.into_iter().map(|n| std::thread::spawn(move || n.finalize().unwrap())).collect();
    for h in hs {
        h.join().unwrap();
    }
}

/// Every rendezvous's data written by its sender, all of it or its share with the receiver
/// reading the rest (`RdvWrites::Always`): every size arrives whole; a receive into pieces (a
/// strided layout) and a truncated one too.
#[test]
fn rendezvous_data_written_by_the_sender_over_shm() {
    for share in [100, 50, 1] {
        rendezvous_written(RdvWrites::Always { share });
    }
}

fn rendezvous_written(writes: RdvWrites) {
    let nms = common::ranks_in_process_writing(2, "shm", "aggreg", usize::MAX, 8 << 20, 256, writes);
    let before = nms[1].stats().rendezvous_written;
    swap_all_sizes(&nms);
    let asked = nms[1].stats().rendezvous_written - before;
    assert!(asked >= 3, "{writes:?}: {asked} rendezvous written by the sender");
    let s0 = nms[0].session(1);
    let s1 = nms[1].session(1);
    // 64 blocks of 4 KiB, 8 KiB apart: the receive buffer is 64 pieces.
    let len = 64 << 12;
    let out = pattern(7, len);
    let mut inp = vec![0u8; 2 * len];
    std::thread::scope(|t| {
        t.spawn(|| s0.send(1, 50, &out).unwrap());
        let r = std::pin::pin!(nmad::Request::new());
        let layout = Arc::new(nmad::Strided { count: 64, block: 4096, stride: 8192 });
        // SAFETY: `inp` holds 64 blocks 8 KiB apart and outlives the wait.
        unsafe {
            s1.irecv(Source::Rank(0), 50, nmad::Data::from_layout(inp.as_mut_ptr(), layout), r.as_ref())
        }
        .unwrap();
        r.wait();
        assert_eq!(r.result().unwrap().unwrap().len, len as u64);
    });
    for b in 0..64 {
        assert!(inp[b * 8192..b * 8192 + 4096] == out[b * 4096..(b + 1) * 4096], "{writes:?}: block {b}");
        assert!(
            inp[b * 8192 + 4096..(b + 1) * 8192].iter().all(|&x| x == 0),
            "{writes:?}: gap {b} untouched"
        );
    }
    let mut short = vec![0u8; 100_000];
    std::thread::scope(|t| {
        t.spawn(|| s0.send(1, 51, &out).unwrap());
        match s1.recv(Source::Rank(0), 51, &mut short) {
            Err(Error::Truncated { len: l, capacity: 100_000 }) => assert_eq!(l, len as u64),
            r => panic!("{r:?}"),
        }
    });
    assert!(short[..] == out[..100_000], "the truncated receive holds the message's start");
    assert!(nms[1].stats().rendezvous_written - before >= asked + 2, "both went by writes");
    finalize_all(nms);
}

#[test]
fn two_ranks_over_tcp_swap_every_size() {
    for strategy in ["default", "aggreg"] {
        let nms = ranks(2, "tcp", strategy);
        assert_eq!(nms[0].rails_to(1).unwrap(), ["tcp"]);
        swap_all_sizes(&nms);
        finalize_all(nms);
    }
}

#[test]
fn split_balance_spreads_large_messages_over_two_tcp_rails() {
    let nms = ranks(2, "tcp:127.0.0.1,tcp:127.0.0.2", "split_balance");
    assert_eq!(nms[0].rails_to(1).unwrap().len(), 2);
    swap_all_sizes(&nms);
    finalize_all(nms);
}

#[test]
fn many_threads_per_rank_send_and_receive_at_once() {
    const THREADS: u64 = 4;
    const EACH: u64 = 500;
    let nms = ranks(2, "tcp", "aggreg");
    std::thread::scope(|t| {
        for (me, nm) in nms.iter().enumerate() {
            for th in 0..THREADS {
                t.spawn(move || {
                    let s = nm.session(9);
                    let peer = 1 - me as u32;
                    for i in 0..EACH {
                        let len = [8usize, 1000, 70_000][(i % 3) as usize];
                        let out = pattern(th * 10_000 + i, len);
                        let mut inp = vec![0u8; len];
                        scope(|sc| {
                            let r = sc.irecv(&s, Source::Rank(peer), th, &mut inp).unwrap();
                            let w = sc
                                .isend(&s, peer, th, &out, SendMode { sync: i % 5 == 0, header_len: 0 })
                                .unwrap();
                            r.wait();
                            w.wait();
                            r.result().unwrap().unwrap();
                        });
                        assert!(inp == out, "thread {th} message {i}");
                    }
                });
            }
        }
    });
    // Any-source, any-tag receives see every message exactly once.
    std::thread::scope(|t| {
        let (a, b) = (&nms[0], &nms[1]);
        t.spawn(move || {
            let s = a.session(10);
            for i in 0..200u64 {
                s.send(1, i % 7, &i.to_le_bytes()).unwrap();
            }
        });
        t.spawn(move || {
            let s = b.session(10);
            let mut seen = [false; 200];
            for _ in 0..200 {
                let mut buf = [0u8; 8];
                let st = s.recv(Source::Any, TagMatch::ANY, &mut buf).unwrap();
                let i = u64::from_le_bytes(buf);
                assert_eq!(st.tag, i % 7);
                assert!(!std::mem::replace(&mut seen[i as usize], true), "message {i} twice");
            }
        });
    });
    finalize_all(nms);
}

#[test]
fn a_vanished_peer_fails_pending_requests_instead_of_hanging() {
    let mut nms = ranks(2, "tcp", "aggreg");
    let s = nms[0].session(1);
    s.send(1, 0, b"hello").unwrap(); // connects
    let gone = nms.pop().unwrap();
    let mut buf = [0u8; 8];
    let t = Instant::now();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        drop(gone); // shuts its drivers down without finalizing
    });
    match s.recv(Source::Rank(1), 5, &mut buf) {
        Err(Error::PeerFailed { peer: 1, .. }) => {}
        r => panic!("expected a peer failure, got {r:?}"),
    }
    assert!(t.elapsed() < Duration::from_secs(10));
    assert!(matches!(s.send(1, 0, b"again"), Err(Error::PeerFailed { .. })), "later sends fail at once");
}

/// A session closed on both ranks and opened again with the same id (madmpi reuses context ids)
/// carries on: its sequence numbers continue where the gates' counters are.
#[test]
fn a_session_reopened_with_the_same_id_carries_on() {
    let nms = ranks(2, "tcp", "aggreg");
    std::thread::scope(|t| {
        for (me, nm) in nms.iter().enumerate() {
            t.spawn(move || {
                let peer = 1 - me as u32;
                for incarnation in 0..3u8 {
                    let s = nm.session(5);
                    for i in 0..(3 + incarnation) {
                        let out = [me as u8, incarnation, i];
                        let mut inp = [0u8; 3];
                        scope(|sc| {
                            let r = sc.irecv(&s, Source::Rank(peer), 1, &mut inp).unwrap();
                            s.send(peer, 1, &out).unwrap();
                            r.wait();
                            r.result().unwrap().unwrap();
                        });
                        assert_eq!(inp, [peer as u8, incarnation, i]);
                    }
                    // Both sides close this incarnation before either opens the next (as
                    // madmpi's context-id agreement guarantees).
                    nm.close_session(5);
                    nm.session(6).send(peer, 0, b"").unwrap();
                    nm.session(6).recv(Source::Rank(peer), 0, &mut []).unwrap();
                }
            });
        }
    });
    finalize_all(nms);
}

/// A revoked session: a receive posted on it completes with `Revoked`, later receives and sends
/// fail at once, a message arriving for it is dropped, and other sessions go on; a monitor can
/// revoke it from the progress engine when a notice arrives.
#[test]
fn a_revoked_session_fails_its_receives_and_sends_and_drops_arrivals() {
    let nms = ranks(2, "shm", "aggreg");
    std::thread::scope(|t| {
        for (me, nm) in nms.iter().enumerate() {
            t.spawn(move || {
                let peer = 1 - me as u32;
                let s = nm.session(8);
                if me == 0 {
                    let revoked_by_notice: nmad::SessionMonitor =
                        Arc::new(|s: &nmad::Session, st: &nmad::Status| {
                            s.revoke(&format!("notice {}", st.tag))
                        });
                    s.monitor(Source::Any, TagMatch::exact(99), revoked_by_notice);
                    let mut b = [0u8; 1];
                    // Rank 1's notice revokes the session under this pending receive.
                    let r = s.recv(Source::Rank(peer), 1, &mut b);
                    assert_eq!(r, Err(Error::Revoked("notice 99".into())));
                    assert_eq!(s.revoked().as_deref(), Some("notice 99"));
                    assert!(matches!(s.recv(Source::Any, 1, &mut b), Err(Error::Revoked(_))));
                    assert!(matches!(s.send(peer, 1, b"x"), Err(Error::Revoked(_))));
                    nm.session(9).send(peer, 0, b"").unwrap();
                    // Sent by rank 1 after the notice: dropped, never matched.
                    nm.session(9).recv(Source::Rank(peer), 0, &mut []).unwrap();
                    assert_eq!(s.unexpected_len(), 0);
                } else {
                    std::thread::sleep(Duration::from_millis(50));
                    s.send(peer, 99, b"").unwrap();
                    nm.session(9).recv(Source::Rank(peer), 0, &mut []).unwrap();
                    s.send(peer, 1, b"late").unwrap();
                    nm.session(9).send(peer, 0, b"").unwrap();
                    assert_eq!(s.revoked(), None, "revocation is local");
                }
            });
        }
    });
    finalize_all(nms);
}

/// Sends waiting for their receiver's answer (a rendezvous, a synchronous send) whose message
/// the receiver drops unmatched when it revokes the session are told (NAK): they fail with
/// `Revoked` instead of waiting forever; the peers go on talking on other sessions.
#[test]
fn a_revocation_fails_the_senders_waiting_for_an_answer() {
    for drivers in ["shm", "tcp"] {
        let nms = ranks(2, drivers, "aggreg");
        std::thread::scope(|t| {
            for (me, nm) in nms.iter().enumerate() {
                t.spawn(move || {
                    let peer = 1 - me as u32;
                    let (s, other) = (nm.session(8), nm.session(9));
                    if me == 0 {
                        other.recv(Source::Rank(peer), 0, &mut []).unwrap();
                        s.revoke("test");
                    } else {
                        let big = vec![7u8; 4 << 20];
                        scope(|sc| {
                            let rdv = sc.isend(&s, peer, 1, &big, SendMode::default()).unwrap();
                            let sync = sc.isend(&s, peer, 2, b"x", SendMode::SYNC).unwrap();
                            other.send(peer, 0, b"").unwrap();
                            for r in [rdv, sync] {
                                r.wait();
                                assert!(
                                    matches!(r.result(), Some(Err(Error::Revoked(_)))),
                                    "{drivers}: {r:?}"
                                );
                            }
                        });
                        assert_eq!(
                            nm.stats().rendezvous_sent,
                            1,
                            "{drivers}: the large send was a rendezvous"
                        );
                    }
                    // Both sides still exchange on another session.
                    other.send(peer, 3, b"go").unwrap();
                    other.recv(Source::Rank(peer), 3, &mut [0u8; 2]).unwrap();
                });
            }
        });
        finalize_all(nms);
    }
}

/// A rank waiting on a receive from one peer (whose link its waits look at before anything
/// else) still takes in what another peer sends meanwhile: that peer sends twice what its
/// ring holds, and finishes before the awaited message is even sent.
#[test]
fn a_waiter_on_one_peer_still_takes_in_what_the_others_send() {
    const N: u64 = 128;
    const LEN: usize = 16 << 10;
    let nms = ranks(3, "shm", "default");
    let (flooded, go) = std::sync::mpsc::channel();
    std::thread::scope(|t| {
        let (a, b, c) = (&nms[0], &nms[1], &nms[2]);
        let (s0, s1, s2) = (a.session(1), b.session(1), c.session(1));
        t.spawn(move || {
            for i in 0..N {
                s2.send(0, 1000 + i, &pattern(i, LEN)).unwrap();
            }
            flooded.send(()).unwrap();
        });
        t.spawn(move || {
            go.recv().unwrap();
            s1.send(0, 7, b"late").unwrap();
        });
        let mut late = [0u8; 4];
        let st = s0.recv(Source::Rank(1), 7, &mut late).unwrap();
        assert_eq!((&late, st.len), (b"late", 4));
        let mut buf = vec![0u8; LEN];
        for i in 0..N {
            s0.recv(Source::Rank(2), 1000 + i, &mut buf).unwrap();
            assert!(buf == pattern(i, LEN), "message {i} from rank 2");
        }
    });
    finalize_all(nms);
}
