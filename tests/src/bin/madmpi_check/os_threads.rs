//! Scenario `os-threads`: MPI_THREAD_MULTIPLE with OS threads. On every rank, four threads
//! exchange messages with their namesakes of the other ranks on distinct tags (posted receives,
//! blocking sends), while two more threads exchange messages with random tags received with any
//! source and any tag (plain receives and matched probes). Sizes are mostly small with some
//! rendezvous; every message is checked, each any-tag message must arrive exactly once, and each
//! thread's checksum must match.

use crate::ok;
use madmpi::comm::Comm;
use madmpi::env::universe::Universe;
use madmpi::p2p::{From, Rank, Tag};
use madmpi::request::{Mode, wait_all};
use std::collections::HashSet;
use std::sync::Mutex;
use tests::{Rng, check_payload, fill_payload, stress_size};

/// Message identity: kind (0 tagged, 1 any-tag), sender, thread, receiver, index.
fn id(kind: u64, from: u32, thread: u32, to: u32, k: usize) -> u64 {
    kind << 60 | u64::from(from) << 48 | u64::from(thread) << 40 | u64::from(to) << 32 | k as u64
}

const MAX_SIZE: u64 = 96 << 10;

/// Size (at least 8 bytes: the id) and tag of message `id`.
fn shape(id: u64) -> (usize, i32) {
    let mut r = Rng::new(id);
    (stress_size(&mut r, MAX_SIZE).max(8) as usize, r.below(1000) as i32)
}

fn payload(id: u64) -> Vec<u8> {
    let mut b = vec![0u8; shape(id).0];
    fill_payload(id, &mut b);
    b
}

/// FNV-1a, folded over messages by wrapping addition (order-independent).
fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &x| (h ^ u64::from(x)).wrapping_mul(0x100_0000_01b3))
}

const TAGGED: u32 = 4;
const ANY: u32 = 2;

pub fn run(u: &Universe) {
    let m: usize = std::env::args().nth(2).map_or(200, |s| s.parse().expect("a message count"));
    let w = u.world();
    let me = w.rank();
    let peers: Vec<u32> = (0..3).filter(|&r| r != me).collect();
    let (a, b) = (w.dup().expect("dup"), w.dup().expect("dup"));
    let seen = Mutex::new(HashSet::new());
    let sums: Vec<u64> = std::thread::scope(|s| {
        let mut hs = Vec::new();
        for t in 0..TAGGED {
            let (a, peers) = (&a, &peers);
            hs.push(s.spawn(move || tagged(a, t, m, peers)));
        }
        for t in 0..ANY {
            let (b, peers, seen) = (&b, &peers, &seen);
            hs.push(s.spawn(move || any_tag(b, t, m, peers, seen)));
        }
        hs.into_iter().map(|h| h.join().expect("thread")).collect()
    });
    // Tagged threads: each got exactly its namesakes' messages.
    for t in 0..TAGGED {
        let want = peers.iter().flat_map(|&p| (0..m).map(move |k| id(0, p, t, me, k)));
        let want = want.fold(0u64, |s, i| s.wrapping_add(fnv(&payload(i))));
        assert_eq!(sums[t as usize], want, "checksum of tagged thread {t}");
    }
    ok(&format!("{TAGGED} threads x 2 peers x {m} messages on distinct tags, checksums match"));
    // Any-tag threads: together, every message sent here, once each.
    let seen = seen.into_inner().unwrap();
    let want: HashSet<u64> = peers
        .iter()
        .flat_map(|&p| (0..ANY).flat_map(move |t| (0..m).map(move |k| id(1, p, t, me, k))))
        .collect();
    assert_eq!(seen.len(), want.len(), "any-tag messages received");
    assert!(seen == want, "the any-tag messages received are those sent here");
    let sum = sums[TAGGED as usize..].iter().fold(0u64, |s, &x| s.wrapping_add(x));
    let want = want.iter().fold(0u64, |s, &i| s.wrapping_add(fnv(&payload(i))));
    assert_eq!(sum, want, "checksum of the any-tag threads");
    ok(&format!(
        "{ANY} threads x 2 peers x {m} messages with any source and any tag, each once, checksum matches"
    ));
}

/// Thread `t`: receives from thread `t` of each peer on tag `t` (posted first), sends them its
/// messages with blocking sends; returns the checksum of what it received.
fn tagged(c: &Comm, t: u32, m: usize, peers: &[u32]) -> u64 {
    let me = c.rank();
    let ids: Vec<(u32, u64)> =
        peers.iter().flat_map(|&p| (0..m).map(move |k| (p, id(0, p, t, me, k)))).collect();
    let mut bufs: Vec<Vec<u8>> = ids.iter().map(|&(_, i)| vec![0u8; shape(i).0]).collect();
    let reqs: Vec<_> = ids
        .iter()
        .zip(bufs.iter_mut())
        .map(|(&(p, _), b)| c.irecv(b, From::Rank(p), Tag::Tag(t as i32)).expect("irecv"))
        .collect();
    for k in 0..m {
        for &p in peers {
            c.send(&payload(id(0, me, t, p, k)), Rank::Rank(p), t as i32).expect("send");
        }
    }
    let sts = wait_all(reqs).expect("wait_all");
    let mut sum = 0u64;
    for ((&(p, i), st), b) in ids.iter().zip(sts).zip(&bufs) {
        assert_eq!((st.source, st.tag, st.bytes), (Some(p), t as i32, b.len() as u64), "status of {i:#x}");
        assert!(check_payload(i, b), "payload of message {i:#x} (thread {t}, from {p})");
        sum = sum.wrapping_add(fnv(b));
    }
    sum
}

/// Thread `t`: sends its messages (random tags) with isend, receives its share of what comes
/// here with any source and any tag, alternating plain receives and matched probes.
fn any_tag(c: &Comm, t: u32, m: usize, peers: &[u32], seen: &Mutex<HashSet<u64>>) -> u64 {
    let me = c.rank();
    let out: Vec<(u32, u64, Vec<u8>)> = peers
        .iter()
        .flat_map(|&p| (0..m).map(move |k| id(1, me, t, p, k)))
        .map(|i| ((i >> 32) as u32 & 0xff, i, payload(i)))
        .collect();
    let sends: Vec<_> = out
        .iter()
        .map(|(p, i, b)| c.isend(b, Rank::Rank(*p), shape(*i).1, Mode::Standard).expect("isend"))
        .collect();
    let mut sum = 0u64;
    let mut buf = vec![0u8; MAX_SIZE as usize];
    for n in 0..peers.len() * m {
        let (st, len) = if n % 2 == 0 {
            let st = c.recv(&mut buf, From::Any, Tag::Any).expect("recv");
            (st, st.bytes as usize)
        } else {
            let msg = c.mprobe(From::Any, Tag::Any).expect("mprobe");
            let len = msg.status().bytes as usize;
            let st = msg.recv(&mut buf[..len]).expect("mrecv");
            (st, len)
        };
        let b = &buf[..len];
        let i = u64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
        let from = (i >> 48) as u32 & 0xfff;
        assert_eq!(
            ((i >> 60), (i >> 32) as u32 & 0xff),
            (1, me),
            "message {i:#x} is an any-tag message to rank {me}"
        );
        assert_eq!(
            (st.source, st.tag, st.bytes as usize),
            (Some(from), shape(i).1, shape(i).0),
            "status of {i:#x}"
        );
        assert!(check_payload(i, b), "payload of message {i:#x}");
        assert!(seen.lock().unwrap().insert(i), "message {i:#x} received twice");
        sum = sum.wrapping_add(fnv(b));
    }
    wait_all(sends).expect("isends");
    sum
}
