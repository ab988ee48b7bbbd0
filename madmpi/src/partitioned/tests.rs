use super::*;
use crate::error::ErrorClass;
use crate::p2p::{From, Rank};
use crate::testing::on_all;
use nmad::Data;

const SEND: Geometry = Geometry { parts: 8, part_bytes: 6 };
const RECV: Geometry = Geometry { parts: 3, part_bytes: 16 };

/// Rank 0 sends 8 partitions of 6 bytes three times, four threads marking them ready in an
/// order that changes each time; rank 1 receives them as 3 partitions of 16 bytes, polling
/// `parrived` until each one is there, and checks its bytes as soon as it is.
#[test]
fn partitions_ready_from_four_threads_arrive_into_a_different_cut() {
    on_all(2, |w| {
        let mut buf = vec![0u8; SEND.total()];
        // SAFETY: `buf` outlives the channel (dropped at the end of this closure, after it).
        let data = unsafe { Data::from_raw(buf.as_mut_ptr(), buf.len()) };
        let tag = 5;
        if w.rank() == 0 {
            // SAFETY: `buf` outlives the channel; the test rewrites it only between operations.
            let ch = Channel::Send(Arc::new(
                unsafe { SendChannel::new(&w, data, SEND, Rank::Rank(1), tag) }.unwrap(),
            ));
            for round in 0..3u8 {
                // SAFETY: no operation runs: nothing reads the buffer.
                let b = unsafe { std::slice::from_raw_parts_mut(buf.as_ptr().cast_mut(), buf.len()) };
                b.iter_mut().enumerate().for_each(|(i, x)| *x = i as u8 ^ round);
                let req = ch.start();
                let op = req.partitioned().unwrap();
                assert_eq!(op.pready(8).unwrap_err().class(), ErrorClass::Other);
                std::thread::scope(|s| {
                    for t in 0..4usize {
                        s.spawn(move || {
                            for i in 0..2 {
                                // Round r: thread t marks partitions t and t + 4, in a rotating order.
                                let k = (t + 4 * ((i + round as usize) % 2) + round as usize) % 8;
                                op.pready(k).unwrap();
                            }
                        });
                    }
                });
                op.pready(3).unwrap(); // a second mark does nothing
                req.wait().unwrap();
            }
        } else {
            // SAFETY: `buf` outlives the channel and is read only where partitions arrived.
            let ch = Channel::Recv(Arc::new(
                unsafe { RecvChannel::new(&w, data, RECV, From::Rank(0), tag) }.unwrap(),
            ));
            for round in 0..3u8 {
                let req = ch.start();
                let op = req.partitioned().unwrap();
                assert_eq!(op.pready(0).unwrap_err().class(), ErrorClass::Request);
                let mut seen = [false; 3];
                while seen.iter().any(|s| !s) {
                    for (j, seen) in seen.iter_mut().enumerate() {
                        if !*seen && op.parrived(j).unwrap() {
                            *seen = true;
                            for i in RECV.range(j) {
                                // SAFETY: partition `j` arrived: nothing writes its bytes any more.
                                let x = unsafe { *buf.as_ptr().add(i) };
                                assert_eq!(x, i as u8 ^ round, "round {round} byte {i}");
                            }
                        }
                    }
                }
                let st = req.wait().unwrap();
                assert_eq!((st.source, st.tag, st.bytes), (Some(0), tag, 48));
            }
            assert_eq!(ch.start().partitioned().unwrap().parrived(3).unwrap_err().class(), ErrorClass::Other);
        }
    });
}

/// Sizes that differ fail the receive with `MPI_ERR_TRUNCATE`; `MPI_PROC_NULL` completes at once.
#[test]
fn size_mismatch_and_proc_null() {
    on_all(2, |w| {
        let mut buf = vec![0u8; 64];
        // SAFETY: `buf` outlives the channels.
        let data = unsafe { Data::from_raw(buf.as_mut_ptr(), 64) };
        if w.rank() == 0 {
            // SAFETY: `buf` outlives the channel, which nothing else uses.
            let ch =
                unsafe { SendChannel::new(&w, data.clone(), Geometry::new(2, 8), Rank::Rank(1), 1) }.unwrap();
            drop(ch); // only the handshake goes
        } else {
            // SAFETY: `buf` outlives the channel and is read only where partitions arrived.
            let ch = Channel::Recv(Arc::new(
                unsafe { RecvChannel::new(&w, data.clone(), Geometry::new(2, 9), From::Rank(0), 1) }.unwrap(),
            ));
            let req = ch.start();
            assert_eq!(req.wait().unwrap_err().class(), ErrorClass::Truncate);
        }
        // SAFETY: `buf` outlives the channel, which nothing else uses.
        let null = Channel::Recv(Arc::new(
            unsafe { RecvChannel::new(&w, data.clone(), Geometry::new(4, 2), From::ProcNull, 1) }.unwrap(),
        ));
        let req = null.start();
        assert!(req.is_complete() && req.partitioned().unwrap().parrived(3).unwrap());
        assert_eq!(req.wait().unwrap().source, None);
        // SAFETY: `buf` outlives the channel, which nothing else uses.
        let null = Channel::Send(Arc::new(
            unsafe { SendChannel::new(&w, data, Geometry::new(2, 2), Rank::ProcNull, 1) }.unwrap(),
        ));
        let req = null.start();
        assert!(!req.is_complete());
        req.partitioned().unwrap().pready(1).unwrap();
        req.partitioned().unwrap().pready(0).unwrap();
        assert!(req.is_complete());
        // SAFETY: no memory is involved.
        let any = unsafe { RecvChannel::new(&w, Data::None, Geometry::new(1, 0), From::Any, 1) };
        assert_eq!(any.err().map(|e| e.class()), Some(ErrorClass::Rank));
    });
}
