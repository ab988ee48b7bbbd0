//! The typed loops behind the builtin operations: one function per (operation, C type), chosen
//! once per call by [`kernel`], each a plain loop over the packed elements.
//!
//! Buffers are byte slices of any alignment: every element is read and written with
//! `from_ne_bytes`/`to_ne_bytes` on an exact chunk (`chunks_exact`), which compiles to unaligned
//! loads and stores, with no `unsafe` here. For one-value types ([`map2`]) the loop body is a load,
//! one operation and a store over chunks of a size known at compile time, with no branch and no
//! bounds check left, which LLVM vectorizes: SUM is `padd`/`addp`, MAX and MIN on integers
//! `pmax`/`pmin` (or compare-and-blend), and MAX/MIN on floats are written `a > b ? a : b` /
//! `a < b ? a : b`, the exact semantics of `maxps`/`minps`, so they vectorize too.
//!
//! Semantics follow MPICH's `src/mpi/coll/op/op*.c`, which computes `a[i] = a[i] op b[i]` with
//! `a` the inout buffer and `b` the input:
//! - integers: SUM and PROD wrap around (two's complement, as MPICH compiled by GCC does in
//!   practice; C leaves signed overflow undefined); MAX, MIN, bitwise as in C;
//! - logical ops on any integer type or `_Bool`: nonzero is true, the result is 1 or 0;
//! - floating MAX is `inout > input ? inout : input` and MIN `inout < input ? inout : input`
//!   (MPICH's `MPL_MAX`/`MPL_MIN`, not C's `fmax`): when either is a NaN, or they compare equal
//!   (`+0` and `-0`), the result is the input's value;
//! - complex SUM is componentwise; complex PROD is C99's `*` as GCC compiles it: `(ac - bd) +
//!   (ad + bc)i` in the component type, and when both parts come out NaN the infinities are
//!   recovered as in C99 Annex G (libgcc's `__mulsc3`/`__muldc3`/`__mulxc3`);
//! - MAXLOC/MINLOC: the value first; the element with the larger (smaller) value wins, its
//!   index with it; on equal values the smaller index is kept; when the values are unordered
//!   (a NaN) the inout element is kept;
//! - `long double` runs on the x87 unit (see `x87`); its 6 padding bytes in the inout buffer are
//!   left as they were, except that MAXLOC/MINLOC copy a winning input element whole.

use super::Builtin;
#[cfg(target_arch = "x86_64")]
use super::x87::F80;
use crate::datatype::Predefined;
use std::cmp::Ordering;
use std::ops::{Add, BitAnd, BitOr, BitXor, Mul, Sub};

/// A kernel: `inout[i] = inout[i] op input[i]` for every packed element. Both slices have the
/// same length, a multiple of the element's packed size (the caller checks).
pub(super) type Kernel = fn(&[u8], &mut [u8]);

/// The kernel of `op` on packed elements of the predefined type `p` (basic or pair); `None` when
/// MPI does not define `op` on `p` (and for REPLACE and NO_OP, which need no kernel). This
/// match is the table of accepted combinations: [`super::Op::check`] asks it.
pub(super) fn kernel(op: Builtin, p: Predefined) -> Option<Kernel> {
    use Builtin::*;
    use Predefined::*;
    // C integer types (and MPI_CHAR, MPICH's extension, and MPI_AINT/OFFSET/COUNT): every
    // arithmetic, logical and bitwise op.
    macro_rules! int {
        ($t:ty) => {
            match op {
                Max => max::<$t>,
                Min => min::<$t>,
                Sum => sum_int::<$t>,
                Prod => prod_int::<$t>,
                Land => land::<$t>,
                Lor => lor::<$t>,
                Lxor => lxor::<$t>,
                Band => band::<$t>,
                Bor => bor::<$t>,
                Bxor => bxor::<$t>,
                Maxloc | Minloc | Replace | NoOp => return None,
            }
        };
    }
    macro_rules! float {
        ($t:ty) => {
            match op {
                Max => max::<$t>,
                Min => min::<$t>,
                Sum => sum::<$t>,
                Prod => prod::<$t>,
                _ => return None,
            }
        };
    }
    // MPICH 4.0.2 also accepts LAND, LOR and LXOR on the Fortran reals (not on C's).
    macro_rules! fortran_real {
        ($t:ty) => {
            match op {
                Land => land::<$t>,
                Lor => lor::<$t>,
                Lxor => lxor::<$t>,
                _ => float!($t),
            }
        };
    }
    macro_rules! complex {
        ($t:ty) => {
            match op {
                Sum => csum::<$t>,
                Prod => cprod::<$t>,
                _ => return None,
            }
        };
    }
    // The index is a C `int`, or (Fortran pairs) a second value of the same type.
    macro_rules! loc {
        ($t:ty) => {
            loc!($t, i32)
        };
        ($t:ty, $i:ty) => {
            match op {
                Maxloc => maxloc::<$t, $i>,
                Minloc => minloc::<$t, $i>,
                _ => return None,
            }
        };
    }
    Some(match p {
        // `char` is signed on x86-64 Linux.
        // MPICH 4.0.2 counts Fortran CHARACTER among its integers.
        Char | SignedChar | Int8 | Integer1 | Character => int!(i8),
        UnsignedChar | Uint8 => int!(u8),
        Short | Int16 | Integer2 => int!(i16),
        UnsignedShort | Uint16 => int!(u16),
        Int | Int32 | Integer | Integer4 => int!(i32),
        Unsigned | Uint32 => int!(u32),
        Long | LongLong | Int64 | Aint | Offset | Count | Integer8 => int!(i64),
        UnsignedLong | UnsignedLongLong | Uint64 => int!(u64),
        Float => float!(f32),
        Double => float!(f64),
        #[cfg(target_arch = "x86_64")]
        LongDouble => float!(F80),
        Real | Real4 => fortran_real!(f32),
        DoublePrecision | Real8 => fortran_real!(f64),
        #[cfg(target_arch = "x86_64")]
        Real16 => fortran_real!(F80),
        CFloatComplex | Complex | Complex8 => complex!(f32),
        CDoubleComplex | DoubleComplex | Complex16 => complex!(f64),
        #[cfg(target_arch = "x86_64")]
        CLongDoubleComplex => complex!(F80),
        // MPI's "logical" group: LAND, LOR, LXOR only.
        CBool => match op {
            Land => land::<u8>,
            Lor => lor::<u8>,
            Lxor => lxor::<u8>,
            _ => return None,
        },
        // Fortran LOGICAL: 4 bytes, .TRUE. is 1 and .FALSE. 0 (gfortran's and MPICH's convention).
        Logical => match op {
            Land => land::<i32>,
            Lor => lor::<i32>,
            Lxor => lxor::<i32>,
            _ => return None,
        },
        // MPI's "byte" group: BAND, BOR, BXOR only.
        Byte => match op {
            Band => band::<u8>,
            Bor => bor::<u8>,
            Bxor => bxor::<u8>,
            _ => return None,
        },
        FloatInt => loc!(f32),
        DoubleInt => loc!(f64),
        LongInt => loc!(i64),
        TwoInt => loc!(i32),
        ShortInt => loc!(i16),
        TwoInteger => loc!(i32, i32),
        TwoReal => loc!(f32, f32),
        TwoDoublePrecision => loc!(f64, f64),
        #[cfg(target_arch = "x86_64")]
        LongDoubleInt => loc!(F80),
        // Not in any of MPI's groups (MPICH rejects them too): wide characters, packed bytes.
        WChar | Packed => return None,
        // MPICH 4.0.2 has no C type for a 32-byte complex: it refuses every operation.
        Complex32 => return None,
        // Elsewhere `long double` is not the format `predefined` describes: no kernel.
        #[cfg(not(target_arch = "x86_64"))]
        LongDouble | CLongDoubleComplex | LongDoubleInt | Real16 => return None,
    })
}

/// One value of a C type in a packed buffer.
pub(super) trait Elem: Copy {
    /// Bytes the value occupies in a packed buffer.
    const N: usize;
    /// Reads the value from the first `N` bytes of `b` (any alignment).
    fn load(b: &[u8]) -> Self;
    /// Writes the value to the first `N` bytes of `b` (any alignment).
    fn store(self, b: &mut [u8]);
}

macro_rules! elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const N: usize = size_of::<$t>();
            #[inline(always)]
            fn load(b: &[u8]) -> Self {
                <$t>::from_ne_bytes(b[..Self::N].try_into().expect("an N-byte slice"))
            }
            #[inline(always)]
            fn store(self, b: &mut [u8]) {
                b[..Self::N].copy_from_slice(&self.to_ne_bytes())
            }
        }
    )*};
}
elem!(i8, u8, i16, u16, i32, u32, i64, u64, f32, f64);

/// A `long double` occupies 16 bytes; only the first 10 are read or written.
#[cfg(target_arch = "x86_64")]
impl Elem for F80 {
    const N: usize = 16;
    #[inline(always)]
    fn load(b: &[u8]) -> Self {
        F80(b[..10].try_into().expect("a 10-byte slice"))
    }
    #[inline(always)]
    fn store(self, b: &mut [u8]) {
        b[..10].copy_from_slice(&self.0)
    }
}

/// An integer type.
pub(super) trait Int:
    Elem + Ord + BitAnd<Output = Self> + BitOr<Output = Self> + BitXor<Output = Self>
{
    fn wrapping_add(self, o: Self) -> Self;
    fn wrapping_mul(self, o: Self) -> Self;
}

macro_rules! int_impl {
    ($($t:ty),*) => {$(
        impl Int for $t {
            #[inline(always)]
            fn wrapping_add(self, o: Self) -> Self {
                <$t>::wrapping_add(self, o)
            }
            #[inline(always)]
            fn wrapping_mul(self, o: Self) -> Self {
                <$t>::wrapping_mul(self, o)
            }
        }
    )*};
}
int_impl!(i8, u8, i16, u16, i32, u32, i64, u64);

/// A real floating type (the components of the complex types too).
pub(super) trait Real:
    Elem + PartialOrd + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self>
{
    const ZERO: Self;
    const ONE: Self;
    const INFINITY: Self;
    fn is_nan(self) -> bool;
    fn is_infinite(self) -> bool;
    fn copysign(self, sign: Self) -> Self;
}

macro_rules! real_impl {
    ($($t:ty),*) => {$(
        impl Real for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const INFINITY: Self = <$t>::INFINITY;
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            fn is_infinite(self) -> bool {
                <$t>::is_infinite(self)
            }
            fn copysign(self, sign: Self) -> Self {
                <$t>::copysign(self, sign)
            }
        }
    )*};
}
real_impl!(f32, f64);

#[cfg(target_arch = "x86_64")]
impl Real for F80 {
    const ZERO: Self = F80::ZERO;
    const ONE: Self = F80::ONE;
    const INFINITY: Self = F80::INFINITY;
    fn is_nan(self) -> bool {
        F80::is_nan(self)
    }
    fn is_infinite(self) -> bool {
        F80::is_infinite(self)
    }
    fn copysign(self, sign: Self) -> Self {
        F80::copysign(self, sign)
    }
}

/// `inout[i] = f(inout[i], input[i])` over packed values of `T`. Inlined into each kernel, so
/// the chunk size is a constant and the loop a straight load–op–store the compiler vectorizes
/// when `f` allows.
#[inline(always)]
fn map2<T: Elem>(input: &[u8], inout: &mut [u8], f: impl Fn(T, T) -> T) {
    for (o, i) in inout.chunks_exact_mut(T::N).zip(input.chunks_exact(T::N)) {
        f(T::load(o), T::load(i)).store(o);
    }
}

fn max<T: Elem + PartialOrd>(input: &[u8], inout: &mut [u8]) {
    map2(input, inout, |a: T, b: T| if a > b { a } else { b })
}

fn min<T: Elem + PartialOrd>(input: &[u8], inout: &mut [u8]) {
    map2(input, inout, |a: T, b: T| if a < b { a } else { b })
}

fn sum_int<T: Int>(input: &[u8], inout: &mut [u8]) {
    map2(input, inout, T::wrapping_add)
}

fn prod_int<T: Int>(input: &[u8], inout: &mut [u8]) {
    map2(input, inout, T::wrapping_mul)
}

fn sum<T: Real>(input: &[u8], inout: &mut [u8]) {
    map2(input, inout, |a: T, b: T| a + b)
}

fn prod<T: Real>(input: &[u8], inout: &mut [u8]) {
    map2(input, inout, |a: T, b: T| a * b)
}

/// A type the logical operations accept: zero is false, the result is 1 or 0 (C's `&&`, which
/// MPICH applies to Fortran reals too).
pub(super) trait Logic: Elem + PartialEq {
    const FALSE: Self;
    const TRUE: Self;
}

macro_rules! logic_impl {
    ($($t:ty: $zero:expr, $one:expr);*) => {$(
        impl Logic for $t {
            const FALSE: Self = $zero;
            const TRUE: Self = $one;
        }
    )*};
}
logic_impl!(i8: 0, 1; u8: 0, 1; i16: 0, 1; u16: 0, 1; i32: 0, 1; u32: 0, 1; i64: 0, 1; u64: 0, 1;
    f32: 0.0, 1.0; f64: 0.0, 1.0; F80: F80::ZERO, F80::ONE);

#[inline(always)]
fn truth<T: Logic>(b: bool) -> T {
    if b { T::TRUE } else { T::FALSE }
}

fn land<T: Logic>(input: &[u8], inout: &mut [u8]) {
    map2(input, inout, |a: T, b: T| truth(a != T::FALSE && b != T::FALSE))
}

fn lor<T: Logic>(input: &[u8], inout: &mut [u8]) {
    map2(input, inout, |a: T, b: T| truth(a != T::FALSE || b != T::FALSE))
}

fn lxor<T: Logic>(input: &[u8], inout: &mut [u8]) {
    map2(input, inout, |a: T, b: T| truth((a != T::FALSE) != (b != T::FALSE)))
}

fn band<T: Int>(input: &[u8], inout: &mut [u8]) {
    map2(input, inout, |a: T, b: T| a & b)
}

fn bor<T: Int>(input: &[u8], inout: &mut [u8]) {
    map2(input, inout, |a: T, b: T| a | b)
}

fn bxor<T: Int>(input: &[u8], inout: &mut [u8]) {
    map2(input, inout, |a: T, b: T| a ^ b)
}

/// Complex SUM: `(re, im)` pairs of `T`, componentwise.
fn csum<T: Real>(input: &[u8], inout: &mut [u8]) {
    map2(input, inout, |a: T, b: T| a + b)
}

/// Complex PROD over `(re, im)` pairs of `T`.
fn cprod<T: Real>(input: &[u8], inout: &mut [u8]) {
    for (o, i) in inout.chunks_exact_mut(2 * T::N).zip(input.chunks_exact(2 * T::N)) {
        let (a, b) = (T::load(o), T::load(&o[T::N..]));
        let (c, d) = (T::load(i), T::load(&i[T::N..]));
        let (x, y) = cmul(a, b, c, d);
        x.store(o);
        y.store(&mut o[T::N..]);
    }
}

/// `(a + bi)(c + di)` as C99 computes it (Annex G, G.5.1's example, which GCC's `__mul?c3`
/// implement): the textbook formula, then, when both parts are NaN, recovery of the infinities
/// that an infinite factor or an overflow should give.
pub(super) fn cmul<T: Real>(mut a: T, mut b: T, mut c: T, mut d: T) -> (T, T) {
    let (ac, bd, ad, bc) = (a * c, b * d, a * d, b * c);
    let (x, y) = (ac - bd, ad + bc);
    if !(x.is_nan() && y.is_nan()) {
        return (x, y);
    }
    let boxed = |v: T| (if v.is_infinite() { T::ONE } else { T::ZERO }).copysign(v);
    let zero_nan = |v: T| if v.is_nan() { T::ZERO.copysign(v) } else { v };
    let mut recalc = false;
    if a.is_infinite() || b.is_infinite() {
        // The first factor is infinite: box it, and turn NaNs of the other into zeros.
        (a, b) = (boxed(a), boxed(b));
        (c, d) = (zero_nan(c), zero_nan(d));
        recalc = true;
    }
    if c.is_infinite() || d.is_infinite() {
        (c, d) = (boxed(c), boxed(d));
        (a, b) = (zero_nan(a), zero_nan(b));
        recalc = true;
    }
    if !recalc && (ac.is_infinite() || bd.is_infinite() || ad.is_infinite() || bc.is_infinite()) {
        // Recover infinities from overflow by changing NaNs to zeros.
        (a, b, c, d) = (zero_nan(a), zero_nan(b), zero_nan(c), zero_nan(d));
        recalc = true;
    }
    if recalc { (T::INFINITY * (a * c - b * d), T::INFINITY * (a * d + b * c)) } else { (x, y) }
}

/// MAXLOC over packed `(value: V, index: I)` pairs.
fn maxloc<V: Elem + PartialOrd, I: Elem + PartialOrd>(input: &[u8], inout: &mut [u8]) {
    loc::<V, I>(input, inout, Ordering::Less)
}

/// MINLOC over packed `(value: V, index: I)` pairs.
fn minloc<V: Elem + PartialOrd, I: Elem + PartialOrd>(input: &[u8], inout: &mut [u8]) {
    loc::<V, I>(input, inout, Ordering::Greater)
}

/// The input element replaces the inout one when `inout.value` compares `replace_when` to
/// `input.value`; on equal values the smaller index stays; unordered values keep inout.
#[inline(always)]
fn loc<V: Elem + PartialOrd, I: Elem + PartialOrd>(input: &[u8], inout: &mut [u8], replace_when: Ordering) {
    let n = V::N + I::N;
    for (o, i) in inout.chunks_exact_mut(n).zip(input.chunks_exact(n)) {
        match V::load(o).partial_cmp(&V::load(i)) {
            Some(Ordering::Equal) => {
                let (ko, ki) = (I::load(&o[V::N..]), I::load(&i[V::N..]));
                if ki < ko {
                    ki.store(&mut o[V::N..]);
                }
            }
            Some(ord) if ord == replace_when => o.copy_from_slice(i),
            _ => {}
        }
    }
}
