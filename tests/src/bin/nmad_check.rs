//! A small nmad job: every rank exchanges a message with every rank (itself included), then
//! prints which rails it uses to each peer and whether pioman was told the machine is
//! oversubscribed, e.g. `rank 1/4 ok rails 0=shm 1=self 2=tcp 3=tcp oversubscribed false`.

use nmad::{Nmad, Source};

fn main() {
    let nm = Nmad::init().expect("nmad init");
    let (me, n) = (nm.rank(), nm.size());
    let s = nm.session(7);
    let msgs: Vec<[u8; 8]> = (0..n).map(|p| (u64::from(me) << 32 | u64::from(p)).to_le_bytes()).collect();
    let mut bufs = vec![[0u8; 8]; n as usize];
    nmad::scope(|sc| {
        let mut reqs = Vec::new();
        for (p, b) in bufs.iter_mut().enumerate() {
            reqs.push(sc.irecv(&s, Source::Rank(p as u32), 1, b).expect("irecv"));
        }
        for (p, m) in msgs.iter().enumerate() {
            reqs.push(sc.isend(&s, p as u32, 1, m, Default::default()).expect("isend"));
        }
        for r in &reqs {
            r.wait();
            r.result().unwrap().expect("request");
        }
    });
    for (p, b) in bufs.iter().enumerate() {
        let want = (p as u64) << 32 | u64::from(me);
        assert_eq!(u64::from_le_bytes(*b), want, "message from rank {p}");
    }
    let rails: Vec<String> =
        (0..n).map(|p| format!("{p}={}", nm.rails_to(p).expect("rails").join("+"))).collect();
    let over = nm.pioman().machine_state().oversubscribed;
    println!("rank {me}/{n} ok rails {} oversubscribed {over}", rails.join(" "));
    nm.finalize().expect("finalize");
}
