//! Active messages, receiving side: the handler registry, the queue of arrived AMs, and running
//! their handlers from nmad's progression (any pioman poller: idle cores, progression threads,
//! waiting threads), never from inside a driver callback and with no nmad lock held, so a
//! handler may send (replies) freely.
//!
//! Owns: `AmRegistry`, `AmJob` and `run_ams`. It must not touch matching or request state; an
//! AM's credit is charged on arrival like eager data (`budget`) and owed back (`Gate::owe`)
//! once its handler has returned.
//!
//! Choices: an AM for an id not registered here is a protocol violation of its sender (the
//! peer is failed: both sides must register the same handlers before talking). The bytes are
//! copied out of the driver's packet (the packet is only borrowed during the driver's callback,
//! which may hold driver locks). Handlers run one at a time, in arrival order: AMs of one peer
//! run in its send order, and after the eager data that arrived before them was matched or
//! queued unexpected.

use super::Core;
use super::gate::EAGER_OVERHEAD;
use super::request::Error;
use super::work_queue::WorkQueue;
use crate::drivers::PeerId;
use rustc_hash::FxHashMap as HashMap;
use std::sync::{Arc, Mutex, RwLock, TryLockError};

/// Code run on the target of an active message.
pub trait AmHandler: Send + Sync {
    /// An AM from peer `from` arrived. Runs on a progression thread or a thread waiting in
    /// nmad, with no nmad lock held: it may send, but should not block for long (the AMs after
    /// it wait).
    fn on_message(&self, from: PeerId, header: &[u8], payload: &[u8]);
}

/// The handlers registered in this process, by id.
#[derive(Default)]
pub(crate) struct AmRegistry {
    handlers: RwLock<HashMap<u16, Arc<dyn AmHandler>>>,
    pub(crate) jobs: WorkQueue<AmJob>,
    /// Held while handlers run: one runner at a time keeps arrival order.
    runner: Mutex<()>,
}

/// An arrived AM waiting for its handler.
pub(crate) struct AmJob {
    peer: PeerId,
    handler: Arc<dyn AmHandler>,
    header: Vec<u8>,
    payload: Vec<u8>,
}

impl AmRegistry {
    pub(crate) fn register(&self, id: u16, handler: Arc<dyn AmHandler>) -> Result<(), Error> {
        let mut h = self.handlers.write().unwrap();
        if h.contains_key(&id) {
            return Err(Error::InvalidArgument(format!("active message handler {id} already registered")));
        }
        h.insert(id, handler);
        Ok(())
    }

    /// Queues an arrived AM (already charged to its sender's credit). `Err`: no such handler.
    pub(crate) fn arrived(&self, peer: PeerId, id: u16, header: &[u8], payload: &[u8]) -> Result<(), String> {
        let Some(handler) = self.handlers.read().unwrap().get(&id).cloned() else {
            return Err(format!("active message for unregistered handler {id}"));
        };
        self.jobs.push(AmJob { peer, handler, header: header.to_vec(), payload: payload.to_vec() });
        Ok(())
    }
}

/// Credit an AM costs its sender (what `Allowance::charge_eager` charges for it).
pub(crate) fn cost(header_len: usize, payload_len: usize) -> u64 {
    (header_len + payload_len) as u64 + EAGER_OVERHEAD
}

/// Runs the queued handlers unless another thread is running them. Returns how many ran.
pub(crate) fn run_ams(core: &Core) -> usize {
    // A handler that panicked leaves the lock poisoned: the next ones still run.
    let _runner = match core.ams.runner.try_lock() {
        Ok(g) => g,
        Err(TryLockError::Poisoned(p)) => p.into_inner(),
        Err(TryLockError::WouldBlock) => return 0,
    };
    let mut n = 0;
    while let Some(job) = core.ams.jobs.pop() {
        job.handler.on_message(job.peer, &job.header, &job.payload);
        n += 1;
        if let Ok(gate) = core.gate(job.peer) {
            gate.owe(core, cost(job.header.len(), job.payload.len()), 0);
        }
    }
    n
}
