//! `libmpi.so` exports what MPICH's `libmpich.so.12` exports, so that every program built with
//! `mpicc.mpich` loads on it.
//!
//! `nm -D --defined-only` on both libraries: every `MPI_`/`MPIX_`/`PMPI_`/`PMPIX_` symbol of
//! MPICH must be ours too, except the one-sided and I/O chapters, which have their own issues.
//! What is still missing is listed, exactly, in [`NOT_YET`]: the test fails when a listed
//! symbol appears (remove it: the list only shrinks) and when an unlisted one is missing.
//! The data objects MPICH exports (`MPI_UNWEIGHTED`, `MPI_F_STATUS_IGNORE`, ...) must be
//! objects here too, of MPICH's size: a program compiled against MPICH holds a copy relocation
//! of that size for each one it uses.
//!
//! Missing tools are a failure, not a skip.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use tests::jobs::{build_mpi_tree, require};

const MPICH_LIB: &str = "/usr/lib/x86_64-linux-gnu/libmpich.so.12";

/// The MPICH symbols we do not export yet, each standing for its `MPI_`/`MPIX_` name and the
/// matching `PMPI_`/`PMPIX_` one (data objects have no profiling name).
const NOT_YET: &str = "\
    MPIX_Comm_agree MPIX_Comm_failure_ack MPIX_Comm_failure_get_acked MPIX_Comm_revoke \
    MPIX_Comm_shrink MPIX_Grequest_class_allocate MPIX_Grequest_class_create MPIX_Grequest_start \
    MPI_Address MPI_Aint_add MPI_Aint_diff MPI_Allgather_c MPI_Allgather_init \
    MPI_Allgather_init_c MPI_Allgatherv_c MPI_Allgatherv_init MPI_Allgatherv_init_c \
    MPI_Alloc_mem MPI_Allreduce_c MPI_Allreduce_init MPI_Allreduce_init_c MPI_Alltoall_c \
    MPI_Alltoall_init MPI_Alltoall_init_c MPI_Alltoallv_c MPI_Alltoallv_init \
    MPI_Alltoallv_init_c MPI_Alltoallw_c MPI_Alltoallw_init MPI_Alltoallw_init_c \
    MPI_Barrier_init MPI_Bcast_c MPI_Bcast_init MPI_Bcast_init_c MPI_Bsend_c MPI_Bsend_init \
    MPI_Bsend_init_c MPI_Buffer_attach_c MPI_Buffer_detach_c MPI_Cart_coords MPI_Cart_create \
    MPI_Cart_get MPI_Cart_map MPI_Cart_rank MPI_Cart_shift MPI_Cart_sub MPI_Cartdim_get \
    MPI_Comm_create_from_group \
    \
    MPI_Dims_create MPI_Dist_graph_create MPI_Dist_graph_create_adjacent \
    MPI_Dist_graph_neighbors MPI_Dist_graph_neighbors_count MPI_Exscan_c MPI_Exscan_init \
    MPI_Exscan_init_c MPI_Free_mem MPI_Gather_c MPI_Gather_init MPI_Gather_init_c MPI_Gatherv_c \
    MPI_Gatherv_init \
    MPI_Gatherv_init_c MPI_Get_address MPI_Get_count_c MPI_Get_elements_c MPI_Graph_create \
    MPI_Graph_get MPI_Graph_map MPI_Graph_neighbors MPI_Graph_neighbors_count MPI_Graphdims_get \
    MPI_Grequest_complete MPI_Grequest_start MPI_Group_from_session_pset MPI_Iallgather_c \
    MPI_Iallgatherv_c MPI_Iallreduce_c MPI_Ialltoall_c MPI_Ialltoallv_c MPI_Ialltoallw_c \
    MPI_Ibcast_c MPI_Ibsend_c MPI_Iexscan_c MPI_Igather_c MPI_Igatherv_c MPI_Imrecv_c \
    MPI_Ineighbor_allgather MPI_Ineighbor_allgather_c MPI_Ineighbor_allgatherv \
    MPI_Ineighbor_allgatherv_c MPI_Ineighbor_alltoall MPI_Ineighbor_alltoall_c \
    MPI_Ineighbor_alltoallv MPI_Ineighbor_alltoallv_c MPI_Ineighbor_alltoallw \
    MPI_Ineighbor_alltoallw_c \
    MPI_Irecv_c MPI_Ireduce_c MPI_Ireduce_scatter_block_c \
    MPI_Ireduce_scatter_c MPI_Irsend_c MPI_Iscan_c MPI_Iscatter_c MPI_Iscatterv_c MPI_Isend_c \
    MPI_Isendrecv MPI_Isendrecv_c MPI_Isendrecv_replace MPI_Isendrecv_replace_c MPI_Issend_c \
    MPI_Mrecv_c MPI_Neighbor_allgather MPI_Neighbor_allgather_c \
    MPI_Neighbor_allgather_init MPI_Neighbor_allgather_init_c MPI_Neighbor_allgatherv \
    MPI_Neighbor_allgatherv_c MPI_Neighbor_allgatherv_init MPI_Neighbor_allgatherv_init_c \
    MPI_Neighbor_alltoall MPI_Neighbor_alltoall_c MPI_Neighbor_alltoall_init \
    MPI_Neighbor_alltoall_init_c MPI_Neighbor_alltoallv MPI_Neighbor_alltoallv_c \
    MPI_Neighbor_alltoallv_init MPI_Neighbor_alltoallv_init_c MPI_Neighbor_alltoallw \
    MPI_Neighbor_alltoallw_c MPI_Neighbor_alltoallw_init MPI_Neighbor_alltoallw_init_c \
    MPI_Op_create_c MPI_Pack_c MPI_Pack_external MPI_Pack_external_c \
    MPI_Pack_external_size MPI_Pack_external_size_c MPI_Pack_size_c MPI_Parrived MPI_Pready \
    MPI_Pready_list MPI_Pready_range MPI_Precv_init MPI_Psend_init MPI_Recv_c \
    MPI_Recv_init_c MPI_Reduce_c MPI_Reduce_init MPI_Reduce_init_c MPI_Reduce_local_c \
    MPI_Reduce_scatter_block_c MPI_Reduce_scatter_block_init MPI_Reduce_scatter_block_init_c \
    MPI_Reduce_scatter_c MPI_Reduce_scatter_init MPI_Reduce_scatter_init_c MPI_Rsend_c \
    MPI_Rsend_init MPI_Rsend_init_c MPI_Scan_c MPI_Scan_init MPI_Scan_init_c MPI_Scatter_c \
    MPI_Scatter_init MPI_Scatter_init_c MPI_Scatterv_c MPI_Scatterv_init MPI_Scatterv_init_c \
    MPI_Send_c MPI_Send_init_c MPI_Sendrecv_c MPI_Sendrecv_replace_c MPI_Session_call_errhandler \
    MPI_Session_create_errhandler MPI_Session_finalize MPI_Session_get_errhandler \
    MPI_Session_get_info MPI_Session_get_nth_pset MPI_Session_get_num_psets \
    MPI_Session_get_pset_info MPI_Session_init MPI_Session_set_errhandler MPI_Ssend_c \
    MPI_Ssend_init_c MPI_T_PVAR_ALL_HANDLES MPI_T_category_changed MPI_T_category_get_categories \
    MPI_T_category_get_cvars MPI_T_category_get_events MPI_T_category_get_index \
    MPI_T_category_get_info MPI_T_category_get_num MPI_T_category_get_num_events \
    MPI_T_category_get_pvars MPI_T_cvar_get_index MPI_T_cvar_get_info MPI_T_cvar_get_num \
    MPI_T_cvar_handle_alloc MPI_T_cvar_handle_free MPI_T_cvar_read MPI_T_cvar_write \
    MPI_T_enum_get_info MPI_T_enum_get_item MPI_T_event_callback_get_info \
    MPI_T_event_callback_set_info MPI_T_event_copy MPI_T_event_get_index MPI_T_event_get_info \
    MPI_T_event_get_num MPI_T_event_get_source MPI_T_event_get_timestamp MPI_T_event_handle_alloc \
    MPI_T_event_handle_free MPI_T_event_handle_get_info MPI_T_event_handle_set_info \
    MPI_T_event_read MPI_T_event_register_callback MPI_T_event_set_dropped_handler MPI_T_finalize \
    MPI_T_init_thread MPI_T_pvar_get_index MPI_T_pvar_get_info MPI_T_pvar_get_num \
    MPI_T_pvar_handle_alloc MPI_T_pvar_handle_free MPI_T_pvar_read MPI_T_pvar_readreset \
    MPI_T_pvar_reset MPI_T_pvar_session_create MPI_T_pvar_session_free MPI_T_pvar_start \
    MPI_T_pvar_stop MPI_T_pvar_write MPI_T_source_get_info MPI_T_source_get_num \
    MPI_T_source_get_timestamp MPI_Topo_test MPI_Type_contiguous_c MPI_Type_create_darray \
    MPI_Type_create_darray_c MPI_Type_create_f90_complex MPI_Type_create_f90_integer \
    MPI_Type_create_f90_real MPI_Type_create_hindexed_block_c MPI_Type_create_hindexed_c \
    MPI_Type_create_hvector_c MPI_Type_create_indexed_block_c MPI_Type_create_keyval \
    MPI_Type_create_resized_c MPI_Type_create_struct_c MPI_Type_create_subarray_c \
    MPI_Type_delete_attr MPI_Type_extent MPI_Type_free_keyval MPI_Type_get_attr \
    MPI_Type_get_contents_c MPI_Type_get_envelope_c MPI_Type_get_extent_c \
    MPI_Type_get_true_extent_c MPI_Type_hindexed MPI_Type_hvector MPI_Type_indexed_c MPI_Type_lb \
    MPI_Type_match_size MPI_Type_set_attr MPI_Type_size_c MPI_Type_struct MPI_Type_ub \
    MPI_Type_vector_c MPI_UNWEIGHTED MPI_Unpack_c MPI_Unpack_external MPI_Unpack_external_c \
    MPI_WEIGHTS_EMPTY
";

/// Exported data objects of MPICH's interface: no `PMPI_` twin.
const DATA_OBJECTS: &[&str] = &[
    "MPI_F_STATUS_IGNORE",
    "MPI_F_STATUSES_IGNORE",
    "MPI_F08_STATUS_IGNORE",
    "MPI_F08_STATUSES_IGNORE",
    "MPI_UNWEIGHTED",
    "MPI_WEIGHTS_EMPTY",
    "MPI_T_PVAR_ALL_HANDLES",
];

/// One exported symbol: its `nm` type letter and, when known, its size.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Symbol {
    kind: char,
    size: Option<u64>,
}

/// The defined dynamic symbols of `lib` with an MPI name.
fn exported(lib: &Path) -> BTreeMap<String, Symbol> {
    let nm = require("nm", "binutils");
    let out = Command::new(nm).args(["-D", "-S", "--defined-only"]).arg(lib).output().expect("run nm");
    assert!(out.status.success(), "nm {}: {}", lib.display(), String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("nm output is text");
    let symbols: BTreeMap<String, Symbol> = text
        .lines()
        .filter_map(|line| {
            // `address [size] type name`
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (size, kind, name) = match fields[..] {
                [_, size, kind, name] => (u64::from_str_radix(size, 16).ok(), kind, name),
                [_, kind, name] => (None, kind, name),
                _ => return None,
            };
            let mpi = ["MPI_", "MPIX_", "PMPI_", "PMPIX_"].iter().any(|p| name.starts_with(p));
            mpi.then(|| (name.to_owned(), Symbol { kind: kind.chars().next().unwrap_or('?'), size }))
        })
        .collect();
    assert!(!symbols.is_empty(), "no MPI symbol in {}: not an MPI library?", lib.display());
    symbols
}

/// The one-sided (MPI 4.0 ch. 12) and I/O (ch. 14) functions, which later issues implement.
fn later_chapter(symbol: &str) -> bool {
    const ONE_SIDED: &[&str] = &[
        "Put",
        "Get",
        "Rput",
        "Rget",
        "Accumulate",
        "Raccumulate",
        "Get_accumulate",
        "Rget_accumulate",
        "Fetch_and_op",
        "Compare_and_swap",
    ];
    let Some(name) = symbol.strip_prefix("PMPI_").or_else(|| symbol.strip_prefix("MPI_")) else {
        return false;
    };
    let name = name.strip_suffix("_c").unwrap_or(name);
    name.starts_with("Win_")
        || name.starts_with("File_")
        || name == "Register_datarep"
        || ONE_SIDED.contains(&name)
}

/// [`NOT_YET`] as symbols.
fn not_yet() -> BTreeSet<String> {
    NOT_YET
        .split_whitespace()
        .flat_map(|name| {
            let profiling = (!DATA_OBJECTS.contains(&name)).then(|| format!("P{name}"));
            [Some(name.to_owned()), profiling].into_iter().flatten()
        })
        .collect()
}

fn ours() -> BTreeMap<String, Symbol> {
    exported(&build_mpi_tree().join("libmpi.so"))
}

#[test]
fn every_mpich_symbol_is_exported_or_listed_as_not_yet() {
    let mpich = exported(Path::new(MPICH_LIB));
    let ours = ours();
    let missing: BTreeSet<String> =
        mpich.keys().filter(|s| !later_chapter(s) && !ours.contains_key(*s)).cloned().collect();
    let listed = not_yet();
    let now_exported: Vec<&String> = listed.difference(&missing).collect();
    let unlisted: Vec<&String> = missing.difference(&listed).collect();
    assert!(
        now_exported.is_empty() && unlisted.is_empty(),
        "libmpi.so's exports differ from NOT_YET in tests/symbols.rs:\n\
         exported now (remove them from NOT_YET): {now_exported:?}\n\
         missing and not listed (MPICH exports them; export them): {unlisted:?}"
    );
    // A listed name that MPICH does not export (a typo) would never leave the list.
    let unknown: Vec<&String> = listed.iter().filter(|s| !mpich.contains_key(*s)).collect();
    assert!(unknown.is_empty(), "NOT_YET names symbols MPICH does not export: {unknown:?}");
}

#[test]
fn data_objects_are_objects_of_mpich_size() {
    let mpich = exported(Path::new(MPICH_LIB));
    let ours = ours();
    let is_object = |s: &Symbol| matches!(s.kind, 'D' | 'B' | 'R' | 'd' | 'b' | 'r' | 'V');
    let mpich_objects: BTreeSet<&String> =
        mpich.iter().filter(|(_, s)| is_object(s)).map(|(n, _)| n).collect();
    assert_eq!(
        mpich_objects,
        DATA_OBJECTS.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>().iter().collect(),
        "MPICH's exported data objects changed: update DATA_OBJECTS"
    );
    let listed = not_yet();
    for name in DATA_OBJECTS.iter().filter(|n| !listed.contains(**n)) {
        let theirs = mpich[*name];
        let Some(mine) = ours.get(*name) else { panic!("{name} is not exported (nor listed in NOT_YET)") };
        assert!(is_object(mine), "{name} must be a data object, is of nm type {}", mine.kind);
        assert_eq!(mine.size, theirs.size, "{name}: size differs from MPICH's");
    }
}
