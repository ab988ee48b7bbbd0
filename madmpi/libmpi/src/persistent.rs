//! Starting persistent requests (`MPI_Start`, `MPI_Startall`): the request handle's side
//! (only an inactive persistent request starts; the started operation becomes its current
//! one). What a start does is madmpi's ([`madmpi::request::operation::Persistent`]).
//!
//! Owns the inactive-to-active transition of request handles; it must not complete them (see
//! `completion`) nor check their arguments (the `api` layer does, once, at init).

use crate::requests::ReqEntry;
use madmpi::error::Error;
use madmpi::request::operation::Persistent;
use std::sync::Arc;

impl ReqEntry {
    /// Checks that this is an inactive persistent request (`MPI_Start`'s `MPI_ERR_REQUEST`s).
    pub(crate) fn check_startable(&self) -> Result<&Persistent, Error> {
        let Some(p) = &self.persistent else {
            return Err(Error::request("not a persistent request (only those can be started)"));
        };
        if self.op().is_some() {
            return Err(Error::request("the persistent request is already active"));
        }
        Ok(p)
    }

    /// `MPI_Start`: starts the operation of this inactive persistent request.
    ///
    /// # Safety
    /// The memory given at init must be valid (readable for what is sent, writable for what
    /// is received) until the operation completes: MPI's contract for persistent requests.
    pub(crate) unsafe fn start(&self) -> Result<(), Error> {
        // SAFETY: the memory contract is ours; the request is inactive (checked), so its
        // previous run completed and was reported.
        let raw = unsafe { self.check_startable()?.start() }?;
        self.set_op(Some(Arc::new(raw)));
        Ok(())
    }
}
