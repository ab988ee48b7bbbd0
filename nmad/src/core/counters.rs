//! What the core counts beyond the unexpected-memory budget: messages by protocol, flow-control
//! stalls, unexpected arrivals, and traffic per driver. Every update is one relaxed atomic add on
//! a path that already does the work counted (no lock, no allocation).
//!
//! Owns the counters and their snapshot types; the places that count are the protocol's (gate,
//! session).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Packets and bytes one driver sent, and bytes it brought in.
#[derive(Debug, Default)]
struct PerDriver {
    packets: AtomicU64,
    bytes: AtomicU64,
    received: AtomicU64,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) eager_sent: AtomicU64,
    pub(crate) rdv_sent: AtomicU64,
    pub(crate) rdv_written: AtomicU64,
    pub(crate) credit_stalls: AtomicU64,
    pub(crate) unexpected_messages: AtomicU64,
    drivers: Box<[PerDriver]>,
}

impl Counters {
    pub(crate) fn new(drivers: usize) -> Counters {
        Counters { drivers: (0..drivers).map(|_| PerDriver::default()).collect(), ..Counters::default() }
    }

    /// Driver `driver` sent a packet, or a rendezvous piece, of `bytes`.
    pub(crate) fn sent(&self, driver: usize, bytes: usize) {
        if let Some(d) = self.drivers.get(driver) {
            d.packets.fetch_add(1, Relaxed);
            d.bytes.fetch_add(bytes as u64, Relaxed);
        }
    }

    /// Driver `driver` brought in `bytes`: a packet, a rendezvous piece, or data it read from
    /// the sender's memory.
    pub(crate) fn received(&self, driver: usize, bytes: usize) {
        if let Some(d) = self.drivers.get(driver) {
            d.received.fetch_add(bytes as u64, Relaxed);
        }
    }

    /// Packets sent, bytes sent, bytes received.
    pub(crate) fn driver(&self, driver: usize) -> (u64, u64, u64) {
        self.drivers
            .get(driver)
            .map_or((0, 0, 0), |d| (d.packets.load(Relaxed), d.bytes.load(Relaxed), d.received.load(Relaxed)))
    }
}

/// Traffic of one driver ([`crate::Nmad::driver_stats`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DriverStats {
    /// `self`, `shm`, `tcp`.
    pub name: String,
    /// Packets and rendezvous data pieces handed to the driver, and their bytes (headers included).
    pub packets: u64,
    pub bytes: u64,
    /// Bytes received: packets, rendezvous pieces, and rendezvous data read from the sender's
    /// memory (shm's `process_vm_readv`, which the sender never sends) or written by it (counted
    /// by both sides).
    pub bytes_received: u64,
    /// The acknowledgement layer's work (retransmissions, NACKs, duplicates, round trip,
    /// window), for drivers over a lossy transport (udp).
    pub protocol: Option<crate::reliable::StatsSnapshot>,
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn per_driver_traffic_adds_up_and_ignores_unknown_drivers() {
        let c = Counters::new(2);
        c.sent(1, 100);
        c.sent(1, 28);
        c.sent(7, 5);
        c.received(0, 64);
        assert_eq!(c.driver(0), (0, 0, 64));
        assert_eq!(c.driver(1), (2, 128, 0));
        assert_eq!(c.driver(7), (0, 0, 0));
    }
}
