//! Who blocks in a wait queue: a user thread (only it is suspended; its LWP runs others) or a
//! plain OS thread (the OS thread sleeps). Under loom, a loom thread.

use std::time::Instant;

#[cfg(not(loom))]
pub(crate) enum Waiter {
    User(crate::sched::Task),
    Os(std::thread::Thread),
}

#[cfg(not(loom))]
impl Waiter {
    /// The thread of execution calling this.
    pub(crate) fn current() -> Waiter {
        match crate::sched::current_task() {
            Some(t) => Waiter::User(t),
            None => Waiter::Os(std::thread::current()),
        }
    }

    /// Blocks the caller until woken (a permit may make it return at once; callers loop).
    pub(crate) fn park_current(deadline: Option<Instant>) {
        if crate::sched::in_user_thread() {
            crate::sched::park_user(deadline);
        } else {
            match deadline {
                None => std::thread::park(),
                Some(d) => std::thread::park_timeout(d.saturating_duration_since(Instant::now())),
            }
        }
    }

    pub(crate) fn wake(self) {
        match self {
            Waiter::User(t) => crate::sched::unpark_task(t),
            Waiter::Os(t) => t.unpark(),
        }
    }
}

/// Under loom the waiters are loom threads; user threads (coroutines) are not modelled.
#[cfg(loom)]
pub(crate) enum Waiter {
    #[allow(dead_code)]
    User(crate::sched::Task),
    Loom(loom::thread::Thread),
}

#[cfg(loom)]
impl Waiter {
    pub(crate) fn current() -> Waiter {
        Waiter::Loom(loom::thread::current())
    }
    pub(crate) fn park_current(_deadline: Option<Instant>) {
        loom::thread::park();
    }
    pub(crate) fn wake(self) {
        match self {
            Waiter::User(t) => crate::sched::unpark_task(t),
            Waiter::Loom(t) => t.unpark(),
        }
    }
}
