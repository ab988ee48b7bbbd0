//! The round-trip estimate and the retransmission timeout it gives (RFC 6298's smoothing:
//! `srtt` gains 1/8 of each sample's difference, `rttvar` 1/4, RTO = srtt + 4·rttvar), bounded
//! by [`Config`](super::Config)'s floor and ceiling. On loopback a round trip is microseconds
//! where TCP's minimum timeout is 200 ms: the floor here is the receiver's ACK delay plus the
//! slack of a progression thread's tick, not a constant from the WAN.

use super::Micros;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rtt {
    srtt: Option<Micros>,
    rttvar: Micros,
    latest: Micros,
    min_rto: Micros,
    max_rto: Micros,
    initial_rto: Micros,
}

impl Rtt {
    pub fn new(min_rto: Micros, max_rto: Micros, initial_rto: Micros) -> Rtt {
        Rtt { srtt: None, rttvar: 0, latest: 0, min_rto, max_rto, initial_rto }
    }

    /// Takes one measured round trip.
    pub fn sample(&mut self, rtt: Micros) {
        self.latest = rtt;
        match self.srtt {
            None => {
                self.srtt = Some(rtt);
                self.rttvar = rtt / 2;
            }
            Some(s) => {
                self.rttvar = (3 * self.rttvar + s.abs_diff(rtt)) / 4;
                self.srtt = Some((7 * s + rtt) / 8);
            }
        }
    }

    /// The smoothed round trip (0 before any sample).
    pub fn smoothed(&self) -> Micros {
        self.srtt.unwrap_or(0)
    }

    /// The last sample.
    pub fn latest(&self) -> Micros {
        self.latest
    }

    /// The retransmission timeout, before backoff.
    pub fn rto(&self) -> Micros {
        match self.srtt {
            None => self.initial_rto,
            Some(s) => (s + 4 * self.rttvar).clamp(self.min_rto, self.max_rto),
        }
    }

    /// The timeout after `backoff` consecutive expiries (doubled each time, up to the ceiling).
    pub fn rto_backed_off(&self, backoff: u32) -> Micros {
        self.rto().saturating_mul(1 << backoff.min(16)).min(self.max_rto)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeout_follows_samples_within_its_bounds() {
        let mut r = Rtt::new(100, 10_000, 5_000);
        assert_eq!(r.rto(), 5_000, "no sample yet");
        r.sample(40);
        assert_eq!(r.smoothed(), 40);
        assert_eq!(r.rto(), 120, "40 + 4·20");
        for _ in 0..50 {
            r.sample(10);
        }
        assert_eq!(r.rto(), 100, "the floor");
        for _ in 0..50 {
            r.sample(50_000);
        }
        assert_eq!(r.rto(), 10_000, "the ceiling");
        assert_eq!(r.rto_backed_off(3), 10_000);
        let mut r = Rtt::new(100, 10_000, 5_000);
        r.sample(200);
        assert_eq!(r.rto_backed_off(2), 4 * 600);
    }
}
