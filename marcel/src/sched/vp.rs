//! A virtual processor: the scheduling state of one core.
//!
//! Owner-only parts (local deque, bound-thread queue, stack cache, tick) are touched only by the
//! kernel thread holding the VP (see `ownership`); the rest (stealer, inbox, parker, counters) is
//! safe for anyone. Unbound threads go in the stealable local deque; threads bound to this core
//! (`spawn_on`) in a queue nobody steals from; threads made ready from elsewhere in the inbox.

use super::ownership::Ownership;
use super::task::Task;
use crate::parker::Parker;
use crate::stack::PooledStack;
use crate::topology::Core;
use crossbeam_deque::{Injector, Stealer, Worker};
use crossbeam_utils::CachePadded;
use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};

/// Stacks kept per VP before spilling to the shared pool.
const STACK_CACHE: usize = 32;

pub(crate) struct Vp {
    pub(crate) index: usize,
    pub(crate) core: Core,
    pub(crate) owner: CachePadded<Ownership>,
    owned: UnsafeCell<Owned>,
    pub(crate) stealer: Stealer<Task>,
    pub(crate) inbox: Injector<Task>,
    pub(crate) parker: Parker,
    /// Length of the bound-thread queue, for other threads' queries.
    pub(crate) pinned_len: AtomicUsize,
    /// Nearest VPs first.
    pub(crate) steal_order: Vec<usize>,
    pub(crate) sentinel: OnceLock<std::sync::Arc<super::rescue::Sentinel>>,
    pub(crate) stats: VpStats,
}

/// Counters, written by the holder (relaxed) and read by anyone.
#[derive(Default)]
pub(crate) struct VpStats {
    pub(crate) steals: AtomicU64,
    pub(crate) parks: AtomicU64,
    pub(crate) rescues: AtomicU64,
    pub(crate) hog_handoffs: AtomicU64,
    /// Threads spawned by threads running here (the rest count in `Shared::spawned`).
    pub(crate) spawned: AtomicU64,
    /// Kernel threads running a user thread on this VP's core without holding the VP (a hog
    /// handed off, a rescued caller finishing its run): they compete with the VP for the core.
    pub(crate) detached: std::sync::atomic::AtomicIsize,
}

pub(crate) struct Owned {
    pub(crate) local: Worker<Task>,
    pub(crate) pinned: VecDeque<Task>,
    pub(crate) stacks: Vec<PooledStack>,
    /// New threads that could not get a stack (the kernel's map limit): they start once stacks
    /// come back.
    pub(crate) starved: VecDeque<Task>,
    pub(crate) tick: u32,
}

// SAFETY: `owned` is only accessed by the kernel thread holding the VP, and holding is exclusive
// and handed over with Acquire/Release on `owner` (see `ownership`); everything else is Sync.
unsafe impl Sync for Vp {}
// SAFETY: all fields are Send (Worker and the task queues move with the VP between holders).
unsafe impl Send for Vp {}

impl Vp {
    pub(crate) fn new(index: usize, core: Core, steal_order: Vec<usize>) -> Vp {
        let local = Worker::new_fifo();
        let stealer = local.stealer();
        Vp {
            index,
            core,
            owner: CachePadded::new(Ownership::new_orphan()),
            owned: UnsafeCell::new(Owned {
                local,
                pinned: VecDeque::new(),
                stacks: Vec::new(),
                starved: VecDeque::new(),
                tick: 0,
            }),
            stealer,
            inbox: Injector::new(),
            parker: Parker::new(),
            pinned_len: AtomicUsize::new(0),
            steal_order,
            sentinel: OnceLock::new(),
            stats: VpStats::default(),
        }
    }

    /// The owner-only state.
    ///
    /// # Safety
    /// The caller holds the VP (or every kernel thread of the runtime has stopped), and does not
    /// keep the reference across a point where it could lose the VP.
    #[allow(clippy::mut_from_ref)]
    #[inline]
    pub(crate) unsafe fn owned(&self) -> &mut Owned {
        // SAFETY: exclusivity is the caller's contract.
        unsafe { &mut *self.owned.get() }
    }

    /// Threads waiting to run here (local + bound + inbox), as seen from anywhere.
    pub(crate) fn ready_len(&self) -> usize {
        self.stealer.len() + self.pinned_len.load(Relaxed) + self.inbox.len()
    }

    pub(crate) fn has_waiting_work(&self) -> bool {
        !self.stealer.is_empty() || self.pinned_len.load(Relaxed) > 0 || !self.inbox.is_empty()
    }
}

impl Owned {
    /// Queues a runnable thread on this VP (holder only).
    #[inline]
    pub(crate) fn push(&mut self, vp: &Vp, t: Task) {
        if t.hdr.bound.is_some() {
            self.pinned.push_back(t);
            vp.pinned_len.store(self.pinned.len(), Relaxed);
        } else {
            self.local.push(t);
        }
    }

    /// The next thread to run from this VP's own queues: local and bound queues alternate when
    /// both have work, so neither starves the other.
    #[inline]
    pub(crate) fn pop(&mut self, vp: &Vp) -> Option<Task> {
        if !self.pinned.is_empty() && (self.tick & 1 == 0 || self.local.is_empty()) {
            let t = self.pinned.pop_front();
            vp.pinned_len.store(self.pinned.len(), Relaxed);
            return t;
        }
        self.local.pop()
    }

    /// Moves everything from the inbox to the owner queues; returns whether anything came.
    pub(crate) fn drain_inbox(&mut self, vp: &Vp) -> bool {
        let mut any = false;
        loop {
            match vp.inbox.steal() {
                crossbeam_deque::Steal::Success(t) => {
                    any = true;
                    self.push(vp, t);
                }
                crossbeam_deque::Steal::Empty => return any,
                crossbeam_deque::Steal::Retry => continue,
            }
        }
    }

    /// A stack for a thread about to start, or the error if none can be mapped now.
    pub(crate) fn take_stack(
        &mut self,
        pool: &crate::stack::StackPool,
    ) -> Result<PooledStack, crate::stack::StackError> {
        if let Some(s) = self.stacks.pop() {
            return Ok(s);
        }
        if pool.get_batch(STACK_CACHE / 2, &mut self.stacks).is_ok()
            && let Some(s) = self.stacks.pop()
        {
            return Ok(s);
        }
        pool.get()
    }

    /// Whether a starved thread could get a stack now.
    pub(crate) fn stack_available(&self, pool: &crate::stack::StackPool) -> bool {
        !self.stacks.is_empty() || pool.mapped() > pool.live()
    }

    /// Returns every cached stack to the shared pool (an idle VP under stack pressure).
    pub(crate) fn spill_stacks(&mut self, pool: &crate::stack::StackPool) {
        pool.put_batch(&mut self.stacks);
    }

    pub(crate) fn give_stack(&mut self, pool: &crate::stack::StackPool, s: PooledStack) {
        self.stacks.push(s);
        if self.stacks.len() > STACK_CACHE {
            let mut spill: Vec<PooledStack> = self.stacks.drain(STACK_CACHE / 2..).collect();
            pool.put_batch(&mut spill);
        }
    }
}
