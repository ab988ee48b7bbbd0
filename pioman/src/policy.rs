//! Progression policies: when to poll, when to wait in a blocking call, how a waiting thread
//! waits. The seam for research: implement [`Policy`] and pass it to
//! [`crate::Builder::policy`], or [`register`] it under a name that `PIOMAN_POLICY` can select.
//!
//! Built in (`PIOMAN_POLICY=poll|block|timer|adaptive`, default `adaptive`):
//! - `poll`: idle contexts poll busily, context switches and ticks poll, waiters spin-poll (yielding
//!   to other user threads) for up to a tick before parking. Fastest when a core is free; when all
//!   cores compute, detection waits for a switch or a tick.
//! - `block`: nobody spins; waiters and the background blocker sleep in the sources' blocking
//!   waits (inside `marcel::blocking`, so the core's other threads go on); ticks poll the sources
//!   that cannot block.
//! - `timer`: poll only at ticks.
//! - `adaptive`: `poll` while a core is idle, `block` when every core computes; sources hinted
//!   `prefers_blocking` are never polled busily. Without marcel, a waiter whose process has no
//!   other thread waiting for its CPU ([`MachineState::local_ready`]) and that has not lately
//!   lost its CPU while spinning ([`MachineState::contended`]) spins for as long as the wait
//!   lasts, re-planning every millisecond, as MPICH's waits do: an idle rank answers in a poll,
//!   not a kernel wake-up. Under marcel a waiter whose LWP has nothing else to
//!   run parks (its idle LWP polls and resumes it); one whose core is wanted by other threads
//!   (ready, or hogs marcel handed off) sleeps in a blocking wait. Without marcel, in a job with
//!   more ranks on the machine than CPUs ([`MachineState::oversubscribed`]), a waiter whose core
//!   is wanted polls and yields the CPU for up to [`OVERSUBSCRIBED_SPIN`] before it blocks.

use crate::source::Hints;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// What a policy sees of the machine when it decides.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MachineState {
    /// Cores the process may use.
    pub cores: usize,
    /// Cores with nothing to run right now (idle marcel LWPs; without marcel, an estimate from the
    /// kernel's runnable count).
    pub idle_cores: usize,
    /// Threads ready to run on the deciding context's core besides itself (marcel: its LWP's
    /// queue; a waiting OS thread: its process's runnable threads beyond its other allowed CPUs;
    /// zero for other OS threads).
    pub local_ready: usize,
    /// Whether pioman runs under marcel.
    pub under_marcel: bool,
    /// More processes of the job run on this machine than it has cores (an MPI job started with
    /// more ranks than cores): the other runnable threads are likely peers waiting for us, not
    /// computations to stay out of the way of ([`crate::Pioman::set_oversubscribed`]).
    pub oversubscribed: bool,
    /// The waiting OS thread lately lost its CPU to other threads while it spun (its run-queue
    /// delay grew by more than a blip during a spin; remembered for 250 ms): its CPU is wanted.
    /// Per thread, unlike `idle_cores`, and so not fooled by other cores' load. Always false
    /// under marcel and outside waits.
    pub contended: bool,
    /// The threads of its process that want the waiting OS thread's CPU are, as far as it can
    /// tell, other threads spinning in the library (no more runnable than spinning waiters):
    /// spinning on, the CPU shared by time slices, serves them all, where a sleep would cost
    /// each message a kernel wake-up. Always false under marcel and outside waits.
    pub waiters_only: bool,
}

/// What an idle context (an idle marcel LWP, a progression thread) does now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleAction {
    /// Poll the sources busily (the core has nothing better to do).
    Poll,
    /// Wait in the sources' blocking waits (the background blocker does it under marcel; idle LWPs
    /// sleep).
    Block,
    /// Do nothing until the next tick.
    Sleep,
}

/// What a waiting thread does after its spin phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterSpin {
    /// Sleep in the sources' blocking waits (inside `marcel::blocking` for user threads), woken by an
    /// event or by whoever completes the request.
    Block,
    /// Park until the request completes (someone else detects it) or the next tick.
    Park,
    /// Ask the policy again, without sleeping: the spin goes on as long as the machine stays as
    /// it was (a core nobody else wants spins like MPICH's waits do).
    Replan,
}

/// How a thread waiting for a request waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitPlan {
    /// How long to spin, driving progress itself, before `then`.
    pub spin: Duration,
    /// While spinning, let the other ready user threads of the core run between polls.
    pub yield_while_spinning: bool,
    /// While spinning in an OS thread, give the CPU to its other runnable threads between polls
    /// (`sched_yield`).
    pub yield_cpu: bool,
    pub then: AfterSpin,
}

/// A progression policy. Methods are called often (each idle iteration, each wait): keep them
/// cheap and non-blocking.
pub trait Policy: Send + Sync + 'static {
    fn name(&self) -> &str;
    fn idle(&self, m: &MachineState) -> IdleAction;
    /// Poll at marcel context switches (rate-limited by the engine).
    fn poll_at_switch(&self, m: &MachineState) -> bool;
    /// Poll at periodic ticks.
    fn poll_at_tick(&self, m: &MachineState) -> bool;
    fn wait(&self, m: &MachineState) -> WaitPlan;
    /// May a source with these hints be polled busily (idle loops, context switches) now?
    fn busy_poll_allowed(&self, hints: Hints, m: &MachineState) -> bool {
        let _ = m;
        !hints.prefers_blocking || hints.latency_critical
    }
}

/// Spin time of built-in policies before a waiter blocks or parks (`PIOMAN_SPIN_US`).
pub fn default_spin() -> Duration {
    static S: OnceLock<Duration> = OnceLock::new();
    *S.get_or_init(|| {
        std::env::var("PIOMAN_SPIN_US")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .map(Duration::from_micros)
            .unwrap_or(Duration::from_micros(100))
    })
}

/// A policy whose answers do not depend on the machine (`poll`, `block`, `timer`).
#[derive(Clone, Copy, Debug)]
pub struct Fixed {
    pub name: &'static str,
    pub idle: IdleAction,
    pub at_switch: bool,
    pub at_tick: bool,
    pub plan: WaitPlan,
    /// Whether sources may be busy-polled at all (hints aside).
    pub busy_poll: bool,
}

/// Poll everywhere, always.
pub const POLL: Fixed = Fixed {
    name: "poll",
    idle: IdleAction::Poll,
    at_switch: true,
    at_tick: true,
    plan: WaitPlan {
        spin: Duration::from_millis(1),
        yield_while_spinning: true,
        yield_cpu: false,
        then: AfterSpin::Park,
    },
    busy_poll: true,
};

/// Never spin: wait in the sources' blocking waits; ticks poll what cannot block.
pub const BLOCK: Fixed = Fixed {
    name: "block",
    idle: IdleAction::Block,
    at_switch: false,
    at_tick: true,
    plan: WaitPlan {
        spin: Duration::ZERO,
        yield_while_spinning: false,
        yield_cpu: false,
        then: AfterSpin::Block,
    },
    busy_poll: false,
};

/// Poll at ticks only.
pub const TIMER: Fixed = Fixed {
    name: "timer",
    idle: IdleAction::Sleep,
    at_switch: false,
    at_tick: true,
    plan: WaitPlan {
        spin: Duration::ZERO,
        yield_while_spinning: false,
        yield_cpu: false,
        then: AfterSpin::Park,
    },
    busy_poll: false,
};

impl Policy for Fixed {
    fn name(&self) -> &str {
        self.name
    }
    fn idle(&self, _: &MachineState) -> IdleAction {
        self.idle
    }
    fn poll_at_switch(&self, _: &MachineState) -> bool {
        self.at_switch
    }
    fn poll_at_tick(&self, _: &MachineState) -> bool {
        self.at_tick
    }
    fn wait(&self, _: &MachineState) -> WaitPlan {
        self.plan
    }
    fn busy_poll_allowed(&self, hints: Hints, _: &MachineState) -> bool {
        self.busy_poll && (!hints.prefers_blocking || hints.latency_critical)
    }
}

/// How long an oversubscribed waiter polls and yields before it sleeps: long enough for every
/// other rank of a crowded machine to get its turn a few times (each turn is a poll).
pub const OVERSUBSCRIBED_SPIN: Duration = Duration::from_millis(1);

/// `poll` while a core is idle, `block` when every core computes (see the module docs).
pub struct AdaptivePolicy;

impl Policy for AdaptivePolicy {
    fn name(&self) -> &str {
        "adaptive"
    }
    fn idle(&self, m: &MachineState) -> IdleAction {
        if m.idle_cores > 0 { IdleAction::Poll } else { IdleAction::Block }
    }
    fn poll_at_switch(&self, _: &MachineState) -> bool {
        false // idle cores poll; busy ones are covered by blocking waits
    }
    fn poll_at_tick(&self, _: &MachineState) -> bool {
        true
    }
    fn wait(&self, m: &MachineState) -> WaitPlan {
        if m.under_marcel && m.local_ready == 0 {
            // Nobody wants our core: spin a little, then park — our LWP goes idle and polls, and
            // runs us as soon as it detects the event (cheaper than a kernel wake-up).
            return WaitPlan {
                spin: default_spin(),
                yield_while_spinning: false,
                yield_cpu: false,
                then: AfterSpin::Park,
            };
        }
        // Spin only if it costs nobody anything, then sleep in the kernel (under marcel inside
        // `marcel::blocking`, so the threads waiting for our core get it).
        let free = m.local_ready == 0 && m.idle_cores > 0;
        if !free && m.oversubscribed && !m.under_marcel {
            // The cores are busy with our job's other ranks, most likely waiting too: poll and
            // hand the core over (sched_yield) for a while — the rank we wait for runs at once,
            // where a sleep would cost a kernel wake-up per message. A computation that holds
            // the core makes the first yield last a time slice, which ends the spin.
            return WaitPlan {
                spin: OVERSUBSCRIBED_SPIN,
                yield_while_spinning: false,
                yield_cpu: true,
                then: AfterSpin::Block,
            };
        }
        if !m.under_marcel && m.waiters_only {
            // Our CPU is wanted by our own threads waiting in the library (several threads of a
            // rank on one CPU, each in its receive): spin on and let the kernel share the CPU
            // among us by time slices (each spinner completes the others' requests too; a
            // yield per poll, or a sleep, would cost each message a system call or a wake-up),
            // looking again every millisecond: a computation coming along shows in the next look.
            return WaitPlan {
                spin: Duration::from_millis(1),
                yield_while_spinning: false,
                yield_cpu: false,
                then: AfterSpin::Replan,
            };
        }
        if !m.under_marcel && !m.oversubscribed && m.local_ready == 0 && !m.contended {
            // No thread of ours waits for our CPU and nothing took it from us while we spun:
            // keep polling (a kernel wake-up costs tens of µs on a VM), looking again every
            // millisecond (each look reads `/proc`: not more often).
            return WaitPlan {
                spin: Duration::from_millis(1),
                yield_while_spinning: false,
                yield_cpu: false,
                then: AfterSpin::Replan,
            };
        }
        let spin = if free { default_spin() } else { Duration::ZERO };
        WaitPlan { spin, yield_while_spinning: false, yield_cpu: false, then: AfterSpin::Block }
    }
}

type Factory = Arc<dyn Fn() -> Arc<dyn Policy> + Send + Sync>;

fn registry() -> &'static Mutex<HashMap<String, Factory>> {
    static R: OnceLock<Mutex<HashMap<String, Factory>>> = OnceLock::new();
    R.get_or_init(|| {
        let mut m: HashMap<String, Factory> = HashMap::new();
        for f in [POLL, BLOCK, TIMER] {
            m.insert(f.name.into(), Arc::new(move || Arc::new(f) as Arc<dyn Policy>) as Factory);
        }
        m.insert("adaptive".into(), Arc::new(|| Arc::new(AdaptivePolicy) as Arc<dyn Policy>));
        Mutex::new(m)
    })
}

/// Makes a policy selectable by name (`PIOMAN_POLICY=name`, [`by_name`]).
pub fn register(name: &str, factory: impl Fn() -> Arc<dyn Policy> + Send + Sync + 'static) {
    registry().lock().unwrap().insert(name.to_string(), Arc::new(factory));
}

/// The policy registered under `name`, or an error listing the known names.
pub fn by_name(name: &str) -> Result<Arc<dyn Policy>, String> {
    let r = registry().lock().unwrap();
    match r.get(name) {
        Some(f) => Ok(f()),
        None => {
            let mut known: Vec<&str> = r.keys().map(|s| s.as_str()).collect();
            known.sort();
            Err(format!("pioman: unknown policy {name:?} (known: {})", known.join(", ")))
        }
    }
}

/// The names of the registered policies (the built-in ones and those added with [`register`]),
/// sorted.
pub fn names() -> Vec<String> {
    let mut v: Vec<String> = registry().lock().unwrap().keys().cloned().collect();
    v.sort();
    v
}

/// `PIOMAN_POLICY`, or `adaptive`.
pub fn from_env() -> Result<Arc<dyn Policy>, String> {
    match std::env::var("PIOMAN_POLICY") {
        Ok(n) if !n.trim().is_empty() => by_name(n.trim()),
        _ => Ok(Arc::new(AdaptivePolicy)),
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn names_and_registration() {
        for n in ["poll", "block", "timer", "adaptive"] {
            assert_eq!(by_name(n).unwrap().name(), n);
        }
        let e = by_name("nope").err().unwrap();
        assert!(e.contains("adaptive") && e.contains("nope"), "{e}");
        struct Mine;
        impl Policy for Mine {
            fn name(&self) -> &str {
                "mine"
            }
            fn idle(&self, _: &MachineState) -> IdleAction {
                IdleAction::Sleep
            }
            fn poll_at_switch(&self, _: &MachineState) -> bool {
                false
            }
            fn poll_at_tick(&self, _: &MachineState) -> bool {
                true
            }
            fn wait(&self, _: &MachineState) -> WaitPlan {
                WaitPlan {
                    spin: Duration::ZERO,
                    yield_while_spinning: false,
                    yield_cpu: false,
                    then: AfterSpin::Park,
                }
            }
        }
        register("mine", || Arc::new(Mine));
        assert_eq!(by_name("mine").unwrap().name(), "mine");
    }

    #[test]
    fn adaptive_switches_on_idle_cores() {
        let a = AdaptivePolicy;
        let busy = MachineState {
            cores: 2,
            idle_cores: 0,
            local_ready: 3,
            under_marcel: true,
            oversubscribed: false,
            contended: false,
            waiters_only: false,
        };
        let idle = MachineState {
            cores: 2,
            idle_cores: 1,
            local_ready: 0,
            under_marcel: true,
            oversubscribed: false,
            contended: false,
            waiters_only: false,
        };
        assert_eq!(a.idle(&busy), IdleAction::Block);
        assert_eq!(a.idle(&idle), IdleAction::Poll);
        assert_eq!(a.wait(&busy).spin, Duration::ZERO);
        assert!(a.wait(&idle).spin > Duration::ZERO);
        let alone = MachineState {
            cores: 2,
            idle_cores: 0,
            local_ready: 0,
            under_marcel: true,
            oversubscribed: false,
            contended: false,
            waiters_only: false,
        };
        assert_eq!(a.wait(&alone).then, AfterSpin::Park, "our LWP will poll when we park");
        assert_eq!(a.wait(&busy).then, AfterSpin::Block);
        let os_alone = MachineState { cores: 2, idle_cores: 0, ..Default::default() };
        assert_eq!(a.wait(&os_alone).then, AfterSpin::Replan, "an uncontended waiter spins on");
        let contended = MachineState { contended: true, ..os_alone };
        assert_eq!(a.wait(&contended).then, AfterSpin::Block);
        let computing = MachineState { local_ready: 1, ..os_alone };
        assert_eq!(a.wait(&computing).then, AfterSpin::Block, "our compute threads want the CPU");
        let waiters = MachineState { local_ready: 1, waiters_only: true, contended: true, ..os_alone };
        assert_eq!(a.wait(&waiters).then, AfterSpin::Replan, "our other waiters: the spin goes on");
        let os_busy =
            MachineState { cores: 2, idle_cores: 0, local_ready: 0, contended: true, ..Default::default() };
        assert_eq!(a.wait(&os_busy).spin, Duration::ZERO);
        let crowded = MachineState { oversubscribed: true, ..os_busy };
        assert!(a.wait(&crowded).spin > Duration::ZERO && a.wait(&crowded).yield_cpu);
        assert_eq!(a.wait(&crowded).then, AfterSpin::Block);
        let control = Hints { prefers_blocking: true, latency_critical: false };
        assert!(!a.busy_poll_allowed(control, &idle));
    }
}
