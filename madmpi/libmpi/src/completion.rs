//! Completing requests for the C calls (`MPI_Wait`, `MPI_Test` and their `any`/`some`/`all`
//! forms): resolving arrays of handles, reporting a completed operation (its status, the
//! request retired, or made inactive if persistent), and the `MPI_ERR_IN_STATUS` convention.
//!
//! Null handles and inactive persistent requests resolve to "nothing to complete". Nothing
//! here waits with a table lock held: entries and operations are `Arc`s cloned out first.
//! A generalized request's status comes from its `query_fn`, and reporting its completion runs
//! its `free_fn` ([`report_generalized`]).
//!
//! Owns the reporting of completions; it must not decide when a call waits or returns (the
//! `api` layer does) nor start operations.

use crate::errors::{Fail, HandlerOwner, On, Outcome, named};
use crate::requests::ReqEntry;
use crate::state::State;
use crate::status;
use madmpi::abi::{self, Status};
use madmpi::error::{Error, ErrorClass};
use madmpi::grequest::Generalized;
use madmpi::request::RawRequest;
use std::ffi::c_int;
use std::sync::Arc;

/// An active request: its entry and its running (or completed, unreported) operation.
pub(crate) struct Active {
    pub(crate) entry: Arc<ReqEntry>,
    pub(crate) op: Arc<RawRequest>,
}

impl State {
    /// The active request of handle `h`: `None` for `MPI_REQUEST_NULL` and inactive persistent
    /// requests, `MPI_ERR_REQUEST` for an invalid handle.
    pub(crate) fn active(&self, h: abi::Request) -> Result<Option<Active>, Error> {
        Ok(self.request(h)?.and_then(|entry| entry.op().map(|op| Active { entry, op })))
    }

    /// The active requests of an array, all resolved before anything completes (an invalid
    /// handle fails the call, naming its position as MPICH does).
    pub(crate) fn all_active(&self, handles: &[abi::Request]) -> Result<Vec<Option<Active>>, Error> {
        // Sized once: collecting `Result`s would grow the vector step by step.
        let mut all = Vec::with_capacity(handles.len());
        for (i, &h) in handles.iter().enumerate() {
            all.push(
                self.active(h)
                    .map_err(|e| Error::new(e.class(), format!("array_of_requests[{i}]: {}", e.message())))?,
            );
        }
        Ok(all)
    }
}

/// Reports the completed operation of `a`, whose handle is `*handle`: fills `status`, forgets
/// the request (its handle becomes `MPI_REQUEST_NULL`) or, if persistent, makes it inactive.
/// The operation's error if it failed.
pub(crate) fn finish(
    st: &State,
    handle: &mut abi::Request,
    a: &Active,
    status: Option<&mut Status>,
) -> Result<(), Error> {
    if let Some(g) = a.op.generalized() {
        st.retire_request(*handle);
        *handle = abi::MPI_REQUEST_NULL;
        return report_generalized(g, status, true);
    }
    let o = a.op.outcome().expect("completed");
    if a.entry.req.is_persistent() {
        a.entry.req.reported();
    } else {
        st.retire_request(*handle);
        *handle = abi::MPI_REQUEST_NULL;
    }
    status::outcome(status, &o);
    o.error.map_or(Ok(()), Err)
}

/// Reports the completion of generalized request `g` into `status` (its `query_fn` fills it,
/// `MPI_ERROR` is left alone); `finishing`: the request goes, its `free_fn` runs.
pub(crate) fn report_generalized(
    g: &Generalized,
    status: Option<&mut Status>,
    finishing: bool,
) -> Result<(), Error> {
    let mut queried = Status::default();
    let r = g.report(&mut queried, finishing);
    if let Some(out) = status {
        *out = Status { error: out.error, ..queried };
    }
    r
}

/// Drives progress once unless some operation of `ops` already completed (the `MPI_Test`
/// family: a program polling with them must see its messages arrive without progression
/// threads).
pub(crate) fn progress_once(ops: &[&RawRequest]) {
    ops.iter().for_each(|op| op.poke());
    if !ops.iter().any(|op| op.is_complete())
        && let Some(first) = ops.first()
    {
        first.test();
    }
}

/// The failure of a multiple completion `func` that reported `done` operations, as
/// `(status slot, error if it failed, entry)`: `None` if none failed; else `MPI_ERR_IN_STATUS`
/// (as MPICH, with `MPI_STATUSES_IGNORE` too), with the `MPI_ERROR` of each reported status
/// set: `MPI_SUCCESS` or the operation's error code.
pub(crate) fn in_status(
    func: &str,
    done: &[(usize, Option<Error>, &ReqEntry)],
    statuses: Option<&mut [Status]>,
) -> Option<Fail> {
    let (_, _, first) = done.iter().find(|d| d.1.is_some())?;
    let mut statuses = statuses;
    if let Some(s) = statuses.as_deref_mut() {
        for (slot, _, _) in done {
            s[*slot].error = 0;
        }
    }
    let failed: Vec<(usize, &Error)> = done.iter().filter_map(|(i, e, _)| Some((*i, e.as_ref()?))).collect();
    Some(failures_in_status(func, done.len(), &failed, first.comm.clone(), statuses))
}

/// `MPI_ERR_IN_STATUS` for the `failed` ones (status slot, error) of `reported` completed
/// requests: each failed slot's `MPI_ERROR` becomes its error's code (the caller set the
/// others'); the error goes to `comm`'s handler (the first failed request's).
pub(crate) fn failures_in_status(
    func: &str,
    reported: usize,
    failed: &[(usize, &Error)],
    comm: Arc<dyn HandlerOwner>,
    statuses: Option<&mut [Status]>,
) -> Fail {
    if let Some(statuses) = statuses {
        for (slot, e) in failed {
            statuses[*slot].error = named(func, (*e).clone()).code();
        }
    }
    let what = format!(
        "{} of {reported} completed requests failed (see the MPI_ERROR of their statuses)",
        failed.len()
    );
    Fail { error: Error::new(ErrorClass::InStatus, what), comm: Some(comm) }
}

/// Drops what a completion call resolved, giving the allocations of the requests it retired
/// back to this thread (`requests::give_back`).
pub(crate) fn give_back(active: Vec<Option<Active>>) {
    for a in active.into_iter().flatten() {
        crate::requests::give_back(a.entry, a.op);
    }
}

/// The operations of the active requests.
pub(crate) fn ops(active: &[Option<Active>]) -> Vec<&RawRequest> {
    let mut ops = Vec::with_capacity(active.len());
    ops.extend(active.iter().flatten().map(|a| &*a.op));
    ops
}

/// Reports the completed one of `active` with the lowest index (`MPI_Waitany`, `MPI_Testany`).
pub(crate) fn report_first(
    st: &State,
    handles: &mut [abi::Request],
    active: &[Option<Active>],
    index: &mut c_int,
    status: Option<&mut Status>,
) -> Result<bool, Fail> {
    let Some((i, a)) = active
        .iter()
        .enumerate()
        .find_map(|(i, a)| a.as_ref().filter(|a| a.op.is_complete()).map(|a| (i, a)))
    else {
        return Ok(false);
    };
    *index = i as c_int;
    finish(st, &mut handles[i], a, status).on(&a.entry.comm)?;
    Ok(true)
}

/// Reports every completed one of `active` (`MPI_Waitsome`, `MPI_Testsome`), in index order,
/// with the receives from any source that ULFM's rule stops: listed too, their `MPI_ERROR`
/// `MPIX_ERR_PROC_FAILED_PENDING`, left active (as Open MPI).
pub(crate) fn report_some(
    func: &str,
    st: &State,
    handles: &mut [abi::Request],
    active: &[Option<Active>],
    outcount: &mut c_int,
    indices: &mut [c_int],
    mut statuses: Option<&mut [Status]>,
) -> Outcome {
    let mut done = Vec::with_capacity(active.len());
    for (i, a) in active.iter().enumerate() {
        let Some(a) = a else { continue };
        let pending = if a.op.is_complete() { None } else { Some(a.op.failure_pending()) };
        let k = done.len();
        let r = match pending {
            None => finish(st, &mut handles[i], a, statuses.as_deref_mut().map(|s| &mut s[k])).err(),
            Some(None) => continue,
            Some(stopped) => stopped,
        };
        indices[k] = i as c_int;
        done.push((k, r, &*a.entry));
    }
    *outcount = done.len() as c_int;
    in_status(func, &done, statuses).map_or(Ok(()), Err)
}

/// Reports every request of `active` (`MPI_Waitall`, `MPI_Testall`): inactive ones get the
/// empty status, completed ones their outcome. Incomplete ones are there only when ULFM's rule
/// stopped the wait (MPICH turns such a wait into a test): the receives from any source the rule
/// stops are left active with `MPIX_ERR_PROC_FAILED_PENDING`, the others with `MPI_ERR_PENDING`;
/// then `MPI_ERR_IN_STATUS`.
pub(crate) fn report_all(
    func: &str,
    st: &State,
    handles: &mut [abi::Request],
    active: &[Option<Active>],
    mut statuses: Option<&mut [Status]>,
) -> Outcome {
    let mut done = Vec::with_capacity(active.len());
    for (i, a) in active.iter().enumerate() {
        let status = statuses.as_deref_mut().map(|s| &mut s[i]);
        let Some(a) = a else {
            status::empty(status);
            continue;
        };
        let r = if a.op.is_complete() {
            finish(st, &mut handles[i], a, status).err()
        } else {
            let pending = || Error::new(ErrorClass::Pending, "not complete: a failure stopped the wait");
            Some(a.op.failure_pending().unwrap_or_else(pending))
        };
        done.push((i, r, &*a.entry));
    }
    if done.iter().any(|d| d.1.is_some())
        && let Some(s) = statuses.as_deref_mut()
    {
        // Every status says how its request went, the null and inactive ones included.
        for s in s.iter_mut() {
            s.error = 0;
        }
    }
    in_status(func, &done, statuses).map_or(Ok(()), Err)
}
