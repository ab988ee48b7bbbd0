//! Collective schedules: what one rank does in one collective operation, as data.
//!
//! A [`Schedule`] is a set of rounds over byte ranges of buffers. Buffer [`SEND`] is the user's
//! input, [`RECV`] the user's output (both bound by the engine when it runs the schedule; an
//! in-place operation leaves [`SEND`] empty and reads its input from [`RECV`]); further buffers
//! are temporaries the engine allocates. A round first runs its local operations (copies,
//! reductions `into = from op into`), in order, then posts all its transfers at once; it is done
//! when every transfer completed. A round starts once every round it depends on is done
//! ([`Schedule::round`] depends on the round created before it, [`Schedule::round_after`] on the
//! rounds given), so a schedule is a DAG of rounds; algorithms appended to one schedule in turn
//! (a reduction then a broadcast) chain naturally.
//!
//! Each transfer names its peer (communicator rank) and a *step*: the two ends of a message use
//! the same step, which becomes the low bits of the nmad tag (`tags::internal(Kind::Collective,
//! seq, step)`). Algorithms draw a block of steps per phase from [`Schedule::steps`], so phases
//! of one schedule never share a step.
//!
//! Owns the representation and its structural checks; it must not know about nmad, requests or
//! reduction operations (the engine and the simulator give meaning to it). Pure data: the
//! algorithms' unit tests run schedules of all ranks against each other in-process.

/// A buffer of a schedule.
pub(crate) type BufId = usize;

/// The user's input buffer (read only).
pub(crate) const SEND: BufId = 0;
/// The user's output buffer (also the input of in-place operations).
pub(crate) const RECV: BufId = 1;

/// Steps reserved by one call of [`Schedule::steps`].
pub(crate) const STEP_BLOCK: u32 = 1 << 16;

/// Steps of one phase of a composed schedule ([`Schedule::phase`]): 16 blocks.
pub(crate) const PHASE_STEPS: u32 = 16 * STEP_BLOCK;

/// A byte range of a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Range {
    pub buf: BufId,
    pub off: usize,
    pub len: usize,
}

impl Range {
    pub(crate) fn new(buf: BufId, off: usize, len: usize) -> Range {
        Range { buf, off, len }
    }

    /// An empty range (zero-byte messages, e.g. a barrier's).
    pub(crate) const EMPTY: Range = Range { buf: SEND, off: 0, len: 0 };

    pub(crate) fn end(&self) -> usize {
        self.off + self.len
    }

    pub(crate) fn overlaps(&self, o: &Range) -> bool {
        self.buf == o.buf && self.len > 0 && o.len > 0 && self.off < o.end() && o.off < self.end()
    }
}

/// A local operation, run when its round starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Local {
    Copy {
        from: Range,
        to: Range,
    },
    /// `into = from op into`, over `count` elements (both ranges hold `count` packed elements).
    Reduce {
        from: Range,
        into: Range,
        count: usize,
    },
}

/// A message of a round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Xfer {
    Send {
        peer: u32,
        step: u32,
        data: Range,
    },
    /// Must receive exactly `data.len` bytes.
    Recv {
        peer: u32,
        step: u32,
        data: Range,
    },
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Round {
    /// Rounds that must be done before this one starts (all earlier in the schedule).
    pub deps: Vec<usize>,
    pub local: Vec<Local>,
    pub xfers: Vec<Xfer>,
}

/// One rank's part of a collective operation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Schedule {
    /// Length of each temporary buffer, by id (ids [`SEND`] and [`RECV`] are the user's: 0 here).
    pub tmp_len: Vec<usize>,
    pub rounds: Vec<Round>,
    next_step: u32,
}

impl Schedule {
    pub(crate) fn new() -> Schedule {
        Schedule { tmp_len: vec![0, 0], rounds: Vec::new(), next_step: 0 }
    }

    /// A temporary buffer of `len` bytes.
    pub(crate) fn tmp(&mut self, len: usize) -> BufId {
        self.tmp_len.push(len);
        self.tmp_len.len() - 1
    }

    /// The first of [`STEP_BLOCK`] steps for a phase.
    pub(crate) fn steps(&mut self) -> u32 {
        let s = self.next_step;
        self.next_step += STEP_BLOCK;
        s
    }

    /// Moves on to the steps of phase `k` of a composed schedule (phases never share steps: a
    /// rank absent from a phase still agrees with the others on where the next one starts).
    pub(crate) fn phase(&mut self, k: u32) {
        debug_assert!(self.next_step <= k * PHASE_STEPS, "phase {k} comes too late");
        self.next_step = k * PHASE_STEPS;
    }

    /// A new round depending on the last one created (if any).
    pub(crate) fn round(&mut self) -> usize {
        let deps = self.rounds.len().checked_sub(1).into_iter().collect::<Vec<_>>();
        self.round_after(&deps)
    }

    /// A new round depending on `deps`.
    pub(crate) fn round_after(&mut self, deps: &[usize]) -> usize {
        debug_assert!(deps.iter().all(|&d| d < self.rounds.len()));
        self.rounds.push(Round { deps: deps.to_vec(), ..Round::default() });
        self.rounds.len() - 1
    }

    pub(crate) fn send(&mut self, round: usize, peer: u32, step: u32, data: Range) {
        self.rounds[round].xfers.push(Xfer::Send { peer, step, data });
    }

    pub(crate) fn recv(&mut self, round: usize, peer: u32, step: u32, data: Range) {
        self.rounds[round].xfers.push(Xfer::Recv { peer, step, data });
    }

    /// Copies `from` to `to` (same length) when `round` starts; nothing if they are the same.
    pub(crate) fn copy(&mut self, round: usize, from: Range, to: Range) {
        if from != to && from.len > 0 {
            self.rounds[round].local.push(Local::Copy { from, to });
        }
    }

    /// `into = from op into` when `round` starts.
    pub(crate) fn reduce(&mut self, round: usize, from: Range, into: Range, count: usize) {
        if count > 0 {
            self.rounds[round].local.push(Local::Reduce { from, into, count });
        }
    }

    /// Appends `sub`, a schedule built for a subset of the communicator, after everything
    /// already here (its first rounds depend on every round nobody depends on yet): its rank `i`
    /// is communicator rank `peers[i]`, its [`SEND`] and [`RECV`] are `send` and `recv` here, its
    /// temporaries become new ones and its steps follow the last ones taken (see
    /// [`Schedule::phase`]). Hierarchical algorithms compose flat ones this way.
    pub(crate) fn splice(&mut self, sub: Schedule, peers: &[u32], send: BufId, recv: BufId) {
        let sinks: Vec<usize> = (0..self.rounds.len())
            .filter(|&i| !self.rounds[i + 1..].iter().any(|r| r.deps.contains(&i)))
            .collect();
        let first_tmp = self.tmp_len.len();
        self.tmp_len.extend_from_slice(&sub.tmp_len[2..]);
        let buf = |b: BufId| match b {
            SEND => send,
            RECV => recv,
            t => first_tmp + t - 2,
        };
        let range = |r: Range| Range { buf: buf(r.buf), ..r };
        let base_step = self.next_step;
        debug_assert!(sub.next_step <= PHASE_STEPS, "a spliced schedule takes one phase at most");
        self.next_step += sub.next_step.next_multiple_of(STEP_BLOCK);
        let base_round = self.rounds.len();
        for round in sub.rounds {
            let deps = if round.deps.is_empty() {
                sinks.clone()
            } else {
                round.deps.iter().map(|d| d + base_round).collect()
            };
            let local = round
                .local
                .into_iter()
                .map(|l| match l {
                    Local::Copy { from, to } => Local::Copy { from: range(from), to: range(to) },
                    Local::Reduce { from, into, count } => {
                        Local::Reduce { from: range(from), into: range(into), count }
                    }
                })
                .collect();
            let xfers = round
                .xfers
                .into_iter()
                .map(|x| match x {
                    Xfer::Send { peer, step, data } => {
                        Xfer::Send { peer: peers[peer as usize], step: step + base_step, data: range(data) }
                    }
                    Xfer::Recv { peer, step, data } => {
                        Xfer::Recv { peer: peers[peer as usize], step: step + base_step, data: range(data) }
                    }
                })
                .collect();
            self.rounds.push(Round { deps, local, xfers });
        }
    }

    /// Structural checks against the user buffers' lengths: ranges inside their buffers, local
    /// operations on ranges of equal length that do not overlap, dependencies on earlier rounds,
    /// no round writing (receive) a range another transfer of the same round touches.
    pub(crate) fn validate(&self, send_len: usize, recv_len: usize) -> Result<(), String> {
        let len_of = |b: BufId| match b {
            SEND => Some(send_len),
            RECV => Some(recv_len),
            _ => self.tmp_len.get(b).copied(),
        };
        let inside = |r: &Range| r.len == 0 || len_of(r.buf).is_some_and(|l| r.end() <= l);
        for (i, round) in self.rounds.iter().enumerate() {
            if round.deps.iter().any(|&d| d >= i) {
                return Err(format!("round {i} depends on a later round"));
            }
            for l in &round.local {
                let (a, b) = match *l {
                    Local::Copy { from, to } => (from, to),
                    Local::Reduce { from, into, .. } => (from, into),
                };
                if !inside(&a) || !inside(&b) || a.len != b.len || a.overlaps(&b) {
                    return Err(format!("round {i}: bad local operation {l:?}"));
                }
                if b.buf == SEND {
                    return Err(format!("round {i}: {l:?} writes the input buffer"));
                }
            }
            for (j, x) in round.xfers.iter().enumerate() {
                let (Xfer::Send { data, .. } | Xfer::Recv { data, .. }) = *x;
                if !inside(&data) {
                    return Err(format!("round {i}: {x:?} leaves its buffer"));
                }
                if let Xfer::Recv { data, .. } = *x {
                    if data.buf == SEND && data.len > 0 {
                        return Err(format!("round {i}: {x:?} writes the input buffer"));
                    }
                    for (k, y) in round.xfers.iter().enumerate() {
                        let (Xfer::Send { data: d, .. } | Xfer::Recv { data: d, .. }) = *y;
                        if k != j && data.overlaps(&d) {
                            return Err(format!("round {i}: {x:?} overlaps {y:?}"));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// The largest power of two not above `n` (`n` ≥ 1).
pub(crate) fn pof2_below(n: u32) -> u32 {
    1 << (31 - n.leading_zeros())
}

/// The lowest set bit of `v` (`v` > 0).
pub(crate) fn lowbit(v: u32) -> u32 {
    v & v.wrapping_neg()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_chain_and_checks_catch_mistakes() {
        let mut s = Schedule::new();
        let t = s.tmp(8);
        let a = s.round();
        s.recv(a, 1, 0, Range::new(t, 0, 8));
        let b = s.round();
        s.reduce(b, Range::new(t, 0, 8), Range::new(RECV, 0, 8), 2);
        assert_eq!(s.rounds[b].deps, [a]);
        assert_eq!(s.validate(8, 8), Ok(()));
        assert!(s.validate(8, 4).is_err(), "RECV too short");
        let c = s.round_after(&[]);
        s.recv(c, 2, 0, Range::new(RECV, 4, 4));
        s.send(c, 2, 0, Range::new(RECV, 0, 6));
        assert!(s.validate(8, 8).is_err(), "a receive overlapping a send of its round");
        assert_eq!((pof2_below(1), pof2_below(7), pof2_below(8)), (1, 4, 8));
        assert_eq!((lowbit(6), lowbit(8)), (2, 8));
    }
}
