//! Completion: `MPI_Wait`, `MPI_Test`, `MPI_Waitany`, `MPI_Testany`, `MPI_Waitall`,
//! `MPI_Testall`, `MPI_Waitsome`, `MPI_Testsome`, `MPI_Request_get_status`,
//! `MPI_Test_cancelled`.
//!
//! A completed request is removed from the table and its handle set to `MPI_REQUEST_NULL`; a
//! persistent one becomes inactive instead. Null handles and inactive requests complete at
//! once with an empty status; the `any`/`some` forms ignore them (`MPI_UNDEFINED` when there
//! is nothing else). Errors of an operation go to the handler of its communicator; the
//! `some`/`all` forms report them as `MPI_ERR_IN_STATUS`. Waits on several requests drive
//! progress and nap on pioman conditions ([`madmpi::request::completion`]); none holds a lock.
//!
//! ULFM, as MPICH's ch4: while a member of its communicator is known failed and not acknowledged,
//! a receive from `MPI_ANY_SOURCE` stays active and its wait or test fails with
//! `MPIX_ERR_PROC_FAILED_PENDING` (the failure wakes a blocked wait). `MPI_Wait`/`MPI_Test`
//! return it; `MPI_Waitany`/`MPI_Testany` return it with that request's index when none
//! completed; `MPI_Waitsome`/`MPI_Testsome` list that request with the completed ones, its
//! status saying so (`MPI_ERR_IN_STATUS`); `MPI_Waitall`/`MPI_Testall` report the completed ones
//! and leave the others active, that receive's status `MPIX_ERR_PROC_FAILED_PENDING` and the
//! rest's `MPI_ERR_PENDING` (`MPI_ERR_IN_STATUS`; `flag` 0 for `MPI_Testall`).
//!
//! Arguments are checked in MPICH's order: count, the request array and each handle in it,
//! then the output pointers in parameter order.

use crate::check;
use crate::completion::{
    Active, failures_in_status, finish, give_back, ops, progress_once, report_all, report_first, report_some,
};
use crate::errors::{Fail, On};
use crate::export::export;
use crate::requests::COMPLETED;
use crate::requests::express::EXPRESS;
use crate::state::{State, state};
use crate::status;
use madmpi::abi::{self, Status};
use madmpi::error::Error;
use madmpi::request::completion::wait_any_or_failure_pending;
use madmpi::request::{Outcome, RawRequest};
use smallvec::SmallVec;
use std::ffi::c_int;
use std::sync::Arc;

/// The checked request array of `count` handles (empty for a count of 0).
///
/// # Safety
/// A non-null `p` must be valid for `count` handles, read and written.
unsafe fn requests<'a>(count: c_int, p: *mut abi::Request) -> Result<&'a mut [abi::Request], Error> {
    let n = check::count(count)? as usize;
    if n == 0 {
        return Ok(&mut []);
    }
    // SAFETY: the caller's contract.
    unsafe { check::array(p, n, "array_of_requests") }
}

/// The checked status array of `n` entries: `None` for `MPI_STATUSES_IGNORE`.
///
/// # Safety
/// A non-null `p` other than `MPI_STATUSES_IGNORE` must be valid for `n` statuses.
unsafe fn statuses<'a>(p: *mut Status, n: usize) -> Result<Option<&'a mut [Status]>, Error> {
    if p as usize == abi::MPI_STATUSES_IGNORE || n == 0 {
        return Ok(None);
    }
    // SAFETY: the caller's contract.
    unsafe { check::array(p, n, "array_of_statuses") }.map(Some)
}

/// The completion calls' fast path: when every handle of `n` at `reqs` is `MPI_REQUEST_NULL` or
/// [`COMPLETED`] (operations that completed in their call: sends that left at once), each is
/// reported as the general path would — the empty status for a null handle, a completed send's
/// status for `COMPLETED`, which becomes `MPI_REQUEST_NULL` — without the request table.
/// `false`: something else is there (or an argument the general path must check), nothing done.
/// `MPI_Wait` and `MPI_Test` pass their one handle and status (`MPI_STATUS_IGNORE` is
/// `MPI_STATUSES_IGNORE`'s address, 1).
///
/// # Safety
/// A non-null `reqs` holds `n` handles; a `statuses` that is neither null nor
/// `MPI_STATUSES_IGNORE` holds `n` statuses (MPI's contract).
const _: () = assert!(abi::MPI_STATUS_IGNORE == abi::MPI_STATUSES_IGNORE);

unsafe fn done_at_once(n: c_int, reqs: *mut abi::Request, statuses: *mut Status) -> bool {
    // SAFETY: our contract, passed on.
    let Some((handles, mut outs)) = (unsafe { fast_arrays(n, reqs, statuses) }) else { return false };
    if !handles.iter().all(|&h| h == COMPLETED || h == abi::MPI_REQUEST_NULL) || !crate::state::running() {
        return false;
    }
    for (i, h) in handles.iter_mut().enumerate() {
        let out = outs.as_deref_mut().map(|s| &mut s[i]);
        if *h == COMPLETED {
            *h = abi::MPI_REQUEST_NULL;
            status::outcome(out, &Outcome::DONE);
        } else {
            status::empty(out);
        }
    }
    true
}

/// The arrays of a completion call's fast paths: the `n` handles at `reqs` and, unless
/// `statuses` is `MPI_STATUSES_IGNORE`, the `n` statuses there; `None` for anything the general
/// path must check or report (no handle, a null or misaligned array).
///
/// # Safety
/// As [`done_at_once`].
unsafe fn fast_arrays<'a>(
    n: c_int,
    reqs: *mut abi::Request,
    statuses: *mut Status,
) -> Option<(&'a mut [abi::Request], Option<&'a mut [Status]>)> {
    let n = usize::try_from(n).ok()?;
    let ignore = statuses as usize == abi::MPI_STATUSES_IGNORE;
    if n == 0
        || reqs.is_null()
        || !reqs.is_aligned()
        || !ignore && (statuses.is_null() || !statuses.is_aligned())
    {
        return None;
    }
    // SAFETY: not null, aligned, `n` handles (our contract).
    let handles = unsafe { std::slice::from_raw_parts_mut(reqs, n) };
    // SAFETY: not null, aligned, `n` statuses (our contract), apart from the handles.
    let outs = (!ignore).then(|| unsafe { std::slice::from_raw_parts_mut(statuses, n) });
    Some((handles, outs))
}

/// The express path of `MPI_Wait`, `MPI_Waitall` (and of a completed `MPI_Test`): when every
/// handle of `n` at `reqs` is `MPI_REQUEST_NULL`, [`COMPLETED`] or a live express request
/// (`requests::express`), and one at least is the latter, waits for the express ones and
/// reports every request as the general path would (statuses, handles to `MPI_REQUEST_NULL`, an
/// error to the handler of the request's communicator; several requests: `MPI_ERR_IN_STATUS`). `None`: something else
/// is there, or an argument the general path must check; nothing done.
///
/// # Safety
/// As [`done_at_once`].
unsafe fn express_done(
    func: &str,
    n: c_int,
    reqs: *mut abi::Request,
    statuses: *mut Status,
) -> Option<crate::errors::Outcome> {
    // SAFETY: our contract, passed on.
    let (handles, mut outs) = unsafe { fast_arrays(n, reqs, statuses) }?;
    let n = handles.len();
    // Every express one live (nothing reported unless all can be); the running ones' operations
    // taken to wait for, on the stack for a window of the usual size (`madbench mt`'s is 64).
    let mut running: SmallVec<[Arc<RawRequest>; 64]> = SmallVec::new();
    let mut express = 0;
    for &h in handles.iter() {
        if h != COMPLETED && h != abi::MPI_REQUEST_NULL {
            running.extend(EXPRESS.running(h)?);
            express += 1;
        }
    }
    if express == 0 {
        return None;
    }
    running.iter().for_each(|op| op.wait_done());
    drop(running); // each request's last reference is its slot's again
    let mut failed = Vec::new();
    let mut reported = 0;
    for (i, h) in handles.iter_mut().enumerate() {
        let out = outs.as_deref_mut().map(|s| &mut s[i]);
        match *h {
            abi::MPI_REQUEST_NULL => status::empty(out),
            COMPLETED => {
                *h = abi::MPI_REQUEST_NULL;
                status::outcome(out, &Outcome::DONE);
                reported += 1;
            }
            _ => {
                // Another thread completing the same request meanwhile is the program's error.
                let Some(live) = EXPRESS.take(*h) else {
                    let e =
                        Error::request(format!("request {h:#x} was completed by another thread meanwhile"));
                    return Some(Err(e.into()));
                };
                *h = abi::MPI_REQUEST_NULL;
                reported += 1;
                let error = match out {
                    None => live.op.outcome_error(), // no status to fill
                    Some(out) => {
                        let o = live.op.outcome().expect("waited for");
                        status::outcome(Some(out), &o);
                        o.error
                    }
                };
                if let Some(e) = error {
                    failed.push((i, e, live.owner));
                }
                madmpi::operation::give_back(live.op);
            }
        }
    }
    let Some((_, _, owner)) = failed.first() else { return Some(Ok(())) };
    if n == 1 {
        let (_, e, owner) = failed.pop().expect("one");
        return Some(Err(e).on(&owner));
    }
    if let Some(s) = outs.as_deref_mut() {
        s.iter_mut().for_each(|s| s.error = 0);
    }
    let list: Vec<(usize, &Error)> = failed.iter().map(|(i, e, _)| (*i, e)).collect();
    Some(Err(failures_in_status(func, reported, &list, owner.clone(), outs)))
}

export! {
    /// `MPI_Wait`.
    fn MPI_Wait / PMPI_Wait(request: *mut abi::Request, status: *mut Status) {
        // SAFETY: one handle and one status, as MPI's contract says.
        if unsafe { done_at_once(1, request, status) } {
            return Ok(());
        }
        // SAFETY: as above.
        if let Some(r) = unsafe { express_done("MPI_Wait", 1, request, status) } {
            return r;
        }
        let st = state()?;
        // SAFETY: an in-out argument.
        let handle = unsafe { check::out(request, "request") }?;
        let active = st.active(*handle)?;
        // SAFETY: an output argument.
        let status = unsafe { check::status(status) }?;
        let Some(a) = active else {
            status::empty(status);
            return Ok(());
        };
        // A receive from any source left pending by a member's failure (ULFM) stays active.
        a.op.wait_unless_failure_pending().on(&a.entry.comm)?;
        let reported = finish(&st, handle, &a, status).on(&a.entry.comm);
        crate::requests::give_back(a.entry, a.op);
        reported
    }

    /// `MPI_Test`.
    fn MPI_Test / PMPI_Test(request: *mut abi::Request, flag: *mut c_int, status: *mut Status) {
        if !flag.is_null()
            && flag.is_aligned()
            // SAFETY: one handle and one status, as MPI's contract says.
            && unsafe { done_at_once(1, request, status) }
        {
            // SAFETY: not null, aligned: an output argument (MPI's contract).
            unsafe { *flag = 1 };
            return Ok(());
        }
        // An express receive: tested (progress driven once) without promoting it; reported
        // by the express path once complete.
        if !flag.is_null()
            && flag.is_aligned()
            && !request.is_null()
            && request.is_aligned()
            // SAFETY: not null, aligned: an in-out argument (MPI's contract).
            && let Some(op) = EXPRESS.op(unsafe { *request })
        {
            let done = op.test();
            drop(op);
            // SAFETY: not null, aligned: an output argument (MPI's contract).
            unsafe { *flag = c_int::from(done) };
            if !done {
                return Ok(());
            }
            // SAFETY: one handle and one status, as MPI's contract says.
            if let Some(r) = unsafe { express_done("MPI_Test", 1, request, status) } {
                return r;
            }
        }
        let st = state()?;
        // SAFETY: an in-out argument.
        let handle = unsafe { check::out(request, "request") }?;
        let active = st.active(*handle)?;
        // SAFETY: output arguments.
        let flag = unsafe { check::out(flag, "flag") }?;
        // SAFETY: as above.
        let status = unsafe { check::status(status) }?;
        let Some(a) = active else {
            *flag = 1;
            status::empty(status);
            return Ok(());
        };
        *flag = c_int::from(a.op.test());
        if *flag == 0 {
            // ULFM: a receive from any source with a member's failure unacknowledged.
            return a.op.failure_pending().map_or(Ok(()), Err).on(&a.entry.comm);
        }
        let reported = finish(&st, handle, &a, status).on(&a.entry.comm);
        crate::requests::give_back(a.entry, a.op);
        reported
    }

    /// `MPI_Waitany`: completes one active request, the lowest-indexed of those complete; its
    /// error is the call's (not `MPI_ERR_IN_STATUS`). `MPI_UNDEFINED` if none is active.
    fn MPI_Waitany / PMPI_Waitany(count: c_int, array_of_requests: *mut abi::Request, indx: *mut c_int, status: *mut Status) {
        let st = state()?;
        // SAFETY: an array of `count` requests (MPI's contract).
        let handles = unsafe { requests(count, array_of_requests) }?;
        let active = st.all_active(handles)?;
        // SAFETY: output arguments.
        let index = unsafe { check::out(indx, "indx") }?;
        // SAFETY: as above.
        let mut status = unsafe { check::status(status) }?;
        *index = abi::MPI_UNDEFINED;
        let ops = ops(&active);
        if ops.is_empty() {
            status::empty(status);
            return Ok(());
        }
        loop {
            wait_any_or_failure_pending(&ops);
            if report_first(&st, handles, &active, index, status.as_deref_mut())? {
                return Ok(());
            }
            // None completed: a receive from any source stopped by a failure (ULFM), unless
            // it was acknowledged meanwhile (then wait again).
            if let Some((i, a, e)) = failure_pending(&active) {
                *index = i as c_int;
                return Err(e).on(&a.entry.comm);
            }
        }
    }

    /// `MPI_Testany`: `flag` 1 with the index of a completed request, or with `MPI_UNDEFINED`
    /// if none is active; else `flag` 0.
    fn MPI_Testany / PMPI_Testany(
        count: c_int,
        array_of_requests: *mut abi::Request,
        indx: *mut c_int,
        flag: *mut c_int,
        status: *mut Status,
    ) {
        let st = state()?;
        // SAFETY: an array of `count` requests (MPI's contract).
        let handles = unsafe { requests(count, array_of_requests) }?;
        let active = st.all_active(handles)?;
        // SAFETY: output arguments.
        let index = unsafe { check::out(indx, "indx") }?;
        // SAFETY: as above.
        let flag = unsafe { check::out(flag, "flag") }?;
        // SAFETY: as above.
        let status = unsafe { check::status(status) }?;
        *index = abi::MPI_UNDEFINED;
        let ops = ops(&active);
        if ops.is_empty() {
            *flag = 1;
            status::empty(status);
            return Ok(());
        }
        progress_once(&ops);
        *flag = 0;
        *flag = c_int::from(report_first(&st, handles, &active, index, status)?);
        if *flag == 0
            && let Some((i, a, e)) = failure_pending(&active)
        {
            // ULFM, as MPICH: `flag` 1 with the index of the receive the failure stops.
            (*flag, *index) = (1, i as c_int);
            return Err(e).on(&a.entry.comm);
        }
        Ok(())
    }

    /// `MPI_Waitall`: on failure, `MPI_ERR_IN_STATUS` with each status's `MPI_ERROR` set.
    fn MPI_Waitall / PMPI_Waitall(count: c_int, array_of_requests: *mut abi::Request, array_of_statuses: *mut Status) {
        // SAFETY: the arrays as MPI's contract says.
        if unsafe { done_at_once(count, array_of_requests, array_of_statuses) } {
            return Ok(());
        }
        // SAFETY: as above.
        if let Some(r) = unsafe { express_done("MPI_Waitall", count, array_of_requests, array_of_statuses) } {
            return r;
        }
        let st = state()?;
        // SAFETY: an array of `count` requests (MPI's contract).
        let handles = unsafe { requests(count, array_of_requests) }?;
        let active = st.all_active(handles)?;
        // SAFETY: an array of `count` statuses (MPI's contract).
        let statuses = unsafe { statuses(array_of_statuses, handles.len()) }?;
        let ops = ops(&active);
        if !ops.iter().any(|op| op.under_any_source_rule()) {
            ops.iter().for_each(|op| op.wait_done());
        } else {
            // A receive from any source: waits for whichever completes, until all have or a
            // failure stops that receive (ULFM).
            loop {
                let left: Vec<&RawRequest> = ops.iter().copied().filter(|op| !op.is_complete()).collect();
                if left.is_empty() || wait_any_or_failure_pending(&left) {
                    break;
                }
            }
        }
        let reported = report_all("MPI_Waitall", &st, handles, &active, statuses);
        give_back(active);
        reported
    }

    /// `MPI_Testall`: `flag` 1 and every request reported if all are complete; else `flag` 0
    /// and nothing changes.
    fn MPI_Testall / PMPI_Testall(
        count: c_int,
        array_of_requests: *mut abi::Request,
        flag: *mut c_int,
        array_of_statuses: *mut Status,
    ) {
        if !flag.is_null()
            && flag.is_aligned()
            // SAFETY: the arrays as MPI's contract says.
            && unsafe { done_at_once(count, array_of_requests, array_of_statuses) }
        {
            // SAFETY: not null, aligned: an output argument (MPI's contract).
            unsafe { *flag = 1 };
            return Ok(());
        }
        let st = state()?;
        // SAFETY: an array of `count` requests (MPI's contract).
        let handles = unsafe { requests(count, array_of_requests) }?;
        let active = st.all_active(handles)?;
        // SAFETY: an output argument.
        let flag = unsafe { check::out(flag, "flag") }?;
        // SAFETY: an array of `count` statuses (MPI's contract).
        let statuses = unsafe { statuses(array_of_statuses, handles.len()) }?;
        let ops = ops(&active);
        ops.iter().for_each(|op| op.poke());
        if let Some(op) = ops.iter().find(|op| !op.is_complete()) {
            op.test(); // drives progress once
        }
        *flag = c_int::from(ops.iter().all(|op| op.is_complete()));
        if *flag == 0 && failure_pending(&active).is_none() {
            return Ok(());
        }
        let reported = report_all("MPI_Testall", &st, handles, &active, statuses);
        give_back(active);
        reported
    }

    /// `MPI_Waitsome`: waits until some active request completes, then reports all those
    /// complete; `outcount` is `MPI_UNDEFINED` if none is active.
    fn MPI_Waitsome / PMPI_Waitsome(
        incount: c_int,
        array_of_requests: *mut abi::Request,
        outcount: *mut c_int,
        array_of_indices: *mut c_int,
        array_of_statuses: *mut Status,
    ) {
        // SAFETY: MPI's contract for every argument.
        unsafe { some("MPI_Waitsome", true, incount, array_of_requests, outcount, array_of_indices, array_of_statuses) }
    }

    /// `MPI_Testsome`: reports the active requests that are complete (`outcount` may be 0);
    /// `MPI_UNDEFINED` if none is active.
    fn MPI_Testsome / PMPI_Testsome(
        incount: c_int,
        array_of_requests: *mut abi::Request,
        outcount: *mut c_int,
        array_of_indices: *mut c_int,
        array_of_statuses: *mut Status,
    ) {
        // SAFETY: MPI's contract for every argument.
        unsafe { some("MPI_Testsome", false, incount, array_of_requests, outcount, array_of_indices, array_of_statuses) }
    }

    /// `MPI_Request_get_status`: `MPI_Test` without freeing or deactivating the request; a
    /// failed operation's error is returned (as MPICH), and again by the call that completes it.
    fn MPI_Request_get_status / PMPI_Request_get_status(request: abi::Request, flag: *mut c_int, status: *mut Status) {
        let st = state()?;
        let active = st.active(request)?;
        // SAFETY: output arguments.
        let flag = unsafe { check::out(flag, "flag") }?;
        // SAFETY: as above.
        let status = unsafe { check::status(status) }?;
        let Some(a) = active else {
            *flag = 1;
            status::empty(status);
            return Ok(());
        };
        *flag = c_int::from(a.op.test());
        if *flag == 0 {
            return Ok(());
        }
        if let Some(g) = a.op.generalized() {
            return crate::completion::report_generalized(g, status, false).on(&a.entry.comm);
        }
        let o = a.op.outcome().expect("completed");
        status::outcome(status, &o);
        o.error.map_or(Ok(()), Err).on(&a.entry.comm)
    }

    /// `MPI_Test_cancelled`: whether the status is that of a cancelled operation.
    /// (`MPI_STATUS_IGNORE` is `MPI_ERR_ARG` here; MPICH reads through it and crashes.)
    fn MPI_Test_cancelled / PMPI_Test_cancelled(status: *const Status, flag: *mut c_int) {
        // SAFETY: an input argument (MPI's contract).
        let status = unsafe { check::status_in(status) }?;
        // SAFETY: an output argument.
        let flag = unsafe { check::out(flag, "flag") }?;
        *flag = c_int::from(status.cancelled());
        Ok(())
    }
}

/// `MPI_Waitsome` (`block`: wait until one active request completes) and `MPI_Testsome`
/// (drive progress once), then report the complete ones.
///
/// # Safety
/// As [`some_args`].
unsafe fn some(
    name: &str,
    block: bool,
    incount: c_int,
    array_of_requests: *mut abi::Request,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut Status,
) -> Result<(), Fail> {
    let st = state()?;
    // SAFETY: the caller's contract.
    let (handles, active, outcount, indices, statuses) =
        unsafe { some_args(&st, incount, array_of_requests, outcount, array_of_indices, array_of_statuses) }?;
    let ops = ops(&active);
    if ops.is_empty() {
        *outcount = abi::MPI_UNDEFINED;
        return Ok(());
    }
    if block {
        // Ends with a completion or a receive from any source stopped by a failure (ULFM);
        // the report lists both.
        wait_any_or_failure_pending(&ops);
    } else {
        progress_once(&ops);
    }
    report_some(name, &st, handles, &active, outcount, indices, statuses)
}

/// The first active request that ULFM's rule stops (a receive from any source while a failure is
/// unacknowledged): its index, itself and `MPIX_ERR_PROC_FAILED_PENDING`.
fn failure_pending(active: &[Option<Active>]) -> Option<(usize, &Active, Error)> {
    active.iter().enumerate().find_map(|(i, a)| {
        let a = a.as_ref()?;
        a.op.failure_pending().map(|e| (i, a, e))
    })
}

/// The checked arguments of `MPI_Waitsome` / `MPI_Testsome`.
type SomeArgs<'a> =
    (&'a mut [abi::Request], Vec<Option<Active>>, &'a mut c_int, &'a mut [c_int], Option<&'a mut [Status]>);

/// Checks the arguments of `MPI_Waitsome` / `MPI_Testsome` in MPICH's order.
///
/// # Safety
/// MPI's contract: arrays of `incount` elements, `outcount` writable.
unsafe fn some_args<'a>(
    st: &State,
    incount: c_int,
    array_of_requests: *mut abi::Request,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut Status,
) -> Result<SomeArgs<'a>, Fail> {
    // SAFETY: the caller's contract.
    let handles = unsafe { requests(incount, array_of_requests) }?;
    let active = st.all_active(handles)?;
    // SAFETY: as above.
    let outcount = unsafe { check::out(outcount, "outcount") }?;
    let n = handles.len();
    let indices: &mut [c_int] = if n == 0 {
        &mut []
    } else {
        // SAFETY: as above.
        unsafe { check::array(array_of_indices, n, "array_of_indices") }?
    };
    // SAFETY: as above.
    let statuses = unsafe { statuses(array_of_statuses, n) }?;
    Ok((handles, active, outcount, indices, statuses))
}
