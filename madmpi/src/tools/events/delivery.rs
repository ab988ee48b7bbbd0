//! From the runtime's hooks to the callbacks. The observers run on the firing thread (often
//! inside nmad or pioman with locks held): they only stamp and `try_send` into a bounded queue.
//! A pioman task drains the queue and calls the callbacks, from whatever context polls it.
//!
//! The hooks are installed while some registration has a callback, and the task registered
//! while, in addition, MPI runs; otherwise firing costs pioman and nmad one relaxed load.

use super::super::kinds::Safety;
use super::super::runtime;
use super::registrations;
use super::types::{self, Instance, TYPES};
use pioman::{LtaskHandle, Poll, PollCtx, Source};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

/// Instances waiting for delivery, at most.
const QUEUE: usize = 4096;
/// Instances delivered per poll, at most (a poll must stay short).
const BATCH: usize = 256;

struct Queue {
    tx: SyncSender<Instance>,
    rx: Mutex<Receiver<Instance>>,
    /// Per event type: whether a registration listens (the observers drop the others early).
    listened: Vec<AtomicBool>,
    /// Per event type: instances lost because the queue was full.
    overflow: Vec<AtomicU64>,
}

static Q: LazyLock<Queue> = LazyLock::new(|| {
    let (tx, rx) = sync_channel(QUEUE);
    Queue {
        tx,
        rx: Mutex::new(rx),
        listened: TYPES.iter().map(|_| AtomicBool::new(false)).collect(),
        overflow: TYPES.iter().map(|_| AtomicU64::new(0)).collect(),
    }
});

/// The queue overflows, all types together, when losses were last reported.
static REPORTED_OVERFLOW: AtomicU64 = AtomicU64::new(0);

/// The pioman task, while registered.
static TASK: Mutex<Option<LtaskHandle>> = Mutex::new(None);

pub(crate) fn overflow_count(event: usize) -> u64 {
    Q.overflow[event].load(Relaxed)
}

fn enqueue(event: usize, make: impl FnOnce() -> Instance) {
    if !Q.listened[event].load(Relaxed) {
        return;
    }
    match Q.tx.try_send(make()) {
        Ok(()) => {}
        Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
            Q.overflow[event].fetch_add(1, Relaxed);
        }
    }
}

/// Registrations changed: install or remove the hooks, register or remove the task.
pub(crate) fn listeners_changed() {
    let listened = registrations::listened();
    for (flag, on) in Q.listened.iter().zip(&listened) {
        flag.store(*on, Relaxed);
    }
    let any = listened.iter().any(|b| *b);
    if any {
        pioman::observe::EVENTS
            .set(Some(Arc::new(|e| enqueue(types::pioman_type(e), || types::from_pioman(e)))));
        nmad::observe::EVENTS.set(Some(Arc::new(|e| enqueue(types::nmad_type(e), || types::from_nmad(e)))));
    } else {
        pioman::observe::EVENTS.set(None);
        nmad::observe::EVENTS.set(None);
    }
    sync_task(any);
}

/// MPI started or ended.
pub(crate) fn runtime_changed() {
    let any = Q.listened.iter().any(|b| b.load(Relaxed));
    sync_task(any);
}

fn sync_task(wanted: bool) {
    let mut task = TASK.lock().unwrap_or_else(PoisonError::into_inner);
    let nm = runtime::nmad();
    match (wanted && nm.is_some(), task.is_some()) {
        (true, false) => {
            let nm = nm.expect("checked above");
            *task = nm.pioman().register(Arc::new(Deliverer), Default::default()).ok();
        }
        // Not from a callback or dropped handler: the task is being polled then, and removing
        // it waits for that poll (it stays registered, idle, until a later change).
        (false, true) if !DELIVERING.with(|d| d.get()) => {
            if let Some(t) = task.take() {
                t.remove();
            }
        }
        _ => {}
    }
}

/// Delivers what is queued now (also called directly by tests).
pub(crate) fn deliver_pending() -> usize {
    let Ok(rx) = Q.rx.try_lock() else { return 0 };
    DELIVERING.with(|d| d.set(true));
    let n = deliver_from(&rx);
    drop(rx);
    // Losses are rare: look at the registrations only when something was lost or delivered
    // (a delivery may have found a registration without a callback for this context).
    let overflow: u64 = Q.overflow.iter().map(|o| o.load(Relaxed)).sum();
    if n > 0 || REPORTED_OVERFLOW.swap(overflow, Relaxed) != overflow {
        report_losses();
    }
    DELIVERING.with(|d| d.set(false));
    n
}

fn deliver_from(rx: &Receiver<Instance>) -> usize {
    let mut n = 0;
    while n < BATCH {
        let Ok(inst) = rx.try_recv() else { break };
        n += 1;
        for r in registrations::of_type(inst.event) {
            match r.callback_for(Safety::ThreadSafe) {
                Some(cb) => r.run_if_alive(|| with_current(&inst, || cb(&inst, Safety::ThreadSafe))),
                None => {
                    r.lost.fetch_add(1, Relaxed);
                }
            }
        }
    }
    n
}

/// Tells the dropped handlers what was lost since they last heard.
fn report_losses() {
    for (event, t) in TYPES.iter().enumerate() {
        let overflow = Q.overflow[event].load(Relaxed);
        for r in registrations::of_type(event) {
            let seen = r.seen_overflow.swap(overflow, Relaxed);
            let lost = r.lost.swap(0, Relaxed) + overflow.saturating_sub(seen);
            if lost > 0
                && let Some(h) = r.dropped_handler()
            {
                r.run_if_alive(|| h(lost, t.source));
            }
        }
    }
}

thread_local! {
    /// Whether this thread is delivering (running callbacks and dropped handlers).
    static DELIVERING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The instance whose callback runs on this thread (instance handles are valid only there).
    static CURRENT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn with_current<R>(inst: &Instance, f: impl FnOnce() -> R) -> R {
    let prev = CURRENT.with(|c| c.replace(inst as *const Instance as usize));
    let r = f();
    CURRENT.with(|c| c.set(prev));
    r
}

/// Runs `f` on the instance whose address is `handle`, if a callback of this thread is being
/// given that instance now.
pub fn with_instance<R>(handle: usize, f: impl FnOnce(&Instance) -> R) -> Option<R> {
    if handle == 0 || CURRENT.with(|c| c.get()) != handle {
        return None;
    }
    // SAFETY: `handle` is the address of the instance `with_current` published on this thread,
    // borrowed by the delivery loop for the whole callback, which is still running (it is on
    // this thread's stack below us): the reference cannot outlive it.
    Some(f(unsafe { &*(handle as *const Instance) }))
}

struct Deliverer;

impl Source for Deliverer {
    fn name(&self) -> &str {
        "madmpi-mpit-events"
    }

    fn poll(&self, _: &mut PollCtx) -> Poll {
        if deliver_pending() > 0 { Poll::Progress } else { Poll::Idle }
    }
}
