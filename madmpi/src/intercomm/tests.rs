//! Intercommunicators over threads as ranks: creation, point-to-point across, merge, and the
//! constructors derived from them; `MPI_Comm_create_group` and `MPI_Comm_idup` with them.

use super::*;
use crate::comm::Comparison;
use crate::group::Group;
use crate::p2p::{From, Rank, Tag};
use crate::testing::on_all;

/// World ranks of even world rank against those of odd, leaders 0 and 1.
fn evens_and_odds(world: &Comm) -> Comm {
    let me = world.rank();
    let local = world.split(Some((me % 2) as i32), 0).unwrap().unwrap();
    let link = LeaderLink::over(world, 1 - me % 2, 99).unwrap();
    intercomm_create(&local, 0, (local.rank() == 0).then_some(&link)).unwrap()
}

#[test]
fn create_talk_across_merge() {
    let got = on_all(5, |world| {
        let me = world.rank();
        let ic = evens_and_odds(&world);
        assert!(ic.is_inter());
        let (nl, nr) = (ic.size(), ic.remote_group().unwrap().size());
        assert_eq!((nl, nr), if me % 2 == 0 { (3, 2) } else { (2, 3) });
        // Every member sends its local rank to every remote rank, and hears from all of them.
        for r in 0..nr {
            ic.send(&[ic.rank()], Rank::Rank(r), 5).unwrap();
        }
        for _ in 0..nr {
            let mut b = [u32::MAX];
            let st = ic.recv(&mut b, From::Any, Tag::Tag(5)).unwrap();
            assert_eq!(st.source, Some(b[0]), "the source is a remote rank");
        }
        // Odds say high: evens come first, in their order, then the odds.
        let merged = merge(&ic, me % 2 == 1).unwrap();
        assert!(!merged.is_inter());
        let d = ic.dup().unwrap();
        assert_eq!(d.compare(&ic), Comparison::Congruent);
        assert_eq!(merged.compare(&ic), Comparison::Unequal);
        d.send(&[me], Rank::Rank(0), 1).unwrap();
        if d.rank() == 0 {
            for _ in 0..nr {
                d.recv(&mut [0u32], From::Any, Tag::Tag(1)).unwrap();
            }
        }
        merged.barrier().unwrap();
        merged.group().members().to_vec()
    });
    assert!(got.iter().all(|g| *g == [0, 2, 4, 1, 3]), "{got:?}");
}

#[test]
fn split_and_create_on_an_intercommunicator() {
    let got = on_all(5, |world| {
        let me = world.rank();
        let ic = evens_and_odds(&world);
        // Color = world rank < 3 (evens 0, 2 with odd 1; even 4 with odd 3), key reverses.
        let s = ic.split(Some(i32::from(me < 3)), -(me as i32)).unwrap().unwrap();
        let split = (s.group().members().to_vec(), s.remote_group().unwrap().members().to_vec());
        // Only the local leaders of both sides: a 1 x 1 intercommunicator.
        let leader = Group::new(vec![ic.group().member(0).unwrap()]).unwrap();
        let c = ic.create(&leader).unwrap();
        if let Some(c) = &c {
            c.send(&[me], Rank::Rank(0), 3).unwrap();
            let mut b = [0u32];
            c.recv(&mut b, From::Rank(0), Tag::Tag(3)).unwrap();
            assert_eq!(b[0], 1 - me);
        }
        (split, c.map(|c| c.remote_group().unwrap().members().to_vec()))
    });
    assert_eq!(got[0].0, (vec![2, 0], vec![1]));
    assert_eq!(got[1].0, (vec![1], vec![2, 0]));
    assert_eq!(got[4].0, (vec![4], vec![3]));
    assert_eq!(got[3].0, (vec![3], vec![4]));
    assert_eq!(
        got.iter().map(|g| g.1.clone()).collect::<Vec<_>>(),
        [Some(vec![1]), Some(vec![0]), None, None, None]
    );
}

#[test]
fn from_groups_and_create_group_and_idup() {
    let got = on_all(4, |world| {
        let me = world.rank();
        let low = Group::new(vec![0, 1]).unwrap();
        let high = Group::new(vec![3, 2]).unwrap();
        let (mine, theirs) = if me < 2 { (&low, &high) } else { (&high, &low) };
        // Leaders: rank 1 of each group (world ranks 1 and 2).
        let ic = create_from_groups(&world, mine, 1, theirs, 1, "org.test.a").unwrap();
        assert_eq!(ic.remote_group().unwrap().members(), theirs.members());
        // Only ranks 1 and 2 make a communicator, with tag 4.
        let pair = Group::new(vec![2, 1]).unwrap();
        let c = world.create_group(&pair, 4).unwrap();
        if let Some(c) = &c {
            c.barrier().unwrap();
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let req = ic
            .idup(None, move |c| {
                tx.send(c?).expect("the test waits for it");
                Ok(())
            })
            .unwrap();
        req.wait().unwrap();
        let dup = rx.recv().unwrap();
        assert_eq!(dup.compare(&ic), Comparison::Congruent);
        dup.send(&[me], Rank::Rank(1), 0).unwrap();
        if dup.rank() == 1 {
            for _ in 0..2 {
                dup.recv(&mut [0u32], From::Any, Tag::Any).unwrap();
            }
        }
        (c.map(|c| c.rank()), ic.rank())
    });
    assert_eq!(got, [(None, 0), (Some(1), 1), (Some(0), 1), (None, 0)]);
}

#[test]
fn bad_arguments() {
    on_all(2, |world| {
        let me = world.rank();
        assert_eq!(merge(&world, false).err().unwrap().class(), crate::error::ErrorClass::Comm);
        let g = Group::new(vec![0, 5]).unwrap();
        assert_eq!(world.create_group(&g, 1).err().unwrap().class(), crate::error::ErrorClass::Group);
        assert_eq!(
            world.create_group(&Group::new(vec![0]).unwrap(), -1).err().unwrap().class(),
            crate::error::ErrorClass::Tag
        );
        let single = world.split(Some(me as i32), 0).unwrap().unwrap();
        assert_eq!(LeaderLink::over(&world, 9, 0).err().unwrap().class(), crate::error::ErrorClass::Rank);
        assert_eq!(intercomm_create(&single, 3, None).err().unwrap().class(), crate::error::ErrorClass::Rank);
    });
}
