//! Scenario `coll-reduce` (any number of ranks): madmpi's reduce-scatter, reduce-scatter-block,
//! scan and exscan against locally computed references, under whatever `MADMPI_COLL_*`
//! variables force.
//!
//! `coll-reduce check [max_bytes]`: for vectors of 0 B up to `max_bytes` (default 4 MiB) in all,
//! with a commutative builtin (`i64` wrapping sum) and a non-commutative user operation
//! (composition of affine maps, which must keep rank order), in place and not:
//! - reduce-scatter with uneven blocks (rank i's block grows with i; rank 0's may be empty);
//! - reduce-scatter-block (the vector cut into n equal blocks, rounded down);
//! - scan and exscan of the whole vector (exscan must leave rank 0's output untouched: it is
//!   filled with a marker, in place with the input, and checked);
//!
//! then several nonblocking ones in flight together, waited for in another order. Prints
//! `OK <rank>: <step>` after each step and `COLL-REDUCE <rank> <ms>` at the end.

use crate::ok;
use madmpi::comm::Comm;
use madmpi::op::{Builtin, Op};
use madmpi::request::wait_all;
use std::sync::Arc;

pub fn main() {
    crate::coll_scenario("coll-reduce", "check [max_bytes]", |w, mode, max| match mode {
        "check" => {
            check(w, max.unwrap_or(4 << 20));
            true
        }
        _ => false,
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

/// The sums of ranks `0..upto`'s inputs (`upto` ≥ 1), element by element.
fn sum_prefixes(n: u32, len: usize) -> Vec<Vec<i64>> {
    let mut out = Vec::with_capacity(n as usize);
    let mut acc = vec![0i64; len];
    for r in 0..n {
        for (i, a) in acc.iter_mut().enumerate() {
            *a = a.wrapping_add(val(r, i));
        }
        out.push(acc.clone());
    }
    out
}

/// The compositions in rank order of ranks `0..=r`'s maps, for every r.
fn aff_prefixes(n: u32, len: usize) -> Vec<Vec<u64>> {
    let mut out = Vec::with_capacity(n as usize);
    let mut acc: Vec<u64> = (0..len).map(|i| aff(0, i)).collect();
    out.push(acc.clone());
    for r in 1..n {
        for (i, a) in acc.iter_mut().enumerate() {
            *a = compose(*a, aff(r, i));
        }
        out.push(acc.clone());
    }
    out
}

/// Sizes in bytes from 0 to `max`.
fn sizes(max: usize) -> Vec<usize> {
    [0usize, 8, 24, 1 << 10, 8 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20]
        .into_iter()
        .filter(|&s| s <= max)
        .collect()
}

/// Uneven blocks adding up to `total`: rank i's grows with i (rank 0's is empty when n > 1),
/// the remainder goes to the last rank.
fn uneven(n: u32, total: usize) -> Vec<usize> {
    let w = (n as usize * (n as usize - 1) / 2).max(1);
    let mut c: Vec<usize> = (0..n as usize).map(|i| total * i / w).collect();
    let given: usize = c.iter().sum();
    c[n as usize - 1] += total - given;
    c
}

fn check(w: &Comm, max: usize) {
    let (me, n) = (w.rank(), w.size());
    let (m, nu) = (me as usize, n as usize);
    let sum = Op::builtin(Builtin::Sum);
    let aop = affine_op();
    for bytes in sizes(max) {
        let len = bytes / 8;
        let mine: Vec<i64> = (0..len).map(|i| val(me, i)).collect();
        let mine_a: Vec<u64> = (0..len).map(|i| aff(me, i)).collect();
        let (ps, pa) = (sum_prefixes(n, len), aff_prefixes(n, len));
        let (want, want_a) = (&ps[nu - 1], &pa[nu - 1]);
        // Reduce-scatter, uneven blocks.
        let counts = uneven(n, len);
        let lo: usize = counts[..m].iter().sum();
        let hi = lo + counts[m];
        let mut out = vec![0i64; counts[m]];
        w.reduce_scatter(&mine, &mut out, &counts, &sum).expect("reduce_scatter");
        assert!(out[..] == want[lo..hi], "reduce_scatter sum of {bytes} B");
        let mut out_a = vec![0u64; counts[m]];
        w.reduce_scatter(&mine_a, &mut out_a, &counts, &aop).expect("reduce_scatter (affine)");
        assert!(out_a[..] == want_a[lo..hi], "reduce_scatter affine of {bytes} B");
        let mut inp = mine.clone();
        w.reduce_scatter_in_place(&mut inp, &counts, &sum).expect("reduce_scatter in place");
        assert!(inp[..counts[m]] == want[lo..hi], "reduce_scatter in place of {bytes} B");
        let mut inp_a = mine_a.clone();
        w.reduce_scatter_in_place(&mut inp_a, &counts, &aop).expect("reduce_scatter in place (affine)");
        assert!(inp_a[..counts[m]] == want_a[lo..hi], "reduce_scatter in place affine of {bytes} B");
        ok(&format!("reduce_scatter {bytes} B"));
        // Reduce-scatter-block over the first n·⌊len/n⌋ elements.
        let b = len / nu;
        let (lo, hi) = (m * b, m * b + b);
        let mut out = vec![0i64; b];
        w.reduce_scatter_block(&mine[..b * nu], &mut out, &sum).expect("reduce_scatter_block");
        assert!(out[..] == want[lo..hi], "reduce_scatter_block sum of {bytes} B");
        let mut out_a = vec![0u64; b];
        w.reduce_scatter_block(&mine_a[..b * nu], &mut out_a, &aop).expect("reduce_scatter_block (affine)");
        assert!(out_a[..] == want_a[lo..hi], "reduce_scatter_block affine of {bytes} B");
        let mut inp = mine[..b * nu].to_vec();
        w.reduce_scatter_block_in_place(&mut inp, &sum).expect("reduce_scatter_block in place");
        assert!(inp[..b] == want[lo..hi], "reduce_scatter_block in place of {bytes} B");
        let mut inp_a = mine_a[..b * nu].to_vec();
        w.reduce_scatter_block_in_place(&mut inp_a, &aop).expect("reduce_scatter_block in place (affine)");
        assert!(inp_a[..b] == want_a[lo..hi], "reduce_scatter_block in place affine of {bytes} B");
        ok(&format!("reduce_scatter_block {bytes} B"));
        // Scan and exscan.
        let mut out = vec![0i64; len];
        w.scan(&mine, &mut out, &sum).expect("scan");
        assert!(out == ps[m], "scan sum of {bytes} B");
        let mut out_a = vec![0u64; len];
        w.scan(&mine_a, &mut out_a, &aop).expect("scan (affine)");
        assert!(out_a == pa[m], "scan affine of {bytes} B");
        let mut inp = mine.clone();
        w.scan_in_place(&mut inp, &sum).expect("scan in place");
        assert!(inp == ps[m], "scan in place of {bytes} B");
        let mut inp_a = mine_a.clone();
        w.scan_in_place(&mut inp_a, &aop).expect("scan in place (affine)");
        assert!(inp_a == pa[m], "scan in place affine of {bytes} B");
        let mut out = vec![-7i64; len];
        w.exscan(&mine, &mut out, &sum).expect("exscan");
        let mut out_a = vec![7u64; len];
        w.exscan(&mine_a, &mut out_a, &aop).expect("exscan (affine)");
        let mut inp = mine.clone();
        w.exscan_in_place(&mut inp, &sum).expect("exscan in place");
        let mut inp_a = mine_a.clone();
        w.exscan_in_place(&mut inp_a, &aop).expect("exscan in place (affine)");
        if me == 0 {
            assert!(out.iter().all(|&v| v == -7) && out_a.iter().all(|&v| v == 7), "rank 0's exscan output");
            assert!(inp == mine && inp_a == mine_a, "rank 0's exscan in place");
        } else {
            assert!(out == ps[m - 1] && inp == ps[m - 1], "exscan sum of {bytes} B");
            assert!(out_a == pa[m - 1] && inp_a == pa[m - 1], "exscan affine of {bytes} B");
        }
        ok(&format!("scan exscan {bytes} B"));
    }
    // Nonblocking ones in flight together, waited for in another order.
    let len = 3000;
    let mine_a: Vec<u64> = (0..len).map(|i| aff(me, i)).collect();
    let pa = aff_prefixes(n, len);
    let counts = uneven(n, len);
    let lo: usize = counts[..m].iter().sum();
    let mut rs = vec![0u64; counts[m]];
    let mut sc = vec![0u64; len];
    let mut ex = mine_a.clone();
    let mut blk = mine_a[..len / nu * nu].to_vec();
    let r1 = w.ireduce_scatter(&mine_a, &mut rs, &counts, &aop).expect("ireduce_scatter");
    let r2 = w.iscan(&mine_a, &mut sc, &aop).expect("iscan");
    let r3 = w.iexscan_in_place(&mut ex, &aop).expect("iexscan in place");
    let r4 = w.ireduce_scatter_block_in_place(&mut blk, &aop).expect("ireduce_scatter_block in place");
    wait_all(vec![r3, r1, r4, r2]).expect("wait_all");
    let b = len / nu;
    assert!(rs[..] == pa[nu - 1][lo..lo + counts[m]], "ireduce_scatter");
    assert!(sc == pa[m], "iscan");
    assert!(if me == 0 { ex == mine_a } else { ex == pa[m - 1] }, "iexscan");
    assert!(blk[..b] == pa[nu - 1][m * b..m * b + b], "ireduce_scatter_block");
    ok("nonblocking reductions in flight together");
}
