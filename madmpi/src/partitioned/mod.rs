//! Partitioned communication (MPI 4.0 ch. 4): `MPI_Psend_init` / `MPI_Precv_init` make a
//! persistent [`Channel`]; each `MPI_Start` makes an [`Operation`], completed by the usual
//! waits and tests, in which the sender marks partitions ready (`MPI_Pready`, from any number
//! of threads) and the receiver asks whether a partition arrived (`MPI_Parrived`).
//!
//! The protocol, on nmad sessions (tags in [`crate::comm::tags`]):
//! 1. `MPI_Psend_init` sends a handshake (`handshake`): the sender's channel number, partition
//!    count and partition size; `MPI_Precv_init` posts its receive. Handshakes match in
//!    initialization order, MPI's rule for partitioned operations, and let the two sides cut
//!    the same bytes differently (`geometry`).
//! 2. Each sender partition is one message, sent the moment it is marked ready (`send`), tagged
//!    with the channel and the partition.
//! 3. The receiver posts one receive per sender partition into the bytes it covers (`recv`); a
//!    receive partition has arrived when every sender partition overlapping it has. Each
//!    receive's nmad monitor sets its arrival flag and counts down (`marks`, lock-free and
//!    model-checked), and the last one signals the operation's condition: waits sleep on it.
//!
//! Owns partitioned channels and operations; it must not touch handles nor check C arguments
//! (the C library does), nor reach into nmad's internals.

mod geometry;
mod handshake;
mod marks;
mod recv;
mod send;

pub use geometry::Geometry;
pub use recv::{RecvChannel, RecvOp};
pub use send::{SendChannel, SendOp};

use crate::error::{Error, Result};
use crate::request::{Outcome, Pending, RawRequest};
use marks::{Countdown, Marks};
use nmad::{Event, Monitor};
use std::sync::Arc;

/// The condition bit of a completed operation (nmad's, so waits look alike).
const COMPLETED: u32 = nmad::COMPLETED;

impl Geometry {
    /// `parts` partitions of `part_bytes` packed bytes each.
    pub fn new(parts: usize, part_bytes: usize) -> Geometry {
        Geometry { parts, part_bytes }
    }
}

/// What monitors and waiters of one operation share: the partition messages still to complete,
/// which ones did (receives), and the condition the last one signals.
pub(crate) struct Shared {
    left: Countdown,
    arrived: Marks,
    done: Arc<pioman::Cond>,
}

impl Shared {
    fn new(messages: usize, done: Arc<pioman::Cond>) -> Arc<Shared> {
        let s = Arc::new(Shared { left: Countdown::new(messages), arrived: Marks::new(messages), done });
        if messages == 0 {
            s.done.signal(COMPLETED);
        }
        s
    }

    /// One partition message completed; the last one signals.
    fn arrived(&self) {
        if self.left.arrive() {
            self.done.signal(COMPLETED);
        }
    }

    /// A monitor that counts each `event` (sends: which partition does not matter).
    fn monitor(self: &Arc<Self>, event: Event) -> Monitor {
        let s = self.clone();
        Arc::new(move |e, _| {
            if e == event {
                s.arrived();
            }
        })
    }

    /// A monitor that marks partition message `k` arrived at `event`, then counts it.
    fn monitor_at(self: &Arc<Self>, event: Event, k: usize) -> Monitor {
        let s = self.clone();
        Arc::new(move |e, _| {
            if e == event {
                s.arrived.mark(k);
                s.arrived();
            }
        })
    }

    fn arrived_all(&self, range: std::ops::Range<usize>) -> bool {
        self.arrived.all(range)
    }

    fn is_complete(&self) -> bool {
        self.done.test(COMPLETED) && self.left.is_done()
    }

    fn wait(&self, pio: &pioman::Pioman) {
        if !self.done.test(COMPLETED) {
            pio.wait(&self.done, COMPLETED);
        }
    }
}

/// A partitioned request: what `MPI_Start` starts again.
#[derive(Clone)]
pub enum Channel {
    Send(Arc<SendChannel>),
    Recv(Arc<RecvChannel>),
}

impl Channel {
    /// `MPI_Start`: a new operation, as a request.
    pub fn start(&self) -> RawRequest {
        match self {
            Channel::Send(s) => RawRequest::partitioned_on(s.comm(), Operation::Send(s.start())),
            Channel::Recv(r) => RawRequest::partitioned_on(r.comm(), Operation::Recv(r.start())),
        }
    }
}

/// One started partitioned operation.
pub enum Operation {
    Send(SendOp),
    Recv(RecvOp),
}

impl Operation {
    /// `MPI_Pready` of partition `k` (`MPI_ERR_REQUEST` on a receive).
    pub fn pready(&self, k: usize) -> Result<()> {
        match self {
            Operation::Send(s) => s.pready(k),
            Operation::Recv(_) => Err(Error::request("MPI_Pready needs a partitioned send request")),
        }
    }

    /// Checks that partition `k` could be marked ready (`MPI_Pready_range` and
    /// `MPI_Pready_list` check every partition before sending any).
    pub fn check_partition(&self, k: usize) -> Result<()> {
        match self {
            Operation::Send(s) => s.check(k),
            Operation::Recv(_) => Err(Error::request("MPI_Pready needs a partitioned send request")),
        }
    }

    /// `MPI_Parrived` of partition `j` (`MPI_ERR_REQUEST` on a send).
    pub fn parrived(&self, j: usize) -> Result<bool> {
        match self {
            Operation::Recv(r) => r.parrived(j),
            Operation::Send(_) => Err(Error::request("MPI_Parrived needs a partitioned receive request")),
        }
    }
}

/// A started operation is a request of its own kind: the request forwards its completion here.
impl Pending for Operation {
    fn is_complete(&self) -> bool {
        match self {
            Operation::Send(s) => s.shared().is_complete(),
            Operation::Recv(r) => r.is_complete(),
        }
    }

    fn cond(&self) -> &pioman::Cond {
        match self {
            Operation::Send(s) => s.shared().done.as_ref(),
            Operation::Recv(r) => r.cond(),
        }
    }

    fn poke(&self) {
        if let Operation::Recv(r) = self {
            r.advance();
        }
    }

    fn wait(&self, _pio: &pioman::Pioman) {
        match self {
            Operation::Send(s) => s.wait(),
            Operation::Recv(r) => r.wait(),
        }
    }

    fn outcome(&self) -> Option<Outcome> {
        match self {
            Operation::Send(s) => s.outcome(),
            Operation::Recv(r) => r.outcome(),
        }
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl RawRequest {
    /// The request of a started partitioned operation on `comm`.
    fn partitioned_on(comm: &crate::comm::Comm, op: Operation) -> RawRequest {
        RawRequest::with_pending(comm, Box::new(op))
    }

    /// The started partitioned operation, if this is one.
    pub fn partitioned(&self) -> Option<&Operation> {
        self.pending()?.as_any().downcast_ref()
    }
}

#[cfg(test)]
mod tests;
