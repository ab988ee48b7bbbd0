//! The C side of generalized requests: the program's C callbacks as madmpi's
//! [`Callbacks`](madmpi::grequest::Callbacks), and the table of MPICH's request classes
//! (`MPIX_Grequest_class_create`).
//!
//! Callbacks are called through `extern "C-unwind"` pointers: a callback that unwinds (a C++
//! exception) reaches the `extern "C"` boundary of the exported function and ends the process,
//! a defined abort instead of undefined behaviour; nothing unwinds through Rust into C. A code
//! a callback returns goes back to the program unchanged ([`Error::from_code`]).
//!
//! Owns the C calling of callbacks and class handles; it must not decide when callbacks run
//! (madmpi's `grequest` does).

use madmpi::abi::{self, Handle, ObjectType, Status};
use madmpi::error::{Error, Result};
use madmpi::grequest::Callbacks;
use std::ffi::{c_int, c_void};
use std::sync::{Mutex, PoisonError};

/// `MPI_Grequest_query_function` (and `MPIX_Grequest_poll_function`, the same signature).
pub(crate) type QueryFn = unsafe extern "C-unwind" fn(*mut c_void, *mut Status) -> c_int;
/// `MPI_Grequest_free_function`.
pub(crate) type FreeFn = unsafe extern "C-unwind" fn(*mut c_void) -> c_int;
/// `MPI_Grequest_cancel_function`.
pub(crate) type CancelFn = unsafe extern "C-unwind" fn(*mut c_void, c_int) -> c_int;
/// `MPIX_Grequest_wait_function`.
pub(crate) type WaitFn = unsafe extern "C-unwind" fn(c_int, *mut *mut c_void, f64, *mut Status) -> c_int;

/// The functions of a generalized request (or of a class of them).
#[derive(Clone, Copy)]
pub(crate) struct Functions {
    pub(crate) query: QueryFn,
    pub(crate) free: FreeFn,
    pub(crate) cancel: CancelFn,
    /// MPICH's extensions: both or neither.
    pub(crate) progress: Option<(QueryFn, WaitFn)>,
}

/// The functions and the program's `extra_state`.
pub(crate) struct CCallbacks {
    fns: Functions,
    /// An address only given back to the callbacks.
    extra_state: usize,
}

impl CCallbacks {
    pub(crate) fn new(fns: Functions, extra_state: *mut c_void) -> CCallbacks {
        CCallbacks { fns, extra_state: extra_state as usize }
    }

    fn state(&self) -> *mut c_void {
        self.extra_state as *mut c_void
    }
}

fn result(rc: c_int) -> Result<()> {
    if rc == 0 { Ok(()) } else { Err(Error::from_code(rc)) }
}

impl Callbacks for CCallbacks {
    fn query(&self, status: &mut Status) -> Result<()> {
        // SAFETY: the program's query function, called as MPI specifies: its extra_state and a
        // valid status it may fill.
        result(unsafe { (self.fns.query)(self.state(), status) })
    }

    fn free(&self) -> Result<()> {
        // SAFETY: the program's free function with its extra_state (madmpi calls it once).
        result(unsafe { (self.fns.free)(self.state()) })
    }

    fn cancel(&self, complete: bool) -> Result<()> {
        // SAFETY: the program's cancel function with its extra_state and the complete flag.
        result(unsafe { (self.fns.cancel)(self.state(), c_int::from(complete)) })
    }

    fn poll(&self, status: &mut Status) -> Option<Result<()>> {
        let (poll, _) = self.fns.progress?;
        // SAFETY: the program's poll function with its extra_state and a valid status.
        Some(result(unsafe { poll(self.state(), status) }))
    }

    fn polls(&self) -> bool {
        self.fns.progress.is_some()
    }

    fn wait(&self, status: &mut Status) -> Option<Result<()>> {
        let (_, wait) = self.fns.progress?;
        let mut states = [self.state()];
        // SAFETY: the program's wait function, as MPICH calls it for one request: a count of 1,
        // an array of that one extra_state, a timeout of 0 and a valid status.
        Some(result(unsafe { wait(1, states.as_mut_ptr(), 0.0, status) }))
    }
}

/// The classes created so far (MPICH frees them at `MPI_Finalize`; they are few and small, so
/// they live as long as the process here).
static CLASSES: Mutex<Vec<Functions>> = Mutex::new(Vec::new());

/// First index of class handles (as other user handles: above MPICH's predefined ones).
const CLASS_INDEX_BASE: u32 = abi::USER_INDEX_BASE;

/// The handle of class number `slot`: a direct handle of MPICH's `MPIR_GREQ_CLASS` object type,
/// laid out as `abi::encode_user_handle` lays out user handles.
fn class_handle(slot: u32) -> Option<Handle> {
    let bits = (abi::HandleKind::Direct as u32) << abi::KIND_SHIFT
        | (ObjectType::GreqClass as u32) << abi::OBJECT_SHIFT;
    (slot <= abi::MAX_USER_SLOT).then(|| (bits | (slot + CLASS_INDEX_BASE)) as Handle)
}

/// `MPIX_Grequest_class_create`: a new class; its handle.
pub(crate) fn create_class(fns: Functions) -> Result<Handle> {
    let mut classes = CLASSES.lock().unwrap_or_else(PoisonError::into_inner);
    let h = class_handle(classes.len() as u32).ok_or_else(|| Error::intern("too many request classes"))?;
    classes.push(fns);
    Ok(h)
}

/// The functions of class `h` (`MPI_ERR_ARG` for anything else: MPICH crashes).
pub(crate) fn class(h: Handle) -> Result<Functions> {
    let slot = (h as u32).wrapping_sub(class_handle(0).expect("slot 0") as u32);
    let classes = CLASSES.lock().unwrap_or_else(PoisonError::into_inner);
    classes.get(slot as usize).copied().ok_or_else(|| Error::arg(format!("{h:#x} is not a request class")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_handles_are_greq_class_handles() {
        let h = class_handle(3).unwrap();
        assert_eq!(abi::handle_object(h), ObjectType::GreqClass);
        assert_eq!(abi::handle_kind(h), abi::HandleKind::Direct);
        assert!(class_handle(abi::MAX_USER_SLOT + 1).is_none());
        assert!(class(0).is_err() && class(h).is_err());
    }
}
