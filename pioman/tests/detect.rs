//! Every event of a synthetic source (an eventfd written at random times by another thread, or by
//! another process) is detected, under every policy, with and without marcel, whether a thread
//! waits for it or nobody does (background progression).

use pioman::eventfd::{EVENT, EventSource, notify};
use pioman::{Options, Pioman, policy};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::time::{Duration, Instant};

const POLICIES: [&str; 4] = ["poll", "block", "timer", "adaptive"];
const EVENTS: u64 = 60;

/// A small deterministic generator of delays in [0, 2 ms).
fn delays(seed: u64) -> impl Iterator<Item = Duration> {
    let mut x = seed | 1;
    std::iter::from_fn(move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        Some(Duration::from_micros(x % 2000))
    })
}

/// Writes EVENTS events at random times; each must be detected within `limit`.
fn writer(src: Arc<EventSource>, seed: u64, limit: Duration) -> std::thread::JoinHandle<Result<(), String>> {
    std::thread::spawn(move || {
        for (i, d) in delays(seed).take(EVENTS as usize).enumerate() {
            std::thread::sleep(d);
            notify(src.fd()).unwrap();
            let t = Instant::now();
            while src.received() < i as u64 + 1 {
                if t.elapsed() > limit {
                    return Err(format!(
                        "event {i} not detected after {limit:?} (received {})",
                        src.received()
                    ));
                }
                std::thread::sleep(Duration::from_micros(50));
            }
        }
        Ok(())
    })
}

/// A waiting thread consumes every event through `Pioman::wait`.
fn waiter_loop(pio: &Pioman, src: &EventSource) {
    let mut seen = 0;
    while seen < EVENTS {
        pio.wait(src.cond(), EVENT);
        src.cond().clear(EVENT);
        seen = src.received();
    }
}

fn pioman_for(name: &str, rt: Option<&marcel::Runtime>) -> Pioman {
    let b = Pioman::builder().policy(policy::by_name(name).unwrap()).tick(Duration::from_millis(1));
    match rt {
        Some(rt) => b.marcel(rt.handle()).build().unwrap(),
        None => b.without_marcel().build().unwrap(),
    }
}

fn detect(name: &str, with_marcel: bool, with_waiter: bool) {
    let rt = with_marcel.then(|| marcel::Runtime::builder().lwps(2).ignore_env().build().unwrap());
    let pio = pioman_for(name, rt.as_ref());
    let src = Arc::new(EventSource::new("synthetic").unwrap());
    let task = pio.register(src.clone(), Options::default()).unwrap();
    // Timer policy detects at ticks (1 ms); others much faster. Allow for a loaded CI machine.
    let w = writer(src.clone(), 0x9e37 + name.len() as u64, Duration::from_secs(2));
    if with_waiter {
        match &rt {
            Some(rt) => {
                let (p2, s2) = (pio.clone(), src.clone());
                rt.block_on(move || waiter_loop(&p2, &s2));
            }
            None => waiter_loop(&pio, &src),
        }
    }
    w.join()
        .unwrap()
        .unwrap_or_else(|e| panic!("policy {name}, marcel {with_marcel}, waiter {with_waiter}: {e}"));
    assert_eq!(src.received(), EVENTS);
    let st = task.stats();
    assert!(st.useful_polls >= 1 && st.detect.count() >= 1, "{st:?}");
    task.remove();
    pio.shutdown();
}

#[test]
fn waiting_thread_detects_every_event_with_marcel() {
    for p in POLICIES {
        detect(p, true, true);
    }
}

#[test]
fn waiting_thread_detects_every_event_without_marcel() {
    for p in POLICIES {
        detect(p, false, true);
    }
}

#[test]
fn background_progression_detects_every_event_with_marcel() {
    for p in POLICIES {
        detect(p, true, false);
    }
}

#[test]
fn background_progression_detects_every_event_without_marcel() {
    for p in POLICIES {
        detect(p, false, false);
    }
}

/// Under marcel with every LWP busy computing (threads that never yield), a waiting user thread
/// still gets every event: blocking waits run inside `marcel::blocking`.
#[test]
fn detection_goes_on_while_every_lwp_computes() {
    for p in ["block", "adaptive"] {
        let rt = marcel::Runtime::builder().lwps(2).ignore_env().build().unwrap();
        let pio = pioman_for(p, Some(&rt));
        let src = Arc::new(EventSource::new("synthetic").unwrap());
        let task = pio.register(src.clone(), Options::default()).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (p2, s2, st2) = (pio.clone(), src.clone(), stop.clone());
        let w = writer(src.clone(), 7, Duration::from_secs(2));
        rt.block_on(move || {
            let hogs: Vec<_> = (0..4)
                .map(|_| {
                    let s = st2.clone();
                    marcel::spawn(move || {
                        while !s.load(Relaxed) {
                            std::hint::spin_loop();
                        }
                    })
                })
                .collect();
            waiter_loop(&p2, &s2);
            st2.store(true, Relaxed);
            for h in hogs {
                h.join().unwrap();
            }
        });
        w.join().unwrap().unwrap_or_else(|e| panic!("policy {p}: {e}"));
        assert!(task.stats().blocking_waits > 0 || p == "adaptive");
        task.remove();
        pio.shutdown();
        drop(stop);
    }
}

const CHILD: &str = "PIOMAN_TEST_WRITER_FD";

/// The writer is another process: it inherits the eventfd and writes at random times; the parent
/// detects each event (background progression, no waiter).
#[test]
fn events_from_another_process_are_detected() {
    if let Ok(fd) = std::env::var(CHILD) {
        let fd: i32 = fd.parse().unwrap();
        for d in delays(3).take(EVENTS as usize) {
            std::thread::sleep(d);
            notify(fd).unwrap();
            std::thread::sleep(Duration::from_millis(3)); // let each event be seen on its own
        }
        return;
    }
    for p in POLICIES {
        for with_marcel in [false, true] {
            let rt = with_marcel.then(|| marcel::Runtime::builder().lwps(2).ignore_env().build().unwrap());
            let pio = pioman_for(p, rt.as_ref());
            let src = Arc::new(EventSource::new("from-child").unwrap());
            let task = pio.register(src.clone(), Options::default()).unwrap();
            let status = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "events_from_another_process_are_detected", "--nocapture"])
                .env(CHILD, src.fd().to_string())
                .status()
                .unwrap();
            assert!(status.success());
            let t = Instant::now();
            while src.received() < EVENTS {
                assert!(
                    t.elapsed() < Duration::from_secs(5),
                    "policy {p}: {} of {EVENTS} events",
                    src.received()
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            assert!(task.stats().detect.count() > 0);
            task.remove();
            pio.shutdown();
        }
    }
}

/// The handover: once a thread that waited in the library returns to the application (which
/// then computes without pioman calls), the progression thread serves the sources at once, not
/// at its next tick. The tick is 5 s here, so an event detected within 2 s was detected by the
/// progression thread the waiter handed the sources over to (before, it stood back until a tick
/// passed without a spinning waiter).
#[test]
fn the_last_waiter_to_leave_hands_the_sources_over() {
    for name in ["adaptive", "poll", "block"] {
        let pio = Pioman::builder()
            .policy(policy::by_name(name).unwrap())
            .tick(Duration::from_secs(5))
            .without_marcel()
            .build()
            .unwrap();
        let src = Arc::new(EventSource::new("handover").unwrap());
        let task = pio.register(src.clone(), Options::default()).unwrap();
        // A wait in the library (spinning, then perhaps sleeping), ended by another thread.
        let done = Arc::new(pioman::Cond::new());
        let d2 = done.clone();
        let ender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            d2.signal(1);
        });
        pio.wait(&done, 1);
        ender.join().unwrap();
        // The application computes; an event comes later than the handover's first look.
        let computing = Arc::new(AtomicBool::new(true));
        let c2 = computing.clone();
        let app = std::thread::spawn(move || {
            let mut x = 0u64;
            while c2.load(Relaxed) {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        });
        std::thread::sleep(Duration::from_millis(20));
        notify(src.fd()).unwrap();
        let t = Instant::now();
        while src.received() < 1 && t.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_micros(100));
        }
        computing.store(false, Relaxed);
        app.join().unwrap();
        assert_eq!(src.received(), 1, "policy {name}: the event waited for the tick ({:?})", t.elapsed());
        task.remove();
        pio.shutdown();
    }
}
