//! Generalized requests: `MPI_Grequest_start`, `MPI_Grequest_complete`, and MPICH's
//! extensions `MPIX_Grequest_start` (with `poll_fn` and `wait_fn`),
//! `MPIX_Grequest_class_create`, `MPIX_Grequest_class_allocate`.
//!
//! A generalized request is a request handle like any other (waits, tests, `MPI_Cancel`,
//! `MPI_Request_free`); its errors go to `MPI_COMM_WORLD`'s handler, as MPICH's, which have no
//! communicator. As MPICH, every callback must be given (`MPI_ERR_ARG` for a null one, the
//! extensions' included); an unknown class is `MPI_ERR_ARG` (MPICH crashes).

use crate::check;
use crate::errors::{On, Outcome};
use crate::export::export;
use crate::grequests::{self, CCallbacks, CancelFn, FreeFn, Functions, QueryFn, WaitFn};
use crate::state::{State, state};
use madmpi::abi;
use madmpi::error::Error;
use madmpi::grequest::Generalized;
use madmpi::request::RawRequest;
use std::ffi::{c_int, c_void};

/// The callbacks, each required; `MPI_ERR_ARG` names the first null one.
fn functions(
    query_fn: Option<QueryFn>,
    free_fn: Option<FreeFn>,
    cancel_fn: Option<CancelFn>,
    progress: Option<(Option<QueryFn>, Option<WaitFn>)>,
) -> Result<Functions, Error> {
    let null = |what: &str| Error::arg(format!("{what} is a null function pointer"));
    let progress = match progress {
        None => None,
        Some((poll, wait)) => {
            Some((poll.ok_or_else(|| null("poll_fn"))?, wait.ok_or_else(|| null("wait_fn"))?))
        }
    };
    Ok(Functions {
        query: query_fn.ok_or_else(|| null("query_fn"))?,
        free: free_fn.ok_or_else(|| null("free_fn"))?,
        cancel: cancel_fn.ok_or_else(|| null("cancel_fn"))?,
        progress,
    })
}

/// Starts a generalized request with `fns` and stores its handle in `request`.
///
/// # Safety
/// `request` is an output argument (MPI's contract).
unsafe fn start(st: &State, fns: Functions, extra_state: *mut c_void, request: *mut abi::Request) -> Outcome {
    // SAFETY: `request` is null or writable (this function's contract, MPI's for the caller).
    let request = unsafe { check::out(request, "request") }?;
    let g = Generalized::new(Box::new(CCallbacks::new(fns, extra_state)));
    let raw = RawRequest::generalized_on(&st.world.comm, g);
    *request = st.add_request(raw, &st.world)?;
    Ok(())
}

export! {
    /// `MPI_Grequest_start`.
    fn MPI_Grequest_start / PMPI_Grequest_start(
        query_fn: Option<QueryFn>,
        free_fn: Option<FreeFn>,
        cancel_fn: Option<CancelFn>,
        extra_state: *mut c_void,
        request: *mut abi::Request,
    ) {
        let st = state()?;
        let fns = functions(query_fn, free_fn, cancel_fn, None)?;
        // SAFETY: MPI's contract for `request`.
        unsafe { start(&st, fns, extra_state, request) }
    }

    /// `MPIX_Grequest_start`: with `poll_fn` (called by tests, and between progress passes by
    /// waits) and `wait_fn` (called once by a wait, for that request, with a timeout of 0).
    fn MPIX_Grequest_start / PMPIX_Grequest_start(
        query_fn: Option<QueryFn>,
        free_fn: Option<FreeFn>,
        cancel_fn: Option<CancelFn>,
        poll_fn: Option<QueryFn>,
        wait_fn: Option<WaitFn>,
        extra_state: *mut c_void,
        request: *mut abi::Request,
    ) {
        let st = state()?;
        let fns = functions(query_fn, free_fn, cancel_fn, Some((poll_fn, wait_fn)))?;
        // SAFETY: MPI's contract for `request`.
        unsafe { start(&st, fns, extra_state, request) }
    }

    /// `MPIX_Grequest_class_create`: the callbacks of requests made by
    /// `MPIX_Grequest_class_allocate`.
    fn MPIX_Grequest_class_create / PMPIX_Grequest_class_create(
        query_fn: Option<QueryFn>,
        free_fn: Option<FreeFn>,
        cancel_fn: Option<CancelFn>,
        poll_fn: Option<QueryFn>,
        wait_fn: Option<WaitFn>,
        greq_class: *mut c_int,
    ) {
        state()?;
        let fns = functions(query_fn, free_fn, cancel_fn, Some((poll_fn, wait_fn)))?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(greq_class, "greq_class") }?;
        *out = grequests::create_class(fns)?;
        Ok(())
    }

    /// `MPIX_Grequest_class_allocate`: a generalized request of class `greq_class`.
    fn MPIX_Grequest_class_allocate / PMPIX_Grequest_class_allocate(
        greq_class: c_int,
        extra_state: *mut c_void,
        request: *mut abi::Request,
    ) {
        let st = state()?;
        let fns = grequests::class(greq_class)?;
        // SAFETY: MPI's contract for `request`.
        unsafe { start(&st, fns, extra_state, request) }
    }

    /// `MPI_Grequest_complete`: from any thread; wakes the waiters. If the program already
    /// freed the request, its `free_fn` runs here and the handle goes.
    fn MPI_Grequest_complete / PMPI_Grequest_complete(request: abi::Request) {
        let st = state()?;
        let Some(entry) = st.request(request)? else {
            return Err(Error::request("MPI_REQUEST_NULL is not a generalized request").into());
        };
        let op = entry.op();
        let Some(g) = op.as_deref().and_then(RawRequest::generalized) else {
            return Err(Error::request(format!("{request:#x} is not a generalized request"))).on(&entry.comm);
        };
        let freed = g.complete();
        if matches!(freed, Ok(true) | Err(_)) {
            st.retire_request(request);
        }
        freed.map(drop).on(&entry.comm)
    }
}
