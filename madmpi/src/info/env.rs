//! `MPI_INFO_ENV`: how this process was started, under the keys MPI 4.0 reserves for it (those
//! of `MPI_Comm_spawn`). What is known is given, the rest is left out:
//!
//! | key | value |
//! |-----|-------|
//! | `command` | the program as started (`argv[0]`) |
//! | `argv` | its arguments, separated by spaces (empty when there are none) |
//! | `maxprocs` | how many processes the job started: `MPI_COMM_WORLD`'s size once MPI was initialized, before that what the launcher says (`PMI_SIZE`, set by madrun and Hydra) |
//! | `host` | this processor's name (`MPI_Get_processor_name`) |
//! | `arch` | the processor architecture (`x86_64`, `aarch64`, ...) |
//! | `wdir` | the working directory when the library first looked (`MPI_Init` at the latest) |
//! | `thread_level` | the thread level requested at initialization (`MPI_THREAD_SINGLE`, ...), once MPI was initialized |
//!
//! `soft` and `file` are never given: no launcher passes them. The command line is read from
//! `/proc/self/cmdline` once (a program may later overwrite its `argv` strings, as
//! `setproctitle` does); values longer than [`MAX_VALUE`] are cut there.
//!
//! The thread levels ([`Threading`]) and the processor's name are defined here, below the
//! environment (`env::universe`, which re-exports them) that initializes with them.

use super::{Info, MAX_VALUE};
use std::os::unix::ffi::OsStrExt;
use std::sync::OnceLock;

/// Thread support levels (`MPI_THREAD_*`), in increasing order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Threading {
    Single,
    Funneled,
    Serialized,
    Multiple,
}

/// The name of this processor (`MPI_Get_processor_name`): the host name.
pub fn processor_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into `buf`.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if r != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// What the process was started with, as first seen.
struct Process {
    args: Vec<Vec<u8>>,
    wdir: Option<Vec<u8>>,
}

static PROCESS: OnceLock<Process> = OnceLock::new();
/// `MPI_COMM_WORLD`'s size and the thread level requested, from initialization on.
static START: OnceLock<(u32, Threading)> = OnceLock::new();

fn process() -> &'static Process {
    PROCESS.get_or_init(|| {
        let cmdline = std::fs::read("/proc/self/cmdline").unwrap_or_default();
        let args = cmdline.split(|&b| b == 0).map(<[u8]>::to_vec).collect::<Vec<_>>();
        // The file ends with a NUL, which leaves one empty piece after the last argument.
        let args = match args.split_last() {
            Some((last, rest)) if last.is_empty() => rest.to_vec(),
            _ => args,
        };
        let wdir = std::env::current_dir().ok().map(|d| d.as_os_str().as_bytes().to_vec());
        Process { args, wdir }
    })
}

/// Records what MPI was initialized with (called by `universe::init`), for `maxprocs` and
/// `thread_level`; only the first call counts (MPI is initialized once per process).
pub fn record_start(world_size: u32, threading: Threading) {
    process();
    let _ = START.set((world_size, threading));
}

/// `MPI_INFO_ENV`'s contents now, with this process's command line.
pub fn env() -> Info {
    env_of(&process().args)
}

/// `MPI_INFO_ENV`'s contents with `args` as the command line (`MPI_Info_create_env(argc,
/// argv)`), `args[0]` being the command.
pub fn env_with_args<A: AsRef<[u8]>>(args: &[A]) -> Info {
    env_of(args)
}

/// `v` up to its first NUL and at most [`MAX_VALUE`] bytes.
fn clean(v: &[u8]) -> &[u8] {
    let v = v.split(|&b| b == 0).next().unwrap_or_default();
    &v[..v.len().min(MAX_VALUE)]
}

fn env_of<A: AsRef<[u8]>>(args: &[A]) -> Info {
    let mut pairs: Vec<(&str, Vec<u8>)> = Vec::new();
    if let Some((command, rest)) = args.split_first() {
        pairs.push(("command", command.as_ref().to_vec()));
        pairs.push(("argv", rest.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(&b' ')));
    }
    let started = START.get().copied();
    let maxprocs = started.map(|(n, _)| n).or_else(|| {
        std::env::var("PMI_SIZE").ok().and_then(|s| s.trim().parse::<u32>().ok()).filter(|&n| n > 0)
    });
    if let Some(n) = maxprocs {
        pairs.push(("maxprocs", n.to_string().into_bytes()));
    }
    pairs.push(("host", processor_name().into_bytes()));
    pairs.push(("arch", std::env::consts::ARCH.as_bytes().to_vec()));
    if let Some(wdir) = &process().wdir {
        pairs.push(("wdir", wdir.clone()));
    }
    if let Some((_, level)) = started {
        pairs.push(("thread_level", thread_level_name(level).as_bytes().to_vec()));
    }
    let mut info = Info::new();
    for (k, v) in pairs {
        info.set(k, clean(&v)).expect("a reserved key and a cleaned value are valid");
    }
    info
}

/// The C name of a thread level.
pub(crate) fn thread_level_name(t: Threading) -> &'static str {
    match t {
        Threading::Single => "MPI_THREAD_SINGLE",
        Threading::Funneled => "MPI_THREAD_FUNNELED",
        Threading::Serialized => "MPI_THREAD_SERIALIZED",
        Threading::Multiple => "MPI_THREAD_MULTIPLE",
    }
}
