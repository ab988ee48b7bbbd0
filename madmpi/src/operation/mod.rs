//! Operations checked and ready to start: an [`Operation`] is what one call of the C binding
//! does (a send, a receive, a send-receive, a planned collective), built once from its checked
//! arguments and then **run** (a blocking call), **started** once (a nonblocking call, its
//! [`RawRequest`] returned) or made a [`Persistent`] template (`MPI_Send_init`,
//! `MPI_Bsend_init`..., MPI 4.0's `MPI_Bcast_init`...) that each `MPI_Start` starts again.
//! Every form of a call shares that one path, whatever its count type.
//!
//! `lifecycle` is [`MpiRequest`]: a request as programs hold it, persistent ones active or
//! inactive.
//!
//! Owns what running and starting each kind of operation does; it must not check arguments
//! (the callers do, before building one). It sits above the modules whose operations it
//! starts (point-to-point, collectives, partitioned communication, requests).

mod lifecycle;

pub use lifecycle::{MpiRequest, give_back, shared};

use crate::coll::raw;
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::p2p::{From, Rank, Tag};
use crate::request::{Mode, Outcome, RawRequest};
use nmad::Data;

/// One call's operation, its arguments checked.
pub enum Operation {
    /// A standard, ready (a standard send, as MPI allows) or synchronous send; `call` names it
    /// in errors.
    Send { comm: Comm, call: &'static str, data: Data, dest: Rank, tag: i32, mode: Mode },
    /// A buffered send: the message is copied into the attached buffer.
    Bsend { comm: Comm, call: &'static str, data: Data, dest: Rank, tag: i32 },
    /// A receive.
    Recv { comm: Comm, call: &'static str, data: Data, from: From, tag: Tag },
    /// A send and a receive together (`MPI_Sendrecv`, `MPI_Isendrecv`).
    SendRecv { comm: Comm, send: Data, dest: Rank, send_tag: i32, recv: Data, from: From, recv_tag: Tag },
    /// A send-receive in one buffer (`MPI_Sendrecv_replace`, `MPI_Isendrecv_replace`).
    SendRecvReplace { comm: Comm, data: Data, dest: Rank, send_tag: i32, from: From, recv_tag: Tag },
    /// A collective, planned.
    Collective(raw::Planned),
}

impl Operation {
    /// Starts it (a nonblocking call).
    ///
    /// # Safety
    /// The memory it was built on must be valid (readable for what is sent, writable for what
    /// is received) until the returned request completes (or is dropped).
    pub unsafe fn start(self) -> Result<RawRequest> {
        match self {
            // SAFETY: the memory contract is ours, passed on.
            Operation::Collective(p) => unsafe { p.start() },
            // SAFETY: the operation's memory stays valid until the request completes (our contract).
            point => unsafe { point.start_point() },
        }
    }

    /// Runs it to completion (a blocking call): its outcome (a truncated receive's status with
    /// its error).
    ///
    /// # Safety
    /// The memory it was built on must be valid until this returns.
    pub unsafe fn run(self) -> Result<Outcome> {
        match self {
            Operation::Send { comm, call, data, dest, tag, mode } => {
                // SAFETY: `data` is readable until this returns (our contract).
                unsafe { comm.send_data(call, data, dest, tag, mode) }?;
                Ok(Outcome::DONE)
            }
            Operation::Recv { comm, call, data, from, tag } => {
                // SAFETY: `data` is writable until this returns (our contract).
                unsafe { comm.recv_data(call, data, from, tag) }
            }
            // SAFETY: the planned memory is valid until this returns (our contract).
            Operation::Collective(p) => unsafe { p.run() },
            other => {
                // SAFETY: the request is waited for before this returns (our contract covers
                // that long), and waited for by its drop if `wait` does not return normally.
                let r = unsafe { other.start() }?;
                let _ = r.wait();
                r.outcome().ok_or_else(|| Error::intern("a waited-for request is not complete"))
            }
        }
    }

    /// Makes it a persistent request's template (a collective takes its number now).
    pub fn persist(self) -> Persistent {
        match self {
            Operation::Collective(p) => Persistent::Collective(p.persist()),
            point => Persistent::Point(point),
        }
    }

    /// Starts a point-to-point operation (a collective here is an internal error: it is started
    /// by value, or made persistent first).
    ///
    /// # Safety
    /// As [`Operation::start`].
    unsafe fn start_point(&self) -> Result<RawRequest> {
        match self {
            // SAFETY: `data` is readable until the request completes (our contract).
            Operation::Send { comm, data, dest, tag, mode, .. } => unsafe {
                RawRequest::isend(comm, data.clone(), *dest, *tag, *mode)
            },
            Operation::Bsend { comm, call, data, dest, tag } => {
                // SAFETY: `data` is readable now (our contract); it is copied before this returns.
                unsafe { comm.bsend_data(call, data, *dest, *tag) }?;
                Ok(RawRequest::completed(comm))
            }
            // SAFETY: `data` is writable until the request completes (our contract).
            Operation::Recv { comm, data, from, tag, .. } => unsafe {
                RawRequest::irecv(comm, data.clone(), *from, *tag)
            },
            // SAFETY: `send` readable and `recv` writable until the request completes (ours).
            Operation::SendRecv { comm, send, dest, send_tag, recv, from, recv_tag } => unsafe {
                RawRequest::isendrecv(comm, send.clone(), *dest, *send_tag, recv.clone(), *from, *recv_tag)
            },
            // SAFETY: `data` readable now and writable until the request completes (ours).
            Operation::SendRecvReplace { comm, data, dest, send_tag, from, recv_tag } => unsafe {
                RawRequest::isendrecv_replace(comm, data.clone(), *dest, *send_tag, *from, *recv_tag)
            },
            Operation::Collective(_) => Err(Error::intern("a planned collective started by reference")),
        }
    }
}

/// What a persistent request starts, again and again.
pub enum Persistent {
    Point(Operation),
    Collective(raw::Persistent),
    /// A partitioned send or receive: its channel starts its own operations.
    Partitioned(crate::partitioned::Channel),
}

impl Persistent {
    /// Starts the operation again.
    ///
    /// # Safety
    /// As [`Operation::start`]; and the previous run of this request has completed.
    pub unsafe fn start(&self) -> Result<RawRequest> {
        match self {
            // SAFETY: the memory contract is ours, passed on.
            Persistent::Point(op) => unsafe { op.start_point() },
            // SAFETY: the planned memory stays valid until the request completes and the previous
            // run completed (our contract), as `raw::Persistent::start` asks.
            Persistent::Collective(c) => unsafe { c.start() },
            Persistent::Partitioned(channel) => Ok(channel.start()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coll::raw::RawBuf;
    use crate::coll::{Builtin, Op};
    use crate::datatype::{Datatype, Predefined};
    use crate::testing::on_all;

    /// A persistent allreduce planned once and started five times over the same memory, with
    /// new inputs each time, interleaved with a one-shot collective that takes the next number:
    /// each run sums that run's inputs.
    #[test]
    fn a_persistent_collective_runs_again_and_again() {
        on_all(3, |w| {
            let int = Datatype::predefined(Predefined::Int);
            let mut input = [0i32; 4];
            let mut output = [0i32; 4];
            let send = RawBuf { base: input.as_mut_ptr().cast(), count: 4, dtype: int.clone() };
            let recv = RawBuf { base: output.as_mut_ptr().cast(), count: 4, dtype: int.clone() };
            let plan = raw::allreduce(&w, Some(&send), &recv, &Op::builtin(Builtin::Sum)).unwrap();
            let p = Operation::Collective(plan).persist();
            for k in 0..5 {
                for (i, x) in input.iter_mut().enumerate() {
                    *x = 100 * k + 10 * w.rank() as i32 + i as i32;
                }
                // SAFETY: `input` and `output` outlive the request, waited for here, and are not
                // touched until then.
                let r = unsafe { p.start() }.unwrap();
                r.wait().unwrap();
                let ranks_sum: i32 = (0..3).sum();
                let want: Vec<i32> = (0..4).map(|i| 3 * (100 * k + i) + 10 * ranks_sum).collect();
                assert_eq!(output.to_vec(), want, "run {k}");
                // SAFETY: no memory.
                let b = unsafe { raw::barrier(&w).unwrap().start() }.unwrap();
                b.wait().unwrap();
            }
        });
    }

    /// `MPI_Isendrecv_replace` of a strided buffer: the peer's elements land in place, the
    /// holes stay, and the request's status is the receive's.
    #[test]
    fn a_send_receive_in_place_swaps_and_reports_the_receive() {
        on_all(2, |w| {
            let me = w.rank();
            let peer = 1 - me;
            let mut buf: Vec<u32> = (0..8).map(|i| 100 * me + i).collect();
            let layout = std::sync::Arc::new(nmad::Strided { count: 4, block: 4, stride: 8 });
            // SAFETY: the layout stays inside `buf`, which outlives the request (waited for).
            let data = unsafe { nmad::Data::from_layout(buf.as_mut_ptr().cast(), layout) };
            let op = Operation::SendRecvReplace {
                comm: w.clone(),
                data,
                dest: Rank::Rank(peer),
                send_tag: 5,
                from: From::Any,
                recv_tag: Tag::Tag(5),
            };
            // SAFETY: `buf` outlives the request, waited for at once, and nothing else touches it.
            let o = unsafe { op.run() }.unwrap();
            assert_eq!(o.error, None);
            assert_eq!((o.status.source, o.status.tag, o.status.bytes), (Some(peer), 5, 16));
            let want: Vec<u32> =
                (0..8).map(|i| if i % 2 == 0 { 100 * peer + i } else { 100 * me + i }).collect();
            assert_eq!(buf, want);
        });
    }
}
