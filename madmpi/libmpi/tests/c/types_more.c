/* The datatype and memory calls beyond the constructors: MPI_Get_address and MPI_Aint_add/diff
 * (a struct of absolute addresses sent from MPI_BOTTOM), the MPI-1 names (MPI_Address,
 * MPI_Type_extent/lb/ub/hvector/hindexed/struct), MPI_Alloc_mem/MPI_Free_mem, distributed arrays
 * (MPI_Type_create_darray(_c): packed order, exchanged parts, envelopes), MPI_Type_match_size
 * and the f90 types, datatype attributes (copy on MPI_Type_dup, delete on free), and the
 * large-count envelopes and queries. Run with 2 processes; also passes on MPICH's library
 * (ON_MADMPI marks the documented differences). */
#include "types.h"
#include <stdint.h>

static int rank, peer;

static void addresses(void)
{
    struct {
        int i;
        double d[3];
        char c;
    } s = {7 + rank, {1.5, 2.5 * rank, -3}, (char)('a' + rank)}, r;
    MPI_Aint base, ad, ac, old = -1;
    int bl[3] = {1, 3, 1};
    MPI_Aint disp[3];
    MPI_Datatype ty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, abs_t, rel_t;

    CHECK(MPI_Get_address(&s, &base) == MPI_SUCCESS && MPI_Get_address(&s.d[1], &ad) == MPI_SUCCESS &&
              MPI_Get_address(&s.c, &ac) == MPI_SUCCESS,
          "MPI_Get_address");
    CHECK(MPI_Aint_diff(ad, base) == 16 && MPI_Aint_add(base, 16) == ad && base == (MPI_Aint)(intptr_t)&s,
          "MPI_Aint_diff/MPI_Aint_add: &s.d[1] - &s = %ld", (long)MPI_Aint_diff(ad, base));
    CHECK(MPI_Address(&s.c, &old) == MPI_SUCCESS && old == ac, "MPI_Address is MPI_Get_address");
    CHECK_ERR(MPI_Get_address(&s, NULL), MPI_ERR_ARG, "address");

    /* Absolute addresses, sent from MPI_BOTTOM; received into a relative struct. */
    disp[0] = base;
    MPI_Get_address(&s.d[0], &disp[1]);
    disp[2] = ac;
    MPI_Type_create_struct(3, bl, disp, ty, &abs_t);
    MPI_Type_commit(&abs_t);
    for (int i = 0; i < 3; i++)
        disp[i] = MPI_Aint_diff(disp[i], base);
    MPI_Type_create_struct(3, bl, disp, ty, &rel_t);
    MPI_Type_commit(&rel_t);
    memset(&r, 0, sizeof r);
    MPI_Sendrecv(MPI_BOTTOM, 1, abs_t, peer, 1, &r, 1, rel_t, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(r.i == 7 + peer && r.d[1] == 2.5 * peer && r.d[2] == -3 && r.c == 'a' + peer,
          "a struct of absolute addresses from MPI_BOTTOM");
    MPI_Type_free(&abs_t);
    MPI_Type_free(&rel_t);
}

static void mpi1_names(void)
{
    MPI_Datatype hv, hi, st, rs;
    int ni, na, nd, comb, bl[2] = {1, 2};
    MPI_Aint d[2] = {0, 16}, ext = -1, lb = -1, ub = -1;
    MPI_Datatype ty[2] = {MPI_INT, MPI_DOUBLE};

    CHECK(MPI_Type_hvector(2, 1, 16, MPI_INT, &hv) == MPI_SUCCESS, "MPI_Type_hvector");
    MPI_Type_get_envelope(hv, &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_HVECTOR && ni == 2 && na == 1, "MPI_Type_hvector builds an hvector");
    CHECK(MPI_Type_hindexed(2, bl, d, MPI_INT, &hi) == MPI_SUCCESS, "MPI_Type_hindexed");
    MPI_Type_get_envelope(hi, &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_HINDEXED && ni == 3 && na == 2, "MPI_Type_hindexed builds an hindexed type");
    CHECK(MPI_Type_struct(2, bl, d, ty, &st) == MPI_SUCCESS, "MPI_Type_struct");
    MPI_Type_get_envelope(st, &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_STRUCT && nd == 2, "MPI_Type_struct builds a struct");
    CHECK(MPI_Type_extent(st, &ext) == MPI_SUCCESS && ext == 32, "MPI_Type_extent: %ld", (long)ext);
    MPI_Type_create_resized(MPI_INT, -4, 20, &rs);
    CHECK(MPI_Type_lb(rs, &lb) == MPI_SUCCESS && MPI_Type_ub(rs, &ub) == MPI_SUCCESS && lb == -4 && ub == 16,
          "MPI_Type_lb/ub of a resized int: %ld, %ld", (long)lb, (long)ub);
    CHECK_ERR(MPI_Type_hvector(-1, 1, 16, MPI_INT, &hv), MPI_ERR_COUNT, "count");
    CHECK_ERR(MPI_Type_extent(MPI_DATATYPE_NULL, &ext), MPI_ERR_TYPE, "datatype");
    MPI_Type_free(&hv);
    MPI_Type_free(&hi);
    MPI_Type_free(&st);
    MPI_Type_free(&rs);
}

static void memory(void)
{
    char *p = NULL, *q = NULL, *z = NULL;
    MPI_Info hint;
    CHECK(MPI_Alloc_mem(1000, MPI_INFO_NULL, &p) == MPI_SUCCESS && p != NULL && (uintptr_t)p % 16 == 0,
          "MPI_Alloc_mem(1000): %p", (void *)p);
    ON_MADMPI(CHECK((uintptr_t)p % 64 == 0, "aligned to a cache line"));
    memset(p, rank, 1000);
    MPI_Info_create(&hint);
    MPI_Info_set(hint, "mpi_minimum_memory_alignment", "4096");
    CHECK(MPI_Alloc_mem(10, hint, &q) == MPI_SUCCESS && q != NULL, "MPI_Alloc_mem with an alignment hint");
    ON_MADMPI(CHECK((uintptr_t)q % 4096 == 0, "the alignment hint is honoured"));
    MPI_Info_free(&hint);
    CHECK(MPI_Alloc_mem(0, MPI_INFO_NULL, &z) == MPI_SUCCESS, "MPI_Alloc_mem(0)");
    /* Data in MPI memory travels like any other. */
    MPI_Sendrecv(p + 990, 10, MPI_CHAR, peer, 2, q, 10, MPI_CHAR, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(q[0] == peer && q[9] == peer, "MPI memory sends and receives");
    CHECK_ERR(MPI_Alloc_mem(-1, MPI_INFO_NULL, &p), MPI_ERR_ARG, "size");
    ON_MADMPI({
        int x;
        CHECK_ERR(MPI_Alloc_mem((MPI_Aint)1 << 62, MPI_INFO_NULL, &q), MPI_ERR_NO_MEM, "memory");
        CHECK_ERR(MPI_Free_mem(&x), MPI_ERR_ARG, "MPI_Alloc_mem");
        CHECK_ERR(MPI_Free_mem(p + 1), MPI_ERR_ARG, "MPI_Alloc_mem");
        CHECK_ERR(MPI_Alloc_mem(8, MPI_INFO_ENV + 12345, &q), MPI_ERR_INFO, "info");
    });
    CHECK(MPI_Free_mem(p) == MPI_SUCCESS && MPI_Free_mem(q) == MPI_SUCCESS && MPI_Free_mem(z) == MPI_SUCCESS,
          "MPI_Free_mem");
    ON_MADMPI(CHECK_ERR(MPI_Free_mem(p), MPI_ERR_ARG, "already freed"));
    CHECK(MPI_Free_mem(NULL) == MPI_SUCCESS, "MPI_Free_mem(NULL) frees nothing");
}

/* A 4x6 int array, rows block-distributed over 1 process and columns cyclic in blocks of 2 over
 * 2: rank 0 owns columns 0, 1, 4, 5, rank 1 columns 2, 3. */
static void darrays(void)
{
    int g[4][6], other[4][6], packed[24], pos = 0, size = -1;
    int gs[2] = {4, 6}, dist[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC}, dargs[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2},
        ps[2] = {1, 2};
    MPI_Count gs_c[2] = {4, 6}, ni, na, nl, nd;
    MPI_Aint lb, ext;
    MPI_Datatype mine, theirs, mine_c, col;
    int i, j, k, ok, comb;

    for (i = 0; i < 4; i++)
        for (j = 0; j < 6; j++)
            g[i][j] = 100 * rank + 10 * i + j;
    CHECK(MPI_Type_create_darray(2, rank, 2, gs, dist, dargs, ps, MPI_ORDER_C, MPI_INT, &mine) == MPI_SUCCESS,
          "MPI_Type_create_darray");
    MPI_Type_create_darray(2, peer, 2, gs, dist, dargs, ps, MPI_ORDER_C, MPI_INT, &theirs);
    MPI_Type_commit(&mine);
    MPI_Type_commit(&theirs);
    MPI_Type_size(mine, &size);
    MPI_Type_get_extent(mine, &lb, &ext);
    CHECK(size == (rank == 0 ? 64 : 32) && lb == 0 && ext == 96, "darray size %d, extent %ld", size, (long)ext);
    /* Packed in array order: the owned columns of each row. */
    MPI_Pack(g, 1, mine, packed, sizeof packed, &pos, MPI_COMM_WORLD);
    ok = pos == size;
    for (i = 0, k = 0; i < 4; i++)
        for (j = 0; j < 6; j++)
            if ((j / 2) % 2 == rank)
                ok &= packed[k++] == g[i][j];
    CHECK(ok, "a darray packs the owned elements in array order");
    /* Each rank sends its part; the peer's part arrives in place. */
    memset(other, 0xff, sizeof other);
    MPI_Sendrecv(g, 1, mine, peer, 3, other, 1, theirs, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    ok = 1;
    for (i = 0; i < 4; i++)
        for (j = 0; j < 6; j++)
            ok &= (j / 2) % 2 == peer ? other[i][j] == 100 * peer + 10 * i + j : other[i][j] == -1;
    CHECK(ok, "the peer's darray part lands where it belongs, nothing else is written");
    /* A 1x6 Fortran-order column distribution: same elements as a C-order one of 6x1. */
    {
        int g1[1] = {6}, d1[1] = {MPI_DISTRIBUTE_BLOCK}, a1[1] = {MPI_DISTRIBUTE_DFLT_DARG}, p1[1] = {2};
        MPI_Type_create_darray(2, rank, 1, g1, d1, a1, p1, MPI_ORDER_FORTRAN, MPI_INT, &col);
        MPI_Type_commit(&col);
        MPI_Aint tlb, text;
        MPI_Type_get_true_extent(col, &tlb, &text);
        CHECK(tlb == 12 * rank && text == 12, "a block of 3 of 6 ints: true lb %ld", (long)tlb);
        MPI_Type_free(&col);
    }
    /* The large-count form gives the same type, with large counts. */
    CHECK(MPI_Type_create_darray_c(2, rank, 2, gs_c, dist, dargs, ps, MPI_ORDER_C, MPI_INT, &mine_c) == MPI_SUCCESS,
          "MPI_Type_create_darray_c");
    MPI_Type_size(mine_c, &size);
    CHECK(size == (rank == 0 ? 64 : 32), "MPI_Type_create_darray_c: size %d", size);
    CHECK(MPI_Type_get_envelope_c(mine_c, &ni, &na, &nl, &nd, &comb) == MPI_SUCCESS && ni == 10 && na == 0 &&
              nl == 2 && nd == 1 && comb == MPI_COMBINER_DARRAY,
          "darray_c envelope: %lld integers, %lld large counts", (long long)ni, (long long)nl);
    {
        int ints[16];
        MPI_Aint addrs[1];
        MPI_Count large[2];
        MPI_Datatype types[1];
        MPI_Type_get_contents_c(mine_c, 16, 1, 2, 1, ints, addrs, large, types);
        CHECK(ints[0] == 2 && ints[1] == rank && ints[3] == MPI_DISTRIBUTE_BLOCK && ints[6] == 2 &&
                  ints[9] == MPI_ORDER_C && large[0] == 4 && large[1] == 6 && types[0] == MPI_INT,
              "darray_c contents");
    }
    CHECK_ERR(MPI_Type_get_envelope(mine_c, &i, &j, &k, &comb), MPI_ERR_OTHER, "large");
    /* MPICH 4.0.2 builds a type for a grid that does not have `size` processes (Open MPI and
     * MadMPI refuse it). */
    ON_MADMPI(CHECK_ERR(MPI_Type_create_darray(3, rank, 2, gs, dist, dargs, ps, MPI_ORDER_C, MPI_INT, &col),
                        MPI_ERR_ARG, "grid"));
    {
        int unknown[2] = {MPI_DISTRIBUTE_BLOCK, 7}, zero[2] = {0, 6};
        /* MPICH 4.0.2 crashes on an unknown distribution (a segmentation fault). */
        ON_MADMPI(CHECK_ERR(MPI_Type_create_darray(2, rank, 2, gs, unknown, dargs, ps, MPI_ORDER_C, MPI_INT, &col),
                            MPI_ERR_ARG, "distribution"));
        /* MPICH 4.0.2 accepts an empty global dimension (Open MPI and MadMPI refuse it). */
        ON_MADMPI(CHECK_ERR(MPI_Type_create_darray(2, rank, 2, zero, dist, dargs, ps, MPI_ORDER_C, MPI_INT, &col),
                            MPI_ERR_ARG, "gsize"));
    }
    MPI_Type_free(&mine);
    MPI_Type_free(&theirs);
    MPI_Type_free(&mine_c);
}

static void fortran_kinds(void)
{
    MPI_Datatype t, t2;
    int size = -1, ni, na, nd, comb, ints[2] = {0, 0}, v = 40 + rank, w = -1;
    MPI_Aint addrs[1];
    MPI_Datatype types[1];

    CHECK(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 4, &t) == MPI_SUCCESS && MPI_Type_size(t, &size) == MPI_SUCCESS &&
              size == 4,
          "MPI_Type_match_size(INTEGER, 4)");
    CHECK(t == MPI_INTEGER4, "an integer of 4 bytes is MPI_INTEGER4");
    CHECK(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &t) == MPI_SUCCESS && MPI_Type_size(t, &size) == MPI_SUCCESS &&
              size == 8,
          "MPI_Type_match_size(REAL, 8)");
    CHECK(t == MPI_REAL8, "a real of 8 bytes is MPI_REAL8");
    CHECK(MPI_Type_match_size(MPI_TYPECLASS_COMPLEX, 16, &t) == MPI_SUCCESS &&
              MPI_Type_size(t, &size) == MPI_SUCCESS && size == 16,
          "MPI_Type_match_size(COMPLEX, 16)");
    CHECK(t == MPI_COMPLEX16, "a complex of 16 bytes is MPI_COMPLEX16");
    CHECK_ERR(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 3, &t), MPI_ERR_ARG, "3 bytes");
    CHECK_ERR(MPI_Type_match_size(99, 4, &t), MPI_ERR_ARG, "class");

    CHECK(MPI_Type_create_f90_integer(5, &t) == MPI_SUCCESS && MPI_Type_size(t, &size) == MPI_SUCCESS && size == 4,
          "MPI_Type_create_f90_integer(5): 4 bytes");
    CHECK(MPI_Type_create_f90_integer(5, &t2) == MPI_SUCCESS && t2 == t, "the same range gives the same handle");
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    MPI_Type_get_contents(t, 2, 1, 1, ints, addrs, types);
    CHECK(ni == 1 && na == 0 && nd == 0 && comb == MPI_COMBINER_F90_INTEGER && ints[0] == 5,
          "f90 integer envelope and contents");
    MPI_Sendrecv(&v, 1, t, peer, 4, &w, 1, t, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(w == 40 + peer, "an f90 integer travels");
    CHECK(MPI_Type_create_f90_integer(18, &t) == MPI_SUCCESS && MPI_Type_size(t, &size) == MPI_SUCCESS && size == 8,
          "MPI_Type_create_f90_integer(18): 8 bytes");
    CHECK_ERR(MPI_Type_create_f90_integer(19, &t), MPI_ERR_OTHER, "range");
    CHECK(MPI_Type_create_f90_real(7, 37, &t) == MPI_SUCCESS && MPI_Type_size(t, &size) == MPI_SUCCESS && size == 8,
          "MPI_Type_create_f90_real(7, 37): 8 bytes");
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    MPI_Type_get_contents(t, 2, 1, 1, ints, addrs, types);
    CHECK(ni == 2 && comb == MPI_COMBINER_F90_REAL && ints[0] == 7 && ints[1] == 37, "f90 real contents");
    CHECK(MPI_Type_create_f90_complex(6, MPI_UNDEFINED, &t) == MPI_SUCCESS &&
              MPI_Type_size(t, &size) == MPI_SUCCESS && size == 8,
          "MPI_Type_create_f90_complex(6, MPI_UNDEFINED): 8 bytes");
    {
        double x = 1.5 + rank, sum = 0;
        MPI_Type_create_f90_real(15, 300, &t);
        CHECK(MPI_Allreduce(&x, &sum, 1, t, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS && sum == 4.0,
              "MPI_SUM on an f90 real: %g", sum);
    }
    CHECK_ERR(MPI_Type_create_f90_real(16, 307, &t), MPI_ERR_OTHER, "precision");
    /* MPICH 4.0.2 frees them, then aborts on the stale handle. */
    ON_MADMPI({
        MPI_Type_create_f90_real(6, 37, &t);
        CHECK_ERR(MPI_Type_free(&t), MPI_ERR_TYPE, "predefined");
    });
}

static int copies, deletes, last_deleted;

static int copy_plus_one(MPI_Datatype old, int kv, void *extra, void *in, void *out, int *flag)
{
    (void)old, (void)kv;
    copies++;
    *(intptr_t *)out = (intptr_t)in + (intptr_t)extra;
    *flag = 1;
    return MPI_SUCCESS;
}

static int count_delete(MPI_Datatype t, int kv, void *val, void *extra)
{
    (void)t, (void)kv, (void)extra;
    deletes++;
    last_deleted = (int)(intptr_t)val;
    return MPI_SUCCESS;
}

static int refuse_delete(MPI_Datatype t, int kv, void *val, void *extra)
{
    (void)t, (void)kv, (void)val, (void)extra;
    return MPI_ERR_OTHER;
}

static void attributes(void)
{
    int plus, dup_kv, null_kv, stubborn, flag = -1, saved;
    void *val = NULL;
    MPI_Datatype t, d;

    MPI_Type_contiguous(3, MPI_INT, &t);
    CHECK(MPI_Type_create_keyval(copy_plus_one, count_delete, &plus, (void *)(intptr_t)1) == MPI_SUCCESS &&
              MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &dup_kv, NULL) == MPI_SUCCESS &&
              MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, count_delete, &null_kv, NULL) == MPI_SUCCESS,
          "MPI_Type_create_keyval");
    CHECK(MPI_Type_get_attr(t, plus, &val, &flag) == MPI_SUCCESS && flag == 0, "no attribute yet");
    CHECK(MPI_Type_set_attr(t, plus, (void *)(intptr_t)10) == MPI_SUCCESS &&
              MPI_Type_set_attr(t, dup_kv, (void *)(intptr_t)20) == MPI_SUCCESS &&
              MPI_Type_set_attr(t, null_kv, (void *)(intptr_t)30) == MPI_SUCCESS,
          "MPI_Type_set_attr");
    CHECK(MPI_Type_get_attr(t, plus, &val, &flag) == MPI_SUCCESS && flag == 1 && (intptr_t)val == 10,
          "MPI_Type_get_attr");
    /* Replacing a value deletes the old one. */
    MPI_Type_set_attr(t, plus, (void *)(intptr_t)11);
    CHECK(deletes == 1 && last_deleted == 10, "a replaced value goes to the delete callback");

    CHECK(MPI_Type_dup(t, &d) == MPI_SUCCESS && copies == 1, "MPI_Type_dup calls the copy callback");
    MPI_Type_get_attr(d, plus, &val, &flag);
    CHECK(flag && (intptr_t)val == 12, "the copy callback's value (11 + extra_state 1): %ld", (long)(intptr_t)val);
    MPI_Type_get_attr(d, dup_kv, &val, &flag);
    CHECK(flag && (intptr_t)val == 20, "MPI_TYPE_DUP_FN copies the value");
    MPI_Type_get_attr(d, null_kv, &val, &flag);
    CHECK(!flag, "MPI_TYPE_NULL_COPY_FN does not copy");

    CHECK(MPI_Type_delete_attr(t, null_kv) == MPI_SUCCESS && deletes == 2 && last_deleted == 30,
          "MPI_Type_delete_attr calls the delete callback");
    MPI_Type_get_attr(t, null_kv, &val, &flag);
    CHECK(!flag, "a deleted attribute is gone");
    CHECK(MPI_Type_free(&d) == MPI_SUCCESS && deletes == 3 && last_deleted == 12, "MPI_Type_free deletes");
    CHECK(MPI_Type_free(&t) == MPI_SUCCESS && deletes == 4 && last_deleted == 11, "MPI_Type_free deletes");

    /* Predefined types take attributes too. */
    CHECK(MPI_Type_set_attr(MPI_INT, plus, (void *)(intptr_t)5) == MPI_SUCCESS &&
              MPI_Type_get_attr(MPI_INT, plus, &val, &flag) == MPI_SUCCESS && flag && (intptr_t)val == 5 &&
              MPI_Type_delete_attr(MPI_INT, plus) == MPI_SUCCESS && last_deleted == 5,
          "attributes on MPI_INT");

    CHECK(MPI_Type_free_keyval(&dup_kv) == MPI_SUCCESS && dup_kv == MPI_KEYVAL_INVALID, "MPI_Type_free_keyval");
    CHECK_ERR(MPI_Type_set_attr(MPI_DATATYPE_NULL, plus, NULL), MPI_ERR_TYPE, "datatype");
    CHECK_ERR(MPI_Type_get_attr(MPI_INT, MPI_KEYVAL_INVALID, &val, &flag), MPI_ERR_KEYVAL, "key");
    ON_MADMPI({
        int comm_kv;
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &comm_kv, NULL);
        CHECK_ERR(MPI_Type_set_attr(MPI_INT, comm_kv, NULL), MPI_ERR_KEYVAL, "keyval");
        MPI_Comm_free_keyval(&comm_kv);
        /* A failing delete callback keeps the type. */
        MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, refuse_delete, &stubborn, NULL);
        MPI_Type_contiguous(2, MPI_INT, &t);
        saved = t;
        MPI_Type_set_attr(t, stubborn, NULL);
        CHECK(MPI_Type_free(&t) == MPI_ERR_OTHER && t == saved, "a failing delete callback fails MPI_Type_free");
        CHECK(MPI_Type_size(t, &flag) == MPI_SUCCESS && flag == 8, "and the type stays");
        MPI_Type_free_keyval(&stubborn);
    });
    MPI_Type_free_keyval(&plus);
    MPI_Type_free_keyval(&null_kv);
}

static void large_count_queries(void)
{
    MPI_Datatype v, w;
    MPI_Count ni, na, nl, nd, size = -1, lb = -1, ext = -1, tlb = -1, text = -1, large[3];
    int comb, i1, i2, i3, ints[1];
    MPI_Aint addrs[1];
    MPI_Datatype types[1];

    CHECK(MPI_Type_vector_c(3, 2, 4, MPI_INT, &v) == MPI_SUCCESS, "MPI_Type_vector_c");
    CHECK(MPI_Type_size_c(v, &size) == MPI_SUCCESS && size == 24 && MPI_Type_get_extent_c(v, &lb, &ext) == MPI_SUCCESS &&
              ext == 40 && MPI_Type_get_true_extent_c(v, &tlb, &text) == MPI_SUCCESS && text == 40,
          "MPI_Type_size_c, get_extent_c, get_true_extent_c");
    CHECK(MPI_Type_get_envelope_c(v, &ni, &na, &nl, &nd, &comb) == MPI_SUCCESS && ni == 0 && na == 0 && nl == 3 &&
              nd == 1 && comb == MPI_COMBINER_VECTOR,
          "a _c type's counts are large counts");
    CHECK(MPI_Type_get_contents_c(v, 0, 0, 3, 1, ints, addrs, large, types) == MPI_SUCCESS && large[0] == 3 &&
              large[1] == 2 && large[2] == 4 && types[0] == MPI_INT,
          "MPI_Type_get_contents_c");
    CHECK_ERR(MPI_Type_get_envelope(v, &i1, &i2, &i3, &comb), MPI_ERR_OTHER, "large");
    CHECK_ERR(MPI_Type_get_contents(v, 3, 0, 1, ints, addrs, types), MPI_ERR_OTHER, "large");
    MPI_Type_vector(3, 2, 4, MPI_INT, &w);
    CHECK(MPI_Type_get_envelope_c(w, &ni, &na, &nl, &nd, &comb) == MPI_SUCCESS && ni == 3 && nl == 0,
          "an int type's envelope through the _c form");
    CHECK_ERR(MPI_Type_vector_c(-1, 2, 4, MPI_INT, &w), MPI_ERR_COUNT, "count");
    MPI_Type_free(&v);
    MPI_Type_free(&w);
}

int main(int argc, char **argv)
{
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    CHECK(size == 2, "2 processes");
    peer = 1 - rank;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    addresses();
    mpi1_names();
    memory();
    darrays();
    fortran_kinds();
    attributes();
    large_count_queries();

    CHECK(MPI_Finalize() == MPI_SUCCESS, "MPI_Finalize");
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
