//! The job's processes: starting one (in the job's process group, with PR_SET_PDEATHSIG so that
//! it dies with madrun, with its PMI descriptor inherited), noticing that one ended, killing them,
//! and describing how a process ended.

use std::fs::File;
use std::io;
use std::os::fd::{OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    /// waitid said it is not our child any more (should not happen).
    Lost,
}

impl Exit {
    /// "exited with status 3", "was killed by signal 9 (SIGKILL)".
    pub fn describe(&self) -> String {
        match *self {
            Exit::Code(c) => format!("exited with status {c}"),
            Exit::Signal(s) => format!("was killed by signal {s} ({})", signal_name(s)),
            Exit::Lost => "disappeared (its status is unknown)".to_string(),
        }
    }

    /// madrun's exit code when this ended the job (shell conventions: 128 + signal).
    pub fn exit_code(&self) -> i32 {
        match *self {
            Exit::Code(c) if c != 0 => c,
            Exit::Code(_) | Exit::Lost => 1,
            Exit::Signal(s) => 128 + s,
        }
    }
}

/// The usual name of a signal.
pub fn signal_name(sig: i32) -> &'static str {
    const NAMES: [&str; 32] = [
        "0",
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    usize::try_from(sig).ok().and_then(|i| NAMES.get(i)).copied().unwrap_or("a real-time signal")
}

/// What to start.
#[derive(Debug)]
pub struct Launch<'a> {
    /// Program and arguments.
    pub argv: &'a [String],
    /// Variables removed from madrun's environment, then variables set (in order).
    pub env_remove: &'a [&'a str],
    pub env: &'a [(String, String)],
    /// A descriptor the child keeps across exec (its PMI socket).
    pub keep_fd: Option<RawFd>,
    /// The job's process group; `None` makes this process the group's leader.
    pub pgid: Option<i32>,
    /// Give it a stdin pipe (else /dev/null).
    pub stdin: bool,
    /// Its working directory (else madrun's).
    pub cwd: Option<&'a std::path::Path>,
}

/// A started process and madrun's ends of its pipes.
#[derive(Debug)]
pub struct Started {
    pub pid: i32,
    pub stdin: Option<File>,
    pub stdout: File,
    pub stderr: File,
}

/// Starts a process. Must be called from the thread that outlives the job: PR_SET_PDEATHSIG
/// fires when the *thread* that forked the child ends.
pub fn spawn(l: &Launch) -> io::Result<Started> {
    let (prog, args) = l.argv.split_first().ok_or_else(|| io::Error::other("empty command"))?;
    let mut cmd = Command::new(prog);
    cmd.args(args);
    for k in l.env_remove {
        cmd.env_remove(k);
    }
    cmd.envs(l.env.iter().map(|(k, v)| (k, v)));
    if let Some(dir) = l.cwd {
        cmd.current_dir(dir);
    }
    cmd.stdin(if l.stdin { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.process_group(l.pgid.unwrap_or(0));
    let parent = std::process::id() as libc::pid_t;
    let keep = l.keep_fd;
    // SAFETY: the closure runs between fork and exec; it only makes async-signal-safe system
    // calls (prctl, getppid, fcntl) and does not allocate.
    unsafe { cmd.pre_exec(move || child_setup(parent, keep)) };
    let mut child = cmd.spawn()?;
    let pid = child.id() as i32;
    let take = |o: Option<OwnedFd>| o.map(File::from);
    let stdin = take(child.stdin.take().map(OwnedFd::from));
    let stdout =
        take(child.stdout.take().map(OwnedFd::from)).ok_or_else(|| io::Error::other("no stdout pipe"))?;
    let stderr =
        take(child.stderr.take().map(OwnedFd::from)).ok_or_else(|| io::Error::other("no stderr pipe"))?;
    // `child` is dropped without waiting: the event loop reaps by pid.
    Ok(Started { pid, stdin, stdout, stderr })
}

/// In the child, before exec: die with madrun, keep the PMI descriptor.
fn child_setup(parent: libc::pid_t, keep: Option<RawFd>) -> io::Result<()> {
    // SAFETY: prctl(PR_SET_PDEATHSIG) only sets an attribute of the calling process.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // madrun may have died before prctl: then nobody would kill us.
    // SAFETY: getppid has no preconditions.
    if unsafe { libc::getppid() } != parent {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    if let Some(fd) = keep {
        // SAFETY: clears FD_CLOEXEC on a descriptor madrun created for this child.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether `pid` (our child) has ended, without blocking. With `keep_zombie` the child is left
/// unreaped so that its pid (the job's process group id) cannot be reused yet.
pub fn try_wait(pid: i32, keep_zombie: bool) -> Option<Exit> {
    let flags = libc::WEXITED | libc::WNOHANG | if keep_zombie { libc::WNOWAIT } else { 0 };
    loop {
        // SAFETY: siginfo_t is plain data; all-zero means "no child changed state" for WNOHANG.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid writes into our siginfo_t.
        let r = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Some(Exit::Lost);
        }
        // SAFETY: waitid filled the SIGCHLD fields of the union (or left it all zero).
        let (spid, status) = unsafe { (info.si_pid(), info.si_status()) };
        if spid == 0 {
            return None;
        }
        return match info.si_code {
            libc::CLD_EXITED => Some(Exit::Code(status)),
            libc::CLD_KILLED | libc::CLD_DUMPED => Some(Exit::Signal(status)),
            _ => None,
        };
    }
}

/// Reaps a child that already ended (a zombie kept by [`try_wait`]).
pub fn reap(pid: i32) {
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status into our integer.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r >= 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return;
        }
    }
}

/// Sends `sig` to the whole process group `pgid` (its leader is kept unreaped until the end of
/// the job, so the id cannot name another group).
pub fn signal_group(pgid: i32, sig: i32) {
    if pgid > 0 {
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(-pgid, sig) };
    }
}

/// Sends `sig` to one of our children that has not been reaped yet.
pub fn signal_pid(pid: i32, sig: i32) {
    if pid > 0 {
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(pid, sig) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_are_described_with_shell_exit_codes() {
        assert_eq!(Exit::Code(3).describe(), "exited with status 3");
        assert_eq!(Exit::Code(3).exit_code(), 3);
        assert_eq!(Exit::Signal(9).describe(), "was killed by signal 9 (SIGKILL)");
        assert_eq!(Exit::Signal(9).exit_code(), 137);
        assert_eq!(signal_name(15), "SIGTERM");
        assert_eq!(signal_name(40), "a real-time signal");
        assert_eq!(signal_name(-1), "a real-time signal");
    }
}
