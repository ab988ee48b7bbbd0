/* The large-count (_c) datatype calls: every _c constructor against its int twin (same size,
 * bounds and packed bytes, counts reported as large counts), then 2^31 + 7 chars: a contiguous
 * type of that many (MPI_Type_contiguous_c), MPI_Type_size_c/MPI_Pack_size_c (the int forms say
 * MPI_UNDEFINED), MPI_Pack_c/MPI_Unpack_c of 2^31 + 7 elements, and one message of that size
 * whose MPI_Get_count_c/MPI_Get_elements_c are exact while the int forms say MPI_UNDEFINED.
 * Needs about 4 GiB on rank 0 and 2 GiB on rank 1. Run with 2 processes; also passes on MPICH's
 * library. */
#include "types.h"
#include <stdint.h>

static int rank;

/* `a` (int form) and `b` (_c form) have the same attributes and pack `buf` the same. */
static void same_type(const char *what, MPI_Datatype a, MPI_Datatype b, const void *buf)
{
    MPI_Count sa, sb, la, lb, ea, eb, ta, tb, xa, xb, ni, na, nl, nd;
    unsigned char pa[1024], pb[1024];
    int qa = 0, qb = 0, comb;
    MPI_Type_commit(&a);
    MPI_Type_commit(&b);
    MPI_Type_size_c(a, &sa);
    MPI_Type_size_c(b, &sb);
    MPI_Type_get_extent_c(a, &la, &ea);
    MPI_Type_get_extent_c(b, &lb, &eb);
    MPI_Type_get_true_extent_c(a, &ta, &xa);
    MPI_Type_get_true_extent_c(b, &tb, &xb);
    MPI_Pack(buf, 1, a, pa, sizeof pa, &qa, MPI_COMM_WORLD);
    MPI_Pack(buf, 1, b, pb, sizeof pb, &qb, MPI_COMM_WORLD);
    MPI_Type_get_envelope_c(b, &ni, &na, &nl, &nd, &comb);
    CHECK(sa == sb && la == lb && ea == eb && ta == tb && xa == xb && qa == qb && memcmp(pa, pb, qa) == 0 &&
              na == 0 && nl > 0,
          "%s: size %lld, extent %lld, %lld large counts", what, (long long)sb, (long long)eb, (long long)nl);
    MPI_Type_free(&a);
    MPI_Type_free(&b);
}

static void every_constructor(void)
{
    int buf[256];
    int bl[3] = {2, 1, 3}, d[3] = {0, 5, 9}, sz[2] = {6, 8}, sub[2] = {2, 3}, st[2] = {1, 4};
    MPI_Aint ad[3] = {0, 20, 36};
    MPI_Count cbl[3] = {2, 1, 3}, cd[3] = {0, 5, 9}, cad[3] = {0, 20, 36}, csz[2] = {6, 8}, csub[2] = {2, 3},
              cst[2] = {1, 4};
    MPI_Datatype ty[3] = {MPI_INT, MPI_SHORT, MPI_DOUBLE}, a, b;
    for (int i = 0; i < 256; i++)
        buf[i] = i * 7 + rank;

    MPI_Type_contiguous(5, MPI_INT, &a);
    MPI_Type_contiguous_c(5, MPI_INT, &b);
    same_type("MPI_Type_contiguous_c", a, b, buf);
    MPI_Type_vector(3, 2, 4, MPI_INT, &a);
    MPI_Type_vector_c(3, 2, 4, MPI_INT, &b);
    same_type("MPI_Type_vector_c", a, b, buf);
    MPI_Type_create_hvector(3, 2, 20, MPI_INT, &a);
    MPI_Type_create_hvector_c(3, 2, 20, MPI_INT, &b);
    same_type("MPI_Type_create_hvector_c", a, b, buf);
    MPI_Type_indexed(3, bl, d, MPI_INT, &a);
    MPI_Type_indexed_c(3, cbl, cd, MPI_INT, &b);
    same_type("MPI_Type_indexed_c", a, b, buf);
    MPI_Type_create_hindexed(3, bl, ad, MPI_INT, &a);
    MPI_Type_create_hindexed_c(3, cbl, cad, MPI_INT, &b);
    same_type("MPI_Type_create_hindexed_c", a, b, buf);
    MPI_Type_create_indexed_block(3, 2, d, MPI_INT, &a);
    MPI_Type_create_indexed_block_c(3, 2, cd, MPI_INT, &b);
    same_type("MPI_Type_create_indexed_block_c", a, b, buf);
    MPI_Type_create_hindexed_block(3, 2, ad, MPI_INT, &a);
    MPI_Type_create_hindexed_block_c(3, 2, cad, MPI_INT, &b);
    same_type("MPI_Type_create_hindexed_block_c", a, b, buf);
    MPI_Type_create_struct(3, bl, ad, ty, &a);
    MPI_Type_create_struct_c(3, cbl, cad, ty, &b);
    same_type("MPI_Type_create_struct_c", a, b, buf);
    MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &a);
    MPI_Type_create_subarray_c(2, csz, csub, cst, MPI_ORDER_C, MPI_INT, &b);
    same_type("MPI_Type_create_subarray_c", a, b, buf);
    MPI_Type_create_resized(MPI_INT, -4, 12, &a);
    MPI_Type_create_resized_c(MPI_INT, -4, 12, &b);
    same_type("MPI_Type_create_resized_c", a, b, buf + 1);
    {
        int gs[1] = {40}, dist[1] = {MPI_DISTRIBUTE_CYCLIC}, darg[1] = {3}, ps[1] = {2};
        MPI_Count cgs[1] = {40};
        MPI_Type_create_darray(2, rank, 1, gs, dist, darg, ps, MPI_ORDER_C, MPI_INT, &a);
        MPI_Type_create_darray_c(2, rank, 1, cgs, dist, darg, ps, MPI_ORDER_C, MPI_INT, &b);
        same_type("MPI_Type_create_darray_c", a, b, buf);
    }
    CHECK_ERR(MPI_Type_contiguous_c(-1, MPI_INT, &a), MPI_ERR_COUNT, "count");
    CHECK_ERR(MPI_Type_create_struct_c(1, cbl, cad, NULL, &a), MPI_ERR_ARG, "array_of_types");
}

#define BIG (((MPI_Count)1 << 31) + 7)

/* Positions checked in the big buffers: the first byte, both sides of 2^31, the last. */
static const MPI_Count probes[] = {0, ((MPI_Count)1 << 31) - 1, (MPI_Count)1 << 31, BIG - 1};

static void mark(unsigned char *p)
{
    for (int i = 0; i < 4; i++)
        p[probes[i]] = (unsigned char)(0x5a + i);
}

static int marked(const unsigned char *p)
{
    int ok = 1;
    for (int i = 0; i < 4; i++)
        ok &= p[probes[i]] == (unsigned char)(0x5a + i);
    return ok && p[12345] == 0;
}

static void beyond_int(void)
{
    MPI_Datatype big;
    MPI_Count size = -1, lb = -1, ext = -1, psize = -1, pos = 0;
    int isize = 0;
    MPI_Status st;
    MPI_Count n = -1;
    int in = 0;
    unsigned char *buf, *packed;

    CHECK(MPI_Type_contiguous_c(BIG, MPI_CHAR, &big) == MPI_SUCCESS && MPI_Type_commit(&big) == MPI_SUCCESS,
          "MPI_Type_contiguous_c(2^31 + 7, MPI_CHAR)");
    CHECK(MPI_Type_size_c(big, &size) == MPI_SUCCESS && size == BIG && MPI_Type_get_extent_c(big, &lb, &ext) == 0 &&
              ext == BIG,
          "MPI_Type_size_c and MPI_Type_get_extent_c: %lld", (long long)size);
    CHECK(MPI_Type_size(big, &isize) == MPI_SUCCESS && isize == MPI_UNDEFINED, "MPI_Type_size: MPI_UNDEFINED");
    CHECK(MPI_Pack_size_c(1, big, MPI_COMM_WORLD, &psize) == MPI_SUCCESS && psize >= BIG,
          "MPI_Pack_size_c: %lld", (long long)psize);
    CHECK(MPI_Pack_size(1, big, MPI_COMM_WORLD, &isize) == MPI_SUCCESS && isize == MPI_UNDEFINED,
          "MPI_Pack_size: MPI_UNDEFINED");

    buf = calloc((size_t)BIG, 1); /* untouched pages cost nothing */
    CHECK(buf != NULL, "2^31 + 7 bytes");
    if (rank == 0) {
        mark(buf);
        packed = calloc((size_t)BIG + 8, 1);
        CHECK(packed != NULL, "2^31 + 15 bytes");
        CHECK(MPI_Pack_c(buf, BIG, MPI_CHAR, packed, BIG + 8, &pos, MPI_COMM_WORLD) == MPI_SUCCESS && pos == BIG &&
                  marked(packed),
              "MPI_Pack_c of 2^31 + 7 chars: position %lld", (long long)pos);
        memset(buf, 0, 16);
        for (int i = 1; i < 4; i++)
            buf[probes[i]] = 0;
        pos = 0;
        CHECK(MPI_Unpack_c(packed, BIG + 8, &pos, buf, 1, big, MPI_COMM_WORLD) == MPI_SUCCESS && pos == BIG &&
                  marked(buf),
              "MPI_Unpack_c of one element of 2^31 + 7 chars: position %lld", (long long)pos);
        free(packed);
        CHECK(MPI_Send(buf, 1, big, 1, 6, MPI_COMM_WORLD) == MPI_SUCCESS, "a message of 2^31 + 7 bytes sent");
    } else {
        CHECK(MPI_Recv(buf, 1, big, 0, 6, MPI_COMM_WORLD, &st) == MPI_SUCCESS && marked(buf),
              "a message of 2^31 + 7 bytes received");
        CHECK(MPI_Get_count_c(&st, MPI_CHAR, &n) == MPI_SUCCESS && n == BIG, "MPI_Get_count_c: %lld", (long long)n);
        CHECK(MPI_Get_count(&st, MPI_CHAR, &in) == MPI_SUCCESS && in == MPI_UNDEFINED, "MPI_Get_count: MPI_UNDEFINED");
        CHECK(MPI_Get_count(&st, big, &in) == MPI_SUCCESS && in == 1, "MPI_Get_count of the big type: 1");
        CHECK(MPI_Get_elements_c(&st, big, &n) == MPI_SUCCESS && n == BIG, "MPI_Get_elements_c: %lld",
              (long long)n);
        CHECK(MPI_Get_elements(&st, big, &in) == MPI_SUCCESS && in == MPI_UNDEFINED,
              "MPI_Get_elements: MPI_UNDEFINED");
    }
    free(buf);
    MPI_Type_free(&big);
}

int main(int argc, char **argv)
{
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    CHECK(size == 2, "2 processes");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    every_constructor();
    beyond_int();

    CHECK(MPI_Finalize() == MPI_SUCCESS, "MPI_Finalize");
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
