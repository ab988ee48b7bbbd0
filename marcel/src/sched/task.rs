//! A user thread: its header (identity, park permit, completion), its closure and result slot,
//! and the coroutine that runs it — all in one allocation.
//!
//! The coroutine is created lazily, by the LWP that first runs the thread, so a spawned thread
//! costs no stack until it starts (100k spawned threads need only as many stacks as have started).

use super::Shared;
use super::park_state::ParkState;
use crate::stack::PooledStack;
use crate::sync::waiter::Waiter;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::any::Any;
use std::cell::{Cell, UnsafeCell};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering::*};

const RUNNING: u8 = 0;
const JOINER_WAITING: u8 = 1;
const DONE: u8 = 2;

/// Why a user thread gave its LWP back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Switch {
    /// Still runnable: put it back on a run queue.
    Yield,
    /// Wants to park: the LWP commits the park (see `park_state`).
    Park,
    /// Its closure returned (or panicked); the result is stored.
    Exit,
}

type CoroType = Coroutine<(), Switch, (), PooledStack>;

/// A coroutine that may be resumed by any kernel thread.
pub(crate) struct Coro(CoroType);

// SAFETY: a user thread's coroutine is resumed by one kernel thread at a time (ownership passes
// through the run queues, which synchronize). Values on its stack cross kernel threads with it;
// marcel documents (crate docs, "OS thread-locals") that holding OS-thread-bound values across a
// switch point is the caller's responsibility, as with every M:N thread library.
unsafe impl Send for Coro {}

pub(crate) struct Header {
    pub(crate) id: u64,
    pub(crate) name: Option<Box<str>>,
    pub(crate) rt: Arc<Shared>,
    /// VP this thread is bound to (`spawn_on`): it never runs elsewhere.
    pub(crate) bound: Option<usize>,
    pub(crate) park: ParkState,
    /// RUNNING, JOINER_WAITING or DONE: the hand-off with the one possible joiner.
    join_state: AtomicU8,
    /// Written by the joiner before it publishes JOINER_WAITING; taken by the completer.
    joiner: UnsafeCell<Option<Waiter>>,
    /// Only touched by the LWP running the thread.
    coro: UnsafeCell<Option<Coro>>,
    /// Set when the coroutine starts; only read by the thread itself.
    yielder: Cell<*const Yielder<(), Switch>>,
    /// User-thread-local storage; only touched by the thread itself.
    pub(crate) locals: UnsafeCell<crate::local::Slots>,
}

// SAFETY: the Cell/UnsafeCell fields are accessed only by the kernel thread currently running this
// user thread (coro, yielder, locals), and a user thread runs on one kernel thread at a time with
// hand-offs synchronized by the run queues; `joiner` follows the join_state protocol; everything
// else is immutable or atomic.
unsafe impl Sync for Header {}
// SAFETY: see `Sync`; the coroutine wrapper is Send.
unsafe impl Send for Header {}

impl Header {
    pub(crate) fn new(id: u64, name: Option<Box<str>>, rt: Arc<Shared>, bound: Option<usize>) -> Header {
        Header {
            id,
            name,
            rt,
            bound,
            park: ParkState::new(),
            join_state: AtomicU8::new(RUNNING),
            joiner: UnsafeCell::new(None),
            coro: UnsafeCell::new(None),
            yielder: Cell::new(std::ptr::null()),
            locals: UnsafeCell::new(crate::local::Slots::default()),
        }
    }

    pub(crate) fn is_done(&self) -> bool {
        self.join_state.load(Acquire) == DONE
    }

    /// Blocks the caller (user or OS thread) until this thread finished. At most one caller ever
    /// (`JoinHandle::join` consumes the handle).
    pub(crate) fn wait_done(&self) {
        if self.is_done() {
            return;
        }
        assert!(
            !std::ptr::eq(super::context::identity_header(), self),
            "marcel: a user thread cannot join itself (deadlock)"
        );
        // SAFETY: only the single joiner writes the slot, and only before publishing it below.
        unsafe { *self.joiner.get() = Some(Waiter::current()) };
        if self.join_state.compare_exchange(RUNNING, JOINER_WAITING, AcqRel, Acquire).is_err() {
            // Finished meanwhile; the completer never looked at the slot.
            // SAFETY: the completer only takes the slot after seeing JOINER_WAITING.
            unsafe { (*self.joiner.get()).take() };
            return;
        }
        while !self.is_done() {
            Waiter::park_current(None);
        }
    }

    fn complete(&self) {
        if self.join_state.swap(DONE, AcqRel) == JOINER_WAITING {
            // SAFETY: the joiner wrote the slot before publishing JOINER_WAITING (seen via AcqRel)
            // and does not touch it again; the header is alive (our LWP holds the Task).
            if let Some(w) = unsafe { (*self.joiner.get()).take() } {
                w.wake();
            }
        }
    }

    /// Suspends the calling user thread, which must be this one.
    ///
    /// # Safety
    /// Must be called on this thread's own coroutine stack (i.e. `self` is the current thread).
    #[inline]
    pub(crate) unsafe fn suspend(&self, why: Switch) {
        let y = self.yielder.get();
        debug_assert!(!y.is_null());
        // SAFETY: the yielder lives on this coroutine's stack for the coroutine's whole life, and
        // per the contract we are executing on that coroutine.
        unsafe { (*y).suspend(why) }
    }

    /// Runs the thread until its next switch point. LWP only; `stack` must be given if the
    /// thread has not started. Returns why it stopped; on `Exit`, hands back the stack.
    ///
    /// # Safety
    /// Caller is the only kernel thread running this thread now (it took it from a run queue).
    pub(crate) unsafe fn run(
        &self,
        body: &dyn Body,
        stack: Option<PooledStack>,
    ) -> (Switch, Option<PooledStack>) {
        // SAFETY: per the contract, nobody else touches `coro` while we run the thread.
        let slot = unsafe { &mut *self.coro.get() };
        let coro = match slot {
            Some(c) => c,
            None => slot.insert(body.start(self, stack.expect("a stack for a new thread"))),
        };
        match coro.0.resume(()) {
            CoroutineResult::Yield(why) => (why, None),
            CoroutineResult::Return(()) => {
                let c = slot.take().expect("coroutine present");
                (Switch::Exit, Some(c.0.into_stack()))
            }
        }
    }

    /// Leaks a coroutine that will never run again (runtime shut down): unwinding it could run
    /// user code against a dead runtime, so its stack is abandoned instead.
    pub(crate) fn abandon(&self) {
        // SAFETY: called only after every kernel thread of the runtime stopped, so nobody runs it.
        if let Some(c) = unsafe { (*self.coro.get()).take() } {
            std::mem::forget(c);
        }
    }

    pub(crate) fn started(&self) -> bool {
        // SAFETY: a read of an Option discriminant by the shutdown path, after all LWPs stopped.
        unsafe { (*self.coro.get()).is_some() }
    }
}

/// The typed part of a user thread, erased behind a vtable.
pub(crate) trait Body: Send + Sync {
    /// Creates the coroutine on `stack`; called once.
    fn start(&self, hdr: &Header, stack: PooledStack) -> Coro;
}

/// One user thread: header + closure + result, one allocation.
pub(crate) struct UThread<B: ?Sized> {
    pub(crate) hdr: Header,
    pub(crate) body: B,
}

pub(crate) type Task = Arc<UThread<dyn Body>>;

pub(crate) type ThreadResult<T> = Result<T, Box<dyn Any + Send + 'static>>;

pub(crate) struct Entry<F, T> {
    f: UnsafeCell<Option<F>>,
    pub(crate) result: UnsafeCell<Option<ThreadResult<T>>>,
}

impl<F, T> Entry<F, T> {
    pub(crate) fn new(f: F) -> Self {
        Entry { f: UnsafeCell::new(Some(f)), result: UnsafeCell::new(None) }
    }
}

// SAFETY: `f` is taken once by the LWP that starts the thread; `result` is written once by the
// thread before `done` is set (Release) and read by a joiner after it saw `done` (Acquire).
unsafe impl<F: Send, T: Send> Sync for Entry<F, T> {}

impl<F, T> Body for Entry<F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    fn start(&self, hdr: &Header, stack: PooledStack) -> Coro {
        // SAFETY: `start` is called once, by the LWP that owns the thread now.
        let f = unsafe { (*self.f.get()).take() }.expect("user thread started twice");
        let result = self.result.get() as usize;
        let hdr = hdr as *const Header as usize;
        Coro(Coroutine::with_stack(stack, move |y: &Yielder<(), Switch>, ()| {
            // SAFETY: the header outlives the coroutine: the LWP running it holds a Task.
            let hdr = unsafe { &*(hdr as *const Header) };
            hdr.yielder.set(y);
            let r = catch_unwind(AssertUnwindSafe(f));
            crate::local::run_destructors(hdr);
            // SAFETY: only this thread writes the result, once, before `complete` publishes it.
            unsafe { *(result as *mut Option<ThreadResult<T>>) = Some(r) };
            // No longer live by the time a joiner can observe completion.
            hdr.rt.live.fetch_sub(1, Release);
            hdr.complete();
        }))
    }
}
