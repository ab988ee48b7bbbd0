//! `libmpi.so` exports what MPICH's `libmpich.so.12` exports, so that every program built with
//! `mpicc.mpich` loads on it.
//!
//! `nm -D --defined-only` on both libraries: every `MPI_`/`MPIX_`/`PMPI_`/`PMPIX_` symbol of
//! MPICH must be ours too, the I/O chapter's (`MPI_File_*`, `MPI_Register_datarep`) included
//! ([`every_io_symbol_is_exported`] names them apart).
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

/// Whether `symbol` is an I/O function (MPI 4.0 ch. 14).
fn io_chapter(symbol: &str) -> bool {
    let Some(name) = symbol.strip_prefix("PMPI_").or_else(|| symbol.strip_prefix("MPI_")) else {
        return false;
    };
    let name = name.strip_suffix("_c").unwrap_or(name);
    name.starts_with("File_") || name == "Register_datarep"
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
    let missing: BTreeSet<String> = mpich.keys().filter(|s| !ours.contains_key(*s)).cloned().collect();
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

/// The I/O chapter in full: every `MPI_File_*` function of MPICH and `MPI_Register_datarep`
/// (`_c` forms included), each with its `PMPI_` name, is a function of ours; none is in
/// [`NOT_YET`].
#[test]
fn every_io_symbol_is_exported() {
    let mpich = exported(Path::new(MPICH_LIB));
    let ours = ours();
    let io: BTreeSet<&String> = mpich.keys().filter(|s| io_chapter(s)).collect();
    assert_eq!(io.len(), 184, "MPICH 4.0.2 has 92 I/O functions, each with its PMPI_ name");
    let missing: Vec<&&String> = io.iter().filter(|s| !ours.contains_key(**s)).collect();
    assert!(missing.is_empty(), "I/O functions libmpi.so does not export: {missing:?}");
    let not_functions: Vec<&&String> = io.iter().filter(|s| ours[**s].kind != 'T').collect();
    assert!(not_functions.is_empty(), "I/O names that are not functions here: {not_functions:?}");
    let listed = not_yet();
    assert!(io.iter().all(|s| !listed.contains(*s)), "I/O names are listed in NOT_YET");
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
