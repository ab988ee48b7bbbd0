//! How an error leaves the library: a failing call yields a [`Fail`] (the MPI error and the
//! communicator whose error handler applies); [`raise`] runs that handler and gives the code
//! the call returns.
//!
//! Handlers: `MPI_ERRORS_RETURN` returns the code (a message-carrying code from
//! [`Error::code`], so `MPI_Error_string` tells what went wrong); `MPI_ERRORS_ARE_FATAL` (the
//! default) and `MPI_ERRORS_ABORT` print `MPI error in MPI_X: <message>` to stderr and end the
//! process with status 1, which makes the launcher end the job; a user handler is called with
//! the communicator (a file: a pointer to its `MPI_File`) and the code, which the call then
//! returns. Errors not tied to a valid communicator (an invalid handle, a call before
//! `MPI_Init`) go to `MPI_COMM_WORLD`'s handler (the file calls route theirs to
//! `MPI_FILE_NULL`'s: see `files`).
//!
//! Owns the path from a failure to its handler and the exit path (handler handles and cells are
//! `errhandlers`'); it must not validate arguments nor know what the calls do.

use crate::comms::{self, CommObj};
use crate::errhandlers::{Action, Callback, ErrhandlerCell};
use madmpi::abi::{self, Handle};
use madmpi::error::{Error, ErrorClass};
use std::ffi::c_int;
use std::io::Write;
use std::sync::Arc;

/// An object with an error handler: a communicator, a session, a window, a file.
pub(crate) trait HandlerOwner: Send + Sync {
    /// The handle the handler is called with.
    fn handle(&self) -> Handle;
    fn errhandler(&self) -> &ErrhandlerCell;

    /// Calls the user handler `cb` on this object with `code`: with a pointer to its `int`
    /// handle, except for a file, whose C handle is a pointer (`files` overrides this).
    fn call_user(&self, cb: &Callback, code: c_int) {
        cb.call(self.handle(), code);
    }
}

impl HandlerOwner for CommObj {
    fn handle(&self) -> Handle {
        CommObj::handle(self)
    }

    fn errhandler(&self) -> &ErrhandlerCell {
        &self.errhandler
    }
}

/// Why a call failed, and whose error handler must hear of it.
pub(crate) struct Fail {
    pub(crate) error: Error,
    /// The communicator (or session) whose handler applies; `None`: `MPI_COMM_WORLD`'s.
    pub(crate) comm: Option<Arc<dyn HandlerOwner>>,
}

/// What an exported function's body returns.
pub(crate) type Outcome = Result<(), Fail>;

impl From<Error> for Fail {
    fn from(error: Error) -> Self {
        Fail { error, comm: None }
    }
}

impl From<madmpi::datatype::TypeError> for Fail {
    fn from(e: madmpi::datatype::TypeError) -> Self {
        Error::from(e).into()
    }
}

/// Attaches the communicator whose handler applies to an error.
pub(crate) trait On<T> {
    fn on(self, owner: &impl AsOwner) -> Result<T, Fail>;
}

impl<T> On<T> for Result<T, Error> {
    fn on(self, owner: &impl AsOwner) -> Result<T, Fail> {
        self.map_err(|error| Fail { error, comm: Some(owner.owner()) })
    }
}

/// A reference to an object whose handler errors go to (a communicator, a window, or either
/// behind a request).
pub(crate) trait AsOwner {
    fn owner(&self) -> Arc<dyn HandlerOwner>;
}

impl<O: HandlerOwner + 'static> AsOwner for Arc<O> {
    fn owner(&self) -> Arc<dyn HandlerOwner> {
        self.clone()
    }
}

impl AsOwner for Arc<dyn HandlerOwner> {
    fn owner(&self) -> Arc<dyn HandlerOwner> {
        self.clone()
    }
}

/// Runs the error handler of `fail` for a failure in `func`; returns the code to give back.
pub(crate) fn raise(func: &str, fail: Fail) -> c_int {
    match &fail.comm {
        Some(c) => respond(c.errhandler().action(), Some(&**c), func, fail.error),
        None => respond(comms::world_errhandler().action(), None, func, fail.error),
    }
}

/// `MPI_Comm_call_errhandler`: runs `comm`'s handler on `code` as if a call had failed with it.
/// Returns once the handler did (`MPI_SUCCESS` then, under `MPI_ERRORS_RETURN` too, as MPICH
/// 4.0.2 does); the fatal handlers end the process.
pub(crate) fn call_handler(comm: &CommObj, code: c_int) {
    match comm.errhandler.action() {
        Action::Return => {}
        Action::User(cb) => cb.call(comm.handle(), code),
        Action::Fatal => fatal("MPI_Comm_call_errhandler", &Error::from_code(code)),
    }
}

/// `MPI_Session_call_errhandler` and the like: runs `owner`'s handler on `code` as
/// [`call_handler`] does for a communicator (`func` names the call for the fatal message).
pub(crate) fn call_handler_of(owner: &dyn HandlerOwner, func: &str, code: c_int) {
    match owner.errhandler().action() {
        Action::Return => {}
        Action::User(cb) => owner.call_user(&cb, code),
        Action::Fatal => fatal(func, &Error::from_code(code)),
    }
}

/// What the error handler's `action` does with `error`, raised in `func` on `owner` (`None`:
/// `MPI_COMM_WORLD`).
fn respond(action: Action, owner: Option<&dyn HandlerOwner>, func: &str, error: Error) -> c_int {
    let error = named(func, error);
    let code = error.code();
    match action {
        Action::Return => code,
        Action::User(cb) => {
            match owner {
                Some(o) => o.call_user(&cb, code),
                None => cb.call(abi::MPI_COMM_WORLD, code),
            }
            code
        }
        Action::Fatal => fatal(func, &error),
    }
}

/// `error` with the failing call's name in front of its message (so `MPI_Error_string` says
/// where it happened), unless the message already starts with a call's name.
pub(crate) fn named(func: &str, error: Error) -> Error {
    let m = error.message();
    // A code already handed out (or returned by a user callback) goes back unchanged.
    if m.is_empty() || starts_with_call(m) || error.has_code() {
        error
    } else {
        Error::new(error.class(), format!("{func}: {m}"))
    }
}

/// Whether `m` starts with `MPI_Xxx: `, a function name (constants are all capitals:
/// `MPI_REQUEST_NULL ...` does not count).
fn starts_with_call(m: &str) -> bool {
    let Some(rest) = m.strip_prefix("MPI_") else { return false };
    let Some((name, _)) = rest.split_once(": ") else { return false };
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_uppercase())
        && name.chars().any(|c| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The fatal handler: prints `MPI error in <func>: <error>` and ends the process.
fn fatal(func: &str, error: &Error) -> ! {
    let m = error.message();
    let detail = m.strip_prefix(func).and_then(|r| r.strip_prefix(": ")).unwrap_or(m);
    let line = if detail.is_empty() {
        format!("MPI error in {func}: {}\n", error.class().as_str())
    } else {
        format!("MPI error in {func}: {}: {detail}\n", error.class().name())
    };
    // Nothing is left to do if stderr is gone: the exit status still tells.
    let _ = std::io::stderr().write_all(line.as_bytes());
    end_job(1, line.trim_end())
}

/// Ends the whole job with `code` (MPI_Abort, fatal errors): through the launcher while MPI
/// runs, so every process ends and the launcher exits with `code` (a bare exit lets Hydra report
/// the signal it killed the other ranks with instead); otherwise by ending this process.
pub(crate) fn end_job(code: c_int, message: &str) -> ! {
    flush_all();
    if let Ok(st) = crate::state::state() {
        // try_lock: a thread finalizing holds it; then there is no job left to end.
        if let Ok(u) = st.universe.try_lock()
            && let Some(u) = u.as_ref()
        {
            // The launcher kills the job at once, its proxies included: give them a moment to
            // forward what we just printed (measured: Hydra lost it ~1 run in 12).
            std::thread::sleep(std::time::Duration::from_millis(100));
            u.abort(code, message);
        }
    }
    exit_process(code)
}

/// Flushes Rust's and C's output streams.
fn flush_all() {
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: fflush(NULL) flushes every C stdio output stream.
    unsafe { libc::fflush(std::ptr::null_mut()) };
}

/// Ends the process with `code` after flushing Rust's and C's output streams. No `atexit`
/// handler runs: other threads (progression) are still running, and the job is over.
pub(crate) fn exit_process(code: c_int) -> ! {
    flush_all();
    // SAFETY: _exit only ends the process.
    unsafe { libc::_exit(code) }
}

/// The error a caught panic becomes.
pub(crate) fn panic_error(payload: &(dyn std::any::Any + Send)) -> Error {
    let what = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic");
    Error::new(ErrorClass::Intern, format!("internal error (panic: {what})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_call_once() {
        let e = named("MPI_Send", Error::rank("invalid rank 7"));
        assert_eq!(e.message(), "MPI_Send: invalid rank 7");
        let e = named("MPI_Send", Error::rank("MPI_Isend: invalid rank 7"));
        assert_eq!(e.message(), "MPI_Isend: invalid rank 7");
        assert_eq!(named("MPI_Send", Error::from(ErrorClass::Tag)).message(), "");
        let e = named("MPI_Wait", Error::request("MPI_REQUEST_NULL: no request"));
        assert_eq!(e.message(), "MPI_Wait: MPI_REQUEST_NULL: no request");
        // A code a user callback returned goes back as it is.
        assert_eq!(named("MPI_Comm_dup", Error::from_code(12345)).code(), 12345);
    }

    #[test]
    fn returned_codes_carry_the_message() {
        let code = respond(Action::Return, None, "MPI_Recv", Error::truncate("40 bytes into 16"));
        assert_eq!(madmpi::error::error_class(code), Some(ErrorClass::Truncate));
        assert_eq!(
            madmpi::error::registry().string(code).unwrap(),
            "MPI_ERR_TRUNCATE: MPI_Recv: 40 bytes into 16"
        );
        let e = panic_error(&"boom");
        assert_eq!((e.class(), e.message()), (ErrorClass::Intern, "internal error (panic: boom)"));
    }
}
