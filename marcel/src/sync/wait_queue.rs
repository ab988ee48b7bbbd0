//! The wait queue under every blocking primitive (Mutex, Condvar, Semaphore, join).
//!
//! One queue per object: a tiny spin lock guarding an intrusive FIFO of nodes that live on the
//! waiters' own stacks (no allocation per wait). The shape is parking_lot's: a waiter's
//! `validate` runs under the queue lock and decides whether to sleep, `before_sleep` runs after it
//! is queued (a Condvar releases its mutex there, so a notifier cannot miss it), and a notifier's
//! callback runs under the lock and chooses a token for the woken waiter (e.g. "the lock is
//! handed to you"). After a notifier sets a node's `notified` flag it never touches that node again:
//! the waiter may return and its stack frame disappear.
//!
//! Blocking itself is [`Waiter`]'s business: a user thread parks only itself, an OS thread parks
//! the OS thread.

use crate::loom::UnsafeCell;
use crate::loom::atomic::{AtomicBool, Ordering::*};
use crate::loom::spin_hint;
use crate::sync::waiter::Waiter;
use std::marker::PhantomPinned;
use std::ptr;
use std::time::Instant;

/// The outcome of [`WaitQueue::wait`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Woken by a notifier, with the token its callback chose.
    Notified(usize),
    /// `validate` returned false: the caller did not sleep.
    Invalid,
    /// The deadline passed first; the caller was removed from the queue.
    TimedOut,
}

/// What a notifier's callback learns, under the queue lock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unparked {
    /// A waiter is being woken.
    pub(crate) woke: bool,
    /// Waiters remain after this one.
    pub(crate) more: bool,
    /// The tag the woken waiter queued with (0 if none woke).
    pub(crate) tag: usize,
}

struct Node {
    links: UnsafeCell<Links>,
    notified: AtomicBool,
    _pin: PhantomPinned,
}

struct Links {
    next: *mut Node,
    prev: *mut Node,
    waiter: Option<Waiter>,
    token: usize,
    tag: usize,
}

struct List {
    head: *mut Node,
    tail: *mut Node,
    len: usize,
}

pub(crate) struct WaitQueue {
    locked: AtomicBool,
    list: UnsafeCell<List>,
}

// SAFETY: the raw node pointers in `list` are only followed while holding `locked`; the nodes
// they point to stay alive until removed from the list (see `wait`), and `Waiter` is Send.
unsafe impl Send for WaitQueue {}
// SAFETY: as above; all shared mutation goes through the spin lock or atomics.
unsafe impl Sync for WaitQueue {}

impl Default for WaitQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl WaitQueue {
    pub(crate) fn new() -> Self {
        WaitQueue {
            locked: AtomicBool::new(false),
            list: UnsafeCell::new(List { head: ptr::null_mut(), tail: ptr::null_mut(), len: 0 }),
        }
    }

    fn lock(&self) {
        let mut spins = 0u32;
        while self.locked.compare_exchange_weak(false, true, Acquire, Relaxed).is_err() {
            spins += 1;
            // The holder may have been preempted by the kernel: stop burning the core after a while.
            if spins > 64 && cfg!(not(loom)) {
                crate::sys::sched_yield();
            } else {
                spin_hint();
            }
        }
    }

    fn unlock(&self) {
        self.locked.store(false, Release);
    }

    /// Queues the caller if `validate` (run under the lock) says so, runs `before_sleep`, then
    /// blocks until notified or until `deadline`. On timeout, `timed_out(queue_now_empty)` runs
    /// under the lock after the caller was removed. `tag` is shown to notifiers.
    pub(crate) fn wait(
        &self,
        tag: usize,
        validate: impl FnOnce() -> bool,
        before_sleep: impl FnOnce(),
        timed_out: impl FnOnce(bool),
        deadline: Option<Instant>,
    ) -> Wait {
        let node = Node {
            links: UnsafeCell::new(Links {
                next: ptr::null_mut(),
                prev: ptr::null_mut(),
                waiter: Some(Waiter::current()),
                token: 0,
                tag,
            }),
            notified: AtomicBool::new(false),
            _pin: PhantomPinned,
        };
        let me = &node as *const Node as *mut Node;
        self.lock();
        if !validate() {
            self.unlock();
            return Wait::Invalid;
        }
        // SAFETY: we hold the lock; `node` stays on this frame until it is unlinked (by a
        // notifier, before it sets `notified`, or by us on timeout), because every return below
        // happens only after one of those.
        unsafe { self.push_back(me) };
        self.unlock();
        before_sleep();
        loop {
            if node.notified.load(Acquire) {
                // SAFETY: the notifier unlinked the node and wrote the token before setting
                // `notified` (Release), which we observed (Acquire); nobody else touches it now.
                return Wait::Notified(node.links.with(|l| unsafe { (*l).token }));
            }
            match deadline {
                None => Waiter::park_current(None),
                Some(d) => {
                    if Instant::now() >= d {
                        self.lock();
                        if node.notified.load(Acquire) {
                            self.unlock();
                            continue; // notified just in time: take the token above
                        }
                        // SAFETY: not notified, so the node is still linked; we hold the lock.
                        let empty = unsafe { self.unlink(me) };
                        timed_out(empty);
                        self.unlock();
                        return Wait::TimedOut;
                    }
                    Waiter::park_current(Some(d));
                }
            }
        }
    }

    /// Wakes the oldest waiter, if any. `callback` runs under the lock with what happened and
    /// returns the token the waiter will receive. Returns whether a waiter was woken.
    pub(crate) fn notify_one(&self, callback: impl FnOnce(Unparked) -> usize) -> bool {
        self.lock();
        // SAFETY: lock held.
        let node = unsafe { self.pop_front() };
        // SAFETY: lock held (reads `len`); a popped node is alive until we set `notified`.
        let more = self.list.with(|l| unsafe { (*l).len } > 0);
        let tag = if node.is_null() {
            0
        } else {
            // SAFETY: `node` was just unlinked by us and its owner waits for `notified`.
            unsafe { (*node).links.with(|l| (*l).tag) }
        };
        let token = callback(Unparked { woke: !node.is_null(), more, tag });
        if node.is_null() {
            self.unlock();
            return false;
        }
        // SAFETY: as above: the node is alive and exclusively ours until `notified` is set.
        let waiter = unsafe {
            (*node).links.with_mut(|l| {
                (*l).token = token;
                (*l).waiter.take()
            })
        };
        // SAFETY: last access to the node; after this store its owner may free it.
        unsafe { (*node).notified.store(true, Release) };
        self.unlock();
        if let Some(w) = waiter {
            w.wake();
        }
        true
    }

    /// Wakes every waiter with `token`. Returns how many were woken.
    pub(crate) fn notify_all(&self, token: usize) -> usize {
        // Detach the whole list under the lock, then wake outside it (no allocation).
        self.lock();
        let mut node = self.list.with_mut(|l| {
            // SAFETY: lock held.
            let l = unsafe { &mut *l };
            let head = l.head;
            l.head = ptr::null_mut();
            l.tail = ptr::null_mut();
            l.len = 0;
            head
        });
        self.unlock();
        let mut n = 0;
        while !node.is_null() {
            // SAFETY: the detached nodes are reachable only from here; each stays alive until its
            // `notified` is set, which is our last access to it (we read `next` before).
            unsafe {
                let (next, waiter) = (*node).links.with_mut(|l| {
                    (*l).token = token;
                    ((*l).next, (*l).waiter.take())
                });
                (*node).notified.store(true, Release);
                if let Some(w) = waiter {
                    w.wake();
                }
                node = next;
            }
            n += 1;
        }
        n
    }

    /// # Safety
    /// Lock held; `n` is a live node not in any list.
    unsafe fn push_back(&self, n: *mut Node) {
        self.list.with_mut(|l| {
            // SAFETY: per the contract, `n` and the list's nodes are alive and we hold the lock.
            unsafe {
                let l = &mut *l;
                (*n).links.with_mut(|nl| {
                    (*nl).prev = l.tail;
                    (*nl).next = ptr::null_mut();
                });
                if l.tail.is_null() {
                    l.head = n;
                } else {
                    (*l.tail).links.with_mut(|tl| (*tl).next = n);
                }
                l.tail = n;
                l.len += 1;
            }
        })
    }

    /// # Safety
    /// Lock held.
    unsafe fn pop_front(&self) -> *mut Node {
        // SAFETY: lock held (contract).
        let head = self.list.with(|l| unsafe { (*l).head });
        if !head.is_null() {
            // SAFETY: `head` is linked, hence alive; lock held.
            unsafe { self.unlink(head) };
        }
        head
    }

    /// Unlinks `n`; returns whether the list is now empty.
    /// # Safety
    /// Lock held; `n` is linked in this list.
    unsafe fn unlink(&self, n: *mut Node) -> bool {
        self.list.with_mut(|l| {
            // SAFETY: per the contract.
            unsafe {
                let l = &mut *l;
                let (prev, next) = (*n).links.with(|nl| ((*nl).prev, (*nl).next));
                if prev.is_null() {
                    l.head = next;
                } else {
                    (*prev).links.with_mut(|pl| (*pl).next = next);
                }
                if next.is_null() {
                    l.tail = prev;
                } else {
                    (*next).links.with_mut(|nl| (*nl).prev = prev);
                }
                l.len -= 1;
                l.len == 0
            }
        })
    }
}
