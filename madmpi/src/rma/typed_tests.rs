//! The typed epochs ([`Window::fence`], [`Window::lock`], [`Window::lock_all`]) with in-process
//! ranks: values exact after every epoch, errors as `Result`s of the right class, and a lock
//! released when its guard is dropped.

use super::*;
use crate::comm::internal::allgather;
use crate::error::ErrorClass;
use crate::info::Info;
use crate::op::{Builtin, Op};
use crate::testing::on_all;

fn barrier(c: &crate::comm::Comm) {
    c.internal(|m| allgather(m, 0, &[0]).map_err(crate::comm::from_nmad)).unwrap();
}

#[test]
fn fence_epochs_put_get_and_accumulate() {
    for n in [2u32, 3, 4] {
        on_all(n, |world| {
            let (me, right) = (world.rank(), (world.rank() + 1) % n);
            let w: Window<i64> = Window::create(vec![0; 4], &Info::new(), &world).unwrap();
            let e = w.fence().unwrap();
            e.put(right, 0, &[10 * me as i64, 10 * me as i64 + 1]).unwrap();
            e.end().unwrap();
            let e = w.fence().unwrap();
            for r in 0..n {
                e.accumulate(r, 2, &[me as i64 + 1], &Op::builtin(Builtin::Sum)).unwrap();
            }
            e.end().unwrap();
            let e = w.fence().unwrap();
            let mut got = [0i64; 4];
            e.get(right, 0, &mut got).unwrap();
            e.end().unwrap();
            let want_sum = (n * (n + 1) / 2) as i64;
            assert_eq!(got, [10 * me as i64, 10 * me as i64 + 1, want_sum, 0], "n={n} rank {me}");
        });
    }
}

#[test]
fn exclusive_locks_count_every_fetch_and_op_exactly() {
    const ROUNDS: i64 = 50;
    for n in [2u32, 4] {
        let fetched = on_all(n, |world| {
            let w: Window<i64> = Window::allocate(2, &Info::new(), &world).unwrap();
            let e = w.lock(LockKind::Exclusive, 0).unwrap();
            e.put(0, 0, &[0, 0]).unwrap();
            drop(e);
            barrier(&world);
            let sum = Op::builtin(Builtin::Sum);
            let mut mine = Vec::new();
            for _ in 0..ROUNDS {
                let e = w.lock(LockKind::Exclusive, 0).unwrap();
                mine.push(e.fetch_and_op(0, 1, 1, &sum).unwrap());
                e.end().unwrap();
            }
            barrier(&world);
            let mut end = [0i64; 2];
            let e = w.lock(LockKind::Shared, 0).unwrap();
            e.get(0, 0, &mut end).unwrap();
            e.end().unwrap();
            assert_eq!(end, [0, n as i64 * ROUNDS], "n={n}: the counter is exact");
            barrier(&world);
            mine
        });
        let mut all: Vec<i64> = fetched.into_iter().flatten().collect();
        all.sort_unstable();
        assert_eq!(all, (0..n as i64 * ROUNDS).collect::<Vec<_>>(), "n={n}: each value fetched once");
    }
}

#[test]
fn lock_all_puts_are_visible_after_a_flush() {
    on_all(3, |world| {
        let me = world.rank();
        let w: Window<i64> = Window::allocate(3, &Info::new(), &world).unwrap();
        let e = w.lock_all().unwrap();
        for r in 0..3 {
            e.put(r, me as usize, &[100 * r as i64 + me as i64]).unwrap();
        }
        e.flush().unwrap();
        let mut mine = [0i64; 1];
        e.get(me, me as usize, &mut mine).unwrap();
        assert_eq!(mine, [101 * me as i64], "my own put, flushed");
        e.end().unwrap();
        barrier(&world);
        let e = w.lock_all().unwrap();
        for r in 0..3 {
            let mut got = [0i64; 3];
            e.get(r, 0, &mut got).unwrap();
            assert_eq!(got, [100 * r as i64, 100 * r as i64 + 1, 100 * r as i64 + 2], "rank {r}");
        }
        e.end().unwrap();
        barrier(&world);
    });
}

#[test]
fn compare_and_swap_has_exactly_one_winner() {
    for n in [2u32, 4] {
        let olds = on_all(n, |world| {
            let me = world.rank() as i64;
            let w: Window<i64> = Window::allocate(1, &Info::new(), &world).unwrap();
            let e = w.lock(LockKind::Exclusive, 0).unwrap();
            e.put(0, 0, &[-1]).unwrap();
            e.end().unwrap();
            barrier(&world);
            let e = w.lock_all().unwrap();
            let old = e.compare_and_swap(0, 0, me, -1).unwrap();
            e.end().unwrap();
            barrier(&world);
            let e = w.lock(LockKind::Shared, 0).unwrap();
            let mut now = [0i64];
            e.get(0, 0, &mut now).unwrap();
            e.end().unwrap();
            barrier(&world);
            (old, now[0])
        });
        let winners: Vec<usize> = (0..olds.len()).filter(|&r| olds[r].0 == -1).collect();
        assert_eq!(winners.len(), 1, "n={n}: {olds:?}");
        let winner = winners[0] as i64;
        assert!(olds.iter().all(|&(old, now)| now == winner && (old == -1 || old == winner)), "{olds:?}");
    }
}

#[test]
fn wrong_synchronization_and_ranges_are_errors_of_their_class() {
    on_all(2, |world| {
        let other = 1 - world.rank();
        let w: Window<i64> = Window::allocate(4, &Info::new(), &world).unwrap();
        let e = w.lock(LockKind::Shared, world.rank()).unwrap();
        let outside = e.put(other, 0, &[1]).unwrap_err();
        assert_eq!(outside.class(), ErrorClass::RmaSync, "a put to a rank not locked: {outside}");
        assert_eq!(
            e.fetch_and_op(other, 0, 1, &Op::builtin(Builtin::Sum)).unwrap_err().class(),
            ErrorClass::RmaSync
        );
        e.end().unwrap();
        let e = w.lock(LockKind::Shared, other).unwrap();
        assert_eq!(e.put(other, 3, &[1, 2]).unwrap_err().class(), ErrorClass::RmaRange, "past the end");
        assert_eq!(e.put(other, 4, &[1]).unwrap_err().class(), ErrorClass::RmaRange);
        let mut buf = [0i64; 5];
        assert_eq!(e.get(other, 0, &mut buf).unwrap_err().class(), ErrorClass::RmaRange);
        e.put(other, 3, &[1]).unwrap();
        e.end().unwrap();
        barrier(&world);
    });
}

#[test]
fn a_dropped_lock_guard_unlocks_for_the_next_exclusive_locker() {
    on_all(2, |world| {
        let me = world.rank();
        let w: Window<i64> = Window::allocate(1, &Info::new(), &world).unwrap();
        if me == 0 {
            let e = w.lock(LockKind::Exclusive, 0).unwrap();
            e.put(0, 0, &[7]).unwrap();
            barrier(&world); // rank 1 asks for the lock while this guard holds it
            drop(e);
            barrier(&world);
        } else {
            barrier(&world);
            let e = w.lock(LockKind::Exclusive, 0).unwrap();
            let old = e.fetch_and_op(0, 0, 1, &Op::builtin(Builtin::Sum)).unwrap();
            assert_eq!(old, 7, "the first holder's put, completed by its unlock on drop");
            drop(e);
            barrier(&world);
        }
        barrier(&world);
    });
}
