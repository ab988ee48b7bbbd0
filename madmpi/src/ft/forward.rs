//! Revocation notices, received and forwarded: every communicator's session carries a monitor
//! that, when a notice arrives on a session not revoked yet, sends the notice on to the other
//! members (but its sender), then revokes the session, at once, from the progress engine (a
//! member blocked in a receive learns at once). So a revoker that dies while sending its
//! notices still revokes everyone (as MPICH). Later notices find the session revoked: an
//! arrival on a revoked session is dropped before any monitor sees it, so each member forwards
//! once (or twice, harmlessly, if two notices arrive at the same instant).
//!
//! The forwarded notices are nonblocking sends (the monitor must not wait in the progress
//! engine), begun before the revocation (sends on a revoked session fail); their requests are
//! kept by the monitor until they complete.
//!
//! Owns the monitor and the forwarded sends; it must not touch what revocation does (nmad's).

use super::revoke_tag;
use crate::comm::Comm;
use nmad::{Data, SendMode, Session, Source, TagMatch};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

/// Forwarded notices in flight (empty messages: nothing but the requests to keep).
#[derive(Default)]
struct InFlight(Mutex<Vec<Pin<Box<nmad::Request>>>>);

impl InFlight {
    /// Sends the notice to each of `to`; keeps the requests (dropping those completed).
    fn send(&self, session: &Session, to: impl Iterator<Item = u32>) {
        let mut reqs = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        reqs.retain(|r| !r.test());
        for w in to {
            let r = Box::pin(nmad::Request::new());
            // SAFETY: no memory is sent (`Data::None`); the request is pinned in its box, which
            // `reqs` keeps until it completed (or leaks: see `Drop`).
            // A member that cannot be reached is failed: it needs no notice.
            let _ = unsafe { session.isend(w, revoke_tag(), Data::None, SendMode::default(), r.as_ref()) };
            reqs.push(r);
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        // Dropping a request in flight would wait for it, here maybe in the progress engine or
        // at shutdown: one still in flight is leaked instead (its memory stays valid for the core).
        let reqs = std::mem::take(self.0.get_mut().unwrap_or_else(PoisonError::into_inner));
        for r in reqs {
            if !r.test() {
                std::mem::forget(r);
            }
        }
    }
}

/// Makes `comm`'s session forward and obey revocation notices (module docs).
pub(super) fn watch(comm: &Comm) {
    let me = comm.runtime_nmad().rank();
    let others: Arc<[u32]> = comm.group().members().iter().copied().filter(|&w| w != me).collect();
    let in_flight = InFlight::default();
    let cb: nmad::SessionMonitor = Arc::new(move |s: &Session, st: &nmad::Status| {
        if s.revoked().is_some() {
            return;
        }
        in_flight.send(s, others.iter().copied().filter(|&w| w != st.source));
        s.revoke(&format!("by rank {}", st.source));
    });
    comm.session().monitor(Source::Any, TagMatch::exact(revoke_tag()), cb);
}
