/* Every datatype constructor: bounds and size of the type, then real communication between the
 * 2 ranks (sent through the type and received contiguously with a type of the same signature,
 * and the other way round, checking every byte and that nothing else is written); a type freed
 * while another type or a pending operation uses it; the error paths in MPICH's order. The
 * expected values were checked on MPICH 4.0.2 (see types.h). Run with 2 processes. */
#include "types.h"

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void constructors(void)
{
    MPI_Datatype hv, hvneg, ix, hx, ib, hb, st, stflat, stflat_r, rs, v, rv, sa, sf, s3, hvdup, nest, empty;
    int bl[3] = {2, 1, 3}, d[3] = {4, 0, 8}, ibd[3] = {5, 0, 2}, stbl[3] = {1, 2, 1};
    MPI_Aint hxd[2] = {24, 0}, hbd[2] = {0, 40}, std_[3] = {0, 8, 24}, flatd[3] = {0, 4, 20};
    MPI_Datatype sttypes[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
    int sizes[2] = {4, 5}, subsizes[2] = {2, 3}, starts[2] = {1, 1};
    int sizes3[3] = {3, 4, 5}, subsizes3[3] = {2, 2, 2}, starts3[3] = {1, 0, 3};
    int hxbl[2] = {1, 2};

    CHECK(MPI_Type_create_hvector(3, 2, 20, MPI_INT, &hv) == MPI_SUCCESS && MPI_Type_commit(&hv) == MPI_SUCCESS,
          "MPI_Type_create_hvector(3, 2, 20 bytes, INT)");
    CHECK_BOUNDS(hv, 24, 0, 48, 0, 48);
    {
        struct blk b[] = {{0, 8}, {20, 8}, {40, 8}, {48, 8}, {68, 8}, {88, 8}};
        exchange("hvector", hv, 2, MPI_INT, 12, b, N(b), 12);
    }
    CHECK(MPI_Type_create_hvector(2, 1, -8, MPI_INT, &hvneg) == MPI_SUCCESS && MPI_Type_commit(&hvneg) == MPI_SUCCESS,
          "MPI_Type_create_hvector(2, 1, -8 bytes, INT)");
    CHECK_BOUNDS(hvneg, 8, -8, 12, -8, 12);
    {
        struct blk b[] = {{0, 4}, {-8, 4}};
        exchange("hvector with a negative stride", hvneg, 1, MPI_INT, 2, b, N(b), 2);
    }

    CHECK(MPI_Type_indexed(3, bl, d, MPI_INT, &ix) == MPI_SUCCESS && MPI_Type_commit(&ix) == MPI_SUCCESS,
          "MPI_Type_indexed({2,1,3}, {4,0,8}, INT)");
    CHECK_BOUNDS(ix, 24, 0, 44, 0, 44);
    {
        struct blk b[] = {{16, 8}, {0, 4}, {32, 12}, {60, 8}, {44, 4}, {76, 12}};
        exchange("indexed", ix, 2, MPI_INT, 12, b, N(b), 12);
    }

    CHECK(MPI_Type_create_hindexed(2, hxbl, hxd, MPI_DOUBLE, &hx) == MPI_SUCCESS && MPI_Type_commit(&hx) == MPI_SUCCESS,
          "MPI_Type_create_hindexed({1,2}, {24,0} bytes, DOUBLE)");
    CHECK_BOUNDS(hx, 24, 0, 32, 0, 32);
    {
        struct blk b[] = {{24, 8}, {0, 16}, {56, 8}, {32, 16}};
        exchange("hindexed", hx, 2, MPI_DOUBLE, 6, b, N(b), 6);
    }

    CHECK(MPI_Type_create_indexed_block(3, 2, ibd, MPI_SHORT, &ib) == MPI_SUCCESS && MPI_Type_commit(&ib) == MPI_SUCCESS,
          "MPI_Type_create_indexed_block(2, {5,0,2}, SHORT)");
    CHECK_BOUNDS(ib, 12, 0, 14, 0, 14);
    {
        struct blk b[] = {{10, 4}, {0, 4}, {4, 4}};
        exchange("indexed_block", ib, 1, MPI_SHORT, 6, b, N(b), 6);
    }

    CHECK(MPI_Type_create_hindexed_block(2, 3, hbd, MPI_CHAR, &hb) == MPI_SUCCESS && MPI_Type_commit(&hb) == MPI_SUCCESS,
          "MPI_Type_create_hindexed_block(3, {0,40} bytes, CHAR)");
    CHECK_BOUNDS(hb, 6, 0, 43, 0, 43);
    {
        struct blk b[] = {{0, 3}, {40, 3}, {43, 3}, {83, 3}};
        exchange("hindexed_block", hb, 2, MPI_CHAR, 12, b, N(b), 12);
    }

    /* struct { int; double[2]; char; }: the extent is padded to the alignment of double. The
     * same signature packed: the struct at {0, 4, 20}, resized to its size. */
    CHECK(MPI_Type_create_struct(3, stbl, std_, sttypes, &st) == MPI_SUCCESS && MPI_Type_commit(&st) == MPI_SUCCESS,
          "MPI_Type_create_struct({INT, 2 DOUBLE, CHAR} at {0, 8, 24})");
    CHECK_BOUNDS(st, 21, 0, 32, 0, 25);
    CHECK(MPI_Type_create_struct(3, stbl, flatd, sttypes, &stflat) == MPI_SUCCESS, "the packed struct");
    CHECK_BOUNDS(stflat, 21, 0, 24, 0, 21);
    CHECK(MPI_Type_create_resized(stflat, 0, 21, &stflat_r) == MPI_SUCCESS && MPI_Type_commit(&stflat_r) == MPI_SUCCESS,
          "MPI_Type_create_resized(packed struct, 0, 21)");
    CHECK_BOUNDS(stflat_r, 21, 0, 21, 0, 21);
    {
        struct blk b[] = {{0, 4}, {8, 16}, {24, 1}, {32, 4}, {40, 16}, {56, 1}};
        exchange("struct", st, 2, stflat_r, 2, b, N(b), 8);
    }

    CHECK(MPI_Type_create_resized(MPI_INT, -4, 12, &rs) == MPI_SUCCESS && MPI_Type_commit(&rs) == MPI_SUCCESS,
          "MPI_Type_create_resized(INT, -4, 12)");
    CHECK_BOUNDS(rs, 4, -4, 12, 0, 4);
    {
        struct blk b[] = {{0, 4}, {12, 4}, {24, 4}};
        exchange("resized int", rs, 3, MPI_INT, 3, b, N(b), 3);
    }
    /* A column of a 2x3 matrix resized to one int: consecutive elements are the next columns. */
    MPI_Type_vector(2, 1, 3, MPI_INT, &v);
    CHECK(MPI_Type_create_resized(v, 0, 4, &rv) == MPI_SUCCESS && MPI_Type_commit(&rv) == MPI_SUCCESS,
          "MPI_Type_create_resized(vector(2, 1, 3, INT), 0, 4)");
    CHECK_BOUNDS(rv, 8, 0, 4, 0, 16);
    {
        struct blk b[] = {{0, 4}, {12, 4}, {4, 4}, {16, 4}, {8, 4}, {20, 4}};
        exchange("resized column (transpose)", rv, 3, MPI_INT, 6, b, N(b), 6);
    }

    CHECK(MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &sa) == MPI_SUCCESS &&
              MPI_Type_commit(&sa) == MPI_SUCCESS,
          "MPI_Type_create_subarray({4,5}, {2,3}, {1,1}, C, INT)");
    CHECK_BOUNDS(sa, 24, 0, 80, 24, 32);
    {
        struct blk b[] = {{24, 12}, {44, 12}, {104, 12}, {124, 12}};
        exchange("subarray (C order)", sa, 2, MPI_INT, 12, b, N(b), 12);
    }
    CHECK(MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_FORTRAN, MPI_INT, &sf) == MPI_SUCCESS &&
              MPI_Type_commit(&sf) == MPI_SUCCESS,
          "MPI_Type_create_subarray({4,5}, {2,3}, {1,1}, FORTRAN, INT)");
    CHECK_BOUNDS(sf, 24, 0, 80, 20, 40);
    {
        struct blk b[] = {{20, 8}, {36, 8}, {52, 8}};
        exchange("subarray (Fortran order)", sf, 1, MPI_INT, 6, b, N(b), 6);
    }
    CHECK(MPI_Type_create_subarray(3, sizes3, subsizes3, starts3, MPI_ORDER_C, MPI_INT, &s3) == MPI_SUCCESS &&
              MPI_Type_commit(&s3) == MPI_SUCCESS,
          "MPI_Type_create_subarray({3,4,5}, {2,2,2}, {1,0,3}, C, INT)");
    CHECK_BOUNDS(s3, 32, 0, 240, 92, 108);
    {
        struct blk b[] = {{92, 8}, {112, 8}, {172, 8}, {192, 8}};
        exchange("3-d subarray", s3, 1, MPI_INT, 8, b, N(b), 8);
    }

    /* A dup of a committed type is committed. */
    CHECK(MPI_Type_dup(hv, &hvdup) == MPI_SUCCESS && hvdup != hv, "MPI_Type_dup(hvector): a new handle");
    CHECK_BOUNDS(hvdup, 24, 0, 48, 0, 48);
    {
        struct blk b[] = {{0, 8}, {20, 8}, {40, 8}};
        exchange("dup (committed with its type)", hvdup, 1, MPI_INT, 6, b, N(b), 6);
    }

    CHECK(MPI_Type_create_hvector(2, 1, 64, st, &nest) == MPI_SUCCESS && MPI_Type_commit(&nest) == MPI_SUCCESS,
          "MPI_Type_create_hvector(2, 1, 64, struct)");
    CHECK_BOUNDS(nest, 42, 0, 96, 0, 89);
    {
        struct blk b[] = {{0, 4}, {8, 16}, {24, 1}, {64, 4}, {72, 16}, {88, 1}};
        exchange("hvector of structs", nest, 1, stflat_r, 2, b, N(b), 8);
    }

    CHECK(MPI_Type_indexed(0, NULL, NULL, MPI_INT, &empty) == MPI_SUCCESS && MPI_Type_commit(&empty) == MPI_SUCCESS,
          "MPI_Type_indexed with count 0 (null arrays)");
    CHECK_BOUNDS(empty, 0, 0, 0, 0, 0);
    exchange("empty type", empty, 1, MPI_INT, 0, NULL, 0, 0);

    {
        MPI_Datatype all[] = {hv, hvneg, ix, hx, ib, hb, st, stflat, stflat_r, rs, v, rv, sa, sf, s3, hvdup, nest, empty};
        int i;
        for (i = 0; i < N(all); i++)
            CHECK(MPI_Type_free(&all[i]) == MPI_SUCCESS && all[i] == MPI_DATATYPE_NULL, "MPI_Type_free of type %d", i);
    }
}

/* Both ranks reach this point (no collectives in the library yet). */
static void sync_with(int peer)
{
    int a = 0, b = 0;
    MPI_Sendrecv(&a, 1, MPI_INT, peer, 22, &b, 1, MPI_INT, peer, 22, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* Types freed while in use stay alive for their users. */
static void references(int rank, int peer)
{
    MPI_Datatype base, outer, t, u;
    MPI_Request req;
    MPI_Status s;
    int buf[8], got[8], i, ok;

    MPI_Type_vector(2, 1, 3, MPI_INT, &base);
    CHECK(MPI_Type_contiguous(2, base, &outer) == MPI_SUCCESS && MPI_Type_free(&base) == MPI_SUCCESS &&
              base == MPI_DATATYPE_NULL && MPI_Type_commit(&outer) == MPI_SUCCESS,
          "contiguous(2, vector) committed after the vector's handle was freed");
    CHECK_BOUNDS(outer, 16, 0, 32, 0, 32);
    {
        struct blk b[] = {{0, 4}, {12, 4}, {16, 4}, {28, 4}};
        exchange("a type built on a freed type", outer, 1, MPI_INT, 4, b, N(b), 4);
    }
    MPI_Type_free(&outer);

    /* Freed right after MPI_Isend / MPI_Irecv, before the operation completes. */
    for (i = 0; i < 8; i++)
        buf[i] = 100 * rank + i;
    MPI_Type_vector(3, 1, 2, MPI_INT, &t);
    MPI_Type_commit(&t);
    MPI_Type_dup(t, &u);
    if (rank == 0) {
        CHECK(MPI_Isend(buf, 1, t, peer, 20, MPI_COMM_WORLD, &req) == MPI_SUCCESS, "MPI_Isend with a vector");
        CHECK(MPI_Type_free(&t) == MPI_SUCCESS, "MPI_Type_free while the send is pending");
        sync_with(peer);
        CHECK(MPI_Wait(&req, &s) == MPI_SUCCESS, "MPI_Wait of the send");
        MPI_Recv(buf, 3, MPI_INT, peer, 21, MPI_COMM_WORLD, &s);
        CHECK(buf[0] == 100 && buf[1] == 101 && buf[2] == 102, "the peer's data came back: %d %d %d", buf[0],
              buf[1], buf[2]);
    } else {
        for (i = 0; i < 8; i++)
            got[i] = -1;
        CHECK(MPI_Irecv(got, 1, u, peer, 20, MPI_COMM_WORLD, &req) == MPI_SUCCESS, "MPI_Irecv with a vector");
        CHECK(MPI_Type_free(&u) == MPI_SUCCESS, "MPI_Type_free while the receive is pending");
        sync_with(peer);
        CHECK(MPI_Wait(&req, &s) == MPI_SUCCESS, "MPI_Wait of the receive");
        ok = got[0] == 0 && got[1] == -1 && got[2] == 2 && got[3] == -1 && got[4] == 4 && got[5] == -1;
        CHECK(ok, "received through the freed type: %d %d %d %d %d %d", got[0], got[1], got[2], got[3], got[4], got[5]);
        MPI_Send(buf, 3, MPI_INT, peer, 21, MPI_COMM_WORLD);
    }
    if (t != MPI_DATATYPE_NULL)
        MPI_Type_free(&t);
    if (u != MPI_DATATYPE_NULL)
        MPI_Type_free(&u);
}

/* Error classes in MPICH's order: each parameter checked fully before the next. */
static void errors(void)
{
    MPI_Datatype t = MPI_DATATYPE_NULL;
    int bl[3] = {1, 2, 1}, nbl[3] = {1, -1, 1}, d[3] = {0, 4, 10};
    MPI_Aint ad[3] = {0, 16, 40};
    MPI_Datatype ty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, nty[3] = {MPI_INT, MPI_DATATYPE_NULL, MPI_CHAR};
    int sz[2] = {4, 5}, sub[2] = {2, 3}, st[2] = {1, 1}, nst[2] = {-1, 0}, bad[2] = {0, 5}, bsub[2] = {5, 3};

    CHECK_ERR(MPI_Type_create_hvector(-1, -1, 8, MPI_INT, &t), MPI_ERR_COUNT, "MPI_Type_create_hvector");
    CHECK_ERR(MPI_Type_create_hvector(1, -1, 8, MPI_DATATYPE_NULL, &t), MPI_ERR_COUNT, "MPI_Type_create_hvector");
    CHECK_ERR(MPI_Type_create_hvector(1, 1, 8, MPI_DATATYPE_NULL, NULL), MPI_ERR_TYPE, "MPI_Type_create_hvector");
    CHECK_ERR(MPI_Type_create_hvector(1, 1, 8, MPI_INT, NULL), MPI_ERR_ARG, "MPI_Type_create_hvector");
    CHECK_ERR(MPI_Type_vector(1, 1, 8, MPI_DATATYPE_NULL, NULL), MPI_ERR_TYPE, "MPI_Type_vector");
    CHECK_ERR(MPI_Type_contiguous(1, MPI_INT, NULL), MPI_ERR_ARG, "MPI_Type_contiguous");

    CHECK_ERR(MPI_Type_indexed(-1, NULL, d, MPI_DATATYPE_NULL, &t), MPI_ERR_COUNT, "MPI_Type_indexed");
    CHECK_ERR(MPI_Type_indexed(3, NULL, d, MPI_DATATYPE_NULL, &t), MPI_ERR_ARG, "MPI_Type_indexed");
    CHECK_ERR(MPI_Type_indexed(3, nbl, NULL, MPI_INT, &t), MPI_ERR_COUNT, "MPI_Type_indexed");
    CHECK_ERR(MPI_Type_indexed(3, nbl, d, MPI_DATATYPE_NULL, NULL), MPI_ERR_COUNT, "MPI_Type_indexed");
    CHECK_ERR(MPI_Type_indexed(3, bl, NULL, MPI_DATATYPE_NULL, &t), MPI_ERR_ARG, "MPI_Type_indexed");
    CHECK_ERR(MPI_Type_indexed(3, bl, d, MPI_DATATYPE_NULL, NULL), MPI_ERR_TYPE, "MPI_Type_indexed");
    CHECK_ERR(MPI_Type_indexed(3, bl, d, MPI_INT, NULL), MPI_ERR_ARG, "MPI_Type_indexed");
    CHECK_ERR(MPI_Type_indexed(0, NULL, NULL, MPI_DATATYPE_NULL, &t), MPI_ERR_TYPE, "MPI_Type_indexed");

    CHECK_ERR(MPI_Type_create_hindexed(-1, bl, ad, MPI_INT, &t), MPI_ERR_COUNT, "MPI_Type_create_hindexed");
    CHECK_ERR(MPI_Type_create_hindexed(3, NULL, ad, MPI_DATATYPE_NULL, &t), MPI_ERR_ARG, "MPI_Type_create_hindexed");
    CHECK_ERR(MPI_Type_create_hindexed(3, nbl, NULL, MPI_INT, &t), MPI_ERR_COUNT, "MPI_Type_create_hindexed");
    CHECK_ERR(MPI_Type_create_hindexed(3, bl, NULL, MPI_DATATYPE_NULL, &t), MPI_ERR_ARG, "MPI_Type_create_hindexed");
    CHECK_ERR(MPI_Type_create_hindexed(3, bl, ad, MPI_DATATYPE_NULL, NULL), MPI_ERR_TYPE, "MPI_Type_create_hindexed");
    CHECK_ERR(MPI_Type_create_hindexed(3, bl, ad, MPI_INT, NULL), MPI_ERR_ARG, "MPI_Type_create_hindexed");

    CHECK_ERR(MPI_Type_create_indexed_block(-1, -1, d, MPI_INT, &t), MPI_ERR_COUNT, "MPI_Type_create_indexed_block");
    CHECK_ERR(MPI_Type_create_indexed_block(3, -1, NULL, MPI_INT, &t), MPI_ERR_COUNT, "MPI_Type_create_indexed_block");
    CHECK_ERR(MPI_Type_create_indexed_block(3, 1, NULL, MPI_DATATYPE_NULL, &t), MPI_ERR_ARG,
              "MPI_Type_create_indexed_block");
    CHECK_ERR(MPI_Type_create_indexed_block(3, 1, d, MPI_DATATYPE_NULL, NULL), MPI_ERR_TYPE,
              "MPI_Type_create_indexed_block");
    CHECK_ERR(MPI_Type_create_indexed_block(3, 1, d, MPI_INT, NULL), MPI_ERR_ARG, "MPI_Type_create_indexed_block");

    CHECK_ERR(MPI_Type_create_hindexed_block(-1, -1, ad, MPI_INT, &t), MPI_ERR_COUNT, "MPI_Type_create_hindexed_block");
    CHECK_ERR(MPI_Type_create_hindexed_block(3, -1, ad, MPI_DATATYPE_NULL, &t), MPI_ERR_COUNT,
              "MPI_Type_create_hindexed_block");
    CHECK_ERR(MPI_Type_create_hindexed_block(3, 1, NULL, MPI_DATATYPE_NULL, &t), MPI_ERR_ARG,
              "MPI_Type_create_hindexed_block");
    CHECK_ERR(MPI_Type_create_hindexed_block(3, 1, ad, MPI_DATATYPE_NULL, NULL), MPI_ERR_TYPE,
              "MPI_Type_create_hindexed_block");
    CHECK_ERR(MPI_Type_create_hindexed_block(3, 1, ad, MPI_INT, NULL), MPI_ERR_ARG, "MPI_Type_create_hindexed_block");

    CHECK_ERR(MPI_Type_create_struct(-1, bl, ad, ty, &t), MPI_ERR_COUNT, "MPI_Type_create_struct");
    CHECK_ERR(MPI_Type_create_struct(3, NULL, ad, nty, &t), MPI_ERR_ARG, "MPI_Type_create_struct");
    CHECK_ERR(MPI_Type_create_struct(3, nbl, NULL, ty, &t), MPI_ERR_COUNT, "MPI_Type_create_struct");
    CHECK_ERR(MPI_Type_create_struct(3, nbl, ad, nty, &t), MPI_ERR_COUNT, "MPI_Type_create_struct");
    CHECK_ERR(MPI_Type_create_struct(3, bl, NULL, nty, &t), MPI_ERR_ARG, "MPI_Type_create_struct");
    CHECK_ERR(MPI_Type_create_struct(3, bl, ad, NULL, NULL), MPI_ERR_ARG, "MPI_Type_create_struct");
    CHECK_ERR(MPI_Type_create_struct(3, bl, ad, nty, NULL), MPI_ERR_TYPE, "MPI_Type_create_struct");
    CHECK_ERR(MPI_Type_create_struct(3, bl, ad, ty, NULL), MPI_ERR_ARG, "MPI_Type_create_struct");
    CHECK(MPI_Type_create_struct(0, NULL, NULL, NULL, &t) == MPI_SUCCESS && MPI_Type_free(&t) == MPI_SUCCESS,
          "MPI_Type_create_struct with count 0 (null arrays)");

    CHECK_ERR(MPI_Type_create_resized(MPI_DATATYPE_NULL, 0, 8, NULL), MPI_ERR_TYPE, "MPI_Type_create_resized");
    CHECK_ERR(MPI_Type_create_resized(MPI_INT, 0, 8, NULL), MPI_ERR_ARG, "MPI_Type_create_resized");
    CHECK_ERR(MPI_Type_dup(MPI_DATATYPE_NULL, NULL), MPI_ERR_TYPE, "MPI_Type_dup");
    CHECK_ERR(MPI_Type_dup(MPI_INT, NULL), MPI_ERR_ARG, "MPI_Type_dup");
    CHECK_ERR(MPI_Type_dup(MPI_COMM_WORLD, &t), MPI_ERR_TYPE, "MPI_Type_dup");

    CHECK_ERR(MPI_Type_create_subarray(-1, sz, sub, st, MPI_ORDER_C, MPI_DATATYPE_NULL, &t), MPI_ERR_ARG,
              "MPI_Type_create_subarray");
    CHECK_ERR(MPI_Type_create_subarray(2, sz, sub, nst, 3, MPI_DATATYPE_NULL, NULL), MPI_ERR_COUNT,
              "MPI_Type_create_subarray");
    CHECK_ERR(MPI_Type_create_subarray(2, sz, sub, st, 3, MPI_DATATYPE_NULL, &t), MPI_ERR_TYPE,
              "MPI_Type_create_subarray");
    CHECK_ERR(MPI_Type_create_subarray(2, sz, sub, st, 3, MPI_INT, &t), MPI_ERR_ARG, "MPI_Type_create_subarray");
    CHECK_ERR(MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_DATATYPE_NULL, NULL), MPI_ERR_TYPE,
              "MPI_Type_create_subarray");
    CHECK_ERR(MPI_Type_create_subarray(2, bad, sub, st, MPI_ORDER_C, MPI_DATATYPE_NULL, &t), MPI_ERR_TYPE,
              "MPI_Type_create_subarray");
    CHECK_ERR(MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, NULL), MPI_ERR_ARG,
              "MPI_Type_create_subarray");
    /* MPICH 4.0.2 accepts erroneous dimensions and ndims 0, and crashes on null arrays. */
    ON_MADMPI(CHECK_ERR(MPI_Type_create_subarray(2, bad, sub, st, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG, "size 0"));
    ON_MADMPI(CHECK_ERR(MPI_Type_create_subarray(2, sz, bsub, st, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG, "subsize 5"));
    ON_MADMPI(CHECK_ERR(MPI_Type_create_subarray(0, sz, sub, st, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG, "ndims"));
    ON_MADMPI(CHECK_ERR(MPI_Type_create_subarray(2, sz, NULL, st, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG,
                        "array_of_subsizes"));
    CHECK(t == MPI_DATATYPE_NULL, "no failed call wrote a handle");
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

    constructors();
    references(rank, 1 - rank);
    errors();

    CHECK(MPI_Finalize() == MPI_SUCCESS, "MPI_Finalize");
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
