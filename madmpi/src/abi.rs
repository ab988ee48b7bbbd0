//! The MPICH 4.0 binary interface, as numbers: predefined handle values, the handle bit
//! encoding, the `MPI_Status` layout and the special constants (ranks, tags, thread levels,
//! keyvals, buffer lengths, sentinel addresses).
//!
//! It owns the facts that programs compiled against MPICH's `mpi.h` have baked into their
//! binaries, and the scheme for the handles MadMPI itself creates ([`encode_user_handle`]).
//! `include/mpi.h` states the same facts for C; `tests/abi.rs` checks every constant of
//! [`C_CONSTANTS`], the status layout and the header against MPICH's own header.
//!
//! It must not hold behaviour or object tables, and not the numbers that other modules own
//! even though they are in `mpi.h`: error classes (error handling) and datatype combiners,
//! array orders and type classes (datatypes).
//!
//! # Handle encoding (MPICH's)
//!
//! A handle is a C `int`, read as 32 bits:
//!
//! | bits  | meaning |
//! |-------|---------|
//! | 31-30 | [`HandleKind`]: invalid 0 (the `*_NULL` handles), builtin 1, direct 2, indirect 3 |
//! | 29-26 | [`ObjectType`]: communicator 1, group 2, datatype 3, ... request 11 |
//! | 25-0  | depends on the kind and object, see below |
//!
//! Builtin datatypes keep their size in bytes in bits 15-8 ([`builtin_datatype_size`]).
//! Builtin keyvals keep the object type they apply to in bits 25-22 ([`keyval_target`]).
//! The pair datatypes other than `MPI_2INT` are *direct* handles 0 to 4 of MPICH's datatype
//! table, which is why user handles skip the low indices ([`USER_INDEX_BASE`]).

use core::ffi::{c_int, c_long};

/// Any MPI object handle: `MPI_Comm`, `MPI_Datatype`, ... are all `int` in MPICH's ABI.
pub type Handle = c_int;
/// `MPI_Comm`.
pub type Comm = Handle;
/// `MPI_Group`.
pub type Group = Handle;
/// `MPI_Datatype`.
pub type Datatype = Handle;
/// `MPI_Request`.
pub type Request = Handle;
/// `MPI_Message` (a request in MPICH: it shares `MPI_REQUEST_NULL`'s value).
pub type Message = Handle;
/// `MPI_Op`.
pub type Op = Handle;
/// `MPI_Errhandler`.
pub type Errhandler = Handle;
/// `MPI_Info`.
pub type Info = Handle;
/// `MPI_Win`.
pub type Win = Handle;
/// `MPI_Session`.
pub type Session = Handle;
/// `MPI_Aint`: `long` on x86-64 Linux.
pub type Aint = c_long;
/// `MPI_Offset`: `long` in MPICH's x86-64 build (not `long long`).
pub type Offset = c_long;
/// `MPI_Count`: `long` in MPICH's x86-64 build (not `long long`).
pub type Count = c_long;
/// `MPI_Fint`, a Fortran `INTEGER`.
pub type Fint = c_int;

/// A handle from its 32 bits as written in hexadecimal (the pair datatypes have bit 31 set).
const fn h(bits: u32) -> Handle {
    bits as Handle
}

/// Declares the constants and lists them, by C name, in [`C_CONSTANTS`], so that a constant
/// cannot be added without being checked against `mpi.h` by `tests/abi.rs`.
macro_rules! abi_constants {
    ($($(#[$attr:meta])* $name:ident: $ty:ty = $value:expr;)*) => {
        $($(#[$attr])* pub const $name: $ty = $value;)*

        /// Every constant of this module, by its C name and value (widened to `i64`; the
        /// sentinel addresses as the address). `tests/abi.rs` compares each with `mpi.h`.
        pub const C_CONSTANTS: &[(&str, i64)] = &[$((stringify!($name), $name as i64)),*];
    };
}

abi_constants! {
    /// The standard version `MPI_Get_version` reports (MPICH 4.0.2's).
    MPI_VERSION: c_int = 4;
    /// The standard subversion `MPI_Get_version` reports.
    MPI_SUBVERSION: c_int = 0;

    // ---- communicators and groups
    /// `MPI_COMM_NULL`.
    MPI_COMM_NULL: Comm = h(0x0400_0000);
    /// `MPI_COMM_WORLD`.
    MPI_COMM_WORLD: Comm = h(0x4400_0000);
    /// `MPI_COMM_SELF`.
    MPI_COMM_SELF: Comm = h(0x4400_0001);
    /// `MPI_GROUP_NULL`.
    MPI_GROUP_NULL: Group = h(0x0800_0000);
    /// `MPI_GROUP_EMPTY`.
    MPI_GROUP_EMPTY: Group = h(0x4800_0000);

    // ---- datatypes (builtin ones carry their size in bits 15-8)
    /// `MPI_DATATYPE_NULL`.
    MPI_DATATYPE_NULL: Datatype = h(0x0c00_0000);
    /// `MPI_CHAR`.
    MPI_CHAR: Datatype = h(0x4c00_0101);
    /// `MPI_SIGNED_CHAR`.
    MPI_SIGNED_CHAR: Datatype = h(0x4c00_0118);
    /// `MPI_UNSIGNED_CHAR`.
    MPI_UNSIGNED_CHAR: Datatype = h(0x4c00_0102);
    /// `MPI_BYTE`.
    MPI_BYTE: Datatype = h(0x4c00_010d);
    /// `MPI_WCHAR` (`wchar_t`, 4 bytes).
    MPI_WCHAR: Datatype = h(0x4c00_040e);
    /// `MPI_SHORT`.
    MPI_SHORT: Datatype = h(0x4c00_0203);
    /// `MPI_UNSIGNED_SHORT`.
    MPI_UNSIGNED_SHORT: Datatype = h(0x4c00_0204);
    /// `MPI_INT`.
    MPI_INT: Datatype = h(0x4c00_0405);
    /// `MPI_UNSIGNED`.
    MPI_UNSIGNED: Datatype = h(0x4c00_0406);
    /// `MPI_LONG`.
    MPI_LONG: Datatype = h(0x4c00_0807);
    /// `MPI_UNSIGNED_LONG`.
    MPI_UNSIGNED_LONG: Datatype = h(0x4c00_0808);
    /// `MPI_LONG_LONG_INT`.
    MPI_LONG_LONG_INT: Datatype = h(0x4c00_0809);
    /// `MPI_LONG_LONG`: the same handle as `MPI_LONG_LONG_INT`.
    MPI_LONG_LONG: Datatype = MPI_LONG_LONG_INT;
    /// `MPI_UNSIGNED_LONG_LONG`.
    MPI_UNSIGNED_LONG_LONG: Datatype = h(0x4c00_0819);
    /// `MPI_FLOAT`.
    MPI_FLOAT: Datatype = h(0x4c00_040a);
    /// `MPI_DOUBLE`.
    MPI_DOUBLE: Datatype = h(0x4c00_080b);
    /// `MPI_LONG_DOUBLE` (x87 extended precision, 16 bytes with padding).
    MPI_LONG_DOUBLE: Datatype = h(0x4c00_100c);
    /// `MPI_INT8_T`.
    MPI_INT8_T: Datatype = h(0x4c00_0137);
    /// `MPI_INT16_T`.
    MPI_INT16_T: Datatype = h(0x4c00_0238);
    /// `MPI_INT32_T`.
    MPI_INT32_T: Datatype = h(0x4c00_0439);
    /// `MPI_INT64_T`.
    MPI_INT64_T: Datatype = h(0x4c00_083a);
    /// `MPI_UINT8_T`.
    MPI_UINT8_T: Datatype = h(0x4c00_013b);
    /// `MPI_UINT16_T`.
    MPI_UINT16_T: Datatype = h(0x4c00_023c);
    /// `MPI_UINT32_T`.
    MPI_UINT32_T: Datatype = h(0x4c00_043d);
    /// `MPI_UINT64_T`.
    MPI_UINT64_T: Datatype = h(0x4c00_083e);
    /// `MPI_C_BOOL`.
    MPI_C_BOOL: Datatype = h(0x4c00_013f);
    /// `MPI_C_FLOAT_COMPLEX`.
    MPI_C_FLOAT_COMPLEX: Datatype = h(0x4c00_0840);
    /// `MPI_C_COMPLEX`: the same handle as `MPI_C_FLOAT_COMPLEX`.
    MPI_C_COMPLEX: Datatype = MPI_C_FLOAT_COMPLEX;
    /// `MPI_C_DOUBLE_COMPLEX`.
    MPI_C_DOUBLE_COMPLEX: Datatype = h(0x4c00_1041);
    /// `MPI_C_LONG_DOUBLE_COMPLEX`.
    MPI_C_LONG_DOUBLE_COMPLEX: Datatype = h(0x4c00_2042);
    /// `MPI_AINT`.
    MPI_AINT: Datatype = h(0x4c00_0843);
    /// `MPI_OFFSET`.
    MPI_OFFSET: Datatype = h(0x4c00_0844);
    /// `MPI_COUNT`.
    MPI_COUNT: Datatype = h(0x4c00_0845);
    /// `MPI_PACKED`.
    MPI_PACKED: Datatype = h(0x4c00_010f);
    /// `MPI_LB` (removed in MPI-3.0, still defined by MPICH 4.0; size 0).
    MPI_LB: Datatype = h(0x4c00_0010);
    /// `MPI_UB` (removed in MPI-3.0, still defined by MPICH 4.0; size 0).
    MPI_UB: Datatype = h(0x4c00_0011);
    /// `MPI_FLOAT_INT`: `struct { float; int; }`, a direct handle.
    MPI_FLOAT_INT: Datatype = h(0x8c00_0000);
    /// `MPI_DOUBLE_INT`: `struct { double; int; }`, a direct handle.
    MPI_DOUBLE_INT: Datatype = h(0x8c00_0001);
    /// `MPI_LONG_INT`: `struct { long; int; }`, a direct handle.
    MPI_LONG_INT: Datatype = h(0x8c00_0002);
    /// `MPI_SHORT_INT`: `struct { short; int; }`, a direct handle.
    MPI_SHORT_INT: Datatype = h(0x8c00_0003);
    /// `MPI_LONG_DOUBLE_INT`: `struct { long double; int; }`, a direct handle.
    MPI_LONG_DOUBLE_INT: Datatype = h(0x8c00_0004);
    /// `MPI_2INT`: `struct { int; int; }`, builtin (size 8), unlike the other pairs.
    MPI_2INT: Datatype = h(0x4c00_0816);
    MPI_CXX_BOOL: Datatype = h(0x4c00_0133);
    MPI_CXX_FLOAT_COMPLEX: Datatype = h(0x4c00_0834);
    MPI_CXX_DOUBLE_COMPLEX: Datatype = h(0x4c00_1035);
    MPI_CXX_LONG_DOUBLE_COMPLEX: Datatype = h(0x4c00_2036);
    MPIX_C_FLOAT16: Datatype = h(0x4c00_0246);
    // Fortran types (MPICH's build has no 16-byte INTEGER: MPI_INTEGER16 is the null type)
    MPI_CHARACTER: Datatype = h(0x4c00_011a);
    MPI_LOGICAL: Datatype = h(0x4c00_041d);
    MPI_INTEGER: Datatype = h(0x4c00_041b);
    MPI_REAL: Datatype = h(0x4c00_041c);
    MPI_DOUBLE_PRECISION: Datatype = h(0x4c00_081f);
    MPI_COMPLEX: Datatype = h(0x4c00_081e);
    MPI_DOUBLE_COMPLEX: Datatype = h(0x4c00_1022);
    MPI_2INTEGER: Datatype = h(0x4c00_0820);
    MPI_2REAL: Datatype = h(0x4c00_0821);
    MPI_2DOUBLE_PRECISION: Datatype = h(0x4c00_1023);
    MPI_INTEGER1: Datatype = h(0x4c00_012d);
    MPI_INTEGER2: Datatype = h(0x4c00_022f);
    MPI_INTEGER4: Datatype = h(0x4c00_0430);
    MPI_INTEGER8: Datatype = h(0x4c00_0831);
    MPI_INTEGER16: Datatype = MPI_DATATYPE_NULL;
    MPI_REAL4: Datatype = h(0x4c00_0427);
    MPI_REAL8: Datatype = h(0x4c00_0829);
    MPI_REAL16: Datatype = h(0x4c00_102b);
    MPI_COMPLEX8: Datatype = h(0x4c00_0828);
    MPI_COMPLEX16: Datatype = h(0x4c00_102a);
    MPI_COMPLEX32: Datatype = h(0x4c00_202c);

    // ---- reduction operations
    /// `MPI_OP_NULL`.
    MPI_OP_NULL: Op = h(0x1800_0000);
    /// `MPI_MAX`.
    MPI_MAX: Op = h(0x5800_0001);
    /// `MPI_MIN`.
    MPI_MIN: Op = h(0x5800_0002);
    /// `MPI_SUM`.
    MPI_SUM: Op = h(0x5800_0003);
    /// `MPI_PROD`.
    MPI_PROD: Op = h(0x5800_0004);
    /// `MPI_LAND`.
    MPI_LAND: Op = h(0x5800_0005);
    /// `MPI_BAND`.
    MPI_BAND: Op = h(0x5800_0006);
    /// `MPI_LOR`.
    MPI_LOR: Op = h(0x5800_0007);
    /// `MPI_BOR`.
    MPI_BOR: Op = h(0x5800_0008);
    /// `MPI_LXOR`.
    MPI_LXOR: Op = h(0x5800_0009);
    /// `MPI_BXOR`.
    MPI_BXOR: Op = h(0x5800_000a);
    /// `MPI_MINLOC`.
    MPI_MINLOC: Op = h(0x5800_000b);
    /// `MPI_MAXLOC`.
    MPI_MAXLOC: Op = h(0x5800_000c);
    /// `MPI_REPLACE`.
    MPI_REPLACE: Op = h(0x5800_000d);
    /// `MPI_NO_OP`.
    MPI_NO_OP: Op = h(0x5800_000e);

    // ---- error handlers
    /// `MPI_ERRHANDLER_NULL`.
    MPI_ERRHANDLER_NULL: Errhandler = h(0x1400_0000);
    /// `MPI_ERRORS_ARE_FATAL`.
    MPI_ERRORS_ARE_FATAL: Errhandler = h(0x5400_0000);
    /// `MPI_ERRORS_RETURN`.
    MPI_ERRORS_RETURN: Errhandler = h(0x5400_0001);
    /// `MPI_ERRORS_ABORT` (MPI-4).
    MPI_ERRORS_ABORT: Errhandler = h(0x5400_0003);

    // ---- requests, messages, info, windows
    /// `MPI_REQUEST_NULL`.
    MPI_REQUEST_NULL: Request = h(0x2c00_0000);
    /// `MPI_MESSAGE_NULL`: the same value as `MPI_REQUEST_NULL`.
    MPI_MESSAGE_NULL: Message = h(0x2c00_0000);
    /// `MPI_MESSAGE_NO_PROC`: what `MPI_Mprobe` returns for `MPI_PROC_NULL` (a builtin request).
    MPI_MESSAGE_NO_PROC: Message = h(0x6c00_0000);
    /// `MPI_INFO_NULL`.
    MPI_INFO_NULL: Info = h(0x1c00_0000);
    /// `MPI_INFO_ENV`.
    MPI_INFO_ENV: Info = h(0x5c00_0001);
    /// `MPI_WIN_NULL`.
    MPI_WIN_NULL: Win = h(0x2000_0000);
    MPI_SESSION_NULL: Session = h(0x3800_0000);

    // ---- ranks and tags
    /// `MPI_PROC_NULL`: a peer that sends and receives nothing.
    MPI_PROC_NULL: c_int = -1;
    /// `MPI_ANY_SOURCE`.
    MPI_ANY_SOURCE: c_int = -2;
    /// `MPI_ROOT`: the root's own argument in intercommunicator collectives.
    MPI_ROOT: c_int = -3;
    /// `MPI_ANY_TAG`.
    MPI_ANY_TAG: c_int = -1;
    /// `MPI_UNDEFINED`.
    MPI_UNDEFINED: c_int = -32766;

    // ---- sentinel addresses the library recognises in pointer arguments
    /// `MPI_BOTTOM`, the address 0.
    MPI_BOTTOM: usize = 0;
    /// `MPI_IN_PLACE`, the address `(void *)-1`.
    MPI_IN_PLACE: usize = usize::MAX;
    /// `MPI_STATUS_IGNORE`, the address 1.
    MPI_STATUS_IGNORE: usize = 1;
    /// `MPI_STATUSES_IGNORE`, the address 1.
    MPI_STATUSES_IGNORE: usize = 1;
    /// `MPI_ERRCODES_IGNORE`, the address 0.
    MPI_ERRCODES_IGNORE: usize = 0;
    MPI_ARGV_NULL: usize = 0;
    MPI_ARGVS_NULL: usize = 0;

    // ---- string buffer lengths, terminating NUL included
    /// `MPI_MAX_PROCESSOR_NAME`.
    MPI_MAX_PROCESSOR_NAME: c_int = 128;
    /// `MPI_MAX_ERROR_STRING`.
    MPI_MAX_ERROR_STRING: c_int = 512;
    /// `MPI_MAX_OBJECT_NAME`.
    MPI_MAX_OBJECT_NAME: c_int = 128;
    /// `MPI_MAX_LIBRARY_VERSION_STRING`.
    MPI_MAX_LIBRARY_VERSION_STRING: c_int = 8192;
    /// `MPI_MAX_PORT_NAME`.
    MPI_MAX_PORT_NAME: c_int = 256;
    /// `MPI_MAX_INFO_KEY`.
    MPI_MAX_INFO_KEY: c_int = 255;
    /// `MPI_MAX_INFO_VAL`.
    MPI_MAX_INFO_VAL: c_int = 1024;
    MPI_MAX_STRINGTAG_LEN: c_int = 256;
    MPI_MAX_PSET_NAME_LEN: c_int = 256;
    MPI_MAX_DATAREP_STRING: c_int = 128;

    /// `MPI_BSEND_OVERHEAD`: programs size their `MPI_Buffer_attach` buffers with it, so a
    /// buffered send must never take more than this beyond the packed message.
    MPI_BSEND_OVERHEAD: c_int = 96;

    // ---- thread levels
    /// `MPI_THREAD_SINGLE`.
    MPI_THREAD_SINGLE: c_int = 0;
    /// `MPI_THREAD_FUNNELED`.
    MPI_THREAD_FUNNELED: c_int = 1;
    /// `MPI_THREAD_SERIALIZED`.
    MPI_THREAD_SERIALIZED: c_int = 2;
    /// `MPI_THREAD_MULTIPLE`.
    MPI_THREAD_MULTIPLE: c_int = 3;

    // ---- results of MPI_Comm_compare / MPI_Group_compare
    /// `MPI_IDENT`.
    MPI_IDENT: c_int = 0;
    /// `MPI_CONGRUENT`.
    MPI_CONGRUENT: c_int = 1;
    /// `MPI_SIMILAR`.
    MPI_SIMILAR: c_int = 2;
    /// `MPI_UNEQUAL`.
    MPI_UNEQUAL: c_int = 3;

    // ---- MPI_Comm_split_type
    /// `MPI_COMM_TYPE_SHARED`.
    MPI_COMM_TYPE_SHARED: c_int = 1;
    /// `MPI_COMM_TYPE_HW_GUIDED` (MPI-4).
    MPI_COMM_TYPE_HW_GUIDED: c_int = 2;
    /// `MPI_COMM_TYPE_HW_UNGUIDED` (MPI-4).
    MPI_COMM_TYPE_HW_UNGUIDED: c_int = 3;
    MPIX_COMM_TYPE_NEIGHBORHOOD: c_int = 4;

    // ---- keyvals (builtin keyval handles for communicators; Fortran's are one more)
    /// `MPI_KEYVAL_INVALID`.
    MPI_KEYVAL_INVALID: c_int = 0x2400_0000;
    /// `MPI_TAG_UB`.
    MPI_TAG_UB: c_int = 0x6440_0001;
    /// `MPI_HOST`.
    MPI_HOST: c_int = 0x6440_0003;
    /// `MPI_IO`.
    MPI_IO: c_int = 0x6440_0005;
    /// `MPI_WTIME_IS_GLOBAL`.
    MPI_WTIME_IS_GLOBAL: c_int = 0x6440_0007;
    /// `MPI_UNIVERSE_SIZE`.
    MPI_UNIVERSE_SIZE: c_int = 0x6440_0009;
    /// `MPI_LASTUSEDCODE`.
    MPI_LASTUSEDCODE: c_int = 0x6440_000b;
    /// `MPI_APPNUM`.
    MPI_APPNUM: c_int = 0x6440_000d;
    // (window keys: builtin keyvals for windows)
    MPI_WIN_BASE: c_int = 0x6600_0001;
    MPI_WIN_SIZE: c_int = 0x6600_0003;
    MPI_WIN_DISP_UNIT: c_int = 0x6600_0005;
    MPI_WIN_CREATE_FLAVOR: c_int = 0x6600_0007;
    MPI_WIN_MODEL: c_int = 0x6600_0009;

    // ---- Fortran statuses: MPI_F_STATUS_SIZE integers, indexed by these
    MPI_F_STATUS_SIZE: c_int = 5;
    MPI_F_SOURCE: c_int = 2;
    MPI_F_TAG: c_int = 3;
    MPI_F_ERROR: c_int = 4;
}

/// Bits 31-30 of a handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum HandleKind {
    /// A `*_NULL` handle (or garbage).
    Invalid = 0,
    /// A predefined object.
    Builtin = 1,
    /// An object in a table indexed by the low bits.
    Direct = 2,
    /// MPICH's two-level tables; MadMPI creates none.
    Indirect = 3,
}

/// Bits 29-26 of a handle: MPICH's object type numbering (all 16 values are assigned).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ObjectType {
    /// MPICH-internal objects without an MPI handle type.
    Internal = 0,
    /// `MPI_Comm`.
    Comm = 1,
    /// `MPI_Group`.
    Group = 2,
    /// `MPI_Datatype`.
    Datatype = 3,
    /// `MPI_File` (a pointer in MPICH's C ABI; the number only tags keyvals and handlers).
    File = 4,
    /// `MPI_Errhandler`.
    Errhandler = 5,
    /// `MPI_Op`.
    Op = 6,
    /// `MPI_Info`.
    Info = 7,
    /// `MPI_Win`.
    Win = 8,
    /// Attribute keys (`int` keyvals).
    Keyval = 9,
    /// Attributes (MPICH-internal).
    Attr = 10,
    /// `MPI_Request`, and `MPI_Message`.
    Request = 11,
    /// Virtual connections (MPICH-internal).
    Vconn = 12,
    /// Generalized request classes (MPICH extension).
    GreqClass = 13,
    /// `MPI_Session` (MPI-4).
    Session = 14,
    /// Streams (MPICH extension).
    Stream = 15,
}

impl ObjectType {
    /// The object type numbered `n` (only the low 4 bits are read).
    pub const fn from_bits(n: u32) -> ObjectType {
        use ObjectType::*;
        const ALL: [ObjectType; 16] = [
            Internal, Comm, Group, Datatype, File, Errhandler, Op, Info, Win, Keyval, Attr, Request, Vconn,
            GreqClass, Session, Stream,
        ];
        ALL[(n & 0xf) as usize]
    }
}

/// Where the kind sits in a handle.
pub const KIND_SHIFT: u32 = 30;
/// Where the object type sits in a handle.
pub const OBJECT_SHIFT: u32 = 26;
/// Where a keyval's target object type (and a user handle's qualifier) sits.
pub const QUALIFIER_SHIFT: u32 = 22;

/// The kind of a handle.
pub const fn handle_kind(h: Handle) -> HandleKind {
    match (h as u32) >> KIND_SHIFT {
        0 => HandleKind::Invalid,
        1 => HandleKind::Builtin,
        2 => HandleKind::Direct,
        _ => HandleKind::Indirect,
    }
}

/// The object type a handle claims to designate (meaningful for null handles too).
pub const fn handle_object(h: Handle) -> ObjectType {
    ObjectType::from_bits((h as u32) >> OBJECT_SHIFT)
}

/// The size in bytes of a builtin datatype, read from the handle (bits 15-8); `None` for any
/// other handle, including `MPI_DATATYPE_NULL` and the direct pair types.
pub const fn builtin_datatype_size(h: Datatype) -> Option<usize> {
    if matches!(handle_kind(h), HandleKind::Builtin) && matches!(handle_object(h), ObjectType::Datatype) {
        Some((((h as u32) >> 8) & 0xff) as usize)
    } else {
        None
    }
}

/// The object type a keyval applies to (bits 25-22 of builtin and user keyval handles), e.g.
/// [`ObjectType::Comm`] for `MPI_TAG_UB`; `None` if `h` is not a builtin or direct keyval.
pub const fn keyval_target(h: Handle) -> Option<ObjectType> {
    match (handle_kind(h), handle_object(h)) {
        (HandleKind::Builtin | HandleKind::Direct, ObjectType::Keyval) => {
            Some(ObjectType::from_bits((h as u32) >> QUALIFIER_SHIFT))
        }
        _ => None,
    }
}

// ---- handles of the objects MadMPI creates
//
// Layout of a user handle (32 bits):
//   31-30  kind = Direct (2): never clashes with builtin or null handles;
//   29-26  object type as MPICH numbers it, so `handle_object` works on every handle;
//   25-22  qualifier: a keyval's target object type (the layout of MPICH's builtin keyvals),
//          MESSAGE_QUALIFIER for a matched message (which MPICH types as a request), else 0;
//   21-0   USER_INDEX_BASE + slot, the slot being the owning module's table index.
// Indices below USER_INDEX_BASE are MPICH's predefined direct handles (the pair datatypes),
// so no user handle can equal a predefined one.

/// Number of bits of the index of a user handle.
pub const USER_INDEX_BITS: u32 = 22;
/// First index used by user handles; the lower ones belong to predefined direct handles
/// (`MPI_FLOAT_INT` .. `MPI_LONG_DOUBLE_INT` are direct datatypes 0 to 4).
pub const USER_INDEX_BASE: u32 = 16;
/// Largest slot a user handle can carry (about four million live objects per type).
pub const MAX_USER_SLOT: u32 = (1 << USER_INDEX_BITS) - 1 - USER_INDEX_BASE;
/// Qualifier of a request-typed handle that designates a matched message.
const MESSAGE_QUALIFIER: u32 = 1;

/// The kinds of objects MadMPI hands out handles for, with what their handles must encode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UserObject {
    /// A communicator.
    Comm,
    /// A group.
    Group,
    /// A derived datatype.
    Datatype,
    /// A request.
    Request,
    /// A matched message (`MPI_Mprobe`): request-typed, like MPICH's.
    Message,
    /// An error handler.
    Errhandler,
    /// A user reduction operation.
    Op,
    /// An info object.
    Info,
    /// A window.
    Win,
    /// A session (MPI-4).
    Session,
    /// An attribute key for objects of the given type: [`ObjectType::Comm`],
    /// [`ObjectType::Datatype`] or [`ObjectType::Win`].
    Keyval(ObjectType),
}

impl UserObject {
    /// The (object type, qualifier) pair of this kind's handles, `None` for an impossible
    /// keyval target.
    const fn bits(self) -> Option<(ObjectType, u32)> {
        Some(match self {
            UserObject::Comm => (ObjectType::Comm, 0),
            UserObject::Group => (ObjectType::Group, 0),
            UserObject::Datatype => (ObjectType::Datatype, 0),
            UserObject::Request => (ObjectType::Request, 0),
            UserObject::Message => (ObjectType::Request, MESSAGE_QUALIFIER),
            UserObject::Errhandler => (ObjectType::Errhandler, 0),
            UserObject::Op => (ObjectType::Op, 0),
            UserObject::Info => (ObjectType::Info, 0),
            UserObject::Win => (ObjectType::Win, 0),
            UserObject::Session => (ObjectType::Session, 0),
            UserObject::Keyval(target @ (ObjectType::Comm | ObjectType::Datatype | ObjectType::Win)) => {
                (ObjectType::Keyval, target as u32)
            }
            UserObject::Keyval(_) => return None,
        })
    }
}

/// The handle of the object of kind `object` in slot `slot` of its module's table; `None`
/// if the slot is above [`MAX_USER_SLOT`] or the keyval target is not a comm, type or window.
pub const fn encode_user_handle(object: UserObject, slot: u32) -> Option<Handle> {
    let Some((ty, qualifier)) = object.bits() else { return None };
    if slot > MAX_USER_SLOT {
        return None;
    }
    let bits = ((HandleKind::Direct as u32) << KIND_SHIFT)
        | ((ty as u32) << OBJECT_SHIFT)
        | (qualifier << QUALIFIER_SHIFT)
        | (slot + USER_INDEX_BASE);
    Some(bits as Handle)
}

/// The inverse of [`encode_user_handle`]: what `h` designates and its slot, or `None` if `h`
/// is not a handle MadMPI could have created (null, builtin, predefined direct, garbage).
pub const fn decode_user_handle(h: Handle) -> Option<(UserObject, u32)> {
    let bits = h as u32;
    if !matches!(handle_kind(h), HandleKind::Direct) {
        return None;
    }
    let index = bits & ((1 << USER_INDEX_BITS) - 1);
    if index < USER_INDEX_BASE {
        return None;
    }
    let qualifier = (bits >> QUALIFIER_SHIFT) & 0xf;
    let object = match (handle_object(h), qualifier) {
        (ObjectType::Comm, 0) => UserObject::Comm,
        (ObjectType::Group, 0) => UserObject::Group,
        (ObjectType::Datatype, 0) => UserObject::Datatype,
        (ObjectType::Request, 0) => UserObject::Request,
        (ObjectType::Request, MESSAGE_QUALIFIER) => UserObject::Message,
        (ObjectType::Errhandler, 0) => UserObject::Errhandler,
        (ObjectType::Op, 0) => UserObject::Op,
        (ObjectType::Info, 0) => UserObject::Info,
        (ObjectType::Win, 0) => UserObject::Win,
        (ObjectType::Session, 0) => UserObject::Session,
        (ObjectType::Keyval, q) => match ObjectType::from_bits(q) {
            target @ (ObjectType::Comm | ObjectType::Datatype | ObjectType::Win) => {
                UserObject::Keyval(target)
            }
            _ => return None,
        },
        _ => return None,
    };
    Some((object, index - USER_INDEX_BASE))
}

/// `MPI_Status`, with MPICH's layout (five `int`s; the C field names are in the docs).
///
/// The byte count is 63 bits wide: `count_lo` holds its low 32 bits, `count_hi_and_cancelled`
/// the rest shifted left by one, bit 0 of that field being the cancelled flag. Programs only
/// read it through `MPI_Get_count` and friends, but keeping MPICH's encoding keeps statuses
/// meaningful to tools that know it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Status {
    /// `count_lo`: low 32 bits of the received byte count.
    pub count_lo: c_int,
    /// `count_hi_and_cancelled`: high bits of the byte count, shifted left by one, and the
    /// cancelled flag in bit 0.
    pub count_hi_and_cancelled: c_int,
    /// `MPI_SOURCE`.
    pub source: c_int,
    /// `MPI_TAG`.
    pub tag: c_int,
    /// `MPI_ERROR`.
    pub error: c_int,
}

const _: () = assert!(size_of::<Status>() == 20 && align_of::<Status>() == 4);

impl Status {
    /// The received byte count.
    pub const fn count(&self) -> Count {
        let hi = (self.count_hi_and_cancelled as u32 >> 1) as u64;
        ((hi << 32) | self.count_lo as u32 as u64) as Count
    }

    /// Records a received byte count (non-negative), keeping the cancelled flag.
    pub fn set_count(&mut self, bytes: Count) {
        debug_assert!(bytes >= 0, "negative byte count {bytes}");
        let bytes = bytes as u64;
        self.count_lo = bytes as u32 as c_int;
        self.count_hi_and_cancelled =
            (self.count_hi_and_cancelled & 1) | (((bytes >> 32) as u32) << 1) as c_int;
    }

    /// Whether the request this status describes was cancelled.
    pub const fn cancelled(&self) -> bool {
        self.count_hi_and_cancelled & 1 != 0
    }

    /// Records whether the request was cancelled, keeping the byte count.
    pub fn set_cancelled(&mut self, cancelled: bool) {
        self.count_hi_and_cancelled = (self.count_hi_and_cancelled & !1) | cancelled as c_int;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn kinds_and_objects_of_predefined_handles() {
        assert_eq!(handle_kind(MPI_COMM_NULL), HandleKind::Invalid);
        assert_eq!(handle_kind(MPI_COMM_WORLD), HandleKind::Builtin);
        assert_eq!(handle_kind(MPI_DOUBLE_INT), HandleKind::Direct);
        assert_eq!(handle_object(MPI_COMM_SELF), ObjectType::Comm);
        assert_eq!(handle_object(MPI_GROUP_EMPTY), ObjectType::Group);
        assert_eq!(handle_object(MPI_LONG_DOUBLE_INT), ObjectType::Datatype);
        assert_eq!(handle_object(MPI_ERRORS_RETURN), ObjectType::Errhandler);
        assert_eq!(handle_object(MPI_SUM), ObjectType::Op);
        assert_eq!(handle_object(MPI_INFO_ENV), ObjectType::Info);
        assert_eq!(handle_object(MPI_WIN_NULL), ObjectType::Win);
        assert_eq!(handle_object(MPI_KEYVAL_INVALID), ObjectType::Keyval);
        assert_eq!(handle_object(MPI_MESSAGE_NO_PROC), ObjectType::Request);
        assert_eq!(keyval_target(MPI_TAG_UB), Some(ObjectType::Comm));
        assert_eq!(keyval_target(MPI_APPNUM), Some(ObjectType::Comm));
        assert_eq!(keyval_target(MPI_KEYVAL_INVALID), None);
    }

    #[test]
    fn builtin_sizes() {
        assert_eq!(builtin_datatype_size(MPI_CHAR), Some(1));
        assert_eq!(builtin_datatype_size(MPI_INT), Some(4));
        assert_eq!(builtin_datatype_size(MPI_LONG_DOUBLE), Some(16));
        assert_eq!(builtin_datatype_size(MPI_C_LONG_DOUBLE_COMPLEX), Some(32));
        assert_eq!(builtin_datatype_size(MPI_2INT), Some(8));
        assert_eq!(builtin_datatype_size(MPI_LB), Some(0));
        assert_eq!(builtin_datatype_size(MPI_DATATYPE_NULL), None);
        assert_eq!(builtin_datatype_size(MPI_FLOAT_INT), None);
        assert_eq!(builtin_datatype_size(MPI_COMM_WORLD), None);
    }

    #[test]
    fn no_predefined_value_decodes_as_a_user_handle() {
        for &(name, value) in C_CONSTANTS {
            assert_eq!(decode_user_handle(value as Handle), None, "{name}");
        }
    }

    #[test]
    fn user_handle_limits() {
        assert_eq!(encode_user_handle(UserObject::Comm, MAX_USER_SLOT + 1), None);
        assert_eq!(encode_user_handle(UserObject::Keyval(ObjectType::Group), 0), None);
        let last = encode_user_handle(UserObject::Keyval(ObjectType::Win), MAX_USER_SLOT).unwrap();
        assert_eq!(decode_user_handle(last), Some((UserObject::Keyval(ObjectType::Win), MAX_USER_SLOT)));
        assert_eq!(keyval_target(last), Some(ObjectType::Win));
        // A message and a request in the same slot are different handles.
        assert_ne!(encode_user_handle(UserObject::Message, 3), encode_user_handle(UserObject::Request, 3));
    }

    fn user_object() -> impl Strategy<Value = UserObject> {
        prop_oneof![
            Just(UserObject::Comm),
            Just(UserObject::Group),
            Just(UserObject::Datatype),
            Just(UserObject::Request),
            Just(UserObject::Message),
            Just(UserObject::Errhandler),
            Just(UserObject::Op),
            Just(UserObject::Info),
            Just(UserObject::Win),
            Just(UserObject::Session),
            Just(UserObject::Keyval(ObjectType::Comm)),
            Just(UserObject::Keyval(ObjectType::Datatype)),
            Just(UserObject::Keyval(ObjectType::Win)),
        ]
    }

    proptest! {
        #[test]
        fn user_handles_round_trip(object in user_object(), slot in 0..=MAX_USER_SLOT) {
            let h = encode_user_handle(object, slot).unwrap();
            prop_assert_eq!(handle_kind(h), HandleKind::Direct);
            prop_assert_eq!(decode_user_handle(h), Some((object, slot)));
        }

        #[test]
        fn decoding_is_injective(h in any::<i32>()) {
            if let Some((object, slot)) = decode_user_handle(h) {
                prop_assert_eq!(encode_user_handle(object, slot), Some(h));
            }
        }

        #[test]
        fn status_count_and_flag_are_independent(count in 0..=i64::MAX, cancelled: bool) {
            let mut st = Status::default();
            st.set_cancelled(cancelled);
            st.set_count(count);
            prop_assert_eq!(st.count(), count);
            prop_assert_eq!(st.cancelled(), cancelled);
            st.set_cancelled(!cancelled);
            prop_assert_eq!(st.count(), count);
        }
    }
}
