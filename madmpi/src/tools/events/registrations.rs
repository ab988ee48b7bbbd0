//! Event registrations (`MPI_T_event_registration`): the callbacks a tool registered for one
//! event type, per safety level, its dropped handler and its info objects.
//!
//! Freeing: MPI runs the free callback once no callback of the registration can run any more.
//! A deliverer counts itself `in_flight` around each callback and checks `alive` after doing so;
//! whichever of the freeing thread and the last deliverer sees the registration dead and idle
//! runs the free callback (once: `freed`).
//!
//! Owns registrations and their table; delivery is in [`super::delivery`].

use super::super::error::{TError, TResult};
use super::super::kinds::Safety;
use super::types::{Instance, TYPES};
use crate::info::Info;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex, PoisonError};

/// A callback: called with the instance and the safety level of the calling context.
pub type Callback = Arc<dyn Fn(&Instance, Safety) + Send + Sync>;
/// A dropped handler: called with the count of instances lost and their source.
pub type Dropped = Arc<dyn Fn(u64, usize) + Send + Sync>;
/// Called once when the registration is gone (`MPI_T_event_handle_free`).
pub type FreeCallback = Box<dyn FnOnce() + Send>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

pub struct Registration {
    pub id: u64,
    pub event: usize,
    info: Mutex<Info>,
    callbacks: Mutex<[Option<(Callback, Info)>; 4]>,
    dropped: Mutex<Option<Dropped>>,
    /// Instances lost for this registration not yet reported to its dropped handler.
    pub(crate) lost: AtomicU64,
    /// The type's queue-overflow count already accounted for in `lost`.
    pub(crate) seen_overflow: AtomicU64,
    alive: AtomicBool,
    in_flight: AtomicUsize,
    freed: AtomicBool,
    on_free: Mutex<Option<FreeCallback>>,
}

impl Registration {
    /// The callback to call from a context requiring `level`: the least restrictive one
    /// registered at `level` or above.
    pub(crate) fn callback_for(&self, level: Safety) -> Option<Callback> {
        let cbs = lock(&self.callbacks);
        Safety::ALL
            .iter()
            .filter(|s| **s >= level)
            .find_map(|s| cbs[*s as usize].as_ref().map(|c| c.0.clone()))
    }

    pub(crate) fn dropped_handler(&self) -> Option<Dropped> {
        lock(&self.dropped).clone()
    }

    /// Runs `f` unless the registration is freed; the free callback waits for it.
    pub(crate) fn run_if_alive(&self, f: impl FnOnce()) {
        self.in_flight.fetch_add(1, SeqCst);
        if self.alive.load(SeqCst) {
            f();
        }
        if self.in_flight.fetch_sub(1, SeqCst) == 1 && !self.alive.load(SeqCst) {
            self.finish_free();
        }
    }

    fn finish_free(&self) {
        if !self.freed.swap(true, SeqCst)
            && let Some(cb) = lock(&self.on_free).take()
        {
            cb();
        }
    }
}

static TABLE: Mutex<Option<HashMap<u64, Arc<Registration>>>> = Mutex::new(None);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn with_table<R>(f: impl FnOnce(&mut HashMap<u64, Arc<Registration>>) -> R) -> R {
    let mut g = lock(&TABLE);
    f(g.get_or_insert_with(HashMap::new))
}

/// The registrations of event type `event` (for delivery).
pub(crate) fn of_type(event: usize) -> Vec<Arc<Registration>> {
    with_table(|t| t.values().filter(|r| r.event == event).cloned().collect())
}

/// How many registrations with at least one callback each event type has.
pub(crate) fn listened() -> Vec<bool> {
    with_table(|t| {
        let mut v = vec![false; TYPES.len()];
        for r in t.values() {
            if lock(&r.callbacks).iter().any(Option::is_some) {
                v[r.event] = true;
            }
        }
        v
    })
}

pub fn get(id: u64) -> TResult<Arc<Registration>> {
    with_table(|t| t.get(&id).cloned()).ok_or(TError::InvalidHandle)
}

/// A registration for event type `event`, with the hints `info` (none are understood: the
/// info used is empty).
pub fn alloc(event: usize, info: Info) -> TResult<u64> {
    if event >= TYPES.len() {
        return Err(TError::InvalidIndex);
    }
    let _ = info;
    let id = NEXT_ID.fetch_add(1, Relaxed);
    let r = Registration {
        id,
        event,
        info: Mutex::new(Info::new()),
        callbacks: Mutex::new([None, None, None, None]),
        dropped: Mutex::new(None),
        lost: AtomicU64::new(0),
        seen_overflow: AtomicU64::new(super::delivery::overflow_count(event)),
        alive: AtomicBool::new(true),
        in_flight: AtomicUsize::new(0),
        freed: AtomicBool::new(false),
        on_free: Mutex::new(None),
    };
    with_table(|t| t.insert(id, Arc::new(r)));
    Ok(id)
}

/// Frees registration `id`: no callback starts from now on; `on_free` runs once none runs.
pub fn free(id: u64, on_free: Option<FreeCallback>) -> TResult<()> {
    let r = with_table(|t| t.remove(&id)).ok_or(TError::InvalidHandle)?;
    *lock(&r.on_free) = on_free;
    r.alive.store(false, SeqCst);
    if r.in_flight.load(SeqCst) == 0 {
        r.finish_free();
    }
    super::delivery::listeners_changed();
    Ok(())
}

/// Sets (or with `None` removes) the callback of `level`, with its hints.
pub fn set_callback(id: u64, level: Safety, cb: Option<Callback>) -> TResult<()> {
    let r = get(id)?;
    lock(&r.callbacks)[level as usize] = cb.map(|c| (c, Info::new()));
    super::delivery::listeners_changed();
    Ok(())
}

pub fn set_dropped_handler(id: u64, h: Option<Dropped>) -> TResult<()> {
    *lock(&get(id)?.dropped) = h;
    Ok(())
}

/// The hints in use (none is understood, so always empty).
pub fn info(id: u64) -> TResult<Info> {
    Ok(lock(&get(id)?.info).clone())
}

/// Takes hints for the registration: none is understood, so the hints in use stay empty.
pub fn set_info(id: u64, _hints: &Info) -> TResult<()> {
    get(id).map(drop)
}

/// The hints in use for the callback of `level` (`Invalid` without such a callback).
pub fn callback_info(id: u64, level: Safety) -> TResult<Info> {
    let r = get(id)?;
    let cbs = lock(&r.callbacks);
    cbs[level as usize].as_ref().map(|c| c.1.clone()).ok_or(TError::Invalid)
}

pub fn set_callback_info(id: u64, level: Safety, _hints: &Info) -> TResult<()> {
    let r = get(id)?;
    let cbs = lock(&r.callbacks);
    cbs[level as usize].as_ref().map(drop).ok_or(TError::Invalid)
}
