//! Communicator handles: `MPI_COMM_WORLD` and `MPI_COMM_SELF` (fixed objects of the state) and
//! the communicators the library creates (a [`Table`](crate::table::Table)), each with its
//! error handler and attributes.
//!
//! The two predefined communicators' error handlers live in statics rather than in the state:
//! errors raised before `MPI_Init` or after `MPI_Finalize` still go to `MPI_COMM_WORLD`'s
//! handler (fatal before `MPI_Init`, whatever the program last set after `MPI_Finalize`).
//! A created communicator starts with its parent's handler (MPI's rule for dup, split and
//! create).
//!
//! Owns the mapping from communicator handles to [`CommObj`]s; it must not run communication.

use crate::attrs::Attrs;
use crate::errhandlers::ErrhandlerCell;
use crate::state::State;
use madmpi::abi::{self, Handle};
use madmpi::comm::Comm;
use madmpi::error::Error;
use std::sync::{Arc, LazyLock, OnceLock};

/// A communicator as the C library sees it.
pub(crate) struct CommObj {
    pub(crate) comm: Comm,
    pub(crate) errhandler: Arc<ErrhandlerCell>,
    pub(crate) attrs: Attrs,
    /// The handle C knows it by, once it has one.
    handle: OnceLock<Handle>,
}

static WORLD_ERRHANDLER: LazyLock<Arc<ErrhandlerCell>> = LazyLock::new(|| Arc::new(ErrhandlerCell::new()));
static SELF_ERRHANDLER: LazyLock<Arc<ErrhandlerCell>> = LazyLock::new(|| Arc::new(ErrhandlerCell::new()));

/// `MPI_COMM_WORLD`'s error handler, which also handles errors tied to no valid communicator.
pub(crate) fn world_errhandler() -> &'static ErrhandlerCell {
    &WORLD_ERRHANDLER
}

impl CommObj {
    fn predefined(comm: Comm, errhandler: &Arc<ErrhandlerCell>, handle: Handle) -> Arc<CommObj> {
        let obj =
            CommObj { comm, errhandler: errhandler.clone(), attrs: Attrs::new(), handle: OnceLock::new() };
        let _ = obj.handle.set(handle);
        Arc::new(obj)
    }

    /// The object of `MPI_COMM_WORLD` over `comm`.
    pub(crate) fn world(comm: Comm) -> Arc<CommObj> {
        Self::predefined(comm, &WORLD_ERRHANDLER, abi::MPI_COMM_WORLD)
    }

    /// The object of `MPI_COMM_SELF` over `comm`.
    pub(crate) fn self_comm(comm: Comm) -> Arc<CommObj> {
        Self::predefined(comm, &SELF_ERRHANDLER, abi::MPI_COMM_SELF)
    }

    /// A communicator created from `parent`: no attributes, the parent's error handler.
    pub(crate) fn child(comm: Comm, parent: &CommObj) -> CommObj {
        let errhandler = Arc::new(parent.errhandler.inherit());
        CommObj { comm, errhandler, attrs: Attrs::new(), handle: OnceLock::new() }
    }

    /// The communicator that replaces `placeholder`, stored for a communicator not made yet
    /// (`MPI_Comm_idup`): it takes over its handle, error handler and attributes.
    pub(crate) fn replacing(comm: Comm, placeholder: &CommObj) -> Result<CommObj, Error> {
        let attrs = Attrs::new();
        let table = placeholder.attrs.with(std::mem::take)?;
        attrs.with(|t| *t = table)?;
        let obj =
            CommObj { comm, errhandler: placeholder.errhandler.clone(), attrs, handle: OnceLock::new() };
        let _ = obj.handle.set(placeholder.handle());
        Ok(obj)
    }

    /// Its handle (`MPI_COMM_NULL` before it is stored).
    pub(crate) fn handle(&self) -> Handle {
        self.handle.get().copied().unwrap_or(abi::MPI_COMM_NULL)
    }
}

impl State {
    /// The communicator of handle `h`: `MPI_ERR_COMM` for `MPI_COMM_NULL` and anything that is
    /// not a live communicator handle.
    pub(crate) fn comm(&self, h: Handle) -> Result<Arc<CommObj>, Error> {
        match h {
            abi::MPI_COMM_WORLD => Ok(self.world.clone()),
            abi::MPI_COMM_SELF => Ok(self.self_comm.clone()),
            abi::MPI_COMM_NULL => Err(Error::comm("null communicator (MPI_COMM_NULL)")),
            _ => self.comms.get(h).ok_or_else(|| Error::comm(format!("invalid communicator handle {h:#x}"))),
        }
    }

    /// Stores a new communicator; it and its handle.
    pub(crate) fn add_comm(&self, obj: CommObj) -> Result<(Handle, Arc<CommObj>), Error> {
        let obj = Arc::new(obj);
        let h = self.comms.insert(obj.clone()).ok_or_else(|| Error::intern("too many live communicators"))?;
        let _ = obj.handle.set(h);
        Ok((h, obj))
    }

    /// Puts `obj` in the place of communicator `h` (see [`CommObj::replacing`]).
    pub(crate) fn replace_comm(&self, h: Handle, obj: CommObj) -> Result<(), Error> {
        let replaced = self.comms.replace(h, Arc::new(obj));
        forget_recent();
        match replaced {
            true => Ok(()),
            false => Err(Error::comm(format!("communicator {h:#x} was freed before it was made"))),
        }
    }

    /// Forgets communicator `h` (its pending operations keep it alive until they complete).
    pub(crate) fn remove_comm(&self, h: Handle) {
        let c = self.comms.remove(h);
        forget_recent();
        drop(c);
    }
}

crate::recent::kind!(COMMS: CommObj, abi::MPI_COMM_NULL);

/// Marks every thread's recent communicator stale (one was freed or replaced, or all were),
/// and releases this thread's.
pub(crate) fn forget_recent() {
    COMMS.forget();
}

/// Runs the hot call `f` on the communicator of handle `h` through this thread's recent one,
/// else through the state (which makes it the recent one); `None` if `f` declined (it runs at
/// most once to completion: it declines before doing anything) or `h` is no communicator (the
/// general path then reports it).
#[inline(always)]
pub(crate) fn hot<R>(h: Handle, f: impl Fn(&CommObj) -> Option<R> + Copy) -> Option<R> {
    match COMMS.hot(h, f) {
        Some(r) => r,
        None => lookup_and(h, f),
    }
}

/// [`hot`] for a call that keeps a reference to the communicator: `f` sees its `Arc`.
#[inline(always)]
pub(crate) fn hot_shared<R>(h: Handle, f: impl Fn(&Arc<CommObj>) -> Option<R> + Copy) -> Option<R> {
    match COMMS.hot_shared(h, f) {
        Some(r) => r,
        None => lookup_and_shared(h, f),
    }
}

#[cold]
#[inline(never)]
fn lookup_and_shared<R>(h: Handle, f: impl Fn(&Arc<CommObj>) -> Option<R>) -> Option<R> {
    COMMS.with(h, || looked_up(h), |c| Ok(f(c))).ok().flatten()
}

#[cold]
#[inline(never)]
fn lookup_and<R>(h: Handle, f: impl Fn(&CommObj) -> Option<R>) -> Option<R> {
    lookup_and_shared(h, |c| f(c))
}

/// The communicator of handle `h`, through the state.
fn looked_up(h: Handle) -> Result<Arc<CommObj>, crate::errors::Fail> {
    Ok(crate::state::state()?.comm(h)?)
}

/// `error`, raised on the communicator of handle `h` (a hot call's failure: the lookup that
/// finds the handler is off the hot path).
#[cold]
#[inline(never)]
pub(crate) fn fail_on(h: Handle, error: Error) -> crate::errors::Outcome {
    use crate::errors::On;
    COMMS.with(h, || looked_up(h), |c| Err(error).on(c))
}
