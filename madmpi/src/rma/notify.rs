//! Waiting for a window's target-side counts (fence, post/start, complete/wait, a local lock):
//! each waiter sleeps on a condition of its own, which the handler signals after every message
//! it applied, so no waiter clears another's wake-up.
//!
//! Owns the waiter list; it must not know what is waited for.

use crate::error::{Error, ErrorClass, Result};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

#[derive(Default)]
pub(crate) struct Notify {
    waiters: Mutex<Vec<Arc<pioman::Cond>>>,
}

/// Signalled bit of a waiter's condition.
const WOKEN: u32 = 1;

impl Notify {
    pub(crate) fn notify_all(&self) {
        for c in self.waiters.lock().unwrap_or_else(PoisonError::into_inner).iter() {
            c.signal(WOKEN);
        }
    }

    /// Waits until `ready()`, driving progress; fails if a process of `watch` (nmad peers) is
    /// known failed meanwhile.
    pub(crate) fn wait_until(
        &self,
        nm: &nmad::Nmad,
        watch: &[u32],
        mut ready: impl FnMut() -> bool,
    ) -> Result<()> {
        if ready() {
            return Ok(());
        }
        let me = Arc::new(pioman::Cond::new());
        self.waiters.lock().unwrap_or_else(PoisonError::into_inner).push(me.clone());
        let r = loop {
            if ready() {
                break Ok(());
            }
            if !nm.pioman().wait_timeout(&me, WOKEN, Duration::from_millis(100)) {
                let failed = nm.failed_peers();
                if let Some(p) = watch.iter().find(|p| failed.contains(p)) {
                    break Err(Error::new(ErrorClass::MpixProcFailed, format!("process {p} failed")));
                }
            }
            me.clear(WOKEN);
        };
        self.waiters.lock().unwrap_or_else(PoisonError::into_inner).retain(|c| !Arc::ptr_eq(c, &me));
        r
    }
}
