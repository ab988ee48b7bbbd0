//! Writing `MPI_Status` in MPICH's layout from the Rust API's [`Status`](p2p::Status):
//! the byte count (`MPI_Get_count` divides it by the type size), `MPI_SOURCE` as a rank of the
//! communicator (`MPI_PROC_NULL` when there was no peer), `MPI_TAG`, the cancelled flag.
//! `MPI_ERROR` is left alone except by the multiple-completion calls, which set it for every
//! request.
//!
//! Owns the translation of statuses; it must not decide which calls fill them.

use madmpi::abi::{self, Status};
use madmpi::p2p;
use madmpi::request::Outcome;
use std::ffi::c_int;

/// Fills `out` (if not `MPI_STATUS_IGNORE`) from `st`, leaving `MPI_ERROR` as it is.
pub(crate) fn fill(out: Option<&mut Status>, st: &p2p::Status) {
    let Some(out) = out else { return };
    out.set_count(i64::try_from(st.bytes).unwrap_or(i64::MAX));
    out.set_cancelled(false);
    out.source = st.source.map_or(abi::MPI_PROC_NULL, |r| r as c_int);
    out.tag = st.tag;
}

/// Fills `out` (if not `MPI_STATUS_IGNORE`) from a completed operation's outcome: a cancelled
/// one gets the empty status with the cancelled flag (`MPI_Test_cancelled`).
pub(crate) fn outcome(out: Option<&mut Status>, o: &Outcome) {
    let Some(out) = out else { return };
    if o.cancelled {
        empty(Some(&mut *out));
        out.set_cancelled(true);
    } else {
        fill(Some(out), &o.status);
    }
}

/// The status of a null or inactive request (MPI's "empty" status): any source, any tag, no
/// data.
pub(crate) fn empty(out: Option<&mut Status>) {
    let Some(out) = out else { return };
    out.set_count(0);
    out.set_cancelled(false);
    out.source = abi::MPI_ANY_SOURCE;
    out.tag = abi::MPI_ANY_TAG;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields() {
        let mut s = Status { error: 77, ..Status::default() };
        fill(Some(&mut s), &p2p::Status { source: Some(3), tag: 9, bytes: 5 << 32 | 7 });
        assert_eq!((s.count(), s.source, s.tag, s.error, s.cancelled()), (5 << 32 | 7, 3, 9, 77, false));
        fill(Some(&mut s), &p2p::Status { source: None, tag: -1, bytes: 0 });
        assert_eq!((s.count(), s.source, s.tag), (0, abi::MPI_PROC_NULL, abi::MPI_ANY_TAG));
        empty(Some(&mut s));
        assert_eq!((s.count(), s.source, s.tag, s.error), (0, abi::MPI_ANY_SOURCE, abi::MPI_ANY_TAG, 77));
        fill(None, &p2p::Status { source: Some(1), tag: 1, bytes: 1 });
        outcome(Some(&mut s), &Outcome { cancelled: true, ..Outcome::DONE });
        assert!(s.cancelled());
        assert_eq!((s.count(), s.source, s.tag, s.error), (0, abi::MPI_ANY_SOURCE, abi::MPI_ANY_TAG, 77));
        let st = p2p::Status { source: Some(2), tag: 4, bytes: 8 };
        outcome(Some(&mut s), &Outcome { status: st, ..Outcome::DONE });
        assert_eq!((s.cancelled(), s.count(), s.source, s.tag), (false, 8, 2, 4));
    }
}
