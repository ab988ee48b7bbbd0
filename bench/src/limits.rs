//! The machine's physical limits, measured in the same run as what we compare with them: a
//! cache line bouncing between two cores (the floor of any shared-memory message), memcpy (the
//! floor of a copy-based large-message path), and a raw TCP ping-pong and stream over loopback
//! (the floor of the tcp driver).
//!
//! Each function times `iters` operations and returns the elapsed time (for criterion's
//! `iter_custom`). [`measure`] times them without criterion and returns `madbench` records;
//! [`samples`] and [`AffinityGuard`] are the timing pieces it shares with [`crate::sched`].

use crate::pin_to;
use crate::record::{Impl, Measurement, Stat};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::time::{Duration, Instant};

/// Two threads on two cores passing a counter through one cache line.
pub struct CacheLinePingPong {
    line: Arc<Line>,
    peer: Option<std::thread::JoinHandle<()>>,
}

#[repr(align(128))]
struct Line {
    v: AtomicU64,
    stop: AtomicBool,
}

impl CacheLinePingPong {
    /// The echoing thread runs on `cpu_b`; the caller should run on `cpu_a`.
    pub fn start(cpu_b: usize) -> CacheLinePingPong {
        let line = Arc::new(Line { v: AtomicU64::new(0), stop: AtomicBool::new(false) });
        let l = line.clone();
        let peer = std::thread::spawn(move || {
            pin_to(cpu_b);
            let mut want = 1;
            while !l.stop.load(Relaxed) {
                if l.v.load(Acquire) == want {
                    l.v.store(want + 1, Release);
                    want += 2;
                } else {
                    std::hint::spin_loop();
                }
            }
        });
        CacheLinePingPong { line, peer: Some(peer) }
    }

    /// `iters` round trips.
    pub fn run(&self, iters: u64) -> Duration {
        let v = &self.line.v;
        let base = v.load(Acquire);
        let t = Instant::now();
        for i in 0..iters {
            let mine = base + 2 * i;
            v.store(mine + 1, Release);
            while v.load(Acquire) != mine + 2 {
                std::hint::spin_loop();
            }
        }
        t.elapsed()
    }
}

impl Drop for CacheLinePingPong {
    fn drop(&mut self) {
        self.line.stop.store(true, Relaxed);
        if let Some(h) = self.peer.take() {
            let _ = h.join();
        }
    }
}

/// `iters` copies of `src` into `dst`.
pub fn memcpy(src: &[u8], dst: &mut [u8], iters: u64) -> Duration {
    let t = Instant::now();
    for _ in 0..iters {
        dst.copy_from_slice(std::hint::black_box(src));
        std::hint::black_box(&mut *dst);
    }
    t.elapsed()
}

/// `iters` copies of `src` into `dst` by the kernel's cross-memory attach (`process_vm_readv`
/// on this process): the single-copy path of the shm driver, with its page-pinning cost, without
/// nmad around it.
pub fn cma_copy(src: &[u8], dst: &mut [u8], iters: u64) -> Duration {
    let pid = std::process::id() as libc::pid_t;
    let t = Instant::now();
    for _ in 0..iters {
        let local = libc::iovec { iov_base: dst.as_mut_ptr().cast(), iov_len: dst.len() };
        let remote = libc::iovec { iov_base: src.as_ptr().cast_mut().cast(), iov_len: src.len() };
        // SAFETY: both iovecs describe live buffers of this process of the given lengths; `dst`
        // is exclusively borrowed.
        let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
        assert_eq!(n, src.len() as isize, "process_vm_readv: {}", std::io::Error::last_os_error());
    }
    t.elapsed()
}

/// Reads exactly `buf.len()` bytes from a nonblocking socket, spinning on `WouldBlock` (as a
/// polling runtime does: no sleep and wake-up in the measured path).
fn spin_read(s: &mut TcpStream, mut buf: &mut [u8]) -> std::io::Result<()> {
    while !buf.is_empty() {
        match s.read(buf) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(k) => buf = &mut buf[k..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes all of `buf` to a nonblocking socket, spinning on `WouldBlock`.
fn spin_write(s: &mut TcpStream, mut buf: &[u8]) -> std::io::Result<()> {
    while !buf.is_empty() {
        match s.write(buf) {
            Ok(k) => buf = &buf[k..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A loopback TCP connection with an echo (or sink) thread on `cpu_b`. Both ends poll their
/// nonblocking sockets, like the runtimes measured against this limit.
pub struct RawTcp {
    stream: TcpStream,
    peer: Option<std::thread::JoinHandle<()>>,
}

/// Commands to the peer thread: ping-pong `n` rounds of `size` bytes, or sink `n` bytes.
fn command(s: &mut TcpStream, kind: u8, size: u64, n: u64) {
    let mut c = [0u8; 17];
    c[0] = kind;
    c[1..9].copy_from_slice(&size.to_le_bytes());
    c[9..].copy_from_slice(&n.to_le_bytes());
    spin_write(s, &c).unwrap();
}

impl RawTcp {
    pub fn start(cpu_b: usize) -> std::io::Result<RawTcp> {
        let l = TcpListener::bind("127.0.0.1:0")?;
        let addr = l.local_addr()?;
        let peer = std::thread::spawn(move || {
            pin_to(cpu_b);
            let (mut s, _) = l.accept().unwrap();
            s.set_nodelay(true).unwrap();
            s.set_nonblocking(true).unwrap();
            let mut buf = vec![0u8; 16 << 20];
            let mut c = [0u8; 17];
            while spin_read(&mut s, &mut c).is_ok() {
                let size = u64::from_le_bytes(c[1..9].try_into().unwrap()) as usize;
                let n = u64::from_le_bytes(c[9..].try_into().unwrap());
                match c[0] {
                    b'p' => {
                        for _ in 0..n {
                            spin_read(&mut s, &mut buf[..size]).unwrap();
                            spin_write(&mut s, &buf[..size]).unwrap();
                        }
                    }
                    b's' => {
                        let mut left = n;
                        while left > 0 {
                            let cap = (left as usize).min(buf.len());
                            match s.read(&mut buf[..cap]) {
                                Ok(0) => panic!("stream closed"),
                                Ok(k) => left -= k as u64,
                                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                                    std::hint::spin_loop()
                                }
                                Err(e) => panic!("{e}"),
                            }
                        }
                        spin_write(&mut s, b"k").unwrap();
                    }
                    _ => return,
                }
            }
        });
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_nonblocking(true)?;
        Ok(RawTcp { stream, peer: Some(peer) })
    }

    /// `iters` round trips of `size` bytes.
    pub fn pingpong(&mut self, size: usize, iters: u64) -> Duration {
        let mut buf = vec![1u8; size.max(1)];
        command(&mut self.stream, b'p', size as u64, iters);
        let t = Instant::now();
        for _ in 0..iters {
            spin_write(&mut self.stream, &buf[..size]).unwrap();
            spin_read(&mut self.stream, &mut buf[..size]).unwrap();
        }
        t.elapsed()
    }

    /// Streams `iters` writes of `size` bytes and waits for the peer to have read them all.
    pub fn stream(&mut self, data: &[u8], iters: u64) -> Duration {
        command(&mut self.stream, b's', 0, data.len() as u64 * iters);
        let t = Instant::now();
        for _ in 0..iters {
            spin_write(&mut self.stream, data).unwrap();
        }
        let mut k = [0u8; 1];
        spin_read(&mut self.stream, &mut k).unwrap();
        t.elapsed()
    }
}

impl Drop for RawTcp {
    fn drop(&mut self) {
        let _ = spin_write(&mut self.stream, &[b'q'; 17]);
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
        if let Some(h) = self.peer.take() {
            let _ = h.join();
        }
    }
}

// ------------------------------------------------------------------ timing without criterion

/// The calling thread's CPU affinity, put back when the guard drops.
pub struct AffinityGuard {
    set: Option<libc::cpu_set_t>,
}

impl AffinityGuard {
    /// Saves the calling thread's affinity (nothing is restored if it cannot be read).
    pub fn save() -> AffinityGuard {
        // SAFETY: cpu_set_t is plain data (all zeroes is an empty set); sched_getaffinity(0)
        // writes at most `size_of::<cpu_set_t>()` bytes into it for the calling thread.
        let set = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            let ok = libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0;
            ok.then_some(set)
        };
        AffinityGuard { set }
    }
}

impl Drop for AffinityGuard {
    fn drop(&mut self) {
        if let Some(set) = &self.set {
            // SAFETY: sched_setaffinity(0) targets the calling thread and only reads the set.
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) };
        }
    }
}

/// How long one timed batch lasts: long enough to be stable, short enough for the budgets.
fn batch_target(quick: bool) -> Duration {
    if quick { Duration::from_millis(3) } else { Duration::from_millis(25) }
}

/// Nanoseconds per operation of `reps` batches of `run(iters)` (which times `iters` operations
/// and returns the time it measured). The batch size grows from 1 until a call lasts a quarter
/// of the target (25 ms of wall time, 3 ms if `quick`), then is scaled to the target; warm-up
/// batches of that size rescale it (at most three times) until one lasts between half and twice
/// the target, so that a calibration step slowed down by another process does not leave
/// batches far too short.
pub fn samples(reps: u32, quick: bool, mut run: impl FnMut(u64) -> Duration) -> Vec<f64> {
    let target = batch_target(quick).as_secs_f64();
    let wall = |run: &mut dyn FnMut(u64) -> Duration, n: u64| {
        let t = Instant::now();
        run(n);
        t.elapsed().as_secs_f64().max(1e-9)
    };
    let mut iters = 1u64;
    let mut w = wall(&mut run, iters);
    while w < target / 4.0 && iters < 1 << 40 {
        iters *= ((target / 4.0 / w).ceil() as u64).clamp(2, 16);
        w = wall(&mut run, iters);
    }
    for _ in 0..3 {
        iters = ((iters as f64 * (target / w).clamp(1.0 / 16.0, 16.0)) as u64).max(1);
        w = wall(&mut run, iters);
        if (target / 2.0..=target * 2.0).contains(&w) {
            break;
        }
    }
    (0..reps.max(1)).map(|_| run(iters).as_nanos() as f64 / iters as f64).collect()
}

/// `samples` converted by `f` (ns per operation → the unit reported), then summarised.
pub fn stat_of(mut samples: Vec<f64>, f: impl Fn(f64) -> f64) -> Option<Stat> {
    samples.iter_mut().for_each(|v| *v = f(*v));
    Stat::of(&mut samples)
}

/// Megabytes (1e6 bytes) per second when `bytes` take `ns` nanoseconds.
pub fn mb_per_s(bytes: usize, ns: f64) -> f64 {
    bytes as f64 * 1e3 / ns
}

/// The sizes of the bandwidth limits (memcpy, CMA copy, TCP stream).
pub const SIZES: [usize; 5] = [64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20];

/// Whether `process_vm_readv` on this process works here (seccomp may forbid it).
fn cma_available() -> std::io::Result<()> {
    let src = [1u8; 8];
    let mut dst = [0u8; 8];
    let local = libc::iovec { iov_base: dst.as_mut_ptr().cast(), iov_len: dst.len() };
    let remote = libc::iovec { iov_base: src.as_ptr().cast_mut().cast(), iov_len: src.len() };
    // SAFETY: both iovecs describe live local buffers of 8 bytes; `dst` is exclusively ours.
    let n = unsafe { libc::process_vm_readv(std::process::id() as libc::pid_t, &local, 1, &remote, 1, 0) };
    match n {
        -1 => Err(std::io::Error::last_os_error()),
        8 if dst == src => Ok(()),
        _ => Err(std::io::Error::other(format!("process_vm_readv copied {n} of 8 bytes"))),
    }
}

/// The machine's limits as `madbench` records (`bench` = `limits`, `Impl::Limit`):
///
/// | case | transport | size | unit |
/// |------|-----------|------|------|
/// | `cacheline-pingpong` | `shm` | 64 | ns one way (half a round trip) |
/// | `memcpy` | `shm` | [`SIZES`] | MB/s |
/// | `cma-copy` (`process_vm_readv`) | `shm` | [`SIZES`] | MB/s |
/// | `tcp-pingpong` (loopback, polling) | `tcp` | 4 | ns one way |
/// | `tcp-stream` (loopback, polling) | `tcp` | [`SIZES`] | MB/s |
/// | `udp-pingpong` (loopback, polling) | `udp` | 4 | ns one way |
/// | `udp-stream` (loopback, polling, credit-paced) | `udp` | [`SIZES`] | MB/s |
///
/// The calling thread runs on `cpus.0` and the peer threads on `cpus.1`; the caller's affinity
/// is restored before returning. Each figure is the median, min and max over `reps` batches
/// (see [`samples`]). A case that cannot run here (no loopback TCP, CMA forbidden) is reported
/// through `progress` and left out. About 3 s with `reps` 5, 0.3 s quick (on 2 cores).
pub fn measure(
    reps: u32,
    quick: bool,
    cpus: (usize, usize),
    progress: &mut dyn FnMut(&str),
) -> Vec<Measurement> {
    let _affinity = AffinityGuard::save();
    pin_to(cpus.0);
    let mut out = Vec::new();
    let one_way = |ns: f64| ns / 2.0;

    progress("limits: cacheline-pingpong");
    {
        let pp = CacheLinePingPong::start(cpus.1);
        let stat = stat_of(samples(reps, quick, |n| pp.run(n)), one_way);
        push(&mut out, progress, "cacheline-pingpong", "shm", 64, stat, "ns");
    }

    progress("limits: memcpy");
    for size in SIZES {
        let src = vec![1u8; size];
        let mut dst = vec![0u8; size];
        let stat = stat_of(samples(reps, quick, |n| memcpy(&src, &mut dst, n)), |ns| mb_per_s(size, ns));
        push(&mut out, progress, "memcpy", "shm", size, stat, "MB/s");
    }

    progress("limits: cma-copy");
    match cma_available() {
        Ok(()) => {
            for size in SIZES {
                let src = vec![1u8; size];
                let mut dst = vec![0u8; size];
                let stat =
                    stat_of(samples(reps, quick, |n| cma_copy(&src, &mut dst, n)), |ns| mb_per_s(size, ns));
                push(&mut out, progress, "cma-copy", "shm", size, stat, "MB/s");
            }
        }
        Err(e) => progress(&format!("limits cma-copy: process_vm_readv unavailable: {e}")),
    }

    progress("limits: tcp-pingpong, tcp-stream");
    match RawTcp::start(cpus.1) {
        Ok(mut t) => {
            let stat = stat_of(samples(reps, quick, |n| t.pingpong(4, n)), one_way);
            push(&mut out, progress, "tcp-pingpong", "tcp", 4, stat, "ns");
            for size in SIZES {
                let data = vec![1u8; size];
                let stat = stat_of(samples(reps, quick, |n| t.stream(&data, n)), |ns| mb_per_s(size, ns));
                push(&mut out, progress, "tcp-stream", "tcp", size, stat, "MB/s");
            }
        }
        Err(e) => progress(&format!("limits tcp: loopback connection failed: {e}")),
    }

    progress("limits: udp-pingpong, udp-stream");
    match crate::raw_udp::RawUdp::start(cpus.1) {
        Ok(mut u) => {
            // A lost datagram (a lossy network) ends this limit: it has no retransmission.
            let mut lost = None;
            let mut keep = |r: std::io::Result<Duration>| {
                r.unwrap_or_else(|e| {
                    lost.get_or_insert(e);
                    Duration::from_nanos(1)
                })
            };
            let stat = stat_of(samples(reps, quick, |n| keep(u.pingpong(4, n))), one_way);
            let mut results = vec![("udp-pingpong", 4, stat, "ns")];
            for size in SIZES {
                let data = vec![1u8; size];
                let stat =
                    stat_of(samples(reps, quick, |n| keep(u.stream(&data, n))), |ns| mb_per_s(size, ns));
                results.push(("udp-stream", size, stat, "MB/s"));
            }
            match lost {
                Some(e) => progress(&format!("limits udp: left out: {e}")),
                None => {
                    for (case, size, stat, unit) in results {
                        push(&mut out, progress, case, "udp", size, stat, unit);
                    }
                }
            }
        }
        Err(e) => progress(&format!("limits udp: loopback sockets failed: {e}")),
    }
    out
}

/// Adds a `limits` record to `out`, or says why there is none.
fn push(
    out: &mut Vec<Measurement>,
    progress: &mut dyn FnMut(&str),
    case: &str,
    transport: &str,
    size: usize,
    stat: Option<Stat>,
    unit: &str,
) {
    match stat {
        Some(stat) => {
            out.push(Measurement::new("limits", case, Impl::Limit, transport, size as u64, stat, unit))
        }
        None => progress(&format!("limits {case} {size}: no finite sample")),
    }
}

/// Serialises the tests that time things on pinned threads (they would slow each other down).
#[cfg(test)]
pub(crate) static TIMING_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_grow_the_batch_and_time_each_repetition() {
        let mut calls = Vec::new();
        let v = samples(3, true, |n| {
            calls.push(n);
            crate::spin_for(Duration::from_micros(n));
            Duration::from_micros(n)
        });
        assert_eq!(v.len(), 3);
        assert!(v.iter().all(|&ns| (ns - 1000.0).abs() < 1e-6), "{v:?}");
        assert_eq!(calls[0], 1, "{calls:?}");
        let last = *calls.last().unwrap();
        assert!(calls[calls.len() - 3..].iter().all(|&n| n == last), "{calls:?}");
    }

    #[test]
    fn quick_run_reports_every_limit() {
        let _serial = TIMING_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        let before = AffinityGuard::save().set.map(|s| format!("{s:?}"));
        let mut notes = Vec::new();
        let ms = measure(1, true, crate::two_cpus(), &mut |s| notes.push(s.to_string()));
        assert_eq!(AffinityGuard::save().set.map(|s| format!("{s:?}")), before, "affinity restored");
        let mut want =
            vec![("cacheline-pingpong", 64, "ns"), ("tcp-pingpong", 4, "ns"), ("udp-pingpong", 4, "ns")];
        for size in SIZES {
            want.extend([
                ("memcpy", size, "MB/s"),
                ("cma-copy", size, "MB/s"),
                ("tcp-stream", size, "MB/s"),
                ("udp-stream", size, "MB/s"),
            ]);
        }
        for (case, size, unit) in want {
            let m = ms
                .iter()
                .find(|m| m.case == case && m.size == size as u64)
                .unwrap_or_else(|| panic!("{case} {size} missing; notes: {notes:?}"));
            assert_eq!((m.bench.as_str(), m.imp, m.unit.as_str()), ("limits", Impl::Limit, unit));
            let s = m.stat;
            assert!(s.median.is_finite() && s.median > 0.0, "{case} {size}: {s:?}");
            assert!(s.min <= s.median && s.median <= s.max, "{case} {size}: {s:?}");
        }
        assert_eq!(ms.len(), 3 + 4 * SIZES.len());
    }
}
