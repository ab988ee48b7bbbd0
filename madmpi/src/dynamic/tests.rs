//! Ports, names, join and disconnect over threads as ranks.

use super::*;
use crate::error::ErrorClass;
use crate::p2p::{From, Rank, Tag};
use crate::testing::on_all;
use std::os::fd::AsRawFd;

/// Every member sends its local rank to every remote rank and hears each of them once.
fn talk_across(ic: &Comm) {
    let nr = ic.remote_group().unwrap().size();
    for r in 0..nr {
        ic.send(&[ic.rank()], Rank::Rank(r), 3).unwrap();
    }
    let mut seen = vec![false; nr as usize];
    for _ in 0..nr {
        let mut b = [u32::MAX];
        let st = ic.recv(&mut b, From::Any, Tag::Tag(3)).unwrap();
        assert_eq!(st.source, Some(b[0]));
        assert!(!std::mem::replace(&mut seen[b[0] as usize], true));
    }
}

/// Evens accept on a port their root published, odds look it up and connect.
#[test]
fn two_groups_meet_through_a_published_port() {
    let got = on_all(5, |world| {
        let me = world.rank();
        let half = world.split(Some((me % 2) as i32), 0).unwrap().unwrap();
        let service = "dynamic-test-service";
        let ic = if me % 2 == 0 {
            let port = (half.rank() == 0).then(|| open_port(&world).unwrap());
            if let Some(p) = &port {
                publish_name(&world, service, p).unwrap();
                let again = publish_name(&world, service, p).unwrap_err();
                assert_eq!(again.class(), ErrorClass::Service);
            }
            let ic = accept(port.as_deref(), 0, &half).unwrap();
            if let Some(p) = &port {
                unpublish_name(&world, service).unwrap();
                close_port(p).unwrap();
                let alone = Comm::self_comm(world.runtime());
                assert_eq!(accept(Some(p), 0, &alone).err().unwrap().class(), ErrorClass::Port, "closed");
            }
            ic
        } else {
            let port = (half.rank() == 0).then(|| {
                loop {
                    match lookup_name(&world, service) {
                        Ok(p) => break p,
                        Err(e) => assert_eq!(e.class(), ErrorClass::Name),
                    }
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
            });
            connect(port.as_deref(), 0, &half).unwrap()
        };
        assert!(ic.is_inter());
        talk_across(&ic);
        let remote = ic.remote_group().unwrap().members().to_vec();
        disconnect(&ic).unwrap();
        remote
    });
    for (me, remote) in got.iter().enumerate() {
        let want: Vec<u32> = (0..5).filter(|r| r % 2 != me as u32 % 2).collect();
        assert_eq!(*remote, want, "rank {me}");
    }
}

/// The evens' root fails to accept on a port it never opened: every even member gets the
/// error; the odds' connect to a port of another job fails at once.
#[test]
fn a_bad_port_fails_the_whole_group() {
    on_all(4, |world| {
        let me = world.rank();
        let half = world.split(Some((me % 2) as i32), 0).unwrap().unwrap();
        let nm = world.runtime_nmad();
        let foreign = format!("madmpi-port:ffffffffffffffff:0:{}", "ab".repeat(16));
        let never_opened = format!("madmpi-port:{}:{}:{}", nm.job_id(), nm.rank(), "cd".repeat(16));
        let result = if me % 2 == 0 {
            accept((half.rank() == 0).then_some(never_opened.as_str()), 0, &half)
        } else {
            connect((half.rank() == 0).then_some(foreign.as_str()), 0, &half)
        };
        let err = result.err().expect("a bad port fails");
        assert_eq!(err.class(), ErrorClass::Port, "{err}");
        assert_eq!(accept(None, 9, &half).err().unwrap().class(), ErrorClass::Root);
        assert!(lookup_name(&world, "bad name").is_err());
    });
}

/// Ranks 0 and 2 join over a socket pair; ranks 1 and 3 join over another.
#[test]
fn two_processes_join_over_a_socket() {
    let pairs =
        [std::os::unix::net::UnixStream::pair().unwrap(), std::os::unix::net::UnixStream::pair().unwrap()];
    let fds: Vec<i32> =
        vec![pairs[0].0.as_raw_fd(), pairs[1].0.as_raw_fd(), pairs[0].1.as_raw_fd(), pairs[1].1.as_raw_fd()];
    let got = on_all(4, |world| {
        let me = world.rank();
        let self_comm = Comm::self_comm(world.runtime());
        let ic = join(&self_comm, fds[me as usize]).unwrap();
        talk_across(&ic);
        ic.remote_group().unwrap().members().to_vec()
    });
    assert_eq!(got, [vec![2], vec![3], vec![0], vec![1]]);
    let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
    drop(_b);
    on_all(1, |world| {
        let self_comm = Comm::self_comm(world.runtime());
        assert_eq!(join(&self_comm, a.as_raw_fd()).err().unwrap().class(), ErrorClass::Other);
    });
}
