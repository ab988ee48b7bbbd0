//! What the harnesses of C programs share (`c_programs.rs`, `c_programs_io.rs`, `hdf5.rs`):
//! building a program with our `mpicc` or with `mpicc.mpich`, checking which library it loads,
//! running it as a job under madrun or Hydra on our library or on MPICH's, and the verdict of
//! the programs' `OK <rank>: all checks passed` lines.
//!
//! A missing compiler or launcher fails the test with the Debian package to install: these
//! tests are never skipped.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use tests::jobs::{Done, madrun_path, mpi_lib_dir, require, run_limited};

/// A job that takes longer is a hang. Generous: `thread_multiple` (2 ranks × 4 threads × 20,000
/// messages) in a debug build under Hydra takes 10–15 s alone and was seen above 60 s on a loaded
/// 2-core machine.
pub const HANG: Duration = Duration::from_secs(120);

/// The source directory of the C programs.
pub fn c_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c")
}

/// How a program was built.
#[derive(Clone, Copy, Debug)]
pub enum Build {
    /// Our `mpicc`: madmpi's header, `-lmpi`.
    Ours,
    /// `mpicc.mpich` with MPICH's header, `-lmpich`.
    Mpich,
}

/// Compiles `tests/c/<name>.c` with `build` into `out` (`<name>.ours` or `<name>.mpich`); the
/// executable. The MPICH build needs nothing of ours.
pub fn compile(name: &str, build: Build, out: &Path) -> PathBuf {
    std::fs::create_dir_all(out).expect("create the output directory");
    let src = c_dir().join(format!("{name}.c"));
    // gcc 12 warns about MPI_STATUSES_IGNORE passed for an array parameter, with either header.
    let flags = ["-Wall", "-Wextra", "-Werror", "-Wno-stringop-overflow", "-g", "-pthread"];
    let (exe, mut cmd) = match build {
        Build::Ours => {
            require("cc", "build-essential"); // what mpicc runs
            (out.join(format!("{name}.ours")), Command::new(mpi_lib_dir().join("mpicc")))
        }
        Build::Mpich => {
            (out.join(format!("{name}.mpich")), Command::new(require("mpicc.mpich", "libmpich-dev")))
        }
    };
    cmd.args(flags).arg(&src).arg("-I").arg(c_dir()).arg("-o").arg(&exe);
    let done = cmd.output().expect("run the C compiler");
    assert!(
        done.status.success(),
        "compiling {name} ({build:?}) failed: {cmd:?}\n{}",
        String::from_utf8_lossy(&done.stderr)
    );
    exe
}

/// Checks with `ldd` that `exe` loads its MPI library (`soname`) from [`mpi_lib_dir`].
pub fn assert_loads_ours(exe: &Path, soname: &str) {
    let out = Command::new(require("ldd", "libc-bin"))
        .arg(exe)
        .env("LD_LIBRARY_PATH", mpi_lib_dir())
        .output()
        .expect("run ldd");
    let text = String::from_utf8_lossy(&out.stdout);
    let line =
        text.lines().find(|l| l.contains(soname)).unwrap_or_else(|| panic!("{soname} not in ldd:\n{text}"));
    let expected = mpi_lib_dir().join(soname);
    assert!(
        line.contains(&*expected.to_string_lossy()),
        "{} loads {line}, not {}",
        exe.display(),
        expected.display()
    );
}

/// The launchers a program runs under.
#[derive(Clone, Copy, Debug)]
pub enum Launcher {
    Madrun,
    Hydra,
}

impl Launcher {
    pub fn command(self) -> Command {
        match self {
            Launcher::Madrun => Command::new(madrun_path()),
            Launcher::Hydra => Command::new(require("mpiexec.hydra", "mpich")),
        }
    }
}

/// The MPI library a job's processes load.
#[derive(Clone, Copy, Debug)]
pub enum Library {
    /// Ours: `LD_LIBRARY_PATH` on [`mpi_lib_dir`], whose soname links serve both builds.
    Ours,
    /// MPICH's own, as installed (no `LD_LIBRARY_PATH`): for MPICH builds.
    Mpichs,
}

/// Runs `exe args` as an `n`-process job under `launcher` on `library`, with `env` added to the
/// job's environment (and the test's `PM2_PMI` taken away), within [`HANG`].
pub fn run_job<A: AsRef<OsStr>>(
    launcher: Launcher,
    exe: &Path,
    args: impl IntoIterator<Item = A>,
    n: u32,
    library: Library,
    env: &[(&str, &str)],
) -> Done {
    let mut cmd = launcher.command();
    cmd.envs(env.iter().copied());
    cmd.arg("-n").arg(n.to_string()).arg(exe).args(args).env_remove("PM2_PMI");
    match library {
        Library::Ours => cmd.env("LD_LIBRARY_PATH", mpi_lib_dir()),
        Library::Mpichs => cmd.env_remove("LD_LIBRARY_PATH"),
    };
    run_limited(cmd, None, HANG, |_| {})
}

/// Every rank of an `n`-process job passed all its checks.
pub fn assert_passed(what: &str, done: &Done, n: u32) {
    assert_eq!(done.code, Some(0), "{what}: {done:?}");
    assert!(!done.stdout.contains("FAIL"), "{what}: {done:?}");
    for rank in 0..n {
        assert!(done.stdout.contains(&format!("OK {rank}: all checks passed")), "{what}: {done:?}");
    }
}
