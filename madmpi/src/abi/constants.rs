//! The constants of MPICH's `mpi.h` that MadMPI serves: predefined handles, special ranks and
//! tags, thread levels, keyvals, buffer lengths, sentinel addresses, listed in [`C_CONSTANTS`]
//! for `tests/abi.rs`.

use super::*;
use core::ffi::c_int;

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
