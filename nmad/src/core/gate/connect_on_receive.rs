//! Connecting to a peer when a receive from it is posted and no link exists (connections are
//! otherwise made by the first send): without a link, nothing would ever tell this process that
//! the peer died, and the receive would wait forever. A refused or unanswered connection fails
//! the gate, and with it the receive; a live peer is only connected a little earlier than its
//! first message would have connected it (crossing connections are already handled: each side
//! adopts its own and reads from both).
//!
//! Owns only that decision; it must not touch the gate's queues (`Gate::fail` does).

use super::super::Core;
use super::Gate;
use std::sync::atomic::Ordering::Relaxed;

impl Gate {
    /// Connects rail 0 if no rail has a link; a failure fails the gate. Once a link was seen,
    /// later receives skip the check (one relaxed load on the receive path, no rail lock).
    pub(crate) fn connect_for_receive(&self, core: &Core) {
        if self.linked_once.load(Relaxed) || self.failed.get().is_some() {
            return;
        }
        if self.rails.iter().any(|r| r.linked().is_some()) {
            self.linked_once.store(true, Relaxed);
            return;
        }
        let Some(rail) = self.rails.first() else { return };
        match rail.link(core) {
            Ok(_) => self.linked_once.store(true, Relaxed),
            Err(e) => self.fail(core, &format!("connecting failed: {e}")),
        }
    }
}
