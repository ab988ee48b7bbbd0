//! Matched probes (`MPI_Mprobe`, `MPI_Improbe`, `MPI_Mrecv`): a probe that takes the message out
//! of matching, so that no other thread's receive can take it between the probe and the
//! receive — the probe to use with MPI_THREAD_MULTIPLE.
//!
//! Owns the matched message until it is received; must not touch nmad's internals (it uses
//! nmad's `improbe` / `unpack`).

use crate::comm::{Comm, from_nmad};
use crate::error::Result;
use crate::p2p::{Equivalence, From, Status, Tag};
use crate::tags;
use nmad::{Data, Source};
use std::pin::Pin;

/// A message taken by a matched probe, to be received with [`Message::recv`].
#[must_use = "a matched message must be received (dropping it drops the message)"]
pub struct Message {
    inner: Option<(Pin<Box<nmad::Request>>, Comm)>,
    status: Status,
}

impl Message {
    /// `MPI_MESSAGE_NO_PROC`: the matched probe of `MPI_PROC_NULL`.
    fn no_proc() -> Message {
        Message { inner: None, status: Status { source: None, tag: -1, bytes: 0 } }
    }

    /// The message's envelope and length.
    pub fn status(&self) -> Status {
        self.status
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
        let Some((req, comm)) = self.inner else { return Ok(self.status) };
        // SAFETY: the caller keeps `data` valid; we wait below, before `req` is dropped.
        unsafe { comm.session().unpack(req.as_ref(), data) }.map_err(from_nmad)?;
        req.wait();
        let st = req.result().expect("waited").map_err(from_nmad)?;
        Ok(Status { bytes: st.received, ..self.status })
    }
}

impl Comm {
    /// `MPI_Improbe`: takes the earliest matching message, if one is there.
    pub fn improbe(&self, from: From, tag: Tag) -> Result<Option<Message>> {
        let tm = self.match_of("MPI_Improbe", tag)?;
        let src = match from {
            From::Rank(r) => Source::Rank(self.peer("MPI_Improbe", r)?),
            From::Any => Source::Any,
            From::ProcNull => return Ok(Some(Message::no_proc())),
        };
        let req = Box::pin(nmad::Request::new());
        if !self.session().improbe(src, tm, req.as_ref()).map_err(from_nmad)? {
            return Ok(None);
        }
        req.wait_matched();
        let st = req.status().expect("matched");
        let status =
            Status { source: self.rank_of_world(st.source), tag: tags::mpi_tag(st.tag), bytes: st.len };
        Ok(Some(Message { inner: Some((req, self.clone())), status }))
    }

    /// `MPI_Mprobe`: waits for a matching message and takes it.
    pub fn mprobe(&self, from: From, tag: Tag) -> Result<Message> {
        loop {
            if let Some(m) = self.improbe(from, tag)? {
                return Ok(m);
            }
            // Between two looks, let other user threads (and pioman's hooks) run.
            marcel::yield_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comm::tests::on_all;
    use crate::error::ErrorClass;
    use crate::p2p::Rank;

    /// Rank 1 sends three messages; rank 0's two threads each take messages with matched probes
    /// on any tag and receive exactly what they probed (no theft between probe and receive).
    #[test]
    fn matched_probes_hand_each_message_to_one_thread() {
        on_all(2, |w| {
            if w.rank() == 1 {
                for tag in 0..40 {
                    w.send(&vec![tag as u32; 1 + tag as usize * 100], Rank::Rank(0), tag).unwrap();
                }
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
            assert!(w.improbe(From::Any, Tag::Any).unwrap().is_none());
            let np = w.improbe(From::ProcNull, Tag::Any).unwrap().unwrap();
            assert_eq!(np.recv(&mut [0u8; 1]).unwrap().source, None);
            assert_eq!(w.mprobe(From::Rank(9), Tag::Any).err().unwrap().class(), ErrorClass::Rank);
        });
    }
}
