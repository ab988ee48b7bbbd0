//! A window's origin side: the access epoch this process is in, and per target the batch of
//! records not sent yet, its lock (requested lazily: the lock record leaves with the first
//! record to that target, so lock + put + unlock is one message), the operations sent (fence
//! counts them), the derived types already described, and the answers still awaited.
//!
//! Batches leave at synchronization calls, when full, and at once when they carry more than
//! [`EARLY`] bytes of data or announce a large transfer, or for operations whose answer a
//! request may wait for. Owns [`Origin`]; it must not touch target-side state.

use super::bulk::Transfer;
use super::lock::LockKind;
use super::service::Slot;
use super::target::WinCore;
use super::wire::{self, Record};
use crate::datatype::Datatype;
use crate::error::{Error, Result};
use std::collections::HashSet;
use std::sync::Arc;

/// The access epoch (MPI 4.0 §12.5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    None,
    /// After a fence that did not say `MPI_MODE_NOSUCCEED`; `used` once an operation ran.
    Fence {
        used: bool,
    },
    /// Between `MPI_Win_start` and `MPI_Win_complete`, to these window ranks.
    Pscw(Vec<u32>),
    /// Some targets locked with `MPI_Win_lock` (see [`TargetOut::lock`]).
    Locks,
    /// `MPI_Win_lock_all`.
    LockAll,
}

/// The lock this process holds (or will request) on one target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Held {
    None,
    /// Requested by the program, not sent yet.
    Wanted(LockKind),
    /// The request left (or, for our own rank, is granted).
    Sent(LockKind),
    /// `MPI_MODE_NOCHECK`: no lock is requested at all.
    Unchecked,
}

/// Bytes of data (a batch's payload, an answer) beyond which an operation is sent at once instead
/// of with the next synchronization: its transfer then overlaps the origin's work until then.
/// Below, the extra message (a few microseconds over tcp) would cost more than the transfer
/// (16 KiB: about 4 µs over tcp) could hide.
pub(crate) const EARLY: u64 = 16 << 10;

pub(crate) struct TargetOut {
    header: Vec<u8>,
    payload: Vec<u8>,
    pub(crate) lock: Held,
    /// Operation records sent to it, ever (fence compares them with the target's count).
    pub(crate) ops: u64,
    described: HashSet<u64>,
    /// Answers awaited (gets and the like), pruned when done.
    pub(crate) awaited: Vec<Arc<Slot>>,
    /// Large transfers ([`super::bulk`]) started to it, and the number of the next one.
    pub(crate) transfers: Vec<Arc<Transfer>>,
    pub(crate) next_transfer: u64,
}

pub(crate) struct Origin {
    pub(crate) access: Access,
    /// The window ranks of the exposure epoch opened by `MPI_Win_post`.
    pub(crate) exposure: Option<Vec<u32>>,
    pub(crate) to: Vec<TargetOut>,
    /// The fast path's PSCW counters used so far, per peer: posts, completes.
    pub(crate) seen: [Vec<u32>; 2],
}

impl Origin {
    pub(crate) fn new(ctx: u32, n: usize) -> Origin {
        let to = (0..n)
            .map(|_| TargetOut {
                header: wire::header(ctx),
                payload: Vec::new(),
                lock: Held::None,
                ops: 0,
                described: HashSet::new(),
                awaited: Vec::new(),
                transfers: Vec::new(),
                next_transfer: 0,
            })
            .collect();
        Origin { access: Access::None, exposure: None, to, seen: [vec![0; n], vec![0; n]] }
    }

    /// Whether operations may target window rank `t` now (else `MPI_ERR_RMA_SYNC`).
    pub(crate) fn check_access(&self, t: u32) -> Result<()> {
        let ok = match &self.access {
            Access::None => false,
            Access::Fence { .. } | Access::LockAll => true,
            Access::Pscw(group) => group.contains(&t),
            Access::Locks => self.to[t as usize].lock != Held::None,
        };
        if !ok {
            return Err(Error::rma_sync(format!("no access epoch to rank {t} is open on this window")));
        }
        Ok(())
    }

    /// Marks an operation in a fence epoch.
    pub(crate) fn used(&mut self) {
        if let Access::Fence { used } = &mut self.access {
            *used = true;
        }
    }

    /// Appends a record (and its payload) for target `t`, after the lock request if one is
    /// wanted; sends the batch first when the record would not fit.
    pub(crate) fn push(&mut self, core: &WinCore, t: u32, rec: Record, data: &[u8]) {
        if let Held::Wanted(kind) = self.to[t as usize].lock {
            self.to[t as usize].lock = Held::Sent(kind);
            self.push(core, t, Record::Lock { exclusive: kind == LockKind::Exclusive }, &[]);
        }
        let cap = core.capacity(t);
        let out = &mut self.to[t as usize];
        if out.header.len() + wire::MAX_RECORD > nmad::wire::MAX_AM_HEADER
            || out.header.len() + out.payload.len() + data.len() + wire::MAX_RECORD > cap
        {
            Self::send(core, t, out);
        }
        rec.encode(&mut out.header);
        out.payload.extend_from_slice(data);
        if rec.is_operation() {
            out.ops += 1;
        }
        // A batch that carries data or announces a large transfer leaves at once: the transfer
        // then overlaps what the origin does until its synchronization. Small operations wait
        // for it (lock + put + unlock: one message).
        if rec.is_bulk() || out.payload.len() as u64 > EARLY {
            Self::send(core, t, out);
        }
    }

    /// Sends target `t`'s batch, if any.
    pub(crate) fn flush_out(&mut self, core: &WinCore, t: u32) {
        Self::send(core, t, &mut self.to[t as usize]);
    }

    fn send(core: &WinCore, t: u32, out: &mut TargetOut) {
        if out.header.len() > 4 {
            let header = std::mem::replace(&mut out.header, wire::header(core.ctx));
            let payload = std::mem::take(&mut out.payload);
            core.send(t, header, payload);
        }
    }

    /// Describes derived type `ty` to target `t` unless done before on this window.
    pub(crate) fn describe(&mut self, core: &WinCore, t: u32, ty: &Datatype) -> Result<()> {
        if self.to[t as usize].described.contains(&ty.uid()) {
            return Ok(());
        }
        let blocks = ty.blocks().ok_or_else(|| Error::datatype("the target datatype is not committed"))?;
        let total = u32::try_from(blocks.len())
            .ok()
            .filter(|&n| n <= super::shape::MAX_BLOCKS)
            .ok_or_else(|| Error::datatype(format!("a target datatype of {} blocks", blocks.len())))?;
        let per = ((core.capacity(t).min(1 << 20) - 256) / wire::TYPE_BLOCK).max(1);
        let mut first = 0usize;
        loop {
            let part = &blocks[first..(first + per).min(blocks.len())];
            let mut data = Vec::with_capacity(part.len() * wire::TYPE_BLOCK);
            for &(off, len) in part {
                data.extend_from_slice(&(off as i64).to_le_bytes());
                data.extend_from_slice(&(len as u64).to_le_bytes());
            }
            let rec = Record::TypeDef {
                id: ty.uid(),
                extent: ty.extent(),
                total,
                first: first as u32,
                n: part.len() as u32,
            };
            self.push(core, t, rec, &data);
            first += part.len();
            if first >= blocks.len() {
                break;
            }
        }
        self.to[t as usize].described.insert(ty.uid());
        Ok(())
    }

    /// Forgets the answers already in, and the large transfers done.
    pub(crate) fn prune(&mut self, t: u32) {
        let out = &mut self.to[t as usize];
        out.awaited.retain(|s| !s.is_done());
        out.transfers.retain(|x| !x.is_done());
    }

    /// The number of the next large transfer to target `t`.
    pub(crate) fn next_transfer(&mut self, t: u32) -> u64 {
        let out = &mut self.to[t as usize];
        out.next_transfer += 1;
        out.next_transfer - 1
    }
}
