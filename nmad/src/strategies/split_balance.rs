//! `split_balance`: multi-rail. Packets (small messages, control) go on the lowest-latency rail
//! that is free, aggregated; the data of a large message is split across every rail in
//! proportion to its bandwidth (pieces aligned to 4 KiB), so the rails finish together. Messages
//! below `min_split` bytes are not split: they go on the highest-bandwidth rail.

use super::{Plan, RailInfo, Split, Strategy, aggreg::aggregate, first_free};

pub struct SplitBalance {
    pub min_split: u64,
}

impl Default for SplitBalance {
    fn default() -> Self {
        SplitBalance { min_split: 256 << 10 }
    }
}

const ALIGN: u64 = 4096;

impl Strategy for SplitBalance {
    fn name(&self) -> &str {
        "split_balance"
    }

    fn pack(&self, control: &[usize], messages: &[usize], rails: &[RailInfo]) -> Option<Plan> {
        Some(aggregate(control, messages, rails, first_free(rails)?))
    }

    fn split(&self, len: u64, rails: &[RailInfo]) -> Vec<Split> {
        let bw = |r: &RailInfo| r.profile.bandwidth_mbps.max(1);
        if rails.len() < 2 || len < self.min_split {
            let best = (0..rails.len()).max_by_key(|&i| (bw(&rails[i]), std::cmp::Reverse(i))).unwrap_or(0);
            return vec![Split { rail: best, offset: 0, len }];
        }
        let total: u64 = rails.iter().map(bw).sum();
        let mut out = Vec::with_capacity(rails.len());
        let mut offset = 0;
        for (i, r) in rails.iter().enumerate() {
            let share = if i + 1 == rails.len() {
                len - offset
            } else {
                let s = (u128::from(len) * u128::from(bw(r)) / u128::from(total)) as u64;
                (s / ALIGN * ALIGN).min(len - offset)
            };
            if share > 0 {
                out.push(Split { rail: i, offset, len: share });
                offset += share;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategies::tests::rail;

    #[test]
    fn large_messages_split_by_bandwidth_small_ones_go_on_the_fastest() {
        let rails = vec![rail("tcp:a", 65536, 20_000, 1000), rail("tcp:b", 65536, 30_000, 3000)];
        let s = SplitBalance::default();
        let pieces = s.split(8 << 20, &rails);
        assert_eq!(pieces.len(), 2);
        assert_eq!(pieces[0], Split { rail: 0, offset: 0, len: (2 << 20) });
        assert_eq!(pieces[1], Split { rail: 1, offset: 2 << 20, len: 6 << 20 });
        assert_eq!(s.split(1000, &rails), vec![Split { rail: 1, offset: 0, len: 1000 }]);
        let odd = s.split((1 << 20) + 3, &rails);
        assert_eq!(odd.iter().map(|p| p.len).sum::<u64>(), (1 << 20) + 3);
        assert_eq!(odd[0].len % ALIGN, 0);
    }

    #[test]
    fn packets_take_the_lowest_latency_free_rail() {
        let mut rails = vec![rail("shm", 65536, 300, 8000), rail("tcp", 65536, 20_000, 1000)];
        let s = SplitBalance::default();
        assert_eq!(s.pack(&[], &[100, 100], &rails), Some(Plan { rail: 0, control: 0, messages: 2 }));
        rails[0].busy = true;
        assert_eq!(s.pack(&[], &[100], &rails).map(|p| p.rail), Some(1));
    }
}
