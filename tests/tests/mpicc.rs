//! The compiler wrapper and the install step, end to end with real processes:
//! - the build tree's `mpicc` compiles `c/ring.c` (a token around all ranks, rank 0 checking that
//!   `MPI_Get_library_version` says MadMPI), which runs under `madrun -n 3`; `-show` names the
//!   header and library directories, compile-only steps get no link flags, a tree without the
//!   header is a clear error;
//! - `./run install` into a temporary prefix: the installed `mpicc` builds the program, which
//!   runs under the installed `mpiexec -np 3` and finds the library by its rpath; the program
//!   built by MPICH's `mpicc.mpich` runs on the installed library through `LD_LIBRARY_PATH`
//!   under `mpiexec.hydra -n 3`.
//!
//! A missing `cc`, `mpicc.mpich` or `mpiexec.hydra` fails with the Debian package to install:
//! these tests are never skipped.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;
use tests::jobs::{Done, bin_dir, build_mpi_tree, require, run_limited, serial};

/// A job that takes longer is a hang.
const HANG: Duration = Duration::from_secs(30);

fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root")
}

fn ring_c() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("c/ring.c")
}

/// A fresh scratch directory for `what`.
fn scratch(what: &str) -> PathBuf {
    let dir = bin_dir().join(format!("mpicc-test-{}-{what}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a scratch directory");
    dir
}

/// The build tree's `target/<profile>` with `libmpi.so`, `mpicc` and `madrun` built.
fn build_tree() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(build_mpi_tree)
}

/// Runs `cmd` to completion; its output, after checking it succeeded.
fn check_output(mut cmd: Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{cmd:?} failed ({}):\n{stdout}\n{stderr}", out.status);
    stdout.into_owned()
}

/// Compiles `ring.c` into `out` with the wrapper `mpicc` (ours or MPICH's).
fn compile(mpicc: &Path, out: &Path) {
    require("cc", "build-essential");
    let mut cmd = Command::new(mpicc);
    cmd.args(["-Wall", "-Werror", "-O1"]).arg(ring_c()).arg("-o").arg(out);
    check_output(cmd);
}

/// Runs `exe` as 3 ranks with `launcher` (`-n` or `-np` as `n_flag`), with an extra environment.
fn run_ring(launcher: &Path, n_flag: &str, exe: &Path, env: &[(&str, &OsStr)]) -> Done {
    let mut cmd = Command::new(launcher);
    cmd.args([n_flag, "3"]).arg(exe).env_remove("PM2_PMI").env_remove("LD_LIBRARY_PATH");
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_limited(cmd, None, HANG, |_| {})
}

/// The ring ran on 3 ranks of MadMPI's library and passed.
fn assert_ring_passed(done: &Done, what: &str) {
    assert_eq!(done.code, Some(0), "{what}: {done:?}");
    assert!(done.stdout.contains("library: MadMPI "), "{what} did not run on MadMPI: {done:?}");
    assert!(done.stdout.contains("ring of 3 ranks: token 6, expected 6: OK"), "{what}: {done:?}");
    for rank in [1, 2] {
        assert!(done.stdout.contains(&format!("rank {rank} of 3 passed the token on")), "{what}: {done:?}");
    }
}

/// The line of `ldd exe` for `soname`.
fn ldd_line(exe: &Path, soname: &str, env: &[(&str, &OsStr)]) -> String {
    let mut cmd = Command::new(require("ldd", "libc-bin"));
    cmd.arg(exe).env_remove("LD_LIBRARY_PATH");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let text = check_output(cmd);
    let line = text.lines().find(|l| l.contains(soname));
    line.unwrap_or_else(|| panic!("{soname} not in ldd {}:\n{text}", exe.display())).trim().to_string()
}

#[test]
fn build_tree_mpicc_builds_a_ring_that_runs_under_madrun() {
    let _s = serial();
    let dir = build_tree();
    let mpicc = dir.join("mpicc");
    let work = scratch("build-tree");
    let exe = work.join("ring");
    compile(&mpicc, &exe);
    // By the rpath to target/<profile>, where mpicc made the soname link beside libmpi.so.
    let line = ldd_line(&exe, "libmpi.so.12", &[]);
    assert!(line.contains(&*dir.join("libmpi.so.12").to_string_lossy()), "{line}");
    let done = run_ring(&dir.join("madrun"), "-n", &exe, &[]);
    assert_ring_passed(&done, "ring (build-tree mpicc, madrun -n 3)");
    std::fs::remove_dir_all(&work).unwrap();
}

#[test]
fn show_names_the_header_and_the_library_and_compile_steps_do_not_link() {
    let dir = build_tree();
    let mpicc = dir.join("mpicc");
    let include = workspace().join("madmpi/include");
    let show = |args: &[&str]| {
        let mut cmd = Command::new(&mpicc);
        cmd.args(args).env_remove("MADMPI_CC");
        check_output(cmd)
    };
    let link = show(&["-show", "ring.c", "-o", "ring"]);
    for part in [
        format!("cc -I{} ring.c -o ring", include.display()),
        format!("-L{} -lmpi -Wl,-rpath,{}", dir.display(), dir.display()),
    ] {
        assert!(link.contains(&part), "`mpicc -show` gave {link:?}, without {part:?}");
    }
    let compile = show(&["-show", "-c", "ring.c"]);
    assert_eq!(compile.trim(), format!("cc -I{} -c ring.c", include.display()));
    assert_eq!(show(&["-show-compile-info"]).trim(), format!("-I{}", include.display()));
    assert!(show(&["-link-info"]).contains("-lmpi"));
    // Flags without an input pass through: the compiler's own version.
    assert!(show(&["--version"]).to_lowercase().contains("copyright"));
    let mut cxx = Command::new(dir.join("mpicxx"));
    cxx.args(["-show", "-c", "a.cc"]).env_remove("MADMPI_CXX");
    assert_eq!(check_output(cxx).trim(), format!("c++ -I{} -c a.cc", include.display()));
    // The compiler is $MADMPI_CC.
    let mut cmd = Command::new(&mpicc);
    cmd.args(["-show", "-c", "x.c"]).env("MADMPI_CC", "ccache gcc-12");
    assert!(check_output(cmd).starts_with("ccache gcc-12 -I"));
}

#[test]
fn a_tree_without_the_header_or_the_compiler_is_a_clear_error() {
    let dir = build_tree();
    let fake = scratch("incomplete");
    std::fs::create_dir_all(fake.join("bin")).unwrap();
    std::fs::copy(dir.join("mpicc"), fake.join("bin/mpicc")).expect("copy mpicc");
    let out = Command::new(fake.join("bin/mpicc")).arg(ring_c()).output().expect("run mpicc");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("include/mpi.h not found") && err.contains("./run install"), "{err}");
    let out = Command::new(dir.join("mpicc"))
        .args(["-c", "x.c"])
        .env("MADMPI_CC", "no-such-compiler-here")
        .output()
        .expect("run mpicc");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("`no-such-compiler-here` is not installed") && err.contains("build-essential"),
        "{err}"
    );
    std::fs::remove_dir_all(&fake).unwrap();
}

#[test]
fn installed_tree_runs_our_build_and_an_mpich_build_on_our_library() {
    let _s = serial();
    let mpich_cc = require("mpicc.mpich", "libmpich-dev");
    let hydra = require("mpiexec.hydra", "mpich");
    // A space in the prefix checks the quoting of the install script and of the wrapper.
    let work = scratch("install");
    let prefix = work.join("pm2 prefix");
    let cargo_bin = Path::new(env!("CARGO")).parent().expect("cargo's directory");
    let path = std::env::join_paths(
        std::iter::once(cargo_bin.to_path_buf())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let mut install = Command::new(workspace().join("run"));
    install
        .arg("install")
        .arg(&prefix)
        .env("PATH", path)
        .env("CARGO_TARGET_DIR", bin_dir().parent().expect("target dir"));
    let listing = check_output(install);
    for f in ["bin/mpicc", "bin/mpiexec -> madrun", "include/mpi.h", "lib/libmpich.so.12 -> libmpi.so"] {
        assert!(listing.contains(&format!("{}/{f}", prefix.display())), "no {f} in:\n{listing}");
    }

    // Our wrapper, installed: the header and library of the prefix, found by rpath at run time.
    let mpicc = prefix.join("bin/mpicc");
    let mut show = Command::new(&mpicc);
    show.args(["-show", "x.c"]).env_remove("MADMPI_CC");
    let line = check_output(show);
    let lib = prefix.join("lib");
    for part in [format!("'-I{}/include'", prefix.display()), format!("'-L{}'", lib.display())] {
        assert!(line.contains(&part), "installed `mpicc -show` gave {line:?}, without {part:?}");
    }
    let ours = work.join("ring.ours");
    compile(&mpicc, &ours);
    let loads = ldd_line(&ours, "libmpi.so.12", &[]);
    assert!(loads.contains(&*lib.join("libmpi.so.12").to_string_lossy()), "{loads}");
    let done = run_ring(&prefix.join("bin/mpiexec"), "-np", &ours, &[]);
    assert_ring_passed(&done, "ring (installed mpicc, installed mpiexec -np 3)");

    // MPICH's wrapper and launcher, our library.
    let mpich = work.join("ring.mpich");
    compile(&mpich_cc, &mpich);
    let env = [("LD_LIBRARY_PATH", lib.as_os_str())];
    let loads = ldd_line(&mpich, "libmpich.so.12", &env);
    assert!(loads.contains(&*lib.join("libmpich.so.12").to_string_lossy()), "{loads}");
    let done = run_ring(&hydra, "-n", &mpich, &env);
    assert_ring_passed(&done, "ring (mpicc.mpich, LD_LIBRARY_PATH, mpiexec.hydra -n 3)");
    std::fs::remove_dir_all(&work).unwrap();
}
