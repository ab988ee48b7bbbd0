/* Datatype queries: sizes and extents (int, MPI_Aint and MPI_Count versions), the envelope and
 * contents of every combiner (returned datatypes are new references: predefined ones are their
 * handle, derived ones are freed by the program and stay usable), names (predefined, set, cut
 * at MPI_MAX_OBJECT_NAME), and the error paths. Values checked on MPICH 4.0.2 (see types.h).
 * Run with 2 processes. */
#include "types.h"

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void sizes_and_extents(void)
{
    MPI_Datatype hvneg, rs;
    MPI_Count size = -1, lb = -1, extent = -1;
    MPI_Aint alb = -1, aextent = -1;
    int isize = -1;

    MPI_Type_create_hvector(2, 1, -8, MPI_INT, &hvneg);
    MPI_Type_create_resized(hvneg, -16, 40, &rs);
    CHECK(MPI_Type_size_x(hvneg, &size) == MPI_SUCCESS && size == 8, "MPI_Type_size_x: %lld", (long long)size);
    CHECK(MPI_Type_get_extent_x(hvneg, &lb, &extent) == MPI_SUCCESS && lb == -8 && extent == 12,
          "MPI_Type_get_extent_x: %lld %lld", (long long)lb, (long long)extent);
    CHECK(MPI_Type_get_true_extent_x(rs, &lb, &extent) == MPI_SUCCESS && lb == -8 && extent == 12,
          "MPI_Type_get_true_extent_x of the resized type: %lld %lld", (long long)lb, (long long)extent);
    CHECK(MPI_Type_get_extent(rs, &alb, &aextent) == MPI_SUCCESS && alb == -16 && aextent == 40,
          "MPI_Type_get_extent of the resized type: %ld %ld", (long)alb, (long)aextent);
    CHECK(MPI_Type_get_true_extent(rs, &alb, &aextent) == MPI_SUCCESS && alb == -8 && aextent == 12,
          "MPI_Type_get_true_extent of the resized type: %ld %ld", (long)alb, (long)aextent);
    CHECK(MPI_Type_get_extent_x(MPI_LONG_DOUBLE_INT, &lb, &extent) == MPI_SUCCESS && lb == 0 && extent == 32 &&
              MPI_Type_size_x(MPI_LONG_DOUBLE_INT, &size) == MPI_SUCCESS && size == 20,
          "MPI_LONG_DOUBLE_INT: size 20, extent 32");
    CHECK(MPI_Type_size(MPI_SHORT_INT, &isize) == MPI_SUCCESS && isize == 6, "MPI_SHORT_INT: size %d", isize);

    CHECK_ERR(MPI_Type_size_x(MPI_DATATYPE_NULL, NULL), MPI_ERR_TYPE, "MPI_Type_size_x");
    CHECK_ERR(MPI_Type_size_x(MPI_INT, NULL), MPI_ERR_ARG, "MPI_Type_size_x");
    CHECK_ERR(MPI_Type_size(MPI_INT, NULL), MPI_ERR_ARG, "MPI_Type_size");
    CHECK_ERR(MPI_Type_get_extent(MPI_DATATYPE_NULL, NULL, NULL), MPI_ERR_TYPE, "MPI_Type_get_extent");
    CHECK_ERR(MPI_Type_get_extent(MPI_INT, NULL, &aextent), MPI_ERR_ARG, "MPI_Type_get_extent");
    CHECK_ERR(MPI_Type_get_extent(MPI_INT, &alb, NULL), MPI_ERR_ARG, "MPI_Type_get_extent");
    CHECK_ERR(MPI_Type_get_extent_x(MPI_INT, NULL, &extent), MPI_ERR_ARG, "MPI_Type_get_extent_x");
    CHECK_ERR(MPI_Type_get_true_extent(MPI_INT, NULL, &aextent), MPI_ERR_ARG, "MPI_Type_get_true_extent");
    CHECK_ERR(MPI_Type_get_true_extent_x(MPI_INT, &lb, NULL), MPI_ERR_ARG, "MPI_Type_get_true_extent_x");
    CHECK_ERR(MPI_Type_get_true_extent_x(MPI_DATATYPE_NULL, &lb, &extent), MPI_ERR_TYPE,
              "MPI_Type_get_true_extent_x");
    CHECK(extent == 32 && aextent == 12 && lb == 0, "failed calls wrote nothing");
    MPI_Type_free(&rs);
    MPI_Type_free(&hvneg);
}

/* Checks the envelope of `t`. */
static void envelope(const char *what, MPI_Datatype t, int ni, int na, int nd, int combiner)
{
    int i = -1, a = -1, d = -1, c = -1;
    CHECK(MPI_Type_get_envelope(t, &i, &a, &d, &c) == MPI_SUCCESS && i == ni && a == na && d == nd && c == combiner,
          "%s: envelope %d integers, %d addresses, %d datatypes, combiner %d", what, i, a, d, c);
}

/* Checks the contents of `t` against the expected arrays. */
static void contents(const char *what, MPI_Datatype t, int ni, const int *ints, int na, const MPI_Aint *addrs,
                     int nd, MPI_Datatype *types)
{
    int gi[64], k;
    MPI_Aint ga[16];
    CHECK(MPI_Type_get_contents(t, 64, 16, nd, gi, ga, types) == MPI_SUCCESS, "%s: MPI_Type_get_contents", what);
    for (k = 0; k < ni; k++)
        CHECK(gi[k] == ints[k], "%s: integer %d is %d", what, k, gi[k]);
    for (k = 0; k < na; k++)
        CHECK(ga[k] == addrs[k], "%s: address %d is %ld", what, k, (long)ga[k]);
}

static void decoding(int rank, int peer)
{
    MPI_Datatype v, dup, contig, hv, ix, hx, ib, hb, st, sa, rs, got[4], all_types[3];
    int bl[2] = {2, 1}, d[2] = {3, 0}, stbl[3] = {1, 1, 2}, sz[2] = {4, 5}, sub[2] = {2, 3}, start[2] = {1, 1};
    MPI_Aint ad[2] = {16, 0}, std_[3] = {0, 8, 40};
    int data[12], back[12], k, n = -1;
    MPI_Aint lb, ext;

    MPI_Type_vector(2, 1, 3, MPI_INT, &v);
    MPI_Type_commit(&v);
    envelope("MPI_INT", MPI_INT, 0, 0, 0, MPI_COMBINER_NAMED);
    envelope("MPI_FLOAT_INT", MPI_FLOAT_INT, 0, 0, 0, MPI_COMBINER_NAMED);
    envelope("vector", v, 3, 0, 1, MPI_COMBINER_VECTOR);
    {
        int ints[] = {2, 1, 3};
        contents("vector", v, 3, ints, 0, NULL, 1, got);
        CHECK(got[0] == MPI_INT, "vector: the old type is MPI_INT's handle");
    }

    MPI_Type_dup(v, &dup);
    envelope("dup", dup, 0, 0, 1, MPI_COMBINER_DUP);
    CHECK(MPI_Type_get_contents(dup, 0, 0, 1, NULL, NULL, got) == MPI_SUCCESS && got[0] != MPI_DATATYPE_NULL,
          "dup: contents with null integer and address arrays (sizes 0)");
    /* The returned type is the committed vector (MPICH returns the same handle, MadMPI a new
     * handle to it): usable, freed by the program, the original stays valid. */
    envelope("dup's old type", got[0], 3, 0, 1, MPI_COMBINER_VECTOR);
    for (k = 0; k < 12; k++)
        data[k] = 10 * rank + k, back[k] = -1;
    CHECK(MPI_Sendrecv(data, 2, got[0], peer, 1, back, 4, MPI_INT, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE) ==
              MPI_SUCCESS,
          "communication through the type returned by get_contents");
    CHECK(back[0] == 10 * peer && back[1] == 10 * peer + 3 && back[2] == 10 * peer + 4 && back[3] == 10 * peer + 7,
          "received %d %d %d %d", back[0], back[1], back[2], back[3]);
    CHECK(MPI_Type_free(&got[0]) == MPI_SUCCESS, "MPI_Type_free of the returned type");
    envelope("the vector after its returned reference was freed", v, 3, 0, 1, MPI_COMBINER_VECTOR);

    MPI_Type_contiguous(3, v, &contig);
    envelope("contiguous", contig, 1, 0, 1, MPI_COMBINER_CONTIGUOUS);
    {
        int ints[] = {3};
        contents("contiguous", contig, 1, ints, 0, NULL, 1, got);
        CHECK(MPI_Type_get_extent(got[0], &lb, &ext) == MPI_SUCCESS && lb == 0 && ext == 16,
              "contiguous: its old type has the vector's extent");
        MPI_Type_free(&got[0]);
    }

    MPI_Type_create_hvector(2, 3, -24, MPI_DOUBLE, &hv);
    envelope("hvector", hv, 2, 1, 1, MPI_COMBINER_HVECTOR);
    {
        int ints[] = {2, 3};
        MPI_Aint addrs[] = {-24};
        contents("hvector", hv, 2, ints, 1, addrs, 1, got);
        CHECK(got[0] == MPI_DOUBLE, "hvector: MPI_DOUBLE");
    }
    MPI_Type_indexed(2, bl, d, MPI_SHORT, &ix);
    envelope("indexed", ix, 5, 0, 1, MPI_COMBINER_INDEXED);
    {
        int ints[] = {2, 2, 1, 3, 0};
        contents("indexed", ix, 5, ints, 0, NULL, 1, got);
        CHECK(got[0] == MPI_SHORT, "indexed: MPI_SHORT");
    }
    MPI_Type_create_hindexed(2, bl, ad, v, &hx);
    envelope("hindexed", hx, 3, 2, 1, MPI_COMBINER_HINDEXED);
    {
        int ints[] = {2, 2, 1};
        contents("hindexed", hx, 3, ints, 2, ad, 1, got);
        envelope("hindexed's old type", got[0], 3, 0, 1, MPI_COMBINER_VECTOR);
        MPI_Type_free(&got[0]);
    }
    MPI_Type_create_indexed_block(2, 4, d, MPI_CHAR, &ib);
    envelope("indexed_block", ib, 4, 0, 1, MPI_COMBINER_INDEXED_BLOCK);
    {
        int ints[] = {2, 4, 3, 0};
        contents("indexed_block", ib, 4, ints, 0, NULL, 1, got);
        CHECK(got[0] == MPI_CHAR, "indexed_block: MPI_CHAR");
    }
    MPI_Type_create_hindexed_block(2, 4, ad, MPI_BYTE, &hb);
    envelope("hindexed_block", hb, 2, 2, 1, MPI_COMBINER_HINDEXED_BLOCK);
    {
        int ints[] = {2, 4};
        contents("hindexed_block", hb, 2, ints, 2, ad, 1, got);
        CHECK(got[0] == MPI_BYTE, "hindexed_block: MPI_BYTE");
    }
    all_types[0] = MPI_INT;
    all_types[1] = v;
    all_types[2] = MPI_2INT;
    MPI_Type_create_struct(3, stbl, std_, all_types, &st);
    envelope("struct", st, 4, 3, 3, MPI_COMBINER_STRUCT);
    {
        int ints[] = {3, 1, 1, 2};
        contents("struct", st, 4, ints, 3, std_, 3, got);
        CHECK(got[0] == MPI_INT && got[2] == MPI_2INT && got[1] != MPI_DATATYPE_NULL,
              "struct: MPI_INT, a derived type, MPI_2INT");
        envelope("struct's derived member", got[1], 3, 0, 1, MPI_COMBINER_VECTOR);
        MPI_Type_free(&got[1]);
    }
    MPI_Type_create_subarray(2, sz, sub, start, MPI_ORDER_FORTRAN, MPI_FLOAT, &sa);
    envelope("subarray", sa, 8, 0, 1, MPI_COMBINER_SUBARRAY);
    {
        int ints[] = {2, 4, 5, 2, 3, 1, 1, MPI_ORDER_FORTRAN};
        contents("subarray", sa, 8, ints, 0, NULL, 1, got);
        CHECK(got[0] == MPI_FLOAT, "subarray: MPI_FLOAT");
    }
    MPI_Type_create_resized(MPI_INT, -4, 16, &rs);
    envelope("resized", rs, 0, 2, 1, MPI_COMBINER_RESIZED);
    {
        MPI_Aint addrs[] = {-4, 16};
        contents("resized", rs, 0, NULL, 2, addrs, 1, got);
        CHECK(got[0] == MPI_INT, "resized: MPI_INT");
    }

    {
        int ints[8];
        MPI_Aint addrs[4];
        CHECK_ERR(MPI_Type_get_contents(MPI_INT, 8, 4, 4, ints, addrs, got), MPI_ERR_TYPE, "MPI_Type_get_contents");
        CHECK_ERR(MPI_Type_get_contents(MPI_FLOAT_INT, 8, 4, 4, ints, addrs, got), MPI_ERR_TYPE,
                  "MPI_Type_get_contents");
        CHECK_ERR(MPI_Type_get_contents(MPI_DATATYPE_NULL, 8, 4, 4, ints, addrs, got), MPI_ERR_TYPE,
                  "MPI_Type_get_contents");
        CHECK_ERR(MPI_Type_get_contents(v, 2, 4, 4, ints, addrs, got), MPI_ERR_OTHER, "MPI_Type_get_contents");
        CHECK_ERR(MPI_Type_get_contents(v, 3, 4, 0, ints, addrs, got), MPI_ERR_OTHER, "MPI_Type_get_contents");
        CHECK_ERR(MPI_Type_get_contents(v, -1, 4, 4, ints, addrs, got), MPI_ERR_ARG, "MPI_Type_get_contents");
        CHECK_ERR(MPI_Type_get_contents(v, 3, -1, 1, ints, addrs, got), MPI_ERR_ARG, "MPI_Type_get_contents");
        CHECK_ERR(MPI_Type_get_contents(v, 3, 0, 1, NULL, addrs, got), MPI_ERR_ARG, "MPI_Type_get_contents");
        CHECK_ERR(MPI_Type_get_contents(v, 2, 0, 1, NULL, addrs, got), MPI_ERR_ARG, "MPI_Type_get_contents");
        CHECK_ERR(MPI_Type_get_contents(v, 3, 0, 1, ints, addrs, NULL), MPI_ERR_ARG, "MPI_Type_get_contents");
        CHECK(MPI_Type_get_contents(v, 3, 0, 1, ints, NULL, got) == MPI_SUCCESS,
              "get_contents with a null address array of size 0");
    }
    {
        int a, b, c;
        CHECK_ERR(MPI_Type_get_envelope(MPI_DATATYPE_NULL, &a, &b, &c, &n), MPI_ERR_TYPE, "MPI_Type_get_envelope");
        CHECK_ERR(MPI_Type_get_envelope(MPI_INT, NULL, &b, &c, &n), MPI_ERR_ARG, "MPI_Type_get_envelope");
        CHECK_ERR(MPI_Type_get_envelope(MPI_INT, &a, NULL, &c, &n), MPI_ERR_ARG, "MPI_Type_get_envelope");
        CHECK_ERR(MPI_Type_get_envelope(MPI_INT, &a, &b, NULL, &n), MPI_ERR_ARG, "MPI_Type_get_envelope");
        CHECK_ERR(MPI_Type_get_envelope(MPI_INT, &a, &b, &c, NULL), MPI_ERR_ARG, "MPI_Type_get_envelope");
    }
    {
        MPI_Datatype all[] = {v, dup, contig, hv, ix, hx, ib, hb, st, sa, rs};
        for (k = 0; k < N(all); k++)
            CHECK(MPI_Type_free(&all[k]) == MPI_SUCCESS, "MPI_Type_free of type %d", k);
    }
}

static void names(void)
{
    MPI_Datatype all[] = {MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_BYTE, MPI_WCHAR, MPI_SHORT,
                          MPI_UNSIGNED_SHORT, MPI_INT, MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG_INT,
                          MPI_LONG_LONG, MPI_UNSIGNED_LONG_LONG, MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_INT8_T,
                          MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T,
                          MPI_UINT64_T, MPI_C_BOOL, MPI_C_FLOAT_COMPLEX, MPI_C_COMPLEX, MPI_C_DOUBLE_COMPLEX,
                          MPI_C_LONG_DOUBLE_COMPLEX, MPI_AINT, MPI_OFFSET, MPI_COUNT, MPI_PACKED, MPI_FLOAT_INT,
                          MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT, MPI_SHORT_INT, MPI_LONG_DOUBLE_INT};
    const char *expected[] = {"MPI_CHAR", "MPI_SIGNED_CHAR", "MPI_UNSIGNED_CHAR", "MPI_BYTE", "MPI_WCHAR",
                              "MPI_SHORT", "MPI_UNSIGNED_SHORT", "MPI_INT", "MPI_UNSIGNED", "MPI_LONG",
                              "MPI_UNSIGNED_LONG", "MPI_LONG_LONG_INT", "MPI_LONG_LONG_INT", "MPI_UNSIGNED_LONG_LONG",
                              "MPI_FLOAT", "MPI_DOUBLE", "MPI_LONG_DOUBLE", "MPI_INT8_T", "MPI_INT16_T",
                              "MPI_INT32_T", "MPI_INT64_T", "MPI_UINT8_T", "MPI_UINT16_T", "MPI_UINT32_T",
                              "MPI_UINT64_T", "MPI_C_BOOL", "MPI_C_COMPLEX", "MPI_C_COMPLEX", "MPI_C_DOUBLE_COMPLEX",
                              "MPI_C_LONG_DOUBLE_COMPLEX", "MPI_AINT", "MPI_OFFSET", "MPI_COUNT", "MPI_PACKED",
                              "MPI_FLOAT_INT", "MPI_DOUBLE_INT", "MPI_LONG_INT", "MPI_2INT", "MPI_SHORT_INT",
                              "MPI_LONG_DOUBLE_INT"};
    char name[MPI_MAX_OBJECT_NAME], longname[300];
    int k, len = -1;
    MPI_Datatype v, d;

    for (k = 0; k < N(all); k++) {
        CHECK(MPI_Type_get_name(all[k], name, &len) == MPI_SUCCESS && strcmp(name, expected[k]) == 0 &&
                  len == (int)strlen(expected[k]),
              "MPI_Type_get_name of predefined type %d: %s", k, name);
    }
    MPI_Type_vector(2, 1, 3, MPI_INT, &v);
    CHECK(MPI_Type_get_name(v, name, &len) == MPI_SUCCESS && name[0] == 0 && len == 0, "a new type has no name");
    CHECK(MPI_Type_set_name(v, "column") == MPI_SUCCESS && MPI_Type_get_name(v, name, &len) == MPI_SUCCESS &&
              strcmp(name, "column") == 0 && len == 6,
          "MPI_Type_set_name / get_name: %s", name);
    MPI_Type_dup(v, &d);
    CHECK(MPI_Type_get_name(d, name, &len) == MPI_SUCCESS && name[0] == 0 && len == 0, "a dup has no name");
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    CHECK(MPI_Type_set_name(v, longname) == MPI_SUCCESS && MPI_Type_get_name(v, name, &len) == MPI_SUCCESS &&
              len == MPI_MAX_OBJECT_NAME - 1 && (int)strlen(name) == len,
          "a long name is cut to %d characters", len);
    CHECK(MPI_Type_set_name(MPI_INT, "my int") == MPI_SUCCESS && MPI_Type_get_name(MPI_INT, name, &len) == MPI_SUCCESS &&
              strcmp(name, "my int") == 0,
          "a predefined type renamed: %s", name);
    CHECK(MPI_Type_set_name(MPI_INT, "MPI_INT") == MPI_SUCCESS, "and named back");

    CHECK_ERR(MPI_Type_get_name(MPI_DATATYPE_NULL, name, &len), MPI_ERR_TYPE, "MPI_Type_get_name");
    CHECK_ERR(MPI_Type_get_name(MPI_INT, NULL, &len), MPI_ERR_ARG, "MPI_Type_get_name");
    CHECK_ERR(MPI_Type_get_name(MPI_INT, name, NULL), MPI_ERR_ARG, "MPI_Type_get_name");
    CHECK_ERR(MPI_Type_set_name(v, NULL), MPI_ERR_ARG, "MPI_Type_set_name");
    CHECK_ERR(MPI_Type_set_name(MPI_DATATYPE_NULL, NULL), MPI_ERR_TYPE, "MPI_Type_set_name");
    MPI_Type_free(&d);
    MPI_Type_free(&v);
}

int main(int argc, char **argv)
{
    int rank, size;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    CHECK(size == 2, "2 processes");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    sizes_and_extents();
    decoding(rank, 1 - rank);
    names();

    CHECK(MPI_Finalize() == MPI_SUCCESS, "MPI_Finalize");
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
