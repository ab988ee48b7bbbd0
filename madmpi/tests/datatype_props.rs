//! Properties of random nested datatypes (vectors of structs of indexed types...): layouts cover
//! exactly `count × size` bytes and start anywhere, pack/unpack round trips touch exactly the
//! type map, element counts agree with a naive signature, and envelopes rebuild the type.

mod common;

use common::{Spec, arb_darray, arb_spec};
use madmpi::datatype::*;
use nmad::Layout;
use proptest::prelude::*;

fn blocks(t: &Datatype, count: i64, from: usize) -> Vec<(isize, usize)> {
    let mut v = Vec::new();
    t.layout(count).unwrap().blocks(from, &mut |o, l| {
        v.push((o, l));
        true
    });
    v
}

/// The sizes of the basic elements of one element in type-map order, straight from the spec.
fn signature(s: &Spec) -> Vec<u64> {
    let rep = |n: i64, t: &Spec| signature(t).repeat(n as usize);
    match s {
        Spec::Named(p) => match p.pair() {
            Some([(a, _), (b, _)]) => vec![a.size(), b.size()],
            None => vec![p.size()],
        },
        Spec::Contig(n, t) => rep(*n, t),
        Spec::Vector(n, bl, _, t) | Spec::Hvector(n, bl, _, t) => rep(n * bl, t),
        Spec::Indexed(bl, _, t) | Spec::Hindexed(bl, _, t) => rep(bl.iter().sum(), t),
        Spec::IndexedBlock(bl, d, t) | Spec::HindexedBlock(bl, d, t) => rep(bl * d.len() as i64, t),
        Spec::Struct(m) => {
            let first = m[0].2.as_ref().unwrap();
            m.iter().flat_map(|(bl, _, t)| rep(*bl, t.as_ref().unwrap_or(first))).collect()
        }
        Spec::Resized(_, _, t) | Spec::Dup(t) => signature(t),
        Spec::Subarray(dims, _, t) => rep(dims.iter().map(|d| d.1).product(), t),
        Spec::Darray(size, rank, dims, order, t) => rep(darray_elements(*size, *rank, dims, *order), t),
    }
}

/// The elements of a darray that `rank` owns: the product over the dimensions of its share
/// (MPI 4.0, 5.1.4; an undistributed dimension over several processes is block-distributed in C
/// order and whole in Fortran order, as MPICH reads it).
fn darray_elements(size: i64, rank: i64, dims: &[(i64, Distribution, i64, i64)], order: Order) -> i64 {
    let (mut procs, mut r) = (size, rank);
    let mut n = 1;
    for &(g, dist, darg, p) in dims {
        procs /= p;
        let c = r / procs;
        r %= procs;
        let dflt = darg == DISTRIBUTE_DFLT_DARG;
        let block = |p: i64, c: i64| {
            let b = if dflt || dist == Distribution::None { (g + p - 1) / p } else { darg };
            b.min(g - b * c).max(0)
        };
        n *= match dist {
            Distribution::Block => block(p, c),
            Distribution::None if order == Order::Fortran => g,
            Distribution::None => block(p, c),
            Distribution::Cyclic => {
                let b = if dflt { 1 } else { darg };
                (0..g).filter(|i| (i / b) % p == c).count() as i64
            }
        };
    }
    n
}

/// Rebuilds a derived type from its envelope and contents.
fn rebuild(t: &Datatype) -> Option<Datatype> {
    let e = t.envelope();
    let c = t.contents().ok()?;
    let (i, a, d) = (&c.integers, &c.addresses, &c.datatypes);
    assert_eq!((i.len(), a.len(), d.len()), (e.num_integers, e.num_addresses, e.num_datatypes));
    let n = i.first().copied().unwrap_or(0) as usize;
    Some(
        match e.combiner {
            COMBINER_DUP => Ok(d[0].dup()),
            COMBINER_CONTIGUOUS => Datatype::contiguous(i[0], &d[0]),
            COMBINER_VECTOR => Datatype::vector(i[0], i[1], i[2], &d[0]),
            COMBINER_HVECTOR => Datatype::hvector(i[0], i[1], a[0], &d[0]),
            COMBINER_INDEXED => Datatype::indexed(&i[1..1 + n], &i[1 + n..], &d[0]),
            COMBINER_HINDEXED => Datatype::hindexed(&i[1..], a, &d[0]),
            COMBINER_INDEXED_BLOCK => Datatype::indexed_block(i[1], &i[2..], &d[0]),
            COMBINER_HINDEXED_BLOCK => Datatype::hindexed_block(i[1], a, &d[0]),
            COMBINER_STRUCT => Datatype::create_struct(&i[1..], a, d),
            COMBINER_SUBARRAY => {
                let order = if i[1 + 3 * n] == ORDER_C { Order::C } else { Order::Fortran };
                Datatype::subarray(&i[1..1 + n], &i[1 + n..1 + 2 * n], &i[1 + 2 * n..1 + 3 * n], order, &d[0])
            }
            COMBINER_RESIZED => Datatype::resized(&d[0], a[0], a[1]),
            COMBINER_DARRAY => {
                let n = i[2] as usize;
                let args = Darray {
                    size: i[0],
                    rank: i[1],
                    gsizes: i[3..3 + n].to_vec(),
                    distribs: i[3 + n..3 + 2 * n]
                        .iter()
                        .map(|&c| Distribution::from_code(c).unwrap())
                        .collect(),
                    dargs: i[3 + 2 * n..3 + 3 * n].to_vec(),
                    psizes: i[3 + 3 * n..3 + 4 * n].to_vec(),
                    order: if i[3 + 4 * n] == ORDER_C { Order::C } else { Order::Fortran },
                };
                Datatype::darray(args, &d[0])
            }
            c => panic!("unexpected combiner {c}"),
        }
        .unwrap(),
    )
}

fn attrs(t: &Datatype) -> (u64, i64, i64, i64, i64, u64, u64) {
    (t.size(), t.lb(), t.extent(), t.true_lb(), t.true_extent(), t.alignment(), t.num_elements())
}

/// 1000 cases unless PROPTEST_CASES says otherwise.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1000)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn layouts_cover_the_type_map(spec in arb_spec(true, true), count in 0i64..4, cut in 0.0f64..1.0) {
        let t = spec.build();
        t.commit().unwrap();
        let all = blocks(&t, count, 0);
        // (a) the blocks add up to the packed size.
        let total: usize = all.iter().map(|b| b.1).sum();
        prop_assert_eq!(total as u64, t.size() * count as u64);
        prop_assert!(all.iter().all(|b| b.1 > 0));
        // Blocks that touch are merged.
        prop_assert!(all.windows(2).all(|w| w[0].0 + w[0].1 as isize != w[1].0));
        // The data stays within the true bounds of the elements.
        let (lo, hi) = common::span(&t, count);
        prop_assert!(all.iter().all(|&(o, l)| o as i64 >= lo && o as i64 + l as i64 <= hi));
        // (c) starting at `from` gives the suffix of the blocks, the first one cut.
        let from = (cut * total as f64) as usize;
        let mut suffix = Vec::new();
        let mut at = 0;
        for &(o, l) in &all {
            if at + l > from {
                let skip = from.saturating_sub(at);
                suffix.push((o + skip as isize, l - skip));
            }
            at += l;
        }
        prop_assert_eq!(blocks(&t, count, from), suffix);
        // A contiguous type is one block.
        if t.is_contiguous() && total > 0 {
            prop_assert_eq!(all, vec![(t.contiguous_offset().unwrap() as isize, total)]);
        }
    }

    #[test]
    fn pack_unpack_round_trips(spec in arb_spec(true, true), count in 0i64..4) {
        let t = spec.build();
        t.commit().unwrap();
        let all = blocks(&t, count, 0);
        let lo = all.iter().map(|b| b.0).min().unwrap_or(0);
        let hi = all.iter().map(|b| b.0 + b.1 as isize).max().unwrap_or(0);
        prop_assume!(hi - lo < 1 << 24);
        // Memory with a margin of 16 bytes around the type map.
        let len = (hi - lo) as usize + 32;
        let at = 16 - lo; // offset of the buffer address in the memory
        let src: Vec<u8> = (0..len).map(|i| (i * 131 % 255 + 1) as u8).collect();
        let mut dst = vec![0u8; len];
        let mut packed = vec![0u8; t.pack_size(count).unwrap()];
        let mut pos = 0;
        // SAFETY: the memory covers every block of the layout, from `at`.
        unsafe { t.pack(src.as_ptr().offset(at), count, &mut packed, &mut pos) }.unwrap();
        prop_assert_eq!(pos, packed.len());
        pos = 0;
        // SAFETY: as above.
        unsafe { t.unpack(&packed, &mut pos, dst.as_mut_ptr().offset(at), count) }.unwrap();
        prop_assert_eq!(pos, packed.len());
        // (b) exactly the bytes of the type map are reproduced; the others stay 0.
        let mut covered = vec![false; len];
        for &(o, l) in &all {
            let s = (o + at) as usize;
            covered[s..s + l].iter_mut().for_each(|c| *c = true);
        }
        for i in 0..len {
            prop_assert_eq!(dst[i], if covered[i] { src[i] } else { 0 }, "byte {}", i);
        }
    }

    #[test]
    fn element_counts_follow_the_signature(spec in arb_spec(true, true), bytes in 0u64..4096) {
        let t = spec.build();
        let sig = signature(&spec);
        prop_assert_eq!(sig.len() as u64, t.num_elements());
        prop_assert_eq!(sig.iter().sum::<u64>(), t.size());
        let size = t.size();
        let bytes = if size == 0 { bytes % 2 } else { bytes % (3 * size + 1) };
        let count = if size == 0 { (bytes == 0).then_some(0) } else { bytes.is_multiple_of(size).then(|| bytes / size) };
        prop_assert_eq!(t.get_count(bytes), count);
        // A basic type counts whole elements only, and so does MPI_2INT (MPICH 4.0.2 handles it
        // as a basic type of two elements); others count the whole basic elements.
        let expected = if size == 0 || matches!(&spec, Spec::Named(p) if p.is_basic()) {
            count
        } else if matches!(&spec, Spec::Named(Predefined::TwoInt)) {
            count.map(|n| n * 2)
        } else {
            let mut rem = bytes % size;
            let whole = sig.iter().take_while(|&&s| { let fits = s <= rem; if fits { rem -= s; } fits }).count();
            Some(bytes / size * sig.len() as u64 + whole as u64)
        };
        prop_assert_eq!(t.get_elements(bytes), expected);
    }

    #[test]
    fn darrays_hold_their_share_and_rebuild(spec in arb_darray(arb_spec(true, false))) {
        let t = spec.build();
        let sig = signature(&spec);
        prop_assert_eq!(t.num_elements(), sig.len() as u64);
        prop_assert_eq!(t.size(), sig.iter().sum::<u64>());
        let r = rebuild(&t).unwrap();
        prop_assert_eq!(attrs(&r), attrs(&t));
        t.commit().unwrap();
        r.commit().unwrap();
        prop_assert_eq!(r.blocks(), t.blocks());
    }

    #[test]
    fn contents_rebuild_the_type(spec in arb_spec(true, true)) {
        let t = spec.build();
        if let Some(r) = rebuild(&t) {
            prop_assert_eq!(attrs(&r), attrs(&t));
            prop_assert_eq!(r.is_contiguous(), t.is_contiguous());
            t.commit().unwrap();
            r.commit().unwrap();
            prop_assert_eq!(r.blocks(), t.blocks());
        } else {
            prop_assert!(matches!(spec, Spec::Named(_)));
        }
    }
}
