//! The vocabulary of variable descriptions — datatypes, verbosity, scope, binding, class — with
//! MPICH 4.0's values for C, and [`Value`], a variable's value in the datatype it declares.
//!
//! Owns these encodings; what the variables mean is in `cvars`, `pvars` and `events`.

use super::error::{TError, TResult};
use crate::abi;

/// The datatype of a variable's elements (MPI 4.0 §15.3.5 allows these and a few more).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    Int,
    Unsigned,
    UnsignedLong,
    UnsignedLongLong,
    Double,
    /// A string of at most the variable's count bytes, NUL included.
    Char,
}

impl Type {
    /// The MPI datatype handle.
    pub const fn handle(self) -> abi::Datatype {
        match self {
            Type::Int => abi::MPI_INT,
            Type::Unsigned => abi::MPI_UNSIGNED,
            Type::UnsignedLong => abi::MPI_UNSIGNED_LONG,
            Type::UnsignedLongLong => abi::MPI_UNSIGNED_LONG_LONG,
            Type::Double => abi::MPI_DOUBLE,
            Type::Char => abi::MPI_CHAR,
        }
    }

    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            Type::Int | Type::Unsigned => 4,
            Type::UnsignedLong | Type::UnsignedLongLong | Type::Double => 8,
            Type::Char => 1,
        }
    }
}

/// A value: a number of any numeric [`Type`], or text.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Uint(u64),
    Double(f64),
    Text(String),
}

impl Value {
    /// The C bytes of this value as `count` elements of `ty` (text is cut to `count - 1` bytes
    /// on a character boundary and NUL-terminated).
    pub fn encode(&self, ty: Type, count: usize) -> Vec<u8> {
        match (self, ty) {
            (Value::Text(s), Type::Char) => {
                let mut n = s.len().min(count.saturating_sub(1));
                while !s.is_char_boundary(n) {
                    n -= 1;
                }
                let mut v = s.as_bytes()[..n].to_vec();
                v.push(0);
                v
            }
            (v, Type::Int) => (v.as_i64() as i32).to_ne_bytes().to_vec(),
            (v, Type::Unsigned) => (v.as_u64() as u32).to_ne_bytes().to_vec(),
            (v, Type::UnsignedLong | Type::UnsignedLongLong) => v.as_u64().to_ne_bytes().to_vec(),
            (v, Type::Double) => v.as_f64().to_ne_bytes().to_vec(),
            (_, Type::Char) => vec![0],
        }
    }

    /// The value C wrote in `bytes` as elements of `ty` (text ends at the first NUL).
    pub fn decode(ty: Type, bytes: &[u8]) -> TResult<Value> {
        let fixed = |n: usize| bytes.get(..n).ok_or(TError::Arg);
        Ok(match ty {
            Type::Int => {
                Value::Int(i32::from_ne_bytes(fixed(4)?.try_into().map_err(|_| TError::Arg)?).into())
            }
            Type::Unsigned => {
                Value::Uint(u32::from_ne_bytes(fixed(4)?.try_into().map_err(|_| TError::Arg)?).into())
            }
            Type::UnsignedLong | Type::UnsignedLongLong => {
                Value::Uint(u64::from_ne_bytes(fixed(8)?.try_into().map_err(|_| TError::Arg)?))
            }
            Type::Double => Value::Double(f64::from_ne_bytes(fixed(8)?.try_into().map_err(|_| TError::Arg)?)),
            Type::Char => {
                let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
                Value::Text(String::from_utf8_lossy(&bytes[..end]).into_owned())
            }
        })
    }

    pub fn as_i64(&self) -> i64 {
        match *self {
            Value::Int(v) => v,
            Value::Uint(v) => v as i64,
            Value::Double(v) => v as i64,
            Value::Text(_) => 0,
        }
    }

    pub fn as_u64(&self) -> u64 {
        match *self {
            Value::Int(v) => v as u64,
            Value::Uint(v) => v,
            Value::Double(v) => v as u64,
            Value::Text(_) => 0,
        }
    }

    pub fn as_f64(&self) -> f64 {
        match *self {
            Value::Int(v) => v as f64,
            Value::Uint(v) => v as f64,
            Value::Double(v) => v,
            Value::Text(_) => 0.0,
        }
    }
}

/// Who a variable is for, and how much detail (`MPI_T_VERBOSITY_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verbosity {
    UserBasic,
    UserDetail,
    UserAll,
    TunerBasic,
    TunerDetail,
    TunerAll,
    DevBasic,
    DevDetail,
    DevAll,
}

impl Verbosity {
    pub const fn code(self) -> i32 {
        221 + self as i32
    }
}

/// Where a control variable may change (`MPI_T_SCOPE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Read-only, and the same for the whole run.
    Constant,
    /// Read-only (set from the environment at start-up).
    Readonly,
    /// Writable, each process on its own.
    Local,
    Group,
    GroupEq,
    All,
    /// Writable, to the same value in every process of the job, at the same point.
    AllEq,
}

impl Scope {
    pub const fn code(self) -> i32 {
        60438 + self as i32
    }
}

/// What a variable is bound to (`MPI_T_BIND_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bind {
    NoObject,
    Comm,
}

impl Bind {
    pub const fn code(self) -> i32 {
        match self {
            Bind::NoObject => 9700,
            Bind::Comm => 9701,
        }
    }
}

/// What a performance variable measures (`MPI_T_PVAR_CLASS_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    State,
    Level,
    Size,
    Percentage,
    HighWatermark,
    LowWatermark,
    Counter,
    Aggregate,
    Timer,
    Generic,
}

impl Class {
    pub const fn code(self) -> i32 {
        240 + self as i32
    }

    /// Classes whose handles accumulate while started (start/stop/reset apply).
    pub const fn accumulates(self) -> bool {
        matches!(self, Class::Counter | Class::Aggregate | Class::Timer)
    }

    pub fn from_code(c: i32) -> Option<Class> {
        use Class::*;
        [State, Level, Size, Percentage, HighWatermark, LowWatermark, Counter, Aggregate, Timer, Generic]
            .into_iter()
            .find(|k| k.code() == c)
    }
}

/// Who may run an event callback where (`MPI_T_CB_REQUIRE_*`), from the least to the most
/// restrictive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Safety {
    None,
    MpiRestricted,
    ThreadSafe,
    AsyncSignalSafe,
}

impl Safety {
    pub const ALL: [Safety; 4] =
        [Safety::None, Safety::MpiRestricted, Safety::ThreadSafe, Safety::AsyncSignalSafe];

    pub fn from_code(c: i32) -> Option<Safety> {
        Safety::ALL.get(usize::try_from(c).ok()?).copied()
    }

    pub const fn code(self) -> i32 {
        self as i32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpich_values() {
        assert_eq!(Verbosity::UserBasic.code(), 221);
        assert_eq!(Verbosity::DevAll.code(), 229);
        assert_eq!(Scope::Constant.code(), 60438);
        assert_eq!(Scope::AllEq.code(), 60444);
        assert_eq!(Class::State.code(), 240);
        assert_eq!(Class::Generic.code(), 249);
        assert_eq!(Class::from_code(246), Some(Class::Counter));
        assert_eq!(Class::from_code(250), None);
        assert_eq!(Bind::Comm.code(), 9701);
    }

    #[test]
    fn values_round_trip_through_c_bytes() {
        let b = Value::Int(-3).encode(Type::Int, 1);
        assert_eq!(Value::decode(Type::Int, &b).unwrap(), Value::Int(-3));
        let b = Value::Uint(1 << 40).encode(Type::UnsignedLongLong, 1);
        assert_eq!(Value::decode(Type::UnsignedLongLong, &b).unwrap(), Value::Uint(1 << 40));
        let b = Value::Text("héllo".into()).encode(Type::Char, 3);
        assert_eq!(b, b"h\0", "cut before the two-byte character, NUL-terminated");
        assert_eq!(Value::decode(Type::Char, b"ab\0cd").unwrap(), Value::Text("ab".into()));
        assert_eq!(Value::decode(Type::Int, &[1, 2]), Err(TError::Arg));
    }
}
