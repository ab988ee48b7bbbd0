//! Point-to-point communication in the Rust API: typed blocking sends and receives, probes and
//! `sendrecv` on a communicator (this file), sends and receives of derived datatypes (`typed`),
//! buffered sends (`bsend`), matched probes (`mprobe`). The envelope types (ranks, tags,
//! statuses) are the communicator's, and the Rust types that map to MPI datatypes
//! ([`Equivalence`]) the datatypes'; they are re-exported here, where programs use them.
//!
//! Owns the blocking operations and these three kinds; it must not touch nmad's internals.
//! Nonblocking operations are in [`crate::request`].

pub mod bsend;
pub mod mprobe;
pub mod typed;

pub(crate) use crate::comm::check_tag;
pub use crate::comm::{From, Rank, Status, Tag};
pub use crate::datatype::Equivalence;

use crate::comm::tags;
use crate::comm::{Comm, from_nmad};
use crate::error::Result;
use nmad::SendMode;

/// The bytes of a slice of plain values.
fn bytes<T: Equivalence>(buf: &[T]) -> &[u8] {
    // SAFETY: `T` has no padding (Equivalence), so its memory is initialized bytes.
    unsafe { std::slice::from_raw_parts(buf.as_ptr().cast(), std::mem::size_of_val(buf)) }
}

fn bytes_mut<T: Equivalence>(buf: &mut [T]) -> &mut [u8] {
    // SAFETY: every bit pattern is a valid `T` (Equivalence), so any bytes may be stored.
    unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast(), std::mem::size_of_val(buf)) }
}

impl Comm {
    /// The express send (`MPI_Send` of contiguous bytes): sent before this returns when nmad's
    /// latency path takes it (`Session::send_now`: nothing queued for the peer, one eager
    /// packet). `false`, nothing done, for anything else — a rank outside the communicator or
    /// `MPI_PROC_NULL`, a negative tag, a busy peer, a failed one: the general path sends it or
    /// reports the error.
    #[inline]
    pub fn send_now(&self, dest: i32, tag: i32, bytes: &[u8]) -> bool {
        let (Ok(dest), true) = (u32::try_from(dest), tag >= 0) else { return false };
        self.world_rank(dest).is_some_and(|to| self.session().send_now(to, tags::p2p(tag), bytes))
    }

    fn send_with<T: Equivalence>(&self, op: &str, buf: &[T], dest: Rank, tag: i32, sync: bool) -> Result<()> {
        let t = check_tag(op, tag)?;
        let Rank::Rank(r) = dest else { return Ok(()) };
        let to = self.peer(op, r)?;
        self.session().send_mode(to, t, bytes(buf), SendMode { sync, header_len: 0 }).map_err(from_nmad)
    }

    /// `MPI_Send`.
    pub fn send<T: Equivalence>(&self, buf: &[T], dest: Rank, tag: i32) -> Result<()> {
        self.send_with("MPI_Send", buf, dest, tag, false)
    }

    /// `MPI_Ssend`: returns once the receiver has matched the message.
    pub fn ssend<T: Equivalence>(&self, buf: &[T], dest: Rank, tag: i32) -> Result<()> {
        self.send_with("MPI_Ssend", buf, dest, tag, true)
    }

    /// `MPI_Recv`. A longer message is an `MPI_ERR_TRUNCATE` error (the buffer holds its start).
    pub fn recv<T: Equivalence>(&self, buf: &mut [T], from: From, tag: Tag) -> Result<Status> {
        let tm = match tag {
            Tag::Tag(t) => tags::p2p_match(Some(check_tag("MPI_Recv", t).map(|_| t)?)),
            Tag::Any => tags::p2p_match(None),
        };
        let Some(src) = self.source("MPI_Recv", from)? else { return Ok(Status::PROC_NULL) };
        let st = self.session().recv(src, tm, bytes_mut(buf)).map_err(from_nmad)?;
        Ok(self.status(st, st.received))
    }

    /// `MPI_Probe`: waits for a matching message without receiving it.
    pub fn probe(&self, from: From, tag: Tag) -> Result<Status> {
        let tm = self.match_of("MPI_Probe", tag)?;
        let Some(src) = self.source("MPI_Probe", from)? else { return Ok(Status::PROC_NULL) };
        let st = self.session().probe(src, tm);
        Ok(self.status(st, st.len))
    }

    /// `MPI_Iprobe`: drives progress once; yields the core when nothing is there (see
    /// [`crate::request::found_nothing`]).
    pub fn iprobe(&self, from: From, tag: Tag) -> Result<Option<Status>> {
        let tm = self.match_of("MPI_Iprobe", tag)?;
        let Some(src) = self.source("MPI_Iprobe", from)? else { return Ok(Some(Status::PROC_NULL)) };
        let found = self.session().iprobe(src, tm).map(|st| self.status(st, st.len));
        if found.is_none() {
            crate::request::found_nothing();
        }
        Ok(found)
    }

    /// `MPI_Sendrecv`: sends `out` to `dest` while receiving into `inp` (no deadlock between two
    /// processes exchanging).
    pub fn sendrecv<T: Equivalence, U: Equivalence>(
        &self,
        out: &[T],
        dest: Rank,
        send_tag: i32,
        inp: &mut [U],
        from: From,
        recv_tag: Tag,
    ) -> Result<Status> {
        let t = check_tag("MPI_Sendrecv", send_tag)?;
        let tm = self.match_of("MPI_Sendrecv", recv_tag)?;
        let src = self.source("MPI_Sendrecv", from)?;
        let to = match dest {
            Rank::Rank(r) => Some(self.peer("MPI_Sendrecv", r)?),
            Rank::ProcNull => None,
        };
        let session = self.session();
        nmad::scope(|sc| -> Result<Status> {
            let r = match src {
                Some(src) => Some(sc.irecv(session, src, tm, bytes_mut(inp)).map_err(from_nmad)?),
                None => None,
            };
            if let Some(to) = to {
                session.send(to, t, bytes(out)).map_err(from_nmad)?;
            }
            let Some(r) = r else { return Ok(Status::PROC_NULL) };
            r.wait();
            let st = r.result().expect("waited").map_err(from_nmad)?;
            Ok(self.status(st, st.received))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorClass;
    use crate::testing::on_all;

    #[test]
    fn typed_messages_probes_and_sendrecv() {
        on_all(3, |w| {
            let me = w.rank();
            let next = (me + 1) % 3;
            let prev = (me + 2) % 3;
            // A ring of f64 vectors with sendrecv.
            let out: Vec<f64> = (0..1000).map(|i| f64::from(me) * 1e6 + f64::from(i)).collect();
            let mut inp = vec![0f64; 1000];
            let st = w.sendrecv(&out, Rank::Rank(next), 5, &mut inp, From::Rank(prev), Tag::Tag(5)).unwrap();
            assert_eq!((st.source, st.tag, st.count::<f64>()), (Some(prev), 5, Some(1000)));
            assert!(inp.iter().enumerate().all(|(i, &v)| v == f64::from(prev) * 1e6 + i as f64));
            // Probe, then receive what the probe announced, from any source and tag.
            w.send(&[me as i32; 3], Rank::Rank(next), 100 + me as i32).unwrap();
            let p = w.probe(From::Any, Tag::Any).unwrap();
            assert_eq!((p.source, p.tag, p.bytes), (Some(prev), 100 + prev as i32, 12));
            let mut got = [0i32; 3];
            let st = w.recv(&mut got, From::Any, Tag::Any).unwrap();
            assert_eq!((st.source, got), (Some(prev), [prev as i32; 3]));
            // Consumed (another tag may already be waiting: rank 0's synchronous send below).
            assert!(w.iprobe(From::Any, Tag::Tag(100 + prev as i32)).unwrap().is_none());
            // PROC_NULL moves nothing.
            w.send(&[1u8], Rank::ProcNull, 0).unwrap();
            let st = w.recv(&mut [0u8; 4], From::ProcNull, Tag::Any).unwrap();
            assert_eq!((st.source, st.tag, st.bytes), (None, -1, 0));
            // A synchronous send completes once matched.
            match me {
                0 => w.ssend(&[7u16; 10], Rank::Rank(1), 1).unwrap(),
                1 => assert_eq!(w.recv(&mut [0u16; 10], From::Rank(0), Tag::Tag(1)).unwrap().bytes, 20),
                _ => {}
            }
        });
    }

    #[test]
    fn truncation_and_bad_arguments_are_mpi_errors() {
        on_all(2, |w| {
            let peer = 1 - w.rank();
            w.send(&[9u32; 8], Rank::Rank(peer), 3).unwrap();
            let mut small = [0u32; 4];
            let e = w.recv(&mut small, From::Rank(peer), Tag::Tag(3)).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Truncate, "{e}");
            assert_eq!(small, [9; 4]);
            assert_eq!(w.send(&[0u8], Rank::Rank(2), 0).unwrap_err().class(), ErrorClass::Rank);
            assert_eq!(w.send(&[0u8], Rank::Rank(peer), -1).unwrap_err().class(), ErrorClass::Tag);
            assert_eq!(w.recv(&mut [0u8], From::Rank(5), Tag::Any).unwrap_err().class(), ErrorClass::Rank);
            assert_eq!(w.probe(From::Any, Tag::Tag(-3)).unwrap_err().class(), ErrorClass::Tag);
        });
    }
}
