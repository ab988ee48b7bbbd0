//! Cross-crate and multi-process integration tests live in `tests/tests/`; the programs they start
//! live in `src/bin/` (Rust) and `c/` (C). This library holds what those programs share:
//! deterministic random schedules and self-checking payloads, and running jobs from tests.

pub mod flood;
pub mod jobs;

/// A small, fast, seedable generator (xorshift64*), so every rank derives the same schedule.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Fills `buf` with the payload of message `id` (its first 8 bytes are `id` when it has room).
pub fn fill_payload(id: u64, buf: &mut [u8]) {
    let mut r = Rng::new(id ^ 0x5eed);
    let mut chunks = buf.chunks_exact_mut(8);
    for c in &mut chunks {
        c.copy_from_slice(&r.next_u64().to_le_bytes());
    }
    let rest = chunks.into_remainder();
    let last = r.next_u64().to_le_bytes();
    rest.copy_from_slice(&last[..rest.len()]);
    if buf.len() >= 8 {
        buf[..8].copy_from_slice(&id.to_le_bytes());
    }
}

/// Whether `buf` is exactly the payload of message `id`.
pub fn check_payload(id: u64, buf: &[u8]) -> bool {
    let mut want = vec![0u8; buf.len()];
    fill_payload(id, &mut want);
    want == buf
}

/// Message sizes for stress tests: mostly small, some medium, a few up to `max` (log-uniform
/// within each class), so that 100k messages stay within seconds.
pub fn stress_size(r: &mut Rng, max: u64) -> u64 {
    let class = r.below(1000);
    let (lo, hi) = match class {
        0..950 => (0u64, 4096u64.min(max)),
        950..999 => (4096.min(max), (256 << 10).min(max)),
        _ => ((256 << 10).min(max), max),
    };
    if hi <= lo {
        return lo;
    }
    // Log-uniform in lo..=hi (0 included for the small class).
    let bits = 64 - (hi - lo).leading_zeros() as u64;
    let b = r.below(bits + 1);
    lo + r.below((1u64 << b).min(hi - lo + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_identify_their_message() {
        let mut a = vec![0u8; 100];
        fill_payload(7, &mut a);
        assert!(check_payload(7, &a) && !check_payload(8, &a));
        let mut tiny = [0u8; 3];
        fill_payload(7, &mut tiny);
        assert!(check_payload(7, &tiny));
    }

    #[test]
    fn stress_sizes_cover_the_range_with_a_small_mean() {
        let mut r = Rng::new(1);
        let v: Vec<u64> = (0..100_000).map(|_| stress_size(&mut r, 8 << 20)).collect();
        assert!(v.contains(&0));
        assert!(v.iter().any(|&s| s > 4 << 20));
        assert!(v.iter().all(|&s| s <= 8 << 20));
        let mean = v.iter().sum::<u64>() / v.len() as u64;
        assert!(mean < 64 << 10, "mean {mean}");
    }
}
