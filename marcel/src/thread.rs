//! The user-thread API: spawning, joining, identity, yielding, sleeping and parking.
//!
//! Every function works from a plain OS thread too, acting on that OS thread (`sleep` sleeps it,
//! `park` parks it), so code can be shared between both worlds.

use crate::runtime::Handle;
use crate::sched::task::ThreadResult;
use crate::sched::{self, Task, context};
use std::any::Any;
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::num::NonZeroU64;
use std::time::{Duration, Instant};

/// Spawns a user thread on the current runtime (the caller's, or the one entered with
/// [`crate::Runtime::enter`]).
///
/// # Panics
/// Outside any runtime: use [`crate::Runtime::spawn`] or [`Handle::spawn`] there.
pub fn spawn<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    Builder::new().spawn(f)
}

/// Spawns a user thread bound to LWP `vp` of the current runtime: it only ever runs there.
pub fn spawn_on<F, T>(vp: usize, f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    Builder::new().on(vp).spawn(f)
}

/// Options for one user thread.
#[derive(Clone, Debug, Default)]
pub struct Builder {
    name: Option<String>,
    vp: Option<usize>,
}

impl Builder {
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Names the thread (shown in diagnostics such as stack overflow reports).
    pub fn name(mut self, name: impl Into<String>) -> Builder {
        self.name = Some(name.into());
        self
    }

    /// Binds the thread to LWP `vp`.
    pub fn on(mut self, vp: usize) -> Builder {
        self.vp = Some(vp);
        self
    }

    /// Spawns on the current runtime (see [`spawn`]).
    pub fn spawn<F, T>(self, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let h = Handle::current().expect(
            "marcel::spawn called outside a marcel runtime: use Runtime::spawn, Handle::spawn or Runtime::enter",
        );
        self.spawn_in(&h, f)
    }

    /// Spawns on the runtime of `handle`.
    ///
    /// # Panics
    /// If the LWP given with [`Builder::on`] does not exist.
    pub fn spawn_in<F, T>(self, handle: &Handle, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        if let Some(v) = self.vp {
            let n = handle.shared.vps.len();
            assert!(v < n, "marcel: spawn_on({v}) but the runtime has {n} LWPs");
        }
        let (task, result) = sched::spawn(&handle.shared, f, self.name.map(String::into_boxed_str), self.vp);
        JoinHandle { task, result, _t: PhantomData }
    }
}

/// Owns the right to wait for a user thread and take its result. Dropping it detaches the thread.
pub struct JoinHandle<T> {
    task: Task,
    result: *mut Option<ThreadResult<T>>,
    _t: PhantomData<T>,
}

// SAFETY: the result slot lives in the task allocation the handle keeps alive; it is written once
// by the thread before completion is published and read only by `join` after it observed it.
unsafe impl<T: Send> Send for JoinHandle<T> {}
// SAFETY: `&JoinHandle` only allows `is_finished` and `thread`, which touch atomics/immutable data.
unsafe impl<T: Send> Sync for JoinHandle<T> {}

impl<T> JoinHandle<T> {
    /// Waits for the thread (blocking only the caller: a user thread parks, an OS thread sleeps)
    /// and returns its value, or its panic as an error.
    pub fn join(self) -> Result<T, JoinError> {
        self.task.hdr.wait_done();
        // SAFETY: completion observed (Acquire in wait_done); `join` consumes the handle, so the
        // slot is taken once.
        let r = unsafe { (*self.result).take() }.expect("user thread result present after completion");
        r.map_err(|payload| JoinError { payload })
    }

    pub fn is_finished(&self) -> bool {
        self.task.hdr.is_done()
    }

    pub fn thread(&self) -> Thread {
        Thread { inner: Inner::User(self.task.clone()) }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle").field("thread", &self.task.hdr.id).finish()
    }
}

/// A user thread panicked; holds the panic payload.
pub struct JoinError {
    payload: Box<dyn Any + Send + 'static>,
}

impl JoinError {
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        self.payload
    }
    /// The panic message when it was a string.
    pub fn message(&self) -> Option<&str> {
        self.payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| self.payload.downcast_ref::<String>().map(|s| s.as_str()))
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JoinError({:?})", self.message().unwrap_or("<non-string panic>"))
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "user thread panicked: {}", self.message().unwrap_or("<non-string panic payload>"))
    }
}

impl std::error::Error for JoinError {}

/// A thread's identity, unique in the process across user threads and OS threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ThreadId(NonZeroU64);

impl ThreadId {
    pub fn as_u64(self) -> u64 {
        self.0.get()
    }
}

/// A handle to a user thread or an OS thread: identity and `unpark`.
#[derive(Clone)]
pub struct Thread {
    inner: Inner,
}

#[derive(Clone)]
enum Inner {
    User(Task),
    Os(std::thread::Thread, u64),
}

impl Thread {
    pub fn id(&self) -> ThreadId {
        let n = match &self.inner {
            Inner::User(t) => t.hdr.id,
            Inner::Os(_, id) => *id,
        };
        ThreadId(NonZeroU64::new(n).expect("thread ids start at 1"))
    }

    pub fn name(&self) -> Option<&str> {
        match &self.inner {
            Inner::User(t) => t.hdr.name.as_deref(),
            Inner::Os(t, _) => t.name(),
        }
    }

    /// Whether this is a marcel user thread.
    pub fn is_user(&self) -> bool {
        matches!(self.inner, Inner::User(_))
    }

    /// Gives the thread a permit: its next (or current) `park` returns.
    pub fn unpark(&self) {
        match &self.inner {
            Inner::User(t) => sched::unpark_task(t.clone()),
            Inner::Os(t, _) => t.unpark(),
        }
    }
}

impl fmt::Debug for Thread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Thread")
            .field("id", &self.id())
            .field("name", &self.name())
            .field("user", &self.is_user())
            .finish()
    }
}

thread_local! {
    static OS_ID: Cell<u64> = const { Cell::new(0) };
}

/// The calling thread: the user thread (also inside `blocking`), else the OS thread.
pub fn current() -> Thread {
    if let Some(t) = context::identity_task() {
        return Thread { inner: Inner::User(t) };
    }
    let id = OS_ID.with(|c| {
        if c.get() == 0 {
            c.set(sched::next_thread_id());
        }
        c.get()
    });
    Thread { inner: Inner::Os(std::thread::current(), id) }
}

/// The LWP (index in its runtime) running the calling user thread, or `None` on a plain OS
/// thread and inside `blocking` (the caller's kernel thread holds no LWP there). Only a snapshot:
/// an unbound thread may move at its next switch point.
pub fn current_lwp() -> Option<usize> {
    let l = context::lwp_ptr();
    if l.is_null() || context::current_header().is_null() {
        return None;
    }
    // SAFETY: a registered LWP record lives on this kernel thread's stack while it runs marcel code.
    unsafe { (*l).vp.get() }
}

/// Whether the caller runs on a marcel user thread.
pub fn is_user_thread() -> bool {
    !context::identity_header().is_null()
}

/// Lets the other ready user threads of this LWP run (an OS thread yields its core).
pub fn yield_now() {
    sched::yield_now();
}

/// Blocks the calling thread for at least `d`. A user thread parks and its LWP runs others; the
/// monitor wakes it (timer resolution: tens of microseconds).
pub fn sleep(d: Duration) {
    if !sched::in_user_thread() {
        std::thread::sleep(d);
        return;
    }
    if d.is_zero() {
        sched::yield_now();
        return;
    }
    let deadline = Instant::now() + d;
    while Instant::now() < deadline {
        sched::park_user(Some(deadline));
    }
}

/// Blocks until [`Thread::unpark`] gives a permit (or spuriously: callers re-check their
/// condition). Only the calling user thread blocks.
pub fn park() {
    if sched::in_user_thread() {
        sched::park_user(None);
    } else {
        std::thread::park();
    }
}

/// Like [`park`], for at most `d`.
pub fn park_timeout(d: Duration) {
    if sched::in_user_thread() {
        sched::park_user(Some(Instant::now() + d));
    } else {
        std::thread::park_timeout(d);
    }
}

/// Writes `user thread 42 "name"` for the stack overflow handler (async-signal-safe: no
/// allocation, no lock).
pub(crate) fn describe_current(buf: &mut [u8]) -> usize {
    let h = context::identity_header();
    if h.is_null() {
        return put(buf, 0, b"a kernel thread of marcel");
    }
    // SAFETY: the header of the running thread is alive while it runs (its LWP holds the Task).
    let hdr = unsafe { &*h };
    let mut n = put(buf, 0, b"user thread ");
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut id = hdr.id;
    loop {
        i -= 1;
        digits[i] = b'0' + (id % 10) as u8;
        id /= 10;
        if id == 0 {
            break;
        }
    }
    n = put(buf, n, &digits[i..]);
    if let Some(name) = &hdr.name {
        n = put(buf, n, b" \"");
        n = put(buf, n, name.as_bytes());
        n = put(buf, n, b"\"");
    }
    n
}

fn put(buf: &mut [u8], at: usize, s: &[u8]) -> usize {
    let k = s.len().min(buf.len().saturating_sub(at));
    buf[at..at + k].copy_from_slice(&s[..k]);
    at + k
}
