//! Dynamic processes (MPI 4.0 ch. 11) between processes of one job: `MPI_Open_port`,
//! `MPI_Close_port`, `MPI_Comm_accept`, `MPI_Comm_connect`, `MPI_Publish_name`,
//! `MPI_Lookup_name`, `MPI_Unpublish_name`, `MPI_Comm_join`, `MPI_Comm_disconnect`,
//! `MPI_Comm_get_parent` (the semantics are `madmpi::dynamic`'s).
//!
//! Strings are read up to `MPI_MAX_PORT_NAME` bytes (port names) or `MPI_MAX_INFO_VAL` (service
//! names): a longer one is `MPI_ERR_ARG`, never a read past the program's buffer beyond them.
//! The port name of accept and connect is read at the root only (significant there only).

use crate::check;
use crate::errors::{Fail, On};
use crate::export::export;
use crate::state::state;
use madmpi::abi;
use madmpi::dynamic;
use madmpi::error::Error;
use std::ffi::{c_char, c_int};

/// The C string at `p`, of fewer than `max` bytes.
///
/// # Safety
/// `p`, if not null, must point to a NUL-terminated string or to at least `max` readable bytes.
unsafe fn c_str(p: *const c_char, max: usize, what: &str) -> Result<String, Error> {
    if p.is_null() {
        return Err(Error::arg(format!("the {what} is a null pointer")));
    }
    // SAFETY: strnlen reads at most `max` bytes, within the caller's contract.
    let n = unsafe { libc::strnlen(p, max) };
    if n == max {
        return Err(Error::arg(format!("the {what} is not terminated within {max} bytes")));
    }
    // SAFETY: `n` bytes at `p` were just read by strnlen.
    let bytes = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), n) };
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

/// Writes `s` and its NUL into `buf` of `MPI_MAX_PORT_NAME` bytes.
///
/// # Safety
/// `buf`, if not null, must be valid for `MPI_MAX_PORT_NAME` bytes of writes.
unsafe fn write_port(s: &str, buf: *mut c_char) -> Result<(), Error> {
    if buf.is_null() {
        return Err(Error::arg("the port name buffer is a null pointer"));
    }
    if s.len() >= dynamic::PORT_NAME_MAX {
        return Err(Error::intern(format!("a port name of {} bytes", s.len())));
    }
    // SAFETY: `s.len() + 1 <= MPI_MAX_PORT_NAME` bytes into the caller's buffer, from a distinct
    // Rust string.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), buf.cast::<u8>(), s.len());
        *buf.add(s.len()) = 0;
    }
    Ok(())
}

const SERVICE_MAX: usize = abi::MPI_MAX_INFO_VAL as usize;

/// `MPI_Comm_accept` and `MPI_Comm_connect`.
///
/// # Safety
/// `port_name` as for [`c_str`] at the root; `newcomm` as for [`check::out`].
unsafe fn meet(
    accept: bool,
    port_name: *const c_char,
    info: abi::Info,
    root: c_int,
    comm: abi::Comm,
    newcomm: *mut abi::Comm,
) -> Result<(), Fail> {
    let st = state()?;
    let c = st.comm(comm)?;
    // SAFETY: an output argument.
    let out = unsafe { check::out(newcomm, "newcomm") }.on(&c)?;
    *out = abi::MPI_COMM_NULL;
    crate::infos::hints(info).on(&c)?;
    let root = u32::try_from(root).map_err(|_| Error::root(format!("invalid root {root}"))).on(&c)?;
    let name = if c.comm.rank() == root {
        // SAFETY: the caller's contract.
        Some(unsafe { c_str(port_name, dynamic::PORT_NAME_MAX, "port name") }.on(&c)?)
    } else {
        None
    };
    let new = if accept {
        dynamic::accept(name.as_deref(), root, &c.comm)
    } else {
        dynamic::connect(name.as_deref(), root, &c.comm)
    }
    .on(&c)?;
    super::comm_create::publish(&st, &c, Some(new), out)
}

export! {
    /// `MPI_Open_port`: a port of this process (no info key is used).
    fn MPI_Open_port / PMPI_Open_port(info: abi::Info, port_name: *mut c_char) {
        let st = state()?;
        crate::infos::hints(info)?;
        let name = dynamic::open_port(&st.world.comm)?;
        // SAFETY: MPI_Open_port's buffer holds MPI_MAX_PORT_NAME bytes.
        unsafe { write_port(&name, port_name) }?;
        Ok(())
    }

    /// `MPI_Close_port`: `MPI_ERR_PORT` unless this process has the port open.
    fn MPI_Close_port / PMPI_Close_port(port_name: *const c_char) {
        state()?;
        // SAFETY: a NUL-terminated port name, read up to MPI_MAX_PORT_NAME bytes.
        let name = unsafe { c_str(port_name, dynamic::PORT_NAME_MAX, "port name") }?;
        dynamic::close_port(&name)?;
        Ok(())
    }

    /// `MPI_Comm_accept`: collective over `comm`; the root must have opened the port.
    fn MPI_Comm_accept / PMPI_Comm_accept(
        port_name: *const c_char,
        info: abi::Info,
        root: c_int,
        comm: abi::Comm,
        newcomm: *mut abi::Comm,
    ) {
        // SAFETY: the port name is read at the root (a C string there), `newcomm` is an output.
        unsafe { meet(true, port_name, info, root, comm, newcomm) }
    }

    /// `MPI_Comm_connect`: collective over `comm`; waits until the port's process accepts.
    fn MPI_Comm_connect / PMPI_Comm_connect(
        port_name: *const c_char,
        info: abi::Info,
        root: c_int,
        comm: abi::Comm,
        newcomm: *mut abi::Comm,
    ) {
        // SAFETY: the port name is read at the root (a C string there), `newcomm` is an output.
        unsafe { meet(false, port_name, info, root, comm, newcomm) }
    }

    /// `MPI_Publish_name`: through the launcher's name service (madrun, Hydra).
    fn MPI_Publish_name / PMPI_Publish_name(service_name: *const c_char, info: abi::Info, port_name: *const c_char) {
        let st = state()?;
        // SAFETY: NUL-terminated strings, read up to their limits.
        let service = unsafe { c_str(service_name, SERVICE_MAX, "service name") }?;
        crate::infos::hints(info)?;
        // SAFETY: as above.
        let port = unsafe { c_str(port_name, dynamic::PORT_NAME_MAX, "port name") }?;
        dynamic::publish_name(&st.world.comm, &service, &port)?;
        Ok(())
    }

    /// `MPI_Lookup_name`: `MPI_ERR_NAME` if nothing is published under the name.
    fn MPI_Lookup_name / PMPI_Lookup_name(service_name: *const c_char, info: abi::Info, port_name: *mut c_char) {
        let st = state()?;
        // SAFETY: a NUL-terminated string, read up to its limit.
        let service = unsafe { c_str(service_name, SERVICE_MAX, "service name") }?;
        crate::infos::hints(info)?;
        if port_name.is_null() {
            return Err(Error::arg("the port name buffer is a null pointer").into());
        }
        let port = dynamic::lookup_name(&st.world.comm, &service)?;
        if port.len() >= dynamic::PORT_NAME_MAX {
            return Err(Error::name(format!("the port published under {service:?} is too long")).into());
        }
        // SAFETY: MPI_Lookup_name's buffer holds MPI_MAX_PORT_NAME bytes.
        unsafe { write_port(&port, port_name) }?;
        Ok(())
    }

    /// `MPI_Unpublish_name`: `MPI_ERR_SERVICE` if the name is not published.
    fn MPI_Unpublish_name / PMPI_Unpublish_name(service_name: *const c_char, info: abi::Info, port_name: *const c_char) {
        let st = state()?;
        // SAFETY: NUL-terminated strings, read up to their limits.
        let service = unsafe { c_str(service_name, SERVICE_MAX, "service name") }?;
        crate::infos::hints(info)?;
        // SAFETY: as above (the port is checked, not used: the name alone identifies the entry).
        unsafe { c_str(port_name, dynamic::PORT_NAME_MAX, "port name") }?;
        dynamic::unpublish_name(&st.world.comm, &service)?;
        Ok(())
    }

    /// `MPI_Comm_join`: over a connected stream socket to a process of this job.
    fn MPI_Comm_join / PMPI_Comm_join(fd: c_int, intercomm: *mut abi::Comm) {
        let st = state()?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(intercomm, "intercomm") }?;
        *out = abi::MPI_COMM_NULL;
        if fd < 0 {
            return Err(Error::arg(format!("invalid socket descriptor {fd}")).into());
        }
        let new = dynamic::join(&st.self_comm.comm, fd)?;
        super::comm_create::publish(&st, &st.self_comm, Some(new), out)
    }

    /// `MPI_Comm_disconnect`: collective; then frees the communicator as `MPI_Comm_free` does.
    fn MPI_Comm_disconnect / PMPI_Comm_disconnect(comm: *mut abi::Comm) {
        let st = state()?;
        // SAFETY: an in-out argument.
        let h = unsafe { check::out(comm, "comm") }?;
        let c = st.comm(*h)?;
        if matches!(*h, abi::MPI_COMM_WORLD | abi::MPI_COMM_SELF) {
            return Err(Error::comm(format!("{} cannot be disconnected", c.comm.name()))).on(&c);
        }
        dynamic::disconnect(&c.comm).on(&c)?;
        c.attrs.with(|t| t.delete_all(h)).and_then(|r| r).on(&c)?;
        st.remove_comm(*h);
        *h = abi::MPI_COMM_NULL;
        Ok(())
    }

    /// `MPI_Comm_get_parent`: `MPI_COMM_NULL` (no process of this library was spawned by
    /// `MPI_Comm_spawn`).
    fn MPI_Comm_get_parent / PMPI_Comm_get_parent(parent: *mut abi::Comm) {
        state()?;
        // SAFETY: an output argument.
        *unsafe { check::out(parent, "parent") }? = abi::MPI_COMM_NULL;
        Ok(())
    }
}
