//! Rail failover, reported to C programs: `MPIX_Rail_count`, `MPIX_Rail_get_info`,
//! `MPIX_Rail_transitions` (MadMPI extensions, declared in our `mpi.h`; `madmpi::ft::rails`
//! says what they report). A program may poll `MPIX_Rail_transitions` and checkpoint when its
//! fast network degrades; the job carries on either way.

use super::write_string;
use crate::check;
use crate::errors::On;
use crate::export::export;
use crate::state::state;
use madmpi::abi;
use madmpi::error::{Error, ErrorClass};
use madmpi::ft::rails;
use std::ffi::{c_char, c_int};

/// `MPIX_Rail_get_info`'s states.
const MPIX_RAIL_DOWN: c_int = 0;
const MPIX_RAIL_IN_USE: c_int = 1;
const MPIX_RAIL_STANDBY: c_int = 2;
/// Room for a rail's name, with its NUL (`MPIX_MAX_RAIL_NAME`).
const MPIX_MAX_RAIL_NAME: c_int = 64;

fn rank_arg(rank: c_int) -> Result<u32, Error> {
    u32::try_from(rank).map_err(|_| Error::new(ErrorClass::Rank, format!("invalid rank {rank}")))
}

export! {
    /// `MPIX_Rail_count`: how many rails reach rank `rank` of `comm`.
    fn MPIX_Rail_count / PMPIX_Rail_count(comm: abi::Comm, rank: c_int, count: *mut c_int) {
        let c = state()?.comm(comm)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(count, "count") }.on(&c)?;
        let all = rails::of(&c.comm, rank_arg(rank).on(&c)?).on(&c)?;
        *out = all.len() as c_int;
        Ok(())
    }

    /// `MPIX_Rail_get_info`: rail `index` (0: lowest latency) to rank `rank` of `comm`: its
    /// name (at most `MPIX_MAX_RAIL_NAME` bytes with the NUL), its state (`MPIX_RAIL_IN_USE`,
    /// `MPIX_RAIL_STANDBY`: up but a fallback while another rail is up, `MPIX_RAIL_DOWN`) and the
    /// bytes its driver sent (to every peer).
    fn MPIX_Rail_get_info / PMPIX_Rail_get_info(
        comm: abi::Comm,
        rank: c_int,
        index: c_int,
        name: *mut c_char,
        resultlen: *mut c_int,
        status: *mut c_int,
        bytes_sent: *mut abi::Count,
    ) {
        let c = state()?.comm(comm)?;
        let all = rails::of(&c.comm, rank_arg(rank).on(&c)?).on(&c)?;
        let r = usize::try_from(index).ok().and_then(|i| all.get(i)).ok_or_else(|| {
            Error::arg(format!("invalid rail index {index} ({} rails)", all.len()))
        }).on(&c)?;
        // SAFETY: output arguments; `name` has MPIX_MAX_RAIL_NAME bytes (this call's contract).
        let (st, sent) = unsafe { (check::out(status, "state")?, check::out(bytes_sent, "bytes_sent")?) };
        // SAFETY: as above.
        unsafe { write_string(&r.name, name, MPIX_MAX_RAIL_NAME, resultlen, "name") }.on(&c)?;
        *st = match (r.up, r.in_use) {
            (false, _) => MPIX_RAIL_DOWN,
            (true, true) => MPIX_RAIL_IN_USE,
            (true, false) => MPIX_RAIL_STANDBY,
        };
        *sent = abi::Count::try_from(r.bytes_sent).unwrap_or(abi::Count::MAX);
        Ok(())
    }

    /// `MPIX_Rail_transitions`: rails found failed, and failed rails re-admitted, since
    /// `MPI_Init` (over every peer of this process).
    fn MPIX_Rail_transitions / PMPIX_Rail_transitions(failed: *mut c_int, readmitted: *mut c_int) {
        let st = state()?;
        // SAFETY: output arguments.
        let (f, r) = unsafe { (check::out(failed, "failed")?, check::out(readmitted, "readmitted")?) };
        let (down, up) = rails::transitions(&st.comm(abi::MPI_COMM_WORLD)?.comm);
        *f = c_int::try_from(down).unwrap_or(c_int::MAX);
        *r = c_int::try_from(up).unwrap_or(c_int::MAX);
        Ok(())
    }
}
