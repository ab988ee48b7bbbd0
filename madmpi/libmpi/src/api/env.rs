//! The environment: `MPI_Init`, `MPI_Init_thread`, `MPI_Finalize`, `MPI_Initialized`,
//! `MPI_Finalized`, `MPI_Query_thread`, `MPI_Is_thread_main`, `MPI_Abort`, `MPI_Get_version`,
//! `MPI_Get_library_version`, `MPI_Get_processor_name`, `MPI_Wtime`, `MPI_Wtick`.
//!
//! `MPI_Initialized`, `MPI_Finalized`, the two version calls and the timers work at any time;
//! the others need MPI running.

use super::write_string;
use crate::check;
use crate::errors::{On, end_job};
use crate::export::export;
use crate::state::{self, state};
use madmpi::abi;
use madmpi::env::universe::{self, Threading};
use madmpi::error::Error;
use std::ffi::{c_char, c_int};
use std::io::Write;

/// What `MPI_Get_library_version` reports: programs print it to tell which MPI they run on.
pub const LIBRARY_VERSION: &str = concat!(
    "MadMPI ",
    env!("CARGO_PKG_VERSION"),
    " (pm2-rs: madmpi over nmad and pioman; MPICH 4.0 ABI, MPI 4.0)"
);

fn threading_of(level: c_int) -> Result<Threading, Error> {
    Ok(match level {
        abi::MPI_THREAD_SINGLE => Threading::Single,
        abi::MPI_THREAD_FUNNELED => Threading::Funneled,
        abi::MPI_THREAD_SERIALIZED => Threading::Serialized,
        abi::MPI_THREAD_MULTIPLE => Threading::Multiple,
        _ => return Err(Error::arg(format!("invalid thread level {level}"))),
    })
}

fn level_of(t: Threading) -> c_int {
    match t {
        Threading::Single => abi::MPI_THREAD_SINGLE,
        Threading::Funneled => abi::MPI_THREAD_FUNNELED,
        Threading::Serialized => abi::MPI_THREAD_SERIALIZED,
        Threading::Multiple => abi::MPI_THREAD_MULTIPLE,
    }
}

/// Writes a C boolean.
///
/// # Safety
/// As [`check::out`].
unsafe fn write_flag(flag: *mut c_int, value: bool) -> Result<(), Error> {
    // SAFETY: the caller's contract.
    *unsafe { check::out(flag, "flag") }? = c_int::from(value);
    Ok(())
}

export! {
    /// `MPI_Init`: starts MPI at `MPI_THREAD_SINGLE` (the arguments are not used).
    fn MPI_Init / PMPI_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) {
        pm2_log::init();
        state::init(Threading::Single)?;
        Ok(())
    }

    /// `MPI_Init_thread`: starts MPI; every level is provided as required.
    fn MPI_Init_thread / PMPI_Init_thread(
        _argc: *mut c_int,
        _argv: *mut *mut *mut c_char,
        required: c_int,
        provided: *mut c_int,
    ) {
        pm2_log::init();
        let level = threading_of(required)?;
        // SAFETY: an output argument (MPI's contract).
        let provided = unsafe { check::out(provided, "provided") }?;
        *provided = level_of(state::init(level)?);
        Ok(())
    }

    /// `MPI_Finalize` (collective over the world).
    fn MPI_Finalize / PMPI_Finalize() {
        let st = state()?;
        let world = st.world.clone();
        state::finalize(st).on(&world)
    }

    /// `MPI_Initialized`: whether `MPI_Init` was called (true after `MPI_Finalize` too).
    fn MPI_Initialized / PMPI_Initialized(flag: *mut c_int) {
        // SAFETY: an output argument.
        unsafe { write_flag(flag, universe::initialized()) }?;
        Ok(())
    }

    /// `MPI_Finalized`.
    fn MPI_Finalized / PMPI_Finalized(flag: *mut c_int) {
        // SAFETY: an output argument.
        unsafe { write_flag(flag, universe::finalized()) }?;
        Ok(())
    }

    /// `MPI_Query_thread`: the level provided at initialization.
    fn MPI_Query_thread / PMPI_Query_thread(provided: *mut c_int) {
        let st = state()?;
        // SAFETY: an output argument.
        *unsafe { check::out(provided, "provided") }? = level_of(st.threading);
        Ok(())
    }

    /// `MPI_Is_thread_main`: whether the caller is the thread that initialized MPI.
    fn MPI_Is_thread_main / PMPI_Is_thread_main(flag: *mut c_int) {
        let st = state()?;
        // SAFETY: an output argument.
        unsafe { write_flag(flag, std::thread::current().id() == st.main_thread) }?;
        Ok(())
    }

    /// `MPI_Abort`: ends the whole job with `errorcode` as the launcher's exit status (madrun,
    /// Hydra, Slurm through PMI abort). Never returns.
    fn MPI_Abort / PMPI_Abort(comm: abi::Comm, errorcode: c_int) {
        let who = match state() {
            Ok(st) => {
                let name = st.comm(comm).map(|c| c.comm.name()).unwrap_or_else(|_| format!("{comm:#x}"));
                format!("MPI_Abort({name}, {errorcode}) called by rank {}", st.world.comm.rank())
            }
            Err(_) => format!("MPI_Abort({comm:#x}, {errorcode}) called outside MPI_Init..MPI_Finalize"),
        };
        let _ = writeln!(std::io::stderr(), "{who}: ending the job");
        end_job(errorcode, &who)
    }

    /// `MPI_Get_version`: the standard version implemented (4.0, as MPICH 4.0.2 reports).
    fn MPI_Get_version / PMPI_Get_version(version: *mut c_int, subversion: *mut c_int) {
        // SAFETY: output arguments.
        let (v, s) = unsafe { (check::out(version, "version")?, check::out(subversion, "subversion")?) };
        (*v, *s) = (abi::MPI_VERSION, abi::MPI_SUBVERSION);
        Ok(())
    }

    /// `MPI_Get_library_version`: [`LIBRARY_VERSION`].
    fn MPI_Get_library_version / PMPI_Get_library_version(version: *mut c_char, resultlen: *mut c_int) {
        // SAFETY: `version` has MPI_MAX_LIBRARY_VERSION_STRING bytes (MPI's contract).
        unsafe { write_string(LIBRARY_VERSION, version, abi::MPI_MAX_LIBRARY_VERSION_STRING, resultlen, "version") }?;
        Ok(())
    }

    /// `MPI_Get_processor_name`: the host name.
    fn MPI_Get_processor_name / PMPI_Get_processor_name(name: *mut c_char, resultlen: *mut c_int) {
        state()?;
        let host = universe::processor_name();
        // SAFETY: `name` has MPI_MAX_PROCESSOR_NAME bytes (MPI's contract).
        unsafe { write_string(&host, name, abi::MPI_MAX_PROCESSOR_NAME, resultlen, "name") }?;
        Ok(())
    }
}

/// `MPI_Wtime`: seconds since an origin fixed at the first call (not synchronized between
/// processes). Works at any time.
#[unsafe(no_mangle)]
pub extern "C" fn PMPI_Wtime() -> f64 {
    std::panic::catch_unwind(universe::wtime).unwrap_or(0.0)
}

/// The profiling entry point of [`PMPI_Wtime`].
#[unsafe(no_mangle)]
pub extern "C" fn MPI_Wtime() -> f64 {
    PMPI_Wtime()
}

/// `MPI_Wtick`: the resolution of `MPI_Wtime` in seconds.
#[unsafe(no_mangle)]
pub extern "C" fn PMPI_Wtick() -> f64 {
    universe::wtick()
}

/// The profiling entry point of [`PMPI_Wtick`].
#[unsafe(no_mangle)]
pub extern "C" fn MPI_Wtick() -> f64 {
    PMPI_Wtick()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_levels_round_trip() {
        for level in 0..4 {
            assert_eq!(level_of(threading_of(level).unwrap()), level);
        }
        assert!(threading_of(4).is_err() && threading_of(-1).is_err());
    }
}
