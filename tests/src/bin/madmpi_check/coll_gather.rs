//! Scenario `coll-gather` (any number of ranks): madmpi's gather, scatter, allgather and
//! alltoall and their `v` forms against locally computed references, under whatever
//! `MADMPI_COLL_*` variables force.
//!
//! `coll-gather check [max_bytes]`: for sizes of 0 B up to `max_bytes` (default 4 MiB) for the
//! whole gathered buffer (blocks of about size / n bytes): gather and scatter from every root
//! (two roots for sizes above 64 KiB), allgather and alltoall, each in place and not, and the
//! `v` forms with uneven blocks (zeros included) placed in reverse rank order with gaps, which
//! must stay untouched; then several nonblocking ones in flight together, alltoallw with a
//! vector datatype (in place and not), and argument errors.
//! Prints `OK <rank>: <step>` after each step and `COLL-GATHER <rank> <ms>` at the end.

use crate::ok;
use madmpi::comm::Comm;
use madmpi::datatype::{Datatype, Predefined};
use madmpi::error::ErrorClass;
use madmpi::request::wait_all;

const GAP: u64 = 0xdead_beef;

pub fn main() {
    crate::coll_scenario("coll-gather", "check [max_bytes]", |w, mode, max| match mode {
        "check" => {
            check(w, max.unwrap_or(4 << 20));
            true
        }
        _ => false,
    });
}

/// Element `i` of what rank `r` sends to rank `to`.
fn val(r: u32, to: u32, i: usize) -> u64 {
    (i as u64).wrapping_mul(2_654_435_761) ^ (u64::from(r) << 40) ^ (u64::from(to) << 52) ^ 0x55
}

fn block(r: u32, to: u32, k: usize) -> Vec<u64> {
    (0..k).map(|i| val(r, to, i)).collect()
}

/// Sizes in bytes from 0 to `max`.
fn sizes(max: usize) -> Vec<usize> {
    [0usize, 8, 24, 1 << 10, 8 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20]
        .into_iter()
        .filter(|&s| s <= max)
        .collect()
}

/// Displacements of blocks of `counts` in reverse rank order with a one-element gap before
/// each, and the buffer's length.
fn displs(counts: &[usize]) -> (Vec<usize>, usize) {
    let mut d = vec![0; counts.len()];
    let mut at = 0;
    for i in (0..counts.len()).rev() {
        d[i] = at + 1;
        at += counts[i] + 1;
    }
    (d, at + 1)
}

/// A buffer of `len` gap elements with block i (`counts[i]` at `displs[i]`) from `data(i, count)`.
fn fill(len: usize, counts: &[usize], displs: &[usize], data: impl Fn(u32, usize) -> Vec<u64>) -> Vec<u64> {
    let mut v = vec![GAP; len];
    for (i, (&c, &d)) in counts.iter().zip(displs).enumerate() {
        v[d..d + c].copy_from_slice(&data(i as u32, c));
    }
    v
}

/// Uneven counts from about `k`: 0, k/2 + 1, k, 0, …
fn uneven(n: u32, k: usize, f: impl Fn(u32) -> u32) -> Vec<usize> {
    (0..n)
        .map(|r| match f(r) % 3 {
            _ if k == 0 => 0,
            0 => 0,
            1 => k / 2 + 1,
            _ => k,
        })
        .collect()
}

fn check(w: &Comm, max: usize) {
    let (me, n) = (w.rank(), w.size());
    let nu = n as usize;
    w.barrier().expect("barrier");
    for bytes in sizes(max) {
        // Elements per block.
        let k = if bytes == 0 { 0 } else { (bytes / 8 / nu).max(1) };
        let roots: Vec<u32> = if bytes <= 64 << 10 { (0..n).collect() } else { vec![0, n - 1] };
        let all: Vec<u64> = (0..n).flat_map(|r| block(r, 0, k)).collect();
        let mine = block(me, 0, k);
        for &root in &roots {
            // Gather, in place and not.
            let mut out = if me == root { vec![GAP; nu * k] } else { vec![] };
            w.gather(&mine, &mut out, root).expect("gather");
            let mut inp = if me == root {
                let mut v = vec![GAP; nu * k];
                v[me as usize * k..][..k].copy_from_slice(&mine);
                v
            } else {
                mine.clone()
            };
            w.gather_in_place(&mut inp, root).expect("gather in place");
            if me == root {
                assert!(out == all && inp == all, "gather of {bytes} B to {root}");
            }
            // Gatherv.
            let counts = uneven(n, k, |r| r + root);
            let (d, len) = displs(&counts);
            let vmine = block(me, 0, counts[me as usize]);
            let want = fill(len, &counts, &d, |r, c| block(r, 0, c));
            let mut out = if me == root { vec![GAP; len] } else { vec![] };
            w.gatherv(&vmine, &mut out, &counts, &d, root).expect("gatherv");
            let mut inp = if me == root {
                fill(len, &counts, &d, |r, c| if r == me { block(r, 0, c) } else { vec![GAP; c] })
            } else {
                vmine.clone()
            };
            w.gatherv_in_place(&mut inp, &counts, &d, root).expect("gatherv in place");
            if me == root {
                assert!(out == want && inp == want, "gatherv of {bytes} B to {root}");
            }
            // Scatter and scatterv.
            let src = if me == root { all.clone() } else { vec![] };
            let mut got = vec![GAP; k];
            w.scatter(&src, &mut got, root).expect("scatter");
            assert!(got == mine, "scatter of {bytes} B from {root}");
            let mut inp = if me == root { all.clone() } else { vec![GAP; k] };
            w.scatter_in_place(&mut inp, root).expect("scatter in place");
            assert!(inp == if me == root { all.clone() } else { mine.clone() }, "scatter in place");
            let src = if me == root { want.clone() } else { vec![] };
            let mut got = vec![GAP; counts[me as usize]];
            w.scatterv(&src, &counts, &d, &mut got, root).expect("scatterv");
            assert!(got == vmine, "scatterv of {bytes} B from {root}");
            let mut inp = if me == root { want.clone() } else { vec![GAP; counts[me as usize]] };
            w.scatterv_in_place(&mut inp, &counts, &d, root).expect("scatterv in place");
            assert!(inp == if me == root { want.clone() } else { vmine.clone() }, "scatterv in place");
        }
        // Allgather, in place and not.
        let mut out = vec![GAP; nu * k];
        w.allgather(&mine, &mut out).expect("allgather");
        assert!(out == all, "allgather of {bytes} B");
        let mut inp = vec![GAP; nu * k];
        inp[me as usize * k..][..k].copy_from_slice(&mine);
        w.allgather_in_place(&mut inp).expect("allgather in place");
        assert!(inp == all, "allgather in place of {bytes} B");
        let counts = uneven(n, k, |r| r);
        let (d, len) = displs(&counts);
        let vmine = block(me, 0, counts[me as usize]);
        let want = fill(len, &counts, &d, |r, c| block(r, 0, c));
        let mut out = vec![GAP; len];
        w.allgatherv(&vmine, &mut out, &counts, &d).expect("allgatherv");
        assert!(out == want, "allgatherv of {bytes} B");
        let mut inp = fill(len, &counts, &d, |r, c| if r == me { block(r, 0, c) } else { vec![GAP; c] });
        w.allgatherv_in_place(&mut inp, &counts, &d).expect("allgatherv in place");
        assert!(inp == want, "allgatherv in place of {bytes} B");
        // Alltoall, in place and not.
        let send: Vec<u64> = (0..n).flat_map(|j| block(me, j, k)).collect();
        let want: Vec<u64> = (0..n).flat_map(|i| block(i, me, k)).collect();
        let mut out = vec![GAP; nu * k];
        w.alltoall(&send, &mut out).expect("alltoall");
        assert!(out == want, "alltoall of {bytes} B");
        let mut inp = send.clone();
        w.alltoall_in_place(&mut inp).expect("alltoall in place");
        assert!(inp == want, "alltoall in place of {bytes} B");
        // Alltoallv: i sends j a count of (i + 2j) % 3 kind; in place symmetric: (i + j) % 3.
        let sc = uneven(n, k, |j| me + 2 * j);
        let rc = uneven(n, k, |i| i + 2 * me);
        let ((sd, sl), (rd, rl)) = (displs(&sc), displs(&rc));
        let send = fill(sl, &sc, &sd, |j, c| block(me, j, c));
        let want = fill(rl, &rc, &rd, |i, c| block(i, me, c));
        let mut out = vec![GAP; rl];
        w.alltoallv(&send, &sc, &sd, &mut out, &rc, &rd).expect("alltoallv");
        assert!(out == want, "alltoallv of {bytes} B");
        let c = uneven(n, k, |j| me + j);
        let (dd, l) = displs(&c);
        let mut inp = fill(l, &c, &dd, |j, c| block(me, j, c));
        w.alltoallv_in_place(&mut inp, &c, &dd).expect("alltoallv in place");
        assert!(inp == fill(l, &c, &dd, |i, c| block(i, me, c)), "alltoallv in place of {bytes} B");
        ok(&format!("gather scatter allgather alltoall {bytes} B"));
    }
    // Nonblocking ones in flight together, waited for in another order.
    let k = 500;
    let mine = block(me, 0, k);
    let all: Vec<u64> = (0..n).flat_map(|r| block(r, 0, k)).collect();
    let send: Vec<u64> = (0..n).flat_map(|j| block(me, j, k)).collect();
    let want: Vec<u64> = (0..n).flat_map(|i| block(i, me, k)).collect();
    let (mut g, mut s, mut ag, mut a2a) =
        (vec![0; if me == 0 { nu * k } else { 0 }], vec![0; k], vec![0; nu * k], vec![0; nu * k]);
    let mut a2a_ip = send.clone();
    let scatter_src = if me == n - 1 { all.clone() } else { vec![] };
    let r1 = w.igather(&mine, &mut g, 0).expect("igather");
    let r2 = w.iscatter(&scatter_src, &mut s, n - 1).expect("iscatter");
    let r3 = w.iallgather(&mine, &mut ag).expect("iallgather");
    let r4 = w.ialltoall(&send, &mut a2a).expect("ialltoall");
    let r5 = w.ialltoall_in_place(&mut a2a_ip).expect("ialltoall in place");
    wait_all(vec![r5, r3, r1, r4, r2]).expect("wait_all");
    assert!((me != 0 || g == all) && s == mine && ag == all && a2a == want && a2a_ip == want, "nonblocking");
    ok("nonblocking gather family in flight together");
    // Alltoallw: 300 elements of a vector type (bytes 0 and 2 of every 3) to each rank,
    // received as plain bytes; then in place with the vector type on both sides.
    let byte = |r: u32, x: usize| (r as usize * 131 + x * 7 + 1) as u8;
    let v = Datatype::vector(2, 1, 2, &Datatype::predefined(Predefined::Byte)).expect("vector");
    v.commit().expect("commit");
    let (vs, bs) = (vec![v; nu], vec![Datatype::predefined(Predefined::Byte); nu]);
    let (k, blk) = (300usize, 1000usize);
    let dv: Vec<usize> = (0..nu).map(|j| blk * j).collect();
    let db: Vec<usize> = (0..nu).map(|j| 2 * k * j).collect();
    let send: Vec<u8> = (0..blk * nu).map(|x| byte(me, x)).collect();
    let offs: Vec<usize> = (0..k).flat_map(|e| [3 * e, 3 * e + 2]).collect();
    let mut out = vec![0u8; 2 * k * nu];
    w.alltoallw(&send, &vec![k; nu], &dv, &vs, &mut out, &vec![2 * k; nu], &db, &bs).expect("alltoallw");
    let want: Vec<u8> =
        (0..n).flat_map(|i| offs.iter().map(move |&o| byte(i, blk * me as usize + o))).collect();
    assert!(out == want, "alltoallw");
    let mut inp = send.clone();
    w.alltoallw_in_place(&mut inp, &vec![k; nu], &dv, &vs).expect("alltoallw in place");
    let mut want = send.clone();
    for i in 0..nu {
        for &o in &offs {
            want[blk * i + o] = byte(i as u32, blk * me as usize + o);
        }
    }
    assert!(inp == want, "alltoallw in place");
    ok("alltoallw");
    // Argument errors, the same on every rank, and the job goes on.
    let class = |r: madmpi::error::Result<()>| r.expect_err("an argument error").class();
    assert_eq!(class(w.gather(&[1u8], &mut [0u8; 1], n)), ErrorClass::Root);
    assert_eq!(class(w.scatterv(&[1u8], &[1], &[0], &mut [0u8; 1], n + 1)), ErrorClass::Root);
    assert_eq!(class(w.allgather(&[1u8; 2], &mut vec![0u8; 2 * nu + 1])), ErrorClass::Count);
    assert_eq!(class(w.alltoall(&vec![1u8; nu], &mut vec![0u8; nu + 1])), ErrorClass::Count);
    let ones = vec![1usize; nu];
    let far: Vec<usize> = (0..nu).map(|r| r + 1).collect();
    assert_eq!(class(w.allgatherv(&[1u8], &mut vec![0u8; nu], &ones, &far)), ErrorClass::Buffer);
    let (c, d) = (vec![1usize; nu + 1], vec![0usize; nu + 1]);
    assert_eq!(class(w.alltoallv(&[1u8], &c, &d, &mut [0u8; 1], &c, &d)), ErrorClass::Arg);
    w.barrier().expect("barrier");
    let mut out = vec![0u64; nu * 2];
    w.allgather(&[u64::from(me); 2], &mut out).expect("allgather after errors");
    assert!(out.chunks(2).enumerate().all(|(r, c)| c == [r as u64, r as u64]));
    ok("argument errors");
}
