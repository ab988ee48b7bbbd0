//! What a progression source (a driver instance, a control channel, a test event source) gives
//! pioman: a `poll`, optionally a way to wait for its next event without spinning, and how it
//! wants to be treated (options, binding, hints).

use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// The outcome of one poll.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Poll {
    /// Nothing happened.
    Idle,
    /// Something happened (requests progressed or completed); the task stays registered.
    Progress,
    /// The task is finished: pioman will not poll it again.
    Done,
}

/// How pioman may wait for a source's next event instead of polling it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockingWait {
    /// The source cannot be waited for: it is only polled.
    None,
    /// The fd becomes readable when the source has an event (eventfd, socket, pipe). Pioman waits on
    /// many such fds at once with epoll, and never reads them: `poll` does.
    Fd(RawFd),
    /// The source's own [`Source::wait`] blocks until an event or the timeout (a futex, a NIC's
    /// completion channel).
    Custom,
}

/// Facts about a poll that a source may report (used for statistics).
#[derive(Debug, Default)]
pub struct PollCtx {
    pub(crate) event_at: Option<Instant>,
    pub(crate) kind: Context,
}

impl PollCtx {
    /// The source knows when the event it just detected happened (e.g. a timestamp in the
    /// message): pioman records the exact detection latency.
    pub fn event_at(&mut self, t: Instant) {
        self.event_at = Some(t);
    }

    /// Which context is polling.
    pub fn context(&self) -> Context {
        self.kind
    }
}

/// Where a poll runs (for statistics and for research policies).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Context {
    /// An idle LWP (marcel) or a polling progression thread.
    #[default]
    Idle,
    /// A marcel context switch.
    Switch,
    /// A periodic tick.
    Tick,
    /// A thread waiting for a request drives progress itself.
    Waiter,
    /// Right after a blocking wait returned.
    Blocking,
    /// An explicit `Pioman::progress` call.
    Explicit,
}

/// A progression source. `poll` is never called concurrently with itself (pioman serializes it)
/// unless the source says it may be ([`Source::reentrant`]), but it may be called from any
/// thread.
pub trait Source: Send + Sync + 'static {
    /// A short name for statistics.
    fn name(&self) -> &str;

    /// Checks for events and makes progress on every outstanding request of this source: one call
    /// per NIC, not per request. Must not block.
    fn poll(&self, ctx: &mut PollCtx) -> Poll;

    /// Whether `poll` may run in several contexts at once (the source keeps its own state
    /// consistent, a second concurrent poll finding nothing to do): a thread waiting on this
    /// source ([`crate::Pioman::wait_polling`]) then polls it directly, without taking the run
    /// state that keeps other contexts out — one poll's worth cheaper. Such a poll is not one
    /// `LtaskHandle::remove` waits for: a reentrant source must bear polls by waiters after its
    /// task was removed (its state outlives the task). Default: no.
    fn reentrant(&self) -> bool {
        false
    }

    /// A look at whether `poll` may find something now, cheaper than a poll (a few loads: no
    /// system call, no lock another context holds long): a thread waiting on this reentrant
    /// source probes it between two rounds over every task and polls it only when the probe
    /// says so ([`crate::Pioman::wait_polling`]), so that an arrival is seen within a probe
    /// rather than within a poll. `true` when unsure: a `false` that was wrong delays the event
    /// to the next round, which polls every task. Default: `true` (poll every time).
    fn probe(&self) -> bool {
        true
    }

    /// Whether the source has outstanding work; busy contexts (context switches) skip inactive
    /// sources. Default: always active.
    fn is_active(&self) -> bool {
        true
    }

    /// How pioman may wait for the next event. Default: it cannot.
    fn blocking(&self) -> BlockingWait {
        BlockingWait::None
    }

    /// Called before a context sleeps in this source's [`BlockingWait::Fd`]: the source arms its
    /// wake-up (e.g. tells its peers that a signal on the fd is now needed) and returns `false` if
    /// it already has an event (the context then polls instead of sleeping). Every `arm` is
    /// followed by one [`Source::disarm`] once the context is awake again. Default: nothing to arm.
    fn arm(&self) -> bool {
        true
    }

    /// Ends what one [`Source::arm`] started.
    fn disarm(&self) {}

    /// For [`BlockingWait::Custom`]: blocks until the source probably has an event or `timeout`
    /// passes (spurious returns are fine: pioman polls afterwards).
    fn wait(&self, timeout: Option<Duration>) {
        if let Some(t) = timeout {
            std::thread::sleep(t);
        }
    }
}

/// How long a task lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Kind {
    /// Polled until it reports [`Poll::Done`] or is removed (a driver's progression task).
    #[default]
    Repeat,
    /// Polled once, then finished.
    OneShot,
}

/// Which contexts may poll a task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Binding {
    /// Any context.
    #[default]
    Anywhere,
    /// Only contexts running on this OS CPU (a marcel LWP pinned there, or a progression thread
    /// pinned there).
    Core(usize),
    /// Only contexts on this NUMA node.
    Numa(usize),
}

/// Hints for policies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hints {
    /// Rarely used (a control channel): never poll it busily, wait for it (blocking) or poll it
    /// at ticks.
    pub prefers_blocking: bool,
    /// Latency matters more than CPU time: policies may poll it even when cores are busy.
    pub latency_critical: bool,
}

/// Registration options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    pub kind: Kind,
    /// Pioman may use the source's blocking wait (when it has one).
    pub may_block: bool,
    pub binding: Binding,
    pub hints: Hints,
}

impl Default for Options {
    fn default() -> Self {
        Options { kind: Kind::Repeat, may_block: true, binding: Binding::Anywhere, hints: Hints::default() }
    }
}
