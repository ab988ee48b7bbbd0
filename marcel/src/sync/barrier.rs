//! A reusable barrier for a fixed number of threads (user or OS), built on Mutex + Condvar.

use super::{Condvar, Mutex};

pub struct Barrier {
    n: usize,
    state: Mutex<(usize, u64)>,
    cv: Condvar,
}

/// Returned by [`Barrier::wait`]; exactly one waiter per round is the leader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BarrierWaitResult(bool);

impl BarrierWaitResult {
    pub fn is_leader(&self) -> bool {
        self.0
    }
}

impl Barrier {
    /// A barrier for `n` threads (`n == 0` behaves as 1).
    pub fn new(n: usize) -> Barrier {
        Barrier { n: n.max(1), state: Mutex::new((0, 0)), cv: Condvar::new() }
    }

    /// Blocks until `n` threads called `wait` in this round.
    pub fn wait(&self) -> BarrierWaitResult {
        let mut g = self.state.lock();
        let generation = g.1;
        g.0 += 1;
        if g.0 < self.n {
            while g.1 == generation {
                self.cv.wait(&mut g);
            }
            BarrierWaitResult(false)
        } else {
            g.0 = 0;
            g.1 += 1;
            self.cv.notify_all();
            BarrierWaitResult(true)
        }
    }
}

impl std::fmt::Debug for Barrier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Barrier").field("n", &self.n).finish()
    }
}
