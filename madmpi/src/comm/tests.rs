use super::*;
use crate::testing::on_all;

/// A message from every member to every member of `c`, checked.
fn all_to_all(c: &Comm) {
    let me = c.rank();
    for r in 0..c.size() {
        let to = c.world_rank(r).unwrap();
        c.session().send(to, u64::from(me), &[me as u8, c.context_id() as u8]).unwrap();
    }
    for r in 0..c.size() {
        let mut b = [0u8; 2];
        let from = c.world_rank(r).unwrap();
        c.session().recv(nmad::Source::Rank(from), u64::from(r), &mut b).unwrap();
        assert_eq!(b, [r as u8, c.context_id() as u8]);
    }
}

#[test]
fn dup_split_create_and_shared() {
    let got = on_all(4, |world| {
        let me = world.rank();
        let dup = world.dup().unwrap();
        assert_eq!(world.compare(&dup), Comparison::Congruent);
        assert_eq!(world.compare(&world.clone()), Comparison::Ident);
        assert_ne!(dup.context_id(), world.context_id());
        all_to_all(&dup);
        // Odd and even ranks, reversed by key; rank 3 opts out.
        let color = if me == 3 { None } else { Some((me % 2) as i32) };
        let half = world.split(color, -(me as i32)).unwrap();
        if let Some(h) = &half {
            all_to_all(h);
        }
        let half_members = half.as_ref().map(|h| h.group().members().to_vec());
        let g = Group::new(vec![2, 0]).unwrap();
        let created = dup.create(&g).unwrap();
        if let Some(c) = &created {
            all_to_all(c);
        }
        let shared = world.split_shared(0).unwrap();
        all_to_all(&shared);
        // Freeing and creating again reuses ids without mixing messages.
        drop(dup);
        let again = world.dup().unwrap();
        all_to_all(&again);
        (half_members, created.map(|c| c.rank()), shared.size())
    });
    assert_eq!(got[0].0, Some(vec![2, 0]));
    assert_eq!(got[1].0, Some(vec![1]));
    assert_eq!(got[2].0, Some(vec![2, 0]));
    assert_eq!(got[3].0, None);
    assert_eq!(got.iter().map(|g| g.1).collect::<Vec<_>>(), [Some(1), None, Some(0), None]);
    assert!(got.iter().all(|g| g.2 == 4), "one node: everybody shares it");
}

#[test]
fn hints_are_set_copied_by_dup_and_replaced_by_dup_with_info() {
    on_all(2, |world| {
        assert_eq!(world.hints(), CommHints::default());
        world.set_info(&Info::from_pairs([("mpi_assert_no_any_tag", "true"), ("unknown", "x")]).unwrap());
        assert!(world.hints().no_any_tag);
        assert!(!world.get_info().contains("unknown"), "unknown keys are ignored");
        let d = world.dup().unwrap();
        assert_eq!(d.hints(), world.hints(), "a duplicate has the same hints");
        let overtaking = Info::from_pairs([("mpi_assert_allow_overtaking", "true")]).unwrap();
        let e = world.dup_with_info(&overtaking).unwrap();
        assert_eq!(e.hints(), CommHints { allow_overtaking: true, ..Default::default() });
        assert_eq!(e.get_info().get_str("mpi_assert_allow_overtaking"), Some("true"));
        all_to_all(&e);
        let s = world.split(Some(0), 0).unwrap().unwrap();
        assert_eq!(s.hints(), CommHints::default(), "other new communicators start with the defaults");
    });
}

#[test]
fn bad_arguments_are_errors() {
    on_all(2, |world| {
        assert_eq!(world.split(Some(-2), 0).err().unwrap().class(), ErrorClass::Arg);
        let stranger = Group::new(vec![0, 7]).unwrap();
        assert_eq!(world.create(&stranger).err().unwrap().class(), ErrorClass::Group);
    });
}

#[test]
fn a_negative_color_fails_there_and_the_others_go_on() {
    let got = on_all(3, |world| {
        let me = world.rank();
        let color = if me == 1 { Some(-5) } else { Some(0) };
        match world.split(color, 0) {
            Ok(c) => c.map(|c| c.group().members().to_vec()).ok_or(ErrorClass::Other),
            Err(e) => Err(e.class()),
        }
    });
    assert_eq!(got, [Ok(vec![0, 2]), Err(ErrorClass::Arg), Ok(vec![0, 2])]);
}

#[test]
fn shared_split_with_members_opting_out() {
    let got = on_all(3, |world| {
        let me = world.rank();
        let key = if me == 0 { None } else { Some(-(me as i32)) };
        let c = world.split_shared_opt(key).unwrap();
        if let Some(c) = &c {
            all_to_all(c);
        }
        c.map(|c| c.group().members().to_vec())
    });
    assert_eq!(got, [None, Some(vec![2, 1]), Some(vec![2, 1])]);
}
