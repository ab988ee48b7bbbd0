//! Scenario `marcel`: MPI_THREAD_MULTIPLE with marcel user threads. Every rank runs MPI inside a
//! marcel runtime with ONE LWP. On rank 0, four user threads block (three receives, one
//! synchronous send) on messages that ranks 1 and 2 send only after a trigger, and a fifth user
//! thread of the same LWP first runs round trips with rank 2, then sends the triggers. A blocking
//! call that kept the LWP would never let the fifth thread run: marcel's hog bound would have to
//! take the LWP from it, which rank 0 asserts never happened (and without the hog bound the job
//! would deadlock, ended by the watchdog).

use crate::ok;
use madmpi::comm::Comm;
use madmpi::p2p::{From, Rank, Status, Tag};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};

/// marcel's hog bound in the `marcel` scenario (see [`one_lwp_runtime`]).
const QUANTUM: std::time::Duration = std::time::Duration::from_millis(250);

/// Round trips rank 0's fifth user thread runs with rank 2 while the others are blocked.
const ROUNDS: usize = 200;

pub fn run() {
    let rt = one_lwp_runtime();
    rt.block_on(|| {
        let u = crate::start("marcel");
        let h = marcel::Handle::current().expect("inside the runtime");
        assert_eq!(h.num_lwps(), 1, "one LWP");
        let w = u.world().clone();
        match w.rank() {
            0 => blocked_threads(&w, &h),
            1 => {
                w.recv(&mut [0u8; 1], From::Rank(0), Tag::Tag(20)).expect("trigger");
                w.send(&[10u32; 16], Rank::Rank(0), 10).expect("send");
                w.send(&[12u64; 3], Rank::Rank(0), 12).expect("send");
                let mut b = [0u16; 100];
                w.recv(&mut b, From::Rank(0), Tag::Tag(40)).expect("recv of the ssend");
                assert!(b.iter().all(|&x| x == 40), "ssend payload");
                ok("relayed after the trigger");
            }
            _ => {
                let mut x = [0u64];
                for i in 0..2 * ROUNDS as u64 {
                    w.recv(&mut x, From::Rank(0), Tag::Tag(30)).expect("ping");
                    assert_eq!(x, [i]);
                    w.send(&[i + 1], Rank::Rank(0), 30).expect("pong");
                }
                w.recv(&mut [0u8; 1], From::Rank(0), Tag::Tag(21)).expect("trigger");
                w.send(&vec![11u64; 100_000], Rank::Rank(0), 11).expect("send");
                ok("relayed after the trigger");
            }
        }
        u.finalize().expect("MPI_Finalize");
    });
    rt.shutdown_timeout(std::time::Duration::from_secs(5)).expect("marcel shutdown");
}

/// `ROUNDS` round trips with rank 2 (the pings number from `first`); their duration.
fn round_trips(w: &Comm, first: u64) -> std::time::Duration {
    let t0 = std::time::Instant::now();
    let mut x = [0u64];
    for i in first..first + ROUNDS as u64 {
        w.send(&[i], Rank::Rank(2), 30).expect("ping");
        w.recv(&mut x, From::Rank(2), Tag::Tag(30)).expect("pong");
        assert_eq!(x, [i + 1]);
    }
    t0.elapsed()
}

/// A marcel runtime of one LWP, on a CPU of its own for rank 0.
///
/// By default every rank would pin its one LWP to the same first CPU (nothing shares the cores out
/// between the ranks of a node), and three ranks would take turns on one core. Worse, a blocking
/// call is rescued (its LWP handed to a spare kernel thread) as soon as the core goes idle, which
/// a SCHED_IDLE sentinel pinned there detects: if other ranks keep that core busy, only the
/// monitor's backstop rescues, after one or two quanta (and unpinned LWPs have no sentinel at
/// all). So rank 0 (which blocks user threads) gets the first CPU, the other ranks the last one.
/// (The rank comes from the launcher's `PMI_RANK`, set by madrun and Hydra: MPI is initialized
/// later, inside the runtime.)
///
/// The quantum is [`QUANTUM`], 25 times the default: a user thread holding the LWP that long
/// while others wait — what a blocking call that kept its LWP looks like — is a hog hand-off,
/// which rank 0 asserts never happens, instead of being rescued silently within 20 ms. (It stays
/// short enough for the backstop to rescue legitimate blocking calls in time on a machine so
/// loaded that the sentinel never runs.)
fn one_lwp_runtime() -> marcel::Runtime {
    let cpus = marcel::topology::allowed_cpus();
    let mut b = marcel::Runtime::builder().lwps(1).pin(true).quantum(QUANTUM);
    match std::env::var("PMI_RANK").ok().and_then(|r| r.parse::<u32>().ok()) {
        Some(0) => b = b.cpus(&cpus[..1]),
        Some(_) => b = b.cpus(&cpus[cpus.len() - 1..]),
        None => {}
    }
    b.build().expect("a marcel runtime")
}

/// The LWP of the calling user thread once it is back in the run queues. (A thread whose
/// blocking call was rescued finishes its run on its own kernel thread, off the LWP, until its
/// next switch point: `current_lwp` is then `None`.)
fn lwp_after_a_switch() -> Option<usize> {
    marcel::yield_now();
    marcel::current_lwp()
}

fn blocked_threads(w: &Comm, h: &marcel::Handle) {
    let alone = round_trips(w, 0);
    // Threads about to block, and threads whose blocking call returned.
    let (entered, returned) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    // Each thread runs `f` (a blocking call; its status, for receives) and checks the status
    // against `want` (source, tag).
    let spawn = |what: &'static str, want: Option<(u32, i32)>, f: fn(&Comm) -> Option<Status>| {
        let (w, entered, returned) = (w.clone(), entered.clone(), returned.clone());
        h.spawn(move || {
            let lwp = marcel::current_lwp();
            entered.fetch_add(1, SeqCst);
            let st = f(&w);
            returned.fetch_add(1, SeqCst);
            assert_eq!(st.map(|s| (s.source.expect("a source"), s.tag)), want, "{what}: status");
            (what, lwp, lwp_after_a_switch())
        })
    };
    let blocked = [
        spawn("recv from 1, tag 10", Some((1, 10)), |w| {
            let mut b = [0u32; 16];
            let st = w.recv(&mut b, From::Rank(1), Tag::Tag(10)).expect("recv");
            assert_eq!(b, [10; 16]);
            Some(st)
        }),
        spawn("recv from any source, tag 11 (rendezvous)", Some((2, 11)), |w| {
            let mut b = vec![0u64; 100_000];
            let st = w.recv(&mut b, From::Any, Tag::Tag(11)).expect("recv");
            assert!(b.iter().all(|&x| x == 11));
            Some(st)
        }),
        spawn("recv from any source, tag 12", Some((1, 12)), |w| {
            let mut b = [0u64; 3];
            let st = w.recv(&mut b, From::Any, Tag::Tag(12)).expect("recv");
            assert_eq!(b, [12; 3]);
            Some(st)
        }),
        spawn("ssend to 1, tag 40", None, |w| {
            w.ssend(&[40u16; 100], Rank::Rank(1), 40).expect("ssend");
            None
        }),
    ];
    let n = blocked.len() as u32;
    let (e2, r2, w2) = (entered.clone(), returned.clone(), w.clone());
    let driver = h.spawn(move || {
        while e2.load(SeqCst) < n {
            marcel::yield_now();
        }
        // Nothing can have returned: ranks 1 and 2 answer only after the triggers below.
        assert_eq!(r2.load(SeqCst), 0, "a blocked call returned before its trigger");
        let busy = round_trips(&w2, ROUNDS as u64);
        assert_eq!(r2.load(SeqCst), 0, "a blocked call returned before its trigger");
        println!("# rank 0: {ROUNDS} round trips alone {alone:?}, beside the blocked threads {busy:?}");
        w2.send(&[1u8], Rank::Rank(1), 20).expect("trigger");
        w2.send(&[1u8], Rank::Rank(2), 21).expect("trigger");
        lwp_after_a_switch()
    });
    assert_eq!(driver.join().expect("driver thread"), Some(0));
    for t in blocked {
        let (what, before, after) = t.join().expect("blocked thread");
        assert_eq!((before, after), (Some(0), Some(0)), "{what}: on the one LWP");
    }
    assert_eq!(returned.load(SeqCst), n);
    let s = h.stats();
    println!(
        "# rank 0: marcel rescues {}, hog hand-offs {}, switches {}",
        s.rescues, s.hog_handoffs, s.switches
    );
    assert_eq!(
        s.hog_handoffs, 0,
        "a user thread held the LWP for a quantum ({QUANTUM:?}) while others waited"
    );
    ok(&format!(
        "{n} user threads blocked in MPI while a 5th on the same LWP ran {ROUNDS} round trips and triggered them"
    ));
}
