//! Error handlers as data: which handler an object has ([`ErrhandlerKind`]) and the registry of
//! user handlers with MPI's reference counting. Calling a handler is the communicator layer's job.
//!
//! MPI's rule: `MPI_Errhandler_free` only marks a handler for deallocation; objects it is attached
//! to keep using it, and it goes away when the last reference does. References are: the handle
//! from `create`, each handle from `MPI_Comm_get_errhandler`, each attachment to an object.

use super::Error;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Names a user error handler in an [`ErrhandlerRegistry`]. Never reused within a registry while
/// the handler is alive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ErrhandlerId(u32);

impl ErrhandlerId {
    /// The number behind the id (for the C layer's handle encoding).
    pub const fn get(self) -> u32 {
        self.0
    }
}

/// The error handler of an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrhandlerKind {
    /// `MPI_ERRORS_ARE_FATAL`: abort the whole job.
    Fatal,
    /// `MPI_ERRORS_ABORT` (MPI-4): abort the processes of the object's communicator.
    Abort,
    /// `MPI_ERRORS_RETURN`: return the error code.
    Return,
    /// A handler from [`ErrhandlerRegistry::create`].
    User(ErrhandlerId),
}

impl ErrhandlerKind {
    /// True for the handlers MPI predefines (they are never counted nor freed).
    pub const fn is_predefined(self) -> bool {
        !matches!(self, ErrhandlerKind::User(_))
    }
}

/// The user error handlers of one kind of object (communicators, windows, files, sessions), each
/// with its callback `F` and reference count. Thread-safe.
///
/// `F` is what the layer calls: an `extern "C" fn(*mut i32, *mut i32, ...)` pointer in the C
/// library, an `Arc<dyn Fn(..)>` in the Rust API. [`ErrhandlerRegistry::callback`] hands out a
/// clone so the caller runs it without the registry's lock: a handler may itself call MPI, even
/// free or create handlers.
#[derive(Debug)]
pub struct ErrhandlerRegistry<F> {
    inner: Mutex<Inner<F>>,
}

#[derive(Debug)]
struct Inner<F> {
    live: HashMap<u32, Entry<F>>,
    next: u32,
}

#[derive(Debug)]
struct Entry<F> {
    callback: F,
    refs: usize,
}

impl<F> Default for ErrhandlerRegistry<F> {
    fn default() -> Self {
        ErrhandlerRegistry { inner: Mutex::new(Inner { live: HashMap::new(), next: 0 }) }
    }
}

impl<F: Clone> ErrhandlerRegistry<F> {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// `MPI_*_create_errhandler`: a new handler, with one reference (the returned handle).
    pub fn create(&self, callback: F) -> Result<ErrhandlerKind, Error> {
        let mut inner = self.lock();
        if inner.live.len() >= u32::MAX as usize {
            return Err(Error::intern("too many live error handlers"));
        }
        // Ids only repeat after 2^32 creations, and never while the old handler lives.
        let mut id = inner.next;
        while inner.live.contains_key(&id) {
            id = id.wrapping_add(1);
        }
        inner.next = id.wrapping_add(1);
        inner.live.insert(id, Entry { callback, refs: 1 });
        Ok(ErrhandlerKind::User(ErrhandlerId(id)))
    }

    /// One more reference: the handler is attached to an object, or handed out again by
    /// `MPI_*_get_errhandler`. Predefined handlers are not counted.
    pub fn retain(&self, kind: ErrhandlerKind) -> Result<(), Error> {
        let ErrhandlerKind::User(id) = kind else { return Ok(()) };
        self.lock().live.get_mut(&id.0).ok_or_else(|| dead(id))?.refs += 1;
        Ok(())
    }

    /// One reference fewer: `MPI_Errhandler_free`, or the handler detached from an object (replaced
    /// or the object freed). The callback is dropped with the last reference. Freeing a
    /// predefined handler succeeds and does nothing, as in MPICH (a handle from
    /// `MPI_Comm_get_errhandler` must be freed even when it is `MPI_ERRORS_RETURN`).
    pub fn release(&self, kind: ErrhandlerKind) -> Result<(), Error> {
        let ErrhandlerKind::User(id) = kind else { return Ok(()) };
        let dropped = {
            let mut inner = self.lock();
            let entry = inner.live.get_mut(&id.0).ok_or_else(|| dead(id))?;
            entry.refs -= 1;
            if entry.refs == 0 { inner.live.remove(&id.0) } else { None }
        };
        drop(dropped); // outside the lock: the callback's drop may run user code
        Ok(())
    }

    /// The callback of a live user handler (a clone, to call without the registry's lock).
    pub fn callback(&self, id: ErrhandlerId) -> Result<F, Error> {
        self.lock().live.get(&id.0).map(|e| e.callback.clone()).ok_or_else(|| dead(id))
    }

    /// How many references a live user handler has (for tests and debugging).
    pub fn refs(&self, id: ErrhandlerId) -> Option<usize> {
        self.lock().live.get(&id.0).map(|e| e.refs)
    }

    /// How many user handlers are alive.
    pub fn live(&self) -> usize {
        self.lock().live.len()
    }

    fn lock(&self) -> MutexGuard<'_, Inner<F>> {
        // Every update is a single statement on the map: a panic cannot leave it inconsistent.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn dead(id: ErrhandlerId) -> Error {
    // MPICH reports an invalid error handler with MPI_ERR_ARG.
    Error::arg(format!("invalid error handler (user handler {} was freed)", id.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorClass;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    type Callback = Arc<dyn Fn(i32) -> i32 + Send + Sync>;

    #[test]
    fn freed_while_attached_stays_alive_until_detached() {
        // MPICH 4.0.2 (tests/c/errh_check.c): after MPI_Errhandler_free of a handler attached to a
        // communicator, the handle is MPI_ERRHANDLER_NULL and the handler is still called.
        let reg: ErrhandlerRegistry<Callback> = ErrhandlerRegistry::new();
        let h = reg.create(Arc::new(|code| code + 1)).unwrap();
        let ErrhandlerKind::User(id) = h else { panic!("user handler expected") };
        reg.retain(h).unwrap(); // MPI_Comm_set_errhandler
        reg.release(h).unwrap(); // MPI_Errhandler_free
        assert_eq!((reg.callback(id).unwrap())(6), 7);
        reg.retain(h).unwrap(); // MPI_Comm_get_errhandler
        reg.release(h).unwrap(); // ... and its MPI_Errhandler_free
        assert_eq!(reg.refs(id), Some(1));
        reg.release(h).unwrap(); // detached: the communicator is freed
        assert_eq!(reg.live(), 0);
        assert_eq!(reg.callback(id).err().map(|e| e.class()), Some(ErrorClass::Arg));
        assert_eq!(reg.release(h).unwrap_err().class(), ErrorClass::Arg);
        assert_eq!(reg.retain(h).unwrap_err().class(), ErrorClass::Arg);
    }

    #[test]
    fn predefined_handlers_are_not_counted() {
        let reg: ErrhandlerRegistry<fn()> = ErrhandlerRegistry::new();
        for kind in [ErrhandlerKind::Fatal, ErrhandlerKind::Abort, ErrhandlerKind::Return] {
            assert!(kind.is_predefined());
            reg.retain(kind).unwrap();
            reg.release(kind).unwrap();
            reg.release(kind).unwrap();
        }
        assert_eq!(reg.live(), 0);
    }

    #[test]
    fn holds_c_handler_pointers() {
        // The C library's MPI_Comm_errhandler_function.
        type CHandler = unsafe extern "C" fn(*mut i32, *mut i32, ...);
        fn shareable<T: Send + Sync>(_: &T) {}
        let reg: ErrhandlerRegistry<CHandler> = ErrhandlerRegistry::new();
        shareable(&reg);
        assert_eq!(reg.live(), 0);
    }

    #[test]
    fn callback_dropped_with_last_reference() {
        struct Counted(Arc<AtomicUsize>);
        impl Clone for Counted {
            fn clone(&self) -> Self {
                Counted(Arc::clone(&self.0))
            }
        }
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let drops = Arc::new(AtomicUsize::new(0));
        let reg = ErrhandlerRegistry::new();
        let h = reg.create(Counted(Arc::clone(&drops))).unwrap();
        reg.retain(h).unwrap();
        reg.release(h).unwrap();
        assert_eq!(drops.load(Ordering::SeqCst), 0);
        reg.release(h).unwrap();
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn ids_are_distinct_and_concurrent_use_balances() {
        let reg: Arc<ErrhandlerRegistry<fn()>> = Arc::new(ErrhandlerRegistry::new());
        let shared = reg.create(|| ()).unwrap();
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let reg = Arc::clone(&reg);
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    for _ in 0..500 {
                        reg.retain(shared).unwrap();
                        mine.push(reg.create(|| ()).unwrap());
                        reg.release(shared).unwrap();
                    }
                    mine
                })
            })
            .collect();
        let all: Vec<_> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
        let unique: std::collections::HashSet<_> = all.iter().collect();
        assert_eq!(unique.len(), 2000);
        assert_eq!(reg.live(), 2001);
        let ErrhandlerKind::User(id) = shared else { panic!("user handler expected") };
        assert_eq!(reg.refs(id), Some(1));
        for h in all {
            reg.release(h).unwrap();
        }
        reg.release(shared).unwrap();
        assert_eq!(reg.live(), 0);
    }
}
