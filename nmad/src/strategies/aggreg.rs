//! `aggreg` (the default): everything waiting for the peer that fits goes in one packet —
//! control chunks first (they unblock the peer), then messages in order — on the lowest-latency
//! free rail. While a rail is busy, chunks accumulate and leave together when it frees up.

use super::{Plan, RailInfo, Strategy, fill, first_free};

pub struct Aggreg;

/// Aggregates on `rail`.
pub(crate) fn aggregate(control: &[usize], messages: &[usize], rails: &[RailInfo], rail: usize) -> Plan {
    let mut room = rails[rail].room();
    let c = fill(control, &mut room);
    let m = if c > 0 && room == 0 { 0 } else { fill_after(messages, &mut room, c > 0) };
    Plan { rail, control: c, messages: m }
}

/// Like `fill`, but takes nothing that does not fit if something is already in the packet.
fn fill_after(sizes: &[usize], room: &mut usize, nonempty: bool) -> usize {
    if nonempty && sizes.first().is_some_and(|&s| s > *room) {
        return 0;
    }
    fill(sizes, room)
}

impl Strategy for Aggreg {
    fn name(&self) -> &str {
        "aggreg"
    }

    fn pack(&self, control: &[usize], messages: &[usize], rails: &[RailInfo]) -> Option<Plan> {
        Some(aggregate(control, messages, rails, first_free(rails)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategies::tests::rail;

    #[test]
    fn everything_that_fits_in_one_packet() {
        let rails = vec![rail("shm", 1032, 300, 8000)]; // room 1000
        let s = Aggreg;
        assert_eq!(
            s.pack(&[10, 10], &[300, 300, 300, 300], &rails),
            Some(Plan { rail: 0, control: 2, messages: 3 })
        );
        assert_eq!(s.pack(&[], &[900, 200], &rails), Some(Plan { rail: 0, control: 0, messages: 1 }));
        assert_eq!(s.pack(&[990], &[20], &rails), Some(Plan { rail: 0, control: 1, messages: 0 }));
        assert_eq!(
            s.pack(&[], &[5000], &rails),
            Some(Plan { rail: 0, control: 0, messages: 1 }),
            "a lone chunk"
        );
    }
}
