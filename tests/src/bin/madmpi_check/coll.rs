//! Scenario `coll` (any number of ranks): madmpi's collectives against locally computed
//! references, under whatever `MADMPI_COLL_*` variables force.
//!
//! - `coll check [max_bytes]`: barrier; bcast from every root (in turn) of 0 B up to `max_bytes`
//!   (default 4 MiB); reduce to every root with a commutative builtin (`i64` sum) and a
//!   non-commutative user operation (composition of affine maps, which must keep rank order),
//!   in place and not; allreduce of the same, in place and not; several nonblocking collectives
//!   in flight at once. Prints `OK <rank>: <step>` after each step and `COLL <rank> <ms>` at the
//!   end (the elapsed time).
//! - `coll background [ms]`: rank 0 starts an `Ibcast` (it must forward the data to another rank)
//!   and an `Iallreduce` (several rounds), then computes for `ms` (200) ms without calling MPI; the other
//!   ranks wait for theirs. Afterwards the ranks exchange timestamps and check that every other
//!   rank completed its collectives before rank 0 came back to MPI: rank 0's schedules
//!   advanced in the background. Prints `OK <rank>: background` and the times.

use crate::ok;
use madmpi::comm::Comm;
use madmpi::op::{Builtin, Op};
use madmpi::request::wait_all;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub fn main() {
    crate::coll_scenario("coll", "check|background [max_bytes|ms]", |w, mode, arg| {
        match mode {
            // The largest size in bytes.
            "check" => check(w, arg.unwrap_or(4 << 20)),
            // Rank 0's computation in ms.
            "background" => background(w, arg.unwrap_or(200).min(10_000) as u64),
            _ => return false,
        }
        true
    });
}

/// Element `i` of rank `r`'s input.
fn val(r: u32, i: usize) -> i64 {
    (i as i64).wrapping_mul(2_654_435_761) ^ (i64::from(r) << 20) ^ 0x55
}

/// An affine map t ↦ a·t + b (wrapping u32), packed in a u64 (a low, b high); never the identity.
fn aff(r: u32, i: usize) -> u64 {
    let a = (r * 2 + 3).wrapping_mul(i as u32 + 1) | 1;
    let b = r.wrapping_mul(7919) ^ (i as u32);
    u64::from(a) | (u64::from(b) << 32)
}

/// `y ∘ x` as the MPI user function sees it: `inout = in op inout`, "in then inout".
fn compose(x: u64, y: u64) -> u64 {
    let (xa, xb, ya, yb) = (x as u32, (x >> 32) as u32, y as u32, (y >> 32) as u32);
    u64::from(ya.wrapping_mul(xa)) | (u64::from(ya.wrapping_mul(xb).wrapping_add(yb)) << 32)
}

fn affine_op() -> Op {
    Op::user(
        Arc::new(|input: &[u8], inout: &mut [u8], _count, _dt: &madmpi::datatype::Datatype| {
            for (i, o) in input.chunks_exact(8).zip(inout.chunks_exact_mut(8)) {
                let x = u64::from_ne_bytes(i.try_into().expect("8 bytes"));
                let y = u64::from_ne_bytes((&*o).try_into().expect("8 bytes"));
                o.copy_from_slice(&compose(x, y).to_ne_bytes());
            }
        }),
        false,
    )
}

fn sum_ref(n: u32, len: usize) -> Vec<i64> {
    (0..len).map(|i| (0..n).fold(0i64, |a, r| a.wrapping_add(val(r, i)))).collect()
}

fn aff_ref(n: u32, len: usize) -> Vec<u64> {
    (0..len).map(|i| (1..n).fold(aff(0, i), |acc, r| compose(acc, aff(r, i)))).collect()
}

/// Sizes in bytes from 0 to `max`.
fn sizes(max: usize) -> Vec<usize> {
    [0usize, 8, 24, 1 << 10, 8 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20]
        .into_iter()
        .filter(|&s| s <= max)
        .collect()
}

fn check(w: &Comm, max: usize) {
    let (me, n) = (w.rank(), w.size());
    w.barrier().expect("barrier");
    w.barrier().expect("barrier");
    ok("barrier");
    let sum = Op::builtin(Builtin::Sum);
    let aop = affine_op();
    for bytes in sizes(max) {
        let len = bytes / 8;
        // Bcast from each root (all of them for small sizes, two for large ones).
        let roots: Vec<u32> = if bytes <= 64 << 10 { (0..n).collect() } else { vec![0, n - 1] };
        for &root in &roots {
            let want: Vec<i64> = (0..len).map(|i| val(root, i)).collect();
            let mut b = if me == root { want.clone() } else { vec![-1; len] };
            w.bcast(&mut b, root).expect("bcast");
            assert!(b == want, "bcast of {bytes} B from {root}");
        }
        // Reduce (commutative and not, in place and not).
        let mine: Vec<i64> = (0..len).map(|i| val(me, i)).collect();
        let mine_a: Vec<u64> = (0..len).map(|i| aff(me, i)).collect();
        let (want, want_a) = (sum_ref(n, len), aff_ref(n, len));
        for &root in &roots {
            let mut out = if me == root { vec![0i64; len] } else { vec![] };
            w.reduce(&mine, &mut out, &sum, root).expect("reduce");
            let mut out_a = if me == root { vec![0u64; len] } else { vec![] };
            w.reduce(&mine_a, &mut out_a, &aop, root).expect("reduce (affine)");
            let mut inp = mine.clone();
            w.reduce_in_place(&mut inp, &sum, root).expect("reduce in place");
            let mut inp_a = mine_a.clone();
            w.reduce_in_place(&mut inp_a, &aop, root).expect("reduce in place (affine)");
            if me == root {
                assert!(out == want && inp == want, "reduce sum of {bytes} B to {root}");
                assert!(out_a == want_a && inp_a == want_a, "reduce affine of {bytes} B to {root}");
            } else {
                assert!(inp == mine && inp_a == mine_a, "a non-root's input is left alone");
            }
        }
        // Allreduce.
        let mut out = vec![0i64; len];
        w.allreduce(&mine, &mut out, &sum).expect("allreduce");
        assert!(out == want, "allreduce sum of {bytes} B");
        let mut inp = mine.clone();
        w.allreduce_in_place(&mut inp, &sum).expect("allreduce in place");
        assert!(inp == want, "allreduce in place of {bytes} B");
        let mut out_a = vec![0u64; len];
        w.allreduce(&mine_a, &mut out_a, &aop).expect("allreduce (affine)");
        assert!(out_a == want_a, "allreduce affine of {bytes} B");
        let mut inp_a = mine_a.clone();
        w.allreduce_in_place(&mut inp_a, &aop).expect("allreduce in place (affine)");
        assert!(inp_a == want_a, "allreduce in place affine of {bytes} B");
        ok(&format!("bcast reduce allreduce {bytes} B"));
    }
    // Nonblocking collectives in flight together, waited for in another order.
    let len = 1000;
    let mine: Vec<i64> = (0..len).map(|i| val(me, i)).collect();
    let mut a = vec![0i64; len];
    let mut b = mine.clone();
    let mut c = if me == 0 { mine.clone() } else { vec![0; len] };
    let r1 = w.iallreduce(&mine, &mut a, &sum).expect("iallreduce");
    let r2 = w.ibarrier().expect("ibarrier");
    let r3 = w.iallreduce_in_place(&mut b, &sum).expect("iallreduce in place");
    let r4 = w.ibcast(&mut c, 0).expect("ibcast");
    wait_all(vec![r4, r2, r3, r1]).expect("wait_all");
    let want = sum_ref(n, len);
    assert!(a == want && b == want && c == mine_of(0, len), "nonblocking collectives");
    ok("nonblocking collectives in flight together");
}

fn mine_of(r: u32, len: usize) -> Vec<i64> {
    (0..len).map(|i| val(r, i)).collect()
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for clock_gettime to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Busy computation for `d` without MPI calls.
fn compute(d: Duration) -> u64 {
    let t = Instant::now();
    let mut x = 1u64;
    while t.elapsed() < d {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    x
}

fn background(w: &Comm, compute_ms: u64) {
    let (me, n) = (w.rank(), w.size());
    assert!(n >= 4, "the background test needs 4 ranks or more");
    let sum = Op::builtin(Builtin::Sum);
    w.barrier().expect("barrier");
    // Root 2: rank 0 is an inner node of the binomial tree (relative rank n − 2 ≥ 2), so the
    // others need it to forward the data after it arrived.
    let root = 2;
    let len = 64 << 10;
    let mut data = if me == root { mine_of(root, len) } else { vec![0; len] };
    let mine = mine_of(me, 4096);
    let mut red = vec![0i64; 4096];
    let t_start = now_ns();
    let (t_back, t_done);
    {
        let r1 = w.ibcast(&mut data, root).expect("ibcast");
        let r2 = w.iallreduce(&mine, &mut red, &sum).expect("iallreduce");
        if me == 0 {
            compute(Duration::from_millis(compute_ms));
            t_back = now_ns();
        } else {
            t_back = 0;
        }
        wait_all(vec![r1, r2]).expect("wait");
        t_done = now_ns();
    }
    assert!(data == mine_of(root, len) && red == sum_ref(n, 4096), "background results");
    // Everybody's (start, done, back) times (CLOCK_MONOTONIC: one clock for the whole host), by
    // an allreduce of slots.
    let mut times = vec![0u64; 3 * n as usize];
    times[3 * me as usize..3 * me as usize + 3].copy_from_slice(&[t_start, t_done, t_back]);
    w.allreduce_in_place(&mut times, &Op::builtin(Builtin::Max)).expect("allreduce times");
    let (start0, back0) = (times[0], times[2]);
    let ms = |ns: u64| (ns as f64 - start0 as f64) / 1e6;
    let others: Vec<String> = (1..n as usize).map(|r| format!("{:.1}", ms(times[3 * r + 1]))).collect();
    println!(
        "BACKGROUND {me}: rank 0 back in MPI at {:.1} ms; others done at [{}] ms",
        ms(back0),
        others.join(", ")
    );
    for r in 1..n as usize {
        assert!(
            times[3 * r + 1] < back0,
            "rank {r} finished at {:.1} ms, rank 0 came back to MPI at {:.1} ms: no background progress",
            ms(times[3 * r + 1]),
            ms(back0)
        );
    }
    ok("background");
}
