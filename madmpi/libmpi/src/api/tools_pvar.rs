//! Performance variables, C side: `MPI_T_pvar_get_num`, `_get_info`, `_get_index`, sessions,
//! handles and `start`/`stop`/`read`/`readreset`/`reset`/`write`, and the object
//! `MPI_T_PVAR_ALL_HANDLES`. A handle of a variable bound to a communicator takes a pointer to
//! an `MPI_Comm` (MPI must be running); handles, sessions and semantics are
//! `madmpi::tools::pvars`'.

use super::tools::{
    CHandle, get_bytes, index, initialized, name_arg, out, put, put_bytes, put_string, to_handle, to_id,
};
use crate::export::export;
use madmpi::abi;
use madmpi::tools::kinds::{Bind, Class, Value};
use madmpi::tools::pvars::{Bound, sessions};
use madmpi::tools::{TError, TResult, registry};
use std::ffi::{c_char, c_int, c_void};

/// `MPI_T_PVAR_ALL_HANDLES`: an object in the data section, as MPICH exports it (a pointer
/// `const` to C, 8 bytes), holding the id that stands for every handle of a session.
#[unsafe(no_mangle)]
#[used]
pub static mut MPI_T_PVAR_ALL_HANDLES: usize = sessions::ALL_HANDLES as usize;

/// The object a new handle of variable `pvar` is bound to, from `obj_handle`.
///
/// # Safety
/// `obj_handle`, for a variable bound to a communicator, must point to an `MPI_Comm`.
unsafe fn bound(pvar: usize, obj_handle: *mut c_void) -> TResult<Bound> {
    match registry().pvars[pvar].bind {
        Bind::NoObject => Ok(Bound::Nothing),
        Bind::Comm => {
            // SAFETY: an MPI_Comm of the caller (MPI's contract for this binding).
            let h = *unsafe { out(obj_handle.cast::<abi::Comm>()) }?;
            let st = crate::state::state().map_err(|_| TError::Invalid)?;
            let obj = st.comm(h).map_err(|_| TError::InvalidHandle)?;
            Ok(Bound::Comm(obj.comm.clone()))
        }
    }
}

/// Writes a handle's value in the variable's type.
///
/// # Safety
/// `buf`, if not null, must hold one element of the variable's type.
unsafe fn put_value(s: CHandle, h: CHandle, v: Value, buf: *mut c_void) -> TResult<()> {
    let ty = registry().pvars[sessions::handle_pvar(to_id(s), to_id(h))?].ty;
    // SAFETY: the caller's contract.
    unsafe { put_bytes(buf, &v.encode(ty, 1)) }
}

export! { tools:
    fn MPI_T_pvar_get_num / PMPI_T_pvar_get_num(num_pvar: *mut c_int) {
        initialized()?;
        // SAFETY: an int the caller owns.
        *unsafe { out(num_pvar) }? = registry().pvars.len() as c_int;
        Ok(())
    }

    fn MPI_T_pvar_get_info / PMPI_T_pvar_get_info(
        pvar_index: c_int, name: *mut c_char, name_len: *mut c_int, verbosity: *mut c_int,
        var_class: *mut c_int, datatype: *mut c_int, enumtype: *mut CHandle, desc: *mut c_char,
        desc_len: *mut c_int, bind: *mut c_int, readonly: *mut c_int, continuous: *mut c_int,
        atomic: *mut c_int
    ) {
        initialized()?;
        let r = registry();
        let v = &r.pvars[index(pvar_index, r.pvars.len())?];
        // SAFETY: optional outputs of the caller (MPI's contract): each written only if not null.
        unsafe {
            put_string(&v.name, name, name_len)?;
            put(verbosity, v.verbosity.code())?;
            put(var_class, v.class.code())?;
            put(datatype, v.ty.handle())?;
            put(enumtype, super::tools::enum_handle(v.enumtype))?;
            put_string(&v.desc, desc, desc_len)?;
            put(bind, v.bind.code())?;
            put(readonly, c_int::from(v.readonly()))?;
            put(continuous, c_int::from(v.continuous()))?;
            put(atomic, c_int::from(v.atomic()))
        }
    }

    fn MPI_T_pvar_get_index / PMPI_T_pvar_get_index(
        name: *const c_char, var_class: c_int, pvar_index: *mut c_int
    ) {
        initialized()?;
        // SAFETY: a C string and an int of the caller (MPI's contract).
        let (name, idx) = unsafe { (name_arg(name)?, out(pvar_index)?) };
        let class = Class::from_code(var_class).ok_or(TError::InvalidName)?;
        *idx = registry().pvar_index(name, class).ok_or(TError::InvalidName)? as c_int;
        Ok(())
    }

    fn MPI_T_pvar_session_create / PMPI_T_pvar_session_create(session: *mut CHandle) {
        initialized()?;
        // SAFETY: the caller's session variable.
        let session = unsafe { out(session) }?;
        *session = to_handle(sessions::session_create()?);
        Ok(())
    }

    fn MPI_T_pvar_session_free / PMPI_T_pvar_session_free(session: *mut CHandle) {
        initialized()?;
        // SAFETY: the caller's session variable.
        let session = unsafe { out(session) }?;
        sessions::session_free(to_id(*session))?;
        *session = std::ptr::null_mut();
        Ok(())
    }

    fn MPI_T_pvar_handle_alloc / PMPI_T_pvar_handle_alloc(
        session: CHandle, pvar_index: c_int, obj_handle: *mut c_void, handle: *mut CHandle,
        count: *mut c_int
    ) {
        initialized()?;
        let i = index(pvar_index, registry().pvars.len())?;
        // SAFETY: the object and outputs of the caller (MPI's contract), each checked.
        let (b, handle, count) = unsafe { (bound(i, obj_handle)?, out(handle)?, out(count)?) };
        let (id, n) = sessions::handle_alloc(to_id(session), i, b)?;
        *handle = to_handle(id);
        *count = n as c_int;
        Ok(())
    }

    fn MPI_T_pvar_handle_free / PMPI_T_pvar_handle_free(session: CHandle, handle: *mut CHandle) {
        initialized()?;
        // SAFETY: the caller's handle variable.
        let handle = unsafe { out(handle) }?;
        sessions::handle_free(to_id(session), to_id(*handle))?;
        *handle = std::ptr::null_mut();
        Ok(())
    }

    fn MPI_T_pvar_start / PMPI_T_pvar_start(session: CHandle, handle: CHandle) {
        initialized()?;
        sessions::start(to_id(session), to_id(handle))
    }

    fn MPI_T_pvar_stop / PMPI_T_pvar_stop(session: CHandle, handle: CHandle) {
        initialized()?;
        sessions::stop(to_id(session), to_id(handle))
    }

    fn MPI_T_pvar_reset / PMPI_T_pvar_reset(session: CHandle, handle: CHandle) {
        initialized()?;
        sessions::reset(to_id(session), to_id(handle))
    }

    fn MPI_T_pvar_read / PMPI_T_pvar_read(session: CHandle, handle: CHandle, buf: *mut c_void) {
        initialized()?;
        let v = sessions::read(to_id(session), to_id(handle))?;
        // SAFETY: `buf` holds one element of the variable's type (MPI's contract).
        unsafe { put_value(session, handle, v, buf) }
    }

    fn MPI_T_pvar_readreset / PMPI_T_pvar_readreset(session: CHandle, handle: CHandle, buf: *mut c_void) {
        initialized()?;
        if buf.is_null() {
            return Err(TError::Arg);
        }
        let v = sessions::readreset(to_id(session), to_id(handle))?;
        // SAFETY: `buf` holds one element of the variable's type (MPI's contract).
        unsafe { put_value(session, handle, v, buf) }
    }

    fn MPI_T_pvar_write / PMPI_T_pvar_write(session: CHandle, handle: CHandle, buf: *const c_void) {
        initialized()?;
        let ty = registry().pvars[sessions::handle_pvar(to_id(session), to_id(handle))?].ty;
        // SAFETY: `buf` holds one element of the variable's type (MPI's contract).
        let v = Value::decode(ty, unsafe { get_bytes(buf, ty.size()) }?)?;
        sessions::write(to_id(session), to_id(handle), v)
    }
}
