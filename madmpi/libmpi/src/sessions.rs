//! Session handles (`MPI_Session`, MPICH's encoding: object type 14, `MPI_SESSION_NULL` =
//! `0x38000000`), each with its error handler.
//!
//! The table is a process-wide static, like the info and error handler tables: a session exists
//! before `MPI_Init` and may outlive `MPI_Finalize`. The library state (handle tables of groups
//! and communicators) is kept by every open session (`state::open_session`).
//!
//! Owns the handle ↔ session mapping and the session's handler cell; it must not implement
//! sessions (`madmpi::session`).

use crate::errhandlers::ErrhandlerCell;
use crate::errors::{Fail, HandlerOwner};
use crate::table::Table;
use madmpi::abi::{Handle, MPI_SESSION_NULL, UserObject};
use madmpi::error::Error;
use madmpi::session::Session;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, OnceLock, PoisonError};

/// A session as the C library sees it.
pub(crate) struct SessionObj {
    /// Taken by `MPI_Session_finalize`.
    session: Mutex<Option<Session>>,
    pub(crate) errhandler: ErrhandlerCell,
    handle: OnceLock<Handle>,
}

impl HandlerOwner for SessionObj {
    fn handle(&self) -> Handle {
        self.handle.get().copied().unwrap_or(MPI_SESSION_NULL)
    }

    fn errhandler(&self) -> &ErrhandlerCell {
        &self.errhandler
    }
}

impl SessionObj {
    /// The session, locked (`MPI_ERR_SESSION` once finalized).
    pub(crate) fn session(&self) -> Result<MutexGuard<'_, Option<Session>>, Error> {
        let g = self.session.lock().unwrap_or_else(PoisonError::into_inner);
        match g.as_ref() {
            Some(_) => Ok(g),
            None => Err(Error::session("the session was finalized")),
        }
    }

    /// Takes the session out (`MPI_Session_finalize`).
    pub(crate) fn take(&self) -> Option<Session> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

static SESSIONS: LazyLock<Table<Arc<SessionObj>>> = LazyLock::new(|| Table::new(UserObject::Session));

/// Stores a new session with its handler; its handle.
pub(crate) fn add(session: Session, errhandler: Handle) -> Result<Handle, Error> {
    let cell = ErrhandlerCell::new();
    cell.set(errhandler)?;
    let obj = Arc::new(SessionObj {
        session: Mutex::new(Some(session)),
        errhandler: cell,
        handle: OnceLock::new(),
    });
    let h = SESSIONS.insert(obj.clone()).ok_or_else(|| Error::intern("too many live sessions"))?;
    let _ = obj.handle.set(h);
    Ok(h)
}

/// The session of handle `h`: `MPI_ERR_SESSION` for `MPI_SESSION_NULL` and anything that is
/// not a live session handle.
pub(crate) fn get(h: Handle) -> Result<Arc<SessionObj>, Error> {
    match h {
        MPI_SESSION_NULL => Err(Error::session("null session (MPI_SESSION_NULL)")),
        _ => SESSIONS.get(h).ok_or_else(|| Error::session(format!("invalid session handle {h:#x}"))),
    }
}

/// Forgets session `h`.
pub(crate) fn remove(h: Handle) {
    drop(SESSIONS.remove(h));
}

/// Attaches the session whose handler applies to an error.
pub(crate) trait OnSession<T> {
    fn on_session(self, s: &Arc<SessionObj>) -> Result<T, Fail>;
}

impl<T> OnSession<T> for Result<T, Error> {
    fn on_session(self, s: &Arc<SessionObj>) -> Result<T, Fail> {
        self.map_err(|error| Fail { error, comm: Some(s.clone()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use madmpi::abi::{self, ObjectType};

    #[test]
    fn handles_have_mpichs_encoding() {
        assert_eq!(abi::handle_object(MPI_SESSION_NULL), ObjectType::Session);
        assert_eq!(abi::handle_kind(MPI_SESSION_NULL), abi::HandleKind::Invalid);
        let h = abi::encode_user_handle(UserObject::Session, 0).unwrap();
        assert_eq!(abi::handle_object(h), ObjectType::Session);
        assert_eq!(get(MPI_SESSION_NULL).err().map(|e| e.class()), Some(madmpi::error::ErrorClass::Session));
        assert_eq!(get(h).err().map(|e| e.class()), Some(madmpi::error::ErrorClass::Session));
    }
}
