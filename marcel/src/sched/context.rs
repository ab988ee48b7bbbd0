//! What the calling kernel thread is doing for marcel: the per-kernel-thread [`Lwp`] record, and
//! the user thread it is running.
//!
//! OS thread-locals and user threads: a user thread may resume on another kernel thread after any
//! switch point, and the compiler may keep a thread-local's address in a register across a call
//! it cannot see into (in release builds a coroutine resumed elsewhere was seen using the old
//! thread's TLS). So every access to marcel's own thread-local goes through an `#[inline(never)]`
//! function that is never itself a switch point, and the result is never kept across one.

use super::Shared;
use super::task::{Header, Task};
use std::cell::Cell;
use std::ptr;
use std::sync::Arc;

/// The marcel state of one kernel thread that runs user threads (a holder or a spare).
pub(crate) struct Lwp {
    pub(crate) rt: Arc<Shared>,
    /// The VP this kernel thread holds, if any.
    pub(crate) vp: Cell<Option<usize>>,
    /// Sequence of the VP's owner word while it runs a user thread (see `ownership`).
    pub(crate) seq: Cell<u64>,
    /// The user thread running now (null in scheduler code and inside `blocking`).
    pub(crate) current: Cell<*const Task>,
    /// The user thread inside `blocking` (it acts as an OS thread there, but keeps its identity
    /// and user-locals).
    pub(crate) blocking: Cell<*const Task>,
}

thread_local! {
    static LWP: Cell<*const Lwp> = const { Cell::new(ptr::null()) };
}

impl Lwp {
    pub(crate) fn new(rt: Arc<Shared>) -> Lwp {
        Lwp {
            rt,
            vp: Cell::new(None),
            seq: Cell::new(0),
            current: Cell::new(ptr::null()),
            blocking: Cell::new(ptr::null()),
        }
    }
}

/// Registers `lwp` as the calling kernel thread's record until the returned guard drops.
pub(crate) fn enter(lwp: &Lwp) -> EnterGuard {
    LWP.with(|c| c.set(lwp));
    EnterGuard
}

pub(crate) struct EnterGuard;

impl Drop for EnterGuard {
    fn drop(&mut self) {
        LWP.with(|c| c.set(ptr::null()));
    }
}

/// The calling kernel thread's LWP record, or null on a plain OS thread.
#[inline(never)]
pub(crate) fn lwp_ptr() -> *const Lwp {
    LWP.with(|c| c.get())
}

/// The user thread running on the calling kernel thread and able to switch, or null (plain OS
/// thread, scheduler code, or inside `blocking`).
#[inline]
pub(crate) fn current_header() -> *const Header {
    let l = lwp_ptr();
    if l.is_null() {
        return ptr::null();
    }
    // SAFETY: a non-null LWP pointer refers to the Lwp living on this kernel thread's stack for as
    // long as it is registered (EnterGuard clears it before the Lwp is dropped); `current` points
    // to the Task the LWP loop holds while the thread runs.
    unsafe {
        let t = (*l).current.get();
        if t.is_null() { ptr::null() } else { &(&*t).hdr }
    }
}

/// The Task of the user thread whose code is executing, including inside `blocking` (for
/// identity and user-locals), or null on a plain OS thread.
fn identity_ptr() -> *const Task {
    let l = lwp_ptr();
    if l.is_null() {
        return ptr::null();
    }
    // SAFETY: as in `current_header`; `blocking` points to the Task held by the LWP loop, which
    // is suspended in `resume` under the `blocking` call.
    unsafe {
        let t = (*l).current.get();
        if t.is_null() { (*l).blocking.get() } else { t }
    }
}

/// See `identity_ptr`.
pub(crate) fn identity_task() -> Option<Task> {
    let t = identity_ptr();
    // SAFETY: non-null identity pointers refer to a live Task (see `identity_ptr`).
    if t.is_null() { None } else { Some(unsafe { (*t).clone() }) }
}

/// The header of the user thread whose code is executing (see `identity_ptr`), or null.
pub(crate) fn identity_header() -> *const Header {
    let t = identity_ptr();
    // SAFETY: as above.
    if t.is_null() { ptr::null() } else { unsafe { &(&*t).hdr } }
}
