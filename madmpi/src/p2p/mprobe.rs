//! Matched probes (`MPI_Mprobe`, `MPI_Improbe`, `MPI_Mrecv`): a probe that takes the message out
//! of matching, so that no other thread's receive can take it between the probe and the
//! receive — the probe to use with MPI_THREAD_MULTIPLE.
//!
//! Owns the matched message until it is received; must not touch nmad's internals (it uses
//! nmad's `improbe` / `unpack`).

use super::{Equivalence, From, Status, Tag};
use crate::comm::tags;
use crate::comm::{Comm, from_nmad};
use crate::error::Result;
use crate::request::RawRequest;
use nmad::{Data, Source};
use std::pin::Pin;

/// A message taken by a matched probe, to be received with [`Message::recv`] (or started
/// receiving with [`Message::irecv_raw`]). Dropping it receives the message into nothing.
#[must_use = "a matched message must be received (dropping it discards the message)"]
pub struct Message {
    /// The matched receive waiting for its buffer; `None` for `MPI_MESSAGE_NO_PROC`.
    inner: Option<Pin<Box<nmad::Request>>>,
    comm: Comm,
    status: Status,
}

impl Message {
    /// `MPI_MESSAGE_NO_PROC`: the matched probe of `MPI_PROC_NULL`.
    fn no_proc(comm: &Comm) -> Message {
        Message { inner: None, comm: comm.clone(), status: Status { source: None, tag: -1, bytes: 0 } }
    }

    /// The message's envelope and length.
    pub fn status(&self) -> Status {
        self.status
    }

    /// Whether this is `MPI_MESSAGE_NO_PROC` (the probe was of `MPI_PROC_NULL`).
    pub fn is_no_proc(&self) -> bool {
        self.inner.is_none()
    }

    /// Receives the message into `buf` (`MPI_Mrecv`); a longer message is `MPI_ERR_TRUNCATE`.
    pub fn recv<T: Equivalence>(self, buf: &mut [T]) -> Result<Status> {
        // SAFETY: `buf` is exclusively borrowed until we return, and we wait for completion
        // before returning; any bytes are valid `T`s (Equivalence).
        let data = unsafe { Data::from_raw(buf.as_mut_ptr().cast(), std::mem::size_of_val(buf)) };
        // SAFETY: as above.
        unsafe { self.recv_raw(data) }
    }

    /// Receives into `data` and waits.
    ///
    /// # Safety
    /// `data` must be valid for writes until this returns.
    pub unsafe fn recv_raw(self, data: Data) -> Result<Status> {
        // SAFETY: the caller keeps `data` valid until we return, and we wait.
        let r = unsafe { self.irecv_raw(data) }?;
        r.wait()
    }

    /// Starts receiving the message into `data` (`MPI_Imrecv`): the request owns the message;
    /// `MPI_MESSAGE_NO_PROC` gives a request complete at once with the empty status.
    ///
    /// # Safety
    /// `data` must stay valid for writes until the request completes (or is dropped).
    pub unsafe fn irecv_raw(mut self, data: Data) -> Result<RawRequest> {
        let Some(req) = self.inner.take() else { return Ok(RawRequest::completed(&self.comm)) };
        // SAFETY: the caller keeps `data` valid; the request, which owns `req`, waits for
        // completion when dropped.
        if let Err(e) = unsafe { self.comm.session().unpack(req.as_ref(), data) } {
            self.inner = Some(req); // dropped with the message, which receives it into nothing
            return Err(from_nmad(e));
        }
        Ok(RawRequest::matched_recv(req, &self.comm))
    }
}

impl Drop for Message {
    /// A matched message nobody received: receive it into no memory (a truncation, ignored),
    /// so that the sender is released and the request completes before it is freed.
    fn drop(&mut self) {
        let Some(req) = self.inner.take() else { return };
        // SAFETY: no memory is described, so none needs to stay valid.
        if unsafe { self.comm.session().unpack(req.as_ref(), Data::None) }.is_ok() {
            req.wait();
        }
    }
}

impl Comm {
    /// `MPI_Improbe`: takes the earliest matching message, if one is there.
    pub fn improbe(&self, from: From, tag: Tag) -> Result<Option<Message>> {
        let tm = self.match_of("MPI_Improbe", tag)?;
        let src = match from {
            From::Rank(r) => Source::Rank(self.peer("MPI_Improbe", r)?),
            From::Any => Source::Any,
            From::ProcNull => return Ok(Some(Message::no_proc(self))),
        };
        let req = Box::pin(nmad::Request::new());
        if !self.session().improbe(src, tm, req.as_ref()).map_err(from_nmad)? {
            crate::request::found_nothing();
            return Ok(None);
        }
        req.wait_matched();
        let st = req.status().expect("matched");
        let status =
            Status { source: self.rank_of_world(st.source), tag: tags::mpi_tag(st.tag), bytes: st.len };
        Ok(Some(Message { inner: Some(req), comm: self.clone(), status }))
    }

    /// `MPI_Mprobe`: waits for a matching message and takes it.
    pub fn mprobe(&self, from: From, tag: Tag) -> Result<Message> {
        loop {
            // A miss yields (other user threads, and pioman's hooks, run between two looks).
            if let Some(m) = self.improbe(from, tag)? {
                return Ok(m);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorClass;
    use crate::p2p::Rank;
    use crate::testing::on_all;

    /// Rank 1 sends three messages; rank 0's two threads each take messages with matched probes
    /// on any tag and receive exactly what they probed (no theft between probe and receive).
    #[test]
    fn matched_probes_hand_each_message_to_one_thread() {
        on_all(2, |w| {
            if w.rank() == 1 {
                for tag in 0..40 {
                    w.send(&vec![tag as u32; 1 + tag as usize * 100], Rank::Rank(0), tag).unwrap();
                }
                // For the nonblocking receive and the dropped messages below (one eager, one
                // rendezvous: its send completes only once rank 0 drops it).
                w.send(&[5u64; 3], Rank::Rank(0), 100).unwrap();
                w.send(&[1u8; 8], Rank::Rank(0), 101).unwrap();
                w.send(&vec![2u8; 1 << 20], Rank::Rank(0), 102).unwrap();
                w.send(&[3u8; 2], Rank::Rank(0), 103).unwrap();
                return;
            }
            let got: Vec<i32> = std::thread::scope(|inner| {
                let hs: Vec<_> = (0..2)
                    .map(|_| {
                        let w = w.clone();
                        inner.spawn(move || {
                            let mut mine = Vec::new();
                            for _ in 0..20 {
                                let m = w.mprobe(From::Rank(1), Tag::Any).unwrap();
                                let st = m.status();
                                let mut buf = vec![0u32; st.bytes as usize / 4];
                                let r = m.recv(&mut buf).unwrap();
                                assert_eq!((r.tag, r.bytes), (st.tag, st.bytes));
                                assert!(buf.iter().all(|&v| v == st.tag as u32));
                                mine.push(st.tag);
                            }
                            mine
                        })
                    })
                    .collect();
                hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
            });
            let mut got = got;
            got.sort();
            assert_eq!(got, (0..40).collect::<Vec<_>>());
            // A nonblocking receive owns its message; the message is gone from matching.
            let m = w.mprobe(From::Rank(1), Tag::Tag(100)).unwrap();
            let mut got = [0u64; 4];
            // SAFETY: `got` outlives the request, waited for below.
            let r = unsafe { m.irecv_raw(Data::from_raw(got.as_mut_ptr().cast(), 32)) }.unwrap();
            assert!(!r.cancel(), "a matched message cannot be cancelled");
            let st = r.wait().unwrap();
            assert_eq!((st.source, st.tag, st.bytes, got), (Some(1), 100, 24, [5, 5, 5, 0]));
            // Dropped messages are consumed (the rendezvous sender is released).
            drop(w.mprobe(From::Rank(1), Tag::Tag(101)).unwrap());
            drop(w.mprobe(From::Rank(1), Tag::Tag(102)).unwrap());
            assert_eq!(w.recv(&mut [0u8; 2], From::Rank(1), Tag::Any).unwrap().tag, 103);
            assert!(w.improbe(From::Any, Tag::Any).unwrap().is_none());
            let np = w.improbe(From::ProcNull, Tag::Any).unwrap().unwrap();
            assert!(np.is_no_proc());
            assert_eq!(np.recv(&mut [0u8; 1]).unwrap().source, None);
            let np = w.mprobe(From::ProcNull, Tag::Any).unwrap();
            // SAFETY: no memory.
            let r = unsafe { np.irecv_raw(Data::None) }.unwrap();
            assert!(r.is_complete());
            assert_eq!(r.outcome().unwrap(), crate::request::Outcome::DONE);
            assert_eq!(w.mprobe(From::Rank(9), Tag::Any).err().unwrap().class(), ErrorClass::Rank);
        });
    }
}
