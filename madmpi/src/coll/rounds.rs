//! The round state machine of a running schedule: which rounds wait for others, which run (with
//! their in-flight requests), which are done; and the accounting that says whether a completion
//! a request monitor reported is still to be consumed, so that the schedule is advanced again
//! exactly when needed (no lost advance, no polling in a loop while a peer needs the CPU).
//!
//! The protocol: a request's monitor adds one to `reported`, then queues the schedule, then the
//! request signals (`test` turns true). Whoever advances the schedule ([`Rounds::advance`])
//! retires rounds whose requests all tested complete, starts the rounds that no longer wait,
//! and when nothing changes any more counts the requests of running rounds that tested complete
//! (`pending`) — going round again if that count finds a whole round complete, as a request may
//! have signalled since the retiring scan — and only then loads `reported`: a larger value than
//! the retired and pending completions means a monitor ran whose request has not signalled yet,
//! and the caller must come back soon. A monitor that runs after that load queues the schedule
//! itself.
//!
//! Generic over the request ([`Completion`]) so that loom models it with its own requests
//! (`RUSTFLAGS="--cfg loom" cargo test -p madmpi --lib loom`).
//!
//! Owns round states and the completion accounting; it must not touch buffers or post anything
//! (the [`Host`] does).

use crate::loom::atomic::{AtomicUsize, Ordering::SeqCst};

/// A request as the state machine sees it.
pub(crate) trait Completion {
    /// Completed (true only after its monitor reported it).
    fn test(&self) -> bool;
}

impl Completion for std::pin::Pin<Box<nmad::Request>> {
    fn test(&self) -> bool {
        nmad::Request::test(self)
    }
}

/// What runs rounds: the engine (buffers, posting, error checks) or a model.
pub(crate) trait Host<Q> {
    /// Round `r` is done; `reqs` are its completed requests (the host may take them: what it
    /// leaves is dropped).
    fn retire(&mut self, r: usize, reqs: &mut Vec<Q>);
    /// Starts round `r` (its local operations, then its transfers), pushing its requests on
    /// `reqs` (empty).
    fn start(&mut self, r: usize, reqs: &mut Vec<Q>);
    /// No more rounds may start (an error happened): finish once nothing is in flight.
    fn halted(&self) -> bool;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Waiting for this many rounds.
    Waiting(usize),
    Running,
    Done,
}

/// How an [`Rounds::advance`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Advance {
    /// Every round is done, or the host halted and nothing is in flight.
    Finished,
    /// Rounds are running; `true`: a reported completion is not visible yet, advance again soon.
    Running(bool),
}

/// The rounds of one running schedule. Its vectors outlive a run when [`Rounds::reset`] starts
/// the next one: a blocking collective repeated allocates nothing here.
pub(crate) struct Rounds<Q> {
    state: Vec<State>,
    /// In-flight requests of each running round (its first `state.len()` entries).
    reqs: Vec<Vec<Q>>,
    /// Rounds depending on each round (its first `state.len()` entries).
    succ: Vec<Vec<usize>>,
    /// Requests retired so far (compared with the reported completions).
    seen: usize,
    /// Rounds not done yet.
    left: usize,
}

impl<Q: Completion> Rounds<Q> {
    /// Rounds whose dependencies are `deps[r]` (earlier or later rounds, no cycle).
    pub(crate) fn new<'a>(deps: impl ExactSizeIterator<Item = &'a [usize]> + Clone) -> Rounds<Q> {
        let mut r = Rounds { state: Vec::new(), reqs: Vec::new(), succ: Vec::new(), seen: 0, left: 0 };
        r.reset(deps);
        r
    }

    /// Starts afresh with rounds whose dependencies are `deps[r]`, keeping the vectors' memory
    /// (requests still held are dropped).
    pub(crate) fn reset<'a>(&mut self, deps: impl ExactSizeIterator<Item = &'a [usize]> + Clone) {
        let n = deps.len();
        // Only ever grown (a longer schedule's vectors serve the shorter ones after it): the
        // rounds in use are the first `state.len()`.
        if self.succ.len() < n {
            self.succ.resize_with(n, Vec::new);
            self.reqs.resize_with(n, Vec::new);
        }
        self.succ[..n].iter_mut().for_each(Vec::clear);
        self.reqs.iter_mut().for_each(Vec::clear);
        for (i, d) in deps.clone().enumerate() {
            for &p in d {
                self.succ[p].push(i);
            }
        }
        self.state.clear();
        self.state.extend(deps.map(|d| State::Waiting(d.len())));
        self.seen = 0;
        self.left = n;
    }

    /// Advances as far as possible now; `reported` counts the completions monitors reported.
    pub(crate) fn advance(&mut self, host: &mut impl Host<Q>, reported: &AtomicUsize) -> Advance {
        loop {
            let mut changed = self.retire_complete(host);
            if !host.halted() {
                for r in 0..self.state.len() {
                    if self.state[r] == State::Waiting(0) {
                        self.state[r] = State::Running;
                        host.start(r, &mut self.reqs[r]);
                        changed = true;
                    }
                }
            }
            let running = self.state.contains(&State::Running);
            if !running && (self.left == 0 || host.halted()) {
                return Advance::Finished;
            }
            if changed {
                continue;
            }
            // Completed requests of running rounds count as seen, or a round whose send
            // completed before its receive would be advanced in a loop until the receive came.
            let mut pending = 0;
            let mut round_complete = false;
            for (s, reqs) in self.state.iter().zip(&self.reqs) {
                if *s == State::Running {
                    let done = reqs.iter().filter(|q| q.test()).count();
                    round_complete |= done == reqs.len();
                    pending += done;
                }
            }
            if round_complete {
                continue; // a request signalled after the retiring scan
            }
            // Loaded after the count: every request counted there has reported.
            return Advance::Running(reported.load(SeqCst) > self.seen + pending);
        }
    }

    /// A request of a running round that has not completed, if any (what a blocking run waits
    /// for next).
    pub(crate) fn first_pending(&self) -> Option<&Q> {
        self.state
            .iter()
            .zip(&self.reqs)
            .filter(|(s, _)| **s == State::Running)
            .find_map(|(_, reqs)| reqs.iter().find(|q| !q.test()))
    }

    /// Retires the running rounds whose requests all completed; whether any was.
    fn retire_complete(&mut self, host: &mut impl Host<Q>) -> bool {
        let mut changed = false;
        for r in 0..self.state.len() {
            if self.state[r] != State::Running || !self.reqs[r].iter().all(|q| q.test()) {
                continue;
            }
            self.seen += self.reqs[r].len();
            host.retire(r, &mut self.reqs[r]);
            self.reqs[r].clear();
            self.state[r] = State::Done;
            self.left -= 1;
            for &s in &self.succ[r] {
                if let State::Waiting(k) = &mut self.state[s] {
                    *k -= 1;
                }
            }
            changed = true;
        }
        changed
    }
}

#[cfg(all(test, loom))]
mod model {
    //! The accounting under every interleaving of two requests completing (monitor, queue,
    //! signal, as nmad does) with an advance running from a poll of the queue.
    use super::*;
    use crate::loom::atomic::AtomicBool;
    use loom::sync::Arc;

    struct Req(Arc<AtomicBool>);

    impl Completion for Req {
        fn test(&self) -> bool {
            self.0.load(SeqCst)
        }
    }

    /// Round 0 sends and receives (two requests); round 1 depends on it and posts nothing.
    struct Model {
        flags: Vec<Arc<AtomicBool>>,
    }

    impl Host<Req> for Model {
        fn retire(&mut self, _: usize, _: &mut Vec<Req>) {}
        fn start(&mut self, r: usize, reqs: &mut Vec<Req>) {
            if r == 0 {
                reqs.extend(self.flags.iter().map(|f| Req(f.clone())));
            }
        }
        fn halted(&self) -> bool {
            false
        }
    }

    struct Shared {
        reported: AtomicUsize,
        queued: AtomicBool,
    }

    fn complete(sh: &Shared, flag: &AtomicBool) {
        sh.reported.fetch_add(1, SeqCst); // the monitor
        sh.queued.swap(true, SeqCst); // ... queues the schedule (`Progress::push`)
        flag.store(true, SeqCst); // then the request signals
    }

    /// A poll: takes the queued schedule and advances it, queueing it again if asked to.
    fn poll(sh: &Shared, rounds: &mut Rounds<Req>, host: &mut Model) -> Option<Advance> {
        if !sh.queued.swap(false, SeqCst) {
            return None;
        }
        let a = rounds.advance(host, &sh.reported);
        if a == Advance::Running(true) {
            sh.queued.store(true, SeqCst);
        }
        Some(a)
    }

    #[test]
    fn loom_no_completion_is_left_unconsumed() {
        loom::model(|| {
            let flags = vec![Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false))];
            let mut host = Model { flags: flags.clone() };
            let deps: [&[usize]; 2] = [&[], &[0]];
            let mut rounds = Rounds::new(deps.iter().copied());
            let sh = Arc::new(Shared { reported: AtomicUsize::new(0), queued: AtomicBool::new(false) });
            assert_eq!(rounds.advance(&mut host, &sh.reported), Advance::Running(false));
            let threads: Vec<_> = flags
                .iter()
                .map(|f| {
                    let (sh, f) = (sh.clone(), f.clone());
                    loom::thread::spawn(move || complete(&sh, &f))
                })
                .collect();
            // One poll racing with the completions, then the ones their queueing causes.
            let mut last = poll(&sh, &mut rounds, &mut host);
            for t in threads {
                t.join().unwrap();
            }
            while let Some(a) = poll(&sh, &mut rounds, &mut host) {
                last = Some(a);
            }

            assert_eq!(last, Some(Advance::Finished), "a completion was left for a monitor that already ran");
        });
    }
}
