//! `default`: one chunk per packet, control first, on the lowest-latency free rail; large
//! messages on that rail too. The baseline the other strategies are measured against.

use super::{Plan, RailInfo, Strategy, first_free};

pub struct Default;

impl Strategy for Default {
    fn name(&self) -> &str {
        "default"
    }

    fn pack(&self, control: &[usize], messages: &[usize], rails: &[RailInfo]) -> Option<Plan> {
        let rail = first_free(rails)?;
        Some(if control.is_empty() {
            Plan { rail, control: 0, messages: messages.len().min(1) }
        } else {
            Plan { rail, control: 1, messages: 0 }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategies::tests::rail;

    #[test]
    fn one_chunk_per_packet_control_first() {
        let mut rails = vec![rail("shm", 1000, 300, 8000)];
        let s = Default;
        assert_eq!(s.pack(&[10, 10], &[20], &rails), Some(Plan { rail: 0, control: 1, messages: 0 }));
        assert_eq!(s.pack(&[], &[20, 20], &rails), Some(Plan { rail: 0, control: 0, messages: 1 }));
        rails[0].busy = true;
        assert_eq!(s.pack(&[], &[20], &rails), None);
    }
}
