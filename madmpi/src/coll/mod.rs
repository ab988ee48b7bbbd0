//! Collective operations (issue 8): a schedule engine running nonblocking collectives in the
//! background, and the collectives of the Rust API built on it.
//!
//! # Design
//!
//! A collective is a `schedule::Schedule` per rank: rounds of sends and receives of byte ranges
//! (of the user's buffers or of temporaries) to and from communicator ranks, and local copies and
//! reductions (through [`Op`]), with dependencies between rounds. The algorithms (`algo`) are
//! pure functions building a rank's schedule from `(n, rank, sizes)`; `choice` picks one by size,
//! process count and commutativity, or as `MADMPI_COLL_*` variables force (documented there). The
//! engine (`engine`) runs a schedule: the starting thread posts the first rounds, and the
//! schedule then advances **in the background**, whether or not the user calls MPI again.
//!
//! Messages are tagged `tags::internal(Kind::Collective, seq, step)`: `seq` counts the
//! collectives started on the communicator (MPI makes every member start them in the same order,
//! so the counts agree), `step` is fixed by the algorithm for both ends of a message. Successive
//! and concurrent nonblocking collectives on one communicator never mix their messages, nor mix
//! with point-to-point traffic (`MPI_ANY_TAG` matches kind 0 only) or with communicator
//! management (kind `Management`, another counter).
//!
//! ## Background progress: why a pioman source, not the monitors
//!
//! Every nmad request of a schedule carries a [`nmad::Monitor`]. Advancing the schedule right
//! there (posting the next round from the callback) is not safe: monitors run inside nmad's
//! completion path, in whatever context completed the request, including **synchronously inside
//! `isend`/`irecv`** (an eager send that leaves at once, a receive that finds its message among
//! the unexpected ones). A monitor posting requests would re-enter the schedule while the thread
//! that posted is still inside it (holding its lock: a deadlock, or without a lock a data race),
//! recurse without bound through chains of immediate completions, and run a lazy connection
//! handshake (`marcel::blocking` around a connect) inside a driver's poll. nmad also documents
//! that monitors "must be quick and must not wait". Worse, a monitor runs *before* its request's
//! condition is signalled, so the schedule could not even see that request as complete yet.
//!
//! So monitors only count the completion and queue the schedule on the process's collective
//! background-work source (`crate::request::background`, one per runtime, registered with
//! the communicator's pioman on the first collective). pioman polls it from the same contexts as nmad's driver sources: idle
//! cores, progression threads (a rank that computes without calling MPI still advances its
//! schedules there), context switches and ticks under marcel, and threads waiting in MPI. The
//! poll advances each queued schedule under its lock, outside any nmad lock or callback. A
//! schedule whose monitor reported a completion that has not been signalled yet (the window
//! between the monitor and the signal) stays queued, so no completion is lost. Its eventfd
//! joins pioman's blocking waits, so `block`-policy sleepers are woken when a schedule is
//! queued, and told not to sleep while one is.
//!
//! ## Requests
//!
//! A collective's request is a [`crate::request::RawRequest`] holding an [`engine::Handle`]
//! (a [`crate::request::Pending`]) instead of an nmad request (`RawRequest::collective`):
//! `wait`, `test`, `status`, `wait_all`/`wait_any` and the multi-request waits of
//! `request::completion` use its condition and outcome; dropping it waits (collectives cannot be cancelled). Blocking collectives are start
//! + wait.
//!
//! # Files
//!
//! - `schedule`: the representation (pure data, structural checks);
//! - `algo`: the algorithms, one file per collective;
//! - `choice`: algorithm selection and the environment variables;
//! - `plan`: flat or hierarchical (communicators spanning several nodes) for barrier, bcast,
//!   reduce and allreduce, and the `MADMPI_COLL_TRACE` trace of the choices;
//! - `planned`: a schedule built and bound but not started, started once (nonblocking) or made
//!   persistent (MPI 4.0's `*_init`) with its collective number reserved at init;
//! - `engine`: executing a schedule (buffers, nmad requests, local operations, completion);
//! - `rounds`: the engine's round state machine and completion accounting (loom-modelled);
//! - `state`: what the collectives keep per communicator (in its extensions: the collective
//!   count, the node layout);
//! - `express`: blocking barrier, bcast and allreduce of a few bytes replaying the flat
//!   schedule's messages without a schedule;
//! - `shared`: blocking barrier, bcast, reduce and allreduce of up to 1 KiB per rank through a
//!   segment the ranks of one node share (no messages), chosen alike at every rank;
//! - `api_gather`: the Rust API of gather, scatter, allgather and alltoall (and their `v`
//!   forms, and alltoallw);
//! - `api`: the Rust API (`Comm::barrier`, `bcast`, `reduce`, `allreduce`, nonblocking and
//!   in-place variants);
//! - `api_reduce`: the Rust API of reduce-scatter (block), scan, exscan and `reduce_local`;
//! - `inter`: the collectives of intercommunicators (schedules across two groups);
//! - `raw_inter`: their C entry on raw memory (`raw` hands intercommunicators to it; beside
//!   `raw`, whose buffer binding it shares);
//! - `neighbor`: the neighbourhood collectives on raw memory (`algo::neighbor` over the
//!   neighbour lists a topology gives);
//! - `sim` (tests): an in-process simulator running the schedules of n ranks against each other.
//!
//! Owns the collective layer; it talks to nmad through sessions and requests only (and, node-locally,
//! through `node_shm` segments) and must not use `internal` (communicator management's own
//! exchanges).

mod algo;
mod api;
mod api_gather;
mod api_reduce;
mod bound;
pub mod choice;
pub(crate) mod engine;
mod express;
mod inline;
pub mod inter;
pub mod neighbor;
mod node_local;
mod plan;
mod planned;
pub mod raw;
pub mod raw_inter;
mod rounds;
mod schedule;
mod shared;
#[cfg(test)]
mod sim;
mod state;

pub use crate::op::{Builtin, Op};

pub use api_reduce::reduce_local;
pub use engine::Handle;

pub(crate) use algo::hier::Layout;
