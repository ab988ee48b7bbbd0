//! A cheap monotonic clock for per-poll bookkeeping (poll gaps, spin marks).
//!
//! Every poll of every source is stamped; with `Instant::now` (a vDSO call, 20–40 ns) the stamps
//! cost more than an idle poll round. On x86-64 with an invariant TSC the time-stamp counter is
//! read directly (a few ns) and scaled by a rate measured once per process against `Instant`;
//! elsewhere this falls back to `Instant`. Owns nothing else; not for deadlines (those use
//! `Instant`, whose accuracy does not depend on a calibration).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

struct Calibration {
    start: Instant,
    /// TSC ticks → ns as a 32.32 fixed-point multiplier, with the tick count at `start`.
    #[cfg(target_arch = "x86_64")]
    tsc: Option<(u64, u64)>,
}

fn calibration() -> &'static Calibration {
    static C: OnceLock<Calibration> = OnceLock::new();
    C.get_or_init(|| {
        let start = Instant::now();
        #[cfg(target_arch = "x86_64")]
        {
            Calibration { start, tsc: tsc_rate(start) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        Calibration { start }
    })
}

/// Nanoseconds since the first use of this clock in the process (monotonic).
#[inline]
pub fn now_ns() -> u64 {
    let c = calibration();
    #[cfg(target_arch = "x86_64")]
    if let Some((t0, mult)) = c.tsc {
        let dt = rdtsc().saturating_sub(t0);
        return ((dt as u128 * mult as u128) >> 32) as u64;
    }
    c.start.elapsed().as_nanos() as u64
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn rdtsc() -> u64 {
    // SAFETY: RDTSC is available on every x86-64 CPU and has no memory effects.
    unsafe { std::arch::x86_64::_rdtsc() }
}

/// Whether the TSC ticks at a constant rate in every power state and on every CPU.
#[cfg(target_arch = "x86_64")]
fn invariant_tsc() -> bool {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("flags")).map(str::to_owned))
        .is_some_and(|f| {
            let has = |flag: &str| f.split_whitespace().any(|w| w == flag);
            has("constant_tsc") && has("nonstop_tsc")
        })
}

/// (ticks at `start`, ns-per-tick multiplier) measured over ~2 ms, or `None` without an
/// invariant TSC.
#[cfg(target_arch = "x86_64")]
fn tsc_rate(start: Instant) -> Option<(u64, u64)> {
    if std::env::var_os("PIOMAN_NO_TSC").is_some() || !invariant_tsc() {
        return None;
    }
    let t0 = rdtsc();
    let d0 = start.elapsed();
    let span = Duration::from_millis(2);
    let (t1, d1) = loop {
        let d = start.elapsed();
        if d >= d0 + span {
            break (rdtsc(), d);
        }
        std::hint::spin_loop();
    };
    let ticks = t1.checked_sub(t0).filter(|&t| t > 0)?;
    let ns = (d1 - d0).as_nanos() as u64;
    let mult = ((ns as u128) << 32) / ticks as u128;
    // The ticks at `start`, so that the clock reads ~0 there.
    let at_start = t0.saturating_sub((d0.as_nanos() << 32).checked_div(mult)? as u64);
    Some((at_start, mult as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_the_system_clock() {
        let a = now_ns();
        let t = Instant::now();
        std::thread::sleep(Duration::from_millis(20));
        let (b, d) = (now_ns(), t.elapsed().as_nanos() as u64);
        assert!(b > a);
        let measured = b - a;
        // Within 5 % (plus the time between the paired reads).
        assert!(measured.abs_diff(d) < d / 20 + 200_000, "clock {measured} ns vs Instant {d} ns");
    }
}
