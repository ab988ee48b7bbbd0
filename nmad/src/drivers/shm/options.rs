//! The `shm` driver's settings and their environment variables:
//! - `NMAD_SHM_RING`: bytes of each ring (per direction and peer), e.g. `1M` (default), `512K`;
//!   rounded up to a power of two, between 512 KiB and 1 GiB;
//! - `NMAD_SHM_CMA`: `0` disables cross-memory attach (rendezvous data then goes through the ring).

use super::ring::{MAX_RECORD, SLOT};
use std::io;

/// Smallest ring: a quarter stays free for packets while bulk data streams, and that quarter
/// holds the largest record.
pub const MIN_RING: usize = 512 << 10;
pub const MAX_RING: usize = 1 << 30;
const _: () = assert!(MIN_RING as u64 / 4 >= MAX_RECORD + SLOT);

/// How a `shm` driver instance works.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShmOptions {
    /// Data bytes of each ring this process creates (a power of two in [`MIN_RING`, `MAX_RING`]).
    pub ring_bytes: usize,
    /// Rendezvous data is read from the sender's memory (`process_vm_readv`).
    pub cma: bool,
}

impl Default for ShmOptions {
    fn default() -> Self {
        ShmOptions { ring_bytes: 1 << 20, cma: true }
    }
}

impl ShmOptions {
    /// The defaults, changed by `NMAD_SHM_RING` and `NMAD_SHM_CMA`.
    pub fn from_env() -> io::Result<ShmOptions> {
        let mut o = ShmOptions::default();
        if let Ok(v) = std::env::var("NMAD_SHM_RING") {
            o.ring_bytes = parse_ring(&v).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        }
        if let Ok(v) = std::env::var("NMAD_SHM_CMA") {
            o.cma = match v.trim() {
                "0" | "no" | "off" | "false" => false,
                "1" | "yes" | "on" | "true" => true,
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("NMAD_SHM_CMA={v}: expected 0 or 1"),
                    ));
                }
            };
        }
        Ok(o)
    }
}

/// `1048576`, `1024K`, `1M`, `1G` (binary units) → a valid ring size.
pub(crate) fn parse_ring(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        _ => return Err(format!("NMAD_SHM_RING={s}: unknown unit (use K, M or G)")),
    };
    let n: usize = digits.parse().map_err(|_| format!("NMAD_SHM_RING={s}: expected a size such as 1M"))?;
    let n = n.checked_shl(shift).filter(|&b| b >> shift == n).unwrap_or(usize::MAX);
    valid_ring(n.checked_next_power_of_two().unwrap_or(usize::MAX) as u64)
        .map(|b| b as usize)
        .map_err(|e| format!("NMAD_SHM_RING={s}: {e}"))
}

/// A ring size both sides accept (also checked on the size a connecting peer chose).
pub(crate) fn valid_ring(bytes: u64) -> Result<u64, String> {
    if !bytes.is_power_of_two() || bytes < MIN_RING as u64 || bytes > MAX_RING as u64 {
        return Err(format!(
            "a ring must be a power of two between {MIN_RING} and {MAX_RING} bytes, not {bytes}"
        ));
    }
    Ok(bytes)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn ring_sizes_parse_round_up_and_stay_in_bounds() {
        assert_eq!(parse_ring("1M"), Ok(1 << 20));
        assert_eq!(parse_ring("1048576"), Ok(1 << 20));
        assert_eq!(parse_ring("600k"), Ok(1 << 20));
        assert!(parse_ring(" 2GiB ").unwrap_err().contains("between"));
        assert!(parse_ring("64K").is_err());
        assert!(parse_ring("1T").is_err());
        assert!(parse_ring("lots").is_err());
        assert!(parse_ring("99999999999999999999G").is_err());
        assert!(valid_ring(3 << 20).is_err());
    }
}
