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

    /// `MPI_Comm_get_parent`: in a job started by `MPI_Comm_spawn`, the intercommunicator to
    /// the parents (the same handle each time, until the program frees it); `MPI_COMM_NULL`
    /// otherwise.
    fn MPI_Comm_get_parent / PMPI_Comm_get_parent(parent: *mut abi::Comm) {
        let st = state()?;
        // SAFETY: an output argument.
        let out = unsafe { check::out(parent, "parent") }?;
        *out = parent_handle(&st)?;
        Ok(())
    }

    /// `MPI_Comm_spawn` (under madrun and Hydra: `MPI_ERR_SPAWN` under other launchers or none).
    /// Info keys: `wdir`, `path`, and `host` naming this host (children run where the launcher
    /// places them: madrun, here; Hydra, on its job's hosts).
    fn MPI_Comm_spawn / PMPI_Comm_spawn(
        command: *const c_char,
        argv: *const *const c_char,
        maxprocs: c_int,
        info: abi::Info,
        root: c_int,
        comm: abi::Comm,
        intercomm: *mut abi::Comm,
        array_of_errcodes: *mut c_int,
    ) {
        // SAFETY: the arguments as MPI_Comm_spawn defines them (one command).
        unsafe { spawn(1, &[command], &[argv], &[maxprocs], &[info], root, comm, intercomm, array_of_errcodes) }
    }

    /// `MPI_Comm_spawn_multiple`: the children of every command form one `MPI_COMM_WORLD`.
    fn MPI_Comm_spawn_multiple / PMPI_Comm_spawn_multiple(
        count: c_int,
        array_of_commands: *const *const c_char,
        array_of_argv: *const *const *const c_char,
        array_of_maxprocs: *const c_int,
        array_of_info: *const abi::Info,
        root: c_int,
        comm: abi::Comm,
        intercomm: *mut abi::Comm,
        array_of_errcodes: *mut c_int,
    ) {
        let st = state()?;
        let c = st.comm(comm)?;
        let n = if c.comm.rank() == u32::try_from(root).unwrap_or(u32::MAX) {
            usize::try_from(count).ok().filter(|&n| (1..=64).contains(&n))
                .ok_or_else(|| Error::arg(format!("count {count} is not within 1..=64"))).on(&c)?
        } else {
            0
        };
        let arrays = [array_of_commands.cast::<u8>(), array_of_maxprocs.cast(), array_of_info.cast()];
        if n > 0 && arrays.iter().any(|p| p.is_null()) {
            return Err(Error::arg("a null array of commands, maxprocs or infos")).on(&c);
        }
        let (commands, maxprocs, infos, argvs) = if n > 0 {
            // SAFETY: at the root, MPI_Comm_spawn_multiple's arrays have `count` elements
            // (checked non-null); MPI_ARGVS_NULL is a null `array_of_argv`.
            unsafe {
                (
                    std::slice::from_raw_parts(array_of_commands, n),
                    std::slice::from_raw_parts(array_of_maxprocs, n),
                    std::slice::from_raw_parts(array_of_info, n),
                    (!array_of_argv.is_null()).then(|| std::slice::from_raw_parts(array_of_argv, n)),
                )
            }
        } else {
            (&[][..], &[][..], &[][..], None)
        };
        let argvs: Vec<*const *const c_char> = match argvs {
            Some(a) => a.to_vec(),
            None => vec![std::ptr::null(); n],
        };
        drop(c);
        // SAFETY: the root's arrays as read above; nothing is read at the other members.
        unsafe { spawn(n, commands, &argvs, maxprocs, infos, root, comm, intercomm, array_of_errcodes) }
    }
}

/// The handle of the parents' intercommunicator, made once (`MPI_COMM_NULL` if none, or once
/// the program freed it).
fn parent_handle(st: &crate::state::State) -> Result<abi::Comm, Error> {
    static PARENT: std::sync::Mutex<Option<abi::Comm>> = std::sync::Mutex::new(None);
    let mut h = PARENT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(handle) = *h {
        return Ok(if st.comm(handle).is_ok() { handle } else { abi::MPI_COMM_NULL });
    }
    let parent = st
        .universe
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .as_ref()
        .and_then(|u| u.parent().cloned());
    let Some(parent) = parent else { return Ok(abi::MPI_COMM_NULL) };
    let handle = st.add_comm(crate::comms::CommObj::child(parent, &st.world))?.0;
    *h = Some(handle);
    Ok(handle)
}

/// Longest argument or command read, in bytes.
const ARG_MAX: usize = 64 * 1024;
/// Most arguments per command.
const ARGS_MAX: usize = 255;

/// A NULL-terminated `argv` (`MPI_ARGV_NULL`: none).
///
/// # Safety
/// `argv`, if not null, must point to a NULL-terminated array of C strings.
unsafe fn read_argv(argv: *const *const c_char) -> Result<Vec<String>, Error> {
    let mut out = Vec::new();
    if argv.is_null() {
        return Ok(out);
    }
    loop {
        // SAFETY: within the NULL-terminated array (we stop at its NULL or at ARGS_MAX).
        let p = unsafe { *argv.add(out.len()) };
        if p.is_null() {
            return Ok(out);
        }
        if out.len() == ARGS_MAX {
            return Err(Error::arg(format!("more than {ARGS_MAX} arguments")));
        }
        // SAFETY: a C string of the program's argv.
        out.push(unsafe { c_str(p, ARG_MAX, "argument") }?);
    }
}

/// The `wdir`, `path` and `host` info keys of a command.
fn command_info(h: abi::Info) -> Result<(Option<String>, Option<String>), Error> {
    let info = crate::infos::hints(h)?;
    let text = |k: &str| info.get(k).map(|v| String::from_utf8_lossy(v).into_owned());
    if let Some(host) = text("host") {
        let here = madmpi::env::universe::processor_name();
        if !(host == "localhost" || host == here || here.split('.').next() == Some(host.as_str())) {
            return Err(Error::spawn(format!("host {host:?}: children run on this host ({here}) only")));
        }
    }
    Ok((text("wdir"), text("path")))
}

/// `MPI_Comm_spawn_multiple` with `n` commands (0 away from the root, where they are not read).
///
/// # Safety
/// At the root, each command a C string, each argv as for [`read_argv`]; `intercomm` an output;
/// `errcodes` null or room for one code per child.
#[allow(clippy::too_many_arguments)]
unsafe fn spawn(
    n: usize,
    commands: &[*const c_char],
    argvs: &[*const *const c_char],
    maxprocs: &[c_int],
    infos: &[abi::Info],
    root: c_int,
    comm: abi::Comm,
    intercomm: *mut abi::Comm,
    errcodes: *mut c_int,
) -> Result<(), Fail> {
    let st = state()?;
    let c = st.comm(comm)?;
    // SAFETY: an output argument.
    let out = unsafe { check::out(intercomm, "intercomm") }.on(&c)?;
    *out = abi::MPI_COMM_NULL;
    let root = u32::try_from(root).map_err(|_| Error::root(format!("invalid root {root}"))).on(&c)?;
    let at_root = c.comm.rank() == root;
    let mut cmds = Vec::new();
    if at_root {
        for i in 0..n.min(commands.len()) {
            // SAFETY: the caller's contract.
            let program = unsafe { c_str(commands[i], ARG_MAX, "command") }.on(&c)?;
            // SAFETY: the caller's contract.
            let args = unsafe { read_argv(argvs[i]) }.on(&c)?;
            let procs = u32::try_from(maxprocs[i])
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| Error::spawn(format!("maxprocs {} for {program:?}", maxprocs[i])))
                .on(&c)?;
            let (wdir, path) = command_info(infos[i]).on(&c)?;
            cmds.push(dynamic::Command { program, args, maxprocs: procs, wdir, path });
        }
    }
    let total: u32 = cmds.iter().map(|c| c.maxprocs).sum();
    let result = dynamic::spawn(at_root.then_some(&cmds[..]), root, &c.comm);
    let count = match &result {
        Ok(ic) => ic.remote_group().map_or(0, |g| g.size()),
        Err(_) => total,
    } as usize;
    if !errcodes.is_null() && count > 0 {
        let code = match &result {
            Ok(_) => 0, // MPI_SUCCESS
            Err(e) => e.class() as c_int,
        };
        // SAFETY: MPI's errcodes array has one element per child (`count`, known here from
        // the remote group or, at the root, from maxprocs).
        unsafe { std::slice::from_raw_parts_mut(errcodes, count) }.fill(code);
    }
    super::comm_create::publish(&st, &c, Some(result.on(&c)?), out)
}
