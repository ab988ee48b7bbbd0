//! Multi-rank tests of revocation, agreement and shrink (threads as ranks), including a rank
//! that dies unannounced.

use super::*;
use crate::comm::Runtime;
use crate::testing::on_all;
use crate::testing::{ranks, watchdog};

/// A member blocked in a receive on a communicator learns of its revocation at once; later
/// sends and receives fail with MPIX_ERR_REVOKED; agree and shrink still work on it.
#[test]
fn revocation_reaches_a_blocked_receive_and_agreements_still_work() {
    let got = on_all(3, |world| {
        let c = world.dup().unwrap();
        let me = c.rank();
        if me == 0 {
            let mut b = [0u8; 4];
            let e = c.session().recv(nmad::Source::Any, tags::p2p(1), &mut b).unwrap_err();
            assert_eq!(from_nmad(e).class(), ErrorClass::MpixRevoked);
        } else if me == 1 {
            std::thread::sleep(std::time::Duration::from_millis(50));
            revoke(&c).unwrap();
        } else {
            while !is_revoked(&c) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        assert!(is_revoked(&c));
        let e = c.session().send(c.world_rank((me + 1) % 3).unwrap(), tags::p2p(1), &[1]).unwrap_err();
        assert_eq!(from_nmad(e).class(), ErrorClass::MpixRevoked);
        let a = agree(&c, if me == 2 { 0b01 } else { 0b11 }).unwrap();
        let s = shrink(&c).unwrap();
        assert!(!is_revoked(&s));
        (a, s.size(), s.context_id() != c.context_id())
    });
    assert!(got.iter().all(|g| *g == (Agreed { flag: 0b01, unacknowledged: vec![] }, 3, true)), "{got:?}");
}

/// Rank 2 shuts down without a word: the others' agreement finds it failed (all alike), an
/// unacknowledged failure is reported, and shrink leaves it out.
#[test]
fn a_member_dying_unannounced_is_found_failed_by_everyone() {
    let _dog = watchdog("ft test", std::time::Duration::from_secs(60));
    let mut nms = ranks(4);
    let victim = nms.remove(2);
    // Links to the victim exist before it goes (as after a first collective).
    let rts: Vec<Arc<Runtime>> = nms.iter().map(|nm| crate::env::process::assemble(nm.clone())).collect();
    std::thread::scope(|t| {
        for rt in &rts {
            t.spawn(move || {
                let s = rt.nm.session(3);
                let _ = s.send(2, 9, b"x");
            });
        }
    });
    drop(victim);
    let got: Vec<_> = std::thread::scope(|t| {
        let hs: Vec<_> = rts
            .iter()
            .map(|rt| {
                t.spawn(move || {
                    let world = Comm::world(rt);
                    let a = agree(&world, 0x7).unwrap();
                    failure_ack(&world);
                    let b = agree(&world, 0x5).unwrap().checked().unwrap();
                    let s = shrink(&world).unwrap();
                    (a, b, s.group().members().to_vec(), failed_acked(&world).unwrap().members().to_vec())
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for g in &got {
        assert_eq!(g.0, Agreed { flag: 0x7, unacknowledged: vec![2] });
        assert_eq!(g.0.checked().unwrap_err().class(), ErrorClass::MpixProcFailed);
        assert_eq!((g.1, &g.2[..], &g.3[..]), (0x5, &[0, 1, 3][..], &[2][..]));
    }
    let hs: Vec<_> = rts
        .into_iter()
        .map(|rt| {
            std::thread::spawn(move || {
                assert!(failures_known(&rt));
                survivors_barrier(&rt).unwrap();
                let nm = rt.nm.clone();
                drop(rt);
                nm.finalize_survivors().unwrap();
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
}
