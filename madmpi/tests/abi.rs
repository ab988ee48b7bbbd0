//! Proves that `include/mpi.h` and `madmpi::abi` state MPICH 4.0's ABI.
//!
//! MPICH's installed header is the reference. The tests generate C from our header, compile it
//! with `cc`/`c++` and compare:
//! - values: one C program prints every `MPI_*` constant of our header and the sizes, signedness
//!   and `MPI_Status` offsets; it is built once against our header and once against MPICH's
//!   (no MPI library is linked: it only evaluates macros), and the outputs must be identical;
//! - Rust: every constant of `abi::C_CONSTANTS`, the `Status` layout and the datatype sizes
//!   encoded in builtin handles must equal what the program printed with our header;
//! - types: one translation unit includes MPICH's header and a copy of ours whose names are
//!   prefixed with `OUR_`, and statically asserts that each of our typedefs, constants and
//!   prototypes has the same type as MPICH's (see [`types_and_prototypes_match_mpich`]);
//! - syntax: a file taking the address of every function parses in strict C99 and in C++;
//! - scope: the header declares exactly this issue's functions and every required name.
//!
//! Missing tools are a failure, not a skip: without them nothing above is proven.

use madmpi::abi::{self, C_CONSTANTS, Status};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

const MPICH_INCLUDE: &str = "/usr/include/x86_64-linux-gnu/mpich";

/// The functions of the current issue; the header declares `MPI_x` and `PMPI_x` for each.
const FUNCTIONS: &str = "\
    Init Init_thread Finalize Initialized Finalized Query_thread Is_thread_main Abort Get_version \
    Get_library_version Get_processor_name Wtime Wtick Comm_create_errhandler Comm_set_errhandler \
    Comm_get_errhandler Comm_call_errhandler Errhandler_free Error_string Error_class Comm_size \
    Comm_rank Comm_dup Comm_dup_with_info Comm_split Comm_split_type Comm_create Comm_free \
    Comm_compare Comm_set_name Comm_get_name Comm_create_keyval Comm_free_keyval Comm_set_attr \
    Comm_get_attr Comm_delete_attr Comm_group Comm_set_info Comm_get_info Info_create \
    Info_create_env Info_set Info_delete Info_get Info_get_string Info_get_valuelen Info_get_nkeys \
    Info_get_nthkey Info_dup Info_free Group_size Group_rank Group_incl Group_excl \
    Group_range_incl Group_range_excl Group_union Group_intersection Group_difference \
    Group_translate_ranks Group_compare Group_free Send Recv Isend Irecv Ssend Issend Rsend Irsend \
    Bsend Ibsend Buffer_attach Buffer_detach Sendrecv Sendrecv_replace Probe Iprobe Mprobe Improbe \
    Mrecv Imrecv Wait Test Waitall Waitany Waitsome Testall Testany Testsome Request_free \
    Request_get_status Cancel Test_cancelled Send_init Ssend_init Recv_init Start Startall Get_count \
    Get_elements Get_elements_x Type_contiguous Type_vector Type_create_hvector Type_indexed \
    Type_create_hindexed Type_create_indexed_block Type_create_hindexed_block Type_create_struct \
    Type_create_resized Type_create_subarray Type_dup Type_commit Type_free Type_size Type_size_x \
    Type_get_extent Type_get_extent_x Type_get_true_extent Type_get_true_extent_x Type_get_envelope \
    Type_get_contents Type_set_name Type_get_name Pack Unpack Pack_size Barrier Ibarrier Bcast Ibcast \
    Reduce Ireduce Allreduce Iallreduce Reduce_local Op_create Op_free Op_commutative Gather Igather \
    Gatherv Igatherv Scatter Iscatter Scatterv Iscatterv Allgather Iallgather Allgatherv \
    Iallgatherv Alltoall Ialltoall Alltoallv Ialltoallv Alltoallw Ialltoallw Reduce_scatter \
    Ireduce_scatter Reduce_scatter_block Ireduce_scatter_block Scan Iscan Exscan Iexscan
";

/// Functions the header declares besides the MPI/PMPI pairs: MPICH's `MPI_COMM_DUP_FN` expands
/// to the symbol `MPIR_Dup_fn`, which compiled programs therefore reference.
const EXTRA_FUNCTIONS: &[&str] = &["MPIR_Dup_fn"];

/// Typedefs that are integers (the rest are `MPI_Status` and callback function types).
const INTEGER_TYPEDEFS: &str = "\
    MPI_Comm MPI_Group MPI_Datatype MPI_Request MPI_Message MPI_Op MPI_Errhandler MPI_Info MPI_Win \
    MPI_Aint MPI_Offset MPI_Count MPI_Fint
";

/// Callback typedefs the issue needs.
const FUNCTION_TYPEDEFS: &str = "\
    MPI_Comm_errhandler_function MPI_Comm_errhandler_fn MPI_Comm_copy_attr_function \
    MPI_Comm_delete_attr_function MPI_User_function
";

/// Names the header must define (the issue's list); every other constant of the header is
/// checked too, this only guards against forgetting one.
const REQUIRED_CONSTANTS: &str = "\
    MPI_VERSION MPI_SUBVERSION MPI_COMM_WORLD MPI_COMM_SELF MPI_COMM_NULL MPI_GROUP_EMPTY \
    MPI_GROUP_NULL MPI_CHAR MPI_SIGNED_CHAR MPI_UNSIGNED_CHAR MPI_BYTE MPI_WCHAR MPI_SHORT \
    MPI_UNSIGNED_SHORT MPI_INT MPI_UNSIGNED MPI_LONG MPI_UNSIGNED_LONG MPI_LONG_LONG_INT \
    MPI_LONG_LONG MPI_UNSIGNED_LONG_LONG MPI_FLOAT MPI_DOUBLE MPI_LONG_DOUBLE MPI_INT8_T MPI_INT16_T \
    MPI_INT32_T MPI_INT64_T MPI_UINT8_T MPI_UINT16_T MPI_UINT32_T MPI_UINT64_T MPI_C_BOOL \
    MPI_C_FLOAT_COMPLEX MPI_C_COMPLEX MPI_C_DOUBLE_COMPLEX MPI_C_LONG_DOUBLE_COMPLEX MPI_AINT \
    MPI_OFFSET MPI_COUNT MPI_PACKED MPI_LB MPI_UB MPI_FLOAT_INT MPI_DOUBLE_INT MPI_LONG_INT MPI_2INT \
    MPI_SHORT_INT MPI_LONG_DOUBLE_INT MPI_DATATYPE_NULL MPI_REQUEST_NULL MPI_MESSAGE_NULL \
    MPI_MESSAGE_NO_PROC MPI_ERRHANDLER_NULL MPI_ERRORS_ARE_FATAL MPI_ERRORS_RETURN MPI_OP_NULL \
    MPI_MAX MPI_MIN MPI_SUM MPI_PROD MPI_LAND MPI_BAND MPI_LOR MPI_BOR MPI_LXOR MPI_BXOR MPI_MINLOC \
    MPI_MAXLOC MPI_REPLACE MPI_NO_OP MPI_INFO_NULL MPI_INFO_ENV MPI_ANY_SOURCE MPI_ANY_TAG \
    MPI_PROC_NULL MPI_ROOT MPI_UNDEFINED MPI_STATUS_IGNORE MPI_STATUSES_IGNORE MPI_BOTTOM \
    MPI_IN_PLACE MPI_MAX_PROCESSOR_NAME MPI_MAX_ERROR_STRING MPI_MAX_OBJECT_NAME \
    MPI_MAX_LIBRARY_VERSION_STRING MPI_BSEND_OVERHEAD MPI_THREAD_SINGLE MPI_THREAD_FUNNELED \
    MPI_THREAD_SERIALIZED MPI_THREAD_MULTIPLE MPI_IDENT MPI_CONGRUENT MPI_SIMILAR MPI_UNEQUAL \
    MPI_COMM_TYPE_SHARED MPI_KEYVAL_INVALID MPI_TAG_UB MPI_HOST MPI_IO MPI_WTIME_IS_GLOBAL \
    MPI_UNIVERSE_SIZE MPI_LASTUSEDCODE MPI_APPNUM MPI_SUCCESS MPI_ERR_BUFFER MPI_ERR_COUNT \
    MPI_ERR_TYPE MPI_ERR_TAG MPI_ERR_COMM MPI_ERR_RANK MPI_ERR_ROOT MPI_ERR_TRUNCATE MPI_ERR_GROUP \
    MPI_ERR_OP MPI_ERR_REQUEST MPI_ERR_ARG MPI_ERR_OTHER MPI_ERR_UNKNOWN MPI_ERR_INTERN \
    MPI_ERR_IN_STATUS MPI_ERR_PENDING MPI_ERR_KEYVAL MPI_ERR_NO_MEM MPI_ERR_INFO MPI_ERR_LASTCODE \
    MPI_COMBINER_NAMED MPI_COMBINER_DUP MPI_COMBINER_CONTIGUOUS MPI_COMBINER_VECTOR \
    MPI_COMBINER_HVECTOR MPI_COMBINER_INDEXED MPI_COMBINER_HINDEXED MPI_COMBINER_INDEXED_BLOCK \
    MPI_COMBINER_HINDEXED_BLOCK MPI_COMBINER_STRUCT MPI_COMBINER_SUBARRAY MPI_COMBINER_DARRAY \
    MPI_COMBINER_RESIZED MPI_ORDER_C MPI_ORDER_FORTRAN MPI_COMM_NULL_COPY_FN MPI_COMM_NULL_DELETE_FN \
    MPI_COMM_DUP_FN
";

/// Constants whose value is the address of a library symbol: evaluating them needs the MPI
/// library at link time, and the address means nothing across builds. Their types are still
/// compared by [`types_and_prototypes_match_mpich`].
const LINK_TIME_CONSTANTS: &[&str] = &["MPI_COMM_DUP_FN"];

/// Our macros that MPICH states as something else (checked, so that a change shows):
/// MPICH declares the combiners as constants of `enum MPIR_Combiner_enum`. In C they are `int`
/// constants either way, so values and C types agree (and both are compared).
fn mpich_spells_as_enum(name: &str) -> bool {
    name.starts_with("MPI_COMBINER_")
}

/// The C type whose size each builtin datatype encodes in its handle.
const DATATYPE_C_TYPES: &[(&str, &str)] = &[
    ("MPI_CHAR", "char"),
    ("MPI_SIGNED_CHAR", "signed char"),
    ("MPI_UNSIGNED_CHAR", "unsigned char"),
    ("MPI_BYTE", "unsigned char"),
    ("MPI_WCHAR", "wchar_t"),
    ("MPI_SHORT", "short"),
    ("MPI_UNSIGNED_SHORT", "unsigned short"),
    ("MPI_INT", "int"),
    ("MPI_UNSIGNED", "unsigned"),
    ("MPI_LONG", "long"),
    ("MPI_UNSIGNED_LONG", "unsigned long"),
    ("MPI_LONG_LONG_INT", "long long"),
    ("MPI_LONG_LONG", "long long"),
    ("MPI_UNSIGNED_LONG_LONG", "unsigned long long"),
    ("MPI_FLOAT", "float"),
    ("MPI_DOUBLE", "double"),
    ("MPI_LONG_DOUBLE", "long double"),
    ("MPI_INT8_T", "int8_t"),
    ("MPI_INT16_T", "int16_t"),
    ("MPI_INT32_T", "int32_t"),
    ("MPI_INT64_T", "int64_t"),
    ("MPI_UINT8_T", "uint8_t"),
    ("MPI_UINT16_T", "uint16_t"),
    ("MPI_UINT32_T", "uint32_t"),
    ("MPI_UINT64_T", "uint64_t"),
    ("MPI_C_BOOL", "_Bool"),
    ("MPI_C_FLOAT_COMPLEX", "float _Complex"),
    ("MPI_C_COMPLEX", "float _Complex"),
    ("MPI_C_DOUBLE_COMPLEX", "double _Complex"),
    ("MPI_C_LONG_DOUBLE_COMPLEX", "long double _Complex"),
    ("MPI_AINT", "MPI_Aint"),
    ("MPI_OFFSET", "MPI_Offset"),
    ("MPI_COUNT", "MPI_Count"),
    ("MPI_PACKED", "unsigned char"),
    ("MPI_2INT", "int[2]"),
    // Markers without data.
    ("MPI_LB", "char[0]"),
    ("MPI_UB", "char[0]"),
];

/// The names of a whitespace-separated list.
fn words(list: &str) -> impl Iterator<Item = &str> {
    list.split_whitespace()
}

// ---- tools

/// Fails (does not skip) when a tool is missing: the ABI would be unproven.
fn require_tools() {
    for (tool, package) in [("cc", "build-essential"), ("c++", "build-essential")] {
        let found = Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
        assert!(found, "`{tool}` is needed to check the MPI ABI: install the Debian package {package}");
    }
    assert!(
        Path::new(MPICH_INCLUDE).join("mpi.h").is_file(),
        "MPICH's header {MPICH_INCLUDE}/mpi.h is the ABI reference: install the Debian package libmpich-dev"
    );
}

fn our_include() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("include")
}

fn our_header_text() -> String {
    std::fs::read_to_string(our_include().join("mpi.h")).expect("read include/mpi.h")
}

/// A fresh directory for one test's generated files.
fn work_dir(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("abi").join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create work dir");
    dir
}

/// Runs a compiler (or a compiled program) and returns its stdout; panics with its stderr.
fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({cmd:?}, {}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// The object-like macros `#include <mpi.h>` defines from `include_dir`, name to definition.
fn macros(include_dir: &Path) -> BTreeMap<String, String> {
    // Tests run in parallel: each call gets its own directory.
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let dir = work_dir(&format!("macros-{}", CALLS.fetch_add(1, Ordering::Relaxed)));
    let src = dir.join("m.c");
    std::fs::write(&src, "#include <mpi.h>\n").unwrap();
    let out =
        run(Command::new("cc").args(["-std=c11", "-dM", "-E", "-I"]).arg(include_dir).arg(&src), "cc -dM");
    out.lines()
        .filter_map(|l| l.strip_prefix("#define "))
        .filter_map(|l| {
            let end = l.find([' ', '(']).unwrap_or(l.len());
            // Function-like macros (a '(' right after the name) are not constants.
            (l[end..].starts_with(' ') || end == l.len())
                .then(|| (l[..end].to_owned(), l[end..].trim().to_owned()))
        })
        .collect()
}

/// Our header's constants: its object-like `MPI_*` macros.
fn our_constants() -> Vec<String> {
    macros(&our_include()).into_keys().filter(|n| n.starts_with("MPI_")).collect()
}

/// The declarations of our header after preprocessing, as (typedef names, function names).
fn our_declarations() -> (BTreeSet<String>, BTreeSet<String>) {
    let text =
        run(Command::new("cc").args(["-std=c11", "-E", "-P"]).arg(our_include().join("mpi.h")), "cc -E");
    let (mut typedefs, mut functions) = (BTreeSet::new(), BTreeSet::new());
    for stmt in statements(&text) {
        let ours = |n: &str| n.starts_with("MPI_") || n.starts_with("PMPI_") || n.starts_with("MPIR_");
        if let Some(rest) = stmt.strip_prefix("typedef ") {
            // `typedef R(NAME)(args)` or `typedef ... NAME`.
            let name = match rest.find('(') {
                Some(open) => identifiers(&rest[open..]).next().unwrap_or_default(),
                None => identifiers(rest).last().unwrap_or_default(),
            };
            if ours(name) {
                typedefs.insert(name.to_owned());
            }
        } else if let Some(open) = stmt.find('(') {
            let name = identifiers(&stmt[..open]).last().unwrap_or_default();
            if ours(name) {
                functions.insert(name.to_owned());
            }
        }
    }
    (typedefs, functions)
}

/// Top-level `;`-terminated statements of preprocessed C, whitespace collapsed.
fn statements(text: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0i32);
    for c in text.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
        if c == ';' && depth == 0 {
            out.push(cur.split_whitespace().collect::<Vec<_>>().join(" "));
            cur.clear();
        } else {
            cur.push(c);
        }
    }
    out
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The identifiers of a piece of C, in order (numbers are skipped).
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !is_ident_char(c))
        .filter(|t| t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
}

// ---- the value program

/// Generates the program that prints, as `name=value` lines, every constant and the sizes,
/// signedness and layout facts. It must compile against both headers unchanged.
fn value_program(constants: &[String], status_fields: &[String]) -> String {
    let mut c = String::from(
        "#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <mpi.h>\n\n\
         #define SHOW(name, value) printf(\"%s=%lld\\n\", name, (long long)(value))\n\n\
         int main(void)\n{\n",
    );
    for name in constants.iter().filter(|n| !LINK_TIME_CONSTANTS.contains(&n.as_str())) {
        // Through intptr_t so that the pointer constants print as their address.
        writeln!(c, "    SHOW(\"{name}\", (intptr_t)({name}));").unwrap();
    }
    for ty in words(INTEGER_TYPEDEFS) {
        writeln!(c, "    SHOW(\"sizeof({ty})\", sizeof({ty}));").unwrap();
        writeln!(c, "    SHOW(\"signed({ty})\", ({ty})-1 < 0);").unwrap();
    }
    c.push_str("    SHOW(\"sizeof(MPI_Status)\", sizeof(MPI_Status));\n");
    c.push_str("    SHOW(\"alignof(MPI_Status)\", _Alignof(MPI_Status));\n");
    for f in status_fields {
        writeln!(c, "    SHOW(\"offsetof(MPI_Status,{f})\", offsetof(MPI_Status, {f}));").unwrap();
        writeln!(c, "    SHOW(\"sizeof(MPI_Status.{f})\", sizeof(((MPI_Status *)0)->{f}));").unwrap();
    }
    for (dt, ty) in DATATYPE_C_TYPES {
        writeln!(c, "    SHOW(\"ctype_size({dt})\", sizeof({ty}));").unwrap();
    }
    c.push_str("    return 0;\n}\n");
    c
}

/// Builds and runs the value program against the header in `include_dir`.
fn run_value_program(dir: &Path, label: &str, include_dir: &Path, program: &str) -> Vec<String> {
    let src = dir.join(format!("values_{label}.c"));
    let exe = dir.join(format!("values_{label}"));
    std::fs::write(&src, program).unwrap();
    run(
        Command::new("cc").args(["-std=c11", "-Wall", "-o"]).arg(&exe).arg(&src).arg("-I").arg(include_dir),
        &format!(
            "building the value program against {label}'s header (an undefined reference means a \
             constant is a library symbol there: list it in LINK_TIME_CONSTANTS)"
        ),
    );
    run(&mut Command::new(&exe), &format!("running the value program ({label})"))
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Field names of our `MPI_Status`, read from the header's struct definition.
fn status_fields() -> Vec<String> {
    let header = our_header_text();
    let (_, body, _) = status_definition(&header);
    statements(body).iter().filter_map(|s| identifiers(s).last().map(str::to_owned)).collect()
}

/// Splits the header around `typedef struct MPI_Status { body } MPI_Status;`:
/// (text before, body, text after).
fn status_definition(header: &str) -> (&str, &str, &str) {
    const START: &str = "typedef struct MPI_Status {";
    assert_eq!(
        header.matches(START).count(),
        1,
        "include/mpi.h must define `{START} ... }} MPI_Status;` once"
    );
    let start = header.find(START).unwrap();
    let open = start + START.len();
    let close = open + header[open..].find('}').expect("end of MPI_Status");
    let rest = header[close + 1..].trim_start();
    let rest = rest.strip_prefix("MPI_Status;").expect("`} MPI_Status;` ends the MPI_Status definition");
    (&header[..start], &header[open..close], rest)
}

fn parse_values(lines: &[String]) -> BTreeMap<String, i64> {
    lines
        .iter()
        .map(|l| {
            let (k, v) = l.split_once('=').unwrap_or_else(|| panic!("bad line {l:?}"));
            (k.to_owned(), v.parse().unwrap_or_else(|_| panic!("bad value in {l:?}")))
        })
        .collect()
}

#[test]
fn header_values_match_mpich() {
    require_tools();
    let dir = work_dir("values");
    let constants = our_constants();
    let program = value_program(&constants, &status_fields());
    let ours = run_value_program(&dir, "our", &our_include(), &program);
    let mpich = run_value_program(&dir, "MPICH", Path::new(MPICH_INCLUDE), &program);
    assert_eq!(ours.len(), mpich.len());
    let diffs: Vec<String> = ours
        .iter()
        .zip(&mpich)
        .filter(|(o, m)| o != m)
        .map(|(o, m)| format!("  ours {o}  vs  MPICH {m}"))
        .collect();
    assert!(diffs.is_empty(), "include/mpi.h disagrees with MPICH's header:\n{}", diffs.join("\n"));

    // Name by name, which of our constants MPICH spells as a macro too: the others must be
    // exactly the known exceptions, so that a new one gets looked at.
    let mpich_macros = macros(Path::new(MPICH_INCLUDE));
    let not_macros: Vec<&String> = constants.iter().filter(|n| !mpich_macros.contains_key(*n)).collect();
    let unexpected: Vec<&&String> = not_macros.iter().filter(|n| !mpich_spells_as_enum(n)).collect();
    assert!(unexpected.is_empty(), "not macros in MPICH's header, unexplained: {unexpected:?}");
    assert!(!not_macros.is_empty(), "MPICH now spells the combiners as macros: update mpich_spells_as_enum");
}

#[test]
fn rust_abi_matches_header() {
    require_tools();
    let dir = work_dir("rust");
    let program = value_program(&our_constants(), &status_fields());
    let c = parse_values(&run_value_program(&dir, "our", &our_include(), &program));
    let get = |k: &str| *c.get(k).unwrap_or_else(|| panic!("{k} is not defined by include/mpi.h"));

    for &(name, value) in C_CONSTANTS {
        assert_eq!(value, get(name), "madmpi::abi::{name} differs from mpi.h");
    }

    assert_eq!(size_of::<Status>() as i64, get("sizeof(MPI_Status)"));
    assert_eq!(align_of::<Status>() as i64, get("alignof(MPI_Status)"));
    let offsets = [
        ("count_lo", std::mem::offset_of!(Status, count_lo)),
        ("count_hi_and_cancelled", std::mem::offset_of!(Status, count_hi_and_cancelled)),
        ("MPI_SOURCE", std::mem::offset_of!(Status, source)),
        ("MPI_TAG", std::mem::offset_of!(Status, tag)),
        ("MPI_ERROR", std::mem::offset_of!(Status, error)),
    ];
    assert_eq!(status_fields(), offsets.map(|(f, _)| f.to_owned()), "MPI_Status fields");
    for (field, offset) in offsets {
        assert_eq!(offset as i64, get(&format!("offsetof(MPI_Status,{field})")), "offset of {field}");
        assert_eq!(4, get(&format!("sizeof(MPI_Status.{field})")), "size of {field}");
    }

    for (ty, size) in [
        ("MPI_Comm", size_of::<abi::Comm>()),
        ("MPI_Group", size_of::<abi::Group>()),
        ("MPI_Datatype", size_of::<abi::Datatype>()),
        ("MPI_Request", size_of::<abi::Request>()),
        ("MPI_Message", size_of::<abi::Message>()),
        ("MPI_Op", size_of::<abi::Op>()),
        ("MPI_Errhandler", size_of::<abi::Errhandler>()),
        ("MPI_Info", size_of::<abi::Info>()),
        ("MPI_Win", size_of::<abi::Win>()),
        ("MPI_Aint", size_of::<abi::Aint>()),
        ("MPI_Offset", size_of::<abi::Offset>()),
        ("MPI_Count", size_of::<abi::Count>()),
        ("MPI_Fint", size_of::<abi::Fint>()),
    ] {
        assert_eq!(size as i64, get(&format!("sizeof({ty})")), "size of {ty}");
        assert_eq!(1, get(&format!("signed({ty})")), "{ty} is signed");
    }

    // Every builtin datatype's encoded size is the size of its C type, and every builtin
    // datatype of the module has a C type in the table.
    for (dt, _) in DATATYPE_C_TYPES {
        let handle = get(dt) as abi::Datatype;
        let encoded = abi::builtin_datatype_size(handle).map(|s| s as i64);
        assert_eq!(encoded, Some(get(&format!("ctype_size({dt})"))), "size bits of {dt}");
    }
    for &(name, value) in C_CONSTANTS {
        if abi::builtin_datatype_size(value as abi::Datatype).is_some() {
            assert!(DATATYPE_C_TYPES.iter().any(|(d, _)| *d == name), "{name} missing from DATATYPE_C_TYPES");
        }
    }
}

// ---- types and prototypes

/// Our header with every `MPI_`/`PMPI_`/`MPIR_` identifier renamed `OUR_...`, except
/// `MPI_Status`, whose definition is cut out so that the name means MPICH's struct.
fn renamed_header() -> String {
    let header = our_header_text();
    let (before, _, after) = status_definition(&header);
    let text = format!("{before}/* MPI_Status: MPICH's, compared separately */{after}");
    let mut out = String::with_capacity(text.len() + 4096);
    let mut prev = ' ';
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let starts_ident = (c.is_ascii_alphabetic() || c == '_') && !is_ident_char(prev);
        if !starts_ident {
            out.push(c);
            prev = c;
            continue;
        }
        let mut end = i + c.len_utf8();
        while let Some(&(j, d)) = chars.peek() {
            if !is_ident_char(d) {
                break;
            }
            end = j + d.len_utf8();
            chars.next();
        }
        let ident = &text[i..end];
        let ours = ident.starts_with("MPI_") || ident.starts_with("PMPI_") || ident.starts_with("MPIR_");
        if ours && ident != "MPI_Status" {
            out.push_str("OUR_");
        }
        out.push_str(ident);
        prev = 'x';
    }
    out
}

/// One translation unit holding MPICH's header and ours (renamed), with a static assertion
/// per name that both state the same type.
///
/// Why this shape: the types cannot be compared across two compilations, and the two headers
/// cannot be included as they are into one (same names). Renaming ours with a text
/// substitution keeps every declaration's type text intact; since our handle typedefs become
/// `OUR_MPI_Comm` etc. but are still `int`/`long`, a mismatch in a typedef, a qualifier, a
/// pointer level or a parameter list shows as incompatible types. The one struct cannot be
/// renamed without making every prototype that mentions it incompatible (two C structs with
/// different tags never are), so our copy of `MPI_Status` is compared field by field and the
/// prototypes use MPICH's. In C, `__builtin_types_compatible_p` compares the typedefs,
/// constants and functions; C++ (`std::is_same`) then requires the typedefs and function
/// types to be *identical*, which C's compatibility (e.g. `f()` vs `f(void)`) does not.
fn compat_unit(constants: &[String], typedefs: &BTreeSet<String>, functions: &BTreeSet<String>) -> String {
    let header = our_header_text();
    let (_, body, _) = status_definition(&header);
    let mut c = String::from(
        "#define MPICH_SKIP_MPICXX 1 /* C++: no MPICH C++ bindings */\n\
         #include <stddef.h>\n#include <mpi.h>\n#include \"our_mpi.h\"\n\
         #ifdef __cplusplus\n#include <type_traits>\n\
         #define SAME_TYPE(a, b) (std::is_same<a, b>::value)\n\
         #define SAME_TYPE_OF(a, b) (std::is_same<decltype(a), decltype(b)>::value)\n\
         #define STATIC_ASSERT static_assert\n\
         #else\n\
         #define SAME_TYPE(a, b) __builtin_types_compatible_p(a, b)\n\
         #define SAME_TYPE_OF(a, b) __builtin_types_compatible_p(__typeof__(a), __typeof__(b))\n\
         #define STATIC_ASSERT _Static_assert\n\
         #endif\n\n",
    );
    writeln!(c, "typedef struct OUR_MPI_Status {{{body}}} OUR_MPI_Status;").unwrap();
    c.push_str("STATIC_ASSERT(sizeof(MPI_Status) == sizeof(OUR_MPI_Status), \"sizeof(MPI_Status)\");\n");
    for f in status_fields() {
        writeln!(
            c,
            "STATIC_ASSERT(offsetof(MPI_Status, {f}) == offsetof(OUR_MPI_Status, {f}), \"MPI_Status.{f} offset\");\n\
             STATIC_ASSERT(SAME_TYPE_OF(((MPI_Status *)0)->{f}, ((OUR_MPI_Status *)0)->{f}), \"MPI_Status.{f} type\");"
        )
        .unwrap();
    }
    for t in typedefs.iter().filter(|t| *t != "MPI_Status") {
        writeln!(c, "STATIC_ASSERT(SAME_TYPE({t}, OUR_{t}), \"typedef {t}\");").unwrap();
    }
    // C++ gives MPICH's combiners their enum type, so constants are compared in C only.
    c.push_str("#ifndef __cplusplus\n");
    for k in constants {
        writeln!(c, "STATIC_ASSERT(SAME_TYPE_OF({k}, OUR_{k}), \"type of {k}\");").unwrap();
    }
    c.push_str("#endif\n");
    for f in functions {
        writeln!(c, "STATIC_ASSERT(SAME_TYPE_OF({f}, OUR_{f}), \"prototype of {f}\");").unwrap();
    }
    c
}

#[test]
fn types_and_prototypes_match_mpich() {
    require_tools();
    let dir = work_dir("types");
    let (typedefs, functions) = our_declarations();
    let unit = compat_unit(&our_constants(), &typedefs, &functions);
    std::fs::write(dir.join("our_mpi.h"), renamed_header()).unwrap();
    let src = dir.join("compat.c");
    std::fs::write(&src, &unit).unwrap();
    let what = "comparing include/mpi.h's types with MPICH's (each failed static assertion names a mismatch)";
    run(
        Command::new("cc").args(["-std=c11", "-fsyntax-only", "-I", MPICH_INCLUDE, "-I"]).arg(&dir).arg(&src),
        what,
    );
    run(
        Command::new("c++")
            .args(["-std=c++11", "-fsyntax-only", "-x", "c++", "-I", MPICH_INCLUDE, "-I"])
            .arg(&dir)
            .arg(&src),
        what,
    );

    // The check must be able to fail: a deliberately wrong prototype is rejected.
    let broken =
        renamed_header().replacen("int OUR_MPI_Send(const void *buf", "int OUR_MPI_Send(void *buf", 1);
    assert_ne!(broken, renamed_header(), "the MPI_Send prototype moved: update this self-test");
    let bad_dir = work_dir("types-self-test");
    std::fs::write(bad_dir.join("our_mpi.h"), broken).unwrap();
    std::fs::write(bad_dir.join("compat.c"), &unit).unwrap();
    let out = Command::new("cc")
        .args(["-std=c11", "-fsyntax-only", "-I", MPICH_INCLUDE, "-I"])
        .arg(&bad_dir)
        .arg(bad_dir.join("compat.c"))
        .output()
        .unwrap();
    assert!(!out.status.success(), "a wrong prototype went unnoticed");
    assert!(String::from_utf8_lossy(&out.stderr).contains("prototype of MPI_Send"));
}

#[test]
fn header_parses_in_strict_c99_and_cxx() {
    require_tools();
    let dir = work_dir("syntax");
    let (_, functions) = our_declarations();
    let mut c = String::from(
        "#include <stdint.h>\n#include <mpi.h>\n\n\
         /* The generic function pointer type: converting to it is exempt from -Wcast-function-type. */\n\
         typedef void (*any_function)(void);\n\nconst any_function functions[] = {\n",
    );
    for f in &functions {
        writeln!(c, "    (any_function)&{f},").unwrap();
    }
    c.push_str("};\n\nint main(void)\n{\n    volatile long long sink = 0;\n");
    for k in our_constants() {
        writeln!(c, "    sink += (long long)(intptr_t)({k});").unwrap();
    }
    c.push_str("    (void)sink;\n    return functions[0] == 0;\n}\n");
    let src = dir.join("syntax.c");
    std::fs::write(&src, c).unwrap();
    let strict = ["-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-pedantic"];
    run(
        Command::new("cc")
            .args(strict)
            .args(["-std=c99", "-Wstrict-prototypes", "-I"])
            .arg(our_include())
            .arg(&src),
        "strict C99 parse of include/mpi.h",
    );
    run(
        Command::new("c++").args(strict).args(["-std=c++11", "-x", "c++", "-I"]).arg(our_include()).arg(&src),
        "C++ parse of include/mpi.h",
    );
}

#[test]
fn header_declares_the_issue_scope() {
    require_tools();
    let (typedefs, functions) = our_declarations();
    let expected: BTreeSet<String> = words(FUNCTIONS)
        .flat_map(|f| [format!("MPI_{f}"), format!("PMPI_{f}")])
        .chain(EXTRA_FUNCTIONS.iter().map(|f| f.to_string()))
        .collect();
    let missing: Vec<_> = expected.difference(&functions).collect();
    let extra: Vec<_> = functions.difference(&expected).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "prototypes: missing {missing:?}, not in scope {extra:?}"
    );

    let all_typedefs: BTreeSet<String> = words(INTEGER_TYPEDEFS)
        .chain(words(FUNCTION_TYPEDEFS))
        .map(|t| t.to_string())
        .chain(["MPI_Status".to_owned()])
        .collect();
    assert_eq!(typedefs, all_typedefs, "typedefs (a new one needs a place in this test)");

    let macros = macros(&our_include());
    let missing: Vec<_> = words(REQUIRED_CONSTANTS).filter(|k| !macros.contains_key(*k)).collect();
    assert!(missing.is_empty(), "required constants missing from include/mpi.h: {missing:?}");
    assert_eq!(
        macros.get("MADMPI_VERSION").map(String::as_str),
        Some(format!("\"{}\"", env!("CARGO_PKG_VERSION")).as_str()),
        "MADMPI_VERSION must be the crate version"
    );
}
