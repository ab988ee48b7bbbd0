//! The handshake of a partitioned channel: at `MPI_Psend_init` the sender sends, with tag
//! [`tags::partitioned_setup`] of the MPI tag, its channel number, its partition count and the
//! total bytes; `MPI_Precv_init` posts the matching receive. Handshakes of the same (source,
//! tag, communicator) match in initialization order, which is MPI's matching rule for
//! partitioned operations; the receiver then knows where each sender partition goes.
//!
//! Owns the handshake's wire format; it must not start operations.

use super::geometry::Geometry;
use crate::error::{Error, Result};

/// Bytes of a handshake: channel (u32), partitions (u32), bytes per partition (u64), little
/// endian.
pub(crate) const LEN: usize = 16;

/// What the receiver learns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Setup {
    pub(crate) channel: u32,
    pub(crate) sender: Geometry,
}

impl Setup {
    pub(crate) fn encode(&self) -> [u8; LEN] {
        let mut b = [0u8; LEN];
        b[..4].copy_from_slice(&self.channel.to_le_bytes());
        b[4..8].copy_from_slice(&(self.sender.parts as u32).to_le_bytes());
        b[8..].copy_from_slice(&(self.sender.part_bytes as u64).to_le_bytes());
        b
    }

    /// The handshake in `b` (`len` bytes arrived), checked against the receiver's total.
    pub(crate) fn decode(b: &[u8; LEN], len: u64, receiver: &Geometry) -> Result<Setup> {
        let word = |r: std::ops::Range<usize>| b[r].iter().rev().fold(0u64, |a, &x| a << 8 | u64::from(x));
        let (channel, parts, part_bytes) = (word(0..4) as u32, word(4..8) as usize, word(8..16) as usize);
        if len != LEN as u64 || channel == 0 || parts == 0 {
            return Err(Error::intern(format!("partitioned handshake of {len} bytes is garbled")));
        }
        let sender = Geometry { parts, part_bytes };
        if sender.total() != receiver.total() {
            return Err(Error::truncate(format!(
                "the partitioned send holds {} bytes ({parts} partitions of {part_bytes}), the receive {}",
                sender.total(),
                receiver.total()
            )));
        }
        Ok(Setup { channel, sender })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorClass;

    #[test]
    fn round_trip_and_size_mismatch() {
        let s = Setup { channel: 9, sender: Geometry { parts: 4, part_bytes: 6 } };
        let recv = Geometry { parts: 3, part_bytes: 8 };
        assert_eq!(Setup::decode(&s.encode(), 16, &recv).unwrap(), s);
        let small = Geometry { parts: 3, part_bytes: 7 };
        assert_eq!(Setup::decode(&s.encode(), 16, &small).unwrap_err().class(), ErrorClass::Truncate);
        assert_eq!(Setup::decode(&s.encode(), 15, &recv).unwrap_err().class(), ErrorClass::Intern);
    }
}
