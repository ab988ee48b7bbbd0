//! Under marcel: pioman runs at the scheduler's hooks. An idle LWP polls (or sleeps, as the policy
//! says), a context switch polls every `switch_stride` switches when the policy wants it (decided
//! at ticks, so the switch path stays a load and a counter), and each tick polls the unbound tasks
//! and refreshes that decision.

use crate::engine::Inner;
use crate::machine::Scope;
use crate::policy::IdleAction;
use crate::source::Context;
use marcel::{IdleVerdict, SchedHooks};
use std::sync::Arc;
use std::sync::atomic::Ordering::*;

pub(crate) struct Hooks(pub(crate) Arc<Inner>);

impl SchedHooks for Hooks {
    fn idle(&self, vp: usize) -> IdleVerdict {
        let inner = &self.0;
        let Some(&scope) = inner.vp_scopes.get(vp) else { return IdleVerdict::Sleep };
        let m = inner.machine(Some(vp));
        match inner.policy().idle(&m) {
            IdleAction::Poll => {
                let (useful, candidates) = inner.progress(Context::Idle, scope, true, Some(&m));
                if useful > 0 {
                    IdleVerdict::Progress
                } else if candidates > 0 {
                    IdleVerdict::KeepPolling
                } else if inner.has_tasks_in(scope) {
                    // Inactive sources may become active without telling us: look again each tick.
                    IdleVerdict::SleepFor(inner.tick)
                } else {
                    IdleVerdict::Sleep // registration wakes idle LWPs
                }
            }
            // The LWP may sleep: blocking waits and ticks cover the sources.
            IdleAction::Block | IdleAction::Sleep => IdleVerdict::Sleep,
        }
    }

    fn switch(&self, vp: usize) {
        let inner = &self.0;
        if !inner.switch_poll.load(Relaxed) {
            return;
        }
        let Some(c) = inner.switch_counts.get(vp) else { return };
        // Only this LWP's holder updates its counter: a plain load/store is enough.
        let n = c.load(Relaxed) + 1;
        c.store(n, Relaxed);
        if n % inner.switch_stride == 0 {
            let m = inner.machine(Some(vp));
            inner.progress(Context::Switch, inner.vp_scopes[vp], true, Some(&m));
        }
    }

    fn tick(&self) {
        let inner = &self.0;
        let m = inner.machine(None);
        let p = inner.policy();
        inner.switch_poll.store(p.poll_at_switch(&m), Relaxed);
        if p.poll_at_tick(&m) {
            inner.progress(Context::Tick, Scope::ANYWHERE, false, None);
        }
    }
}
