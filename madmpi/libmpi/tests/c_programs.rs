//! The C programs of `tests/c/` against `libmpi.so`, as real jobs.
//!
//! Each program is compiled twice: (a) with our `mpicc` wrapper (crate tools; the build tree's,
//! so madmpi's `include/mpi.h` and `-lmpi`); (b) with `mpicc.mpich` against MPICH's header, linked with MPICH's `-lmpich`. Both
//! run with `LD_LIBRARY_PATH` on the directory of our `libmpi.so` and its soname links
//! `libmpi.so.12` and `libmpich.so.12`, so (b), an MPICH binary, runs on this library (checked
//! with `ldd`, and by the programs, which print `MPI_Get_library_version`). Every build runs
//! under madrun and under MPICH's `mpiexec.hydra`, with 2 processes (4 for the programs that
//! split communicators).
//!
//! A missing compiler or launcher fails the test with the Debian package to install: these
//! tests are never skipped.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;
use tests::jobs::{Done, build_mpi_tree, madrun_path, require, run_limited, serial};

/// A job that takes longer is a hang. Generous: `thread_multiple` (2 ranks × 4 threads × 20,000
/// messages) in a debug build under Hydra takes 10–15 s alone and was seen above 60 s on a loaded
/// 2-core machine.
const HANG: Duration = Duration::from_secs(120);

/// The source directory of the C programs.
fn c_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c")
}

/// The directory of `libmpi.so` (built here, in this test's profile) with its soname links.
fn lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = build_mpi_tree();
        for link in ["libmpi.so.12", "libmpich.so.12"] {
            let path = dir.join(link);
            if std::fs::read_link(&path).ok().as_deref() != Some(Path::new("libmpi.so")) {
                let _ = std::fs::remove_file(&path);
                if let Err(e) = std::os::unix::fs::symlink("libmpi.so", &path) {
                    // Another test process may have made it at the same time.
                    assert!(e.kind() == std::io::ErrorKind::AlreadyExists, "linking {}: {e}", path.display());
                }
            }
        }
        dir
    })
}

/// How a program was built.
#[derive(Clone, Copy, Debug)]
enum Build {
    /// Our `mpicc`: madmpi's header, `-lmpi`.
    Ours,
    /// `mpicc.mpich` with MPICH's header, `-lmpich`.
    Mpich,
}

/// Compiles `tests/c/<name>.c` with `build`; the executable.
fn compile(name: &str, build: Build) -> PathBuf {
    let lib = lib_dir();
    let out_dir = lib.join("c-programs");
    std::fs::create_dir_all(&out_dir).expect("create the output directory");
    let src = c_dir().join(format!("{name}.c"));
    // gcc 12 warns about MPI_STATUSES_IGNORE passed for an array parameter, with either header.
    let flags = ["-Wall", "-Wextra", "-Werror", "-Wno-stringop-overflow", "-g", "-pthread"];
    let (exe, mut cmd) = match build {
        Build::Ours => {
            require("cc", "build-essential"); // what mpicc runs
            let mut c = Command::new(lib.join("mpicc"));
            c.args(flags).arg(&src);
            (out_dir.join(format!("{name}.ours")), c)
        }
        Build::Mpich => {
            let mut c = Command::new(require("mpicc.mpich", "libmpich-dev"));
            c.args(flags).arg(&src);
            (out_dir.join(format!("{name}.mpich")), c)
        }
    };
    cmd.arg("-I").arg(c_dir()).arg("-o").arg(&exe);
    let out = cmd.output().expect("run the C compiler");
    assert!(
        out.status.success(),
        "compiling {name} ({build:?}) failed: {cmd:?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Checks with `ldd` that `exe` loads its MPI library from [`lib_dir`].
fn assert_loads_ours(exe: &Path, soname: &str) {
    let out = Command::new(require("ldd", "libc-bin"))
        .arg(exe)
        .env("LD_LIBRARY_PATH", lib_dir())
        .output()
        .expect("run ldd");
    let text = String::from_utf8_lossy(&out.stdout);
    let line =
        text.lines().find(|l| l.contains(soname)).unwrap_or_else(|| panic!("{soname} not in ldd:\n{text}"));
    let expected = lib_dir().join(soname);
    assert!(
        line.contains(&*expected.to_string_lossy()),
        "{} loads {line}, not {}",
        exe.display(),
        expected.display()
    );
}

/// The launchers a program runs under.
#[derive(Clone, Copy, Debug)]
enum Launcher {
    Madrun,
    Hydra,
}

/// Runs `exe args` as a 2-process job under `launcher`, on our library.
fn run(launcher: Launcher, exe: &Path, args: &[&str]) -> Done {
    run_on(launcher, exe, args, 2)
}

/// Runs `exe args` as an `n`-process job under `launcher`, on our library.
fn run_on(launcher: Launcher, exe: &Path, args: &[&str], n: u32) -> Done {
    let mut cmd = match launcher {
        Launcher::Madrun => Command::new(madrun_path()),
        Launcher::Hydra => Command::new(require("mpiexec.hydra", "mpich")),
    };
    cmd.arg("-n")
        .arg(n.to_string())
        .arg(exe)
        .args(args)
        .env("LD_LIBRARY_PATH", lib_dir())
        .env_remove("PM2_PMI");
    run_limited(cmd, None, HANG, |_| {})
}

/// Both builds of `name`, checked to load our library.
fn both_builds(name: &str) -> [(Build, PathBuf); 2] {
    let ours = compile(name, Build::Ours);
    assert_loads_ours(&ours, "libmpi.so.12");
    let mpich = compile(name, Build::Mpich);
    assert_loads_ours(&mpich, "libmpich.so.12");
    [(Build::Ours, ours), (Build::Mpich, mpich)]
}

/// Runs program `name` (both builds, both launchers): every rank must pass all its checks.
fn passes(name: &str) -> Vec<Done> {
    passes_on(name, 2)
}

/// [`passes`] with `n` processes.
fn passes_on(name: &str, n: u32) -> Vec<Done> {
    let _s = serial();
    let mut runs = Vec::new();
    for (build, exe) in both_builds(name) {
        for launcher in [Launcher::Madrun, Launcher::Hydra] {
            let done = run_on(launcher, &exe, &[], n);
            let what = format!("{name} ({build:?} build, {launcher:?})");
            assert_eq!(done.code, Some(0), "{what}: {done:?}");
            assert!(!done.stdout.contains("FAIL"), "{what}: {done:?}");
            for rank in 0..n {
                assert!(done.stdout.contains(&format!("OK {rank}: all checks passed")), "{what}: {done:?}");
            }
            runs.push(done);
        }
    }
    runs
}

#[test]
fn p2p_basic_passes_with_both_headers_under_both_launchers() {
    for done in passes("p2p_basic") {
        assert!(done.stdout.contains("running on MadMPI's library): MadMPI "), "{done:?}");
    }
}

#[test]
fn threads_communicate_at_once_under_mpi_thread_multiple() {
    passes("threads");
}

/// 2 ranks x 4 threads, 10,000 messages per thread and phase (distinct tags, then any tag
/// matched by content), eager and rendezvous sizes, blocking and nonblocking calls mixed.
#[test]
fn many_threads_exchange_many_messages_with_distinct_and_any_tags() {
    for done in passes("thread_multiple") {
        assert!(done.stdout.contains("every one of the 40000 messages received exactly once"), "{done:?}");
    }
}

#[test]
fn derived_datatypes_travel_without_copies() {
    passes("datatypes");
}

#[test]
fn every_datatype_constructor_communicates_its_type_map() {
    passes("types_ctor");
}

#[test]
fn datatype_queries_envelopes_contents_and_names() {
    passes("types_query");
}

#[test]
fn datatype_pack_unpack_and_element_counts() {
    passes("pack");
}

#[test]
fn profiling_tools_interpose_mpi_and_reach_pmpi() {
    passes("profiling");
}

#[test]
fn communicators_are_duplicated_split_created_named_and_freed() {
    passes_on("comm_mgmt", 4);
}

#[test]
fn group_calls_give_mpichs_groups_and_errors() {
    passes_on("groups", 4);
}

#[test]
fn attributes_are_copied_and_deleted_by_their_callbacks() {
    passes("attrs");
}

#[test]
fn user_error_handlers_are_called_counted_and_inherited() {
    passes("errhandlers");
}

#[test]
fn user_error_codes_hand_set_statuses_and_mpi1_names() {
    passes("status_errors_legacy");
}

#[test]
fn threads_create_and_free_communicators_at_once() {
    passes("comm_threads");
}

#[test]
fn fatal_errors_and_abort_end_the_job() {
    let _s = serial();
    let cases = [
        ("before-init", 1, "MPI error in MPI_Send: MPI_ERR_OTHER: MPI is not initialized"),
        ("bad-rank", 1, "MPI error in MPI_Send: MPI_ERR_RANK: invalid rank 99 (communicator of size 2)"),
        ("abort", 7, "MPI_Abort(MPI_COMM_WORLD, 7) called by rank 1"),
        ("call-errhandler", 1, "MPI error in MPI_Comm_call_errhandler: MPI_ERR_TAG: invalid tag"),
    ];
    for (build, exe) in both_builds("errors_fatal") {
        for launcher in [Launcher::Madrun, Launcher::Hydra] {
            for (mode, code, message) in cases {
                let done = run(launcher, &exe, &[mode]);
                let what = format!("errors_fatal {mode} ({build:?} build, {launcher:?})");
                assert_eq!(done.code, Some(code), "{what}: {done:?}");
                assert!(done.stderr.contains(message), "{what}: {done:?}");
                assert!(!done.stdout.contains("REACHED"), "{what}: {done:?}");
            }
        }
    }
}

#[test]
fn send_modes_buffered_sends_and_sendrecv_replace() {
    passes("p2p_modes");
}

#[test]
fn waits_and_tests_on_several_requests_and_cancellation() {
    passes("multiwait");
}

#[test]
fn persistent_requests_start_again_and_again() {
    passes("persistent");
}

/// Every info call with its error paths, `MPI_INFO_ENV`, communicator hints, threads sharing
/// info objects, and info objects used before `MPI_Init` and after `MPI_Finalize`.
#[test]
fn info_objects_keep_their_keys_in_order_and_work_outside_init_and_finalize() {
    passes("info");
}

#[test]
fn matched_probes_under_mpi_thread_multiple() {
    passes("mprobe");
}

/// Barrier, broadcast, reduce and allreduce (blocking, nonblocking and overlapped, in place),
/// every predefined operation, a non-commutative user operation, a vector datatype, and the
/// argument errors, at 1, 2, 3, 4 and 8 processes (the program also passes on MPICH's library).
#[test]
fn collectives_and_reduction_operations_match_local_references() {
    for n in [1, 2, 3, 4, 8] {
        passes_on("coll_basic", n);
    }
}

/// Every predefined reduction operation on every predefined type MPI defines it for (pair types
/// for MAXLOC/MINLOC included), through Allreduce, Reduce and Reduce_local, in place and not,
/// against local references; the combinations MPI does not define return MPI_ERR_OP.
#[test]
fn every_operation_on_every_type_matches_local_references() {
    for n in [1, 2, 3, 5, 8] {
        passes_on("coll_ops", n);
    }
}

/// Gather, scatter, allgather, alltoall (and their `v` forms), alltoallw, reduce-scatter (block), scan and
/// exscan: blocking, nonblocking and overlapped, in place and not, uneven counts with zeros, a
/// vector receive type, and argument errors, at 1, 2, 3 and 4 processes (the program also
/// passes on MPICH's library).
#[test]
fn gather_family_and_prefix_reductions_match_local_references() {
    for n in [1, 2, 3, 4] {
        passes_on("coll_more", n);
    }
}

#[test]
fn groups_accept_and_connect_through_a_published_port_and_processes_join_over_a_socket() {
    for n in [2, 3, 4] {
        passes_on("dynamic_ports", n);
    }
}

/// MPI_Comm_spawn and _spawn_multiple under madrun (parents of 1 and 2 spawning 2, then 1 + 2
/// children that talk with them, merge and disconnect); under Hydra the call fails cleanly with
/// MPI_ERR_SPAWN.
///
/// The children exit right after disconnecting, while a parent may still be a round behind in
/// the disconnect's allreduce: what they sent must still be received (it used to fail or hang
/// ~1 run in 12 under load).
#[test]
fn parents_spawn_children_that_talk_merge_and_disconnect() {
    let _s = serial();
    for (build, exe) in both_builds("spawn") {
        for n in [1, 2] {
            let done = run_on(Launcher::Madrun, &exe, &[], n);
            let what = format!("spawn ({build:?} build, madrun, {n} parents)");
            assert_eq!(done.code, Some(0), "{what}: {done:?}");
            assert!(!done.stdout.contains("FAIL"), "{what}: {done:?}");
            for rank in 0..n {
                assert!(done.stdout.contains(&format!("OK {rank}: all checks passed\n")), "{what}: {done:?}");
            }
            // 2 children, then 3: each says so.
            assert_eq!(done.stdout.matches("all checks passed (child)").count(), 5, "{what}: {done:?}");
        }
        let done = run_on(Launcher::Hydra, &exe, &[], 2);
        assert_eq!(done.code, Some(0), "spawn ({build:?} build, Hydra): {done:?}");
        assert!(
            done.stdout.contains("spawn unsupported: MPI_Comm_spawn fails with MPI_ERR_SPAWN"),
            "{done:?}"
        );
    }
}

#[test]
fn intercommunicators_are_created_merged_split_and_talk_across() {
    for n in [1, 2, 3, 5] {
        passes_on("intercomm", n);
    }
}
