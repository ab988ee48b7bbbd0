//! The process's one-sided service: nmad's active-message handler for [`super::wire::AM_ID`],
//! the table of live windows by context id, and the reply slots origins wait on.
//!
//! Messages are handled on whichever thread runs nmad's progression (idle cores, progression
//! threads, threads waiting in MPI), so a target that computes without calling MPI still
//! applies operations, and an origin's flush or unlock needs nothing from the target's
//! application. Records for a window are applied by the window's target state
//! ([`super::target`]); answers go to their [`Slot`].
//!
//! Owns the registration (once per runtime, on first window creation, before the creation's
//! last exchange so no peer can address a window that is not registered yet) and the routing;
//! it holds windows weakly (a freed window's late messages are dropped and logged).

use super::target::WinCore;
use super::wire::{self, Malformed, Record};
use crate::comm::Extension;
use crate::comm::Runtime;
use crate::datatype::{Datatype, Predefined, TypeLayout};
use crate::error::{Error, ErrorClass, Result};
use nmad::Layout;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::Duration;

/// The service of one runtime.
#[derive(Default)]
pub(crate) struct Service {
    windows: RwLock<HashMap<u32, Weak<WinCore>>>,
    slots: Mutex<HashMap<u64, Arc<Slot>>>,
    next_slot: AtomicU64,
}

struct Handler(Arc<Service>);

/// The runtime's service (an extension of the runtime), registered with nmad on first use.
pub(crate) struct Registered(Arc<Service>);

impl Extension for Registered {}

impl Service {
    pub(crate) fn of(rt: &Runtime) -> Result<Arc<Service>> {
        static REGISTER: Mutex<()> = Mutex::new(());
        let _one = REGISTER.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(r) = rt.extensions().get::<Registered>() {
            return Ok(r.0.clone());
        }
        let service = Arc::new(Service::default());
        rt.nm
            .register_am(wire::AM_ID, Arc::new(Handler(service.clone())))
            .map_err(|e| Error::intern(format!("one-sided messages: {e}")))?;
        Ok(rt.extensions().get_or_insert_with(|| Registered(service)).0.clone())
    }

    pub(crate) fn add(&self, ctx: u32, core: &Arc<WinCore>) {
        self.windows.write().unwrap_or_else(PoisonError::into_inner).insert(ctx, Arc::downgrade(core));
    }

    pub(crate) fn remove(&self, ctx: u32) {
        self.windows.write().unwrap_or_else(PoisonError::into_inner).remove(&ctx);
    }

    fn window(&self, ctx: u32) -> Option<Arc<WinCore>> {
        self.windows.read().unwrap_or_else(PoisonError::into_inner).get(&ctx)?.upgrade()
    }

    /// A new slot for an answer: `expect` bytes written through `sink` (done at once if 0),
    /// or, without a sink, an ack.
    pub(crate) fn slot(&self, peer: u32, expect: u64, sink: Option<Sink>) -> Arc<Slot> {
        let id = self.next_slot.fetch_add(1, Relaxed);
        let acked = sink.is_some();
        let slot = Arc::new(Slot {
            id,
            peer,
            cond: pioman::Cond::new(),
            state: Mutex::new(SlotState { remaining: expect, acked, error: None, sink }),
        });
        if acked && expect == 0 {
            slot.cond.signal(nmad::COMPLETED);
        } else {
            self.slots.lock().unwrap_or_else(PoisonError::into_inner).insert(id, slot.clone());
        }
        slot
    }

    fn answer(
        &self,
        from: u32,
        reply: u64,
        f: impl FnOnce(&mut SlotState) -> std::result::Result<(), String>,
    ) {
        let slot = self.slots.lock().unwrap_or_else(PoisonError::into_inner).get(&reply).cloned();
        let Some(slot) = slot.filter(|s| s.peer == from) else {
            log::warn!("one-sided: an answer from {from} for no slot of it ({reply})");
            return;
        };
        let done = {
            let mut st = slot.state.lock().unwrap_or_else(PoisonError::into_inner);
            if let Err(e) = f(&mut st) {
                st.error.get_or_insert_with(|| Error::intern(format!("one-sided answer from {from}: {e}")));
                st.remaining = 0;
                st.acked = true;
            }
            st.remaining == 0 && st.acked
        };
        if done {
            self.slots.lock().unwrap_or_else(PoisonError::into_inner).remove(&reply);
            slot.cond.signal(nmad::COMPLETED);
        }
    }

    /// Handles one message from `from` (an nmad peer): the target's records and the answers
    /// to this process's operations. Also called directly for a window's own rank.
    pub(crate) fn handle(&self, from: u32, header: &[u8], payload: &[u8]) {
        let decoded = wire::decode(header, payload, |e| elem_size(e).map(|s| s as usize));
        let (ctx, records) = match decoded {
            Ok(d) => d,
            Err(e) => return log::error!("one-sided: from {from}: {e}"),
        };
        let mut ours = Vec::new();
        for (rec, data) in records {
            match rec {
                Record::Ack { reply, class } => self.answer(from, reply, |st| {
                    if class != 0 {
                        let class = ErrorClass::from_code(i32::from(class)).unwrap_or(ErrorClass::Other);
                        st.error.get_or_insert_with(|| Error::new(class, "at the target".to_string()));
                        // No data follows a refused operation.
                        st.remaining = 0;
                    }
                    st.acked = true;
                    Ok(())
                }),
                Record::Data { reply, off, .. } => self.answer(from, reply, |st| st.deliver(off, data)),
                // Recorded before the acks that follow it: a flush woken by its ack reports it.
                Record::Fault { class } => match self.window(ctx) {
                    Some(core) => core.fault(from, class),
                    None => log::warn!("one-sided: a fault from {from} for window {ctx}, which is not here"),
                },
                _ => ours.push((rec, data)),
            }
        }
        if ours.is_empty() {
            return;
        }
        match self.window(ctx) {
            Some(core) => {
                if let Err(Malformed(e)) = core.receive(from, ours) {
                    log::error!("one-sided: from {from}: window {ctx}: {e}");
                }
            }
            None => log::warn!(
                "one-sided: {} records from {from} for window {ctx}, which is not here",
                ours.len()
            ),
        }
    }
}

impl nmad::AmHandler for Handler {
    fn on_message(&self, from: nmad::drivers::PeerId, header: &[u8], payload: &[u8]) {
        self.0.handle(from, header, payload);
    }
}

/// The size of the predefined type with index `e` ([`Predefined::ALL`]).
pub(crate) fn elem_size(e: u16) -> Option<u64> {
    Predefined::ALL.get(e as usize).map(|p| Datatype::predefined(*p).size())
}

/// Where an answer's bytes go: `count` elements of a committed type at `buf` (an origin
/// buffer the program keeps valid until the operation completes, as MPI requires).
pub(crate) struct Sink {
    pub(crate) buf: *mut u8,
    pub(crate) layout: TypeLayout,
}

// SAFETY: the buffer belongs to the program, which keeps it valid and untouched until the
// operation completes (MPI's rule for get-like operations); only the slot writes it.
unsafe impl Send for Sink {}

pub(crate) struct SlotState {
    remaining: u64,
    acked: bool,
    error: Option<Error>,
    sink: Option<Sink>,
}

impl SlotState {
    fn deliver(&mut self, off: u64, data: &[u8]) -> std::result::Result<(), String> {
        let Some(sink) = &self.sink else { return Err("data for an ack".into()) };
        let total = sink.layout.size() as u64;
        let end = off.checked_add(data.len() as u64).filter(|&e| e <= total);
        if end.is_none() || data.len() as u64 > self.remaining {
            return Err(format!("{} bytes at {off} of a {total}-byte answer", data.len()));
        }
        let mut src = data;
        sink.layout.blocks(off as usize, &mut |o, n| {
            let n = n.min(src.len());
            let (piece, rest) = src.split_at(n);
            // SAFETY: `o` is a block of the sink's layout, which the program keeps writable
            // (Sink); `piece` is within the received payload.
            unsafe { std::ptr::copy_nonoverlapping(piece.as_ptr(), sink.buf.wrapping_offset(o), n) };
            src = rest;
            !src.is_empty()
        });
        self.remaining -= data.len() as u64;
        Ok(())
    }
}

/// An answer an origin waits for (a get's data, an ack of flush or unlock).
pub(crate) struct Slot {
    pub(crate) id: u64,
    peer: u32,
    cond: pioman::Cond,
    state: Mutex<SlotState>,
}

impl Slot {
    /// A slot complete from the start (an operation the fast path did in the call).
    pub(crate) fn done() -> Arc<Slot> {
        let state = SlotState { remaining: 0, acked: true, error: None, sink: None };
        let slot = Slot { id: u64::MAX, peer: u32::MAX, cond: pioman::Cond::new(), state: Mutex::new(state) };
        slot.cond.signal(nmad::COMPLETED);
        Arc::new(slot)
    }

    pub(crate) fn is_done(&self) -> bool {
        self.cond.test(nmad::COMPLETED)
    }

    pub(crate) fn cond(&self) -> &pioman::Cond {
        &self.cond
    }

    /// The outcome once done.
    pub(crate) fn outcome(&self) -> Option<Result<()>> {
        if !self.is_done() {
            return None;
        }
        let st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        Some(st.error.clone().map_or(Ok(()), Err))
    }

    /// Completes the slot with `e` (its target failed).
    pub(crate) fn fail(&self, e: Error) {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        st.error.get_or_insert(e);
        st.remaining = 0;
        st.acked = true;
        drop(st);
        self.cond.signal(nmad::COMPLETED);
    }

    /// Waits until answered, or until its peer is known failed.
    pub(crate) fn wait(&self, nm: &nmad::Nmad) -> Result<()> {
        let failed = || format!("the target (process {}) failed before answering", self.peer);
        wait_unless_failed(nm, &self.cond, self.peer, failed)?;
        self.outcome().expect("done")
    }
}

/// Waits until `cond` completes, or until nmad peer `peer` is known failed (`what` says what
/// was lost: `MPIX_ERR_PROC_FAILED`).
pub(crate) fn wait_unless_failed(
    nm: &nmad::Nmad,
    cond: &pioman::Cond,
    peer: u32,
    what: impl Fn() -> String,
) -> Result<()> {
    while !nm.pioman().wait_timeout(cond, nmad::COMPLETED, Duration::from_millis(100)) {
        if nm.failed_peers().contains(&peer) {
            return Err(Error::new(ErrorClass::MpixProcFailed, what()));
        }
    }
    Ok(())
}
