//! Point-to-point communication in the Rust API: typed blocking sends and receives, probes and
//! `sendrecv` on a communicator, with MPI's argument checks (rank, tag) and `MPI_PROC_NULL`.
//!
//! Owns the mapping of MPI's envelope (communicator rank, tag) onto nmad's (world rank, 64-bit
//! tag, see [`crate::tags`]); it must not touch nmad's internals. Nonblocking operations are in [`crate::request`].

use crate::comm::{Comm, from_nmad};
use crate::datatype::Predefined;
use crate::error::{Error, Result};
use crate::tags;
use nmad::{SendMode, Source};

/// A plain Rust type that maps to an MPI datatype: every bit pattern is a valid value, so bytes
/// received from the network can be stored into it.
///
/// # Safety
/// Implementors must be `Copy` types without padding or invalid bit patterns whose layout is
/// the datatype's.
pub unsafe trait Equivalence: Copy + Send + Sync + 'static {
    const DATATYPE: Predefined;
}

macro_rules! equivalence {
    ($($t:ty => $p:ident),* $(,)?) => {$(
        // SAFETY: a primitive number: no padding, every bit pattern valid, C's layout.
        unsafe impl Equivalence for $t {
            const DATATYPE: Predefined = Predefined::$p;
        }
    )*};
}

equivalence!(
    i8 => Int8, i16 => Int16, i32 => Int32, i64 => Int64,
    u8 => Uint8, u16 => Uint16, u32 => Uint32, u64 => Uint64,
    f32 => Float, f64 => Double,
);

/// Where a message goes or comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rank {
    Rank(u32),
    /// `MPI_PROC_NULL`: the operation completes at once and moves nothing.
    ProcNull,
}

/// Which messages a receive takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum From {
    Rank(u32),
    Any,
    ProcNull,
}

/// Which tags a receive takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {
    Tag(i32),
    Any,
}

/// What a receive or probe found (`MPI_Status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    /// The sender's rank in the communicator (`None` for `MPI_PROC_NULL`).
    pub source: Option<u32>,
    /// The message's tag (`MPI_ANY_TAG`'s value, -1, for `MPI_PROC_NULL`).
    pub tag: i32,
    /// Bytes received (or, for a probe, the message's length).
    pub bytes: u64,
}

impl Status {
    const PROC_NULL: Status = Status { source: None, tag: -1, bytes: 0 };

    /// Elements of `T` received (`MPI_Get_count`; `None` when not a whole number).
    pub fn count<T: Equivalence>(&self) -> Option<u64> {
        let size = std::mem::size_of::<T>() as u64;
        self.bytes.is_multiple_of(size).then_some(self.bytes / size)
    }
}

pub(crate) fn check_tag(op: &str, tag: i32) -> Result<u64> {
    if !(0..=tags::TAG_UB).contains(&tag) {
        return Err(Error::tag(format!("{op}: tag {tag} is outside 0..={}", tags::TAG_UB)));
    }
    Ok(tags::p2p(tag))
}

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
    pub(crate) fn peer(&self, op: &str, r: u32) -> Result<u32> {
        self.world_rank(r).ok_or_else(|| {
            Error::rank(format!("{op}: rank {r} is outside the communicator (size {})", self.peer_size()))
        })
    }

    fn source(&self, op: &str, from: From) -> Result<Option<Source>> {
        Ok(match from {
            From::Rank(r) => Some(Source::Rank(self.peer(op, r)?)),
            From::Any => Some(Source::Any),
            From::ProcNull => None,
        })
    }

    fn status(&self, st: nmad::Status, bytes: u64) -> Status {
        Status { source: self.rank_of_world(st.source), tag: tags::mpi_tag(st.tag), bytes }
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

    pub(crate) fn match_of(&self, op: &str, tag: Tag) -> Result<nmad::TagMatch> {
        Ok(match tag {
            Tag::Tag(t) => {
                check_tag(op, t)?;
                tags::p2p_match(Some(t))
            }
            Tag::Any => tags::p2p_match(None),
        })
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
    use crate::comm::tests::on_all;
    use crate::error::ErrorClass;

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
