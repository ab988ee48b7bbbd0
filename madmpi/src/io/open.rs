//! Opening and closing files, and the file-wide calls: sizes, sync, info, atomicity, views.
//!
//! `MPI_File_open` is collective: the first process creates the file (so that `MPI_MODE_EXCL`
//! fails everywhere or nowhere), the others open it after; one failure fails the open at every
//! process. Each file has its own duplicate of the communicator, so that its collectives never
//! match the program's.

use super::amode::Amode;
use super::batch::Batch;
use super::datarep::Datarep;
use super::hints::Hints;
use super::pointer::SharedPointer;
use super::queue::Queue;
use super::view::{Disp, View, Whence};
use crate::comm::Comm;
use crate::datatype::Datatype;
use crate::error::{Error, ErrorClass, Result};
use crate::info::Info;
use std::ffi::CString;
use std::os::fd::{AsFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// An open file's state (what a [`super::File`] handle shares).
pub(crate) struct Inner {
    /// The program's communicator, and the file's own duplicate of it.
    user: Comm,
    pub(super) comm: Comm,
    pub(super) amode: Amode,
    pub(super) path: PathBuf,
    pub(super) file: std::fs::File,
    state: Mutex<State>,
    pub(super) shared: SharedPointer,
    pub(super) queue: Arc<Queue>,
    /// The ranks (in `comm`) that aggregate collective accesses: the first of each node.
    pub(super) node_leaders: Vec<u32>,
    /// Orders this process's threads over a locked span (OFD locks do not).
    pub(super) local: Mutex<()>,
    pub(super) batch: Batch,
}

struct State {
    view: View,
    /// The individual file pointer, in etypes of the view.
    individual: i64,
    atomic: bool,
    hints: Hints,
}

/// The error class of a failed system call on a file.
pub(super) fn os_error(what: &str, path: &Path, e: std::io::Error) -> Error {
    let class = match e.raw_os_error().unwrap_or(0) {
        libc::ENOENT => ErrorClass::NoSuchFile,
        libc::EEXIST => ErrorClass::FileExists,
        libc::EACCES | libc::EPERM => ErrorClass::Access,
        libc::EROFS => ErrorClass::ReadOnly,
        libc::ENOSPC => ErrorClass::NoSpace,
        libc::EDQUOT => ErrorClass::Quota,
        libc::ENAMETOOLONG | libc::EISDIR | libc::ENOTDIR | libc::ELOOP => ErrorClass::BadFile,
        libc::ETXTBSY => ErrorClass::FileInUse,
        _ => ErrorClass::Io,
    };
    Error::new(class, format!("{what} {}: {e}", path.display()))
}

fn open_fd(path: &Path, flags: i32) -> std::io::Result<std::fs::File> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `c` is a NUL-terminated path; the mode is read only with O_CREAT.
    let fd = unsafe { libc::open(c.as_ptr(), flags, 0o644 as libc::c_uint) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

/// Agrees at every process on whether each succeeded: the local result, or an error of the
/// class of the first process that failed, naming it.
pub(super) fn agree<T>(comm: &Comm, local: Result<T>) -> Result<T> {
    let mine = [local.as_ref().err().map_or(0, |e| e.class().code())];
    let mut all = vec![0i32; comm.size() as usize];
    comm.allgather(&mine, &mut all)?;
    match local {
        Err(e) => Err(e),
        Ok(v) => match all.iter().position(|&c| c != 0) {
            None => Ok(v),
            Some(r) => {
                let class = ErrorClass::from_code(all[r]).unwrap_or(ErrorClass::Io);
                Err(Error::new(class, format!("process {r} of the file's group failed ({})", class.name())))
            }
        },
    }
}

pub(super) fn open(user: &Comm, path: &str, amode: Amode, info: &Info) -> Result<Inner> {
    if user.is_inter() {
        return Err(Error::comm("a file is opened over an intracommunicator"));
    }
    if path.is_empty() || path.contains('\0') {
        return Err(Error::bad_file(format!("invalid file name {path:?}")));
    }
    let comm = user.dup()?;
    // One allgather checks the access modes agree and finds the nodes.
    let mine = [amode.bits() as u64, comm.runtime().node];
    let mut all = vec![0u64; 2 * comm.size() as usize];
    comm.allgather(&mine, &mut all)?;
    if all.chunks(2).any(|p| p[0] != mine[0]) {
        return Err(Error::not_same("the processes opened the file with different access modes"));
    }
    let mut nodes: Vec<u64> = Vec::new();
    let mut node_leaders = Vec::new();
    for (r, p) in all.chunks(2).enumerate() {
        if !nodes.contains(&p[1]) {
            nodes.push(p[1]);
            node_leaders.push(r as u32);
        }
    }
    let path = PathBuf::from(path);
    // ROMIO's name prefixes ("ufs:", "nfs:", ...) name a file system driver: the kernel's here.
    let path = strip_fs_prefix(&path);
    let flags = amode.open_flags();
    let opened = |flags| open_fd(&path, flags).map_err(|e| os_error("open", &path, e));
    // The first process creates the file (and alone judges MPI_MODE_EXCL); the others open it.
    let file = if comm.rank() == 0 {
        agree(&comm, opened(flags)).map(Ok)?
    } else {
        agree(&comm, Ok(()))?;
        opened(flags & !(libc::O_CREAT | libc::O_EXCL))
    };
    let file = agree(&comm, file)?;
    let hints = Hints::defaults(node_leaders.len()).with(info, comm.size() as usize);
    let shared = SharedPointer::new(&comm)?;
    let mut individual = 0;
    if amode.has(Amode::APPEND) {
        // Both pointers start at the end of the file (the initial view counts bytes).
        let end = file.metadata().map_err(|e| os_error("stat", &path, e))?.len() as i64;
        individual = end;
        shared.set_initial(&comm, end)?;
    }
    let state = State { view: View::initial(), individual, atomic: false, hints };
    Ok(Inner {
        user: user.clone(),
        comm,
        amode,
        path,
        file,
        state: Mutex::new(state),
        shared,
        queue: Arc::default(),
        node_leaders,
        local: Mutex::new(()),
        batch: Batch::default(),
    })
}

fn strip_fs_prefix(path: &Path) -> PathBuf {
    let s = path.to_string_lossy();
    for p in ["ufs:", "nfs:", "lustre:", "gpfs:", "pvfs2:", "testfs:", "xfs:"] {
        if let Some(rest) = s.strip_prefix(p) {
            return PathBuf::from(rest);
        }
    }
    path.to_path_buf()
}

/// `MPI_File_delete`.
pub(super) fn delete(path: &str, _info: &Info) -> Result<()> {
    let path = strip_fs_prefix(Path::new(path));
    std::fs::remove_file(&path).map_err(|e| os_error("delete", &path, e))
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn user_comm(&self) -> &Comm {
        &self.user
    }

    pub(super) fn hints(&self) -> Hints {
        self.state().hints.clone()
    }

    pub(super) fn view(&self) -> View {
        self.state().view.clone()
    }

    pub(super) fn atomic(&self) -> bool {
        self.state().atomic
    }

    pub(super) fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.file.as_fd()
    }

    /// `MPI_File_close`: waits for the queued operations, then every process closes.
    pub(super) fn close(&self) -> Result<()> {
        self.queue.drain();
        self.shared.free()?;
        self.comm.barrier()?;
        if self.amode.has(Amode::DELETE_ON_CLOSE) && self.comm.rank() == 0 {
            std::fs::remove_file(&self.path).map_err(|e| os_error("delete on close", &self.path, e))?;
        }
        Ok(())
    }

    pub(super) fn set_size(&self, size: i64) -> Result<()> {
        let size = u64::try_from(size).map_err(|_| Error::arg(format!("negative size ({size})")))?;
        self.check_same(size as i64, "size")?;
        self.queue.drain();
        let r = if self.comm.rank() == 0 {
            self.file.set_len(size).map_err(|e| os_error("truncate", &self.path, e))
        } else {
            Ok(())
        };
        agree(&self.comm, r)
    }

    pub(super) fn preallocate(&self, size: i64) -> Result<()> {
        let size = u64::try_from(size).map_err(|_| Error::arg(format!("negative size ({size})")))?;
        self.check_same(size as i64, "size")?;
        // The first process grows the file; every process hears how it went (an error must not
        // leave the others waiting in `agree`).
        let r = if self.comm.rank() == 0 { self.grow_to(size) } else { Ok(()) };
        agree(&self.comm, r)
    }

    /// Reserves the file's first `size` bytes (never shrinks it): `posix_fallocate`, or a
    /// plain extension where the file system cannot.
    fn grow_to(&self, size: u64) -> Result<()> {
        if self.size()? as u64 >= size {
            return Ok(());
        }
        use std::os::fd::AsRawFd;
        // SAFETY: an open descriptor of ours; posix_fallocate reads only its arguments.
        match unsafe { libc::posix_fallocate(self.fd().as_raw_fd(), 0, size as i64) } {
            0 => Ok(()),
            libc::EOPNOTSUPP | libc::EINVAL => {
                self.file.set_len(size).map_err(|e| os_error("extend", &self.path, e))
            }
            rc => Err(os_error("preallocate", &self.path, std::io::Error::from_raw_os_error(rc))),
        }
    }

    pub(super) fn size(&self) -> Result<i64> {
        Ok(self.file.metadata().map_err(|e| os_error("stat", &self.path, e))?.len() as i64)
    }

    pub(super) fn sync(&self) -> Result<()> {
        self.queue.drain();
        let r = self.file.sync_data().map_err(|e| os_error("sync", &self.path, e));
        agree(&self.comm, r)
    }

    pub(super) fn set_info(&self, info: &Info) -> Result<()> {
        let mut s = self.state();
        s.hints = s.hints.with(info, self.comm.size() as usize);
        Ok(())
    }

    pub(super) fn set_atomicity(&self, atomic: bool) -> Result<()> {
        self.check_same(i64::from(atomic), "atomicity flag")?;
        self.queue.drain();
        self.state().atomic = atomic;
        Ok(())
    }

    /// Checks that every process gave the same `value` (MPI_ERR_NOT_SAME otherwise).
    pub(super) fn check_same(&self, value: i64, what: &str) -> Result<()> {
        let mine = [value, -value];
        let mut r = [0i64; 2];
        self.comm.allreduce(&mine, &mut r, &crate::op::Op::builtin(crate::op::Builtin::Max))?;
        if r[0] != value || -r[1] != value {
            return Err(Error::not_same(format!("the processes gave different values of the {what}")));
        }
        Ok(())
    }

    pub(super) fn set_view(
        &self,
        disp: Disp,
        etype: &Datatype,
        filetype: &Datatype,
        datarep: &str,
        info: &Info,
    ) -> Result<()> {
        self.queue.drain();
        // Every failure goes through the agreement: a process that returned before it would
        // leave the others waiting there.
        let view = (|| {
            let rep = Datarep::named(datarep)?;
            let disp = match disp {
                Disp::Bytes(d) => d,
                Disp::Current if self.amode.has(Amode::SEQUENTIAL) => {
                    // The shared pointer's byte position under the current view.
                    let at = self.shared.get()?;
                    self.view().byte_offset(at)?
                }
                Disp::Current => {
                    return Err(Error::arg(
                        "MPI_DISPLACEMENT_CURRENT is for files opened with MPI_MODE_SEQUENTIAL",
                    ));
                }
            };
            View::new(disp, etype, filetype, rep)
        })();
        let view = agree(&self.comm, view)?;
        self.check_same(view.etype_size() as i64, "etype size")?;
        {
            let mut s = self.state();
            s.view = view;
            s.individual = 0;
            s.hints = s.hints.with(info, self.comm.size() as usize);
        }
        self.shared.reset(&self.comm)
    }

    pub(super) fn seek(&self, offset: i64, whence: Whence) -> Result<()> {
        if self.amode.has(Amode::SEQUENTIAL) {
            return Err(Error::unsupported_operation("seeking a file opened with MPI_MODE_SEQUENTIAL"));
        }
        let end = self.end_in_etypes()?;
        let mut s = self.state();
        let new = match whence {
            Whence::Set => Some(offset),
            Whence::Cur => s.individual.checked_add(offset),
            Whence::End => end.checked_add(offset),
        };
        match new {
            Some(n) if n >= 0 => {
                s.individual = n;
                Ok(())
            }
            _ => Err(Error::arg(format!(
                "seeking to a negative or overflowing offset ({offset} from {whence:?})"
            ))),
        }
    }

    /// The end of the file, in etypes of the view (rounded up to a whole etype).
    pub(super) fn end_in_etypes(&self) -> Result<i64> {
        let size = self.size()?;
        let view = self.view();
        let e = view.etype_size();
        Ok(view.stream_at(size).div_ceil(e) as i64)
    }

    pub(super) fn position(&self) -> i64 {
        self.state().individual
    }

    /// Takes `n` etypes at the individual pointer: where they start.
    pub(super) fn advance(&self, n: i64) -> i64 {
        let mut s = self.state();
        let at = s.individual;
        s.individual += n;
        at
    }

    /// Gives back what [`Inner::advance`] took beyond what was accessed (a short read).
    pub(super) fn retreat(&self, n: i64) {
        self.state().individual -= n;
    }

    pub(super) fn seek_shared(&self, offset: i64, whence: Whence) -> Result<()> {
        self.check_same(offset, "offset")?;
        self.check_same(whence as i64, "whence")?;
        self.queue.drain();
        let end = self.end_in_etypes()?;
        self.shared.seek(&self.comm, offset, whence, end)
    }

    pub(super) fn position_shared(&self) -> Result<i64> {
        self.shared.get()
    }
}
