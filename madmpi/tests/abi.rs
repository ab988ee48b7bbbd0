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
//! - scope: the header declares every function, typedef, data object and constant MPICH's
//!   declares (one-sided and I/O included), and nothing else under the MPI names.
//!
//! Missing tools are a failure, not a skip: without them nothing above is proven.

use madmpi::abi::{self, C_CONSTANTS, Status};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

const MPICH_INCLUDE: &str = "/usr/include/x86_64-linux-gnu/mpich";

/// Typedefs that are integers; the value program prints their sizes and signedness.
const INTEGER_TYPEDEFS: &str = "\
    MPI_Comm MPI_Group MPI_Datatype MPI_Request MPI_Message MPI_Op MPI_Errhandler MPI_Info MPI_Win \
    MPI_Session MPIX_Grequest_class MPI_Aint MPI_Offset MPI_Count MPI_Fint
";

/// Types whose definition MPICH's and ours cannot both hold in one translation unit under
/// different names without making every prototype that mentions them incompatible (a C struct
/// or enum is a distinct type per definition): the compared copy of our header uses MPICH's,
/// and ours is checked member by member (see [`compat_unit`]).
const SHARED_TYPES: &[&str] = &["MPI_Status", "MPI_F08_status", "MPI_T_cb_safety", "MPI_T_source_order"];

/// MPICH macros that are not part of the interface: include guards, and printf formats MPICH
/// itself marks as not defined by MPI.
const MPICH_INTERNAL_MACROS: &[&str] = &[
    "MPI_INCLUDED",
    "MPI_PROTO_H_INCLUDED",
    "MPI_FILE_DEFINED",
    "MPI_AINT_FMT_DEC_SPEC",
    "MPI_AINT_FMT_HEX_SPEC",
];

/// Constants whose value is the address of a library symbol: evaluating them needs the MPI
/// library at link time, and the address means nothing across builds. Their types are still
/// compared by [`types_and_prototypes_match_mpich`].
const LINK_TIME_CONSTANTS: &[&str] = &["MPI_DUP_FN", "MPI_COMM_DUP_FN", "MPI_TYPE_DUP_FN", "MPI_WIN_DUP_FN"];

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
    ("MPI_CXX_BOOL", "_Bool"),
    ("MPI_CXX_FLOAT_COMPLEX", "float _Complex"),
    ("MPI_CXX_DOUBLE_COMPLEX", "double _Complex"),
    ("MPI_CXX_LONG_DOUBLE_COMPLEX", "long double _Complex"),
    // A half-precision float: only its size matters here.
    ("MPIX_C_FLOAT16", "uint16_t"),
    // Fortran types, as the C types of the same size and kind.
    ("MPI_CHARACTER", "char"),
    ("MPI_LOGICAL", "int"),
    ("MPI_INTEGER", "int"),
    ("MPI_REAL", "float"),
    ("MPI_DOUBLE_PRECISION", "double"),
    ("MPI_COMPLEX", "float _Complex"),
    ("MPI_DOUBLE_COMPLEX", "double _Complex"),
    ("MPI_2INTEGER", "int[2]"),
    ("MPI_2REAL", "float[2]"),
    ("MPI_2DOUBLE_PRECISION", "double[2]"),
    ("MPI_INTEGER1", "int8_t"),
    ("MPI_INTEGER2", "int16_t"),
    ("MPI_INTEGER4", "int32_t"),
    ("MPI_INTEGER8", "int64_t"),
    ("MPI_REAL4", "float"),
    ("MPI_REAL8", "double"),
    ("MPI_REAL16", "long double"),
    ("MPI_COMPLEX8", "float _Complex"),
    ("MPI_COMPLEX16", "double _Complex"),
    ("MPI_COMPLEX32", "long double _Complex"),
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

/// Runs the preprocessor on `#include <mpi.h>` from `include_dir` with `flags`.
fn preprocess(include_dir: &Path, flags: &[&str]) -> String {
    // Tests run in parallel: each call gets its own directory.
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let dir = work_dir(&format!("preprocess-{}", CALLS.fetch_add(1, Ordering::Relaxed)));
    let src = dir.join("m.c");
    std::fs::write(&src, "#include <mpi.h>\n").unwrap();
    run(Command::new("cc").args(["-std=c11", "-E"]).args(flags).arg("-I").arg(include_dir).arg(&src), "cc -E")
}

/// The macros `#include <mpi.h>` defines from `include_dir`: (object-like ones, name to
/// definition; names of the function-like ones).
fn all_macros(include_dir: &Path) -> (BTreeMap<String, String>, BTreeSet<String>) {
    let (mut objects, mut functions) = (BTreeMap::new(), BTreeSet::new());
    for l in preprocess(include_dir, &["-dM"]).lines().filter_map(|l| l.strip_prefix("#define ")) {
        let end = l.find([' ', '(']).unwrap_or(l.len());
        // A function-like macro has a '(' right after its name.
        if l[end..].starts_with('(') {
            functions.insert(l[..end].to_owned());
        } else {
            objects.insert(l[..end].to_owned(), l[end..].trim().to_owned());
        }
    }
    (objects, functions)
}

/// The object-like macros `#include <mpi.h>` defines from `include_dir`, name to definition.
fn macros(include_dir: &Path) -> BTreeMap<String, String> {
    all_macros(include_dir).0
}

/// Names of the MPI interface: the standard's, MPICH's extensions and the profiling entries.
fn is_mpi_name(name: &str) -> bool {
    ["MPI_", "PMPI_", "MPIX_", "PMPIX_"].iter().any(|p| name.starts_with(p))
}

/// The constants `#include <mpi.h>` from `include_dir` defines: object-like macros and
/// enumerators with an MPI name (MPICH states some constants as enumerators).
fn constants_of(include_dir: &Path) -> BTreeSet<String> {
    let macros = macros(include_dir).into_keys().filter(|n| is_mpi_name(n));
    macros.chain(declarations(include_dir).enumerators).collect()
}

/// MadMPI's own extensions in `mpi.h` (rail failover's `MPIX_Rail_*`), which MPICH's header
/// does not have: left out of the comparisons with it.
const OURS_ONLY: [&str; 10] = [
    "MPIX_MAX_RAIL_NAME",
    "MPIX_RAIL_DOWN",
    "MPIX_RAIL_IN_USE",
    "MPIX_RAIL_STANDBY",
    "MPIX_Rail_count",
    "MPIX_Rail_get_info",
    "MPIX_Rail_transitions",
    "PMPIX_Rail_count",
    "PMPIX_Rail_get_info",
    "PMPIX_Rail_transitions",
];

/// Our header's constants (MPICH's, not [`OURS_ONLY`]).
fn our_constants() -> Vec<String> {
    constants_of(&our_include()).into_iter().filter(|n| !OURS_ONLY.contains(&n.as_str())).collect()
}

/// The names a header declares (after preprocessing), restricted to MPI names and
/// `MPIR_Dup_fn`, the one MPICH-internal function the interface exposes (`MPI_DUP_FN`).
#[derive(Default)]
struct Declarations {
    typedefs: BTreeSet<String>,
    functions: BTreeSet<String>,
    /// `extern` data objects.
    objects: BTreeSet<String>,
    enumerators: BTreeSet<String>,
}

fn declarations(include_dir: &Path) -> Declarations {
    let text = preprocess(include_dir, &["-P"]);
    let mut d = Declarations::default();
    let wanted = |n: &str| is_mpi_name(n) || n == "MPIR_Dup_fn";
    for stmt in statements(&text) {
        // Enumerators: the first identifier of each item of a braced enum body; MPICH's
        // `enum QMPI_Functions_enum` (MPI_SEND_T, ...) indexes its tool interface, QMPI, not MPI.
        let enum_body =
            stmt.find('{').filter(|&open| stmt[..open].contains("enum ") && !stmt[..open].contains("QMPI_"));
        if let Some(open) = enum_body {
            let body = &stmt[open + 1..stmt.rfind('}').unwrap_or(stmt.len())];
            for item in body.split(',') {
                if let Some(name) = identifiers(item).next().filter(|n| wanted(n)) {
                    d.enumerators.insert(name.to_owned());
                }
            }
        }
        // The declared name, with any braced body removed.
        let flat = match (stmt.find('{'), stmt.rfind('}')) {
            (Some(open), Some(close)) => format!("{}{}", &stmt[..open], &stmt[close + 1..]),
            _ => stmt.clone(),
        };
        let (set, name) = if let Some(rest) = flat.strip_prefix("typedef ") {
            // `typedef R(NAME)(args)` or `typedef ... NAME`.
            let name = match rest.find('(') {
                Some(open) => identifiers(&rest[open..]).next(),
                None => identifiers(rest).last(),
            };
            (&mut d.typedefs, name)
        } else if let Some(rest) = flat.strip_prefix("extern ") {
            (&mut d.objects, identifiers(rest).last())
        } else if let Some(open) = flat.find('(') {
            (&mut d.functions, identifiers(&flat[..open]).last())
        } else {
            continue;
        };
        if let Some(name) = name.filter(|n| wanted(n)) {
            set.insert(name.to_owned());
        }
    }
    d
}

/// The declarations of our header.
fn our_declarations() -> Declarations {
    let mut d = declarations(&our_include());
    d.functions.retain(|n| !OURS_ONLY.contains(&n.as_str()));
    d
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
fn value_program(constants: &[String], status_fields: &[String], conversions: &[String]) -> String {
    let mut c = String::from(
        "#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <mpi.h>\n\n\
         #define SHOW(name, value) printf(\"%s=%lld\\n\", name, (long long)(value))\n\n\
         int main(void)\n{\n",
    );
    for name in constants.iter().filter(|n| !LINK_TIME_CONSTANTS.contains(&n.as_str())) {
        // Through intptr_t so that the pointer constants print as their address.
        writeln!(c, "    SHOW(\"{name}\", (intptr_t)({name}));").unwrap();
    }
    // The handle conversion macros (c2f/f2c): result and size of the result.
    for name in conversions {
        writeln!(c, "    SHOW(\"{name}(7)\", {name}(7));").unwrap();
        writeln!(c, "    SHOW(\"sizeof({name}(7))\", sizeof({name}(7)));").unwrap();
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
    let body = type_definition(&header, "MPI_Status").body;
    statements(body).iter().filter_map(|s| identifiers(s).last().map(str::to_owned)).collect()
}

/// One `typedef struct|enum [tag] { body } NAME;` of the header, split around.
struct Definition<'a> {
    before: &'a str,
    /// `struct` or `enum`.
    keyword: &'a str,
    body: &'a str,
    after: &'a str,
}

/// Finds the definition of the struct or enum type `name` in `header`.
fn type_definition<'a>(header: &'a str, name: &str) -> Definition<'a> {
    let end = format!("}} {name};");
    assert_eq!(header.matches(&end).count(), 1, "include/mpi.h must define {name} once, ending `{end}`");
    let close = header.find(&end).unwrap();
    let start = header[..close].rfind("typedef ").expect("typedef before the body");
    let open = start + header[start..].find('{').expect("body");
    let keyword = header[start + "typedef ".len()..].split_whitespace().next().unwrap();
    assert!(["struct", "enum"].contains(&keyword), "{name}: typedef {keyword}?");
    Definition {
        before: &header[..start],
        keyword,
        body: &header[open + 1..close],
        after: &header[close + end.len()..],
    }
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
    let conversions = our_conversion_macros();
    let program = value_program(&constants, &status_fields(), &conversions);
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

    // The comparison covers every constant and conversion macro of MPICH's header.
    let mpich_constants = constants_of(Path::new(MPICH_INCLUDE));
    let ours: BTreeSet<String> = constants.iter().cloned().collect();
    let missing: Vec<_> = mpich_constants
        .iter()
        .filter(|k| !ours.contains(*k) && !MPICH_INTERNAL_MACROS.contains(&k.as_str()))
        .collect();
    let extra: Vec<_> = ours.difference(&mpich_constants).collect();
    assert!(missing.is_empty() && extra.is_empty(), "constants: missing {missing:?}, not MPICH's {extra:?}");
    let mpich_conversions: Vec<String> =
        all_macros(Path::new(MPICH_INCLUDE)).1.into_iter().filter(|n| is_mpi_name(n)).collect();
    assert_eq!(conversions, mpich_conversions, "function-like macros (the handle conversions)");
}

/// Our function-like macros: the c2f/f2c handle conversions.
fn our_conversion_macros() -> Vec<String> {
    all_macros(&our_include()).1.into_iter().filter(|n| is_mpi_name(n)).collect()
}

#[test]
fn rust_abi_matches_header() {
    require_tools();
    let dir = work_dir("rust");
    let program = value_program(&our_constants(), &status_fields(), &our_conversion_macros());
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
        ("MPI_Session", size_of::<abi::Session>()),
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

/// `text` with every MPI name (and `MPIR_Dup_fn`) renamed `OUR_...`, except the
/// [`SHARED_TYPES`] when `keep_shared`. Struct tags are not MPI names (MPICH's own tags,
/// `ADIOI_FileD` and `MPIR_T_*_s`, are part of the ABI): they stay, so that both headers'
/// pointer handles point to the same incomplete struct.
fn rename(text: &str, keep_shared: bool) -> String {
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
        let shared = keep_shared && SHARED_TYPES.contains(&ident);
        if (is_mpi_name(ident) || ident == "MPIR_Dup_fn") && !shared {
            out.push_str("OUR_");
        }
        out.push_str(ident);
        prev = 'x';
    }
    out
}

/// Our header renamed, with the [`SHARED_TYPES`] definitions cut out so that their names
/// mean MPICH's types ([`compat_unit`] declares our copies under `OUR_` names).
fn renamed_header() -> String {
    let mut text = our_header_text();
    for name in SHARED_TYPES {
        let d = type_definition(&text, name);
        text = format!("{}/* {name}: MPICH's, compared separately */{}", d.before, d.after);
    }
    rename(&text, true)
}

/// One translation unit holding MPICH's header and ours (renamed), with a static assertion
/// per name that both state the same type.
///
/// Why this shape: the types cannot be compared across two compilations, and the two headers
/// cannot be included as they are into one (same names). Renaming ours with a text
/// substitution keeps every declaration's type text intact; since our handle typedefs become
/// `OUR_MPI_Comm` etc. but are still `int`/`long`, a mismatch in a typedef, a qualifier, a
/// pointer level or a parameter list shows as incompatible types. A struct or enum cannot be
/// renamed without making every prototype that mentions it incompatible (two C structs with
/// different tags never are), so our copies of the [`SHARED_TYPES`] are compared member by
/// member and the prototypes use MPICH's. In C, `__builtin_types_compatible_p` compares the
/// typedefs, constants, functions and objects; C++ (`std::is_same`) then requires the typedefs
/// and function types to be *identical*, which C's compatibility (e.g. `f()` vs `f(void)`)
/// does not.
fn compat_unit(constants: &[String], decls: &Declarations) -> String {
    let header = our_header_text();
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
    for t in SHARED_TYPES {
        let d = type_definition(&header, t);
        // Struct members keep their names (they cannot clash); enumerators are renamed.
        let body = if d.keyword == "enum" { rename(d.body, false) } else { d.body.to_owned() };
        writeln!(c, "typedef {} {{{body}}} OUR_{t};", d.keyword).unwrap();
        writeln!(c, "STATIC_ASSERT(sizeof({t}) == sizeof(OUR_{t}), \"sizeof({t})\");").unwrap();
        if d.keyword == "struct" {
            for f in statements(d.body).iter().filter_map(|s| identifiers(s).last()) {
                writeln!(
                    c,
                    "STATIC_ASSERT(offsetof({t}, {f}) == offsetof(OUR_{t}, {f}), \"{t}.{f} offset\");\n\
                     STATIC_ASSERT(SAME_TYPE_OF((({t} *)0)->{f}, ((OUR_{t} *)0)->{f}), \"{t}.{f} type\");"
                )
                .unwrap();
            }
        }
    }
    for t in decls.typedefs.iter().filter(|t| !SHARED_TYPES.contains(&t.as_str())) {
        writeln!(c, "STATIC_ASSERT(SAME_TYPE({t}, OUR_{t}), \"typedef {t}\");").unwrap();
    }
    // C++ gives MPICH's enumerators their enum types, so constants are compared in C only.
    c.push_str("#ifndef __cplusplus\n");
    for k in constants {
        writeln!(c, "STATIC_ASSERT(SAME_TYPE_OF({k}, OUR_{k}), \"type of {k}\");").unwrap();
    }
    for m in our_conversion_macros() {
        writeln!(c, "STATIC_ASSERT(SAME_TYPE_OF({m}(7), OUR_{m}(7)), \"type of {m}(handle)\");").unwrap();
    }
    c.push_str("#endif\n");
    for f in &decls.functions {
        writeln!(c, "STATIC_ASSERT(SAME_TYPE_OF({f}, OUR_{f}), \"prototype of {f}\");").unwrap();
    }
    for o in &decls.objects {
        writeln!(c, "STATIC_ASSERT(SAME_TYPE_OF({o}, OUR_{o}), \"type of the object {o}\");").unwrap();
    }
    c
}

#[test]
fn types_and_prototypes_match_mpich() {
    require_tools();
    let dir = work_dir("types");
    let unit = compat_unit(&our_constants(), &our_declarations());
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
    let decls = our_declarations();
    let mut c = String::from(
        "#include <stdint.h>\n#include <mpi.h>\n\n\
         /* The generic function pointer type: converting to it is exempt from -Wcast-function-type. */\n\
         typedef void (*any_function)(void);\n\nconst any_function functions[] = {\n",
    );
    for f in &decls.functions {
        writeln!(c, "    (any_function)&{f},").unwrap();
    }
    c.push_str("};\n\nint main(void)\n{\n    volatile long long sink = 0;\n");
    for o in &decls.objects {
        writeln!(c, "    sink += (long long)(intptr_t)(void *)&{o};").unwrap();
    }
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

/// Our header declares exactly the functions, typedefs and data objects MPICH's declares
/// (their types are compared by [`types_and_prototypes_match_mpich`]).
#[test]
fn header_declares_everything_mpich_declares() {
    require_tools();
    let ours = our_declarations();
    let mpich = declarations(Path::new(MPICH_INCLUDE));
    for (what, ours, mpich) in [
        ("prototypes", &ours.functions, &mpich.functions),
        ("typedefs", &ours.typedefs, &mpich.typedefs),
        ("data objects", &ours.objects, &mpich.objects),
    ] {
        let missing: Vec<_> = mpich.difference(ours).collect();
        let extra: Vec<_> = ours.difference(mpich).collect();
        assert!(missing.is_empty() && extra.is_empty(), "{what}: missing {missing:?}, not MPICH's {extra:?}");
    }
    // The self-check: MPICH's header was read (counts of MPICH 4.0.2, MPI_ and PMPI_ alike).
    assert!(mpich.functions.len() > 1200, "only {} MPICH prototypes found", mpich.functions.len());

    assert_eq!(
        macros(&our_include()).get("MADMPI_VERSION").map(String::as_str),
        Some(format!("\"{}\"", env!("CARGO_PKG_VERSION")).as_str()),
        "MADMPI_VERSION must be the crate version"
    );
}
