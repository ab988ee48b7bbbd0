//! A waiting OS thread (no marcel, adaptive policy) spins through a long wait while nothing else
//! wants its CPU, as MPICH's waits do, and sleeps in the sources' blocking waits once a thread
//! of its process computes beside it. Alone in its file: the other tests of a binary would be
//! threads of the same process, ready on the same CPU.

use pioman::eventfd::{EVENT, EventSource, notify};
use pioman::{Options, Pioman, policy};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

fn pin_to_first_cpu() {
    let id = marcel::topology::allowed_cpus()[0];
    assert!(core_affinity::set_for_current(core_affinity::CoreId { id }), "pinned to CPU {id}");
}

/// Waits on `src` for an event written `after` from now; returns the blocking waits this cost.
fn wait_for_event(pio: &Pioman, src: &Arc<EventSource>, after: Duration) -> u64 {
    let task = pio.register(src.clone(), Options::default()).unwrap();
    let before = task.stats().blocking_waits;
    let fd = src.fd();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(after);
        notify(fd).unwrap();
    });
    // Runnable until it reaches its sleep: a thread of ours ready beside the waiter, which the
    // policy rightly leaves the CPU to.
    std::thread::sleep(Duration::from_millis(2));
    pio.wait(src.cond(), EVENT);
    src.cond().clear(EVENT);
    writer.join().unwrap();
    let blocked = task.stats().blocking_waits - before;
    task.remove();
    blocked
}

#[test]
fn a_waiter_spins_while_its_cpu_is_free_and_sleeps_beside_a_computing_thread() {
    let pio = Pioman::builder()
        .policy(policy::by_name("adaptive").unwrap())
        .without_marcel()
        .threads(0)
        .build()
        .unwrap();
    let src = Arc::new(EventSource::new("own-cpu").unwrap());
    let pio2 = pio.clone();
    std::thread::spawn(move || {
        pin_to_first_cpu();
        // Alone on its CPU: 30 ms of spinning (30 re-plans), no sleep. A busy machine may take
        // the CPU for a slice, after which the waiter rightly sleeps and keeps sleeping for
        // CONTENDED_HOLD: wait the hold out and try again, for a while.
        let start = Instant::now();
        let mut tries = 0;
        loop {
            tries += 1;
            if wait_for_event(&pio2, &src, Duration::from_millis(30)) == 0 {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "a waiter alone on its CPU slept in each of {tries} tries (10 s; a machine this busy \
                 never leaves it alone)"
            );
            std::thread::sleep(pioman::CONTENDED_HOLD + Duration::from_millis(20));
        }
        // A thread of ours computing on the same CPU: the waiter leaves it the CPU.
        let stop = Arc::new(AtomicBool::new(false));
        let rival = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                pin_to_first_cpu();
                while !stop.load(Relaxed) {
                    std::hint::spin_loop();
                }
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        let beside = wait_for_event(&pio2, &src, Duration::from_millis(60));
        stop.store(true, Relaxed);
        rival.join().unwrap();
        assert!(beside > 0, "a waiter beside a computing thread never slept");
    })
    .join()
    .unwrap();
    pio.shutdown();
}
