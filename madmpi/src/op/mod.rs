//! Reduction operations (MPI 4.0 §6.9): the predefined operations (`MPI_MAX` ... `MPI_NO_OP`)
//! and user operations, applied to buffers in memory.
//!
//! This module owns what an operation *is* (builtin or user function, commutativity), which
//! datatypes each builtin accepts, and the element-wise arithmetic. It does **no
//! communication** and knows no communicator or handle value: the collective algorithms
//! (`coll`) move the data and call [`Op::reduce`] on local buffers; the C binding maps `MPI_Op`
//! handles to [`Op`] and error classes to numbers.
//!
//! Builtins work on **packed** buffers: the datatype's signature laid out contiguously, as
//! [`Datatype::pack`] produces (for a contiguous type, that is its memory). A derived datatype
//! is accepted when every basic element of its type map is one and the same predefined type
//! that the operation accepts (a vector of `MPI_INT` for `MPI_SUM`, a contiguous run of
//! `MPI_2INT` for `MPI_MAXLOC`); the packed buffer is then just a sequence of that type.
//!
//! ```
//! use madmpi::datatype::{Datatype, Predefined};
//! use madmpi::op::{Builtin, Op};
//! let int = Datatype::predefined(Predefined::Int);
//! let sum = Op::builtin(Builtin::Sum);
//! let input: Vec<u8> = [1i32, 2].iter().flat_map(|v| v.to_ne_bytes()).collect();
//! let mut inout: Vec<u8> = [10i32, -20].iter().flat_map(|v| v.to_ne_bytes()).collect();
//! sum.reduce(&input, &mut inout, 2, &int).unwrap();
//! assert_eq!(inout, [11i32, -18].iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>());
//! ```
//!
//! Layout: this file (the API, type checks, bounds checks); `kernels` (the typed loops and the
//! table of accepted type × operation pairs); `x87` (`long double` arithmetic on x86-64).

mod kernels;
#[cfg(test)]
mod tests;
#[cfg(target_arch = "x86_64")]
mod x87;

use crate::datatype::{COMBINER_STRUCT, Datatype, Predefined};
use crate::error::{Error, Result};
use std::fmt;
use std::sync::{Arc, OnceLock};

/// A predefined reduction operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// `MPI_MAX`: C integers (and `MPI_CHAR`), floating types.
    Max,
    /// `MPI_MIN`: as [`Builtin::Max`].
    Min,
    /// `MPI_SUM`: C integers, floating and complex types.
    Sum,
    /// `MPI_PROD`: as [`Builtin::Sum`].
    Prod,
    /// `MPI_LAND`: C integers and `MPI_C_BOOL`.
    Land,
    /// `MPI_BAND`: C integers and `MPI_BYTE`.
    Band,
    /// `MPI_LOR`: as [`Builtin::Land`].
    Lor,
    /// `MPI_BOR`: as [`Builtin::Band`].
    Bor,
    /// `MPI_LXOR`: as [`Builtin::Land`].
    Lxor,
    /// `MPI_BXOR`: as [`Builtin::Band`].
    Bxor,
    /// `MPI_MAXLOC`: the pair types (`MPI_FLOAT_INT` ... `MPI_LONG_DOUBLE_INT`).
    Maxloc,
    /// `MPI_MINLOC`: as [`Builtin::Maxloc`].
    Minloc,
    /// `MPI_REPLACE` (one-sided accumulate): the input replaces inout; any datatype.
    Replace,
    /// `MPI_NO_OP` (one-sided fetch): inout is left as it is; any datatype.
    NoOp,
}

impl Builtin {
    /// Every builtin, in MPICH's handle order (`MPI_MAX` = 0x58000001 ... `MPI_NO_OP`).
    pub const ALL: [Builtin; 14] = [
        Builtin::Max,
        Builtin::Min,
        Builtin::Sum,
        Builtin::Prod,
        Builtin::Land,
        Builtin::Band,
        Builtin::Lor,
        Builtin::Bor,
        Builtin::Lxor,
        Builtin::Bxor,
        Builtin::Minloc,
        Builtin::Maxloc,
        Builtin::Replace,
        Builtin::NoOp,
    ];

    /// The MPI name, e.g. `"MPI_SUM"`.
    pub fn name(self) -> &'static str {
        match self {
            Builtin::Max => "MPI_MAX",
            Builtin::Min => "MPI_MIN",
            Builtin::Sum => "MPI_SUM",
            Builtin::Prod => "MPI_PROD",
            Builtin::Land => "MPI_LAND",
            Builtin::Band => "MPI_BAND",
            Builtin::Lor => "MPI_LOR",
            Builtin::Bor => "MPI_BOR",
            Builtin::Lxor => "MPI_LXOR",
            Builtin::Bxor => "MPI_BXOR",
            Builtin::Maxloc => "MPI_MAXLOC",
            Builtin::Minloc => "MPI_MINLOC",
            Builtin::Replace => "MPI_REPLACE",
            Builtin::NoOp => "MPI_NO_OP",
        }
    }
}

/// A user function (`MPI_Op_create`'s `MPI_User_function`), with MPI's semantics:
/// `f(invec, inoutvec, count, datatype)` sets `inoutvec[i] = invec[i] op inoutvec[i]` for the
/// `count` elements of `datatype` in the buffers.
pub type UserFn = dyn Fn(&[u8], &mut [u8], usize, &Datatype) + Send + Sync;

/// A reduction operation: a [`Builtin`] or a user function. Cheap to clone (an `Arc`).
#[derive(Clone)]
pub struct Op(Arc<Inner>);

enum Inner {
    Builtin(Builtin),
    User { f: Arc<UserFn>, commutative: bool },
}

/// How builtin `b` combines elements of predefined type `p` into a target in place (`None`: not
/// defined on it): what the one-sided fast path applies under a target's accumulate lock.
pub(crate) fn combiner(b: Builtin, p: Predefined) -> Option<Plan> {
    match b {
        Builtin::Replace => Some(Plan::Copy),
        Builtin::NoOp => Some(Plan::Nothing),
        _ => kernels::kernel(b, p).map(Plan::Kernel),
    }
}

/// What a builtin does to a buffer pair, once the datatype is checked.
pub(crate) enum Plan {
    /// `MPI_REPLACE`: copy the input.
    Copy,
    /// `MPI_NO_OP`, or a type with no basic element: nothing to do.
    Nothing,
    /// The typed loop for the type's basic elements.
    Kernel(kernels::Kernel),
}

impl Op {
    /// The builtin `b` (the same object on every call).
    pub fn builtin(b: Builtin) -> Op {
        Op::builtin_ref(b).clone()
    }

    /// The builtin `b`, borrowed for the program's life: no reference count touched (what
    /// the express calls pass down).
    pub fn builtin_ref(b: Builtin) -> &'static Op {
        static TABLE: OnceLock<Vec<Op>> = OnceLock::new();
        let table =
            TABLE.get_or_init(|| Builtin::ALL.iter().map(|&b| Op(Arc::new(Inner::Builtin(b)))).collect());
        let i = Builtin::ALL.iter().position(|&x| x == b).expect("ALL lists every builtin");
        &table[i]
    }

    /// A user operation (`MPI_Op_create`): `f` combines elements, `commutative` says whether the
    /// collective algorithms may reorder its operands (otherwise they apply it in rank order).
    pub fn user(f: Arc<UserFn>, commutative: bool) -> Op {
        Op(Arc::new(Inner::User { f, commutative }))
    }

    /// `MPI_Op_commutative`: true for every builtin (`MPI_REPLACE` and `MPI_NO_OP` too, as MPICH
    /// reports), else what [`Op::user`] was told.
    pub fn is_commutative(&self) -> bool {
        match &*self.0 {
            Inner::Builtin(_) => true,
            Inner::User { commutative, .. } => *commutative,
        }
    }

    /// Whether the collective algorithms may combine contributions in any order. Not for
    /// `MPI_REPLACE` and `MPI_NO_OP` although they report commutative: combined in rank order,
    /// a reduction with them has one defined result on every algorithm and process count
    /// (`REPLACE` keeps rank 0's contribution, `NO_OP` the last rank's: the input of
    /// `inout = input op inout` is the lower ranks' part), where reordering would give any
    /// rank's. They are for one-sided accumulate; MPI leaves them undefined in collectives
    /// (MPICH rejects them there), and madmpi defines them this way.
    pub fn reorderable(&self) -> bool {
        match &*self.0 {
            Inner::Builtin(b) => !matches!(b, Builtin::Replace | Builtin::NoOp),
            Inner::User { commutative, .. } => *commutative,
        }
    }

    /// The builtin this is; `None` for a user operation.
    pub fn as_builtin(&self) -> Option<Builtin> {
        match &*self.0 {
            Inner::Builtin(b) => Some(*b),
            Inner::User { .. } => None,
        }
    }

    /// Checks that the operation may combine elements of `dt` (MPI 4.0 §6.9.2), with the error
    /// class `MPI_ERR_OP` otherwise, as MPICH reports it.
    ///
    /// Accepted (the table in `kernels`):
    /// - `MAX`, `MIN`: C integers of every width and signedness (`MPI_INT` ... `MPI_UINT64_T`,
    ///   `MPI_AINT`, `MPI_OFFSET`, `MPI_COUNT`, and `MPI_CHAR`, an MPICH extension), `MPI_FLOAT`,
    ///   `MPI_DOUBLE`, `MPI_LONG_DOUBLE`;
    /// - `SUM`, `PROD`: the same and the complex types `MPI_C_COMPLEX`, `MPI_C_DOUBLE_COMPLEX`,
    ///   `MPI_C_LONG_DOUBLE_COMPLEX`;
    /// - `LAND`, `LOR`, `LXOR`: C integers and `MPI_C_BOOL` (MPICH also takes floating types
    ///   here, which MPI does not define; they are rejected);
    /// - `BAND`, `BOR`, `BXOR`: C integers and `MPI_BYTE`;
    /// - `MAXLOC`, `MINLOC`: the pair types `MPI_FLOAT_INT`, `MPI_DOUBLE_INT`, `MPI_LONG_INT`,
    ///   `MPI_2INT`, `MPI_SHORT_INT`, `MPI_LONG_DOUBLE_INT` (madmpi has no Fortran pair types);
    /// - `REPLACE`, `NO_OP`: any datatype;
    /// - `MPI_WCHAR` and `MPI_PACKED` only with `REPLACE` and `NO_OP`;
    /// - user operations: any datatype (the function answers for it).
    ///
    /// A derived datatype is judged by its basic elements: they must all be the same predefined
    /// type (a pair type counts as one), which the operation accepts; parts without elements
    /// (zero block lengths, empty types) do not count, and a type with no element at all is
    /// accepted by every operation (there is nothing to combine). `long double` needs the x87
    /// format: on other architectures the three `long double` types are rejected.
    pub fn check(&self, dt: &Datatype) -> Result<()> {
        match &*self.0 {
            Inner::Builtin(b) => plan(*b, dt).map(|_| ()),
            Inner::User { .. } => Ok(()),
        }
    }

    /// `inout[i] = input[i] op inout[i]` over `count` elements of `dt` (`MPI_Reduce_local`).
    ///
    /// **Builtins** take both buffers **packed** (the signature of `count` elements of `dt`
    /// laid out contiguously, as [`Datatype::pack`] produces; any alignment). Each length must
    /// be exactly `count × dt.size()`, else an `MPI_ERR_ARG` error and nothing is changed; a
    /// datatype the operation does not accept is an `MPI_ERR_OP` error (see [`Op::check`]).
    ///
    /// **User operations** get the buffers as given, with `count` and `dt`, and never for
    /// `count == 0` (nothing to combine). For a contiguous `dt` the packed form is the memory
    /// form, so the same rule applies: both lengths must be `count × dt.size()` and the slices
    /// start at the first byte of the data (the buffer address plus
    /// [`Datatype::contiguous_offset`]). For a non-contiguous `dt` a user function expects the
    /// *unpacked* memory layout of the type map, so the collective layer passes unpacked
    /// buffers here, laid out as it allocated them; `reduce` then only checks that the two
    /// lengths are equal, and the caller answers for the layout.
    pub fn reduce(&self, input: &[u8], inout: &mut [u8], count: usize, dt: &Datatype) -> Result<()> {
        match &*self.0 {
            Inner::Builtin(b) => {
                let plan = plan(*b, dt)?;
                check_lengths(input, inout, count, dt)?;
                match plan {
                    Plan::Copy => inout.copy_from_slice(input),
                    Plan::Nothing => {}
                    Plan::Kernel(k) => k(input, inout),
                }
            }
            Inner::User { f, .. } => {
                if dt.is_contiguous() {
                    check_lengths(input, inout, count, dt)?;
                } else if input.len() != inout.len() {
                    return Err(Error::arg(format!(
                        "reduction buffers of different lengths ({} and {} bytes)",
                        input.len(),
                        inout.len()
                    )));
                }
                if count > 0 {
                    f(input, inout, count, dt);
                }
            }
        }
        Ok(())
    }
}

/// An operation checked once for a datatype ([`Op::prepared`]): a collective combining several
/// members' contributions looks the kernel up once, not per pair of buffers.
pub(crate) struct Prepared<'a> {
    op: &'a Op,
    dt: &'a Datatype,
    /// A builtin's plan (`None`: a user function).
    plan: Option<Plan>,
}

impl Op {
    /// The operation on elements of `dt`, checked as [`Op::check`] does.
    pub(crate) fn prepared<'a>(&'a self, dt: &'a Datatype) -> Result<Prepared<'a>> {
        let plan = match &*self.0 {
            Inner::Builtin(b) => Some(plan(*b, dt)?),
            Inner::User { .. } => None,
        };
        Ok(Prepared { op: self, dt, plan })
    }
}

impl Prepared<'_> {
    /// [`Op::reduce`] of `count` elements, the same rules.
    pub(crate) fn reduce(&self, input: &[u8], inout: &mut [u8], count: usize) -> Result<()> {
        match &self.plan {
            Some(plan) => {
                check_lengths(input, inout, count, self.dt)?;
                match plan {
                    Plan::Copy => inout.copy_from_slice(input),
                    Plan::Nothing => {}
                    Plan::Kernel(k) => k(input, inout),
                }
                Ok(())
            }
            None => self.op.reduce(input, inout, count, self.dt),
        }
    }
}

impl fmt::Debug for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.0 {
            Inner::Builtin(b) => write!(f, "Op({})", b.name()),
            Inner::User { commutative, .. } => write!(f, "Op(user, commutative: {commutative})"),
        }
    }
}

/// Both lengths must be `count × dt.size()` bytes.
fn check_lengths(input: &[u8], inout: &[u8], count: usize, dt: &Datatype) -> Result<()> {
    let n = usize::try_from(dt.size())
        .ok()
        .and_then(|s| s.checked_mul(count))
        .ok_or_else(|| Error::arg(format!("{count} elements of {} bytes overflow", dt.size())))?;
    if input.len() != n || inout.len() != n {
        return Err(Error::arg(format!(
            "reduction of {count} elements of {} bytes needs two {n}-byte buffers, got {} and {} bytes",
            dt.size(),
            input.len(),
            inout.len()
        )));
    }
    Ok(())
}

/// Checks `dt` for the builtin `b` and says what to do.
fn plan(b: Builtin, dt: &Datatype) -> Result<Plan> {
    match b {
        Builtin::Replace => return Ok(Plan::Copy),
        Builtin::NoOp => return Ok(Plan::Nothing),
        _ => {}
    }
    let p = match element(dt) {
        Ok(Some(p)) => p,
        Ok(None) => return Ok(Plan::Nothing),
        Err((x, y)) => {
            return Err(Error::op(format!(
                "{} needs a datatype whose basic elements are all of one predefined type; this one \
                 mixes {} and {}",
                b.name(),
                x.name(),
                y.name()
            )));
        }
    };
    match kernels::kernel(b, p) {
        Some(k) => Ok(Plan::Kernel(k)),
        None => {
            let of =
                if dt.as_predefined().is_some() { "" } else { " (the elements of this derived datatype)" };
            let why = if cfg!(target_arch = "x86_64") {
                ""
            } else {
                " (long double arithmetic is implemented for the x86-64 x87 format only)"
            };
            Err(Error::op(format!("{} is not defined for {}{of}{why}", b.name(), p.name())))
        }
    }
}

/// The one predefined type (basic or pair) of every basic element of `dt`: `Ok(None)` when the
/// type map has no element, `Err` with two of the types when it mixes several.
///
/// Walks the constructors through `as_predefined`/`contents`: O(constructors), allocating their
/// argument lists (the datatype module keeps no "basic type" attribute).
pub(crate) fn element(dt: &Datatype) -> std::result::Result<Option<Predefined>, (Predefined, Predefined)> {
    fn walk(
        dt: &Datatype,
        found: &mut Option<Predefined>,
    ) -> std::result::Result<(), (Predefined, Predefined)> {
        if dt.size() == 0 {
            return Ok(());
        }
        if let Some(p) = dt.as_predefined() {
            return match *found {
                None => {
                    *found = Some(p);
                    Ok(())
                }
                Some(q) if q == p => Ok(()),
                Some(q) => Err((q, p)),
            };
        }
        // A derived type: `contents` cannot fail (only predefined types have none).
        let Ok(c) = dt.contents() else { return Ok(()) };
        let is_struct = dt.envelope().combiner == COMBINER_STRUCT;
        // [count, blocklengths...]: integers, or large counts for a type of a `_c` constructor.
        let counts = if dt.has_large_counts() { &c.large_counts } else { &c.integers };
        for (k, t) in c.datatypes.iter().enumerate() {
            // Struct members with no block contribute no element.
            if is_struct && counts.get(k + 1).is_some_and(|&bl| bl <= 0) {
                continue;
            }
            walk(t, found)?;
        }
        Ok(())
    }
    let mut found = None;
    walk(dt, &mut found)?;
    Ok(found)
}
