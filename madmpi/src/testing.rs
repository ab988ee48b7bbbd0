//! The harness of the multi-rank unit tests: ranks as threads of this process over the shm
//! driver, a watchdog that turns a hang into a failure, and [`on_all`], which runs a closure on
//! the world communicator of every rank.
//!
//! Test code only: it sits above every module (it assembles the runtime as `env::process`
//! does), so the layering the modules keep does not bind it.

use crate::comm::Comm;
use nmad::Nmad;
use nmad::bootstrap::LocalJob;
use std::sync::Arc;

/// Ends the test process if a multi-rank test outlives `limit`: a rank that panics leaves
/// its peers waiting for it forever, and a hang must be a failure, not a stuck CI job.
pub(crate) struct Watchdog(Option<std::sync::mpsc::Sender<()>>);

pub(crate) fn watchdog(what: &'static str, limit: std::time::Duration) -> Watchdog {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
            eprintln!("{what}: still running after {limit:?} (a rank panicked or hung: see above)");
            std::process::exit(101);
        }
    });
    Watchdog(Some(tx))
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

/// `n` ranks in this process (threads as ranks) over the shm driver.
pub(crate) fn ranks(n: u32) -> Vec<Nmad> {
    let boots = LocalJob::ranks(n).unwrap();
    let handles: Vec<_> = boots
        .into_iter()
        .map(|b| {
            std::thread::spawn(move || {
                let config = nmad::Config {
                    drivers: Some(vec!["self".into(), "shm".into()]),
                    ..nmad::Config::from_env().unwrap()
                };
                let pio = pioman::Pioman::builder().without_marcel().build().unwrap();
                Nmad::builder().bootstrap(Arc::new(b)).pioman(pio).config(config).build().unwrap()
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

/// Finalizes every rank at once (finalize is collective: one at a time would deadlock).
pub(crate) fn finalize_all(nms: Vec<Nmad>) {
    let hs: Vec<_> = nms.into_iter().map(|nm| std::thread::spawn(move || nm.finalize())).collect();
    for h in hs {
        h.join().unwrap().unwrap();
    }
}

/// Runs `f(world)` on `n` ranks at once (threads as ranks over shm), under a watchdog;
/// returns each rank's result. The multi-rank tests of every module use it.
pub(crate) fn on_all<T: Send>(n: u32, f: impl Fn(Comm) -> T + Sync) -> Vec<T> {
    let _dog = watchdog("a multi-rank test", std::time::Duration::from_secs(120));
    let nms = ranks(n);
    let out = std::thread::scope(|t| {
        let hs: Vec<_> = nms
            .iter()
            .map(|nm| {
                let f = &f;
                t.spawn(move || f(Comm::world(&crate::env::process::assemble(nm.clone()))))
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    finalize_all(nms);
    out
}

/// The unit tests' global allocator: the system's, counting what each thread allocates, so a
/// test can check that a path allocates nothing ([`allocations`]).
struct Counting;

thread_local! {
    static ALLOCATIONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn count_one() {
    // `try_with`: an allocation while the thread's locals are torn down is not counted.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: every call is forwarded to the system allocator with its arguments unchanged; the
// count is a thread-local cell without a destructor (touching it never allocates).
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        count_one();
        // SAFETY: the caller's contract, forwarded.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        count_one();
        // SAFETY: the caller's contract, forwarded.
        unsafe { std::alloc::System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        count_one();
        // SAFETY: the caller's contract, forwarded.
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: the caller's contract, forwarded.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// How many allocations (and reallocations) the calling thread has made so far.
pub(crate) fn allocations() -> u64 {
    ALLOCATIONS.with(|c| c.get())
}
