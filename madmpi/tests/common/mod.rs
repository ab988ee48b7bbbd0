//! Random nested datatypes for the property tests and the MPICH differential test.
//!
//! A [`Spec`] describes how to build a type; it builds the madmpi [`Datatype`] and prints itself
//! in the line format of `tests/mpich/datatype_oracle.c`.

#![allow(dead_code)] // each test binary uses a part

use madmpi::datatype::{DISTRIBUTE_DFLT_DARG, Darray, Datatype, Distribution, Order, Predefined};
use proptest::prelude::*;

/// How to build a datatype.
#[derive(Clone, Debug)]
pub enum Spec {
    Named(Predefined),
    Contig(i64, Box<Spec>),
    Vector(i64, i64, i64, Box<Spec>),
    Hvector(i64, i64, i64, Box<Spec>),
    Indexed(Vec<i64>, Vec<i64>, Box<Spec>),
    Hindexed(Vec<i64>, Vec<i64>, Box<Spec>),
    IndexedBlock(i64, Vec<i64>, Box<Spec>),
    HindexedBlock(i64, Vec<i64>, Box<Spec>),
    /// Members `(blocklength, displacement, type)`; a `None` type is the first member's type.
    Struct(Vec<(i64, i64, Option<Spec>)>),
    Resized(i64, i64, Box<Spec>),
    Subarray(Vec<(i64, i64, i64)>, Order, Box<Spec>),
    /// Grid size, rank, dimensions `(gsize, distribution, darg, psize)`, order.
    Darray(i64, i64, Vec<(i64, Distribution, i64, i64)>, Order, Box<Spec>),
    Dup(Box<Spec>),
}

fn join(v: &[i64]) -> String {
    v.iter().map(|x| format!(" {x}")).collect()
}

impl Spec {
    pub fn build(&self) -> Datatype {
        let r = match self {
            Spec::Named(p) => Ok(Datatype::predefined(*p)),
            Spec::Contig(n, t) => Datatype::contiguous(*n, &t.build()),
            Spec::Vector(n, bl, s, t) => Datatype::vector(*n, *bl, *s, &t.build()),
            Spec::Hvector(n, bl, s, t) => Datatype::hvector(*n, *bl, *s, &t.build()),
            Spec::Indexed(bl, d, t) => Datatype::indexed(bl, d, &t.build()),
            Spec::Hindexed(bl, d, t) => Datatype::hindexed(bl, d, &t.build()),
            Spec::IndexedBlock(bl, d, t) => Datatype::indexed_block(*bl, d, &t.build()),
            Spec::HindexedBlock(bl, d, t) => Datatype::hindexed_block(*bl, d, &t.build()),
            Spec::Struct(m) => {
                let mut types: Vec<Datatype> = Vec::new();
                for (_, _, t) in m {
                    let t = match t {
                        Some(t) => t.build(),
                        None => types[0].clone(),
                    };
                    types.push(t);
                }
                let bl: Vec<i64> = m.iter().map(|x| x.0).collect();
                let d: Vec<i64> = m.iter().map(|x| x.1).collect();
                Datatype::create_struct(&bl, &d, &types)
            }
            Spec::Resized(lb, ext, t) => Datatype::resized(&t.build(), *lb, *ext),
            Spec::Subarray(dims, order, t) => {
                let s: Vec<i64> = dims.iter().map(|d| d.0).collect();
                let sub: Vec<i64> = dims.iter().map(|d| d.1).collect();
                let st: Vec<i64> = dims.iter().map(|d| d.2).collect();
                Datatype::subarray(&s, &sub, &st, *order, &t.build())
            }
            Spec::Darray(size, rank, dims, order, t) => {
                let args = Darray {
                    size: *size,
                    rank: *rank,
                    gsizes: dims.iter().map(|d| d.0).collect(),
                    distribs: dims.iter().map(|d| d.1).collect(),
                    dargs: dims.iter().map(|d| d.2).collect(),
                    psizes: dims.iter().map(|d| d.3).collect(),
                    order: *order,
                };
                Datatype::darray(args, &t.build())
            }
            Spec::Dup(t) => Ok(t.build().dup()),
        };
        r.unwrap_or_else(|e| panic!("building {self:?}: {e}"))
    }

    /// The line format of the C oracle.
    pub fn line(&self) -> String {
        match self {
            Spec::Named(p) => p.name().to_owned(),
            Spec::Contig(n, t) => format!("contig {n} {}", t.line()),
            Spec::Vector(n, bl, s, t) => format!("vector {n} {bl} {s} {}", t.line()),
            Spec::Hvector(n, bl, s, t) => format!("hvector {n} {bl} {s} {}", t.line()),
            Spec::Indexed(bl, d, t) => format!("indexed {}{}{} {}", bl.len(), join(bl), join(d), t.line()),
            Spec::Hindexed(bl, d, t) => format!("hindexed {}{}{} {}", bl.len(), join(bl), join(d), t.line()),
            Spec::IndexedBlock(bl, d, t) => format!("iblock {} {bl}{} {}", d.len(), join(d), t.line()),
            Spec::HindexedBlock(bl, d, t) => format!("hiblock {} {bl}{} {}", d.len(), join(d), t.line()),
            Spec::Struct(m) => {
                let bl: Vec<i64> = m.iter().map(|x| x.0).collect();
                let d: Vec<i64> = m.iter().map(|x| x.1).collect();
                let types: String = m
                    .iter()
                    .map(|x| match &x.2 {
                        Some(t) => format!(" {}", t.line()),
                        None => " same".to_owned(),
                    })
                    .collect();
                format!("struct {}{}{}{types}", m.len(), join(&bl), join(&d))
            }
            Spec::Resized(lb, ext, t) => format!("resized {lb} {ext} {}", t.line()),
            Spec::Subarray(dims, order, t) => {
                let s: Vec<i64> = dims.iter().map(|d| d.0).collect();
                let sub: Vec<i64> = dims.iter().map(|d| d.1).collect();
                let st: Vec<i64> = dims.iter().map(|d| d.2).collect();
                let o = if *order == Order::C { "C" } else { "F" };
                format!("subarray {}{}{}{} {o} {}", dims.len(), join(&s), join(&sub), join(&st), t.line())
            }
            Spec::Darray(size, rank, dims, order, t) => {
                let g: Vec<i64> = dims.iter().map(|d| d.0).collect();
                let dist: String = dims
                    .iter()
                    .map(|d| match d.1 {
                        Distribution::Block => " B",
                        Distribution::Cyclic => " C",
                        Distribution::None => " N",
                    })
                    .collect();
                let a: Vec<i64> = dims.iter().map(|d| d.2).collect();
                let p: Vec<i64> = dims.iter().map(|d| d.3).collect();
                let o = if *order == Order::C { "C" } else { "F" };
                format!(
                    "darray {size} {rank} {}{}{dist}{}{} {o} {}",
                    dims.len(),
                    join(&g),
                    join(&a),
                    join(&p),
                    t.line()
                )
            }
            Spec::Dup(t) => format!("dup {}", t.line()),
        }
    }
}

/// Leaves: a few basic types of each size and alignment, and the pair types.
pub fn arb_named(pairs: bool) -> impl Strategy<Value = Spec> {
    use Predefined::*;
    let mut v = vec![Char, Short, Int, Double, LongDouble, CFloatComplex, CLongDoubleComplex, Int64];
    if pairs {
        v.extend([FloatInt, DoubleInt, ShortInt, LongDoubleInt, TwoInt]);
    }
    prop::sample::select(v).prop_map(Spec::Named)
}

/// Random nested types, small enough that two elements span less than a few MiB.
/// `negative` allows negative extents (resized) and strides.
pub fn arb_spec(pairs: bool, negative: bool) -> impl Strategy<Value = Spec> {
    let lo: i64 = if negative { -4 } else { 0 };
    arb_named(pairs).prop_recursive(4, 64, 2, move |inner| {
        let bx = || inner.clone().prop_map(Box::new);
        let member = (0i64..3, -32i64..32, prop_oneof![3 => inner.clone().prop_map(Some), 1 => Just(None)]);
        let dims = prop::collection::vec(
            (1i64..5)
                .prop_flat_map(|size| (Just(size), 0..=size))
                .prop_flat_map(|(size, sub)| (Just(size), Just(sub), 0..=size - sub)),
            1..4,
        );
        prop_oneof![
            (0i64..4, bx()).prop_map(|(n, t)| Spec::Contig(n, t)),
            (0i64..4, 0i64..3, lo..5, bx()).prop_map(|(n, bl, s, t)| Spec::Vector(n, bl, s, t)),
            (0i64..4, 0i64..3, (lo * 8)..40, bx()).prop_map(|(n, bl, s, t)| Spec::Hvector(n, bl, s, t)),
            (prop::collection::vec((0i64..3, lo..6), 0..4), bx()).prop_map(|(v, t)| Spec::Indexed(
                v.iter().map(|x| x.0).collect(),
                v.iter().map(|x| x.1).collect(),
                t
            )),
            (prop::collection::vec((0i64..3, -32i64..48), 0..4), bx()).prop_map(|(v, t)| Spec::Hindexed(
                v.iter().map(|x| x.0).collect(),
                v.iter().map(|x| x.1).collect(),
                t
            )),
            (0i64..3, prop::collection::vec(lo..6, 0..4), bx())
                .prop_map(|(bl, d, t)| Spec::IndexedBlock(bl, d, t)),
            (0i64..3, prop::collection::vec(-32i64..48, 0..4), bx())
                .prop_map(|(bl, d, t)| Spec::HindexedBlock(bl, d, t)),
            (inner.clone(), 0i64..3, -32i64..32, prop::collection::vec(member, 0..3)).prop_map(
                |(first, bl, d, rest)| {
                    let mut m = vec![(bl, d, Some(first))];
                    m.extend(rest);
                    Spec::Struct(m)
                }
            ),
            (-16i64..16, (lo * 4)..48, bx()).prop_map(|(lb, ext, t)| Spec::Resized(lb, ext, t)),
            (dims, prop::bool::ANY, bx()).prop_map(|(d, c, t)| Spec::Subarray(
                d,
                if c { Order::C } else { Order::Fortran },
                t
            )),
            bx().prop_map(Spec::Dup),
        ]
    })
}

/// One valid dimension of a darray: `(gsize, distribution, darg, psize)`.
pub fn arb_darray_dim() -> impl Strategy<Value = (i64, Distribution, i64, i64)> {
    let dflt = DISTRIBUTE_DFLT_DARG;
    (1i64..7, 0..3u8, 1i64..4).prop_flat_map(move |(g, d, p)| match d {
        0 => {
            // A block of darg elements per process must cover the dimension.
            let min = (g + p - 1) / p;
            (Just(g), Just(Distribution::Block), prop_oneof![Just(dflt), min..=g], Just(p)).boxed()
        }
        1 => (Just(g), Just(Distribution::Cyclic), prop_oneof![Just(dflt), 1i64..4], Just(p)).boxed(),
        // More than 1 process is erroneous MPI that MPICH accepts (and so does the engine).
        _ => (
            Just(g),
            Just(Distribution::None),
            prop_oneof![Just(dflt), 1i64..3],
            prop_oneof![3 => Just(1), 1 => 2i64..3],
        )
            .boxed(),
    })
}

/// Random darray types: every process of random grids, block, cyclic and undistributed
/// dimensions, default and explicit distribution arguments, both orders.
pub fn arb_darray(inner: impl Strategy<Value = Spec>) -> impl Strategy<Value = Spec> {
    (prop::collection::vec(arb_darray_dim(), 1..4), prop::bool::ANY, inner).prop_flat_map(|(dims, c, t)| {
        let size: i64 = dims.iter().map(|d| d.3).product();
        let order = if c { Order::C } else { Order::Fortran };
        (0..size).prop_map(move |rank| Spec::Darray(size, rank, dims.clone(), order, Box::new(t.clone())))
    })
}

/// The memory span `[lo, hi)` touched by `count` elements of `t` (empty when nothing is).
pub fn span(t: &Datatype, count: i64) -> (i64, i64) {
    if t.size() == 0 || count == 0 {
        return (0, 0);
    }
    let last = (count - 1) * t.extent();
    let (tlb, tub) = (t.true_lb(), t.true_lb() + t.true_extent());
    (tlb.min(tlb + last), tub.max(tub + last))
}
