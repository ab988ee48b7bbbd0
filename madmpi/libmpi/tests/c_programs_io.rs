//! The MPI-IO programs of `tests/c/` (`io_*.c`) against `libmpi.so`, checked against MPICH's
//! own library (ROMIO) byte for byte.
//!
//! Each program is first built with `mpicc.mpich` and run under `mpiexec.hydra` on MPICH's
//! library (no `LD_LIBRARY_PATH`) at 1, 2 and 4 processes (`io_atomic`: 2 and 4), each run
//! writing into a directory of its own (under `target/<profile>/c-programs-io/data`): every
//! rank must pass all its checks there, and the files the program leaves named `*.cmp` (those
//! whose content the program makes deterministic) are the reference. Then, as in `c_programs.rs`, the program is
//! built with our `mpicc` and with `mpicc.mpich`, both run on our library (`LD_LIBRARY_PATH` on
//! the directory of `libmpi.so`, with its soname links `libmpi.so.12` and `libmpich.so.12`)
//! under madrun and under Hydra at the same counts, each run writing into a fresh directory:
//! every rank passes, and the run leaves the same `*.cmp` files as MPICH's run at that count,
//! with the same bytes.
//!
//! The programs say in their header what MPICH 4.0.2 does differently from the standard and
//! which checks they therefore make on MadMPI's library only. A missing compiler or launcher
//! fails the test with the Debian package to install: these tests are never skipped.

mod common;

use common::{Build, Launcher, Library, assert_loads_ours, assert_passed, run_job};
use std::path::{Path, PathBuf};
use tests::jobs::{Done, bin_dir, serial};

/// Where the executables and the data directories go: `target/<profile>/c-programs-io`.
fn out_dir() -> PathBuf {
    let dir = bin_dir().join("c-programs-io");
    std::fs::create_dir_all(&dir).expect("create the output directory");
    dir
}

/// A new empty directory `out_dir()/data/<name>/<run>`.
fn fresh_dir(name: &str, run: &str) -> PathBuf {
    let dir = out_dir().join("data").join(name).join(run);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    dir
}

/// Runs `exe <data>` as an `n`-process job under `launcher` on `library`.
fn run_io_job(launcher: Launcher, exe: &Path, data: &Path, n: u32, library: Library) -> Done {
    run_job(launcher, exe, [data], n, library, &[])
}

/// The `*.cmp` files of `dir`, sorted by name.
fn compared_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cmp"))
        .collect();
    names.sort();
    names
}

/// `dir` holds the `*.cmp` files of `reference`, byte for byte, and no other.
fn assert_same_files(what: &str, reference: &Path, dir: &Path) {
    let theirs = compared_files(reference);
    assert_eq!(compared_files(dir), theirs, "{what}: the files compared ({})", dir.display());
    for name in &theirs {
        let want = std::fs::read(reference.join(name)).expect("read MPICH's file");
        let got = std::fs::read(dir.join(name)).expect("read our file");
        if got != want {
            let at = want.iter().zip(&got).position(|(a, b)| a != b).unwrap_or(want.len().min(got.len()));
            let show = |b: &[u8]| -> String {
                b.iter().skip(at).take(16).map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(" ")
            };
            panic!(
                "{what}: {name} differs from MPICH's: {} bytes (MPICH's: {}), first difference at byte {at}:\n  \
                 MPICH's: {}\n  ours:    {}\n(files in {} and {})",
                got.len(),
                want.len(),
                show(&want),
                show(&got),
                reference.display(),
                dir.display()
            );
        }
    }
}

/// Runs I/O program `name` at each count of `counts` on MPICH's library, then (both builds, both
/// launchers) on ours: every run passes all its checks and leaves the `*.cmp` files of MPICH's
/// run at that count (at least `min_compared` of them), byte for byte.
fn io_passes_and_writes_mpichs_bytes(name: &str, counts: &[u32], min_compared: usize) {
    let _s = serial();
    let mpich_exe = common::compile(name, Build::Mpich, &out_dir());
    let mut references = Vec::new();
    for &n in counts {
        let reference = fresh_dir(name, &format!("n{n}-on-mpichs-library"));
        let done = run_io_job(Launcher::Hydra, &mpich_exe, &reference, n, Library::Mpichs);
        assert_passed(&format!("{name} at {n} processes on MPICH's library"), &done, n);
        let compared = compared_files(&reference);
        assert!(compared.len() >= min_compared, "{name} at {n}: MPICH's run left only {compared:?}");
        references.push((n, reference));
    }

    let ours = common::compile(name, Build::Ours, &out_dir());
    assert_loads_ours(&ours, "libmpi.so.12");
    assert_loads_ours(&mpich_exe, "libmpich.so.12");
    for (n, reference) in &references {
        for (build, exe) in [(Build::Ours, &ours), (Build::Mpich, &mpich_exe)] {
            for launcher in [Launcher::Madrun, Launcher::Hydra] {
                let what = format!("{name} at {n} processes ({build:?} build, {launcher:?})");
                let dir = fresh_dir(name, &format!("n{n}-{build:?}-build-{launcher:?}").to_lowercase());
                let done = run_io_job(launcher, exe, &dir, *n, Library::Ours);
                assert_passed(&what, &done, *n);
                assert_same_files(&what, reference, &dir);
            }
        }
    }
}

/// A test per program: `test_name: "program", min_compared;` is `#[test] fn test_name()`
/// running [`io_passes_and_writes_mpichs_bytes`]`("program", &[1, 2, 4], min_compared)`, with the
/// attributes (the doc) written before it; `test_name: "program" at [counts], min_compared;` runs
/// it at other counts.
macro_rules! io_tests {
    ($($(#[$attr:meta])* $test:ident: $program:literal $(at $counts:tt)?, $min_compared:literal;)+) => {
        $(
            $(#[$attr])*
            #[test]
            fn $test() {
                io_passes_and_writes_mpichs_bytes($program, &io_tests!(@counts $($counts)?), $min_compared);
            }
        )+
    };
    (@counts) => { [1, 2, 4] };
    (@counts $counts:tt) => { $counts };
}

io_tests! {
    /// Opening and closing with every access mode on `MPI_COMM_SELF` and `MPI_COMM_WORLD` (create,
    /// exclusive, read-only, write-only, delete on close, append, unique open), the amode and group
    /// of a file, sizes, preallocation, sync and delete, the individual pointer and its seeks, byte
    /// offsets and type extents through views, status counts of short reads, Fortran handles and
    /// info objects; the shared file's bytes are MPICH's.
    files_open_in_every_mode_and_keep_their_sizes_pointers_and_counts: "io_basic", 1;

    /// File views of derived datatypes (a resized vector, row-block and checkerboard subarrays, a
    /// darray, a struct with holes) written independently and collectively, read back through other
    /// views and into derived memory types; `get_view` gives equivalent types; `set_view` resets the
    /// pointers. Every file holds MPICH's bytes.
    file_views_of_derived_datatypes_place_each_ranks_data_where_mpich_does: "io_views", 5;

    /// The shared file pointer: `write_shared` from every rank lands each record exactly once,
    /// `read_shared` hands each record to one reader, `write_ordered`/`read_ordered` go in rank order
    /// (the ordered file is MPICH's byte for byte), `seek_shared` and the individual pointer apart.
    shared_file_pointers_hand_out_each_record_once_and_ordered_calls_go_in_rank_order: "io_shared", 1;

    /// Nonblocking I/O (`iwrite_at`, `iread`, `iwrite_all`, `iread_at_all`, `iwrite_shared` ...)
    /// completed by `MPI_Wait`, `MPI_Waitall` and `MPI_Test` loops, split collectives (`_begin`/`_end`,
    /// ordered too), and a 4 MiB write overlapped with computation: the file is MPICH's.
    nonblocking_and_split_collective_io_complete_with_the_data_of_blocking_calls: "io_nonblocking", 1;

    /// Atomic mode: concurrent writes through overlapping strided views leave each overlap whole from
    /// one writer, as if they had run one after the other, and a write is seen after a barrier; in
    /// nonatomic mode after sync-barrier-sync.
    atomic_mode_keeps_concurrent_overlapping_writes_whole: "io_atomic" at [2, 4], 1;

    /// Failing I/O calls return the error classes MPI and MPICH give (missing file, existing file,
    /// access modes, read-only and write-only files, unknown and duplicate data representations,
    /// invalid arguments, seeking a sequential file) under the default `MPI_ERRORS_RETURN`; user
    /// file error handlers are called with the file and the code, and `MPI_FILE_NULL`'s handler
    /// serves failing opens and is inherited by the files opened afterwards.
    io_errors_return_their_classes_and_reach_file_error_handlers: "io_errors", 0;

    /// Data representations: "native" files hold the memory bytes, "internal" reads back,
    /// "external32" files hold big-endian bytes (MPICH's, byte for byte) with the external32 type
    /// extents, and a representation registered with conversion functions stores ints byte-swapped
    /// (on our library only: MPICH 4.0.2 refuses conversion functions).
    native_external32_and_user_representations_write_the_bytes_mpi_defines: "io_datarep", 2;

    /// The large-count (`_c`) forms of the I/O calls with small counts, every access family, with
    /// `MPI_Get_count_c`/`MPI_Get_elements_c` on their statuses: the file is MPICH's.
    large_count_io_calls_write_and_read_as_their_int_twins: "io_large", 1;
}
