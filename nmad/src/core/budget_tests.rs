//! Each protocol violation, fed to a core as crafted packets from a peer (the process itself,
//! through its `self` gate): within the bounds everything is kept; one step beyond, the peer is
//! failed, a receive posted for it completes with the failure, and what it made the core hold
//! is released.

use super::*;
use crate::core::Core;
use crate::core::request::Error;
use crate::core::wire::{self, Encoder, MsgHeader};
use crate::{Request, Session, Source};
use std::sync::Arc;

/// Granted to the peer: 64 KiB and 4 rendezvous slots (a job of one: the whole budget).
const GRANT: u64 = 64 << 10;
const SLOTS: u64 = 4;
const PEER: u32 = 0;

fn core() -> Arc<Core> {
    crate::core::test_core(GRANT, SLOTS)
}

fn data(session: u32, seq: u32, len: usize) -> Vec<u8> {
    let mut p = vec![wire::VERSION];
    Encoder(&mut p).data(&MsgHeader { flags: 0, session, tag: 7, seq }, len, 0);
    p.resize(p.len() + len, seq as u8);
    p
}

fn rdv(session: u32, seq: u32) -> Vec<u8> {
    let mut p = vec![wire::VERSION];
    Encoder(&mut p).rdv(&MsgHeader { flags: 0, session, tag: 7, seq }, 1 << 20, 1, &[1; 100], None);
    p
}

/// The peer's failure, if it was failed.
fn failure(core: &Core) -> Option<String> {
    match core.gate(PEER).unwrap().failure() {
        Some(Error::PeerFailed { reason, .. }) => Some(reason),
        _ => None,
    }
}

/// A receive from the peer that nothing it sends matches.
fn pending_recv(core: &Arc<Core>) -> std::pin::Pin<Box<Request>> {
    let req = Box::pin(Request::new());
    // SAFETY: no buffer; the request outlives its completion (checked by the caller).
    unsafe { Session(core.session(5)).irecv(Source::Rank(PEER), 99, crate::Data::None, req.as_ref()) }
        .unwrap();
    req
}

/// After a violation: the receive failed, nothing is held, later arrivals are dropped.
fn assert_failed_and_released(core: &Arc<Core>, req: &Request, what: &str) {
    let reason = failure(core).unwrap_or_else(|| panic!("the peer was not failed ({what})"));
    assert!(reason.starts_with("protocol violation") && reason.contains(what), "{reason}");
    assert!(req.test(), "a receive from the failed peer is still pending");
    assert!(matches!(req.result(), Some(Err(Error::PeerFailed { peer: PEER, .. }))), "{:?}", req.result());
    assert_eq!(core.stats().unexpected_bytes, 0, "what the peer made the core hold is released");
    core.on_packet(PEER, &data(1, 0, 10));
    assert_eq!(core.session(1).unexpected_len(), 0, "arrivals after the violation are dropped");
    assert!(core.early.lock().unwrap().is_empty());
}

#[test]
fn eager_bytes_beyond_the_credit_fail_the_peer() {
    let core = core();
    let s = core.session(1);
    let req = pending_recv(&core);
    let len = 10 << 10;
    let fits = GRANT / (len as u64 + 64);
    for seq in 0..fits as u32 {
        core.on_packet(PEER, &data(1, seq, len));
    }
    assert_eq!(failure(&core), None, "within the credit");
    assert_eq!(s.unexpected_len(), fits as usize);
    assert_eq!(core.gate(PEER).unwrap().allowance.held(), (fits * (len as u64 + 64), 0));
    // Receiving one gives its credit back: one more fits.
    let mut buf = vec![0u8; len];
    Session(s.clone()).recv(Source::Rank(PEER), 7, &mut buf).unwrap();
    core.on_packet(PEER, &data(1, fits as u32, len));
    assert_eq!(failure(&core), None, "credit owed back is room again");
    core.on_packet(PEER, &data(1, fits as u32 + 1, len));
    assert_failed_and_released(&core, &req, "beyond its credit");
    core.shutdown();
}

#[test]
fn rendezvous_requests_beyond_the_slots_fail_the_peer() {
    let core = core();
    let req = pending_recv(&core);
    for seq in 0..SLOTS as u32 {
        core.on_packet(PEER, &rdv(1, seq));
    }
    assert_eq!(failure(&core), None, "within the slots");
    assert_eq!(core.session(1).unexpected_len(), SLOTS as usize);
    core.on_packet(PEER, &rdv(1, SLOTS as u32));
    assert_failed_and_released(&core, &req, "beyond its 4 slots");
    core.shutdown();
}

#[test]
fn a_sequence_number_beyond_the_window_fails_the_peer() {
    let core = core();
    let s = core.session(1);
    let req = pending_recv(&core);
    let window = (GRANT / 64 + SLOTS) as u32;
    core.on_packet(PEER, &data(1, window - 1, 0));
    assert_eq!(failure(&core), None, "the last sequence number of the window waits for the others");
    assert_eq!(s.unexpected_len(), 0);
    assert!(core.stats().unexpected_bytes > 0);
    core.on_packet(PEER, &data(1, window, 0));
    assert_failed_and_released(&core, &req, "outside the window");
    core.shutdown();
}

#[test]
fn a_sequence_number_sent_twice_fails_the_peer() {
    for (first, again) in [(3, 3), (0, 0)] {
        let core = core();
        let _s = core.session(1);
        let req = pending_recv(&core);
        core.on_packet(PEER, &data(1, first, 4));
        assert_eq!(failure(&core), None);
        core.on_packet(PEER, &data(1, again, 4));
        let what = if first == 0 { "outside the window" } else { "sent twice" };
        assert_failed_and_released(&core, &req, what);
        core.shutdown();
    }
}

#[test]
fn messages_for_too_many_unknown_sessions_fail_the_peer() {
    let core = core();
    let req = pending_recv(&core);
    for id in 1000..1000 + UNKNOWN_SESSIONS {
        core.on_packet(PEER, &data(id, 0, 1));
        core.on_packet(PEER, &data(id, 1, 1)); // a second message: the same session
    }
    assert_eq!(failure(&core), None, "{UNKNOWN_SESSIONS} sessions are allowed");
    // Creating one delivers its messages and frees its place.
    assert_eq!(core.session(1000).unexpected_len(), 2);
    core.on_packet(PEER, &data(2000, 0, 1));
    assert_eq!(failure(&core), None, "a created session no longer counts");
    core.on_packet(PEER, &data(2001, 0, 1));
    assert_failed_and_released(&core, &req, "sessions not created here");
    assert_eq!(core.session(1001).unexpected_len(), 0, "the peer's early messages were dropped");
    core.shutdown();
}

#[test]
fn the_window_and_the_bound_follow_the_grant() {
    let a = Allowance::new(64 << 20, 1024);
    assert_eq!(a.window, (1 << 20) + 1024);
    assert_eq!(a.check_seq(5, u32::MAX - 2), Ok(8), "sequence numbers wrap");
    assert!(a.check_seq(u32::MAX, 0).is_err(), "behind the expected one");
    assert_eq!(Allowance::new(u64::MAX, u64::MAX).window, 1 << 31);
    assert_eq!(per_peer(1000, 2), 1000 + 2 * RDV_FOOTPRINT);
}
