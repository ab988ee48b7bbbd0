//! A diagnostic ping-pong between ranks 0 and 1: `nmad_pingpong [SIZE] [ITERATIONS]` prints the
//! median, minimum and 99th percentile of one-way latency (round trip / 2) over single round trips.

use nmad::{Nmad, Source};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let size: usize = args.next().map_or(8, |a| a.parse().expect("SIZE"));
    let iters: usize = args.next().map_or(10_000, |a| a.parse().expect("ITERATIONS"));
    let nm = Nmad::init().expect("nmad init");
    assert!(nm.size() >= 2, "needs two ranks");
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
