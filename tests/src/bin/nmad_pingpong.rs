//! A diagnostic ping-pong between ranks 0 and 1: `nmad_pingpong [SIZE] [ITERATIONS]` prints the
//! median, minimum and 99th percentile of one-way latency (round trip / 2) over single round trips;
//! `nmad_pingpong SIZE ITERATIONS stream` streams instead (8 messages in flight) and prints the
//! bandwidth.

use nmad::{Data, Nmad, Request, SendMode, Source};
use std::pin::Pin;
use std::time::Instant;

const WINDOW: usize = 8;

fn stream(nm: &Nmad, size: usize, iters: usize) {
    let s = nm.session(1);
    let mut buf = vec![1u8; size];
    let reqs: Vec<Pin<Box<Request>>> = (0..WINDOW).map(|_| Box::pin(Request::new())).collect();
    let p = buf.as_mut_ptr();
    let t = Instant::now();
    for i in 0..iters {
        let r = reqs[i % WINDOW].as_ref();
        r.wait();
        // SAFETY: `buf` outlives every request (all waited for below); all transfers share it
        // (only the transfer is measured).
        unsafe {
            if nm.rank() == 0 {
                s.isend(1, 1, Data::from_raw(p, size), SendMode::default(), r)
            } else {
                s.irecv(Source::Rank(0), 1, Data::from_raw(p, size), r)
            }
        }
        .unwrap();
    }
    for r in &reqs {
        r.wait();
    }
    let mut a = [0u8; 1];
    if nm.rank() == 0 {
        s.recv(Source::Rank(1), 2, &mut a).unwrap();
        let secs = t.elapsed().as_secs_f64();
        println!(
            "{size} B streamed over {}: {:.0} MB/s, {:.2} µs per message ({iters} messages, {WINDOW} in flight)",
            nm.rails_to(1).unwrap().join("+"),
            (size * iters) as f64 / secs / 1e6,
            secs * 1e6 / iters as f64
        );
    } else {
        s.send(0, 2, &a).unwrap();
    }
    if std::env::var_os("NMAD_PINGPONG_STATS").is_some() {
        eprintln!("rank {}: {:?}", nm.rank(), nm.stats());
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let size: usize = args.next().map_or(8, |a| a.parse().expect("SIZE"));
    let iters: usize = args.next().map_or(10_000, |a| a.parse().expect("ITERATIONS"));
    let streaming = args.next().as_deref() == Some("stream");
    let nm = Nmad::init().expect("nmad init");
    assert!(nm.size() >= 2, "needs two ranks");
    if streaming {
        if nm.rank() < 2 {
            stream(&nm, size, iters);
        }
        return nm.finalize().expect("finalize");
    }
    let s = nm.session(0);
    let mut buf = vec![0u8; size];
    let me = nm.rank();
    let mut times = Vec::with_capacity(iters);
    if me < 2 {
        let peer = 1 - me;
        for _ in 0..iters {
            let t = Instant::now();
            if me == 0 {
                s.send(peer, 1, &buf).unwrap();
                s.recv(Source::Rank(peer), 1, &mut buf).unwrap();
            } else {
                s.recv(Source::Rank(peer), 1, &mut buf).unwrap();
                s.send(peer, 1, &buf).unwrap();
            }
            times.push(t.elapsed().as_nanos() as f64 / 2.0);
        }
    }
    if me == 0 {
        times.sort_by(f64::total_cmp);
        let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
        println!(
            "{size} B over {}: one-way median {:.0} ns, min {:.0} ns, p99 {:.0} ns ({iters} round trips)",
            nm.rails_to(1).unwrap().join("+"),
            at(0.5),
            at(0.0),
            at(0.99)
        );
    }
    nm.finalize().expect("finalize");
}
