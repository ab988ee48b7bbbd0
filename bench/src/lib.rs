//! Benchmark support shared by the criterion benches in `benches/`.
//!
//! The scheduler benches (`benches/sched.rs`) measure marcel against OS threads in the same run.
//! Later issues add the `madbench` suite (MPI latency, bandwidth, overlap, reactivity) here.

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
