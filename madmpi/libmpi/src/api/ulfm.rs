//! Fault tolerance as MPICH exports it (ULFM): `MPIX_Comm_revoke`, `MPIX_Comm_shrink`,
//! `MPIX_Comm_agree`, `MPIX_Comm_failure_ack`, `MPIX_Comm_failure_get_acked`.
//!
//! They accept revoked communicators (that is their use). A process failure reaches the
//! program as `MPIX_ERR_PROC_FAILED` from the call that needed the dead process; revocation as
//! `MPIX_ERR_REVOKED` (`madmpi::ft` says how). A job whose ranks may die must be started with
//! `madrun -disable-auto-cleanup` (or Hydra's), or the launcher ends it at the first death.

use crate::check;
use crate::comms::CommObj;
use crate::errors::On;
use crate::export::export;
use crate::state::state;
use madmpi::abi;
use madmpi::ft;
use std::ffi::c_int;

export! {
    /// `MPIX_Comm_revoke`: every member's pending and later operations on `comm` fail with
    /// `MPIX_ERR_REVOKED` (except the calls of this file and `MPI_Comm_free`).
    fn MPIX_Comm_revoke / PMPIX_Comm_revoke(comm: abi::Comm) {
        let c = state()?.comm(comm)?;
        ft::revoke(&c.comm).on(&c)
    }

    /// `MPIX_Comm_shrink`: a communicator of the surviving members, with `comm`'s error
    /// handler.
    fn MPIX_Comm_shrink / PMPIX_Comm_shrink(comm: abi::Comm, newcomm: *mut abi::Comm) {
        let st = state()?;
        let c = st.comm(comm)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(newcomm, "newcomm") }.on(&c)?;
        *out = abi::MPI_COMM_NULL;
        let shrunk = ft::shrink(&c.comm).on(&c)?;
        *out = st.add_comm(CommObj::child(shrunk, &c)).on(&c)?.0;
        Ok(())
    }

    /// `MPIX_Comm_agree`: `*flag` becomes the bitwise AND of the survivors' flags (also when
    /// the call fails with `MPIX_ERR_PROC_FAILED` for a failure not acknowledged here).
    fn MPIX_Comm_agree / PMPIX_Comm_agree(comm: abi::Comm, flag: *mut c_int) {
        let c = state()?.comm(comm)?;
        // SAFETY: an in-out argument.
        let flag = unsafe { check::out(flag, "flag") }.on(&c)?;
        let agreed = ft::agree(&c.comm, *flag).on(&c)?;
        *flag = agreed.flag;
        agreed.checked().map(drop).on(&c)
    }

    /// `MPIX_Comm_failure_ack`: acknowledges the failures of `comm`'s members known now.
    fn MPIX_Comm_failure_ack / PMPIX_Comm_failure_ack(comm: abi::Comm) {
        let c = state()?.comm(comm)?;
        ft::failure_ack(&c.comm);
        Ok(())
    }

    /// `MPIX_Comm_failure_get_acked`: the group of the acknowledged failed members
    /// (`MPI_GROUP_EMPTY` if none).
    fn MPIX_Comm_failure_get_acked / PMPIX_Comm_failure_get_acked(comm: abi::Comm, failedgrp: *mut abi::Group) {
        let st = state()?;
        let c = st.comm(comm)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(failedgrp, "failedgrp") }.on(&c)?;
        let g = ft::failed_acked(&c.comm).on(&c)?;
        *out = st.add_group(g).on(&c)?;
        Ok(())
    }
}
