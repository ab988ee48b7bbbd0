//! Reactivity with marcel user threads: how fast a receiver answers a 4-byte MPI message while
//! compute threads keep its core busy, per pioman policy. It measures exactly as the C program
//! `bench/mpi/reactivity.c` does with OS compute threads (same pings, gaps, budget and figure),
//! so the two are comparable.
//!
//! One job per policy (`PIOMAN_POLICY`, over shm: `NMAD_DRIVERS=shm`); within it one
//! configuration per count k of compute threads per core. Rank 1, the receiver, runs a marcel
//! runtime of one LWP restricted to its CPU (`cpus.1`, builder options, which win over
//! `MARCEL_*`), so "per core" means k user threads on that core beside the MPI thread: a user
//! thread blocked in `MPI_Recv` (madmpi's Rust API) that echoes each ping with `MPI_Send`. The
//! compute threads are pure hogs (never a switch point, as in pioman's own reactivity benchmark):
//! what lets the MPI thread run is the policy's wait (spinning with yields, a blocking wait
//! inside `marcel::blocking` whose rescue hands the core's queue to a spare kernel thread,
//! parking until a tick) and, as a last resort, marcel's hog bound.
//!
//! Rank 0, the pinger, is a plain OS thread pinned to `cpus.0` without marcel. It posts the
//! receive, sends, and completes both with `MPI_Test` loops (`Request::test`, which drives
//! progress once per call), whatever the job's policy: the figure is the receiver's reactivity,
//! not the pinger's wait (under `timer` a pinger waiting through pioman would add its own tick).
//!
//! Spaced pings. A repetition lasts the whole time budget ([`super::Bound::new`]`(quick).time`:
//! 100 ms, 30 ms when quick; no cap on the round trips): rank 0 sends a ping, times that single
//! round trip (one-way = round trip / 2), then waits a pseudo-random 200–1000 µs by spinning
//! (it is alone on its core) before the next ping. The gaps are the C program's xorshift
//! sequence (`Gaps`), one generator for the whole run, carried across thread counts and
//! repetitions as the C program's static is. Spacing makes pings land at random points of the
//! receiver's schedule, as an application's messages do: back-to-back round trips would mostly
//! run inside the time slice the receiver's polling MPI thread already holds, and hide the wait
//! for the CPU that this benchmark is about. The budget is checked before each ping; the ping
//! sent once it has elapsed is the last (no gap after it). Each ping's payload is the "not
//! last" flag (1, or 0 for the last), as in C; rank 1 echoes it. A repetition's figure is the
//! MEAN one-way latency of its pings (the expected reaction time); the statistics (median, min,
//! max) are over the repetitions. Each configuration starts with one warm-up repetition of the
//! whole budget, measured the same way and discarded (it also lets the compute threads reach
//! their steady state: marcel hands a hog's core over after one or two 10 ms quanta).
//!
//! `PIOMAN_THREADS=0` in both ranks: rank 0 busy-tests on its only core, where a progression
//! thread could only compete with it (polling under `poll`/`adaptive`, being woken by every
//! message under `block`); under marcel (rank 1) progression threads only do background blocking
//! waits when no waiting thread covers the sources, and the MPI thread always waits on them here
//! (it is in `MPI_Recv` whenever it is not answering).
//!
//! Protocol (rank 0 → rank 1, 4-byte `u32` messages, the tag says what): `START k` (rank 1
//! starts k compute threads and answers), `PING` (echoed), `STOP` (rank 1 stops and joins them,
//! and answers), `QUIT`. Measurements: `reactivity`/`marcel`, madmpi, shm, 4 B, `threads` = k,
//! `policy` = the policy.

use super::{Bench, RankArgs, Row, base_env, check_common, latency, run_job, stat_of, write_rows};
use crate::record::Measurement;
use madmpi::comm::Comm;
use madmpi::env::universe::{self, Threading};
use madmpi::p2p::{From, Rank, Tag};
use madmpi::request::{Mode, Request};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// The message size (one `u32`).
pub const SIZE: u64 = 4;
const PING: i32 = 1;
const START: i32 = 2;
const STOP: i32 = 3;
const QUIT: i32 = 4;
/// The shortest gap between two pings (ns), as in the C program.
const GAP_MIN_NS: f64 = 200_000.0;
/// Gaps span `GAP_MIN_NS` to `GAP_MIN_NS + GAP_SPAN_NS` (ns).
const GAP_SPAN_NS: f64 = 800_000.0;

/// Reactivity with marcel user threads: 4-byte ping-pong latency (madmpi Rust API, MPI
/// point-to-point) while k compute user threads per core (k in `threads`, e.g. `[0, 1, 2, 4]`)
/// run on the receiver (rank 1), one job of `exe` (the madbench binary) per pioman policy in
/// `policies` (e.g. `["poll", "block", "adaptive", "timer"]`), over shm. `progress` is told
/// which job starts. Each configuration: one warm-up repetition, then `reps`, each bounded by
/// [`super::Bound::new`]`(quick)`.
pub fn reactivity_marcel(
    exe: &Path,
    policies: &[&str],
    threads: &[u32],
    reps: u32,
    quick: bool,
    cpus: (usize, usize),
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<Measurement>, String> {
    check_common(exe, reps, cpus)?;
    if policies.is_empty() || threads.is_empty() {
        return Err("reactivity: no policy or no thread count given".into());
    }
    for p in policies {
        pioman::policy::by_name(p).map_err(|e| format!("reactivity: {e}"))?;
    }
    if let Some(k) = threads.iter().find(|&&k| k > 64) {
        return Err(format!("reactivity: {k} compute threads per core is more than 64"));
    }
    let list: Vec<String> = threads.iter().map(u32::to_string).collect();
    let mut out = Vec::new();
    for (i, p) in policies.iter().enumerate() {
        progress(&format!(
            "reactivity (marcel): policy {p}, {} compute thread(s) per core ({}/{})",
            list.join("/"),
            i + 1,
            policies.len()
        ));
        let mut env = base_env(Bench::ReactivityMarcel, cpus, reps, quick);
        env.push(("PIOMAN_POLICY".into(), p.to_string()));
        env.push(("NMAD_DRIVERS".into(), "shm".into()));
        env.push((super::THREADS_ENV.into(), list.join(",")));
        let rows = run_job(exe, &format!("reactivity (marcel), policy {p}"), env)?;
        out.extend(measurements(&rows, p, threads).map_err(|e| format!("reactivity, policy {p}: {e}"))?);
    }
    Ok(out)
}

/// The measurements of one policy's job.
fn measurements(rows: &[Row], policy: &str, threads: &[u32]) -> Result<Vec<Measurement>, String> {
    threads
        .iter()
        .map(|&k| {
            let stat = stat_of(rows, k, SIZE)?;
            Ok(latency("reactivity", "marcel", "shm", SIZE, stat).threads(k).policy(policy))
        })
        .collect()
}

// ------------------------------------------------------------------ ranks

pub(super) fn rank(a: &RankArgs) -> Result<(), String> {
    match a.rank {
        0 => pinger(a),
        1 => receiver(a),
        r => Err(format!("rank {r}: this benchmark runs two ranks")),
    }
}

fn mpi(e: madmpi::error::Error) -> String {
    e.to_string()
}

/// Completes `r` by `MPI_Test` calls (each drives progress once).
fn spin(mut r: Request<'_>) -> Result<(), String> {
    loop {
        match r.test() {
            Ok(res) => return res.map(drop).map_err(mpi),
            Err(back) => r = back,
        }
    }
}

/// Sends `tag` with `v` to rank 1 and waits for its answer (same tag).
fn command(w: &Comm, tag: i32, v: u32) -> Result<(), String> {
    let mut ans = [0u32];
    let r = w.irecv(&mut ans, From::Rank(1), Tag::Tag(tag)).map_err(mpi)?;
    spin(w.isend(&[v], Rank::Rank(1), tag, Mode::Standard).map_err(mpi)?)?;
    spin(r)
}

/// The gaps between pings: the C program's xorshift sequence (`next_gap_ns`), from the same
/// seed, so both programs wait the same pseudo-random 200–1000 µs.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Gaps(u64);

impl Gaps {
    const SEED: u64 = 88_172_645_463_325_252;

    fn new() -> Gaps {
        Gaps(Gaps::SEED)
    }

    /// The next gap, in ns.
    fn next_ns(&mut self) -> f64 {
        let mut s = self.0;
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        self.0 = s;
        GAP_MIN_NS + (s % 1_000_000) as f64 / 1e6 * GAP_SPAN_NS
    }
}

/// One repetition (rank 0), as the C program's `series`: until `budget` has elapsed (checked
/// before each ping), `ping(last)` does one round trip, timed here; then a gap from `gaps`,
/// spent spinning, except after the last ping. Returns the mean one-way latency (ns) and the
/// number of round trips.
fn series(
    budget: Duration,
    gaps: &mut Gaps,
    ping: &mut dyn FnMut(bool) -> Result<(), String>,
) -> Result<(f64, u64), String> {
    let t = Instant::now();
    let (mut sum, mut n) = (0.0, 0u64);
    loop {
        let last = t.elapsed() >= budget;
        let t0 = Instant::now();
        ping(last)?;
        sum += t0.elapsed().as_nanos() as f64 / 2.0;
        n += 1;
        // Drawn after the last ping too, as in C, so the sequence stays the C program's.
        let until = Instant::now() + Duration::from_nanos(gaps.next_ns() as u64);
        if last {
            return Ok((sum / n as f64, n));
        }
        // Rank 0 is alone on its core: waiting by spinning costs nobody anything.
        while Instant::now() < until {}
    }
}

fn pinger(a: &RankArgs) -> Result<(), String> {
    let u = universe::init(Threading::Multiple).map_err(mpi)?;
    let w = u.world().clone();
    if (w.rank(), w.size()) != (0, 2) {
        return Err(format!("rank 0 of 2 expected, MPI says {} of {}", w.rank(), w.size()));
    }
    let mut inb = [0u32];
    let mut ping = |last: bool| -> Result<(), String> {
        let out = [u32::from(!last)];
        let r = w.irecv(&mut inb, From::Rank(1), Tag::Tag(PING)).map_err(mpi)?;
        spin(w.isend(&out, Rank::Rank(1), PING, Mode::Standard).map_err(mpi)?)?;
        spin(r)
    };
    // One generator for the whole run, as the C program's static.
    let mut gaps = Gaps::new();
    let mut rows = Vec::new();
    for &k in &a.threads {
        command(&w, START, k).map_err(|e| format!("starting {k} compute thread(s): {e}"))?;
        let mut samples = Vec::with_capacity(a.reps as usize);
        for i in 0..=a.reps {
            let (mean, _round_trips) = series(a.bound.time, &mut gaps, &mut ping)
                .map_err(|e| format!("ping-pong beside {k} compute thread(s): {e}"))?;
            if i > 0 {
                samples.push(mean); // repetition 0 is the warm-up
            }
        }
        command(&w, STOP, 0).map_err(|e| format!("stopping {k} compute thread(s): {e}"))?;
        rows.push(Row { threads: k, size: SIZE, samples });
    }
    spin(w.isend(&[0u32], Rank::Rank(1), QUIT, Mode::Standard).map_err(mpi)?)?;
    write_rows(&a.out, &rows)?;
    u.finalize().map_err(mpi)
}

fn receiver(a: &RankArgs) -> Result<(), String> {
    let rt = marcel::Runtime::builder()
        .lwps(1)
        .cpus(&[a.cpus.1])
        .pin(true)
        .build()
        .map_err(|e| format!("marcel runtime on CPU {}: {e}", a.cpus.1))?;
    let r = rt.block_on(serve);
    if let Err(e) = rt.shutdown_timeout(Duration::from_secs(5)) {
        log::warn!("rank 1 (reactivity): marcel shutdown: {e:?}");
    }
    r
}

/// Rank 1, on a user thread of the one-LWP runtime: answers commands until `QUIT`.
fn serve() -> Result<(), String> {
    let u = universe::init(Threading::Multiple).map_err(mpi)?;
    let w = u.world().clone();
    if (w.rank(), w.size()) != (1, 2) {
        return Err(format!("rank 1 of 2 expected, MPI says {} of {}", w.rank(), w.size()));
    }
    let mut compute: Option<Compute> = None;
    loop {
        let mut m = [0u32];
        let st = w.recv(&mut m, From::Rank(0), Tag::Any).map_err(mpi)?;
        match st.tag {
            PING => w.send(&m, Rank::Rank(0), PING).map_err(mpi)?,
            START => {
                if let Some(mut c) = compute.take() {
                    c.stop()?;
                }
                compute = Some(Compute::start(m[0]));
                w.send(&m, Rank::Rank(0), START).map_err(mpi)?;
            }
            STOP => {
                if let Some(mut c) = compute.take() {
                    c.stop()?;
                }
                w.send(&m, Rank::Rank(0), STOP).map_err(mpi)?;
            }
            QUIT => break,
            t => return Err(format!("unexpected tag {t} from rank 0")),
        }
    }
    if let Some(mut c) = compute.take() {
        c.stop()?;
    }
    u.finalize().map_err(mpi)
}

/// k compute user threads on the current runtime, computing (checking their stop flag about
/// every microsecond, never reaching a switch point) until told to stop. Dropping it tells
/// them to stop (without waiting).
struct Compute {
    stop: Arc<AtomicBool>,
    threads: Vec<marcel::JoinHandle<()>>,
}

impl Compute {
    fn start(k: u32) -> Compute {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..k)
            .map(|_| {
                let stop = stop.clone();
                marcel::spawn(move || {
                    let mut x = 1u64;
                    while !stop.load(Relaxed) {
                        for i in 0..300 {
                            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
                        }
                    }
                })
            })
            .collect();
        Compute { stop, threads }
    }

    /// Stops the threads and waits for them.
    fn stop(&mut self) -> Result<(), String> {
        self.stop.store(true, Relaxed);
        for t in self.threads.drain(..) {
            t.join().map_err(|e| format!("a compute thread failed: {e:?}"))?;
        }
        Ok(())
    }
}

impl Drop for Compute {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Impl, Stat};

    #[test]
    fn rows_become_measurements() {
        let rows = vec![
            Row { threads: 0, size: SIZE, samples: vec![3.0, 1.0, 2.0] },
            Row { threads: 2, size: SIZE, samples: vec![10.0] },
        ];
        let ms = measurements(&rows, "block", &[0, 2]).unwrap();
        assert_eq!(ms.len(), 2);
        let m = &ms[0];
        assert_eq!(
            (m.bench.as_str(), m.case.as_str(), m.imp, m.transport.as_str(), m.size, m.unit.as_str()),
            ("reactivity", "marcel", Impl::Madmpi, "shm", 4, "ns")
        );
        assert_eq!((m.threads, m.policy.as_str()), (0, "block"));
        assert_eq!(m.stat, Stat { median: 2.0, min: 1.0, max: 3.0 });
        assert_eq!(ms[1].threads, 2);
        assert!(measurements(&rows, "block", &[0, 4]).unwrap_err().contains("4 thread"));
    }

    #[test]
    fn gaps_are_the_c_programs() {
        // The first values of reactivity.c's next_gap_ns (and its state), printed by C.
        let mut g = Gaps::new();
        let want = [
            (486_809.6, 8_748_534_153_485_358_512u64),
            (788_412.0, 3_040_900_993_826_735_515),
            (391_449.6, 3_453_997_556_048_239_312),
            (208_682.4, 16_431_732_851_926_010_853),
            (782_644.8, 8_204_724_074_003_728_306),
        ];
        for (gap, state) in want {
            assert_eq!((g.next_ns(), g.0), (gap, state));
        }
        for _ in 0..10_000 {
            let x = g.next_ns();
            assert!((GAP_MIN_NS..GAP_MIN_NS + GAP_SPAN_NS).contains(&x), "{x}");
        }
    }

    #[test]
    fn a_series_spaces_its_pings_until_the_budget() {
        let budget = Duration::from_millis(3);
        let mut g = Gaps::new();
        let mut calls: Vec<(bool, Instant)> = Vec::new();
        let t = Instant::now();
        let (mean, n) = series(budget, &mut g, &mut |last| {
            calls.push((last, Instant::now()));
            std::thread::sleep(Duration::from_micros(20));
            Ok(())
        })
        .unwrap();
        assert_eq!(n as usize, calls.len());
        assert!(n >= 2, "{n} ping(s)");
        // Only the last ping says so, and it is sent once the budget has elapsed.
        assert!(calls[..calls.len() - 1].iter().all(|c| !c.0));
        assert!(calls[calls.len() - 1].0);
        assert!(calls[calls.len() - 1].1 - t >= budget);
        // Between two pings, the round trip and then the next gap of the sequence.
        let mut check = Gaps::new();
        for p in calls.windows(2) {
            let gap = Duration::from_nanos(check.next_ns() as u64);
            assert!(p[1].1 - p[0].1 >= gap + Duration::from_micros(20));
        }
        // One draw per ping, the last one's included (as in C).
        check.next_ns();
        assert_eq!(check, g);
        // The mean of one-way times: half of a round trip of at least 20 µs.
        assert!(mean >= 10_000.0, "{mean}");
        // A failing round trip ends the series.
        let err = series(budget, &mut g, &mut |_| Err("boom".into())).unwrap_err();
        assert_eq!(err, "boom");
    }
}
