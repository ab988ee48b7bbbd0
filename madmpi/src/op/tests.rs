//! Unit tests of the reduction operations: every builtin on every predefined type against a
//! reference computed with Rust's numeric types on random values (fixed seeds, with zeros,
//! negative values, extremes, infinities and NaNs mixed in), the table of accepted combinations,
//! MAXLOC/MINLOC ties, derived datatypes, bounds checks, user operations and commutativity.
//!
//! Buffers are handed to `reduce` at odd addresses, so every kernel runs on unaligned data.

use super::*;
use crate::error::ErrorClass;
use Builtin::*;
use Predefined::*;
use std::sync::Mutex;

/// splitmix64: a fixed-seed generator, so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A value in `-r..=r`.
    fn signed(&mut self, r: i64) -> i64 {
        self.below(2 * r as u64 + 1) as i64 - r
    }
}

fn dt(p: Predefined) -> Datatype {
    Datatype::predefined(p)
}

/// Elements per random test: past a few vector widths, with a remainder.
const LEN: usize = 301;

const INTEGERS: [Predefined; 22] = [
    Char,
    SignedChar,
    UnsignedChar,
    Short,
    UnsignedShort,
    Int,
    Unsigned,
    Long,
    UnsignedLong,
    LongLong,
    UnsignedLongLong,
    Int8,
    Int16,
    Int32,
    Int64,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
    Aint,
    Offset,
    Count,
];
const FLOATS: [Predefined; 3] = [Float, Double, LongDouble];
const COMPLEX: [Predefined; 3] = [CFloatComplex, CDoubleComplex, CLongDoubleComplex];
const PAIRS: [Predefined; 6] = [FloatInt, DoubleInt, LongInt, TwoInt, ShortInt, LongDoubleInt];

/// The Fortran types by MPICH 4.0.2's groups (CHARACTER among the integers; no operation on
/// the 32-byte complex).
const FORTRAN_INTEGERS: [Predefined; 6] = [Character, Integer, Integer1, Integer2, Integer4, Integer8];
const FORTRAN_REALS: [Predefined; 5] = [Real, DoublePrecision, Real4, Real8, Real16];
const FORTRAN_COMPLEX: [Predefined; 4] = [Complex, DoubleComplex, Complex8, Complex16];
const FORTRAN_PAIRS: [Predefined; 3] = [TwoInteger, TwoReal, TwoDoublePrecision];

/// MPI 4.0 §6.9.2's table (with MPICH's `MPI_CHAR` among the integers, and MPICH 4.0.2's
/// acceptance of LAND/LOR/LXOR on Fortran reals, seen with `MPI_Reduce_local` on its library),
/// written out independently of `kernels`.
fn accepted(op: Builtin, p: Predefined) -> bool {
    let int = INTEGERS.contains(&p) || FORTRAN_INTEGERS.contains(&p);
    let fortran_real = FORTRAN_REALS.contains(&p);
    let float = FLOATS.contains(&p) || fortran_real;
    let complex = COMPLEX.contains(&p) || FORTRAN_COMPLEX.contains(&p);
    let long_double = matches!(p, LongDouble | CLongDoubleComplex | LongDoubleInt | Real16);
    if long_double && !cfg!(target_arch = "x86_64") && !matches!(op, Replace | NoOp) {
        return false;
    }
    match op {
        Max | Min => int || float,
        Sum | Prod => int || float || complex,
        Land | Lor | Lxor => int || fortran_real || p == CBool || p == Logical,
        Band | Bor | Bxor => int || p == Byte,
        Maxloc | Minloc => PAIRS.contains(&p) || FORTRAN_PAIRS.contains(&p),
        Replace | NoOp => true,
    }
}

/// Runs `op` with both buffers copied to odd (unaligned) addresses; returns the new inout.
fn run(op: Builtin, t: &Datatype, count: usize, input: &[u8], inout: &[u8]) -> Vec<u8> {
    let mut i = vec![0u8; input.len() + 1];
    i[1..].copy_from_slice(input);
    let mut o = vec![0u8; inout.len() + 1];
    o[1..].copy_from_slice(inout);
    if let Err(e) = Op::builtin(op).reduce(&i[1..], &mut o[1..], count, t) {
        panic!("{} on {}: {e}", op.name(), t.name());
    }
    o.split_off(1)
}

/// Compares element by element, so a failure names the first wrong element.
fn assert_elements(got: &[u8], want: &[u8], size: usize, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (k, (g, w)) in got.chunks(size).zip(want.chunks(size)).enumerate() {
        assert_eq!(g, w, "{what}: element {k}");
    }
}

macro_rules! ne_bytes {
    ($v:expr) => {
        $v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>()
    };
}

#[test]
fn acceptance_table_is_mpis() {
    for op in Builtin::ALL {
        for p in Predefined::ALL {
            let t = dt(p);
            let r = Op::builtin(op).check(&t);
            assert_eq!(r.is_ok(), accepted(op, p), "{} on {}: {r:?}", op.name(), p.name());
            if let Err(e) = r {
                assert_eq!(e.class(), ErrorClass::Op, "{e}");
                assert!(e.message().contains(op.name()) && e.message().contains(p.name()), "{e}");
                // reduce refuses too, with the same class, and leaves inout alone.
                let n = 3 * t.size() as usize;
                let mut inout = vec![7u8; n];
                let e = Op::builtin(op).reduce(&vec![1u8; n], &mut inout, 3, &t).unwrap_err();
                assert_eq!(e.class(), ErrorClass::Op);
                assert_eq!(inout, vec![7u8; n]);
            }
        }
    }
}

macro_rules! int_case {
    ($t:ty, $seed:expr) => {{
        let mut rng = Rng($seed);
        let specials: [$t; 9] = [
            0,
            1,
            2,
            0x55,
            <$t>::MAX,
            <$t>::MIN,
            <$t>::MAX - 1,
            <$t>::MIN.wrapping_add(1),
            (0 as $t).wrapping_sub(1),
        ];
        let (mut a, mut b): (Vec<$t>, Vec<$t>) = (vec![], vec![]); // inout, input
        for &x in &specials {
            for &y in &specials {
                a.push(x);
                b.push(y);
            }
        }
        while a.len() < LEN {
            let x = match rng.below(3) {
                0 => rng.next() as $t,
                1 => rng.signed(100) as $t, // negative numbers, small products
                _ => rng.below(2) as $t,
            };
            let y = match rng.below(4) {
                0 => x,
                1 => rng.next() as $t,
                2 => rng.signed(100) as $t,
                _ => rng.below(2) as $t,
            };
            a.push(x);
            b.push(y);
        }
        let mut tested = 0;
        for p in INTEGERS.into_iter().filter(|p| dt(*p).size() as usize == size_of::<$t>()) {
            // The signed and unsigned names of one width differ only in MAX and MIN, which the
            // reference below computes in `$t`: run only the names of `$t`'s signedness.
            if (<$t>::MIN == 0)
                != matches!(
                    p,
                    UnsignedChar
                        | UnsignedShort
                        | Unsigned
                        | UnsignedLong
                        | UnsignedLongLong
                        | Uint8
                        | Uint16
                        | Uint32
                        | Uint64
                )
            {
                continue;
            }
            for op in [Max, Min, Sum, Prod, Land, Lor, Lxor, Band, Bor, Bxor] {
                let want: Vec<$t> = a
                    .iter()
                    .zip(&b)
                    .map(|(&x, &y)| match op {
                        Max => x.max(y),
                        Min => x.min(y),
                        Sum => x.wrapping_add(y),
                        Prod => x.wrapping_mul(y),
                        Land => (x != 0 && y != 0) as $t,
                        Lor => (x != 0 || y != 0) as $t,
                        Lxor => ((x != 0) ^ (y != 0)) as $t,
                        Band => x & y,
                        Bor => x | y,
                        Bxor => x ^ y,
                        _ => unreachable!(),
                    })
                    .collect();
                let got = run(op, &dt(p), a.len(), &ne_bytes!(b), &ne_bytes!(a));
                assert_elements(
                    &got,
                    &ne_bytes!(want),
                    size_of::<$t>(),
                    &format!("{} on {}", op.name(), p.name()),
                );
            }
            tested += 1;
        }
        tested
    }};
}

#[test]
fn integers_against_rust_integers() {
    let tested = int_case!(i8, 1)
        + int_case!(u8, 2)
        + int_case!(i16, 3)
        + int_case!(u16, 4)
        + int_case!(i32, 5)
        + int_case!(u32, 6)
        + int_case!(i64, 7)
        + int_case!(u64, 8);
    assert_eq!(tested, INTEGERS.len(), "every integer type ran");
}

#[test]
fn char_is_signed() {
    // `char` is signed on x86-64 Linux: -1 < 1.
    let got = run(Max, &dt(Char), 1, &[1], &[0xff]);
    assert_eq!(got, [1]);
}

/// Floating MAX/MIN as MPICH (`a > b ? a : b` with `a` the inout value), stated as a rule:
/// the input wins on a NaN on either side and on equal values (`+0`, `-0`).
macro_rules! float_ref {
    ($op:expr, $x:expr, $y:expr) => {{
        let (x, y) = ($x, $y);
        match $op {
            Max if x.is_nan() || y.is_nan() || x == y => y,
            Max => {
                if x > y {
                    x
                } else {
                    y
                }
            }
            Min if x.is_nan() || y.is_nan() || x == y => y,
            Min => {
                if x < y {
                    x
                } else {
                    y
                }
            }
            Sum => x + y,
            Prod => x * y,
            _ => unreachable!(),
        }
    }};
}

macro_rules! float_case {
    ($t:ty, $p:expr, $seed:expr) => {{
        let mut rng = Rng($seed);
        let tiny = <$t>::from_bits(1);
        let specials: [$t; 15] = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.1,
            -3.5e10,
            <$t>::MAX,
            <$t>::MIN,
            <$t>::MIN_POSITIVE,
            tiny,
            -tiny,
            <$t>::INFINITY,
            <$t>::NEG_INFINITY,
            <$t>::NAN,
            -<$t>::NAN,
        ];
        let (mut a, mut b): (Vec<$t>, Vec<$t>) = (vec![], vec![]);
        for &x in &specials {
            for &y in &specials {
                a.push(x);
                b.push(y);
            }
        }
        while a.len() < 2 * LEN {
            let r = |rng: &mut Rng| -> $t {
                if rng.below(2) == 0 {
                    <$t>::from_bits(rng.next() as _) // any class, any exponent
                } else {
                    (rng.signed(1 << 40) as f64 / 1e6) as $t
                }
            };
            let x = r(&mut rng);
            let y = match rng.below(5) {
                0 => x,
                1 => -x,
                _ => r(&mut rng),
            };
            a.push(x);
            b.push(y);
        }
        for op in [Max, Min, Sum, Prod] {
            let got = run(op, &dt($p), a.len(), &ne_bytes!(b), &ne_bytes!(a));
            for (k, c) in got.chunks(size_of::<$t>()).enumerate() {
                let g = <$t>::from_ne_bytes(c.try_into().unwrap());
                let w = float_ref!(op, a[k], b[k]);
                // MAX/MIN select a value: bit for bit. SUM/PROD: any NaN for a NaN.
                let ok = g.to_bits() == w.to_bits() || (matches!(op, Sum | Prod) && g.is_nan() && w.is_nan());
                assert!(
                    ok,
                    "{} on {}: element {k}: {:?} op {:?} gave {g:?}, want {w:?}",
                    op.name(),
                    $p.name(),
                    a[k],
                    b[k]
                );
            }
        }
    }};
}

#[test]
fn floats_against_rust_floats() {
    float_case!(f32, Float, 11);
    float_case!(f64, Double, 12);
}

/// Complex multiplication as C computes it, for finite operands: `(ac - bd) + (ad + bc)i`.
macro_rules! complex_case {
    ($t:ty, $p:expr, $seed:expr) => {{
        let mut rng = Rng($seed);
        let mut r = || match rng.below(4) {
            0 => 0.0,
            1 => rng.signed(5) as $t,
            _ => (rng.signed(1 << 30) as f64 / 1e4) as $t,
        };
        let (a, b): (Vec<$t>, Vec<$t>) = (0..2 * LEN).map(|_| (r(), r())).unzip(); // (re, im) pairs
        for op in [Sum, Prod] {
            let want: Vec<$t> = a
                .chunks(2)
                .zip(b.chunks(2))
                .flat_map(|(x, y)| match op {
                    Sum => [x[0] + y[0], x[1] + y[1]],
                    _ => [x[0] * y[0] - x[1] * y[1], x[0] * y[1] + x[1] * y[0]],
                })
                .collect();
            let got = run(op, &dt($p), LEN, &ne_bytes!(b), &ne_bytes!(a));
            assert_elements(
                &got,
                &ne_bytes!(want),
                2 * size_of::<$t>(),
                &format!("{} on {}", op.name(), $p.name()),
            );
        }
    }};
}

#[test]
fn complex_against_rust_floats() {
    complex_case!(f32, CFloatComplex, 21);
    complex_case!(f64, CDoubleComplex, 22);
}

const INF: f64 = f64::INFINITY;
const NAN: f64 = f64::NAN;

/// `(a + bi)(c + di)` with infinities and NaNs, and what GCC 12's `_Complex` multiplication
/// (C99 Annex G) gives for `float`, `double` and `long double`; `None`: same as `double`.
#[allow(clippy::type_complexity)]
const ANNEX_G: [([f64; 4], [f64; 2], Option<[f64; 2]>); 9] = [
    ([INF, NAN, 1.0, 0.0], [INF, NAN], None),
    ([INF, 0.0, NAN, NAN], [NAN, NAN], None),
    ([INF, INF, 1.0, 1.0], [NAN, INF], None),
    ([NAN, INF, NAN, 1.0], [-INF, NAN], None),
    ([0.0, 0.0, INF, 0.0], [NAN, NAN], None),
    ([2.0, 3.0, INF, NAN], [INF, INF], None),
    // Overflow in float only: the infinities are recovered there.
    ([1e38, NAN, 1e38, 1.0], [NAN, NAN], Some([INF, INF])),
    ([-INF, 1.0, NAN, 2.0], [NAN, -INF], None),
    ([1.0, 2.0, 3.0, 4.0], [-5.0, 10.0], None),
];

fn same_f64(g: f64, w: f64) -> bool {
    g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan())
}

#[test]
fn complex_products_recover_infinities_as_c99() {
    for (args, want64, want32) in ANNEX_G {
        let [a, b, c, d] = args;
        let w32 = want32.unwrap_or(want64);
        let got = run(
            Prod,
            &dt(CFloatComplex),
            1,
            &ne_bytes!([c as f32, d as f32]),
            &ne_bytes!([a as f32, b as f32]),
        );
        let g: Vec<f64> = got.chunks(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap()) as f64).collect();
        assert!(same_f64(g[0], w32[0]) && same_f64(g[1], w32[1]), "float {args:?}: {g:?}, want {w32:?}");
        let got = run(Prod, &dt(CDoubleComplex), 1, &ne_bytes!([c, d]), &ne_bytes!([a, b]));
        let g: Vec<f64> = got.chunks(8).map(|c| f64::from_ne_bytes(c.try_into().unwrap())).collect();
        assert!(same_f64(g[0], want64[0]) && same_f64(g[1], want64[1]), "double {args:?}: {g:?}");
        #[cfg(target_arch = "x86_64")]
        {
            let got = run(Prod, &dt(CLongDoubleComplex), 1, &ld_vec(&[c, d]), &ld_vec(&[a, b]));
            let g: Vec<f64> = got.chunks(16).map(ld_to_f64).collect();
            assert!(same_f64(g[0], want64[0]) && same_f64(g[1], want64[1]), "long double {args:?}: {g:?}");
        }
    }
}

#[test]
fn logical_ops_on_c_bool() {
    let mut rng = Rng(31);
    let (a, b): (Vec<u8>, Vec<u8>) = (0..LEN).map(|_| (rng.below(2) as u8, rng.below(2) as u8)).unzip();
    for op in [Land, Lor, Lxor] {
        let want: Vec<u8> = a
            .iter()
            .zip(&b)
            .map(|(&x, &y)| {
                let (x, y) = (x != 0, y != 0);
                (match op {
                    Land => x && y,
                    Lor => x || y,
                    _ => x != y,
                }) as u8
            })
            .collect();
        assert_eq!(run(op, &dt(CBool), LEN, &b, &a), want, "{}", op.name());
    }
}

#[test]
fn bitwise_ops_on_byte() {
    let mut rng = Rng(32);
    let (a, b): (Vec<u8>, Vec<u8>) = (0..LEN).map(|_| (rng.next() as u8, rng.next() as u8)).unzip();
    for op in [Band, Bor, Bxor] {
        let want: Vec<u8> = a
            .iter()
            .zip(&b)
            .map(|(&x, &y)| match op {
                Band => x & y,
                Bor => x | y,
                _ => x ^ y,
            })
            .collect();
        assert_eq!(run(op, &dt(Byte), LEN, &b, &a), want, "{}", op.name());
    }
}

#[test]
fn replace_and_no_op_on_every_type() {
    let mut rng = Rng(33);
    for p in Predefined::ALL {
        let n = 5 * dt(p).size() as usize;
        let input: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
        let inout: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
        assert_eq!(run(Replace, &dt(p), 5, &input, &inout), input, "{}", p.name());
        assert_eq!(run(NoOp, &dt(p), 5, &input, &inout), inout, "{}", p.name());
    }
}

/// One packed `(value, index)` pair.
fn pair(value: &[u8], index: i32) -> Vec<u8> {
    [value, &index.to_ne_bytes()[..]].concat()
}

/// MAXLOC/MINLOC on a pair type whose values are `vals` (as `f64` for the comparison, and their
/// packed bytes), against the rule: the better value wins with its index, equal values keep the
/// smaller index, unordered values keep inout.
fn loc_case(p: Predefined, vals: &[(f64, Vec<u8>)], seed: u64) {
    let mut rng = Rng(seed);
    let mut pick = || {
        let (v, bytes) = &vals[rng.below(vals.len() as u64) as usize];
        (*v, bytes.clone(), rng.signed(4) as i32)
    };
    let (a, b): (Vec<_>, Vec<_>) = (0..LEN).map(|_| (pick(), pick())).unzip();
    let packed =
        |v: &[(f64, Vec<u8>, i32)]| v.iter().flat_map(|(_, bytes, i)| pair(bytes, *i)).collect::<Vec<u8>>();
    for op in [Maxloc, Minloc] {
        let want: Vec<u8> = a
            .iter()
            .zip(&b)
            .flat_map(|((x, xb, xi), (y, yb, yi))| {
                let better = if op == Maxloc { y > x } else { y < x };
                if better {
                    pair(yb, *yi)
                } else if x == y {
                    pair(xb, (*xi).min(*yi))
                } else {
                    pair(xb, *xi)
                }
            })
            .collect();
        let got = run(op, &dt(p), LEN, &packed(&b), &packed(&a));
        assert_elements(&got, &want, dt(p).size() as usize, &format!("{} on {}", op.name(), p.name()));
    }
}

#[test]
fn maxloc_minloc_against_rust_values() {
    // Few distinct values, so that ties are frequent.
    let floats = [-1.5, 0.0, -0.0, 2.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY];
    loc_case(FloatInt, &floats.map(|v| (v, (v as f32).to_ne_bytes().to_vec())), 41);
    loc_case(DoubleInt, &floats.map(|v| (v, v.to_ne_bytes().to_vec())), 42);
    #[cfg(target_arch = "x86_64")]
    loc_case(LongDoubleInt, &floats.map(|v| (v, ld(v).to_vec())), 43);
    let ints = [i64::MIN, -1, 0, 7, i64::MAX];
    // (as f64 only for the order: these values compare the same way)
    loc_case(LongInt, &ints.map(|v| (v as f64, v.to_ne_bytes().to_vec())), 44);
    let ints = [i32::MIN, -1, 0, 7, i32::MAX];
    loc_case(TwoInt, &ints.map(|v| (v as f64, v.to_ne_bytes().to_vec())), 45);
    let shorts = [i16::MIN, -1, 0, 7, i16::MAX];
    loc_case(ShortInt, &shorts.map(|v| (v as f64, v.to_ne_bytes().to_vec())), 46);
}

#[test]
fn maxloc_minloc_ties_keep_the_smaller_index() {
    let two = |v: i32, i: i32| ne_bytes!([v, i]);
    for op in [Maxloc, Minloc] {
        assert_eq!(run(op, &dt(TwoInt), 1, &two(5, 1), &two(5, 3)), two(5, 1));
        assert_eq!(run(op, &dt(TwoInt), 1, &two(5, 3), &two(5, 1)), two(5, 1));
        assert_eq!(run(op, &dt(TwoInt), 1, &two(5, -2), &two(5, 0)), two(5, -2));
    }
    assert_eq!(run(Maxloc, &dt(TwoInt), 1, &two(6, 9), &two(5, 1)), two(6, 9));
    assert_eq!(run(Minloc, &dt(TwoInt), 1, &two(6, 9), &two(5, 1)), two(5, 1));
    // +0 and -0 are equal: inout keeps its value and takes the smaller index.
    let fi = |v: f32, i: i32| pair(&v.to_ne_bytes(), i);
    assert_eq!(run(Maxloc, &dt(FloatInt), 1, &fi(-0.0, 2), &fi(0.0, 4)), fi(0.0, 2));
    // A NaN compares with nothing: inout stays.
    assert_eq!(run(Minloc, &dt(FloatInt), 1, &fi(f32::NAN, 0), &fi(1.0, 4)), fi(1.0, 4));
    // MPI_SHORT_INT packs to 6 bytes: value at 0, index at 2.
    let si = |v: i16, i: i32| pair(&v.to_ne_bytes(), i);
    let input = [si(3, 1), si(-4, 8)].concat();
    let inout = [si(3, 2), si(-5, 9)].concat();
    assert_eq!(run(Maxloc, &dt(ShortInt), 2, &input, &inout), [si(3, 1), si(-4, 8)].concat());
    assert_eq!(run(Minloc, &dt(ShortInt), 2, &input, &inout), [si(3, 1), si(-5, 9)].concat());
}

#[test]
fn derived_types_reduce_their_basic_elements() {
    let int = dt(Int);
    let ints = |v: &[i32]| ne_bytes!(v);
    let a: Vec<i32> = (0..30).map(|k| k * 7 - 100).collect();
    let b: Vec<i32> = (0..30).map(|k| 1000 - k * k).collect();
    let sum: Vec<i32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    let max: Vec<i32> = a.iter().zip(&b).map(|(x, y)| *x.max(y)).collect();

    let contig = Datatype::contiguous(3, &int).unwrap();
    contig.commit().unwrap();
    assert_eq!(run(Sum, &contig, 10, &ints(&b), &ints(&a)), ints(&sum));
    // A strided vector: its packed form is its 2 ints per element.
    let vector = Datatype::vector(2, 1, 3, &int).unwrap();
    vector.commit().unwrap();
    assert_eq!(run(Max, &vector, 15, &ints(&b), &ints(&a)), ints(&max));
    // Nested and renamed forms of one type.
    let nested = Datatype::hvector(3, 1, 100, &Datatype::dup(&vector)).unwrap();
    let resized = Datatype::resized(&nested, 0, 1000).unwrap();
    assert_eq!(run(Sum, &resized, 5, &ints(&b), &ints(&a)), ints(&sum));
    let sub = Datatype::subarray(&[4, 6], &[2, 3], &[1, 1], crate::datatype::Order::C, &int).unwrap();
    assert_eq!(run(Max, &sub, 5, &ints(&b), &ints(&a)), ints(&max));
    // A struct of one type, and one whose second member has no block.
    let st = Datatype::create_struct(&[2, 1], &[0, 24], &[int.clone(), int.clone()]).unwrap();
    assert_eq!(run(Sum, &st, 10, &ints(&b), &ints(&a)), ints(&sum));
    let st0 = Datatype::create_struct(&[3, 0], &[0, 16], &[int.clone(), dt(Double)]).unwrap();
    assert_eq!(run(Sum, &st0, 10, &ints(&b), &ints(&a)), ints(&sum));
    // The same built by MPI_Type_create_struct_c: its block lengths are large counts.
    let st0_c =
        Datatype::create_struct(&[3, 0], &[0, 16], &[int.clone(), dt(Double)]).unwrap().with_large_counts();
    assert_eq!(run(Sum, &st0_c, 10, &ints(&b), &ints(&a)), ints(&sum));

    // Pair types inside derived types: MAXLOC, element-wise.
    let pairs = Datatype::vector(3, 2, 4, &dt(TwoInt)).unwrap();
    let want: Vec<u8> = a
        .chunks(2)
        .zip(b.chunks(2))
        .flat_map(|(x, y)| match x[0].cmp(&y[0]) {
            std::cmp::Ordering::Less => ints(y),
            std::cmp::Ordering::Equal => ints(&[x[0], x[1].min(y[1])]),
            std::cmp::Ordering::Greater => ints(x),
        })
        .collect();
    assert_eq!(run(Maxloc, &pairs, 2, &ints(&b[..24]), &ints(&a[..24])), want[..96]);
    for t in [&pairs, &Datatype::contiguous(2, &dt(FloatInt)).unwrap()] {
        let e = Op::builtin(Sum).check(t).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Op, "{e}");
    }
    // A byte type for bitwise ops.
    let bytes = Datatype::hindexed(&[2, 3], &[0, 10], &dt(Byte)).unwrap();
    assert_eq!(
        run(Bxor, &bytes, 2, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], &[3; 10]),
        [2, 1, 0, 7, 6, 5, 4, 11, 10, 9]
    );
    assert_eq!(Op::builtin(Sum).check(&bytes).unwrap_err().class(), ErrorClass::Op);

    // Mixed basic types: no arithmetic, but REPLACE and NO_OP.
    let mixed = Datatype::create_struct(&[1, 1], &[0, 8], &[int.clone(), dt(Double)]).unwrap();
    let e = Op::builtin(Sum).check(&mixed).unwrap_err();
    assert_eq!(e.class(), ErrorClass::Op);
    assert!(e.message().contains("MPI_INT") && e.message().contains("MPI_DOUBLE"), "{e}");
    let input: Vec<u8> = (0..24).collect();
    assert_eq!(run(Replace, &mixed, 2, &input, &[0; 24]), input);
    assert_eq!(run(NoOp, &mixed, 2, &input, &[9; 24]), [9; 24]);
    // A user-built struct { float; int; } is not MPI_FLOAT_INT.
    let fake = Datatype::create_struct(&[1, 1], &[0, 4], &[dt(Float), int.clone()]).unwrap();
    assert_eq!(Op::builtin(Maxloc).check(&fake).unwrap_err().class(), ErrorClass::Op);

    // No element at all: every op accepts it, and there is nothing to do.
    let empty = Datatype::contiguous(0, &dt(Double)).unwrap();
    for op in Builtin::ALL {
        let mut inout: [u8; 0] = [];
        Op::builtin(op).reduce(&[], &mut inout, 4, &empty).unwrap();
    }
}

#[test]
fn lengths_are_checked() {
    let int = dt(Int);
    let sum = Op::builtin(Sum);
    let mut inout = vec![1u8; 12];
    for (input_len, inout_len) in [(11, 12), (12, 13), (0, 12), (16, 16)] {
        let mut o = vec![1u8; inout_len];
        let e = sum.reduce(&vec![2u8; input_len], &mut o, 3, &int).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Arg, "{e}");
        assert_eq!(o, vec![1u8; inout_len], "unchanged");
    }
    let e = sum.reduce(&[], &mut inout, usize::MAX, &int).unwrap_err();
    assert_eq!(e.class(), ErrorClass::Arg, "{e}");
    for op in [Replace, NoOp] {
        assert_eq!(
            Op::builtin(op).reduce(&[0; 4], &mut inout, 3, &int).unwrap_err().class(),
            ErrorClass::Arg
        );
    }
    assert_eq!(inout, vec![1u8; 12]);
    sum.reduce(&[], &mut [], 0, &int).unwrap();
    // The type is judged before the lengths.
    let e = Op::builtin(Band).reduce(&[0; 3], &mut inout, 5, &dt(Double)).unwrap_err();
    assert_eq!(e.class(), ErrorClass::Op);
}

/// What a user function saw: input length, inout length, count, datatype name.
type Calls = Arc<Mutex<Vec<(usize, usize, usize, String)>>>;

/// A non-commutative user function on ints: `inout[i] = 10 * input[i] + inout[i]`.
fn user_op(commutative: bool) -> (Op, Calls) {
    let calls: Calls = Arc::default();
    let seen = calls.clone();
    let f = move |input: &[u8], inout: &mut [u8], count: usize, t: &Datatype| {
        seen.lock().unwrap().push((input.len(), inout.len(), count, t.name()));
        for (o, i) in inout.chunks_exact_mut(4).zip(input.chunks_exact(4)) {
            let (x, y) =
                (i32::from_ne_bytes(i.try_into().unwrap()), i32::from_ne_bytes((&*o).try_into().unwrap()));
            o.copy_from_slice(&(10 * x + y).to_ne_bytes());
        }
    };
    (Op::user(Arc::new(f), commutative), calls)
}

#[test]
fn user_ops_get_the_buffers_and_count() {
    let (op, calls) = user_op(false);
    assert!(!op.is_commutative());
    assert_eq!(op.as_builtin(), None);
    assert!(user_op(true).0.is_commutative());
    let int = dt(Int);
    let mut inout = ne_bytes!([1i32, 2, 3]);
    op.reduce(&ne_bytes!([4i32, 5, 6]), &mut inout, 3, &int).unwrap();
    assert_eq!(inout, ne_bytes!([41i32, 52, 63]), "inout = input op inout");
    let two = Datatype::contiguous(2, &int).unwrap();
    op.reduce(&ne_bytes!([1i32, 1, 1, 1]), &mut ne_bytes!([0i32; 4]), 2, &two).unwrap();
    assert_eq!(
        *calls.lock().unwrap(),
        [(12, 12, 3, "MPI_INT".to_owned()), (16, 16, 2, String::new())],
        "one call per reduce, with the count of elements of the datatype"
    );
    // Nothing to combine: no call. Contiguous types: packed lengths are checked.
    op.reduce(&[], &mut [], 0, &int).unwrap();
    let e = op.reduce(&[0; 8], &mut [0; 12], 3, &int).unwrap_err();
    assert_eq!(e.class(), ErrorClass::Arg);
    assert_eq!(calls.lock().unwrap().len(), 2);
    // A non-contiguous type: the buffers go through as given (unpacked, the caller's layout).
    let column = Datatype::vector(2, 1, 3, &int).unwrap();
    column.commit().unwrap();
    op.reduce(&[0; 40], &mut [0; 40], 2, &column).unwrap();
    assert_eq!(calls.lock().unwrap()[2], (40, 40, 2, String::new()));
    assert_eq!(op.reduce(&[0; 40], &mut [0; 36], 2, &column).unwrap_err().class(), ErrorClass::Arg);
    // User ops accept any datatype.
    let mixed = Datatype::create_struct(&[1, 1], &[0, 8], &[int.clone(), dt(Double)]).unwrap();
    for t in [dt(Packed), dt(WChar), mixed] {
        op.check(&t).unwrap();
    }
}

#[test]
fn builtins_are_commutative_and_named() {
    let mut names = std::collections::HashSet::new();
    for b in Builtin::ALL {
        let op = Op::builtin(b);
        assert!(op.is_commutative(), "{}", b.name());
        assert_eq!(op.as_builtin(), Some(b));
        assert!(names.insert(b.name()));
        assert_eq!(format!("{op:?}"), format!("Op({})", b.name()));
    }
    assert_eq!(names.len(), 14);
}

// ---- long double (x87 extended) ------------------------------------------------------------

/// A `long double` slot (16 bytes, padding 0xa5) holding `sign`, biased exponent `exp` and the
/// 64-bit significand `mant`.
#[cfg(target_arch = "x86_64")]
fn ldb(sign: bool, exp: u16, mant: u64) -> [u8; 16] {
    let mut b = [0xa5u8; 16];
    b[..8].copy_from_slice(&mant.to_le_bytes());
    b[8..10].copy_from_slice(&(exp | (sign as u16) << 15).to_le_bytes());
    b
}

/// `x` as a `long double` slot (exact: every `f64` is a `long double`).
#[cfg(target_arch = "x86_64")]
fn ld(x: f64) -> [u8; 16] {
    let (sign, exp, frac) =
        (x.is_sign_negative(), ((x.to_bits() >> 52) & 0x7ff) as i32, x.to_bits() & ((1 << 52) - 1));
    match exp {
        0x7ff if frac == 0 => ldb(sign, 0x7fff, 1 << 63),
        0x7ff => ldb(sign, 0x7fff, 0xc000_0000_0000_0000 | frac << 11),
        0 if frac == 0 => ldb(sign, 0, 0),
        0 => {
            let lz = frac.leading_zeros() as i32; // a subnormal double is a normal long double
            ldb(sign, (-1074 - lz + 16383 + 63) as u16, frac << lz)
        }
        _ => ldb(sign, (exp - 1023 + 16383) as u16, 1 << 63 | frac << 11),
    }
}

#[cfg(target_arch = "x86_64")]
fn ld_vec(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|&x| ld(x)).collect()
}

/// The `f64` a `long double` slot holds; panics unless it is exactly one (a normal `f64`, zero,
/// infinity or NaN).
#[cfg(target_arch = "x86_64")]
fn ld_to_f64(b: &[u8]) -> f64 {
    let mant = u64::from_le_bytes(b[..8].try_into().unwrap());
    let se = u16::from_le_bytes([b[8], b[9]]);
    let (sign, exp) = (if se >> 15 == 1 { -1.0 } else { 1.0 }, se & 0x7fff);
    if exp == 0x7fff {
        return if mant << 1 == 0 { sign * f64::INFINITY } else { f64::NAN };
    }
    if exp == 0 && mant == 0 {
        return sign * 0.0;
    }
    let e = exp as i32 - 16383 + 1023;
    assert!(mant >> 63 == 1 && mant & 0x7ff == 0 && (1..2047).contains(&e), "{b:x?} is no f64");
    f64::from_bits(((sign < 0.0) as u64) << 63 | ((e as u64) << 52) | ((mant << 1) >> 12))
}

#[cfg(target_arch = "x86_64")]
#[test]
fn long_double_conversions_round_trip() {
    for x in [0.0, -0.0, 1.0, -2.5, 1e300, -1e-300, f64::MIN_POSITIVE, f64::MAX, INF, -INF] {
        assert_eq!(ld_to_f64(&ld(x)).to_bits(), x.to_bits());
    }
    assert!(ld_to_f64(&ld(NAN)).is_nan());
    assert_eq!(ld(1.0)[..10], super::x87::F80::ONE.0);
    assert_eq!(ld(INF)[..10], super::x87::F80::INFINITY.0);
    assert_eq!(ld(f64::from_bits(1)), ldb(false, 16383 - 1074, 1 << 63));
}

/// MAX/MIN/SUM/PROD on values whose results `f64` holds exactly (24-bit significands, exponents
/// within ±14, and the specials): the reference is the `f64` result.
#[cfg(target_arch = "x86_64")]
#[test]
fn long_double_against_f64_on_exact_values() {
    let mut rng = Rng(51);
    let specials = [0.0, -0.0, 1.0, -1.0, 0.5, -3.0, INF, -INF, NAN];
    let (mut a, mut b) = (vec![], vec![]);
    for &x in &specials {
        for &y in &specials {
            a.push(x);
            b.push(y);
        }
    }
    let r = |rng: &mut Rng| {
        let m = rng.below(1 << 24) as f64 * if rng.below(2) == 0 { -1.0 } else { 1.0 };
        m * 2f64.powi(rng.signed(14) as i32 - 23)
    };
    while a.len() < LEN {
        let x = r(&mut rng);
        let y = if rng.below(5) == 0 { x } else { r(&mut rng) };
        a.push(x);
        b.push(y);
    }
    // Different padding in input and inout: inout's must survive.
    let input: Vec<u8> = b
        .iter()
        .flat_map(|&y| {
            let mut slot = ld(y);
            slot[10..].fill(0x5a);
            slot
        })
        .collect();
    for op in [Max, Min, Sum, Prod] {
        let got = run(op, &dt(LongDouble), a.len(), &input, &ld_vec(&a));
        for (k, g) in got.chunks(16).enumerate() {
            let w = float_ref!(op, a[k], b[k]);
            assert_eq!(g[10..], [0xa5; 6], "padding of element {k}");
            let g = ld_to_f64(g);
            let ok = g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
            assert!(ok, "{}: element {k}: {:?} op {:?} gave {g:?}, want {w:?}", op.name(), a[k], b[k]);
        }
    }
    // Complex: small integers, exact everywhere.
    let (ca, cb): (Vec<f64>, Vec<f64>) =
        (0..2 * LEN).map(|_| (rng.signed(1 << 15) as f64, rng.signed(1 << 15) as f64)).unzip();
    for op in [Sum, Prod] {
        let want: Vec<f64> = ca
            .chunks(2)
            .zip(cb.chunks(2))
            .flat_map(|(x, y)| match op {
                Sum => [x[0] + y[0], x[1] + y[1]],
                _ => [x[0] * y[0] - x[1] * y[1], x[0] * y[1] + x[1] * y[0]],
            })
            .collect();
        let got = run(op, &dt(CLongDoubleComplex), LEN, &ld_vec(&cb), &ld_vec(&ca));
        let got: Vec<f64> = got.chunks(16).map(ld_to_f64).collect();
        assert_eq!(got, want, "{}", op.name());
    }
}

/// Precision and range that `f64` does not have: the arithmetic really is 80-bit.
#[cfg(target_arch = "x86_64")]
#[test]
fn long_double_keeps_its_precision_and_range() {
    const BIAS: u16 = 16383;
    const ONE: u64 = 1 << 63;
    let one = ldb(false, BIAS, ONE);
    let one_ulp = ldb(false, BIAS, ONE | 1); // 1 + 2^-63
    let t = dt(LongDouble);
    let go = |op, x: [u8; 16], y: [u8; 16]| run(op, &t, 1, &y, &x);
    assert_eq!(go(Sum, one, ldb(false, BIAS - 63, ONE)), one_ulp);
    assert_eq!(go(Sum, one, ldb(false, BIAS - 64, ONE)), one, "ties to even");
    assert_eq!(go(Prod, one_ulp, one_ulp), ldb(false, BIAS, ONE | 2), "1 + 2^-62 + 2^-126, rounded");
    assert_eq!(
        go(Sum, ldb(true, BIAS + 16000, ONE), ldb(true, BIAS + 16000, ONE)),
        ldb(true, BIAS + 16001, ONE)
    );
    assert_eq!(go(Prod, ldb(false, 0x7ffe, ONE), ld(2.0)), ldb(false, 0x7fff, ONE), "overflow to infinity");
    assert_eq!(go(Sum, ldb(false, 0, 1), ldb(false, 0, 1)), ldb(false, 0, 2), "denormals");
    assert_eq!(
        go(Max, ldb(false, BIAS + 15999, ONE), ldb(false, BIAS + 16000, ONE)),
        ldb(false, BIAS + 16000, ONE)
    );
    assert_eq!(go(Min, one_ulp, one), one);
    assert_eq!(go(Max, one, one_ulp), one_ulp);
    // MAXLOC sees 1 + 2^-63 > 1 (through f64 this would be a tie, taking index 3).
    let li = |v: [u8; 16], i: i32| pair(&v, i);
    let l = dt(LongDoubleInt);
    assert_eq!(run(Maxloc, &l, 1, &li(one, 3), &li(one_ulp, 7)), li(one_ulp, 7));
    assert_eq!(run(Minloc, &l, 1, &li(one, 3), &li(one_ulp, 7)), li(one, 3));
    assert_eq!(run(Maxloc, &l, 1, &li(one_ulp, 2), &li(one_ulp, 7)), li(one_ulp, 2));
}

#[test]
fn fortran_logical_is_one_or_zero() {
    let a = ne_bytes!([0i32, 1, 5, 0]);
    let b = ne_bytes!([0i32, 0, 1, 7]);
    let t = dt(Logical);
    assert_eq!(run(Land, &t, 4, &a, &b), ne_bytes!([0i32, 0, 1, 0]));
    assert_eq!(run(Lor, &t, 4, &a, &b), ne_bytes!([0i32, 1, 1, 1]));
    assert_eq!(run(Lxor, &t, 4, &a, &b), ne_bytes!([0i32, 1, 0, 1]));
}

#[test]
fn logical_operations_on_fortran_reals_give_one_or_zero() {
    let a = ne_bytes!([0.0f64, 2.5, -1.0]);
    let b = ne_bytes!([3.0f64, 0.0, 0.5]);
    assert_eq!(run(Land, &dt(DoublePrecision), 3, &a, &b), ne_bytes!([0.0f64, 0.0, 1.0]));
    assert_eq!(run(Lxor, &dt(Real8), 3, &a, &b), ne_bytes!([1.0f64, 1.0, 0.0]));
    let a = ne_bytes!([0.0f32, 2.5]);
    let b = ne_bytes!([0.0f32, 0.0]);
    assert_eq!(run(Lor, &dt(Real), 2, &a, &b), ne_bytes!([0.0f32, 1.0]));
}

#[test]
fn fortran_pairs_carry_the_index_in_the_value_type() {
    // (value, index) pairs: the index is a DOUBLE PRECISION, compared as one on ties.
    let a = ne_bytes!([1.0f64, 7.0, 2.0, 9.0, -3.0, 4.0]);
    let b = ne_bytes!([1.0f64, 3.0, 5.0, 1.0, -3.0, 8.0]);
    let t = dt(TwoDoublePrecision);
    assert_eq!(run(Minloc, &t, 3, &a, &b), ne_bytes!([1.0f64, 3.0, 2.0, 9.0, -3.0, 4.0]));
    assert_eq!(run(Maxloc, &t, 3, &a, &b), ne_bytes!([1.0f64, 3.0, 5.0, 1.0, -3.0, 4.0]));
    let a = ne_bytes!([4i32, 2, 6, 1]);
    let b = ne_bytes!([4i32, 1, 5, 0]);
    assert_eq!(run(Maxloc, &dt(TwoInteger), 2, &a, &b), ne_bytes!([4i32, 1, 6, 1]));
    let a = ne_bytes!([0.5f32, 2.0]);
    let b = ne_bytes!([0.25f32, 3.0]);
    assert_eq!(run(Minloc, &dt(TwoReal), 1, &a, &b), ne_bytes!([0.25f32, 3.0]));
}

#[test]
fn fortran_integers_and_complexes_reduce_as_their_c_twins() {
    let a = ne_bytes!([i64::MAX, -4, 6]);
    let b = ne_bytes!([1i64, 10, -6]);
    assert_eq!(run(Sum, &dt(Integer8), 3, &a, &b), ne_bytes!([i64::MIN, 6, 0]));
    let a = ne_bytes!([-3i8, 100]);
    let b = ne_bytes!([2i8, -100]);
    assert_eq!(run(Max, &dt(Character), 2, &a, &b), ne_bytes!([2i8, 100]));
    let a = ne_bytes!([1.0f32, 2.0]);
    let b = ne_bytes!([3.0f32, -1.0]);
    // (1 + 2i)(3 - i) = 5 + 5i
    assert_eq!(run(Prod, &dt(Complex), 1, &a, &b), ne_bytes!([5.0f32, 5.0]));
}
