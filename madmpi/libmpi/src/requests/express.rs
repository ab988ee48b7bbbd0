//! The express request table: the receives `MPI_Irecv`'s hot path posts (from one rank, on a
//! communicator its thread used last) live here, under handles of their own kind
//! ([`UserObject::ExpressRequest`]), as their operation and the owner of the error handler —
//! no [`ReqEntry`], no persistent-request lock, no general table. `MPI_Wait` and `MPI_Waitall`
//! complete them here (`api::completion`'s express path: a message-rate loop posts and
//! completes them by the window); any other call on one (test, cancel, free, status, the `any`
//! and `some` forms) first **promotes** it: its slot then holds a [`ReqEntry`] like the general
//! table's, which the general path uses as it uses its own, until the request is retired.
//!
//! Slots sit in segments allocated once and kept (a segment never moves: a slot is found from
//! its handle without a table lock); each slot has its own lock, held for a read or an update
//! only, never across a wait (each update is one assignment: a panic leaves it consistent).
//! Free slots are kept per shard (slot `i` in shard `i % SHARDS`), as the general table keeps
//! them: a thread takes from the shard its id hashes to. A thread
//! keeps the slots it freed (up to [`LOCAL_FREE`]) for its next receives, without the shard's
//! lock — a message-rate window posts and completes its receives on one thread; they go back
//! to their shards when the thread ends.
//!
//! Owns express slots and their handles; it must not fill statuses nor decide when a request
//! completes.

use super::ReqEntry;
use crate::errors::HandlerOwner;
use madmpi::abi::{self, Handle, UserObject};
use madmpi::operation::MpiRequest;
use madmpi::request::RawRequest;
use nmad::spin::{Guard, SpinLock};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// Shards of the free lists (a power of two).
const SHARDS: u32 = 8;
/// Slots per segment.
const SEGMENT: u32 = 4096;
/// Segments at most: past 256 Ki live express requests, `MPI_Irecv` takes the general path.
const SEGMENTS: usize = 64;
/// Free slots a thread keeps for itself at most (a window of `madbench mt` is 64 receives).
const LOCAL_FREE: usize = 256;

/// The free slots this thread keeps, given back to their shards when it ends.
struct LocalFree(Vec<u32>);

impl Drop for LocalFree {
    fn drop(&mut self) {
        self.0.drain(..).for_each(|i| EXPRESS.release_shared(i));
    }
}

thread_local! {
    static LOCAL: std::cell::RefCell<LocalFree> = const { std::cell::RefCell::new(LocalFree(Vec::new())) };
}

/// The table (one per process: it outlives states, and is emptied when one ends).
pub(crate) static EXPRESS: Express = Express::new();

pub(crate) struct Express {
    shards: [Mutex<Shard>; SHARDS as usize],
    segments: [OnceLock<Box<[Slot]>>; SEGMENTS],
}

struct Shard {
    free: Vec<u32>,
    /// Slots of this shard made so far.
    made: u32,
}

#[derive(Default)]
struct Slot {
    /// Released with a plain store (`nmad::spin`): three accesses per message-rate receive.
    body: SpinLock<Body>,
}

#[derive(Default)]
enum Body {
    /// Free, or taken by a [`Ticket`] and not filled yet.
    #[default]
    Free,
    Live(Live),
    /// Seen by the general path: a request like the general table's.
    Promoted(Arc<ReqEntry>),
}

/// A running (or completed, unreported) express receive.
pub(crate) struct Live {
    pub(crate) op: Arc<RawRequest>,
    /// Whose error handler its errors go to.
    pub(crate) owner: Arc<dyn HandlerOwner>,
}

impl Live {
    fn promoted(self) -> Arc<ReqEntry> {
        Arc::new(ReqEntry { comm: self.owner, req: MpiRequest::once_shared(self.op) })
    }
}

/// A free slot taken off its list for a request about to be posted: [`Express::fill`] it, or
/// drop it (the slot goes back). Until filled, the slot is `Free` to everyone else.
pub(crate) struct Ticket(u32);

impl Drop for Ticket {
    fn drop(&mut self) {
        EXPRESS.release(self.0);
    }
}

impl Slot {
    fn lock(&self) -> Guard<'_, Body> {
        self.body.lock()
    }
}

impl Express {
    const fn new() -> Express {
        Express {
            shards: [const { Mutex::new(Shard { free: Vec::new(), made: 0 }) }; SHARDS as usize],
            segments: [const { OnceLock::new() }; SEGMENTS],
        }
    }

    /// A free slot, or `None` when the table is full.
    pub(crate) fn reserve(&self) -> Option<Ticket> {
        let mine = LOCAL.try_with(|l| l.try_borrow_mut().ok()?.0.pop()).ok().flatten();
        if let Some(i) = mine {
            return Some(Ticket(i));
        }
        let shard = crate::table::home_shard();
        let index = {
            let mut s = self.shards[shard as usize].lock().unwrap_or_else(PoisonError::into_inner);
            match s.free.pop() {
                Some(i) => i,
                None => {
                    let i = s.made.checked_mul(SHARDS)? + shard;
                    if i / SEGMENT >= SEGMENTS as u32 {
                        return None;
                    }
                    s.made += 1;
                    i
                }
            }
        };
        Some(Ticket(index))
    }

    /// Stores the posted request in the slot of `t`; its handle.
    pub(crate) fn fill(&self, t: Ticket, live: Live) -> Handle {
        let index = t.0;
        std::mem::forget(t); // the slot stays taken
        *self.slot(index).lock() = Body::Live(live);
        abi::encode_user_handle(UserObject::ExpressRequest, index).expect("SEGMENTS keeps slots in range")
    }

    /// The operation of live express request `h` (`None`: not a live one, for the general
    /// path to resolve or report).
    pub(crate) fn op(&self, h: Handle) -> Option<Arc<RawRequest>> {
        match &*self.made(index(h)?)?.lock() {
            Body::Live(l) => Some(l.op.clone()),
            _ => None,
        }
    }

    /// Whether live express request `h` is still running: its operation to wait for if so,
    /// `Some(None)` if it completed (no reference taken), `None` if `h` is no live one.
    pub(crate) fn running(&self, h: Handle) -> Option<Option<Arc<RawRequest>>> {
        match &*self.made(index(h)?)?.lock() {
            Body::Live(l) => Some((!l.op.is_complete()).then(|| l.op.clone())),
            _ => None,
        }
    }

    /// Takes live express request `h` out (a completion call reports it); its slot is free.
    pub(crate) fn take(&self, h: Handle) -> Option<Live> {
        let i = index(h)?;
        let live = {
            let mut body = self.made(i)?.lock();
            if !matches!(*body, Body::Live(_)) {
                return None;
            }
            match std::mem::take(&mut *body) {
                Body::Live(l) => l,
                _ => unreachable!("checked under the lock"),
            }
        };
        self.release(i);
        Some(live)
    }

    /// The general path's view of express request `h`: its entry (the request promoted if it
    /// was not yet); `None` if `h` is no live express request.
    pub(crate) fn promote(&self, h: Handle) -> Option<Arc<ReqEntry>> {
        let mut body = self.made(index(h)?)?.lock();
        match std::mem::take(&mut *body) {
            Body::Live(l) => {
                let e = l.promoted();
                *body = Body::Promoted(e.clone());
                Some(e)
            }
            Body::Promoted(e) => {
                *body = Body::Promoted(e.clone());
                Some(e)
            }
            other => {
                *body = other;
                None
            }
        }
    }

    /// Removes express request `h` (retired or freed by the general path); its entry.
    pub(crate) fn remove(&self, h: Handle) -> Option<Arc<ReqEntry>> {
        let i = index(h)?;
        let e = {
            let mut body = self.made(i)?.lock();
            match std::mem::take(&mut *body) {
                Body::Live(l) => l.promoted(),
                Body::Promoted(e) => e,
                other => {
                    *body = other;
                    return None;
                }
            }
        };
        self.release(i);
        Some(e)
    }

    /// Removes every request (a state ends), returned for the caller to drop unlocked.
    pub(crate) fn drain(&self) -> Vec<Arc<ReqEntry>> {
        let mut out = Vec::new();
        for (k, seg) in self.segments.iter().enumerate() {
            let Some(seg) = seg.get() else { continue };
            for (j, slot) in seg.iter().enumerate() {
                let taken = {
                    let mut body = slot.lock();
                    match std::mem::take(&mut *body) {
                        Body::Live(l) => Some(l.promoted()),
                        Body::Promoted(e) => Some(e),
                        Body::Free => None, // free, or its ticket's holder gives it back
                    }
                };
                if let Some(e) = taken {
                    out.push(e);
                    self.release(k as u32 * SEGMENT + j as u32);
                }
            }
        }
        out
    }

    /// Puts free slot `i` back: on this thread's own list, or its shard's when that is full.
    fn release(&self, i: u32) {
        let kept = LOCAL
            .try_with(|l| match l.try_borrow_mut() {
                Ok(mut l) if l.0.len() < LOCAL_FREE => {
                    l.0.push(i);
                    true
                }
                _ => false,
            })
            .unwrap_or(false);
        if !kept {
            self.release_shared(i);
        }
    }

    /// Puts free slot `i` back on its shard's list.
    fn release_shared(&self, i: u32) {
        let mut s = self.shards[(i % SHARDS) as usize].lock().unwrap_or_else(PoisonError::into_inner);
        s.free.push(i);
    }

    /// Slot `i`, if its segment was made (a handle the program made up finds none, and makes
    /// none).
    fn made(&self, i: u32) -> Option<&Slot> {
        Some(&self.segments[(i / SEGMENT) as usize].get()?[(i % SEGMENT) as usize])
    }

    /// Slot `i` of a [`Ticket`]: its segment is made here the first time.
    fn slot(&self, i: u32) -> &Slot {
        let seg = self.segments[(i / SEGMENT) as usize]
            .get_or_init(|| (0..SEGMENT).map(|_| Slot::default()).collect());
        &seg[(i % SEGMENT) as usize]
    }
}

/// The bits of every express handle but its index ([`abi::encode_user_handle`]'s layout).
const PREFIX: u32 = match abi::encode_user_handle(UserObject::ExpressRequest, 0) {
    Some(h) => h as u32 & !INDEX_MASK,
    None => panic!("slot 0 is in range"),
};
const INDEX_MASK: u32 = (1 << abi::USER_INDEX_BITS) - 1;

/// The slot of express handle `h`, if `h` is one the table may have made (the decoding of
/// [`abi::decode_user_handle`] for this one kind, on every completion call's path).
#[inline]
fn index(h: Handle) -> Option<u32> {
    let bits = h as u32;
    if bits & !INDEX_MASK != PREFIX {
        return None;
    }
    let i = (bits & INDEX_MASK).checked_sub(abi::USER_INDEX_BASE)?;
    (i / SEGMENT < SEGMENTS as u32).then_some(i)
}

/// Whether `h` is an express request handle (live or not).
pub(crate) fn is_express(h: Handle) -> bool {
    index(h).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_reuses_the_slots_it_freed_and_gives_them_back_when_it_ends() {
        let i = std::thread::spawn(|| {
            let t = EXPRESS.reserve().unwrap();
            let i = t.0;
            drop(t); // freed: kept by this thread
            let again = EXPRESS.reserve().unwrap();
            assert_eq!(again.0, i, "the slot this thread freed, without its shard");
            assert!(!EXPRESS.shards[(i % SHARDS) as usize].lock().unwrap().free.contains(&i));
            i
        })
        .join()
        .unwrap();
        let shard = EXPRESS.shards[(i % SHARDS) as usize].lock().unwrap();
        assert!(shard.free.contains(&i), "back on its shard once the thread ended");
    }

    #[test]
    fn the_quick_decoding_agrees_with_the_abis() {
        for i in [0, 1, 4095, 4096, SEGMENT * SEGMENTS as u32 - 1] {
            let h = abi::encode_user_handle(UserObject::ExpressRequest, i).unwrap();
            assert_eq!(index(h), Some(i));
            assert_eq!(abi::decode_user_handle(h), Some((UserObject::ExpressRequest, i)));
        }
        let beyond = abi::encode_user_handle(UserObject::ExpressRequest, SEGMENT * SEGMENTS as u32).unwrap();
        assert_eq!(index(beyond), None, "past the last segment");
        for other in [UserObject::Request, UserObject::Message, UserObject::Comm] {
            assert_eq!(index(abi::encode_user_handle(other, 3).unwrap()), None, "{other:?}");
        }
        for h in [abi::MPI_REQUEST_NULL, super::super::COMPLETED, PREFIX as Handle, -1] {
            assert_eq!(index(h), None, "{h:#x}");
        }
    }
}
