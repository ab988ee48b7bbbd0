//! Tag matching for one session: posted receives and unexpected messages, with MPI's order.
//!
//! Posted receives sit in a per-source list or in the any-source list; a posting counter orders
//! the two, so a message takes the *earliest posted* receive that matches it. Unexpected messages
//! sit in per-source lists in arrival order (which is the senders' order: the session restores
//! sequence order before matching); an any-source receive takes the earliest arrival. Matching
//! is `(message tag ^ tag) & mask == 0`.
//!
//! Pure data structures: no locks, no I/O (the session holds the lock; the core moves data).

use crate::drivers::PeerId;
use std::collections::VecDeque;

/// What arrived before a receive was posted.
#[derive(Debug)]
pub(crate) struct Unexpected {
    pub(crate) source: PeerId,
    pub(crate) tag: u64,
    pub(crate) arrival: u64,
    pub(crate) body: Body,
}

#[derive(Debug)]
pub(crate) enum Body {
    /// The whole message (copied out of the packet), and the cookie to ACK for a synchronous send.
    Eager { data: super::buffers::Kept, sync_cookie: Option<u64> },
    /// A rendezvous request: the data is still at the sender.
    Rdv { total: u64, cookie: u64, header: Vec<u8>, remote: Option<Remote> },
}

/// Sender memory announced for a direct read: the rail (of this gate) that exposed it, and the
/// key its driver gave.
#[derive(Clone, Debug)]
pub(crate) struct Remote {
    pub(crate) rail: usize,
    pub(crate) key: Vec<u8>,
}

impl Remote {
    /// Bytes it holds (for the unexpected budget).
    pub(crate) fn footprint(&self) -> u64 {
        8 + self.key.len() as u64
    }
}

impl Unexpected {
    /// The message's length.
    pub(crate) fn len(&self) -> u64 {
        match &self.body {
            Body::Eager { data, .. } => data.len() as u64,
            Body::Rdv { total, .. } => *total,
        }
    }

    /// Bytes it holds in memory (counted against the unexpected budget).
    pub(crate) fn footprint(&self) -> u64 {
        64 + match &self.body {
            Body::Eager { data, .. } => data.len() as u64,
            Body::Rdv { header, remote, .. } => {
                header.len() as u64 + remote.as_ref().map_or(0, Remote::footprint)
            }
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Posted<R> {
    req: R,
    tag: u64,
    mask: u64,
    order: u64,
}

impl<R> Posted<R> {
    fn accepts(&self, tag: u64) -> bool {
        (tag ^ self.tag) & self.mask == 0
    }
}

/// Takes the `i`th posted receive out of `q` (usually the first: a plain pop, no shifting).
fn take<R>(q: &mut VecDeque<Posted<R>>, i: usize) -> Option<R> {
    if i == 0 { q.pop_front() } else { q.remove(i) }.map(|p| p.req)
}

/// The index of the earliest receive of `q` that accepts `tag`. The usual answer, the front
/// or an empty list, costs no iterator over the deque's two halves.
#[inline]
fn first_accepting<R>(q: &VecDeque<Posted<R>>, tag: u64) -> Option<usize> {
    match q.front() {
        None => None,
        Some(p) if p.accepts(tag) => Some(0),
        Some(_) => q.iter().skip(1).position(|p| p.accepts(tag)).map(|i| i + 1),
    }
}

fn tag_matches(msg_tag: u64, tag: u64, mask: u64) -> bool {
    (msg_tag ^ tag) & mask == 0
}

#[derive(Debug)]
struct PerSource<R> {
    posted: VecDeque<Posted<R>>,
    unexpected: VecDeque<Unexpected>,
}

impl<R> Default for PerSource<R> {
    fn default() -> Self {
        PerSource { posted: VecDeque::new(), unexpected: VecDeque::new() }
    }
}

/// Posted receives (handles `R`) and unexpected messages of one session.
#[derive(Debug)]
pub(crate) struct Matching<R> {
    any: VecDeque<Posted<R>>,
    sources: Vec<PerSource<R>>,
    next_order: u64,
    next_arrival: u64,
    unexpected_count: usize,
}

impl<R: Copy + PartialEq> Matching<R> {
    pub(crate) fn new() -> Matching<R> {
        Matching {
            any: VecDeque::new(),
            sources: Vec::new(),
            next_order: 0,
            next_arrival: 0,
            unexpected_count: 0,
        }
    }

    fn source(&mut self, p: PeerId) -> &mut PerSource<R> {
        let i = p as usize;
        if i >= self.sources.len() {
            self.sources.resize_with(i + 1, PerSource::default);
        }
        &mut self.sources[i]
    }

    /// Number of unexpected messages held.
    pub(crate) fn unexpected_len(&self) -> usize {
        self.unexpected_count
    }

    /// Posts a receive, unless an unexpected message matches: then that message is taken out
    /// and returned (and the receive is not posted).
    pub(crate) fn post(&mut self, req: R, source: Option<PeerId>, tag: u64, mask: u64) -> Option<Unexpected> {
        if let Some(u) = self.take_unexpected(source, tag, mask) {
            return Some(u);
        }
        let p = Posted { req, tag, mask, order: self.next_order };
        self.next_order += 1;
        match source {
            Some(s) => self.source(s).posted.push_back(p),
            None => self.any.push_back(p),
        }
        None
    }

    /// Where the earliest matching unexpected message is: (source, index).
    fn find_unexpected(&self, source: Option<PeerId>, tag: u64, mask: u64) -> Option<(usize, usize)> {
        let first = |s: &PerSource<R>| s.unexpected.iter().position(|u| tag_matches(u.tag, tag, mask));
        match source {
            Some(s) => {
                let i = s as usize;
                self.sources.get(i).and_then(first).map(|k| (i, k))
            }
            None => self
                .sources
                .iter()
                .enumerate()
                .filter_map(|(i, s)| first(s).map(|k| (i, k)))
                .min_by_key(|&(i, k)| self.sources[i].unexpected[k].arrival),
        }
    }

    /// Takes the earliest matching unexpected message (matched probe, or posting).
    pub(crate) fn take_unexpected(
        &mut self,
        source: Option<PeerId>,
        tag: u64,
        mask: u64,
    ) -> Option<Unexpected> {
        let (i, k) = self.find_unexpected(source, tag, mask)?;
        self.unexpected_count -= 1;
        self.sources[i].unexpected.remove(k)
    }

    /// Looks at the earliest matching unexpected message without taking it.
    pub(crate) fn probe(&self, source: Option<PeerId>, tag: u64, mask: u64) -> Option<&Unexpected> {
        let (i, k) = self.find_unexpected(source, tag, mask)?;
        self.sources[i].unexpected.get(k)
    }

    /// A message from `source` with `tag` arrives (in sequence order): takes the earliest posted
    /// receive that matches it.
    pub(crate) fn arrive(&mut self, source: PeerId, tag: u64) -> Option<R> {
        let any = first_accepting(&self.any, tag);
        let own = self.sources.get(source as usize).and_then(|s| first_accepting(&s.posted, tag));
        match (own, any) {
            (Some(o), Some(a)) if self.any[a].order < self.sources[source as usize].posted[o].order => {
                take(&mut self.any, a)
            }
            (Some(o), _) => take(&mut self.sources[source as usize].posted, o),
            (None, Some(a)) => take(&mut self.any, a),
            (None, None) => None,
        }
    }

    /// Keeps a message nobody was waiting for (after `arrive` returned `None`).
    pub(crate) fn store(&mut self, mut u: Unexpected) {
        u.arrival = self.next_arrival;
        self.next_arrival += 1;
        self.unexpected_count += 1;
        self.source(u.source).unexpected.push_back(u);
    }

    /// Removes a posted receive. Returns whether it was still posted.
    pub(crate) fn cancel(&mut self, req: R) -> bool {
        for list in std::iter::once(&mut self.any).chain(self.sources.iter_mut().map(|s| &mut s.posted)) {
            if let Some(i) = list.iter().position(|p| p.req == req) {
                list.remove(i);
                return true;
            }
        }
        false
    }

    /// Removes every receive posted for `source` specifically (it failed).
    pub(crate) fn drain_posted_for(&mut self, source: PeerId) -> Vec<R> {
        match self.sources.get_mut(source as usize) {
            Some(s) => s.posted.drain(..).map(|p| p.req).collect(),
            None => Vec::new(),
        }
    }

    /// The receives posted for any source.
    pub(crate) fn posted_any(&self) -> impl Iterator<Item = R> + '_ {
        self.any.iter().map(|p| p.req)
    }

    /// Removes every unexpected message from `source` (it broke the protocol).
    pub(crate) fn drain_unexpected_from(&mut self, source: PeerId) -> Vec<Unexpected> {
        let Some(s) = self.sources.get_mut(source as usize) else { return Vec::new() };
        self.unexpected_count -= s.unexpected.len();
        s.unexpected.drain(..).collect()
    }

    /// Removes every posted receive (the session closes).
    pub(crate) fn drain_all_posted(&mut self) -> Vec<R> {
        let mut v: Vec<R> = self.any.drain(..).map(|p| p.req).collect();
        for s in &mut self.sources {
            v.extend(s.posted.drain(..).map(|p| p.req));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(source: PeerId, tag: u64, data: &[u8]) -> Unexpected {
        Unexpected { source, tag, arrival: 0, body: Body::Eager { data: data.into(), sync_cookie: None } }
    }

    const ALL: u64 = u64::MAX;

    #[test]
    fn the_earliest_posted_receive_wins_between_specific_and_any_source() {
        let mut m = Matching::new();
        assert!(m.post(1, None, 5, ALL).is_none());
        assert!(m.post(2, Some(3), 5, ALL).is_none());
        assert_eq!(m.arrive(3, 5), Some(1), "posted first, any source");
        assert_eq!(m.arrive(3, 5), Some(2));
        assert_eq!(m.arrive(3, 5), None);
        assert!(m.post(3, Some(3), 5, ALL).is_none());
        assert!(m.post(4, None, 5, ALL).is_none());
        assert_eq!(m.arrive(3, 5), Some(3), "posted first, specific source");
        assert_eq!(m.arrive(0, 5), Some(4), "another source only matches the any-source receive");
    }

    #[test]
    fn masks_select_tag_bits() {
        let mut m = Matching::new();
        assert!(m.post(1, Some(0), 0x1200, 0xff00).is_none());
        assert_eq!(m.arrive(0, 0x1300), None);
        assert_eq!(m.arrive(0, 0x12ab), Some(1));
        m.store(msg(0, 0xabcd_0001, b"x"));
        assert!(m.probe(Some(0), 0, 0xffff).is_none());
        assert_eq!(m.probe(None, 1, 0xffff).map(|u| u.tag), Some(0xabcd_0001));
        assert!(m.post(2, None, 0, 0).is_some(), "mask 0 matches every tag");
    }

    #[test]
    fn unexpected_messages_are_taken_in_order_per_source_and_by_arrival_for_any() {
        let mut m: Matching<u32> = Matching::new();
        m.store(msg(1, 7, b"a"));
        m.store(msg(0, 7, b"b"));
        m.store(msg(1, 7, b"c"));
        let body = |u: Option<Unexpected>| match u.map(|u| u.body) {
            Some(Body::Eager { data, .. }) => data.to_vec(),
            _ => panic!("no message"),
        };
        assert_eq!(m.probe(None, 7, ALL).map(|u| u.source), Some(1), "probe does not consume");
        assert_eq!(body(m.post(9, Some(0), 7, ALL)), b"b");
        assert_eq!(body(m.post(9, None, 7, ALL)), b"a", "earliest arrival");
        assert_eq!(body(m.post(9, None, 7, ALL)), b"c");
        assert!(m.post(9, None, 7, ALL).is_none(), "posted now");
        assert_eq!(m.unexpected_len(), 0);
    }

    #[test]
    fn cancel_removes_only_posted_receives() {
        let mut m: Matching<u32> = Matching::new();
        m.post(1, Some(2), 0, ALL);
        m.post(2, None, 0, ALL);
        assert!(m.cancel(1));
        assert!(!m.cancel(1), "already cancelled");
        assert_eq!(m.arrive(2, 0), Some(2));
        assert!(!m.cancel(2), "already matched");
        m.post(3, Some(4), 0, ALL);
        m.post(4, None, 0, ALL);
        assert_eq!(m.drain_posted_for(4), vec![3]);
        assert_eq!(m.drain_all_posted(), vec![4]);
    }

    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        Post(Option<PeerId>, u64, u64),
        Arrive(PeerId, u64),
        Cancel(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        let src = 0u32..3;
        prop_oneof![
            (prop::option::of(src.clone()), 0u64..4, prop_oneof![Just(u64::MAX), Just(0u64), Just(2u64)])
                .prop_map(|(s, t, m)| Op::Post(s, t, m)),
            (src, 0u64..4).prop_map(|(s, t)| Op::Arrive(s, t)),
            (0usize..50).prop_map(Op::Cancel),
        ]
    }

    proptest! {
        /// Against a naive model: a message takes the earliest posted matching receive; a receive
        /// takes the earliest arrived matching message; cancel removes only posted receives.
        #[test]
        fn matching_agrees_with_the_naive_model(ops in prop::collection::vec(op(), 0..200)) {
            let mut m: Matching<usize> = Matching::new();
            let mut posted: Vec<(usize, Option<PeerId>, u64, u64)> = Vec::new();
            let mut unexpected: Vec<(PeerId, u64, usize)> = Vec::new();
            let (mut next_req, mut next_msg) = (0usize, 0usize);
            for o in ops {
                match o {
                    Op::Post(src, tag, mask) => {
                        let id = next_req;
                        next_req += 1;
                        let want = unexpected.iter().position(|&(s, t, _)| src.is_none_or(|x| x == s) && (t ^ tag) & mask == 0);
                        let got = m.post(id, src, tag, mask);
                        match want {
                            Some(i) => {
                                let (s, t, msg) = unexpected.remove(i);
                                let u = got.expect("model found an unexpected message");
                                prop_assert_eq!((u.source, u.tag, u.len() as usize), (s, t, msg));
                            }
                            None => {
                                prop_assert!(got.is_none());
                                posted.push((id, src, tag, mask));
                            }
                        }
                    }
                    Op::Arrive(src, tag) => {
                        let msg = next_msg;
                        next_msg += 1;
                        let want = posted.iter().position(|&(_, s, t, mk)| s.is_none_or(|x| x == src) && (t ^ tag) & mk == 0);
                        let got = m.arrive(src, tag);
                        match want {
                            Some(i) => prop_assert_eq!(got, Some(posted.remove(i).0)),
                            None => {
                                prop_assert_eq!(got, None);
                                m.store(Unexpected { source: src, tag, arrival: 0, body: Body::Eager { data: vec![0; msg][..].into(), sync_cookie: None } });
                                unexpected.push((src, tag, msg));
                            }
                        }
                    }
                    Op::Cancel(id) => {
                        let want = posted.iter().position(|p| p.0 == id);
                        prop_assert_eq!(m.cancel(id), want.is_some());
                        if let Some(i) = want {
                            posted.remove(i);
                        }
                    }
                }
                prop_assert_eq!(m.unexpected_len(), unexpected.len());
            }
        }
    }
}
