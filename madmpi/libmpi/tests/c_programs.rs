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

mod common;

use common::{Build, HANG, Launcher, Library, assert_loads_ours, assert_passed, run_job};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use tests::jobs::{Done, mpi_lib_dir, run_limited, serial};

/// Compiles `tests/c/<name>.c` with `build` (into `c-programs` beside `libmpi.so`); the
/// executable.
fn compile(name: &str, build: Build) -> PathBuf {
    common::compile(name, build, &mpi_lib_dir().join("c-programs"))
}

/// Runs `exe args` as a 2-process job under `launcher`, on our library.
fn run(launcher: Launcher, exe: &Path, args: &[&str]) -> Done {
    run_on(launcher, exe, args, 2)
}

/// Runs `exe args` as an `n`-process job under `launcher`, on our library.
fn run_on(launcher: Launcher, exe: &Path, args: &[&str], n: u32) -> Done {
    run_with(launcher, exe, args, n, &[])
}

/// [`run_on`] with `env` added to the job's environment.
fn run_with(launcher: Launcher, exe: &Path, args: &[&str], n: u32, env: &[(&str, &str)]) -> Done {
    run_job(launcher, exe, args, n, Library::Ours, env)
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
    passes_with(name, n, &[])
}

/// [`passes_on`] with `env` added to each job's environment.
fn passes_with(name: &str, n: u32, env: &[(&str, &str)]) -> Vec<Done> {
    let _s = serial();
    let mut runs = Vec::new();
    for (build, exe) in both_builds(name) {
        for launcher in [Launcher::Madrun, Launcher::Hydra] {
            let done = run_with(launcher, &exe, &[], n, env);
            assert_passed(&format!("{name} ({build:?} build, {launcher:?})"), &done, n);
            runs.push(done);
        }
    }
    runs
}

/// [`passes_on`] at each count of `counts`, then the MPICH build on MPICH's own library at
/// `mpich_n` processes: every rank passes there too.
fn passes_here_and_on_mpichs_library(name: &str, counts: &[u32], mpich_n: u32) {
    for &n in counts {
        passes_on(name, n);
    }
    let _s = serial();
    let mpich = run_on_mpichs_library(&compile(name, Build::Mpich), mpich_n);
    assert_eq!(mpich.code, Some(0), "on MPICH's library: {mpich:?}");
    let last = format!("OK {}: all checks passed", mpich_n - 1);
    assert!(mpich.stdout.contains(&last) && !mpich.stdout.contains("FAIL"), "{mpich:?}");
}

#[test]
fn p2p_basic_passes_with_both_headers_under_both_launchers() {
    for done in passes("p2p_basic") {
        assert!(done.stdout.contains("running on MadMPI's library): MadMPI "), "{done:?}");
    }
}

/// The express path (builtin datatypes: `MPI_Send`, `MPI_Isend` completing at once, `MPI_Recv`)
/// completes as the general path does (a derived type of the same type map): statuses, errors,
/// truncation, any source, probes, every completion call on a send request and on a receive
/// of the express request table (`MPI_Wait`/`MPI_Waitall` complete it there, the other calls
/// promote it), declined arguments.
#[test]
fn express_calls_complete_as_the_general_path_does() {
    passes("p2p_express");
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
/// Barrier, broadcast and allreduce where even ranks take the express path (builtin type) and
/// odd ranks the general one (a derived type of the same type map) for the same calls; with
/// nonblocking collectives in flight, in place, a non-commutative operation, a split
/// communicator.
#[test]
fn express_collectives_match_the_general_path_on_the_wire() {
    for n in [1, 2, 3, 4, 8] {
        passes_on("coll_express", n);
    }
}

/// The node-local collectives (a segment the ranks share): thousands of back-to-back calls,
/// every root, sizes across the 1 KiB limit, predefined types beside scattered derived ones
/// (the general path must take the same road), non-commutative operations in rank order, the
/// same bits at every rank, nonblocking collectives in flight, duplicated, split and freed
/// communicators; at 1, 2, 3, 4 and 8 processes, and again with the path turned off.
#[test]
fn node_local_collectives_match_local_references() {
    for n in [1, 2, 3, 8] {
        passes_on("coll_shared", n);
    }
    // Taken indeed: each of the 4 ranks reports the areas it made (world, dup, split, three
    // short-lived dups), none in the run where the path is off. Over shared memory (CI runs
    // these tests again over udp, where no rank may share memory: none is made then).
    let log = ("PM2_LOG", "madmpi::coll::shared=info,warn");
    for done in passes_with("coll_shared", 4, &[log, ("NMAD_DRIVERS", "shm")]) {
        let made = done.stderr.matches("collectives: node-local area for the ").count();
        assert_eq!(made, 4 * 6, "{done:?}");
        assert!(!done.stderr.contains("fenced publishes"), "membarrier refused: {done:?}");
    }
    for done in passes_with("coll_shared", 3, &[("MADMPI_COLL_SHARED", "0"), log]) {
        assert!(!done.stderr.contains("node-local area"), "{done:?}");
    }
}

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

/// The tools information interface: every control and performance variable, category, event
/// type and source listed and found by name, MPI_T's string rules and errors, before `MPI_Init`
/// and after `MPI_Finalize`; on our library, `PIOMAN_POLICY` switched at run time, a forced
/// collective algorithm, pioman's and nmad's counters moving across an exchange and still while
/// nothing happens, a per-communicator level, and events delivered to a callback (the program
/// also passes on MPICH's library, where it checks the generic rules only).
#[test]
fn tools_interface_lists_reads_writes_and_delivers_events() {
    passes("tools");
}

#[test]
fn groups_accept_and_connect_through_a_published_port_and_processes_join_over_a_socket() {
    for n in [2, 3, 4] {
        passes_on("dynamic_ports", n);
    }
}

/// MPI_Comm_spawn and _spawn_multiple under madrun (parents of 1 and 2 spawning 2, then 1 + 2
/// children that talk with them, merge and disconnect) and under Hydra (2 parents: the children
/// are a process group of their own there, with their own key/value store); as a singleton
/// (no launcher) the call fails cleanly with MPI_ERR_SPAWN.
///
/// The children exit right after disconnecting, while a parent may still be a round behind in
/// the disconnect's allreduce: what they sent must still be received (it used to fail or hang
/// ~1 run in 12 under load). Each job's finalize must also ignore the other job's processes
/// that ended: a child that saw its parents gone used to wait for its siblings in a survivors'
/// agreement while they waited in the launcher's fence (a hang ~1 run in 7 under load).
#[test]
fn parents_spawn_children_that_talk_merge_and_disconnect() {
    let _s = serial();
    for (build, exe) in both_builds("spawn") {
        let runs = [(Launcher::Madrun, 1), (Launcher::Madrun, 2), (Launcher::Hydra, 2)];
        for (launcher, n) in runs {
            let done = run_on(launcher, &exe, &[], n);
            let what = format!("spawn ({build:?} build, {launcher:?}, {n} parents)");
            assert_eq!(done.code, Some(0), "{what}: {done:?}");
            assert!(!done.stdout.contains("FAIL"), "{what}: {done:?}");
            assert!(!done.stdout.contains("spawn unsupported"), "{what}: {done:?}");
            for rank in 0..n {
                assert!(done.stdout.contains(&format!("OK {rank}: all checks passed\n")), "{what}: {done:?}");
            }
            // 2 children, then 3: each says so.
            assert_eq!(done.stdout.matches("all checks passed (child)").count(), 5, "{what}: {done:?}");
        }
        let mut alone = Command::new(&exe);
        alone.env("LD_LIBRARY_PATH", mpi_lib_dir()).env_remove("PM2_PMI");
        let done = run_limited(alone, None, HANG, |_| {});
        assert_eq!(done.code, Some(0), "spawn ({build:?} build, singleton): {done:?}");
        assert!(
            done.stdout.contains("spawn unsupported: MPI_Comm_spawn fails with MPI_ERR_SPAWN"),
            "{done:?}"
        );
    }
}

/// Spawned children spawn in turn (a grandchild), then the parents spawn again: under both
/// launchers every job gets peer ids of its own (under Hydra, claimed in its name service by
/// whichever process spawns) and each pair of jobs talks.
#[test]
fn children_spawn_in_turn_and_parents_spawn_again_after_them() {
    let _s = serial();
    for (build, exe) in both_builds("spawn_nested") {
        for launcher in [Launcher::Madrun, Launcher::Hydra] {
            let done = run(launcher, &exe, &[]);
            let what = format!("spawn_nested ({build:?} build, {launcher:?})");
            assert_eq!(done.code, Some(0), "{what}: {done:?}");
            assert!(!done.stdout.contains("FAIL"), "{what}: {done:?}");
            for rank in 0..2 {
                assert!(done.stdout.contains(&format!("OK {rank}: all checks passed\n")), "{what}: {done:?}");
            }
            for (role, count) in [("child", 2), ("grandchild", 1), ("late", 1)] {
                let line = format!("all checks passed ({role})");
                assert_eq!(done.stdout.matches(&line).count(), count, "{what}: {done:?}");
            }
        }
    }
}

#[test]
fn intercommunicators_are_created_merged_split_and_talk_across() {
    for n in [1, 2, 3, 5] {
        passes_on("intercomm", n);
    }
}

#[test]
fn every_collective_on_an_intercommunicator_matches_local_references() {
    for n in [1, 2, 3, 5, 8] {
        passes_on("intercomm_coll", n);
    }
}

/// Generalized requests completed by other threads while MPI_Wait, MPI_Waitany, MPI_Waitall and
/// MPI_Waitsome wait (mixed with point-to-point requests); query, free and cancel call counts;
/// MPICH's poll_fn, wait_fn and request classes; error paths. The program also passes on MPICH's
/// library, with its deviations noted in the source.
#[test]
fn generalized_requests_are_completed_by_other_threads_and_call_back_as_mpi_says() {
    passes("grequest");
}

/// Partitioned sends started again and again, with 4 threads marking partitions ready in shuffled
/// order (MPI_Pready, _list, _range), received with a different partition count while
/// MPI_Parrived is polled; matching in initialization order; error paths. On MPICH's library
/// the rounds are skipped (MPICH 4.0.2 asserts in them), the rest passes.
#[test]
fn partitions_marked_ready_by_threads_arrive_as_they_go() {
    passes("partitioned");
}

/// Cartesian topologies: MPI_Dims_create (properties for 1,200 inputs, the standard's examples,
/// errors), grids, coordinates, ranks with periodic wrap, shifts, sub-grids, maps, duplicates
/// and the ranks beyond a grid, at 1, 4 and 6 processes (the program also passes on MPICH's
/// library, with its deviations skipped there).
#[test]
fn cartesian_topologies_give_hand_computed_coordinates_and_neighbours() {
    for n in [1, 4, 6] {
        passes_on("topo_cart", n);
    }
}

/// Graph and distributed-graph topologies: neighbour lists and weights, edges stated by other
/// ranks, MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY, truncated lists, errors, at 1, 4 and 6 processes
/// (also passes on MPICH's library).
#[test]
fn graph_topologies_give_their_edges_and_weights() {
    for n in [1, 4, 6] {
        passes_on("topo_graph", n);
    }
}

/// Neighbourhood collectives (allgather(v), alltoall(v, w); blocking, nonblocking and `_c`)
/// over a 2-D grid with edges, a ring graph and a distributed graph with repeated edges, at 1,
/// 2, 4 and 6 processes (also passes on MPICH's library where its pairing agrees).
#[test]
fn neighbourhood_collectives_reach_the_neighbours_mpi_defines() {
    for n in [1, 2, 4, 6] {
        passes_on("topo_neighbor", n);
    }
}

/// MPI_Dims_create gives MPICH's answer for each of 2,900 inputs: the program runs on MPICH's own
/// library (under Hydra, without our library on the path), then on ours (both launchers).
#[test]
fn dims_create_answers_as_mpich_does() {
    let _s = serial();
    let exe = compile("topo_dims", Build::Mpich);
    let mpich = run_on_mpichs_library(&exe, 1);
    assert_eq!(mpich.code, Some(0), "on MPICH's library: {mpich:?}");
    assert!(mpich.stdout.lines().count() >= 2500, "{mpich:?}");
    for launcher in [Launcher::Madrun, Launcher::Hydra] {
        let ours = run_on(launcher, &exe, &[], 1);
        assert_eq!(ours.code, Some(0), "{launcher:?}: {ours:?}");
        for (m, o) in mpich.stdout.lines().zip(ours.stdout.lines()) {
            assert_eq!(o, m, "ours (left) and MPICH's (right) differ ({launcher:?})");
        }
        assert_eq!(ours.stdout.lines().count(), mpich.stdout.lines().count(), "{launcher:?}");
    }
}

/// Addresses and `MPI_Aint` arithmetic, the MPI-1 names, `MPI_Alloc_mem`/`MPI_Free_mem`,
/// distributed arrays, `MPI_Type_match_size` and the f90 types, datatype attributes and the
/// large-count queries (the program also passes on MPICH's library).
#[test]
fn addresses_memory_darrays_f90_types_and_type_attributes() {
    passes("types_more");
}

/// MPICH's Fortran named types from C: names, sizes, envelopes, external32 sizes, a send/recv,
/// an allreduce per type class and MINLOC on `MPI_2DOUBLE_PRECISION`; the program also passes
/// on MPICH's own library.
#[test]
fn fortran_named_types_work_from_c() {
    passes_on("types_fortran", 2);
    let _s = serial();
    let reference = run_on_mpichs_library(&compile("types_fortran", Build::Mpich), 2);
    assert!(reference.stdout.contains("OK 0: all checks passed"), "on MPICH's library: {reference:?}");
}

/// Every `_c` datatype constructor against its `int` twin, then 2^31 + 7 chars: a contiguous
/// type, `MPI_Pack_c`/`MPI_Unpack_c`, and one message whose `MPI_Get_count_c` and
/// `MPI_Get_elements_c` are exact while the `int` forms say `MPI_UNDEFINED` (about 6 GiB).
#[test]
fn large_count_forms_go_beyond_two_gigabytes() {
    passes("types_large");
}

/// Runs `exe`, an MPICH build, as an `n`-process job on MPICH's own library (no
/// `LD_LIBRARY_PATH`): the reference answers of a program.
fn run_on_mpichs_library(exe: &Path, n: u32) -> Done {
    run_job(Launcher::Hydra, exe, std::iter::empty::<&str>(), n, Library::Mpichs, &[])
}

/// Every predefined type (and a struct) through `MPI_Pack_external`/`MPI_Unpack_external`: the
/// bytes (the `X32` lines of rank 0) must be those MPICH's own library writes for the same
/// program, for every type MPICH handles.
#[test]
fn external32_bytes_match_mpichs_and_come_back() {
    let runs = passes("external32");
    let _s = serial();
    let reference = run_on_mpichs_library(&compile("external32", Build::Mpich), 1);
    assert!(reference.stdout.contains("OK 0: all checks passed"), "on MPICH's library: {reference:?}");
    let x32 = |out: &str| -> Vec<String> {
        out.lines().filter(|l| l.starts_with("X32 ")).map(String::from).collect()
    };
    let theirs = x32(&reference.stdout);
    assert!(theirs.len() >= 30, "MPICH's bytes: {theirs:?}");
    for done in runs {
        let ours = x32(&done.stdout);
        for line in &theirs {
            assert!(ours.contains(line), "MPICH writes\n  {line}\nours:\n  {}", ours.join("\n  "));
        }
    }
}

/// Every persistent collective (MPI 4.0's `MPI_*_init`, `_c` forms included) started six times
/// with new inputs, results checked each time; `MPI_Startall` of ten at once, blocking
/// collectives between the starts, a derived datatype freed after init, the error paths; at 1,
/// 2, 3 and 4 processes. MPICH's own library fails it (deviations in the program's header).
#[test]
fn persistent_collectives_start_many_times_with_results_checked_each_time() {
    for n in [1, 2, 3, 4] {
        passes_on("coll_persistent", n);
    }
}

/// `MPI_Isendrecv(_replace)` completed by wait, test and waitany; `MPI_Bsend_init` and
/// `MPI_Rsend_init` started eight times; every point-to-point `_c` form, `MPI_Get_count_c`,
/// `MPI_Buffer_attach_c`/`detach_c`, `MPI_Op_create_c` with `MPI_Reduce_local_c`, collective
/// `_c` forms with `v` and `w` arguments; the error paths.
#[test]
fn isendrecv_persistent_buffered_and_ready_sends_and_large_count_forms() {
    passes("p2p_families");
}

/// 2^31 + 7 chars through `MPI_Send_c` / `MPI_Irecv_c` and `MPI_Bcast_c`, and through
/// `MPI_Reduce_local_c` with an `int`-length user function, called on `INT_MAX` elements at
/// most at a time (about 2 GiB per process, 4 GiB on rank 0; the program also passes on MPICH's
/// library, which skips the reduce-local part).
#[test]
fn counts_above_two_to_the_31_travel_through_the_large_count_forms() {
    passes("large_count");
}

/// Alltoallw (blocking and nonblocking) and alltoallv whose output blocks overlap (alltoallw
/// displacements in elements instead of bytes): erroneous in MPI, run by MPICH and Open MPI, run
/// here too with the higher ranks' bytes winning where blocks overlap.
#[test]
fn collectives_with_overlapping_output_blocks_run_as_elsewhere() {
    for n in [1, 3] {
        passes_on("coll_overlap", n);
    }
}
/// MPI 4.0 sessions without MPI_Init: psets, groups from them, communicators created from the
/// groups that carry messages and collectives, session error handlers, two sessions at once
/// (the program also passes on MPICH's library, the differences it documents apart); and a
/// session beside the world model, open before `MPI_Init` and after `MPI_Finalize`.
#[test]
fn sessions_make_communicators_from_psets_without_mpi_init() {
    passes_on("sessions", 3);
    passes_on("sessions_world", 3);
}

/// ULFM at 4 processes: rank 2 dies, the survivors revoke, shrink, agree and finish a
/// collective on the shrunken communicator, then MPI_Finalize among themselves. Under madrun
/// with `-disable-auto-cleanup` the victim kills itself (SIGKILL; madrun reports it and exits
/// 137). Hydra 4.0.2 ends the job when a process is killed by a signal even with
/// `-disable-auto-cleanup` (MPICH's own library too), so under Hydra the victim exits with
/// status 3 instead (Hydra exits 3). A hang is a failure ([`HANG`]).
#[test]
fn survivors_revoke_shrink_agree_and_go_on_after_a_rank_dies() {
    survivors_pass("ulfm", 4, &[0, 1, 3], &[(Launcher::Madrun, "kill", 137), (Launcher::Hydra, "exit", 3)]);
}

/// ULFM's receives from `MPI_ANY_SOURCE` at 3 processes (rank 2 dies): `MPI_Wait`/`MPI_Test`
/// return `MPIX_ERR_PROC_FAILED_PENDING` and leave the request active (it can be cancelled, or
/// match a message once the failure is acknowledged); a blocking `MPI_Recv` returns
/// `MPIX_ERR_PROC_FAILED`. Under madrun (the victim kills itself).
#[test]
fn a_receive_from_any_source_is_told_of_an_unacknowledged_failure() {
    survivors_pass("ulfm_pending", 3, &[0, 1], &[(Launcher::Madrun, "kill", 137)]);
}

/// ULFM's rule for receives from `MPI_ANY_SOURCE` in the calls on several requests, at 3
/// processes (rank 2 dies): `MPI_Waitall`/`MPI_Testall` report the completed requests and leave
/// the rest active (`MPI_ERR_IN_STATUS`, `MPIX_ERR_PROC_FAILED_PENDING` for the receive from any
/// source, `MPI_ERR_PENDING` for another), `MPI_Waitany`/`Testany`/`Waitsome`/`Testsome` name
/// that receive; after `MPIX_Comm_failure_ack` the receives match later messages. Under madrun.
#[test]
fn waits_on_several_requests_are_told_of_an_unacknowledged_failure() {
    survivors_pass("ulfm_waitall", 3, &[0, 1], &[(Launcher::Madrun, "kill", 137)]);
}

/// ULFM revocation reaches every survivor when the revoker dies mid-broadcast: at 4 processes,
/// rank 3 sends its notice to rank 0 only, then kills itself (the library's test hook
/// `MADMPI_TEST_REVOKER_DIES_AFTER=1`); ranks 1 and 2 learn from rank 0's forwarded notice.
/// Under madrun.
#[test]
fn a_revocation_notice_is_forwarded_when_the_revoker_dies_sending_it() {
    let hook = [("MADMPI_TEST_REVOKER_DIES_AFTER", "1")];
    survivors_pass_with("ulfm_forward", 4, &[0, 1, 2], &[(Launcher::Madrun, "kill", 137)], &hook);
}

/// ULFM: a rendezvous send (above the eager limit) and a synchronous send that their receiver
/// dropped unmatched when the communicator was revoked there complete with `MPIX_ERR_REVOKED`
/// instead of waiting for an answer, at 3 processes (rank 2 dies, rank 0 revokes). Under madrun.
#[test]
fn sends_waiting_for_an_answer_are_interrupted_by_a_revocation() {
    survivors_pass("ulfm_rendezvous", 3, &[0, 1], &[(Launcher::Madrun, "kill", 137)]);
}

/// Runs ULFM program `name` at `n` processes under each launcher with `-disable-auto-cleanup`
/// (with the victim's mode argument, and the launcher's expected exit code): every survivor
/// must pass all its checks, within [`HANG`].
fn survivors_pass(name: &str, n: u32, survivors: &[u32], launchers: &[(Launcher, &str, i32)]) {
    survivors_pass_with(name, n, survivors, launchers, &[]);
}

/// [`survivors_pass`] with environment variables `env` for the processes.
fn survivors_pass_with(
    name: &str,
    n: u32,
    survivors: &[u32],
    launchers: &[(Launcher, &str, i32)],
    env: &[(&str, &str)],
) {
    let _s = serial();
    for (build, exe) in both_builds(name) {
        for &(launcher, mode, code) in launchers {
            let mut cmd = launcher.command();
            cmd.args(["-disable-auto-cleanup", "-n", &n.to_string()])
                .arg(&exe)
                .arg(mode)
                .env("LD_LIBRARY_PATH", mpi_lib_dir())
                .envs(env.iter().copied())
                .env_remove("PM2_PMI");
            let done = run_limited(cmd, None, HANG, |_| {});
            let what = format!("{name} {mode} ({build:?} build, {launcher:?})");
            assert!(reports_exit(launcher, &done, code), "{what}: exit code {code} expected: {done:?}");
            assert!(!done.stdout.lines().any(|l| l.starts_with("FAIL")), "{what}: {done:?}");
            for rank in survivors {
                assert!(done.stdout.contains(&format!("OK {rank}: all checks passed")), "{what}: {done:?}");
            }
            if let Launcher::Madrun = launcher {
                assert!(
                    done.stderr.contains("the other ranks go on (-disable-auto-cleanup)"),
                    "{what}: {done:?}"
                );
            }
        }
    }
}

/// Whether the launcher reported exit code `code` (a victim's). Hydra 4.0.2 sometimes reports
/// "Hangup (signal 1)" instead: its proxy stores a provisional status 1 for a process whose PMI
/// socket closes without PMI finalize (`pmip_cb.c`), and when it reaped that process before
/// handling the socket's end (both come at its exit, the proxy handles them one event at a time,
/// `pmip.c`), the 1 overwrites the real status; mpiexec then ORs the statuses (0x300 | 1 reads
/// as signal 1). That is Hydra's report, not ours: accepted, the survivors' checks still hold.
fn reports_exit(launcher: Launcher, done: &Done, code: i32) -> bool {
    done.code == Some(code)
        || (matches!(launcher, Launcher::Hydra)
            && done.code == Some(1)
            && done.stdout.contains("EXIT STRING: Hangup (signal 1)"))
}

/// A death nobody saw (`finalize_unseen.c`, 4 processes, rank 2 exits right after `MPI_Init`,
/// the others only finalize) under both launchers with `-disable-auto-cleanup`: no survivor
/// hangs in MPI_Finalize (Hydra's fence waits for the dead: its SIGUSR1 notice must stop it, and
/// must not kill a survivor), every survivor's MPI_Finalize returns, within 30 s each.
#[test]
fn finalize_returns_after_a_death_only_the_launcher_saw() {
    let _s = serial();
    for (build, exe) in both_builds("finalize_unseen") {
        for launcher in [Launcher::Madrun, Launcher::Hydra] {
            let mut cmd = launcher.command();
            cmd.args(["-disable-auto-cleanup", "-n", "4"])
                .arg(&exe)
                .env("LD_LIBRARY_PATH", mpi_lib_dir())
                .env_remove("PM2_PMI");
            let started = std::time::Instant::now();
            let done = run_limited(cmd, None, HANG, |_| {});
            let what = format!("finalize_unseen ({build:?} build, {launcher:?})");
            assert!(started.elapsed() < Duration::from_secs(30), "{what}: took {:?}", started.elapsed());
            assert!(reports_exit(launcher, &done, 3), "{what}: exit code 3 expected: {done:?}");
            assert!(!done.stdout.lines().any(|l| l.starts_with("FAIL")), "{what}: {done:?}");
            for rank in [0, 1, 3] {
                assert!(done.stdout.contains(&format!("OK {rank}: all checks passed")), "{what}: {done:?}");
            }
        }
    }
}

/// MPI_Finalize after a peer died (`finalize_failed.c`, 2 processes, madrun
/// `-disable-auto-cleanup`): under MPI_ERRORS_RETURN it returns MPIX_ERR_PROC_FAILED instead of
/// waiting for the dead; under MPI_ERRORS_ARE_FATAL the job ends, reporting MPI_Finalize's error.
/// Both within 30 s (a wait for the dead rank would hang until [`HANG`]).
#[test]
fn finalize_after_a_peer_died_returns_or_ends_the_job() {
    let _s = serial();
    for (build, exe) in both_builds("finalize_failed") {
        for mode in ["return", "fatal"] {
            let mut cmd = Launcher::Madrun.command();
            cmd.args(["-disable-auto-cleanup", "-n", "2"])
                .arg(&exe)
                .arg(mode)
                .env("LD_LIBRARY_PATH", mpi_lib_dir())
                .env_remove("PM2_PMI");
            let started = std::time::Instant::now();
            let done = run_limited(cmd, None, HANG, |_| {});
            let what = format!("finalize_failed {mode} ({build:?} build)");
            assert!(started.elapsed() < Duration::from_secs(30), "{what}: took {:?}", started.elapsed());
            assert!(!done.stdout.contains("FAIL 0:") && !done.stdout.contains("FAIL 1:"), "{what}: {done:?}");
            assert!(done.stdout.contains("OK 1: received rank 0's message"), "{what}: {done:?}");
            if mode == "return" {
                assert!(done.stdout.contains("OK 0: all checks passed"), "{what}: {done:?}");
            } else {
                assert!(!done.stdout.contains("OK 0: all checks passed"), "{what}: {done:?}");
                assert_ne!(done.code, Some(0), "{what}: {done:?}");
                assert!(done.stderr.contains("MPI_Finalize"), "{what}: {done:?}");
            }
        }
    }
}

/// Every window flavour (create, allocate, allocate_shared, dynamic, and the `_c` forms)
/// created and freed at 1 to 4 and 8 processes, each rank with its own size and displacement unit
/// read back through the predefined attributes and MPI_Win_shared_query; group, name and info
/// hints; attach/detach with overlaps; argument errors and their classes. Also passes on MPICH's own
/// library (which skips the overlap checks: MPICH does not make them).
#[test]
fn windows_of_every_flavour_report_each_ranks_memory() {
    passes_here_and_on_mpichs_library("win_flavors", &[1, 2, 3, 4, 8], 4);
}

/// Shared windows: stores by one process are loads of the others (barrier-ordered), in
/// contiguous and noncontiguous layouts, with an empty part, at 1, 2, 4 and 8 processes; the program
/// also passes on MPICH's own library.
#[test]
fn shared_windows_are_loaded_and_stored_across_processes() {
    passes_here_and_on_mpichs_library("win_shared", &[1, 2, 4, 8], 3);
}

/// One-sided operations on every window flavour (create, allocate, dynamic) under fence,
/// post/start/complete/wait(/test), lock/unlock and lock_all + flush: put, get, accumulate,
/// get_accumulate, fetch_and_op, compare_and_swap, the request forms, derived datatypes on both
/// sides, wrong synchronization and out-of-range accesses, every value checked, at 1 to 4 and
/// 8 processes; the program also passes on MPICH's own library.
#[test]
fn one_sided_operations_on_every_flavour_and_synchronization() {
    passes_here_and_on_mpichs_library("rma_ops", &[1, 2, 3, 4, 8], 3);
}

/// Large one-sided transfers (256 KiB: sent apart from the active messages) on every flavour
/// under every synchronization: puts, gets and accumulates in flight together, a strided origin,
/// request forms, a small accumulate ordered after a large one, refusals by a dynamic window's
/// target reported at the synchronization; at 2 to 4 and 8 processes, and on MPICH's library.
#[test]
fn large_one_sided_transfers_on_every_flavour_and_synchronization() {
    passes_here_and_on_mpichs_library("rma_bulk", &[2, 3, 4, 8], 3);
}

/// Passive-target progress: the target computes 300 ms without calling MPI while the other
/// ranks lock, put, accumulate, get and unlock; each origin's epoch ends before the target's
/// computation does (applied by the target's progression, not at its next MPI call), at 2, 4
/// and 8 processes. The instants are compared, not a duration against a bound: a 5 ms bound
/// per origin failed under CI's load (5.3 ms, 2 ranks on shm), and over a network with 8 ranks
/// on 2 CPUs the target's progression thread waits for a scheduler slice at each wake-up
/// (epochs of 1–7 ms, up to 185 ms seen). There the target computes 1 s.
#[test]
fn passive_target_operations_progress_while_the_target_computes() {
    let network = std::env::var("NMAD_DRIVERS").is_ok_and(|d| !d.is_empty() && !d.starts_with("shm"));
    let cpus = std::thread::available_parallelism().map_or(1, |c| c.get()) as u32;
    for n in [2, 4, 8] {
        let oversubscribed = network && n > cpus;
        let slow = [("RMA_PASSIVE_COMPUTE_MS", "1000")];
        passes_with("rma_passive", n, if oversubscribed { &slow } else { &[] });
    }
}

#[test]
fn threads_accumulate_and_fetch_and_op_on_one_int_at_once() {
    for n in [2, 4, 8] {
        passes_on("rma_threads", n);
    }
}

/// The hot one-sided calls of the intra-node fast path against the general path's rules, with
/// threads: exclusive locks exclude across processes and threads (get + put increments exact),
/// compare_and_swap loops and fetch_and_op on one counter (exact), a window freed under another
/// thread's cached last call (`MPI_ERR_WIN`, or the new window that took its handle), and the
/// synchronization errors around them (`MPI_ERR_RMA_SYNC`, `MPI_ERR_LOCKTYPE`, range, rank), at 2,
/// 3 and 8 processes; the program also passes on MPICH's own library.
#[test]
fn hot_one_sided_calls_keep_the_rules_of_the_general_path() {
    passes_here_and_on_mpichs_library("rma_hot", &[2, 3, 8], 3);
}

/// Lock fairness with real processes: every rank but one streams shared lock / get / unlock
/// epochs on rank 0 while the other asks for an exclusive lock; it gets it (FIFO once a writer
/// waits) and the readers see its flag, on an allocated window (the ticket lock in shared
/// memory) and a created one (the target's lock queue), at 3, 4 and 8 processes; also on MPICH's
/// own library.
#[test]
fn a_writer_is_not_starved_by_a_stream_of_readers() {
    passes_here_and_on_mpichs_library("rma_fair", &[3, 4, 8], 4);
}

/// Window keyvals (delete callbacks on replacement, delete and free; failing callbacks; freed
/// keyvals) and window error handlers (fatal by default, user handlers called by failing calls
/// and MPI_Win_call_errhandler); also on MPICH's own library.
#[test]
fn window_attributes_and_error_handlers_call_back() {
    passes_here_and_on_mpichs_library("win_attrs", &[2], 2);
}

/// Errors in window calls go to the window's handler, `MPI_ERRORS_ARE_FATAL` by default even
/// when the communicator returns errors: the job ends with status 1 and the error's message.
#[test]
fn window_errors_are_fatal_by_default() {
    let _s = serial();
    for (build, exe) in both_builds("win_fatal") {
        for launcher in [Launcher::Madrun, Launcher::Hydra] {
            let done = run(launcher, &exe, &[]);
            let what = format!("win_fatal ({build:?} build, {launcher:?})");
            assert_eq!(done.code, Some(1), "{what}: {done:?}");
            assert!(
                done.stderr.contains("MPI error in MPI_Win_attach: MPI_ERR_RMA_FLAVOR"),
                "{what}: {done:?}"
            );
            assert!(!done.stdout.contains("REACHED"), "{what}: {done:?}");
        }
    }
}
