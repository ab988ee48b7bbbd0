//! An nmad job whose ranks wait before their first message (so that connections between them
//! are made late, lazily): `nmad_late SECONDS`. Then every rank exchanges a message with every
//! other and prints `rank R/N ok late`.

use nmad::{Nmad, Source};
use std::time::Duration;

fn main() {
    let secs: f64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(4.0);
    let nm = Nmad::init().expect("nmad init");
    let (me, n) = (nm.rank(), nm.size());
    std::thread::sleep(Duration::from_secs_f64(secs));
    let s = nm.session(9);
    let msgs: Vec<[u8; 8]> = (0..n).map(|p| (u64::from(me) << 32 | u64::from(p)).to_le_bytes()).collect();
    let mut bufs = vec![[0u8; 8]; n as usize];
    nmad::scope(|sc| {
        let mut reqs = Vec::new();
        for (p, b) in bufs.iter_mut().enumerate().filter(|(p, _)| *p as u32 != me) {
            reqs.push(sc.irecv(&s, Source::Rank(p as u32), 1, b).expect("irecv"));
        }
        for (p, m) in msgs.iter().enumerate().filter(|(p, _)| *p as u32 != me) {
            reqs.push(sc.isend(&s, p as u32, 1, m, Default::default()).expect("isend"));
        }
        for r in &reqs {
            r.wait();
            r.result().unwrap().expect("request");
        }
    });
    for (p, b) in bufs.iter().enumerate().filter(|(p, _)| *p as u32 != me) {
        let want = (p as u64) << 32 | u64::from(me);
        assert_eq!(u64::from_le_bytes(*b), want, "message from rank {p}");
    }
    println!("rank {me}/{n} ok late");
    nm.finalize().expect("finalize");
}
