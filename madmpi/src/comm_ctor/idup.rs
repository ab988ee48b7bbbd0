//! `MPI_Comm_idup` and `MPI_Comm_idup_with_info`: [`Comm::dup`] run by a thread of its own, so
//! that the call returns at once and the program goes on while the members agree.
//!
//! The operation takes its sequence number among the parent's internal operations when it is
//! called, so it is ordered with the parent's other communicator constructions as MPI requires
//! (collective calls in the same order everywhere) even though it runs later. What the program
//! is given (a handle, in the C library) is made by `ready`, run by that thread with the new
//! communicator before the request completes.

use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::info::CommHints;
use crate::request::{Deferred, RawRequest};

impl Comm {
    /// `MPI_Comm_idup` (`hints` `None`: the duplicate keeps this communicator's) or
    /// `MPI_Comm_idup_with_info` (`hints` the defaults updated by its info): starts the
    /// duplication; `ready` gets the new communicator, or the error, before the request
    /// completes (with `ready`'s error if it fails).
    pub fn idup(
        &self,
        hints: Option<CommHints>,
        ready: impl FnOnce(Result<Comm>) -> Result<()> + Send + 'static,
    ) -> Result<RawRequest> {
        let seq = self.reserve_internal();
        let done = Deferred::new();
        let (parent, finish) = (self.clone(), done.clone());
        std::thread::Builder::new()
            .name("madmpi-idup".into())
            .spawn(move || {
                let run = move || {
                    let new = parent.dup_at(seq).inspect(|c| {
                        if let Some(h) = hints {
                            c.replace_hints(h);
                        }
                    });
                    ready(new).err()
                };
                // A panic must still complete the request, or its waiters would wait forever.
                let error = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
                    .unwrap_or_else(|_| Some(Error::intern("MPI_Comm_idup: the duplication panicked")));
                finish.finish(error);
            })
            .map_err(|e| Error::other(format!("MPI_Comm_idup: no thread to run it: {e}")))?;
        Ok(RawRequest::deferred(self, done))
    }
}
