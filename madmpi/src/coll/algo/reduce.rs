//! Reduce of `count` elements of `elem` bytes from buffer `input` of every rank into [`RECV`]
//! at `root` (`input` is [`SEND`], or [`RECV`] in place).
//!
//! - [`binomial`] (commutative operations): the binomial tree of ranks relative to the root; a
//!   rank folds in its children's partial results as they arrive (in any order, hence
//!   commutative only), then sends its own to its parent. Leaves send their input directly.
//! - [`ordered`] (any operation): the same tree over absolute ranks rooted at rank 0, so that
//!   the subtree of rank r is the contiguous rank interval `[r, r + lowbit(r))`: combining a
//!   rank's interval (left) with its child's (right) keeps rank order, `x0 op x1 op … op xn−1`.
//!   Rank 0 then sends the result to the root if the root is another rank.

use super::elems;
use crate::coll::schedule::{BufId, RECV, Schedule};

/// Children of relative rank `vr` in increasing subtree size, and its parent (if not the root).
fn family(vr: u32, n: u32) -> (Vec<u32>, Option<u32>) {
    let (mut kids, mut mask) = (Vec::new(), 1u32);
    while mask < n {
        if vr & mask != 0 {
            return (kids, Some(vr & !mask));
        }
        if vr | mask < n {
            kids.push(vr | mask);
        }
        mask <<= 1;
    }
    (kids, None)
}

pub(crate) fn binomial(
    s: &mut Schedule,
    n: u32,
    me: u32,
    root: u32,
    input: BufId,
    count: usize,
    elem: usize,
) {
    let base = s.steps();
    if count == 0 {
        return;
    }
    let len = count * elem;
    let all = |b| elems(b, 0, count, elem);
    let real = |vr: u32| (vr + root) % n;
    let vr = (me + n - root) % n;
    let (kids, parent) = family(vr, n);
    if kids.is_empty() {
        let r = s.round();
        match parent {
            Some(p) => s.send(r, real(p), base, all(input)),
            None => s.copy(r, all(input), all(RECV)),
        }
        return;
    }
    let acc = if parent.is_none() { RECV } else { s.tmp(len) };
    let tmp = s.tmp(len);
    let mut r = s.round();
    s.copy(r, all(input), all(acc));
    for (i, &k) in kids.iter().enumerate() {
        if i > 0 {
            r = s.round();
            s.reduce(r, all(tmp), all(acc), count);
        }
        s.recv(r, real(k), base, all(tmp));
    }
    let r = s.round();
    s.reduce(r, all(tmp), all(acc), count);
    if let Some(p) = parent {
        s.send(r, real(p), base, all(acc));
    }
}

pub(crate) fn ordered(s: &mut Schedule, n: u32, me: u32, root: u32, input: BufId, count: usize, elem: usize) {
    let base = s.steps();
    if count == 0 {
        return;
    }
    let len = count * elem;
    let all = |b| elems(b, 0, count, elem);
    let (kids, parent) = family(me, n);
    let mut acc = input;
    if !kids.is_empty() {
        // acc holds the interval [me, me + m); a child's is [me + m, me + 2m): acc op child.
        let (mut a, mut b) = (s.tmp(len), s.tmp(len));
        let mut r = s.round();
        s.copy(r, all(input), all(a));
        for (i, &k) in kids.iter().enumerate() {
            if i > 0 {
                r = s.round();
                s.reduce(r, all(a), all(b), count);
                std::mem::swap(&mut a, &mut b);
            }
            s.recv(r, k, base, all(b));
        }
        r = s.round();
        s.reduce(r, all(a), all(b), count);
        acc = b;
    }
    let r = s.round();
    match parent {
        Some(p) => s.send(r, p, base, all(acc)),
        None if root == 0 => s.copy(r, all(acc), all(RECV)),
        None => s.send(r, root, base + 1, all(acc)),
    }
    if me == root && root != 0 {
        let r = s.round();
        s.recv(r, 0, base + 1, all(RECV));
    }
}
