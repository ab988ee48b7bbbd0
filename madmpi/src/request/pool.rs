//! Spare nmad requests, per thread: a completed point-to-point request's box goes back to its
//! thread's spares (reset) and the next operation takes it instead of allocating. A message-rate
//! code posts and completes windows of requests (64 in `madbench mt`), more than glibc's
//! per-thread cache keeps, so each request otherwise cost a trip through the allocator's bins.
//!
//! Owns the spares; a request still in flight never comes here (its drop cancels or waits, as
//! nmad's `Request` says).

use std::cell::RefCell;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::pin::Pin;

/// Spares kept per thread at most (a thread that only completes what others start keeps no
/// more than this).
const SPARES_MAX: usize = 256;

thread_local! {
    static SPARES: RefCell<Vec<Pin<Box<nmad::Request>>>> = const { RefCell::new(Vec::new()) };
}

/// An nmad request taken from the thread's spares (or new), given back when dropped complete.
pub(crate) struct Slot(ManuallyDrop<Pin<Box<nmad::Request>>>);

impl Slot {
    pub(crate) fn new() -> Slot {
        let spare = SPARES.try_with(|s| s.borrow_mut().pop()).ok().flatten();
        Slot(ManuallyDrop::new(spare.unwrap_or_else(|| Box::pin(nmad::Request::new()))))
    }

    /// A request made elsewhere (a receive started by a matched probe).
    pub(crate) fn from_box(b: Pin<Box<nmad::Request>>) -> Slot {
        Slot(ManuallyDrop::new(b))
    }
}

impl Deref for Slot {
    type Target = Pin<Box<nmad::Request>>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        // SAFETY: taken once, here; the field is not used again.
        let mut b = unsafe { ManuallyDrop::take(&mut self.0) };
        // Complete (or never started): nmad holds no pointer to it any more.
        if !b.test() {
            return; // dropped in flight: its drop cancels or waits
        }
        // Past the bound, or while the thread's locals are torn down, the box is freed with the
        // closure that owns it.
        let _ = SPARES.try_with(move |s| {
            if s.borrow().len() < SPARES_MAX {
                // What the old operation held goes here, with no borrow of the spares held
                // (it releases the session it belonged to, which may end up dropping others).
                if b.as_mut().recycle() {
                    s.borrow_mut().push(b);
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_complete_request_is_reset_and_reused_by_the_thread() {
        let a = Slot::new();
        let at = &**a as *const nmad::Request;
        drop(a);
        let b = Slot::new();
        assert_eq!(&**b as *const nmad::Request, at, "the spare was taken");
        assert!(b.test() && b.result().is_none_or(|r| r.is_ok()), "fresh: complete, no error");
    }
}
