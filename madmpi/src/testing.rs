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
