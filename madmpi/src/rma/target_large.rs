//! The target's side of large transfers (`super::bulk`): it posts the receive into the
//! window (a put), into a buffer it combines once in (an accumulate), or the send from the
//! window (a get) when it reaches the record, along the target type's blocks when it is
//! derived; it holds back what must wait for them ([`PerOrigin::must_wait`]), and, from the
//! process's background-work source once a transfer completed, counts it applied and replays
//! what its origin deferred.
//!
//! Owns the transfers in flight at the target; the records' order and the lock queue are the
//! parent's.

use super::target::{Answers, PerOrigin, TargetState, WinCore, lock};
use super::target_apply::{combine, op_on};
use crate::datatype::Datatype;
use crate::error::{Error, Result};
use crate::op::Op;
use crate::request::background::Advance;
use crate::rma::bulk::{Transfer, Way};
use crate::rma::shape::{Placed, Shape};
use crate::rma::wire::{Malformed, Record, Target};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

/// A large transfer in flight at the target, and for an accumulate what to do once it is in.
pub(super) struct Bulk {
    transfer: Transfer,
    combine: Option<Combine>,
}

/// A large accumulate's data, received apart, then combined into the window at `ptr` along
/// the target type's `shape`.
struct Combine {
    ptr: *mut u8,
    shape: Shape,
    data: Vec<u8>,
    op: Op,
    dt: Datatype,
}

// SAFETY: `ptr` is window memory that `resolve` checked for the whole of `data`, valid while
// the window lives; it is only written under the target state's lock, like every operation.
unsafe impl Send for Combine {}

/// Which large transfer a record starts.
#[derive(Clone, Copy)]
pub(super) enum BulkKind {
    Put,
    Get,
    Acc { op: u8, elem: u16 },
}

impl PerOrigin {
    /// Whether `rec` must wait for this origin's large transfers in flight: a synchronization
    /// waits for all of them; an accumulate-like operation for the large accumulates (MPI's
    /// default ordering of accumulates). Puts and gets go on: MPI orders them with nothing in
    /// an epoch (a conflicting access would be erroneous), so the transfers overlap. Once one
    /// record waits, the later ones wait behind it.
    pub(super) fn must_wait(&self, rec: &Record) -> bool {
        if self.waiting || !self.deferred.is_empty() {
            return true;
        }
        match rec {
            Record::Unlock { .. } | Record::Flush { .. } | Record::Complete => !self.bulk.is_empty(),
            Record::Acc { .. } | Record::GetAcc { .. } | Record::Cas { .. } | Record::AccBulk { .. } => {
                self.bulk.iter().any(|b| b.combine.is_some())
            }
            _ => false,
        }
    }
}

impl Advance for WinCore {
    fn queued(&self) -> &AtomicBool {
        &self.queued
    }

    fn advance(self: Arc<Self>) -> bool {
        self.resume()
    }
}

impl WinCore {
    /// Posts this side of a large transfer: the receive into the window (put) or into a
    /// buffer to combine (accumulate), or the send from the window (get). A refused one (out
    /// of range, a bad operation) is reported in a fault record, and its message still drained
    /// (put, accumulate) or answered empty (get), so the origin's side completes.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn start_bulk(
        &self,
        st: &TargetState,
        origin: u32,
        kind: BulkKind,
        at: &Target,
        len: u64,
        seq: u64,
        out: &mut Answers,
    ) -> Result<Bulk> {
        let place = self.resolve(st, origin, at, 0, len).and_then(|(ptr, shape)| match kind {
            BulkKind::Acc { op, elem } => {
                let (op, dt) = op_on(op, elem)?;
                if dt.size() == 0 || !len.is_multiple_of(dt.size()) {
                    return Err(Error::intern(format!("{len} accumulate bytes are not whole elements")));
                }
                // `len` is within the window (resolve): the buffer is no larger than it.
                let mut data = std::mem::take(&mut *lock(&self.scratch));
                data.resize(len as usize, 0);
                Ok((ptr, shape.clone(), Some(Combine { ptr, shape, data, op, dt })))
            }
            _ => Ok((ptr, shape, None)),
        });
        let refused = place.is_err();
        let expect = if refused { 0 } else { len };
        let (data, mut combine) = match place {
            Ok((_, _, Some(mut c))) => {
                // SAFETY: the buffer lives in the `Combine` kept with the transfer until it
                // completes; moving a Vec does not move its heap buffer.
                (unsafe { nmad::Data::from_raw(c.data.as_mut_ptr(), c.data.len()) }, Some(c))
            }
            Ok((ptr, Shape::Bytes(_), None)) if len > 0 => {
                // SAFETY: resolve checked `[ptr, ptr + len)` inside this process's window
                // memory, which outlives the transfer (the window is freed only after every
                // epoch ended, and an epoch ends after this origin's records that wait for it).
                (unsafe { nmad::Data::from_raw(ptr, len as usize) }, None)
            }
            Ok((ptr, shape @ Shape::Derived { .. }, None)) if len > 0 => {
                // SAFETY: resolve checked the shape's whole span from `ptr` inside the window
                // memory (valid as above), and `len` against the shape's size: every block nmad
                // is given lies in that span.
                (unsafe { nmad::Data::from_layout(ptr, Arc::new(Placed { shape, len })) }, None)
            }
            Ok(_) => (nmad::Data::default(), None),
            Err(e) => {
                out.push(self, origin, Record::Fault { class: e.class().code() as u16 }, &[]);
                (nmad::Data::default(), None)
            }
        };
        let peer = self.peers[origin as usize];
        let this = self.this.clone();
        let monitor: nmad::Monitor = Arc::new(move |ev, _| {
            if ev == nmad::Event::DataArrived {
                return;
            }
            if let Some(core) = this.upgrade() {
                core.finished.fetch_add(1, SeqCst);
                core.background.push(&core);
            }
        });
        // SAFETY: `data` is window memory checked above, or the combine buffer (or empty),
        // valid until completion.
        let mut transfer = unsafe {
            match kind {
                BulkKind::Get => {
                    Transfer::send(&self.session, peer, (seq, Way::ToOrigin), data, Some(monitor))
                }
                _ => Transfer::recv(
                    &self.session,
                    peer,
                    (seq, Way::ToTarget),
                    data,
                    Some(expect),
                    Some(monitor),
                ),
            }
        }?;
        transfer.refused = refused;
        Ok(Bulk { transfer, combine: combine.take() })
    }

    /// Takes the completed large transfers out, counts them applied, and applies what their
    /// origins deferred. Returns whether a monitor reported a completion not signalled yet.
    fn resume(&self) -> bool {
        let mut out = Answers::default();
        let again = {
            let mut st = lock(&self.state);
            for o in 0..st.of.len() {
                let all = std::mem::take(&mut st.of[o].bulk);
                let (done, going): (Vec<Bulk>, Vec<Bulk>) =
                    all.into_iter().partition(|b| b.transfer.is_done());
                st.of[o].bulk = going;
                if done.is_empty() {
                    continue;
                }
                st.reaped += done.len() as u64;
                st.of[o].applied += done.len() as u64;
                for Bulk { transfer, combine: acc } in done {
                    let r = transfer.outcome().and_then(|()| match &acc {
                        // SAFETY: `start_bulk` checked the accumulate's shape inside the window.
                        Some(c) => unsafe { combine(c.ptr, &c.shape, 0, &c.data, &c.op, &c.dt) },
                        None => Ok(()),
                    });
                    if let Some(c) = acc {
                        *lock(&self.scratch) = c.data; // the next large accumulate's buffer
                    }
                    if let (Err(e), false) = (r, transfer.refused) {
                        out.push(self, o as u32, Record::Fault { class: e.class().code() as u16 }, &[]);
                    }
                }
                if !st.of[o].waiting
                    && let Err(Malformed(e)) = self.replay(&mut st, o as u32, &mut out)
                {
                    log::error!("one-sided: from rank {o}: window {}: {e}", self.ctx);
                }
            }
            self.finished.load(SeqCst) > st.reaped
        };
        self.notify.notify_all();
        out.send(self);
        again
    }
}
