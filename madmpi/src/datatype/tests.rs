//! Unit tests of the datatype engine.
//!
//! Expected attributes were checked against MPICH 4.0.2 (`MPI_Type_size_x`,
//! `MPI_Type_get_extent`, `MPI_Type_get_true_extent`, `MPI_Type_get_envelope`,
//! `MPI_Get_elements_x`/`MPI_Get_count` after `MPI_Status_set_elements_x`) with small C programs
//! under `mpiexec.hydra -n 1`; `tests/datatype_mpich.rs` compares random types the same way. To
//! recheck one: write it in the line format of `tests/mpich/datatype_oracle.c` (for example
//! `vector 3 2 -4 MPI_INT`) and run the oracle on that file.

use super::*;
use nmad::Layout;
use std::sync::Arc;

use Predefined::*;

fn p(t: Predefined) -> Datatype {
    Datatype::predefined(t)
}

/// (size, lb, extent, true_lb, true_extent)
fn attrs(t: &Datatype) -> (u64, i64, i64, i64, i64) {
    (t.size(), t.lb(), t.extent(), t.true_lb(), t.true_extent())
}

fn blocks_of(t: &Datatype, count: i64, from: usize) -> Vec<(isize, usize)> {
    t.commit().unwrap();
    let mut v = Vec::new();
    t.layout(count).unwrap().blocks(from, &mut |o, l| {
        v.push((o, l));
        true
    });
    v
}

#[test]
fn predefined_types_match_mpich() {
    // (type, size, extent, true extent, alignment, name); lb = true lb = 0 for all. Checked
    // against MPICH 4.0.2; the alignment is the padding MPICH adds to struct { T; char; }.
    let table = [
        (Char, 1, 1, 1, 1, "MPI_CHAR"),
        (SignedChar, 1, 1, 1, 1, "MPI_SIGNED_CHAR"),
        (UnsignedChar, 1, 1, 1, 1, "MPI_UNSIGNED_CHAR"),
        (Byte, 1, 1, 1, 1, "MPI_BYTE"),
        (WChar, 4, 4, 4, 4, "MPI_WCHAR"),
        (Short, 2, 2, 2, 2, "MPI_SHORT"),
        (UnsignedShort, 2, 2, 2, 2, "MPI_UNSIGNED_SHORT"),
        (Int, 4, 4, 4, 4, "MPI_INT"),
        (Unsigned, 4, 4, 4, 4, "MPI_UNSIGNED"),
        (Long, 8, 8, 8, 8, "MPI_LONG"),
        (UnsignedLong, 8, 8, 8, 8, "MPI_UNSIGNED_LONG"),
        (LongLong, 8, 8, 8, 8, "MPI_LONG_LONG_INT"),
        (UnsignedLongLong, 8, 8, 8, 8, "MPI_UNSIGNED_LONG_LONG"),
        (Float, 4, 4, 4, 4, "MPI_FLOAT"),
        (Double, 8, 8, 8, 8, "MPI_DOUBLE"),
        (LongDouble, 16, 16, 16, 16, "MPI_LONG_DOUBLE"),
        (Int8, 1, 1, 1, 1, "MPI_INT8_T"),
        (Int16, 2, 2, 2, 2, "MPI_INT16_T"),
        (Int32, 4, 4, 4, 4, "MPI_INT32_T"),
        (Int64, 8, 8, 8, 8, "MPI_INT64_T"),
        (Uint8, 1, 1, 1, 1, "MPI_UINT8_T"),
        (Uint16, 2, 2, 2, 2, "MPI_UINT16_T"),
        (Uint32, 4, 4, 4, 4, "MPI_UINT32_T"),
        (Uint64, 8, 8, 8, 8, "MPI_UINT64_T"),
        (CBool, 1, 1, 1, 1, "MPI_C_BOOL"),
        (CFloatComplex, 8, 8, 8, 4, "MPI_C_COMPLEX"),
        (CDoubleComplex, 16, 16, 16, 8, "MPI_C_DOUBLE_COMPLEX"),
        (CLongDoubleComplex, 32, 32, 32, 16, "MPI_C_LONG_DOUBLE_COMPLEX"),
        (Aint, 8, 8, 8, 8, "MPI_AINT"),
        (Offset, 8, 8, 8, 8, "MPI_OFFSET"),
        (Count, 8, 8, 8, 8, "MPI_COUNT"),
        (Packed, 1, 1, 1, 1, "MPI_PACKED"),
        (FloatInt, 8, 8, 8, 4, "MPI_FLOAT_INT"),
        (DoubleInt, 12, 16, 12, 8, "MPI_DOUBLE_INT"),
        (LongInt, 12, 16, 12, 8, "MPI_LONG_INT"),
        (TwoInt, 8, 8, 8, 4, "MPI_2INT"),
        (ShortInt, 6, 8, 8, 4, "MPI_SHORT_INT"),
        (LongDoubleInt, 20, 32, 20, 16, "MPI_LONG_DOUBLE_INT"),
        (Character, 1, 1, 1, 1, "MPI_CHARACTER"),
        (Logical, 4, 4, 4, 4, "MPI_LOGICAL"),
        (Integer, 4, 4, 4, 4, "MPI_INTEGER"),
        (Real, 4, 4, 4, 4, "MPI_REAL"),
        (DoublePrecision, 8, 8, 8, 8, "MPI_DOUBLE_PRECISION"),
        (Complex, 8, 8, 8, 4, "MPI_COMPLEX"),
        (DoubleComplex, 16, 16, 16, 8, "MPI_DOUBLE_COMPLEX"),
        (Integer1, 1, 1, 1, 1, "MPI_INTEGER1"),
        (Integer2, 2, 2, 2, 2, "MPI_INTEGER2"),
        (Integer4, 4, 4, 4, 4, "MPI_INTEGER4"),
        (Integer8, 8, 8, 8, 8, "MPI_INTEGER8"),
        (Real4, 4, 4, 4, 4, "MPI_REAL4"),
        (Real8, 8, 8, 8, 8, "MPI_REAL8"),
        (Real16, 16, 16, 16, 1, "MPI_REAL16"),
        (Complex8, 8, 8, 8, 4, "MPI_COMPLEX8"),
        (Complex16, 16, 16, 16, 8, "MPI_COMPLEX16"),
        (Complex32, 32, 32, 32, 1, "MPI_COMPLEX32"),
        (TwoInteger, 8, 8, 8, 4, "MPI_2INTEGER"),
        (TwoReal, 8, 8, 8, 4, "MPI_2REAL"),
        (TwoDoublePrecision, 16, 16, 16, 8, "MPI_2DOUBLE_PRECISION"),
    ];
    assert_eq!(table.len(), Predefined::ALL.len());
    assert!(Predefined::ALL.iter().enumerate().all(|(i, k)| k.index() == i));
    for (k, size, extent, true_extent, align, name) in table {
        let t = p(k);
        assert_eq!(attrs(&t), (size, 0, extent, 0, true_extent), "{name}");
        assert_eq!((t.alignment(), t.name().as_str()), (align, name));
        assert_eq!(t.envelope().combiner, COMBINER_NAMED);
        assert!(t.is_committed() && t.same(&p(k)) && t.as_predefined() == Some(k));
        assert_eq!(t.num_elements(), if k.is_basic() { 1 } else { 2 });
    }
    assert_eq!(p(ShortInt).blocks().unwrap(), &[(0, 2), (4, 4)]);
    assert_eq!(p(LongDoubleInt).blocks().unwrap(), &[(0, 20)]);
    assert!(p(FloatInt).is_contiguous() && !p(DoubleInt).is_contiguous());
}

#[test]
fn constructors_match_mpich() {
    let (int, double, char, short) = (p(Int), p(Double), p(Char), p(Short));
    let s = |bl: &[i64], d: &[i64], t: &[Datatype]| Datatype::create_struct(bl, d, t).unwrap();
    let r5 = Datatype::resized(&int, 0, 5).unwrap();
    let rneg = Datatype::resized(&int, 4, -8).unwrap();
    let int_char = s(&[1, 1], &[0, 4], &[int.clone(), char.clone()]);
    // (what, type, (size, lb, extent, true_lb, true_extent)), all checked against MPICH 4.0.2.
    type Case = (&'static str, Datatype, (u64, i64, i64, i64, i64));
    let cases: Vec<Case> = vec![
        ("contiguous(3, int)", Datatype::contiguous(3, &int).unwrap(), (12, 0, 12, 0, 12)),
        ("contiguous(0, int)", Datatype::contiguous(0, &int).unwrap(), (0, 0, 0, 0, 0)),
        ("vector(3, 2, 4, int)", Datatype::vector(3, 2, 4, &int).unwrap(), (24, 0, 40, 0, 40)),
        ("vector(3, 2, -4, int)", Datatype::vector(3, 2, -4, &int).unwrap(), (24, -32, 40, -32, 40)),
        ("vector(3, 0, 2, int)", Datatype::vector(3, 0, 2, &int).unwrap(), (0, 0, 16, 0, 16)),
        ("vector(3, 0, -2, int)", Datatype::vector(3, 0, -2, &int).unwrap(), (0, -16, 16, -16, 16)),
        ("vector(0, 2, 2, int)", Datatype::vector(0, 2, 2, &int).unwrap(), (0, 0, 0, 0, 0)),
        ("vector(2, 3, 1, int)", Datatype::vector(2, 3, 1, &int).unwrap(), (24, 0, 16, 0, 16)),
        (
            "hvector(2, 3, -20, double)",
            Datatype::hvector(2, 3, -20, &double).unwrap(),
            (48, -20, 44, -20, 44),
        ),
        ("hvector(3, 1, 5, int)", Datatype::hvector(3, 1, 5, &int).unwrap(), (12, 0, 14, 0, 14)),
        ("hvector(3, 0, 7, int)", Datatype::hvector(3, 0, 7, &int).unwrap(), (0, 0, 14, 0, 14)),
        ("hvector(1, 0, 7, int)", Datatype::hvector(1, 0, 7, &int).unwrap(), (0, 0, 0, 0, 0)),
        (
            "indexed([2,0,1], [4,1,-2], int)",
            Datatype::indexed(&[2, 0, 1], &[4, 1, -2], &int).unwrap(),
            (12, -8, 32, -8, 32),
        ),
        ("indexed([0,0], [4,1], int)", Datatype::indexed(&[0, 0], &[4, 1], &int).unwrap(), (0, 0, 0, 0, 0)),
        (
            "indexed([1,0,2], [0,100,3], int)",
            Datatype::indexed(&[1, 0, 2], &[0, 100, 3], &int).unwrap(),
            (12, 0, 20, 0, 20),
        ),
        (
            "hindexed([2,1], [10,-3], short)",
            Datatype::hindexed(&[2, 1], &[10, -3], &short).unwrap(),
            (6, -3, 17, -3, 17),
        ),
        (
            "indexed_block(2, [5,0,2], double)",
            Datatype::indexed_block(2, &[5, 0, 2], &double).unwrap(),
            (48, 0, 56, 0, 56),
        ),
        (
            "indexed_block(0, [0,100], int)",
            Datatype::indexed_block(0, &[0, 100], &int).unwrap(),
            (0, 0, 400, 0, 400),
        ),
        (
            "hindexed_block(3, [7,-9], char)",
            Datatype::hindexed_block(3, &[7, -9], &char).unwrap(),
            (6, -9, 19, -9, 19),
        ),
        (
            "hindexed_block(0, [0,100], int)",
            Datatype::hindexed_block(0, &[0, 100], &int).unwrap(),
            (0, 0, 100, 0, 100),
        ),
        ("struct{int@0, char@4}", int_char.clone(), (5, 0, 8, 0, 5)),
        ("struct{double@8, char@0}", s(&[1, 1], &[8, 0], &[double.clone(), char.clone()]), (9, 0, 16, 0, 16)),
        ("struct{char@0, 0 double@8}", s(&[1, 0], &[0, 8], &[char.clone(), double.clone()]), (1, 0, 1, 0, 1)),
        (
            "struct{3 char@-5, short@10}",
            s(&[3, 1], &[-5, 10], &[char.clone(), short.clone()]),
            (5, -5, 18, -5, 17),
        ),
        ("struct{0 int@3}", s(&[0], &[3], std::slice::from_ref(&int)), (0, 0, 0, 0, 0)),
        ("struct{}", s(&[], &[], &[]), (0, 0, 0, 0, 0)),
        ("struct{int@0, int@5}", s(&[1, 1], &[0, 5], &[int.clone(), int.clone()]), (8, 0, 9, 0, 9)),
        ("struct{int@0, int32_t@5}", s(&[1, 1], &[0, 5], &[int.clone(), p(Int32)]), (8, 0, 9, 0, 9)),
        ("struct{int@0, float@5}", s(&[1, 1], &[0, 5], &[int.clone(), p(Float)]), (8, 0, 12, 0, 9)),
        (
            "struct{double@0, contiguous(1, double)@9}",
            s(&[1, 1], &[0, 9], &[double.clone(), Datatype::contiguous(1, &double).unwrap()]),
            (16, 0, 17, 0, 17),
        ),
        (
            "struct{int@0, contiguous(2, int)@5}",
            s(&[1, 1], &[0, 5], &[int.clone(), Datatype::contiguous(2, &int).unwrap()]),
            (12, 0, 16, 0, 13),
        ),
        (
            "struct{int, float, char}",
            s(&[1, 1, 1], &[0, 4, 8], &[int.clone(), p(Float), char.clone()]),
            (9, 0, 12, 0, 9),
        ),
        ("struct{short_int@0, char@8}", s(&[1, 1], &[0, 8], &[p(ShortInt), char.clone()]), (7, 0, 12, 0, 9)),
        ("resized(int, -2, 10)", Datatype::resized(&int, -2, 10).unwrap(), (4, -2, 10, 0, 4)),
        ("resized(int, 0, -4)", Datatype::resized(&int, 0, -4).unwrap(), (4, 0, -4, 0, 4)),
        ("R = resized(int, 0, 5)", r5.clone(), (4, 0, 5, 0, 4)),
        ("struct{R@0}", s(&[1], &[0], std::slice::from_ref(&r5)), (4, 0, 5, 0, 4)),
        ("struct{R@0, char@5}", s(&[1, 1], &[0, 5], &[r5.clone(), char.clone()]), (5, 0, 8, 0, 6)),
        ("struct{R@0, 0 char@8}", s(&[1, 0], &[0, 8], &[r5.clone(), char.clone()]), (4, 0, 8, 0, 4)),
        ("contiguous(2, R)", Datatype::contiguous(2, &r5).unwrap(), (8, 0, 10, 0, 9)),
        ("vector(2, 2, 3, R)", Datatype::vector(2, 2, 3, &r5).unwrap(), (16, 0, 25, 0, 24)),
        (
            "contiguous(3, resized(int, 4, -8))",
            Datatype::contiguous(3, &rneg).unwrap(),
            (12, -12, 8, -16, 20),
        ),
        (
            "vector(2, 2, 3, resized(int, 4, -8))",
            Datatype::vector(2, 2, 3, &rneg).unwrap(),
            (16, -28, 24, -32, 36),
        ),
        (
            "vector(2, 2, -3, resized(int, 4, -8))",
            Datatype::vector(2, 2, -3, &rneg).unwrap(),
            (16, -4, 24, -8, 36),
        ),
        (
            "indexed([2,1], [1,5], resized(int, 4, -8))",
            Datatype::indexed(&[2, 1], &[1, 5], &rneg).unwrap(),
            (12, -36, 24, -40, 36),
        ),
        (
            "struct{2 resized(int, 4, -8)@0, char@8}",
            s(&[2, 1], &[0, 8], &[rneg.clone(), char.clone()]),
            (9, -4, 16, -8, 17),
        ),
        (
            "vector(2, 1, 3, struct{int, char})",
            Datatype::vector(2, 1, 3, &int_char).unwrap(),
            (10, 0, 32, 0, 29),
        ),
        (
            "contiguous(2, long_double_int)",
            Datatype::contiguous(2, &p(LongDoubleInt)).unwrap(),
            (40, 0, 64, 0, 52),
        ),
        (
            "subarray C [4,5] [2,3] [1,1] int",
            Datatype::subarray(&[4, 5], &[2, 3], &[1, 1], Order::C, &int).unwrap(),
            (24, 0, 80, 24, 32),
        ),
        (
            "subarray F [4,5] [2,3] [1,1] int",
            Datatype::subarray(&[4, 5], &[2, 3], &[1, 1], Order::Fortran, &int).unwrap(),
            (24, 0, 80, 20, 40),
        ),
        (
            "subarray C [3,4,5] [2,2,2] [1,2,3] double",
            Datatype::subarray(&[3, 4, 5], &[2, 2, 2], &[1, 2, 3], Order::C, &double).unwrap(),
            (64, 0, 480, 264, 216),
        ),
        (
            "subarray F [3,4,5] [2,2,2] [1,2,3] double",
            Datatype::subarray(&[3, 4, 5], &[2, 2, 2], &[1, 2, 3], Order::Fortran, &double).unwrap(),
            (64, 0, 480, 344, 136),
        ),
        (
            "subarray C [10] [0] [2] int",
            Datatype::subarray(&[10], &[0], &[2], Order::C, &int).unwrap(),
            (0, 0, 40, 0, 0),
        ),
        (
            "subarray C [4,5] [2,3] [1,1] resized(int, -4, 12)",
            Datatype::subarray(
                &[4, 5],
                &[2, 3],
                &[1, 1],
                Order::C,
                &Datatype::resized(&int, -4, 12).unwrap(),
            )
            .unwrap(),
            (24, 0, 240, 72, 88),
        ),
        ("dup(int)", int.dup(), (4, 0, 4, 0, 4)),
        ("dup(struct{int, char})", int_char.dup(), (5, 0, 8, 0, 5)),
    ];
    for (what, t, expected) in cases {
        assert_eq!(attrs(&t), expected, "{what}");
    }
}

#[test]
fn envelopes_and_contents() {
    let int = p(Int);
    let check = |t: &Datatype, env: (usize, usize, usize, i32), ints: &[i64], addrs: &[i64]| {
        let e = t.envelope();
        assert_eq!((e.num_integers, e.num_addresses, e.num_datatypes, e.combiner), env);
        let c = t.contents().unwrap();
        assert_eq!((c.integers.as_slice(), c.addresses.as_slice()), (ints, addrs));
        assert_eq!(c.datatypes.len(), env.2);
    };
    // Envelope sizes and combiners checked against MPICH 4.0.2.
    check(&int.dup(), (0, 0, 1, COMBINER_DUP), &[], &[]);
    check(&Datatype::contiguous(3, &int).unwrap(), (1, 0, 1, COMBINER_CONTIGUOUS), &[3], &[]);
    check(&Datatype::vector(3, 2, 4, &int).unwrap(), (3, 0, 1, COMBINER_VECTOR), &[3, 2, 4], &[]);
    check(&Datatype::hvector(2, 3, -20, &int).unwrap(), (2, 1, 1, COMBINER_HVECTOR), &[2, 3], &[-20]);
    let indexed = Datatype::indexed(&[2, 0, 1], &[4, 1, -2], &int).unwrap();
    check(&indexed, (7, 0, 1, COMBINER_INDEXED), &[3, 2, 0, 1, 4, 1, -2], &[]);
    let hindexed = Datatype::hindexed(&[2, 1], &[10, -3], &int).unwrap();
    check(&hindexed, (3, 2, 1, COMBINER_HINDEXED), &[2, 2, 1], &[10, -3]);
    let iblock = Datatype::indexed_block(2, &[5, 0, 2], &int).unwrap();
    check(&iblock, (5, 0, 1, COMBINER_INDEXED_BLOCK), &[3, 2, 5, 0, 2], &[]);
    let hiblock = Datatype::hindexed_block(3, &[7, -9], &int).unwrap();
    check(&hiblock, (2, 2, 1, COMBINER_HINDEXED_BLOCK), &[2, 3], &[7, -9]);
    let st = Datatype::create_struct(&[1, 1], &[0, 4], &[int.clone(), p(Char)]).unwrap();
    check(&st, (3, 2, 2, COMBINER_STRUCT), &[2, 1, 1], &[0, 4]);
    assert_eq!(st.contents().unwrap().datatypes, vec![int.clone(), p(Char)]);
    check(&Datatype::create_struct(&[], &[], &[]).unwrap(), (1, 0, 0, COMBINER_STRUCT), &[0], &[]);
    let sub = Datatype::subarray(&[4, 5], &[2, 3], &[1, 1], Order::Fortran, &int).unwrap();
    check(&sub, (8, 0, 1, COMBINER_SUBARRAY), &[2, 4, 5, 2, 3, 1, 1, ORDER_FORTRAN], &[]);
    check(&Datatype::resized(&int, -2, 10).unwrap(), (0, 2, 1, COMBINER_RESIZED), &[], &[-2, 10]);
    assert_eq!(int.contents().unwrap_err().kind, ErrorKind::Type);
    assert_eq!(combiner_name(st.envelope().combiner), "MPI_COMBINER_STRUCT");
}

#[test]
fn large_count_envelopes_move_counts_to_large_counts() {
    // As MPICH 4.0.2 reports them for types built by the `_c` constructors.
    let int = p(Int);
    let large = |t: Datatype| {
        let t = t.with_large_counts();
        let e = t.envelope();
        let c = t.contents().unwrap();
        let env = (e.num_integers, e.num_addresses, e.num_large_counts, e.num_datatypes);
        assert_eq!((c.integers.len(), c.addresses.len(), c.large_counts.len()), (env.0, env.1, env.2));
        (env, c.integers, c.large_counts)
    };
    let h = Datatype::hindexed(&[1, 2], &[0, 16], &int).unwrap();
    assert_eq!(large(h), ((0, 0, 5, 1), vec![], vec![2, 1, 2, 0, 16]));
    let sub = Datatype::subarray(&[4, 5], &[2, 3], &[1, 1], Order::C, &int).unwrap();
    assert_eq!(large(sub), ((2, 0, 6, 1), vec![2, ORDER_C], vec![4, 5, 2, 3, 1, 1]));
    let d = Darray {
        size: 2,
        rank: 1,
        gsizes: vec![10, 7],
        distribs: vec![Distribution::Block, Distribution::Cyclic],
        dargs: vec![DISTRIBUTE_DFLT_DARG, 2],
        psizes: vec![2, 1],
        order: Order::C,
    };
    let d = Datatype::darray(d, &int).unwrap();
    assert_eq!(d.envelope().num_integers, 12, "int form: 4 + 4 * ndims");
    let ints = vec![2, 1, 2, 121, 122, DISTRIBUTE_DFLT_DARG, 2, 2, 1, ORDER_C];
    assert_eq!(large(d), ((10, 0, 2, 1), ints, vec![10, 7]));
    assert_eq!(large(Datatype::resized(&int, -4, 12).unwrap()), ((0, 0, 2, 1), vec![], vec![-4, 12]));
    let v = Datatype::vector(3, 2, 4, &int).unwrap();
    assert_eq!(v.envelope().num_large_counts, 0);
    assert!(!v.has_large_counts());
}

#[test]
fn commit_flattens_and_merges() {
    let int = p(Int);
    let v = Datatype::vector(3, 2, 4, &int).unwrap();
    assert!(v.blocks().is_none() && !v.is_committed());
    assert_eq!(v.layout(1).unwrap_err().kind, ErrorKind::Type);
    v.commit().unwrap();
    v.commit().unwrap();
    assert_eq!(v.blocks().unwrap(), &[(0, 8), (16, 8), (32, 8)]);
    // Adjacent blocks merge in type-map order only.
    let fwd = Datatype::create_struct(&[1, 1], &[0, 4], &[int.clone(), int.clone()]).unwrap();
    let back = Datatype::create_struct(&[1, 1], &[4, 0], &[int.clone(), int.clone()]).unwrap();
    fwd.commit().unwrap();
    back.commit().unwrap();
    assert_eq!(fwd.blocks().unwrap(), &[(0, 8)]);
    assert_eq!(back.blocks().unwrap(), &[(4, 4), (0, 4)]);
    assert!(fwd.is_contiguous() && !back.is_contiguous());
    // Overlaps and empty blocks.
    let h = Datatype::hindexed(&[2, 0, 1, 1], &[0, 3, 4, 2], &p(Short)).unwrap();
    h.commit().unwrap();
    assert_eq!(h.blocks().unwrap(), &[(0, 6), (2, 2)]);
    // A vector of a struct: the struct is flattened once, its blocks repeated.
    let ic = Datatype::create_struct(&[1, 1], &[0, 4], &[int.clone(), p(Char)]).unwrap();
    let vs = Datatype::vector(2, 2, 3, &ic).unwrap();
    vs.commit().unwrap();
    assert_eq!(vs.blocks().unwrap(), &[(0, 5), (8, 5), (24, 5), (32, 5)]);
    // A huge contiguous type is one block, computed without iterating.
    let big = Datatype::contiguous(1 << 39, &Datatype::contiguous(1 << 20, &p(Double)).unwrap()).unwrap();
    big.commit().unwrap();
    assert_eq!(big.blocks().unwrap(), &[(0, 1 << 62)]);
    // A dup shares the committed state.
    assert!(vs.dup().is_committed() && !Datatype::vector(3, 2, 4, &int).unwrap().dup().is_committed());
}

#[test]
fn contiguity() {
    let int = p(Int);
    assert!(int.is_contiguous() && Datatype::contiguous(4, &int).unwrap().is_contiguous());
    assert!(Datatype::vector(3, 2, 2, &int).unwrap().is_contiguous());
    assert!(!Datatype::vector(3, 2, 3, &int).unwrap().is_contiguous());
    assert!(!Datatype::resized(&int, 0, 8).unwrap().is_contiguous());
    let shifted = Datatype::hindexed(&[3], &[8], &int).unwrap();
    assert_eq!(shifted.contiguous_offset(), Some(8));
    // One block per element, but a gap between elements.
    let s = Datatype::create_struct(&[1, 1], &[0, 4], &[int.clone(), p(Char)]).unwrap();
    assert!(!s.is_contiguous());
    assert_eq!(Datatype::contiguous(0, &int).unwrap().contiguous_offset(), Some(0));
}

#[test]
fn layout_merges_elements_and_starts_anywhere() {
    let int = p(Int);
    // Two blocks per element: (0, 4) and (8, 4), extent 12: the second block of element i
    // touches the first of element i + 1.
    let t = Datatype::resized(&Datatype::indexed(&[1, 1], &[0, 2], &int).unwrap(), 0, 12).unwrap();
    assert_eq!(blocks_of(&t, 3, 0), [(0, 4), (8, 8), (20, 8), (32, 4)]);
    assert_eq!(blocks_of(&t, 3, 6), [(10, 6), (20, 8), (32, 4)]);
    assert_eq!(blocks_of(&t, 3, 13), [(21, 7), (32, 4)]);
    assert_eq!(blocks_of(&t, 3, 23), [(35, 1)]);
    assert!(blocks_of(&t, 3, 24).is_empty());
    // Contiguous elements: one block whatever the count.
    let c = Datatype::contiguous(3, &int).unwrap();
    assert_eq!(blocks_of(&c, 1000, 5), [(5, 11995)]);
    // Negative extent: elements go down.
    let n = Datatype::resized(&int, 0, -8).unwrap();
    assert_eq!(blocks_of(&n, 3, 2), [(2, 2), (-8, 4), (-16, 4)]);
    // Stopping early.
    t.commit().unwrap();
    let mut seen = 0;
    t.layout(3).unwrap().blocks(0, &mut |_, _| {
        seen += 1;
        seen < 2
    });
    assert_eq!(seen, 2);
    assert_eq!(t.layout(-1).unwrap_err().kind, ErrorKind::Count);
}

#[test]
fn huge_counts_are_lazy() {
    // 2 blocks (0, 8) and (16, 8), extent 24: element i's second block touches i + 1's first.
    let t = Datatype::vector(2, 1, 2, &p(Double)).unwrap();
    t.commit().unwrap();
    let start = std::time::Instant::now();
    let layout: Arc<dyn Layout> = Arc::new(t.layout(1 << 30).unwrap());
    assert_eq!(layout.size(), 16 << 30);
    let mut first = Vec::new();
    layout.blocks(0, &mut |o, l| {
        first.push((o, l));
        first.len() < 10
    });
    assert_eq!(first[..4], [(0, 8), (16, 16), (40, 16), (64, 16)]);
    let mut last = Vec::new();
    layout.blocks((16 << 30) - 12, &mut |o, l| {
        last.push((o, l));
        true
    });
    let base = ((1isize << 30) - 1) * 24;
    assert_eq!(last, [(base + 4, 4), (base + 16, 8)]);
    assert!(start.elapsed() < std::time::Duration::from_secs(1), "{:?}", start.elapsed());
    // A data description nmad can use.
    let mut buf = vec![0u8; 48];
    // SAFETY: the layout of one element stays within `buf`, which outlives `d`.
    let d = unsafe { nmad::Data::from_layout(buf.as_mut_ptr(), Arc::new(t.layout(2).unwrap())) };
    assert_eq!(d.block_count(0..32), 3);
    // SAFETY: as above.
    assert_eq!(unsafe { d.unpack(0, &[7; 32]) }, 32);
    assert_eq!(buf.iter().filter(|&&b| b == 7).count(), 32);
}

#[test]
fn nmad_data_descriptions() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Datatype>();
    send_sync::<TypeLayout>();
    let mut buf = [0u8; 64];
    let shifted = Datatype::hindexed(&[2], &[8], &p(Int)).unwrap();
    let strided = Datatype::vector(2, 1, 2, &p(Int)).unwrap();
    // SAFETY: 2 elements of either type stay within `buf`, which outlives the descriptions.
    let (c, s) = unsafe { (shifted.data(buf.as_mut_ptr(), 2), strided.data(buf.as_mut_ptr(), 2)) };
    assert_eq!(c.unwrap_err().kind, ErrorKind::Type);
    assert_eq!(s.unwrap_err().kind, ErrorKind::Type);
    shifted.commit().unwrap();
    strided.commit().unwrap();
    // SAFETY: as above.
    let (c, s) =
        unsafe { (shifted.data(buf.as_mut_ptr(), 2).unwrap(), strided.data(buf.as_mut_ptr(), 2).unwrap()) };
    assert!(matches!(c, nmad::Data::Contig { len: 16, .. }));
    assert!(matches!(s, nmad::Data::Layout { .. }) && s.len() == 16);
    // SAFETY: as above.
    unsafe {
        c.unpack(0, &[1; 16]);
        s.unpack(0, &[2; 16]);
    }
    assert_eq!(
        buf[..28],
        [2, 2, 2, 2, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 0, 0]
    );
}

#[test]
fn overflow_is_an_error() {
    let big = Datatype::contiguous(i64::MAX / 8, &p(Double)).unwrap();
    assert_eq!(Datatype::contiguous(2, &big).unwrap_err().kind, ErrorKind::Overflow);
    assert_eq!(Datatype::hvector(3, 1, i64::MAX / 2, &p(Int)).unwrap_err().kind, ErrorKind::Overflow);
    assert_eq!(Datatype::resized(&p(Int), i64::MAX, 1).unwrap_err().kind, ErrorKind::Overflow);
    assert_eq!(Datatype::indexed(&[1], &[i64::MAX / 2], &p(Int)).unwrap_err().kind, ErrorKind::Overflow);
    let empty = Datatype::contiguous(0, &p(Int)).unwrap();
    assert_eq!(Datatype::hvector(4, 1, i64::MAX / 2, &empty).unwrap_err().kind, ErrorKind::Overflow);
    let st = Datatype::create_struct(&[1, 1], &[0, 8], &[big.clone(), big.clone()]);
    assert_eq!(st.unwrap_err().kind, ErrorKind::Overflow);
    let huge = Datatype::contiguous(1 << 40, &p(Double)).unwrap();
    huge.commit().unwrap();
    assert_eq!(huge.layout(1 << 30).unwrap_err().kind, ErrorKind::Overflow);
    assert_eq!(huge.pack_size(1 << 30).unwrap_err().kind, ErrorKind::Overflow);
}

#[test]
fn invalid_arguments_are_errors() {
    let int = p(Int);
    let kind = |r: Result<Datatype>| r.unwrap_err().kind;
    assert_eq!(kind(Datatype::contiguous(-1, &int)), ErrorKind::Count);
    assert_eq!(kind(Datatype::vector(2, -1, 1, &int)), ErrorKind::Count);
    assert_eq!(kind(Datatype::hvector(-2, 1, 1, &int)), ErrorKind::Count);
    assert_eq!(kind(Datatype::indexed(&[1, -1], &[0, 1], &int)), ErrorKind::Count);
    assert_eq!(kind(Datatype::indexed(&[1, 1], &[0], &int)), ErrorKind::Arg);
    assert_eq!(kind(Datatype::hindexed_block(-1, &[0], &int)), ErrorKind::Count);
    assert_eq!(kind(Datatype::create_struct(&[1], &[0], &[])), ErrorKind::Arg);
    assert_eq!(kind(Datatype::create_struct(&[-1], &[0], std::slice::from_ref(&int))), ErrorKind::Count);
    let sub = |s: &[i64], sub: &[i64], st: &[i64]| kind(Datatype::subarray(s, sub, st, Order::C, &int));
    assert_eq!(sub(&[10], &[5], &[6]), ErrorKind::Arg);
    assert_eq!(sub(&[10], &[11], &[0]), ErrorKind::Arg);
    assert_eq!(sub(&[10], &[1], &[-1]), ErrorKind::Arg);
    assert_eq!(sub(&[0], &[0], &[0]), ErrorKind::Arg);
    assert_eq!(sub(&[], &[], &[]), ErrorKind::Arg);
    assert_eq!(sub(&[4, 4], &[1], &[0, 0]), ErrorKind::Arg);
    assert!(Datatype::subarray(&[10], &[0], &[10], Order::C, &int).is_ok());
    assert!(format!("{}", Datatype::contiguous(-1, &int).unwrap_err()).contains("negative count"));
}

#[test]
fn pack_and_unpack() {
    let int = p(Int);
    let t = Datatype::vector(2, 1, 3, &int).unwrap(); // ints 0 and 3 of each 4-int element
    let src: Vec<i32> = (0..8).collect();
    let mut dst = [-1i32; 8];
    let pack = |count, out: &mut [u8], pos: &mut usize| {
        // SAFETY: `src` holds 2 elements (extent 16 bytes) and `count <= 2`.
        unsafe { t.pack(src.as_ptr().cast(), count, out, pos) }
    };
    let mut packed = [0u8; 20];
    let mut pos = 2;
    assert_eq!(pack(2, &mut packed, &mut pos).unwrap_err().kind, ErrorKind::Type);
    t.commit().unwrap();
    pack(2, &mut packed, &mut pos).unwrap();
    assert_eq!(pos, 18);
    let ints: Vec<i32> = packed[2..18].chunks(4).map(|c| i32::from_ne_bytes(c.try_into().unwrap())).collect();
    assert_eq!(ints, [0, 3, 4, 7]);
    // Too small: an error, nothing written.
    let before = packed;
    assert_eq!(pack(1, &mut packed, &mut pos).unwrap_err().kind, ErrorKind::Truncate);
    assert_eq!((packed, pos), (before, 18));
    assert_eq!(pack(-1, &mut packed, &mut 0).unwrap_err().kind, ErrorKind::Count);

    let mut unpack = |count, pos: &mut usize| {
        // SAFETY: `dst` holds 2 elements and `count <= 2`.
        unsafe { t.unpack(&packed, pos, dst.as_mut_ptr().cast(), count) }
    };
    let mut pos = 2;
    unpack(2, &mut pos).unwrap();
    assert_eq!(unpack(1, &mut pos).unwrap_err().kind, ErrorKind::Truncate);
    assert_eq!((dst, pos), ([0, -1, -1, 3, 4, -1, -1, 7], 18));
    assert_eq!(t.pack_size(5).unwrap(), 40);
    assert_eq!(p(ShortInt).pack_size(5).unwrap(), 30); // as MPICH
}

#[test]
fn element_counts_match_mpich() {
    let int = p(Int);
    let int_char = Datatype::create_struct(&[1, 1], &[0, 4], &[int.clone(), p(Char)]).unwrap();
    let int_double = Datatype::create_struct(&[1, 1], &[0, 4], &[int.clone(), p(Double)]).unwrap();
    let int2 = Datatype::contiguous(2, &int).unwrap();
    let empty = Datatype::contiguous(0, &int).unwrap();
    // (type, bytes, MPI_Get_elements, MPI_Get_count), `None` for MPI_UNDEFINED; checked against
    // MPICH 4.0.2.
    let cases = [
        (&int, 8, Some(2), Some(2)),
        (&int, 6, None, None),
        (&int_char, 4, Some(1), None),
        (&int_char, 5, Some(2), Some(1)),
        (&int_char, 7, Some(2), None),
        (&int_char, 10, Some(4), Some(2)),
        (&int_char, 12, Some(4), None),
        (&int2, 4, Some(1), None),
        (&int2, 6, Some(1), None),
        (&int2, 12, Some(3), None),
        (&empty, 0, Some(0), Some(0)),
        (&empty, 4, None, None),
        (&int_double, 6, Some(1), None),
        (&int_double, 12, Some(2), Some(1)),
        (&int_double, 16, Some(3), None),
        (&int_double, 28, Some(5), None),
    ];
    for (t, bytes, elements, count) in cases {
        assert_eq!((t.get_elements(bytes), t.get_count(bytes)), (elements, count), "{t:?} {bytes}");
    }
    // Pair types count two basic elements (MPICH 4.0.2 crashes there).
    assert_eq!(p(ShortInt).get_elements(6 * 3 + 2), Some(7));
    assert_eq!(p(ShortInt).get_elements(6), Some(2));
    // MPI_2INT is one of MPICH's basic types: whole pairs only, two elements each.
    for (bytes, elements) in [(0, Some(0)), (4, None), (6, None), (8, Some(2)), (12, None), (24, Some(6))] {
        assert_eq!(p(TwoInt).get_elements(bytes), elements, "MPI_2INT, {bytes} bytes");
    }
    // Strided parts are skipped by division: a big vector of a struct.
    let v = Datatype::vector(1 << 40, 3, 5, &int_char).unwrap();
    assert_eq!(v.get_elements(v.size() - 1), Some(v.num_elements() - 1));
}

#[test]
fn names() {
    let t = Datatype::vector(2, 1, 2, &p(Int)).unwrap();
    assert_eq!(t.name(), "");
    t.set_name("column");
    assert_eq!(t.name(), "column");
    assert_eq!(t.dup().name(), "");
    assert_eq!(p(LongLong).name(), "MPI_LONG_LONG_INT");
    assert_eq!(p(Int).dup().name(), "");
    assert!(format!("{t:?}").contains("MPI_COMBINER_VECTOR"));
}

#[test]
fn status_bytes_are_count_times_size_and_invert_get_count() {
    let int2 = Datatype::contiguous(2, &p(Int)).unwrap();
    assert_eq!(p(Double).status_bytes(3), Some(24));
    assert_eq!(int2.status_bytes(3), Some(24));
    assert_eq!(int2.get_count(24), Some(3));
    assert_eq!(p(Int).get_elements(p(Int).status_bytes(5).unwrap()), Some(5));
    assert_eq!(Datatype::contiguous(0, &p(Int)).unwrap().status_bytes(9), Some(0));
    assert_eq!(p(Double).status_bytes(u64::MAX / 4), None, "beyond 63 bits");
    assert_eq!(p(Double).status_bytes(1 << 60), None, "2^63 bytes do not fit");
    assert_eq!(p(Double).status_bytes((1 << 60) - 1), Some(i64::MAX as u64 - 7));
}
