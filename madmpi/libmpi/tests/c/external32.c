/* MPI_Pack_external, MPI_Unpack_external and MPI_Pack_external_size ("external32"), with their
 * _c forms: every predefined C type packed from known values, its bytes printed as
 * "X32 <type> <hex>" lines (the test compares them with the bytes MPICH's own library writes
 * for the same program), unpacked back and compared; a derived type; external32 sent between
 * the ranks as MPI_BYTE; the error paths. Run with 2 processes (or 1 on MPICH's library).
 *
 * MPICH 4.0.2 aborts on MPI_WCHAR and on the pair types (an assertion in its external32
 * code): those are packed on MadMPI's library only, as the standard says (wchar_t in 2 bytes,
 * a pair as its two members), and dies of an illegal instruction on derived types: those run
 * on MadMPI's library only. MPICH also truncates a long beyond 32 bits where MadMPI reports
 * MPI_ERR_CONVERSION. */
#include "types.h"
#include <complex.h>
#include <stdbool.h>
#include <stdint.h>
#include <wchar.h>

static int rank;

/* Packs `n` elements of `t` at `data`, prints the bytes, checks the size, unpacks them into
 * `back` and compares `cmp` bytes (the significant ones) with the data. */
static void round_trip(const char *name, MPI_Datatype t, const void *data, int n, void *back, size_t cmp,
                       MPI_Aint size)
{
    unsigned char out[256];
    MPI_Aint pos = 0, sz = -1, at = 0;
    MPI_Count csz = -1;
    CHECK(MPI_Pack_external_size("external32", n, t, &sz) == MPI_SUCCESS && sz == size,
          "MPI_Pack_external_size(%s) = %ld", name, (long)sz);
    CHECK(MPI_Pack_external_size_c("external32", n, t, &csz) == MPI_SUCCESS && csz == size,
          "MPI_Pack_external_size_c(%s) = %lld", name, (long long)csz);
    CHECK(MPI_Pack_external("external32", data, n, t, out, sizeof out, &pos) == MPI_SUCCESS && pos == size,
          "MPI_Pack_external(%s): position %ld", name, (long)pos);
    if (rank == 0) {
        printf("X32 %s", name);
        for (MPI_Aint i = 0; i < pos; i++)
            printf(" %02x", out[i]);
        printf("\n");
    }
    memset(back, 0, cmp);
    CHECK(MPI_Unpack_external("external32", out, pos, &at, back, n, t) == MPI_SUCCESS && at == pos &&
              memcmp(back, data, cmp) == 0,
          "MPI_Unpack_external(%s) gives the data back", name);
}

#define ROUND_TRIP(type, mpi, ...)                                                             \
    do {                                                                                       \
        type v_[] = {__VA_ARGS__}, b_[sizeof v_ / sizeof v_[0]];                               \
        int n_ = (int)(sizeof v_ / sizeof v_[0]);                                              \
        MPI_Aint e_ = -1;                                                                      \
        MPI_Pack_external_size("external32", 1, mpi, &e_);                                     \
        round_trip(#mpi, mpi, v_, n_, b_, sizeof v_, e_ * n_);                                 \
    } while (0)

/* External32 sizes (MPI 4.0, Table 14.2), then every type's bytes. */
static void every_type(void)
{
    static const struct {
        MPI_Datatype t;
        MPI_Aint size;
        const char *name;
    } sizes[] = {
        {MPI_CHAR, 1, "MPI_CHAR"},       {MPI_SHORT, 2, "MPI_SHORT"},
        {MPI_INT, 4, "MPI_INT"},         {MPI_LONG, 4, "MPI_LONG"},
        {MPI_UNSIGNED_LONG, 4, "MPI_UNSIGNED_LONG"},
        {MPI_LONG_LONG, 8, "MPI_LONG_LONG"},
        {MPI_FLOAT, 4, "MPI_FLOAT"},     {MPI_DOUBLE, 8, "MPI_DOUBLE"},
        {MPI_LONG_DOUBLE, 16, "MPI_LONG_DOUBLE"},
        {MPI_C_BOOL, 1, "MPI_C_BOOL"},   {MPI_AINT, 8, "MPI_AINT"},
        {MPI_OFFSET, 8, "MPI_OFFSET"},   {MPI_COUNT, 8, "MPI_COUNT"},
        {MPI_C_LONG_DOUBLE_COMPLEX, 32, "MPI_C_LONG_DOUBLE_COMPLEX"},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        MPI_Aint sz = -1;
        MPI_Pack_external_size("external32", 3, sizes[i].t, &sz);
        CHECK(sz == 3 * sizes[i].size, "3 x %s take %ld bytes in external32", sizes[i].name, (long)sz);
    }

    ROUND_TRIP(char, MPI_CHAR, 'A', 'z');
    ROUND_TRIP(signed char, MPI_SIGNED_CHAR, -2, 100);
    ROUND_TRIP(unsigned char, MPI_UNSIGNED_CHAR, 200, 1);
    ROUND_TRIP(unsigned char, MPI_BYTE, 0xc8, 0x01);
    ROUND_TRIP(short, MPI_SHORT, -3, 0x0102);
    ROUND_TRIP(unsigned short, MPI_UNSIGNED_SHORT, 65000, 7);
    ROUND_TRIP(int, MPI_INT, 0x01020304, -1);
    ROUND_TRIP(unsigned, MPI_UNSIGNED, 0xdeadbeef, 5);
    ROUND_TRIP(long, MPI_LONG, -5, 0x7fffffff);
    ROUND_TRIP(unsigned long, MPI_UNSIGNED_LONG, 6, 0xffffffff);
    ROUND_TRIP(long long, MPI_LONG_LONG, 0x0102030405060708LL, -9);
    ROUND_TRIP(unsigned long long, MPI_UNSIGNED_LONG_LONG, 9, 0xfedcba9876543210ULL);
    ROUND_TRIP(float, MPI_FLOAT, 1.5f, -0.1f);
    ROUND_TRIP(double, MPI_DOUBLE, -2.25, 1e300);
    ROUND_TRIP(int8_t, MPI_INT8_T, -1, 5);
    ROUND_TRIP(int16_t, MPI_INT16_T, 0x0102, -300);
    ROUND_TRIP(int32_t, MPI_INT32_T, 0x01020304, -70000);
    ROUND_TRIP(int64_t, MPI_INT64_T, 0x0102030405060708LL, -1);
    ROUND_TRIP(uint8_t, MPI_UINT8_T, 250, 3);
    ROUND_TRIP(uint16_t, MPI_UINT16_T, 0xfffe, 9);
    ROUND_TRIP(uint32_t, MPI_UINT32_T, 7, 0x80000000u);
    ROUND_TRIP(uint64_t, MPI_UINT64_T, 8, 0x8000000000000001ULL);
    ROUND_TRIP(bool, MPI_C_BOOL, true, false);
    ROUND_TRIP(float complex, MPI_C_FLOAT_COMPLEX, 1.0f + 2.0f * I, -0.5f);
    ROUND_TRIP(double complex, MPI_C_DOUBLE_COMPLEX, 3.0 + 4.0 * I, -1e-300 * I);
    ROUND_TRIP(MPI_Aint, MPI_AINT, -7, 1L << 40);
    ROUND_TRIP(MPI_Offset, MPI_OFFSET, 8, -(1LL << 50));
    ROUND_TRIP(MPI_Count, MPI_COUNT, 9, 1LL << 33);
    ROUND_TRIP(unsigned char, MPI_PACKED, 0xc8, 0);

    /* long double: an IEEE binary128 in external32; the 6 padding bytes of the x87 value are
     * not data, so only the 10 significant bytes are compared after the round trip. */
    {
        long double v[3] = {3.0L, -2.5e-4000L, 1.0L / 3.0L}, b[3];
        unsigned char out[48];
        MPI_Aint pos = 0, at = 0;
        int same = 1;
        CHECK(MPI_Pack_external("external32", v, 3, MPI_LONG_DOUBLE, out, sizeof out, &pos) == MPI_SUCCESS &&
                  pos == 48,
              "MPI_Pack_external of 3 long doubles: %ld bytes", (long)pos);
        if (rank == 0) {
            printf("X32 MPI_LONG_DOUBLE");
            for (int i = 0; i < 48; i++)
                printf(" %02x", out[i]);
            printf("\n");
        }
        MPI_Unpack_external("external32", out, pos, &at, b, 3, MPI_LONG_DOUBLE);
        for (int i = 0; i < 3; i++)
            same &= b[i] == v[i];
        CHECK(same && at == 48, "long doubles come back exactly from binary128");
        CHECK(out[0] == 0x40 && out[1] == 0x00 && out[2] == 0x80 && out[3] == 0,
              "3.0L is 40 00 80 00 ... in binary128");
    }
    {
        long double complex v[2] = {5.0L + 6.0L * I, -1.0L}, b[2];
        unsigned char out[64];
        MPI_Aint pos = 0, at = 0;
        CHECK(MPI_Pack_external("external32", v, 2, MPI_C_LONG_DOUBLE_COMPLEX, out, sizeof out, &pos) ==
                      MPI_SUCCESS &&
                  pos == 64,
              "MPI_Pack_external of 2 long double complexes: %ld bytes", (long)pos);
        if (rank == 0) {
            printf("X32 MPI_C_LONG_DOUBLE_COMPLEX");
            for (int i = 0; i < 64; i++)
                printf(" %02x", out[i]);
            printf("\n");
        }
        MPI_Unpack_external("external32", out, pos, &at, b, 2, MPI_C_LONG_DOUBLE_COMPLEX);
        CHECK(b[0] == v[0] && b[1] == v[1] && at == 64, "long double complexes come back");
    }

    /* Where MPICH 4.0.2 aborts: wchar_t in 2 bytes, pairs as their members. */
    ON_MADMPI({
        ROUND_TRIP(wchar_t, MPI_WCHAR, L'Z', 0x20ac);
        struct {
            float f;
            int i;
        } fi[1] = {{1.5f, -2}}, fib[1];
        round_trip("MPI_FLOAT_INT", MPI_FLOAT_INT, fi, 1, fib, sizeof fi, 8);
        struct {
            long l;
            int i;
        } li[1] = {{-3, 4}}, lib[1];
        round_trip("MPI_LONG_INT", MPI_LONG_INT, li, 1, lib, 12, 8);
        int ii[2] = {5, -6}, iib[2];
        round_trip("MPI_2INT", MPI_2INT, ii, 1, iib, sizeof ii, 8);
        struct {
            short s;
            int i;
        } si[1] = {{-7, 8}}, sib[1];
        round_trip("MPI_SHORT_INT", MPI_SHORT_INT, si, 1, sib, 2, 6);
        MPI_Aint sz = -1;
        MPI_Pack_external_size("external32", 1, MPI_LONG_DOUBLE_INT, &sz);
        CHECK(sz == 20, "MPI_LONG_DOUBLE_INT is 16 + 4 bytes in external32");
        wchar_t big = 0x1f600; /* beyond 16 bits */
        unsigned char o[4];
        MPI_Aint p = 0;
        CHECK_ERR(MPI_Pack_external("external32", &big, 1, MPI_WCHAR, o, 4, &p), MPI_ERR_CONVERSION, "external32");
        long wide = 1L << 40;
        p = 0;
        CHECK_ERR(MPI_Pack_external("external32", &wide, 1, MPI_LONG, o, 4, &p), MPI_ERR_CONVERSION, "external32");
        CHECK(p == 0, "a failed conversion leaves the position");
    });
}

/* A struct with holes, 2 elements, through external32 and back; then sent as bytes. */
static void derived(int peer)
{
    struct rec {
        short s;
        double d;
        int i[2];
    } r[2] = {{-1, 0.5, {1, 2}}, {300, -8.0, {-3, 0x01020304}}}, back[2];
    int bl[3] = {1, 1, 2};
    MPI_Aint d[3] = {0, 8, 16};
    MPI_Datatype ty[3] = {MPI_SHORT, MPI_DOUBLE, MPI_INT}, t;
    unsigned char out[64], in[64];
    MPI_Aint pos = 0, at = 0, sz = -1;
    MPI_Count cpos = 0;

    MPI_Type_create_struct(3, bl, d, ty, &t);
    MPI_Type_commit(&t);
    CHECK(MPI_Pack_external_size("external32", 2, t, &sz) == MPI_SUCCESS && sz == 36,
          "a struct {short; double; int[2]} is 18 bytes in external32, no padding: %ld", (long)sz);
    CHECK(MPI_Pack_external("external32", r, 2, t, out, sizeof out, &pos) == MPI_SUCCESS && pos == 36,
          "MPI_Pack_external of 2 structs");
    CHECK(out[0] == 0xff && out[1] == 0xff && out[2] == 0x3f && out[3] == 0xe0 && out[10] == 0 &&
              out[13] == 1 && out[18] == 0x01 && out[19] == 0x2c,
          "the members are big-endian, one after the other");
    if (rank == 0) {
        printf("X32 struct");
        for (int i = 0; i < 36; i++)
            printf(" %02x", out[i]);
        printf("\n");
    }
    memset(back, 0, sizeof back);
    CHECK(MPI_Unpack_external("external32", out, pos, &at, back, 2, t) == MPI_SUCCESS && at == 36 &&
              back[1].s == 300 && back[1].d == -8.0 && back[1].i[1] == 0x01020304 && back[0].i[0] == 1,
          "MPI_Unpack_external of 2 structs");
    /* The _c forms, at an offset. */
    CHECK(MPI_Pack_external_c("external32", r, 1, t, out, 64, &(MPI_Count){0}) == MPI_SUCCESS,
          "MPI_Pack_external_c");
    cpos = 0;
    CHECK(MPI_Pack_external_c("external32", r, 2, t, out + 4, 60, &cpos) == MPI_SUCCESS && cpos == 36,
          "MPI_Pack_external_c of 2 structs: position %lld", (long long)cpos);
    cpos = 0;
    memset(back, 0, sizeof back);
    CHECK(MPI_Unpack_external_c("external32", out + 4, 36, &cpos, back, 2, t) == MPI_SUCCESS && cpos == 36 &&
              back[1].i[1] == 0x01020304,
          "MPI_Unpack_external_c");

    /* Portable bytes travel as MPI_BYTE. */
    if (peer >= 0) {
        MPI_Sendrecv(out + 4, 36, MPI_BYTE, peer, 5, in, 36, MPI_BYTE, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        at = 0;
        memset(back, 0, sizeof back);
        MPI_Unpack_external("external32", in, 36, &at, back, 2, t);
        CHECK(back[0].s == -1 && back[1].d == -8.0 && back[1].i[0] == -3, "external32 from the peer unpacks");
    }
    MPI_Type_free(&t);
}

static void errors(void)
{
    int v = 1;
    unsigned char out[8];
    MPI_Aint pos = 0, sz;
    MPI_Datatype uncommitted;
    MPI_Type_contiguous(2, MPI_INT, &uncommitted);
    CHECK_ERR(MPI_Pack_external("external32", &v, -1, MPI_INT, out, 8, &pos), MPI_ERR_COUNT, "count");
    CHECK_ERR(MPI_Pack_external_size("external32", 1, MPI_DATATYPE_NULL, &sz), MPI_ERR_TYPE, "datatype");
    /* MPICH 4.0.2 writes past the end of a buffer too small (it checks nothing). */
    ON_MADMPI({
        CHECK_ERR(MPI_Pack_external("external32", &v, 1, MPI_INT, out, 2, &pos), MPI_ERR_TRUNCATE, "fit");
        CHECK(pos == 0, "nothing packed when it does not fit");
        CHECK_ERR(MPI_Pack_external(NULL, &v, 1, MPI_INT, out, 8, &pos), MPI_ERR_ARG, "datarep");
        CHECK_ERR(MPI_Pack_external("external32", &v, 1, uncommitted, out, 8, &pos), MPI_ERR_TYPE, "commit");
        pos = 6;
        CHECK_ERR(MPI_Unpack_external("external32", out, 8, &pos, &v, 1, MPI_INT), MPI_ERR_TRUNCATE, "position");
        pos = -1;
        CHECK_ERR(MPI_Pack_external("external32", &v, 1, MPI_INT, out, 8, &pos), MPI_ERR_TRUNCATE, "position");
    });
    MPI_Type_free(&uncommitted);
}

int main(int argc, char **argv)
{
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    every_type();
    /* MPICH 4.0.2 dies of an illegal instruction in MPI_Pack_external_size of a struct type. */
    if (on_madmpi())
        derived(size == 2 ? 1 - rank : -1);
    errors();

    CHECK(MPI_Finalize() == MPI_SUCCESS, "MPI_Finalize");
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
