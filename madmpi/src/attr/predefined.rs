//! The predefined attributes (`MPI_TAG_UB`, `MPI_HOST`, ...) as symbols, with their values computed
//! from the job's parameters. They are not stored in tables: every communicator reports them (as
//! MPICH does for duplicates of `MPI_COMM_WORLD` too), and they cannot be set, deleted or freed.

use crate::error::{ERR_LASTCODE, Error};

/// A predefined attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PredefinedKey {
    /// `MPI_TAG_UB`: the largest tag.
    TagUb,
    /// `MPI_HOST`: the host process, if any.
    Host,
    /// `MPI_IO`: a process that can do I/O.
    Io,
    /// `MPI_WTIME_IS_GLOBAL`: whether clocks are synchronized.
    WtimeIsGlobal,
    /// `MPI_UNIVERSE_SIZE`: how many processes the job may have (absent when unknown).
    UniverseSize,
    /// `MPI_LASTUSEDCODE`: the largest user-added error code or class.
    LastUsedCode,
    /// `MPI_APPNUM`: which command of an MPMD launch started this process (absent when unknown).
    AppNum,
}

/// A process named by an attribute: a rank, or one of MPI's special values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProcRef {
    /// `MPI_PROC_NULL`: none.
    Null,
    /// `MPI_ANY_SOURCE`: every process.
    Any,
    /// This rank.
    Rank(u32),
}

/// The value of a predefined attribute (the C layer stores it in an `int`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttrValue {
    /// A number.
    Int(i32),
    /// A boolean (0 or 1 in C).
    Bool(bool),
    /// A process.
    Proc(ProcRef),
}

/// What the predefined attributes are computed from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Environment {
    /// The largest tag: see [`Environment::tag_ub_for_bits`].
    pub tag_ub: i32,
    /// The host process (`None`: `MPI_PROC_NULL`, what MPICH reports).
    pub host: Option<u32>,
    /// Who can do I/O (MPICH reports `MPI_ANY_SOURCE`: every process).
    pub io: ProcRef,
    /// Whether `MPI_Wtime` is synchronized across processes.
    pub wtime_is_global: bool,
    /// From the launcher, when it tells.
    pub universe_size: Option<u32>,
    /// The largest user-added error code or class (`MPI_ERR_LASTCODE` before any).
    pub last_used_code: i32,
    /// From the launcher, when it tells.
    pub appnum: Option<u32>,
}

impl Default for Environment {
    fn default() -> Self {
        Environment {
            tag_ub: i32::MAX,
            host: None,
            io: ProcRef::Any,
            wtime_is_global: false,
            universe_size: None,
            last_used_code: ERR_LASTCODE,
            appnum: None,
        }
    }
}

impl Environment {
    /// The largest MPI tag when `bits` bits of nmad's 64-bit tag carry it: MPI tags are
    /// nonnegative `int`s, so at most `i32::MAX` (MPICH's is 2^28 - 1 here).
    pub fn tag_ub_for_bits(bits: u32) -> i32 {
        if bits >= 31 { i32::MAX } else { (1i32 << bits) - 1 }
    }
}

impl PredefinedKey {
    /// Every predefined attribute.
    pub const ALL: [PredefinedKey; 7] = [
        PredefinedKey::TagUb,
        PredefinedKey::Host,
        PredefinedKey::Io,
        PredefinedKey::WtimeIsGlobal,
        PredefinedKey::UniverseSize,
        PredefinedKey::LastUsedCode,
        PredefinedKey::AppNum,
    ];

    /// The C constant's name, e.g. `"MPI_TAG_UB"`.
    pub const fn name(self) -> &'static str {
        match self {
            PredefinedKey::TagUb => "MPI_TAG_UB",
            PredefinedKey::Host => "MPI_HOST",
            PredefinedKey::Io => "MPI_IO",
            PredefinedKey::WtimeIsGlobal => "MPI_WTIME_IS_GLOBAL",
            PredefinedKey::UniverseSize => "MPI_UNIVERSE_SIZE",
            PredefinedKey::LastUsedCode => "MPI_LASTUSEDCODE",
            PredefinedKey::AppNum => "MPI_APPNUM",
        }
    }

    /// The attribute's value, `None` when it is absent (`flag = 0`).
    pub fn value(self, env: &Environment) -> Option<AttrValue> {
        let int = |n: u32| AttrValue::Int(i32::try_from(n).unwrap_or(i32::MAX));
        match self {
            PredefinedKey::TagUb => Some(AttrValue::Int(env.tag_ub)),
            PredefinedKey::Host => Some(AttrValue::Proc(env.host.map_or(ProcRef::Null, ProcRef::Rank))),
            PredefinedKey::Io => Some(AttrValue::Proc(env.io)),
            PredefinedKey::WtimeIsGlobal => Some(AttrValue::Bool(env.wtime_is_global)),
            PredefinedKey::UniverseSize => env.universe_size.map(int),
            PredefinedKey::LastUsedCode => Some(AttrValue::Int(env.last_used_code)),
            PredefinedKey::AppNum => env.appnum.map(int),
        }
    }

    /// The error for setting, deleting or freeing a predefined attribute in function `func`:
    /// `MPI_ERR_KEYVAL`, as MPICH 4.0.2 reports.
    pub fn read_only(self, func: &str) -> Error {
        Error::keyval(format!("{func}: {} is predefined and cannot be changed", self.name()))
    }
}
