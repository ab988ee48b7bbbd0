//! Error handler handles: the predefined handlers and the user's (`MPI_Comm_create_errhandler`),
//! and the [`ErrhandlerCell`] each communicator keeps its handler in.
//!
//! User handlers live in an [`ErrhandlerRegistry`] (MPI's reference counting: the handle from
//! `create`, each handle from `MPI_Comm_get_errhandler`, each communicator using it), with a
//! handle table beside it. Both are process-wide statics rather than state: `MPI_COMM_WORLD`'s
//! handler still applies after `MPI_Finalize`. A handle stays valid while its handler lives; the
//! table slot is given back when the handler's last reference goes (when its callback is
//! dropped), never before, so a handle is not reused while anything may still name it.
//!
//! Owns handler handles, their reference counts and the C callback type; it must not decide
//! when a handler runs (`errors` does).

use crate::table::Table;
use madmpi::abi::{self, Handle, UserObject};
use madmpi::error::{ErrhandlerId, ErrhandlerKind, ErrhandlerRegistry, Error};
use std::ffi::{c_int, c_void};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, OnceLock, PoisonError};

/// `MPI_Comm_errhandler_function`: `void (MPI_Comm *, int *, ...)`. MPICH passes the
/// communicator and the error code and nothing in the variadic part; so do we.
pub(crate) type CommErrhandlerFn = unsafe extern "C" fn(*mut Handle, *mut c_int, ...);

/// A user handler's callback, as the registry holds it (cloned to be called unlocked).
#[derive(Clone)]
pub(crate) struct Callback(Arc<Entry>);

struct Entry {
    func: CommErrhandlerFn,
    /// The handle, once the table gave one.
    handle: OnceLock<Handle>,
}

impl Drop for Entry {
    /// The handler's last reference is gone: its handle may be given again.
    fn drop(&mut self) {
        if let Some(&h) = self.handle.get() {
            let _ = HANDLES.remove(h);
        }
    }
}

impl Callback {
    /// Calls the user's function with the communicator `comm` and `code`.
    pub(crate) fn call(&self, comm: Handle, code: c_int) {
        let (mut comm, mut code) = (comm, code);
        // SAFETY: the function was given to MPI_Comm_create_errhandler with MPI's signature;
        // both pointers are to locals that outlive the call.
        unsafe { (self.0.func)(&mut comm, &mut code) }
    }

    /// Calls the user's function with the file `file` (an `MPI_File`, a pointer in MPICH's ABI)
    /// and `code`: the function was given to `MPI_File_create_errhandler`, whose
    /// `MPI_File_errhandler_function` is `void (MPI_File *, int *, ...)`.
    pub(crate) fn call_file(&self, file: *mut c_void, code: c_int) {
        let (mut file, mut code) = (file, code);
        // SAFETY: the function takes two data pointers (as MPI_File_errhandler_function, or as
        // the communicator function type it is stored under: pointers of any pointee are passed
        // alike), then nothing in the variadic part; both point to locals that outlive the call,
        // the first to an `MPI_File` as a file handler reads it.
        unsafe { (self.0.func)((&raw mut file).cast::<Handle>(), &mut code) }
    }
}

static REGISTRY: LazyLock<ErrhandlerRegistry<Callback>> = LazyLock::new(ErrhandlerRegistry::new);
static HANDLES: LazyLock<Table<ErrhandlerId>> = LazyLock::new(|| Table::new(UserObject::Errhandler));

/// `MPI_Comm_create_errhandler`: a new user handler; its handle (one reference).
pub(crate) fn create(func: CommErrhandlerFn) -> Result<Handle, Error> {
    let entry = Arc::new(Entry { func, handle: OnceLock::new() });
    let kind = REGISTRY.create(Callback(entry.clone()))?;
    let ErrhandlerKind::User(id) = kind else { unreachable!("create makes user handlers") };
    match HANDLES.insert(id) {
        Some(h) => {
            let _ = entry.handle.set(h);
            Ok(h)
        }
        None => {
            REGISTRY.release(kind)?;
            Err(Error::intern("too many live error handlers"))
        }
    }
}

/// The handler a handle names: `MPI_ERR_ARG` for `MPI_ERRHANDLER_NULL` and anything that is not
/// a live handler (as MPICH reports).
pub(crate) fn kind(h: Handle) -> Result<ErrhandlerKind, Error> {
    match h {
        abi::MPI_ERRORS_ARE_FATAL => Ok(ErrhandlerKind::Fatal),
        abi::MPI_ERRORS_RETURN => Ok(ErrhandlerKind::Return),
        abi::MPI_ERRORS_ABORT => Ok(ErrhandlerKind::Abort),
        abi::MPI_ERRHANDLER_NULL => Err(Error::arg("MPI_ERRHANDLER_NULL is not an error handler")),
        _ => HANDLES
            .get(h)
            .map(ErrhandlerKind::User)
            .ok_or_else(|| Error::arg(format!("invalid error handler handle {h:#x}"))),
    }
}

/// `MPI_Errhandler_free`: one reference fewer (nothing for a predefined handler, as in MPICH).
pub(crate) fn free(h: Handle) -> Result<(), Error> {
    REGISTRY.release(kind(h)?)
}

/// What a handler does when an error is raised.
pub(crate) enum Action {
    /// `MPI_ERRORS_ARE_FATAL`, `MPI_ERRORS_ABORT`.
    Fatal,
    /// `MPI_ERRORS_RETURN`.
    Return,
    /// Call the user's function (a clone, so it runs with no lock held).
    User(Callback),
}

/// The error handler of a communicator: a handle holding one reference to its handler,
/// released when it is replaced or the cell dropped (with the last user of the communicator,
/// so errors of its pending requests still reach the handler).
#[derive(Debug)]
pub(crate) struct ErrhandlerCell(Mutex<Handle>);

impl ErrhandlerCell {
    /// A cell holding the default handler, `MPI_ERRORS_ARE_FATAL`.
    pub(crate) const fn new() -> Self {
        ErrhandlerCell(Mutex::new(abi::MPI_ERRORS_ARE_FATAL))
    }

    /// The handler's handle (for the caller to keep: see [`ErrhandlerCell::get_retained`]).
    #[cfg(test)]
    pub(crate) fn get(&self) -> Handle {
        *self.lock()
    }

    /// `MPI_Comm_get_errhandler`: the handle, with one more reference for the caller to free.
    pub(crate) fn get_retained(&self) -> Result<Handle, Error> {
        let h = self.lock();
        REGISTRY.retain(kind(*h)?)?;
        Ok(*h)
    }

    /// `MPI_Comm_set_errhandler`: installs `h` (which must name a live handler).
    pub(crate) fn set(&self, h: Handle) -> Result<(), Error> {
        let new = kind(h)?;
        REGISTRY.retain(new)?;
        let old = std::mem::replace(&mut *self.lock(), h);
        // The cell held a reference: the old handler was alive until now.
        REGISTRY.release(kind(old)?)
    }

    /// A cell with the same handler (a new communicator inherits its parent's handler).
    pub(crate) fn inherit(&self) -> ErrhandlerCell {
        let h = self.lock();
        // The cell's reference keeps its handler alive while locked: this cannot fail.
        match kind(*h).and_then(|k| REGISTRY.retain(k)) {
            Ok(()) => ErrhandlerCell(Mutex::new(*h)),
            Err(_) => ErrhandlerCell::new(),
        }
    }

    /// What the handler does, read once.
    pub(crate) fn action(&self) -> Action {
        let h = self.lock();
        match kind(*h) {
            Ok(ErrhandlerKind::Return) => Action::Return,
            Ok(ErrhandlerKind::User(id)) => REGISTRY.callback(id).map_or(Action::Fatal, Action::User),
            _ => Action::Fatal,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Handle> {
        // A handle is a plain value: a poisoned lock still holds a consistent one.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Default for ErrhandlerCell {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for ErrhandlerCell {
    fn drop(&mut self) {
        let h = *self.lock();
        if let Ok(k) = kind(h) {
            let _ = REGISTRY.release(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use madmpi::error::ErrorClass;

    /// A handler function for the tables (never called here: Rust cannot define a C-variadic
    /// function; the C programs check the calls).
    fn some_fn() -> CommErrhandlerFn {
        unsafe extern "C" fn f(_comm: *mut Handle, _code: *mut c_int) {}
        // SAFETY: only stored and compared, never called through the variadic type.
        unsafe { std::mem::transmute::<unsafe extern "C" fn(*mut Handle, *mut c_int), CommErrhandlerFn>(f) }
    }

    #[test]
    fn counted_references_and_handle_lifetime() {
        let h = create(some_fn()).unwrap();
        assert_eq!(abi::handle_object(h), abi::ObjectType::Errhandler);
        let cell = ErrhandlerCell::new();
        cell.set(h).unwrap();
        free(h).unwrap(); // MPI_Errhandler_free while attached: still usable
        let child = cell.inherit();
        assert_eq!(child.get(), h);
        let Action::User(cb) = child.action() else { panic!("user handler expected") };
        drop(cb);
        let got = cell.get_retained().unwrap();
        free(got).unwrap();
        cell.set(abi::MPI_ERRORS_RETURN).unwrap();
        assert!(matches!(cell.action(), Action::Return));
        assert!(kind(h).is_ok(), "the child still uses it");
        drop(child);
        assert_eq!(kind(h).unwrap_err().class(), ErrorClass::Arg, "last reference gone");
        assert_eq!(cell.set(h).unwrap_err().class(), ErrorClass::Arg);
        assert_eq!(kind(abi::MPI_ERRHANDLER_NULL).unwrap_err().class(), ErrorClass::Arg);
        free(abi::MPI_ERRORS_RETURN).unwrap();
        assert!(matches!(ErrhandlerCell::new().action(), Action::Fatal));
    }
}
