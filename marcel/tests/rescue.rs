//! Spare kernel-thread rescue: `marcel::blocking` keeps a core's other user threads running while
//! the call blocks its kernel thread. Timing tests here run one at a time (a shared lock) so that
//! they do not compete for the two cores with each other.

use marcel::Runtime;
use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

fn pipe() -> (i32, i32) {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` is a valid 2-int array for pipe(2).
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    (fds[0], fds[1])
}

fn write_byte(fd: i32) {
    // SAFETY: writes one byte from a static buffer to an open pipe.
    assert_eq!(unsafe { libc::write(fd, b"x".as_ptr().cast(), 1) }, 1);
}

fn read_byte(fd: i32) -> isize {
    let mut b = [0u8; 1];
    // SAFETY: reads at most one byte into a local buffer from an open pipe.
    unsafe { libc::read(fd, b.as_mut_ptr().cast(), 1) }
}

fn spin_for(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// One LWP; a thread blocks 200 ms in a pipe read inside `blocking` while 1000 threads compute:
/// they all finish before the pipe is written.
fn rescue_with(sentinel: bool) {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rt = Runtime::builder().lwps(1).sentinel(sentinel).ignore_env().build().unwrap();
    let (r, w) = pipe();
    let t0 = Instant::now();
    let (last_compute, written_at, read_at) = rt.block_on(move || {
        let reader = marcel::spawn(move || {
            assert_eq!(marcel::blocking(|| read_byte(r)), 1);
            t0.elapsed()
        });
        marcel::yield_now(); // let the reader block first
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            let at = t0.elapsed();
            write_byte(w);
            at
        });
        let computes: Vec<_> = (0..1000)
            .map(|_| {
                marcel::spawn(move || {
                    spin_for(Duration::from_micros(20));
                    t0.elapsed()
                })
            })
            .collect();
        let last = computes.into_iter().map(|h| h.join().unwrap()).max().unwrap();
        let written = writer.join().unwrap();
        (last, written, reader.join().unwrap())
    });
    let st = rt.handle().stats();
    assert!(
        last_compute < written_at,
        "compute finished at {last_compute:?}, pipe written at {written_at:?}"
    );
    assert!(read_at >= written_at);
    assert!(st.rescues >= 1, "{st:?}");
    // SAFETY: closing our own pipe fds.
    unsafe {
        libc::close(r);
        libc::close(w);
    }
}

#[test]
fn blocked_read_does_not_stall_other_threads() {
    rescue_with(true);
}

#[test]
fn monitor_rescues_without_sentinel() {
    rescue_with(false);
}

#[test]
fn call_that_does_not_block_keeps_the_lwp() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rt = Runtime::builder().lwps(1).ignore_env().build().unwrap();
    rt.block_on(|| {
        for _ in 0..10_000 {
            // SAFETY: getppid has no preconditions.
            let p = marcel::blocking(|| unsafe { libc::getppid() });
            assert!(p > 0);
            assert_eq!(marcel::current_lwp(), Some(0), "returned to its LWP");
        }
    });
    assert!(rt.handle().stats().rescues <= 2, "{:?}", rt.handle().stats());
}

#[test]
fn inside_blocking_the_caller_acts_as_an_os_thread() {
    let rt = Runtime::builder().lwps(1).ignore_env().build().unwrap();
    rt.block_on(|| {
        let me = marcel::current().id();
        let m = Arc::new(marcel::sync::Mutex::new(0));
        let inner = marcel::blocking(|| {
            assert_eq!(marcel::current_lwp(), None);
            assert_eq!(marcel::current().id(), me, "identity is kept");
            *m.lock() += 1; // blocks the kernel thread if needed, never switches
            marcel::yield_now();
            marcel::sleep(Duration::from_millis(1));
            marcel::blocking(|| 7) // nested: just runs
        });
        assert_eq!(inner, 7);
        assert_eq!(*m.lock(), 1);
        assert!(marcel::current_lwp().is_some());
        // Panics inside go through, and the thread keeps working.
        let r = std::panic::catch_unwind(|| marcel::blocking(|| panic!("in blocking")));
        assert!(r.is_err());
        marcel::yield_now();
        assert!(marcel::current_lwp().is_some());
    });
    assert_eq!(marcel::blocking(|| 3), 3, "from a plain OS thread it just runs");
}

#[test]
fn many_blocking_calls_at_once() {
    // 2 LWPs, 16 threads each blocked in a read: spares are created on demand, everyone finishes.
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rt = Runtime::builder().lwps(2).ignore_env().build().unwrap();
    let pipes: Vec<_> = (0..16).map(|_| pipe()).collect();
    let writers: Vec<i32> = pipes.iter().map(|p| p.1).collect();
    let done = Arc::new(AtomicUsize::new(0));
    let d2 = done.clone();
    rt.block_on(move || {
        let readers: Vec<_> = pipes
            .iter()
            .map(|&(r, _)| {
                let d = d2.clone();
                marcel::spawn(move || {
                    assert_eq!(marcel::blocking(|| read_byte(r)), 1);
                    d.fetch_add(1, SeqCst);
                })
            })
            .collect();
        let computes: Vec<_> =
            (0..200).map(|_| marcel::spawn(|| spin_for(Duration::from_micros(50)))).collect();
        for c in computes {
            c.join().unwrap();
        }
        assert_eq!(d2.load(SeqCst), 0, "no reader could have finished yet");
        for w in &writers {
            write_byte(*w);
        }
        for r in readers {
            r.join().unwrap();
        }
    });
    assert_eq!(done.load(SeqCst), 16);
}
