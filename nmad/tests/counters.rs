//! The core's counters and events (what madmpi's MPI_T shows), on one rank over `self`:
//! eager and rendezvous sends, unexpected arrivals, credit stalls and per-driver traffic, each
//! counted and reported once.

use nmad::bootstrap::LocalJob;
use nmad::observe::{EVENTS, Event};
use nmad::{Config, Nmad, SendMode, Source, scope};
use std::sync::{Arc, Mutex};

fn one_rank(rdv_slots: u64) -> Nmad {
    let b = LocalJob::ranks(1).unwrap().pop().unwrap();
    let config = Config {
        drivers: Some(vec!["self".into()]),
        strategy: nmad::strategies::by_name("aggreg").unwrap(),
        eager_limit: 1024,
        unexpected_budget: 1 << 20,
        rdv_slots,
        rdv_writes: nmad::RdvWrites::default(),
        fallback: None,
        failover: Some(Default::default()),
    };
    let pio = pioman::Pioman::builder().without_marcel().build().unwrap();
    Nmad::builder().bootstrap(Arc::new(b)).pioman(pio).config(config).build().unwrap()
}

#[test]
fn sends_arrivals_stalls_and_traffic_are_counted_and_reported() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    EVENTS.set(Some(Arc::new(move |e: &Event| s2.lock().unwrap().push(*e))));
    let nm = one_rank(1);
    let s = nm.session(1);
    let before = nm.stats();
    // Three messages above the eager limit, none received yet: one rendezvous slot, so the
    // second and third wait for it.
    let big = vec![7u8; 10_000];
    scope(|sc| {
        let mut reqs: Vec<_> =
            (0..3).map(|t| sc.isend(&s, 0, 100 + t, &big, SendMode::default()).unwrap()).collect();
        // Queued behind the rendezvous (messages to a peer never overtake each other).
        reqs.push(sc.isend(&s, 0, 5, b"small", SendMode::default()).unwrap());
        for t in 0..3 {
            let mut buf = vec![0u8; big.len()];
            s.recv(Source::Rank(0), 100 + t, &mut buf).unwrap();
            assert!(buf == big);
        }
        let mut small = [0u8; 5];
        s.recv(Source::Rank(0), 5, &mut small).unwrap();
        for r in reqs {
            r.wait();
        }
    });
    let after = nm.stats();
    assert_eq!(after.rendezvous_sent - before.rendezvous_sent, 3);
    assert!(after.eager_sent - before.eager_sent >= 1, "the small message went eagerly");
    assert!(after.credit_stalls - before.credit_stalls >= 1, "sends waited for the rendezvous slot");
    // The small message arrives before its receive is posted; the rendezvous requests too when
    // a progression thread polls before the receives are posted.
    let unexpected = after.unexpected_messages - before.unexpected_messages;
    assert!((1..=4).contains(&unexpected), "{before:?} {after:?}");
    let drivers = nm.driver_stats();
    assert_eq!(drivers.len(), 1);
    let own = &drivers[0];
    assert_eq!(own.name, "self");
    // `self` moves rendezvous data by reading the sender's memory (the receiving side counts
    // it) or, for a receive matched by a progression thread, by writing it (both sides do).
    let written = after.rendezvous_written - before.rendezvous_written;
    assert!(own.packets >= 4 && own.bytes > written * 10_000, "{own:?}");
    assert!(own.bytes_received >= 3 * 10_000 + own.bytes - written * 10_000, "{own:?} {written}");
    nm.finalize().unwrap();
    EVENTS.set(None);
    let seen = seen.lock().unwrap();
    let rdv = seen.iter().filter(|e| matches!(e, Event::RendezvousStarted { peer: 0, len: 10_000 })).count();
    assert_eq!(rdv, 3, "{seen:?}");
    assert!(seen.iter().any(|e| matches!(e, Event::CreditStall { peer: 0 })), "{seen:?}");
    assert!(
        seen.iter().any(|e| matches!(e, Event::Unexpected { session: 1, source: 0, tag: 5, len: 5 })),
        "{seen:?}"
    );
}
