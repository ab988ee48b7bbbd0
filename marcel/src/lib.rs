//! Marcel: a two-level (M:N) thread scheduler.
//!
//! One kernel thread (LWP) per core, pinned, runs many user-level threads ([`spawn`]); user
//! threads are coroutines on pooled, guarded stacks and switch in tens of nanoseconds. A user
//! thread blocks only itself in marcel's [`sync`] primitives, [`sleep`], [`park`] and
//! [`JoinHandle::join`]; the LWP runs other threads meanwhile.
//!
//! ```
//! let rt = marcel::Runtime::builder().lwps(2).build().unwrap();
//! let total = rt.block_on(|| {
//!     let hs: Vec<_> = (0..100u64).map(|i| marcel::spawn(move || i * i)).collect();
//!     hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
//! });
//! assert_eq!(total, 328350);
//! ```
//!
//! # Architecture
//! - **VPs and LWPs.** A *virtual processor* (VP) is one core's scheduling state: a stealable FIFO
//!   of unbound threads, a queue of threads bound to that core ([`spawn_on`]), an inbox for
//!   threads made ready elsewhere, a stack cache. A kernel thread *holds* a VP and runs its
//!   threads; idle VPs steal from the nearest VPs first (same cache, then NUMA node, then package,
//!   from hwloc), then sleep until work arrives. A global queue takes threads spawned from plain
//!   OS threads.
//! - **Blocking calls: spare kernel-thread rescue.** [`blocking`] wraps a call that may block its
//!   kernel thread (a read, a wait on a NIC). If it blocks while other threads wait on that core,
//!   a spare kernel thread adopts the core's VP and runs them; when the call returns, the caller
//!   finishes its run where it is and then rejoins the queues. Detection costs nothing when the call
//!   does not block: a per-core sentinel at SCHED_IDLE priority only gets the core when the caller
//!   really sleeps (see `sched::rescue` for the protocol and its costs).
//! - **Compute hogs.** A user thread that never reaches a switch point cannot be preempted safely
//!   (switching stacks from a signal handler could interrupt malloc). Instead the *monitor* checks
//!   every quantum (default 10 ms, `MARCEL_QUANTUM_US`): a VP that ran the same thread at two
//!   consecutive checks while other threads waited for it is handed to a spare kernel thread. The
//!   hog keeps its kernel thread and the OS time-shares the core between them. **Bound:** threads
//!   waiting behind a hog start running within two quanta (plus a thread wake-up, tens of µs) and
//!   then get at least an equal share of the core with the hog. When the hog next switches, its
//!   kernel thread returns to the spare pool.
//! - **Hooks for pioman.** [`SchedHooks`]: an idle-LWP hook (poll while a core is idle), a
//!   context-switch hook (cheap), a periodic tick (from the monitor); and queries of scheduler
//!   state ([`Handle::idle_lwps`], [`Handle::ready_len`], [`Handle::vp_state`], [`Handle::stats`]).
//!
//! # OS thread-locals and migration
//! A user thread may resume on a different kernel thread after any *switch point*: `yield_now`,
//! `sleep`, `park`, `join`, a blocking [`sync`] operation, or the end of a [`blocking`] call. So:
//! - A value read from an OS `thread_local!` describes the kernel thread *at the time of the
//!   read*. Never keep a reference to one across a switch point.
//! - Worse, the compiler may compute a thread-local's address once per function and reuse it
//!   after a call it cannot see into; in release builds a coroutine resumed on another kernel
//!   thread was seen still using the first thread's TLS. Access OS thread-locals only in functions
//!   that contain no switch point (a separate `#[inline(never)]` accessor), as marcel does
//!   internally.
//! - `errno`, and libraries keeping per-OS-thread state (OpenMP runtimes, some allocators' caches,
//!   OS thread ids), follow the same rules. A [`blocking`] call runs start-to-end on one kernel
//!   thread, so reading `errno` right after a syscall inside it is safe.
//! - Values that must not change OS thread (std's `MutexGuard` on some platforms, thread-bound
//!   handles) must not be held across a switch point. Even a thread bound with [`spawn_on`] may
//!   change *kernel* thread (not core) when its VP is handed to a spare.
//! - Use [`user_local!`] for data that follows the user thread; it is the safe choice.
//!
//! # Limits
//! - Each started (not yet finished) user thread holds a stack with a guard zone; the kernel's
//!   `vm.max_map_count` (65530 by default) allows about 32,700 of them at once. Spawned but not yet
//!   started threads cost no stack. At the limit, marcel warns once and new threads wait, unstarted,
//!   until running ones finish (a program whose started threads all wait for unstarted ones then
//!   deadlocks: raise `vm.max_map_count`).
//! - A stack overflow ends the process with `marcel: stack overflow in user thread N "name"`.
//!
//! # Configuration
//! See [`Builder`] and the `MARCEL_*` variables: `MARCEL_LWPS`, `MARCEL_CPUSET`,
//! `MARCEL_STACK_SIZE`, `MARCEL_QUANTUM_US`, `MARCEL_SPIN_US`, `MARCEL_PIN`, `MARCEL_SENTINEL`.

mod config;
pub mod hooks;
mod local;
mod loom;
mod parker;
mod runtime;
mod sched;
pub mod stack;
pub mod sync;
mod sys;
pub mod thread;
pub mod topology;

pub use hooks::{HookId, HookMask, IdleVerdict, SchedHooks};
pub use local::LocalKey;
pub use runtime::{Builder, EnterGuard, Handle, Runtime, ShutdownError, Stats, VpState};
pub use sched::ownership::Phase as VpPhase;
pub use sched::rescue::blocking;
pub use thread::{
    JoinError, JoinHandle, Thread, ThreadId, current, current_lwp, is_user_thread, park, park_timeout, sleep,
    spawn, spawn_on, yield_now,
};
