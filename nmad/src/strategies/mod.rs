//! Strategies decide what goes on the wire for a peer (seam 2).
//!
//! When a rail can take a packet, the core shows the peer's strategy everything waiting for that
//! peer — control chunks (rendezvous answers, acknowledgements) and messages (eager data or
//! rendezvous requests), as wire sizes in order — and the strategy answers with a [`Plan`]:
//! which rail, and how many of each it puts in that one packet. It also decides how the data of
//! a large message is split across rails ([`Strategy::split`]). Strategies never call drivers:
//! the core builds the packets and sends them. Selected with `NMAD_STRATEGY`.
//!
//! - [`default`]: one chunk per packet on the lowest-latency rail;
//! - [`aggreg`] (the default): every waiting chunk that fits, in one packet;
//! - [`split_balance`]: aggregation on the lowest-latency rail that is free, large messages
//!   split across rails in proportion to their bandwidth.

pub mod aggreg;
pub mod default;
pub mod split_balance;

use crate::drivers::{Caps, Profile};
use std::sync::Arc;

/// Bytes of a packet the core keeps for itself (version byte and a piggy-backed credit chunk).
pub const PACKET_RESERVE: usize = 32;

/// What a strategy knows about a rail to a peer. Rails are sorted by latency: rail 0 has the
/// lowest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RailInfo {
    pub name: String,
    pub caps: Caps,
    pub profile: Profile,
    /// The rail refused a packet during this round (its queue is full).
    pub busy: bool,
}

impl RailInfo {
    /// Bytes of chunks one packet on this rail may carry.
    pub fn room(&self) -> usize {
        self.caps.max_packet.saturating_sub(PACKET_RESERVE)
    }
}

/// One packet: on `rail`, the first `control` waiting control chunks then the first `messages`
/// waiting messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    pub rail: usize,
    pub control: usize,
    pub messages: usize,
}

/// A piece of a large message: `len` bytes at `offset`, on `rail`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    pub rail: usize,
    pub offset: u64,
    pub len: u64,
}

pub trait Strategy: Send + Sync {
    fn name(&self) -> &str;
    /// The next packet, given the wire sizes of the waiting control chunks and messages (in
    /// order; never both empty) and the rails. `None`: send nothing now (wait for more, or every
    /// rail is busy). The chunks must fit the rail's [`RailInfo::room`] (a lone chunk always
    /// fits: the core sizes eager messages for the smallest rail).
    fn pack(&self, control: &[usize], messages: &[usize], rails: &[RailInfo]) -> Option<Plan>;
    /// How `len` bytes of a large message travel: pieces covering `0..len` in order.
    fn split(&self, len: u64, rails: &[RailInfo]) -> Vec<Split> {
        let _ = rails;
        vec![Split { rail: 0, offset: 0, len }]
    }
}

/// The first rail that is not busy.
pub fn first_free(rails: &[RailInfo]) -> Option<usize> {
    rails.iter().position(|r| !r.busy)
}

/// Takes chunks from the front while they fit in `room` (at least one if any).
pub fn fill(sizes: &[usize], room: &mut usize) -> usize {
    let mut n = 0;
    for &s in sizes {
        if s > *room && n > 0 {
            break;
        }
        *room = room.saturating_sub(s);
        n += 1;
        if *room == 0 {
            break;
        }
    }
    n
}

/// A strategy by name: `default`, `aggreg`, `split_balance`.
pub fn by_name(name: &str) -> Option<Arc<dyn Strategy>> {
    match name {
        "default" => Some(Arc::new(default::Default)),
        "aggreg" => Some(Arc::new(aggreg::Aggreg)),
        "split_balance" => Some(Arc::new(split_balance::SplitBalance::default())),
        _ => None,
    }
}

/// The strategy `NMAD_STRATEGY` names (default `aggreg`).
pub fn from_env() -> Result<Arc<dyn Strategy>, String> {
    let name = std::env::var("NMAD_STRATEGY").unwrap_or_else(|_| "aggreg".into());
    by_name(name.trim())
        .ok_or_else(|| format!("NMAD_STRATEGY={name:?}: unknown strategy (default, aggreg, split_balance)"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::drivers::LargePath;

    pub(crate) fn rail(name: &str, max_packet: usize, latency_ns: u64, bandwidth_mbps: u64) -> RailInfo {
        RailInfo {
            name: name.into(),
            caps: Caps {
                max_packet,
                eager_limit: max_packet / 2,
                iovec: true,
                large: LargePath::Bulk,
                blocking: true,
            },
            profile: Profile { latency_ns, bandwidth_mbps },
            busy: false,
        }
    }

    #[test]
    fn fill_takes_what_fits_and_at_least_one() {
        let mut room = 100;
        assert_eq!(fill(&[40, 40, 40], &mut room), 2);
        let mut room = 10;
        assert_eq!(fill(&[40, 1], &mut room), 1, "a lone chunk always goes");
        let mut room = 100;
        assert_eq!(fill(&[], &mut room), 0);
    }

    #[test]
    fn strategies_are_found_by_name() {
        for n in ["default", "aggreg", "split_balance"] {
            assert_eq!(by_name(n).unwrap().name(), n);
        }
        assert!(by_name("fastest").is_none());
    }
}
