//! The benchmarks: the `madbench` suite (`src/bin/madbench`, [`suite`]) and the criterion
//! micro-benchmarks of `benches/` (scheduler, pioman, nmad).
//!
//! - [`suite`]: what madbench runs, prints and writes;
//! - [`mpi`]: the C programs of `bench/mpi/` under our library, MPICH and Open MPI;
//! - [`ranks`]: benchmarks through our runtime's Rust API (marcel reactivity, progression
//!   overhead), madbench being its own rank program;
//! - [`sched`], [`limits`], [`raw_udp`]: in-process measurements (marcel versus OS threads; the
//!   machine's physical limits);
//! - [`record`]: the measurement every benchmark returns; [`plot`]: PNG charts.

pub mod limits;
pub mod mpi;
pub mod plot;
pub mod ranks;
pub mod raw_udp;
pub mod record;
pub mod sched;
pub mod suite;

use std::time::Duration;

/// Pins the calling OS thread to one CPU (benchmarks compare like with like).
pub fn pin_to(cpu: usize) {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it; sched_setaffinity(0) targets the
    // calling thread and only reads the set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Lets the calling thread run on any of `cpus`.
pub fn pin_to_set(cpus: &[usize]) {
    // SAFETY: as in `pin_to`.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// The first two CPUs this process may use (the second is the first again on a 1-CPU machine).
pub fn two_cpus() -> (usize, usize) {
    let cpus = marcel::topology::allowed_cpus();
    (cpus[0], *cpus.get(1).unwrap_or(&cpus[0]))
}

/// Busy-waits for `d` without a system call.
pub fn spin_for(d: Duration) {
    let t = std::time::Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// A pipe (read end, write end).
pub fn pipe() -> (i32, i32) {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe(2).
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe");
    (fds[0], fds[1])
}

pub fn write_byte(fd: i32) {
    // SAFETY: one byte from a static buffer to an open pipe.
    assert_eq!(unsafe { libc::write(fd, b"x".as_ptr().cast(), 1) }, 1);
}

pub fn read_byte(fd: i32) {
    let mut b = [0u8; 1];
    // SAFETY: reads at most one byte into a local buffer from an open pipe.
    assert_eq!(unsafe { libc::read(fd, b.as_mut_ptr().cast(), 1) }, 1);
}

/// Puts the calling thread in the SCHED_IDLE class (it runs only when its core is otherwise idle).
pub fn set_sched_idle() {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 = calling thread; `p` is a valid sched_param.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &p) };
}

/// futex(FUTEX_WAIT_PRIVATE) on `w` while it holds `v`.
pub fn futex_wait(w: &std::sync::atomic::AtomicU32, v: u32, timeout: Option<Duration>) {
    let ts = timeout.map(|d| libc::timespec { tv_sec: d.as_secs() as _, tv_nsec: d.subsec_nanos() as _ });
    let p = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `w` is a live AtomicU32; the kernel reads it and the optional timespec only.
    unsafe { libc::syscall(libc::SYS_futex, w.as_ptr(), libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG, v, p) };
}

/// futex(FUTEX_WAKE_PRIVATE) of one waiter on `w`.
pub fn futex_wake(w: &std::sync::atomic::AtomicU32) {
    // SAFETY: `w` is a live AtomicU32; FUTEX_WAKE dereferences nothing else.
    unsafe { libc::syscall(libc::SYS_futex, w.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, 1) };
}

pub fn close(fd: i32) {
    // SAFETY: closes a descriptor this process opened and no longer uses.
    unsafe { libc::close(fd) };
}

/// The median (ns) criterion estimated for `group/bench`, from `target/criterion` (or `dir`).
pub fn criterion_median_ns(dir: Option<&std::path::Path>, group: &str, bench: &str) -> Option<f64> {
    let root = match dir {
        Some(d) => d.to_path_buf(),
        None => std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent()?.join("target").join("criterion"),
    };
    let p = root.join(group).join(bench).join("new").join("estimates.json");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok()?;
    v["median"]["point_estimate"].as_f64()
}

/// Formats nanoseconds for tables.
pub fn human_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.1} ns")
    }
}

/// CPU time (user + system) the calling process used so far.
pub fn process_cpu_time() -> Duration {
    // SAFETY: getrusage fills a plain struct we own.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// A non-blocking eventfd that child processes inherit.
pub fn eventfd() -> i32 {
    // SAFETY: eventfd takes an initial value and flags.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK) };
    assert!(fd >= 0, "eventfd: {}", std::io::Error::last_os_error());
    fd
}

/// Reads an eventfd, busy-polling until it is non-zero (the way a polling MPI library waits).
pub fn spin_read(fd: i32) -> u64 {
    loop {
        let mut v = 0u64;
        // SAFETY: reads 8 bytes into a local u64 from an open non-blocking eventfd.
        if unsafe { libc::read(fd, (&mut v as *mut u64).cast(), 8) } == 8 {
            return v;
        }
        std::hint::spin_loop();
    }
}

/// Reads an eventfd, sleeping in poll(2) until it is readable (the way an interrupt-driven
/// library waits).
pub fn blocking_read(fd: i32) -> u64 {
    loop {
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut p, 1, -1) };
        let mut v = 0u64;
        // SAFETY: as in `spin_read`.
        if unsafe { libc::read(fd, (&mut v as *mut u64).cast(), 8) } == 8 {
            return v;
        }
    }
}
