//! Sessions (MPI 4.0 ch. 11): `MPI_Session_init`, `MPI_Session_finalize`,
//! `MPI_Session_get_num_psets`, `MPI_Session_get_nth_pset`, `MPI_Session_get_pset_info`,
//! `MPI_Session_get_info`, `MPI_Session_create_errhandler` / `set_errhandler` /
//! `get_errhandler` / `call_errhandler`, `MPI_Group_from_session_pset`, and
//! `MPI_Comm_create_from_group`.
//!
//! Errors of a call on a valid session go to the session's handler (the one given to
//! `MPI_Session_init`), others to `MPI_COMM_WORLD`'s, as MPICH 4.0 does. A session error
//! handler has the C type of a communicator's (both receive an `int` handle), so both come from
//! one table: MPICH refuses to attach a handler of the other kind, we do not (documented).
//! `MPI_Comm_create_from_group` takes the group's runtime from the process (the group of a
//! session pset or of a communicator), the errhandler for the new communicator.

use super::write_string;
use crate::check;
use crate::comms::CommObj;
use crate::errhandlers::{self, CommErrhandlerFn};
use crate::errors::call_handler_of;
use crate::export::export;
use crate::infos;
use crate::sessions::{self, OnSession};
use crate::state::{self, state};
use madmpi::abi::{self, MPI_SESSION_NULL};
use madmpi::error::Error;
use madmpi::info::Info;
use madmpi::session::{self as msession, PSETS, Session};
use std::ffi::{c_char, c_int};

/// Longest pset name or string tag read (MPI_MAX_PSET_NAME_LEN and MPI_MAX_STRINGTAG_LEN are
/// 256 in MPICH; longer strings are refused rather than cut).
const MAX_NAME: usize = 256;

/// A string argument: `MPI_ERR_ARG` if null, not NUL-terminated within [`MAX_NAME`] bytes or
/// not UTF-8.
///
/// # Safety
/// `p`, if not null, points to a C string or to at least `MAX_NAME + 1` readable bytes.
unsafe fn name_arg<'a>(p: *const c_char, what: &str) -> Result<&'a str, Error> {
    // SAFETY: the caller's contract.
    match unsafe { check::c_string(p, MAX_NAME) } {
        None => Err(Error::arg(format!("{what} is a null pointer"))),
        Some(Err(())) => Err(Error::arg(format!("{what} is longer than {MAX_NAME} bytes"))),
        Some(Ok(b)) => std::str::from_utf8(b).map_err(|_| Error::arg(format!("{what} is not UTF-8"))),
    }
}

/// The info argument of `MPI_Session_init` (`MPI_INFO_NULL`: none).
fn init_info(h: abi::Info) -> Result<Option<Info>, Error> {
    match h {
        abi::MPI_INFO_NULL => Ok(None),
        _ => infos::read(h, Info::clone).map(Some),
    }
}

/// The info argument of the pset queries: ignored (MPI reserves it for pset selection hints),
/// but it must be `MPI_INFO_NULL` or an info object, as MPICH checks.
fn hint_info(h: abi::Info) -> Result<(), Error> {
    init_info(h).map(drop)
}

export! {
    /// `MPI_Session_init`: a session; starts the runtime if neither MPI_Init nor another
    /// session did (thread level from the info key `thread_level`).
    fn MPI_Session_init / PMPI_Session_init(info: abi::Info, errhandler: abi::Errhandler, session: *mut abi::Handle) {
        pm2_log::init();
        // SAFETY: an output argument.
        let out = unsafe { check::out(session, "session") }?;
        *out = MPI_SESSION_NULL;
        errhandlers::kind(errhandler)?;
        let info = init_info(info)?;
        let s = Session::init(info.as_ref())?;
        let (world, self_comm) = s.predefined_comms()?;
        state::open_session(world, self_comm, s.threading());
        match sessions::add(s, errhandler) {
            Ok(h) => {
                *out = h;
                Ok(())
            }
            Err(e) => {
                state::close_session();
                Err(e.into())
            }
        }
    }

    /// `MPI_Session_finalize`: ends the session (the last finalization in the process ends
    /// the runtime, collectively over the job); the handle becomes `MPI_SESSION_NULL`.
    fn MPI_Session_finalize / PMPI_Session_finalize(session: *mut abi::Handle) {
        // SAFETY: an in-out argument.
        let h = unsafe { check::out(session, "session") }?;
        let obj = sessions::get(*h)?;
        let s = obj.take().ok_or_else(|| Error::session("the session was finalized")).on_session(&obj)?;
        sessions::remove(*h);
        *h = MPI_SESSION_NULL;
        state::close_session();
        s.finalize().on_session(&obj)
    }

    /// `MPI_Session_get_num_psets`.
    fn MPI_Session_get_num_psets / PMPI_Session_get_num_psets(session: abi::Handle, info: abi::Info, npset_names: *mut c_int) {
        let obj = sessions::get(session)?;
        obj.session().map(drop).on_session(&obj)?;
        hint_info(info).on_session(&obj)?;
        // SAFETY: an output argument.
        *unsafe { check::out(npset_names, "npset_names") }.on_session(&obj)? = PSETS.len() as c_int;
        Ok(())
    }

    /// `MPI_Session_get_nth_pset`: with `*pset_len` 0, the length of the name with its NUL;
    /// otherwise the name, cut to `*pset_len - 1` bytes and a NUL.
    fn MPI_Session_get_nth_pset / PMPI_Session_get_nth_pset(
        session: abi::Handle,
        info: abi::Info,
        n: c_int,
        pset_len: *mut c_int,
        pset_name: *mut c_char,
    ) {
        let obj = sessions::get(session)?;
        obj.session().map(drop).on_session(&obj)?;
        hint_info(info).on_session(&obj)?;
        let name = usize::try_from(n)
            .ok()
            .and_then(|i| PSETS.get(i))
            .ok_or_else(|| Error::arg(format!("no pset number {n} (there are {})", PSETS.len())))
            .on_session(&obj)?;
        // SAFETY: an in-out argument.
        let len = unsafe { check::out(pset_len, "pset_len") }.on_session(&obj)?;
        if *len == 0 {
            *len = name.len() as c_int + 1;
            return Ok(());
        }
        let mut written: c_int = 0;
        // SAFETY: the caller gives `*len` bytes at `pset_name`; `written` is a local.
        unsafe { write_string(name, pset_name, *len, &mut written, "pset_name") }.on_session(&obj)
    }

    /// `MPI_Session_get_pset_info`: `mpi_size`, in a new info object.
    fn MPI_Session_get_pset_info / PMPI_Session_get_pset_info(session: abi::Handle, pset_name: *const c_char, info: *mut abi::Info) {
        let obj = sessions::get(session)?;
        // SAFETY: a string argument.
        let name = unsafe { name_arg(pset_name, "pset_name") }.on_session(&obj)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(info, "info") }.on_session(&obj)?;
        let i = obj.session().on_session(&obj)?.as_ref().expect("checked").pset_info(name).on_session(&obj)?;
        *out = infos::add(i).on_session(&obj)?;
        Ok(())
    }

    /// `MPI_Session_get_info`: `thread_level`, in a new info object.
    fn MPI_Session_get_info / PMPI_Session_get_info(session: abi::Handle, info_used: *mut abi::Info) {
        let obj = sessions::get(session)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(info_used, "info_used") }.on_session(&obj)?;
        let i = obj.session().on_session(&obj)?.as_ref().expect("checked").info();
        *out = infos::add(i).on_session(&obj)?;
        Ok(())
    }

    /// `MPI_Group_from_session_pset`: the group of a pset (`MPI_ERR_ARG` for an unknown name).
    fn MPI_Group_from_session_pset / PMPI_Group_from_session_pset(session: abi::Handle, pset_name: *const c_char, newgroup: *mut abi::Group) {
        let obj = sessions::get(session)?;
        // SAFETY: a string argument.
        let name = unsafe { name_arg(pset_name, "pset_name") }.on_session(&obj)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(newgroup, "newgroup") }.on_session(&obj)?;
        let g = obj.session().on_session(&obj)?.as_ref().expect("checked").pset_group(name).on_session(&obj)?;
        *out = state().on_session(&obj)?.add_group(g).on_session(&obj)?;
        Ok(())
    }

    /// `MPI_Comm_create_from_group`: a communicator over `group`, collective over its members
    /// only, with `errhandler`; `stringtag` tells apart creations that run at once.
    fn MPI_Comm_create_from_group / PMPI_Comm_create_from_group(
        group: abi::Group,
        stringtag: *const c_char,
        info: abi::Info,
        errhandler: abi::Errhandler,
        newcomm: *mut abi::Comm,
    ) {
        let st = state()?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(newcomm, "newcomm") }?;
        *out = abi::MPI_COMM_NULL;
        let g = st.group(group)?;
        // SAFETY: a string argument.
        let tag = unsafe { name_arg(stringtag, "stringtag") }?;
        let hints = infos::hints(info)?;
        errhandlers::kind(errhandler)?;
        let me = st.world.comm.rank();
        if !g.contains(me) {
            return Err(Error::group(format!("this process (rank {me}) is not in the group")).into());
        }
        let comm = msession::comm_from_group(&g, tag)?;
        comm.set_info(&hints);
        let obj = CommObj::child(comm, &st.self_comm);
        obj.errhandler.set(errhandler)?;
        *out = st.add_comm(obj)?.0;
        Ok(())
    }

    /// `MPI_Session_create_errhandler`: a handler called as `function(&session, &code)`.
    fn MPI_Session_create_errhandler / PMPI_Session_create_errhandler(
        function: Option<CommErrhandlerFn>,
        errhandler: *mut abi::Errhandler,
    ) {
        let function = function.ok_or_else(|| Error::arg("the error handler function is a null pointer"))?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(errhandler, "errhandler") }?;
        *out = errhandlers::create(function)?;
        Ok(())
    }

    /// `MPI_Session_set_errhandler`.
    fn MPI_Session_set_errhandler / PMPI_Session_set_errhandler(session: abi::Handle, errhandler: abi::Errhandler) {
        let obj = sessions::get(session)?;
        obj.errhandler.set(errhandler).on_session(&obj)
    }

    /// `MPI_Session_get_errhandler`: a handle to free with `MPI_Errhandler_free`.
    fn MPI_Session_get_errhandler / PMPI_Session_get_errhandler(session: abi::Handle, errhandler: *mut abi::Errhandler) {
        let obj = sessions::get(session)?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(errhandler, "errhandler") }.on_session(&obj)?;
        *out = obj.errhandler.get_retained().on_session(&obj)?;
        Ok(())
    }

    /// `MPI_Session_call_errhandler`: the session's handler runs on `errorcode`.
    fn MPI_Session_call_errhandler / PMPI_Session_call_errhandler(session: abi::Handle, errorcode: c_int) {
        let obj = sessions::get(session)?;
        call_handler_of(&*obj, "MPI_Session_call_errhandler", errorcode);
        Ok(())
    }
}
