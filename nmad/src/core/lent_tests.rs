//! A packet lent by its driver (`Sink::packet_lent`) is received exactly as the same bytes
//! copied out (`Sink::packet`): the same statuses and bytes in posted receives (contiguous,
//! scattered, truncated), in receives posted later, around the copy window's edges; a
//! malformed one fails the peer the same way; and every payload byte is read out of the packet
//! once, apart from the window's look ahead.

use super::*;
use crate::core::request::{Error, Status};
use crate::core::wire::{self, Encoder, MsgHeader};
use crate::interfaces::data::Blocks;
use crate::{Data, Request, Session, Source};
use std::pin::Pin;
use std::sync::atomic::AtomicUsize;

const PEER: u32 = 0;
const SESSION: u32 = 1;

/// Bytes lent by a test driver, counting what is read of them.
struct VecPacket {
    bytes: Vec<u8>,
    read: AtomicUsize,
}

impl LentPacket for VecPacket {
    fn len(&self) -> usize {
        self.bytes.len()
    }

    fn read(&self, at: usize, dst: &mut [u8]) {
        dst.copy_from_slice(&self.bytes[at..at + dst.len()]);
        self.read.fetch_add(dst.len(), Relaxed);
    }
}

fn payload(seq: u32, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + seq as usize * 13) as u8).collect()
}

/// A packet of DATA chunks (tag = sequence number, payload by [`payload`]), then `tail`
/// encoded by the caller.
fn packet(msgs: &[(u32, usize)], tail: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut p = vec![wire::VERSION];
    for &(seq, len) in msgs {
        Encoder(&mut p).data(&MsgHeader { flags: 0, session: SESSION, tag: u64::from(seq), seq }, len, 0);
        p.extend(payload(seq, len));
    }
    tail(&mut p);
    p
}

/// What each receive got: (status or error, bytes).
type Outcome = Vec<(Result<Status, Error>, Vec<u8>)>;

/// Feeds `packets` to a fresh core, lent or copied, around receives of every kind; returns
/// what they got, the peer's failure, and the bytes read out of lent packets.
fn receive(packets: &[Vec<u8>], lent: bool, tags: &[(u64, usize)]) -> (Outcome, Option<String>, usize) {
    let core = test_core(1 << 20, 8);
    let s = core.session(SESSION);
    // Posted before: the first receive contiguous, the second scattered in two blocks (odd
    // and even halves of its buffer), the rest received after the packets.
    let mut bufs: Vec<Vec<u8>> = tags.iter().map(|&(_, cap)| vec![0xEE; cap]).collect();
    let mut reqs: Vec<Pin<Box<Request>>> = Vec::new();
    for (i, (&(tag, cap), buf)) in tags.iter().zip(&mut bufs).enumerate().take(2) {
        let req = Box::pin(Request::new());
        let data = if i == 0 {
            // SAFETY: `buf` outlives the request's completion (waited for below).
            unsafe { Data::from_raw(buf.as_mut_ptr(), cap) }
        } else {
            let half = cap / 2;
            let layout = Arc::new(Blocks::new([(half as isize, cap - half), (0, half)]));
            // SAFETY: as above; the blocks lie inside `buf`.
            unsafe { Data::from_layout(buf.as_mut_ptr(), layout) }
        };
        // SAFETY: as above.
        unsafe { Session(s.clone()).irecv(Source::Rank(PEER), tag, data, req.as_ref()) }.unwrap();
        reqs.push(req);
    }
    let mut read = 0;
    for p in packets {
        if lent {
            let v = VecPacket { bytes: p.clone(), read: AtomicUsize::new(0) };
            core.on_lent_packet(PEER, &v);
            read += v.read.load(Relaxed);
        } else {
            core.on_packet(PEER, p);
        }
    }
    let failed = match core.gate(PEER).unwrap().failure() {
        Some(Error::PeerFailed { reason, .. }) => Some(reason),
        _ => None,
    };
    let mut out = Outcome::new();
    for (i, req) in reqs.iter().enumerate() {
        req.wait();
        let mut got = bufs[i].clone();
        if i == 1 {
            // Unscatter: the message's first half went to the buffer's second half.
            let half = got.len() / 2;
            got.rotate_left(half);
        }
        out.push((req.result().unwrap(), got));
    }
    if failed.is_none() {
        for (i, &(tag, _)) in tags.iter().enumerate().skip(2) {
            let r = Session(s.clone()).recv(Source::Rank(PEER), tag, &mut bufs[i]);
            out.push((r, bufs[i].clone()));
        }
    }
    core.shutdown();
    (out, failed, read)
}

fn same_both_ways(packets: &[Vec<u8>], tags: &[(u64, usize)]) -> (Outcome, usize) {
    let (copied, failed_copied, _) = receive(packets, false, tags);
    let (lent, failed_lent, read) = receive(packets, true, tags);
    assert_eq!(failed_lent, failed_copied);
    assert_eq!(lent.len(), copied.len());
    for (i, (l, c)) in lent.iter().zip(&copied).enumerate() {
        assert_eq!(l.0, c.0, "receive {i}: status");
        assert!(l.1 == c.1, "receive {i}: bytes differ");
    }
    (lent, read)
}

#[test]
fn lent_packets_are_received_as_copied_ones() {
    let tail = |p: &mut Vec<u8>| Encoder(p).credit(0, 0);
    let packets = vec![
        // One large message, then the credit chunk past it.
        packet(&[(0, 5000)], tail),
        // Aggregated: small, large, empty, and a message that straddles the window's edge.
        packet(&[(1, 10), (2, 3000), (3, 0), (4, 60)], |_| {}),
        // A chunk longer than the window after a large message: the rest from one copy.
        packet(&[(5, 300)], |p| {
            let h = MsgHeader { flags: 0, session: SESSION, tag: 6, seq: 6 };
            Encoder(p).rdv(&h, 1 << 20, 42, &[9; 1000], None);
        }),
    ];
    let tags = [(0, 5000), (2, 4000), (1, 10), (3, 0), (4, 60), (5, 100)];
    let (out, read) = same_both_ways(&packets, &tags);
    assert_eq!(out[0].0.as_ref().unwrap().received, 5000);
    assert!(out[0].1 == payload(0, 5000), "the large message is intact");
    let mut second = payload(2, 3000);
    second.resize(4000, 0xEE);
    assert!(out[1].1 == second, "the scattered receive is intact");
    assert!(matches!(out[5].0, Err(Error::Truncated { len: 300, capacity: 100 })), "{:?}", out[5].0);
    let total: usize = packets.iter().map(Vec::len).sum();
    assert!(read <= total + 64 * 8, "payloads read once: {read} bytes read of {total}");
}

#[test]
fn a_malformed_lent_packet_fails_the_peer_as_a_copied_one() {
    let mut beyond = packet(&[(0, 400)], |_| {});
    beyond.truncate(300); // the DATA length goes past the end
    let mut version = packet(&[(0, 400)], |_| {});
    version[0] ^= 1;
    let mut cut_rdv = packet(&[(0, 300)], |p| {
        let h = MsgHeader { flags: 0, session: SESSION, tag: 1, seq: 1 };
        Encoder(p).rdv(&h, 1 << 20, 42, &[9; 1000], None);
    });
    cut_rdv.truncate(cut_rdv.len() - 10);
    for p in [beyond, version, cut_rdv] {
        let (copied, failed, _) = receive(std::slice::from_ref(&p), false, &[(0, 400)]);
        assert!(failed.is_some(), "the copied packet fails the peer");
        let (lent, failed_lent, _) = receive(std::slice::from_ref(&p), true, &[(0, 400)]);
        assert_eq!(failed_lent, failed, "the lent packet fails the peer the same way");
        assert_eq!(lent[0].0.is_err(), copied[0].0.is_err());
    }
}
