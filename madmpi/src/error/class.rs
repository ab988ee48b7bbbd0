//! The MPI error classes, with MPICH 4.0's numeric values (its `mpi.h`), so the C library can hand
//! them out unchanged (ABI compatibility).

/// Generates [`ErrorClass`], its lookups and one [`super::Error`] constructor per class from one
/// table, so a class cannot be added in one place and forgotten in another.
macro_rules! classes {
    ($($variant:ident = $value:literal, $name:literal, $desc:literal, $ctor:ident;)*) => {
        /// An MPI error class (`MPI_SUCCESS` included). `code()` is the value in MPICH's `mpi.h`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum ErrorClass {
            /// `MPI_SUCCESS`: no error.
            Success,
            $(#[doc = concat!("`", $name, "`: ", $desc, ".")] $variant,)*
        }

        impl ErrorClass {
            /// Every class, in increasing code order.
            pub const ALL: &'static [ErrorClass] = &[ErrorClass::Success, $(ErrorClass::$variant,)*];

            /// The class's value in MPICH's `mpi.h` (also the code MPI returns for it).
            pub const fn code(self) -> i32 {
                match self {
                    ErrorClass::Success => 0,
                    $(ErrorClass::$variant => $value,)*
                }
            }

            /// The class whose value is `code`; `None` for any other number (including the richer
            /// codes of [`super::CodeRegistry`]: use [`super::error_class`] for those).
            pub const fn from_code(code: i32) -> Option<ErrorClass> {
                match code {
                    0 => Some(ErrorClass::Success),
                    $($value => Some(ErrorClass::$variant),)*
                    _ => None,
                }
            }

            /// The constant's name, e.g. `"MPI_ERR_TRUNCATE"`.
            pub const fn name(self) -> &'static str {
                match self {
                    ErrorClass::Success => "MPI_SUCCESS",
                    $(ErrorClass::$variant => $name,)*
                }
            }

            /// What the class means, e.g. `"message truncated"`.
            pub const fn description(self) -> &'static str {
                match self {
                    ErrorClass::Success => "no error",
                    $(ErrorClass::$variant => $desc,)*
                }
            }

            /// The class's error string, e.g. `"MPI_ERR_TRUNCATE: message truncated"` (what
            /// `MPI_Error_string` returns for the class itself).
            pub const fn as_str(self) -> &'static str {
                match self {
                    ErrorClass::Success => "MPI_SUCCESS: no error",
                    $(ErrorClass::$variant => concat!($name, ": ", $desc),)*
                }
            }
        }

        impl super::Error {
            $(
                #[doc = concat!("An error of class `", $name, "` (", $desc, ") with this message.")]
                pub fn $ctor(message: impl Into<String>) -> Self {
                    Self::new(ErrorClass::$variant, message)
                }
            )*
        }
    };
}

classes! {
    Buffer = 1, "MPI_ERR_BUFFER", "invalid buffer pointer", buffer;
    Count = 2, "MPI_ERR_COUNT", "invalid count", count;
    Type = 3, "MPI_ERR_TYPE", "invalid datatype", datatype;
    Tag = 4, "MPI_ERR_TAG", "invalid tag", tag;
    Comm = 5, "MPI_ERR_COMM", "invalid communicator", comm;
    Rank = 6, "MPI_ERR_RANK", "invalid rank", rank;
    Root = 7, "MPI_ERR_ROOT", "invalid root", root;
    Group = 8, "MPI_ERR_GROUP", "invalid group", group;
    Op = 9, "MPI_ERR_OP", "invalid reduction operation", op;
    Topology = 10, "MPI_ERR_TOPOLOGY", "invalid topology", topology;
    Dims = 11, "MPI_ERR_DIMS", "invalid dimensions", dims;
    Arg = 12, "MPI_ERR_ARG", "invalid argument", arg;
    Unknown = 13, "MPI_ERR_UNKNOWN", "unknown error", unknown;
    Truncate = 14, "MPI_ERR_TRUNCATE", "message truncated", truncate;
    Other = 15, "MPI_ERR_OTHER", "other error", other;
    Intern = 16, "MPI_ERR_INTERN", "internal error", intern;
    InStatus = 17, "MPI_ERR_IN_STATUS", "see the error field of each status", in_status;
    Pending = 18, "MPI_ERR_PENDING", "request still pending", pending;
    Request = 19, "MPI_ERR_REQUEST", "invalid request", request;
    Access = 20, "MPI_ERR_ACCESS", "permission denied", access;
    Amode = 21, "MPI_ERR_AMODE", "invalid file access mode", amode;
    BadFile = 22, "MPI_ERR_BAD_FILE", "invalid file name", bad_file;
    Conversion = 23, "MPI_ERR_CONVERSION", "data conversion failed", conversion;
    DupDatarep = 24, "MPI_ERR_DUP_DATAREP", "data representation already defined", dup_datarep;
    FileExists = 25, "MPI_ERR_FILE_EXISTS", "file exists", file_exists;
    FileInUse = 26, "MPI_ERR_FILE_IN_USE", "file in use by another process", file_in_use;
    File = 27, "MPI_ERR_FILE", "invalid file handle", file;
    Info = 28, "MPI_ERR_INFO", "invalid info object", info;
    InfoKey = 29, "MPI_ERR_INFO_KEY", "info key empty or too long", info_key;
    InfoValue = 30, "MPI_ERR_INFO_VALUE", "info value empty or too long", info_value;
    InfoNokey = 31, "MPI_ERR_INFO_NOKEY", "no such info key", info_nokey;
    Io = 32, "MPI_ERR_IO", "I/O error", io;
    Name = 33, "MPI_ERR_NAME", "service name not published", name;
    NoMem = 34, "MPI_ERR_NO_MEM", "out of memory", no_mem;
    NotSame = 35, "MPI_ERR_NOT_SAME", "collective arguments differ between processes", not_same;
    NoSpace = 36, "MPI_ERR_NO_SPACE", "no space left", no_space;
    NoSuchFile = 37, "MPI_ERR_NO_SUCH_FILE", "no such file", no_such_file;
    Port = 38, "MPI_ERR_PORT", "invalid port name", port;
    Quota = 39, "MPI_ERR_QUOTA", "quota exceeded", quota;
    ReadOnly = 40, "MPI_ERR_READ_ONLY", "read-only file or file system", read_only;
    Service = 41, "MPI_ERR_SERVICE", "service name error", service;
    Spawn = 42, "MPI_ERR_SPAWN", "could not spawn processes", spawn;
    UnsupportedDatarep = 43, "MPI_ERR_UNSUPPORTED_DATAREP", "unsupported data representation",
        unsupported_datarep;
    UnsupportedOperation = 44, "MPI_ERR_UNSUPPORTED_OPERATION", "unsupported operation",
        unsupported_operation;
    Win = 45, "MPI_ERR_WIN", "invalid window", win;
    Base = 46, "MPI_ERR_BASE", "invalid base address", base;
    Locktype = 47, "MPI_ERR_LOCKTYPE", "invalid lock type", locktype;
    Keyval = 48, "MPI_ERR_KEYVAL", "invalid attribute key", keyval;
    RmaConflict = 49, "MPI_ERR_RMA_CONFLICT", "conflicting accesses to a window", rma_conflict;
    RmaSync = 50, "MPI_ERR_RMA_SYNC", "RMA call outside a synchronization epoch", rma_sync;
    Size = 51, "MPI_ERR_SIZE", "invalid size", size;
    Disp = 52, "MPI_ERR_DISP", "invalid displacement", disp;
    Assert = 53, "MPI_ERR_ASSERT", "invalid assertion", assert;
    RmaRange = 55, "MPI_ERR_RMA_RANGE", "target memory outside the window", rma_range;
    RmaAttach = 56, "MPI_ERR_RMA_ATTACH", "memory cannot be attached", rma_attach;
    RmaShared = 57, "MPI_ERR_RMA_SHARED", "memory cannot be shared", rma_shared;
    RmaFlavor = 58, "MPI_ERR_RMA_FLAVOR", "wrong window flavor", rma_flavor;
    TMemory = 59, "MPI_T_ERR_MEMORY", "tool interface out of memory", t_memory;
    TNotInitialized = 60, "MPI_T_ERR_NOT_INITIALIZED", "tool interface not initialized",
        t_not_initialized;
    TCannotInit = 61, "MPI_T_ERR_CANNOT_INIT", "tool interface cannot be initialized now",
        t_cannot_init;
    TInvalidIndex = 62, "MPI_T_ERR_INVALID_INDEX", "invalid or deleted index", t_invalid_index;
    TInvalidItem = 63, "MPI_T_ERR_INVALID_ITEM", "invalid item index", t_invalid_item;
    TInvalidHandle = 64, "MPI_T_ERR_INVALID_HANDLE", "invalid tool handle", t_invalid_handle;
    TOutOfHandles = 65, "MPI_T_ERR_OUT_OF_HANDLES", "no more tool handles", t_out_of_handles;
    TOutOfSessions = 66, "MPI_T_ERR_OUT_OF_SESSIONS", "no more tool sessions", t_out_of_sessions;
    TInvalidSession = 67, "MPI_T_ERR_INVALID_SESSION", "invalid tool session", t_invalid_session;
    TCvarSetNotNow = 68, "MPI_T_ERR_CVAR_SET_NOT_NOW", "control variable cannot be set now",
        t_cvar_set_not_now;
    TCvarSetNever = 69, "MPI_T_ERR_CVAR_SET_NEVER", "control variable can no longer be set",
        t_cvar_set_never;
    TPvarNoStartstop = 70, "MPI_T_ERR_PVAR_NO_STARTSTOP",
        "performance variable cannot be started or stopped", t_pvar_no_startstop;
    TPvarNoWrite = 71, "MPI_T_ERR_PVAR_NO_WRITE", "performance variable cannot be written or reset",
        t_pvar_no_write;
    TPvarNoAtomic = 72, "MPI_T_ERR_PVAR_NO_ATOMIC",
        "performance variable cannot be read and written atomically", t_pvar_no_atomic;
    TInvalidName = 73, "MPI_T_ERR_INVALID_NAME", "no tool variable of that name", t_invalid_name;
    TInvalid = 74, "MPI_T_ERR_INVALID", "invalid use of the tool interface", t_invalid;
    Session = 75, "MPI_ERR_SESSION", "invalid session", session;
    ProcAborted = 76, "MPI_ERR_PROC_ABORTED", "peer process aborted", proc_aborted;
    ValueTooLarge = 77, "MPI_ERR_VALUE_TOO_LARGE", "value too large to store", value_too_large;
    TNotSupported = 78, "MPI_T_ERR_NOT_SUPPORTED", "tool functionality not supported",
        t_not_supported;
    MpixProcFailed = 101, "MPIX_ERR_PROC_FAILED", "process failed", mpix_proc_failed;
    MpixProcFailedPending = 102, "MPIX_ERR_PROC_FAILED_PENDING",
        "request pending because of a process failure", mpix_proc_failed_pending;
    MpixRevoked = 103, "MPIX_ERR_REVOKED", "communication object revoked", mpix_revoked;
    MpixEagain = 104, "MPIX_ERR_EAGAIN", "operation cannot be issued now", mpix_eagain;
    MpixNoreq = 105, "MPIX_ERR_NOREQ", "cannot allocate a request", mpix_noreq;
}

/// `MPI_ERR_LASTCODE` in MPICH: every predefined code is at most this; the richer codes of
/// [`super::CodeRegistry`] are above it.
pub const ERR_LASTCODE: i32 = 0x3fff_ffff;

impl std::fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_mpich_4_0_2s() {
        // From /usr/include/x86_64-linux-gnu/mpich/mpi.h (MPICH 4.0.2).
        let expected = [
            (ErrorClass::Success, 0),
            (ErrorClass::Buffer, 1),
            (ErrorClass::Root, 7),
            (ErrorClass::Group, 8),
            (ErrorClass::Truncate, 14),
            (ErrorClass::Other, 15),
            (ErrorClass::Request, 19),
            (ErrorClass::Io, 32),
            (ErrorClass::Keyval, 48),
            (ErrorClass::Assert, 53),
            (ErrorClass::RmaRange, 55),
            (ErrorClass::TNotSupported, 78),
            (ErrorClass::MpixNoreq, 105),
        ];
        for (class, code) in expected {
            assert_eq!(class.code(), code, "{class:?}");
        }
    }

    #[test]
    fn from_code_inverts_code_and_names_are_unique() {
        let mut names = std::collections::HashSet::new();
        for pair in ErrorClass::ALL.windows(2) {
            assert!(pair[0].code() < pair[1].code());
        }
        for &class in ErrorClass::ALL {
            assert_eq!(ErrorClass::from_code(class.code()), Some(class));
            assert!(names.insert(class.name()));
            assert!(class.code() <= ERR_LASTCODE);
        }
        for gap in [-1, 54, 79, 100, 106, ERR_LASTCODE] {
            assert_eq!(ErrorClass::from_code(gap), None);
        }
    }

    #[test]
    fn strings() {
        assert_eq!(ErrorClass::Truncate.to_string(), "MPI_ERR_TRUNCATE: message truncated");
        assert_eq!(ErrorClass::Success.as_str(), "MPI_SUCCESS: no error");
        assert_eq!(ErrorClass::TMemory.name(), "MPI_T_ERR_MEMORY");
    }
}
