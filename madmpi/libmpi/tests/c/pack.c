/* MPI_Pack, MPI_Unpack, MPI_Pack_size and element counts: several types packed into one
 * buffer sent as MPI_PACKED and unpacked by the peer; typed data received as MPI_PACKED and
 * unpacked; MPI_BOTTOM with absolute addresses; MPI_Get_count / MPI_Get_elements(_x) after
 * real receives of derived types, whole and partial; the error paths, which go to the
 * communicator's handler. Values checked on MPICH 4.0.2 (see types.h). Run with 2 processes. */
#include "types.h"

struct rec {
    int i;
    double d[2];
    char c;
};

static MPI_Datatype rec_type(void)
{
    int bl[3] = {1, 2, 1};
    MPI_Aint d[3] = {0, 8, 24};
    MPI_Datatype ty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, t;
    MPI_Type_create_struct(3, bl, d, ty, &t);
    MPI_Type_commit(&t);
    return t;
}

static void packing(int rank, int peer)
{
    MPI_Datatype rec = rec_type(), col0, col;
    struct rec r[2], back[2];
    int m[4][5], cols[4][5], i, j, pos = 0, size = -1, n = -1, header = 42 + rank, h = -1;
    char buf[256], other[256];
    MPI_Status st;

    /* A column of a 4x5 int matrix, resized so that the next element is the next column. */
    MPI_Type_vector(4, 1, 5, MPI_INT, &col0);
    MPI_Type_create_resized(col0, 0, sizeof(int), &col);
    MPI_Type_free(&col0);
    MPI_Type_commit(&col);
    CHECK(MPI_Pack_size(1, MPI_INT, MPI_COMM_WORLD, &size) == MPI_SUCCESS && size == 4, "MPI_Pack_size(1, INT): 4");
    CHECK(MPI_Pack_size(2, rec, MPI_COMM_WORLD, &size) == MPI_SUCCESS && size == 42, "MPI_Pack_size(2, struct): %d",
          size);
    CHECK(MPI_Pack_size(2, col, MPI_COMM_WORLD, &size) == MPI_SUCCESS && size == 32, "MPI_Pack_size(2, column): %d",
          size);
    CHECK(MPI_Pack_size(0, col, MPI_COMM_WORLD, &size) == MPI_SUCCESS && size == 0, "MPI_Pack_size(0, column): 0");

    for (i = 0; i < 2; i++) {
        r[i].i = 100 * rank + i;
        r[i].d[0] = rank + 0.5 * i;
        r[i].d[1] = -rank - 0.25 * i;
        r[i].c = (char)('a' + rank + i);
    }
    for (i = 0; i < 4; i++)
        for (j = 0; j < 5; j++)
            m[i][j] = 1000 * rank + 10 * i + j;
    CHECK(MPI_Pack(&header, 1, MPI_INT, buf, sizeof buf, &pos, MPI_COMM_WORLD) == MPI_SUCCESS && pos == 4,
          "MPI_Pack of an int: position %d", pos);
    CHECK(MPI_Pack(r, 2, rec, buf, sizeof buf, &pos, MPI_COMM_WORLD) == MPI_SUCCESS && pos == 46,
          "MPI_Pack of 2 structs: position %d", pos);
    CHECK(MPI_Pack(&m[0][1], 2, col, buf, sizeof buf, &pos, MPI_COMM_WORLD) == MPI_SUCCESS && pos == 78,
          "MPI_Pack of columns 1 and 2 of a 4x5 matrix: position %d", pos);
    CHECK(MPI_Pack(NULL, 0, col, buf, sizeof buf, &pos, MPI_COMM_WORLD) == MPI_SUCCESS && pos == 78,
          "MPI_Pack of nothing from a null buffer");
    CHECK(MPI_Sendrecv(buf, pos, MPI_PACKED, peer, 1, other, sizeof other, MPI_PACKED, peer, 1, MPI_COMM_WORLD,
                       &st) == MPI_SUCCESS,
          "the packed buffers exchanged as MPI_PACKED");
    memcpy(buf, other, sizeof buf);
    CHECK(MPI_Get_count(&st, MPI_PACKED, &n) == MPI_SUCCESS && n == 78, "MPI_Get_count(MPI_PACKED): %d", n);

    memset(back, 0, sizeof back);
    memset(cols, -1, sizeof cols);
    pos = 0;
    CHECK(MPI_Unpack(buf, n, &pos, &h, 1, MPI_INT, MPI_COMM_WORLD) == MPI_SUCCESS && h == 42 + peer && pos == 4,
          "MPI_Unpack of the peer's int: %d", h);
    CHECK(MPI_Unpack(buf, n, &pos, back, 2, rec, MPI_COMM_WORLD) == MPI_SUCCESS && pos == 46,
          "MPI_Unpack of 2 structs: position %d", pos);
    for (i = 0; i < 2; i++)
        CHECK(back[i].i == 100 * peer + i && back[i].d[0] == peer + 0.5 * i && back[i].d[1] == -peer - 0.25 * i &&
                  back[i].c == 'a' + peer + i,
              "struct %d: %d %g %g %c", i, back[i].i, back[i].d[0], back[i].d[1], back[i].c);
    CHECK(MPI_Unpack(buf, n, &pos, &cols[0][3], 2, col, MPI_COMM_WORLD) == MPI_SUCCESS && pos == 78,
          "MPI_Unpack of 2 columns into columns 3 and 4");
    for (i = 0; i < 4; i++)
        CHECK(cols[i][3] == 1000 * peer + 10 * i + 1 && cols[i][4] == 1000 * peer + 10 * i + 2 && cols[i][2] == -1,
              "row %d: %d %d, column 2 untouched", i, cols[i][3], cols[i][4]);

    /* Typed data received as MPI_PACKED, then unpacked as contiguous ints. */
    {
        int flat[8], k;
        CHECK(MPI_Sendrecv(&m[0][0], 2, col, peer, 2, buf, sizeof buf, MPI_PACKED, peer, 2, MPI_COMM_WORLD, &st) ==
                  MPI_SUCCESS,
              "2 columns received as MPI_PACKED");
        CHECK(MPI_Get_count(&st, MPI_PACKED, &n) == MPI_SUCCESS && n == 32, "32 packed bytes");
        pos = 0;
        CHECK(MPI_Unpack(buf, n, &pos, flat, 8, MPI_INT, MPI_COMM_WORLD) == MPI_SUCCESS && pos == 32,
              "unpacked as 8 ints");
        for (k = 0; k < 8; k++)
            CHECK(flat[k] == 1000 * peer + 10 * (k % 4) + k / 4, "int %d: %d", k, flat[k]);
    }

    /* MPI_BOTTOM with absolute addresses (MPICH 4.0.2 rejects a null buffer in the pack calls
     * whatever the type: MPI_ERR_ARG). */
    if (on_madmpi()) {
        int x = 7 + rank, y = -1, one = 1;
        MPI_Aint at = (MPI_Aint)&x, yat = (MPI_Aint)&y;
        MPI_Datatype abs_x, abs_y;
        MPI_Type_create_hindexed(1, &one, &at, MPI_INT, &abs_x);
        MPI_Type_create_hindexed(1, &one, &yat, MPI_INT, &abs_y);
        MPI_Type_commit(&abs_x);
        MPI_Type_commit(&abs_y);
        pos = 0;
        CHECK(MPI_Pack(MPI_BOTTOM, 1, abs_x, buf, sizeof buf, &pos, MPI_COMM_WORLD) == MPI_SUCCESS && pos == 4,
              "MPI_Pack from MPI_BOTTOM with an absolute address");
        pos = 0;
        CHECK(MPI_Unpack(buf, 4, &pos, MPI_BOTTOM, 1, abs_y, MPI_COMM_WORLD) == MPI_SUCCESS && y == 7 + rank,
              "MPI_Unpack to MPI_BOTTOM: %d", y);
        MPI_Type_free(&abs_x);
        MPI_Type_free(&abs_y);
    }
    MPI_Type_free(&rec);
    MPI_Type_free(&col);
}

static void counts(int rank, int peer)
{
    MPI_Datatype loose, id, idi, uncommitted;
    int ints[8] = {1, 2, 3, 4, 5, 6, 7, 8}, got[16], n = -1;
    int bl[3] = {1, 1, 1};
    MPI_Aint d2[2] = {0, 8}, d3[3] = {0, 4, 12};
    MPI_Datatype t3[3] = {MPI_INT, MPI_DOUBLE, MPI_INT};
    MPI_Count x = -1;
    MPI_Status st;
    char bytes[16];

    (void)rank;
    MPI_Type_vector(3, 1, 2, MPI_INT, &loose);
    MPI_Type_commit(&loose);
    CHECK(MPI_Sendrecv(ints, 5, MPI_INT, peer, 3, got, 2, loose, peer, 3, MPI_COMM_WORLD, &st) == MPI_SUCCESS,
          "5 ints into 2 elements of 3 strided ints");
    CHECK(MPI_Get_count(&st, loose, &n) == MPI_SUCCESS && n == MPI_UNDEFINED, "MPI_Get_count: MPI_UNDEFINED");
    CHECK(MPI_Get_elements(&st, loose, &n) == MPI_SUCCESS && n == 5, "MPI_Get_elements: %d", n);
    CHECK(MPI_Get_elements_x(&st, loose, &x) == MPI_SUCCESS && x == 5, "MPI_Get_elements_x: %lld", (long long)x);
    CHECK(MPI_Get_count(&st, MPI_INT, &n) == MPI_SUCCESS && n == 5, "MPI_Get_count(INT): %d", n);
    MPI_Type_vector(3, 1, 2, MPI_INT, &uncommitted);
    CHECK(MPI_Get_count(&st, uncommitted, &n) == MPI_SUCCESS && n == MPI_UNDEFINED,
          "MPI_Get_count takes an uncommitted type");

    /* struct {int; double} (size 12) receiving one whole element and an int. */
    MPI_Type_create_struct(2, bl, d2, t3, &id);
    MPI_Type_commit(&id);
    MPI_Type_create_struct(3, bl, d3, t3, &idi);
    MPI_Type_commit(&idi);
    memset(bytes, 0, sizeof bytes);
    CHECK(MPI_Sendrecv(bytes, 1, idi, peer, 4, got, 2, id, peer, 4, MPI_COMM_WORLD, &st) == MPI_SUCCESS,
          "{int, double, int} into 2 {int, double}");
    CHECK(MPI_Get_count(&st, id, &n) == MPI_SUCCESS && n == MPI_UNDEFINED, "MPI_Get_count: MPI_UNDEFINED");
    CHECK(MPI_Get_elements(&st, id, &n) == MPI_SUCCESS && n == 3, "MPI_Get_elements: %d", n);
    CHECK(MPI_Get_elements_x(&st, idi, &x) == MPI_SUCCESS && x == 3, "MPI_Get_elements_x(idi): %lld", (long long)x);

    /* 6 bytes: inside the second int of MPI_2INT, a whole MPI_SHORT_INT. */
    CHECK(MPI_Sendrecv(bytes, 6, MPI_BYTE, peer, 5, got, 1, MPI_2INT, peer, 5, MPI_COMM_WORLD, &st) == MPI_SUCCESS,
          "6 bytes into MPI_2INT");
    CHECK(MPI_Get_elements(&st, MPI_2INT, &n) == MPI_SUCCESS && n == MPI_UNDEFINED,
          "MPI_Get_elements(2INT) of 6 bytes: MPI_UNDEFINED");
    CHECK(MPI_Get_elements(&st, MPI_SHORT_INT, &n) == MPI_SUCCESS && n == 2, "MPI_Get_elements(SHORT_INT): %d", n);
    CHECK(MPI_Get_count(&st, MPI_SHORT_INT, &n) == MPI_SUCCESS && n == 1, "MPI_Get_count(SHORT_INT): %d", n);

    /* Nothing received. */
    CHECK(MPI_Sendrecv(ints, 0, MPI_INT, peer, 6, got, 1, loose, peer, 6, MPI_COMM_WORLD, &st) == MPI_SUCCESS,
          "an empty message");
    CHECK(MPI_Get_elements(&st, loose, &n) == MPI_SUCCESS && n == 0 && MPI_Get_count(&st, loose, &n) == MPI_SUCCESS &&
              n == 0,
          "0 elements, count 0");

    CHECK_ERR(MPI_Get_elements(&st, MPI_DATATYPE_NULL, NULL), MPI_ERR_TYPE, "MPI_Get_elements");
    CHECK_ERR(MPI_Get_elements(&st, MPI_INT, NULL), MPI_ERR_ARG, "MPI_Get_elements");
    CHECK_ERR(MPI_Get_elements(&st, uncommitted, &n), MPI_ERR_TYPE, "MPI_Get_elements");
    CHECK_ERR(MPI_Get_elements_x(&st, loose, NULL), MPI_ERR_ARG, "MPI_Get_elements_x");
    CHECK_ERR(MPI_Get_elements_x(&st, uncommitted, &x), MPI_ERR_TYPE, "MPI_Get_elements_x");
    /* MPICH 4.0.2 crashes on these. */
    ON_MADMPI(CHECK_ERR(MPI_Get_elements(MPI_STATUS_IGNORE, MPI_INT, &n), MPI_ERR_ARG, "MPI_Get_elements"));
    ON_MADMPI(CHECK_ERR(MPI_Get_elements_x(NULL, MPI_INT, &x), MPI_ERR_ARG, "MPI_Get_elements_x"));
    MPI_Type_free(&loose);
    MPI_Type_free(&uncommitted);
    MPI_Type_free(&id);
    MPI_Type_free(&idi);
}

static void errors(void)
{
    MPI_Datatype v, u, big, huge;
    int in[10] = {0}, out[10], pos = 0, sz = -1;
    char buf[100];

    MPI_Type_vector(2, 1, 3, MPI_INT, &v);
    MPI_Type_commit(&v);
    MPI_Type_vector(2, 1, 3, MPI_INT, &u);
    CHECK_ERR(MPI_Pack(in, -1, v, buf, 100, &pos, MPI_COMM_NULL), MPI_ERR_COMM, "MPI_Pack");
    CHECK_ERR(MPI_Pack(in, -1, MPI_DATATYPE_NULL, buf, 100, &pos, MPI_COMM_WORLD), MPI_ERR_COUNT, "MPI_Pack");
    CHECK_ERR(MPI_Pack(in, 1, MPI_DATATYPE_NULL, buf, -1, &pos, MPI_COMM_WORLD), MPI_ERR_TYPE, "MPI_Pack");
    CHECK_ERR(MPI_Pack(in, 1, u, buf, -1, &pos, MPI_COMM_WORLD), MPI_ERR_TYPE, "MPI_Pack");
    CHECK_ERR(MPI_Pack(in, 1, v, buf, -1, &pos, MPI_COMM_WORLD), MPI_ERR_ARG, "MPI_Pack");
    CHECK_ERR(MPI_Pack(in, 1, v, buf, 100, NULL, MPI_COMM_WORLD), MPI_ERR_ARG, "MPI_Pack");
    CHECK_ERR(MPI_Pack(NULL, 1, v, buf, 100, &pos, MPI_COMM_WORLD), MPI_ERR_ARG, "MPI_Pack");
    CHECK(pos == 0, "failed packs leave the position");
    /* MPICH 4.0.2 writes past the buffer or crashes on these. */
    ON_MADMPI(CHECK_ERR(MPI_Pack(in, 1, v, buf, 7, &pos, MPI_COMM_WORLD), MPI_ERR_TRUNCATE, "do not fit"));
    ON_MADMPI(pos = 95; CHECK_ERR(MPI_Pack(in, 1, v, buf, 100, &pos, MPI_COMM_WORLD), MPI_ERR_TRUNCATE, "MPI_Pack");
              CHECK(pos == 95, "position unchanged"));
    ON_MADMPI(pos = 200; CHECK_ERR(MPI_Pack(in, 1, v, buf, 100, &pos, MPI_COMM_WORLD), MPI_ERR_TRUNCATE, "MPI_Pack"));
    ON_MADMPI(pos = -1; CHECK_ERR(MPI_Pack(in, 1, v, buf, 100, &pos, MPI_COMM_WORLD), MPI_ERR_TRUNCATE, "negative"));
    ON_MADMPI(pos = 0; CHECK_ERR(MPI_Pack(in, 1, v, NULL, 100, &pos, MPI_COMM_WORLD), MPI_ERR_ARG, "outbuf"));

    pos = 0;
    CHECK_ERR(MPI_Unpack(buf, 100, &pos, out, 1, v, MPI_COMM_NULL), MPI_ERR_COMM, "MPI_Unpack");
    CHECK_ERR(MPI_Unpack(buf, -1, &pos, out, -1, MPI_DATATYPE_NULL, MPI_COMM_WORLD), MPI_ERR_ARG, "MPI_Unpack");
    CHECK_ERR(MPI_Unpack(buf, 100, NULL, out, -1, MPI_DATATYPE_NULL, MPI_COMM_WORLD), MPI_ERR_ARG, "MPI_Unpack");
    CHECK_ERR(MPI_Unpack(buf, 100, &pos, out, -1, MPI_DATATYPE_NULL, MPI_COMM_WORLD), MPI_ERR_COUNT, "MPI_Unpack");
    CHECK_ERR(MPI_Unpack(buf, 100, &pos, NULL, 1, MPI_DATATYPE_NULL, MPI_COMM_WORLD), MPI_ERR_TYPE, "MPI_Unpack");
    CHECK_ERR(MPI_Unpack(buf, 100, &pos, NULL, 1, v, MPI_COMM_WORLD), MPI_ERR_ARG, "MPI_Unpack");
    CHECK_ERR(MPI_Unpack(buf, 100, &pos, out, 1, u, MPI_COMM_WORLD), MPI_ERR_TYPE, "MPI_Unpack");
    CHECK(MPI_Unpack(NULL, 0, &pos, out, 0, v, MPI_COMM_WORLD) == MPI_SUCCESS && pos == 0, "MPI_Unpack of nothing");
    ON_MADMPI(CHECK_ERR(MPI_Unpack(buf, 7, &pos, out, 1, v, MPI_COMM_WORLD), MPI_ERR_TRUNCATE, "MPI_Unpack"));
    ON_MADMPI(CHECK_ERR(MPI_Unpack(NULL, 100, &pos, out, 1, v, MPI_COMM_WORLD), MPI_ERR_ARG, "inbuf"));
    ON_MADMPI(pos = 200; CHECK_ERR(MPI_Unpack(buf, 100, &pos, out, 1, v, MPI_COMM_WORLD), MPI_ERR_TRUNCATE, "MPI_Unpack"));

    CHECK_ERR(MPI_Pack_size(1, v, MPI_COMM_NULL, &sz), MPI_ERR_COMM, "MPI_Pack_size");
    CHECK_ERR(MPI_Pack_size(-1, MPI_DATATYPE_NULL, MPI_COMM_WORLD, NULL), MPI_ERR_COUNT, "MPI_Pack_size");
    CHECK_ERR(MPI_Pack_size(1, MPI_DATATYPE_NULL, MPI_COMM_WORLD, NULL), MPI_ERR_TYPE, "MPI_Pack_size");
    CHECK_ERR(MPI_Pack_size(1, v, MPI_COMM_WORLD, NULL), MPI_ERR_ARG, "MPI_Pack_size");
    CHECK_ERR(MPI_Pack_size(1, u, MPI_COMM_WORLD, &sz), MPI_ERR_TYPE, "MPI_Pack_size");
    /* 4 GiB of data (never allocated): beyond an int. */
    MPI_Type_contiguous(1 << 20, MPI_CHAR, &big);
    MPI_Type_contiguous(1 << 12, big, &huge);
    MPI_Type_commit(&huge);
    CHECK(MPI_Pack_size(1, huge, MPI_COMM_WORLD, &sz) == MPI_SUCCESS && sz == MPI_UNDEFINED,
          "MPI_Pack_size beyond an int: MPI_UNDEFINED");
    CHECK(MPI_Type_size(huge, &sz) == MPI_SUCCESS && sz == MPI_UNDEFINED, "MPI_Type_size beyond an int: MPI_UNDEFINED");
    {
        MPI_Count c = -1;
        CHECK(MPI_Type_size_x(huge, &c) == MPI_SUCCESS && c == 4294967296LL, "MPI_Type_size_x: %lld", (long long)c);
    }

    /* The pack calls' errors go to the communicator's handler (MPI_COMM_WORLD's is fatal here). */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    CHECK_ERR(MPI_Pack(in, -1, v, buf, 100, &pos, MPI_COMM_SELF), MPI_ERR_COUNT, "MPI_Pack");
    CHECK_ERR(MPI_Unpack(buf, 100, &pos, out, 1, u, MPI_COMM_SELF), MPI_ERR_TYPE, "MPI_Unpack");
    CHECK_ERR(MPI_Pack_size(1, v, MPI_COMM_SELF, NULL), MPI_ERR_ARG, "MPI_Pack_size");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Type_free(&big);
    MPI_Type_free(&huge);
    MPI_Type_free(&v);
    MPI_Type_free(&u);
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

    packing(rank, 1 - rank);
    counts(rank, 1 - rank);
    errors();

    CHECK(MPI_Finalize() == MPI_SUCCESS, "MPI_Finalize");
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
