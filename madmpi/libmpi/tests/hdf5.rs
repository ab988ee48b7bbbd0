//! Parallel HDF5 on our library: `tests/hdf5/hdf5_io.c`, built against Debian's
//! `libhdf5-mpich` (MPICH's ABI, linked with `mpicc.mpich`), writes a dataset collectively from
//! 4 processes and reads it back from 2. It runs on MPICH's own library, then on ours under
//! madrun and under Hydra (`LD_LIBRARY_PATH` on our `libmpich.so.12`): every run passes its
//! checks, and the files are identical byte for byte (the program turns off HDF5's timestamps).
//!
//! The HDF5 headers come from the system or from `target/hdf5-dev` (`./run test` unpacks them
//! there when the -dev package cannot be installed); neither is a failure naming the fix: the
//! test is never skipped.

// The program is built here, not by the C programs' `compile`: that part of the module is unused.
#[allow(dead_code)]
mod common;

use common::{Launcher, Library, assert_passed, run_job};
use std::path::{Path, PathBuf};
use std::process::Command;
use tests::jobs::{mpi_lib_dir, require, serial};

fn headers() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let candidates =
        [PathBuf::from("/usr/include/hdf5/mpich"), workspace.join("target/hdf5-dev/usr/include/hdf5/mpich")];
    candidates.into_iter().find(|d| d.join("hdf5.h").exists()).unwrap_or_else(|| {
        panic!("parallel HDF5's headers are missing: run ./run test (it installs libhdf5-mpich-dev)")
    })
}

fn compile(out: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hdf5/hdf5_io.c");
    let exe = out.join("hdf5_io");
    let done = Command::new(require("mpicc.mpich", "libmpich-dev"))
        .args(["-Wall", "-Wextra", "-Werror", "-g", "-I"])
        .arg(headers())
        .arg(&src)
        .arg("-l:libhdf5_mpich.so.103")
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run mpicc.mpich");
    assert!(done.status.success(), "compiling hdf5_io.c: {}", String::from_utf8_lossy(&done.stderr));
    exe
}

#[test]
fn a_parallel_hdf5_program_built_for_mpich_writes_the_same_file_on_our_library() {
    let _s = serial();
    let out = mpi_lib_dir().join("hdf5-test");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let exe = compile(&out);
    let n = 4;
    let job = |launcher, file: &str, library| run_job(launcher, &exe, [out.join(file)], n, library, &[]);
    assert_passed("on MPICH's library", &job(Launcher::Hydra, "mpich.h5", Library::Mpichs), n);
    assert_passed("on ours under madrun", &job(Launcher::Madrun, "madrun.h5", Library::Ours), n);
    assert_passed("on ours under Hydra", &job(Launcher::Hydra, "hydra.h5", Library::Ours), n);
    let reference = std::fs::read(out.join("mpich.h5")).unwrap();
    for f in ["madrun.h5", "hydra.h5"] {
        assert!(std::fs::read(out.join(f)).unwrap() == reference, "{f} differs from MPICH's file");
    }
}
