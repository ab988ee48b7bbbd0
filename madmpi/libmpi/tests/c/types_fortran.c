/* MPICH's Fortran named datatypes used from C (what libmpichfort does): names, sizes, extents,
 * envelopes, external32 sizes, a send/recv, an allreduce per type class and MINLOC on
 * MPI_2DOUBLE_PRECISION. Run with 2 processes; also passes on MPICH's library. */
#include "types.h"
#include <complex.h>
#include <stdio.h>
#include <string.h>

static int rank, size;

struct named {
    MPI_Datatype t;
    const char *name;
    int size;
    MPI_Aint extent;
    MPI_Aint x32;
};

static const struct named NAMED[] = {
    {MPI_CHARACTER, "MPI_CHARACTER", 1, 1, 1},
    {MPI_LOGICAL, "MPI_LOGICAL", 4, 4, 4},
    {MPI_INTEGER, "MPI_INTEGER", 4, 4, 4},
    {MPI_REAL, "MPI_REAL", 4, 4, 4},
    {MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION", 8, 8, 8},
    {MPI_COMPLEX, "MPI_COMPLEX", 8, 8, 8},
    {MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX", 16, 16, 16},
    {MPI_2INTEGER, "MPI_2INTEGER", 8, 8, 8},
    {MPI_2REAL, "MPI_2REAL", 8, 8, 8},
    {MPI_2DOUBLE_PRECISION, "MPI_2DOUBLE_PRECISION", 16, 16, 16},
    {MPI_INTEGER1, "MPI_INTEGER1", 1, 1, 1},
    {MPI_INTEGER2, "MPI_INTEGER2", 2, 2, 2},
    {MPI_INTEGER4, "MPI_INTEGER4", 4, 4, 4},
    {MPI_INTEGER8, "MPI_INTEGER8", 8, 8, 8},
    {MPI_REAL4, "MPI_REAL4", 4, 4, 4},
    {MPI_REAL8, "MPI_REAL8", 8, 8, 8},
    {MPI_REAL16, "MPI_REAL16", 16, 16, 16},
    {MPI_COMPLEX8, "MPI_COMPLEX8", 8, 8, 8},
    {MPI_COMPLEX16, "MPI_COMPLEX16", 16, 16, 16},
    {MPI_COMPLEX32, "MPI_COMPLEX32", 32, 32, 32},
};

static void attributes(void)
{
    for (size_t i = 0; i < sizeof NAMED / sizeof NAMED[0]; i++) {
        const struct named *n = &NAMED[i];
        char name[MPI_MAX_OBJECT_NAME];
        int len = -1, ni, na, nd, comb = -1;
        MPI_Aint x32 = -1;
        CHECK_BOUNDS(n->t, n->size, 0, n->extent, 0, n->extent);
        CHECK(MPI_Type_get_name(n->t, name, &len) == MPI_SUCCESS && strcmp(name, n->name) == 0 &&
                  len == (int)strlen(n->name),
              "%s is named %s", n->name, name);
        CHECK(MPI_Type_get_envelope(n->t, &ni, &na, &nd, &comb) == MPI_SUCCESS && comb == MPI_COMBINER_NAMED &&
                  ni == 0 && na == 0 && nd == 0,
              "%s: combiner %d", n->name, comb);
        /* MPICH 4.0.2 answers 0 for the Fortran pair types (its external32 table lacks them); the
         * standard's table gives two elements of the member type. */
        int pair = n->t == MPI_2INTEGER || n->t == MPI_2REAL || n->t == MPI_2DOUBLE_PRECISION;
        if (!pair || on_madmpi())
            CHECK(MPI_Pack_external_size("external32", 1, n->t, &x32) == MPI_SUCCESS && x32 == n->x32,
                  "%s: external32 size %ld", n->name, (long)x32);
    }
}

static void send_recv_pack(void)
{
    int peer = 1 - rank, iv[3] = {rank, 10 + rank, -rank}, ir[3] = {0, 0, 0};
    double dv[2] = {0.5 + rank, -2.0 * rank}, dr[2] = {0, 0};
    MPI_Status st;
    int count = -1;
    MPI_Sendrecv(iv, 3, MPI_INTEGER, peer, 1, ir, 3, MPI_INTEGER, peer, 1, MPI_COMM_WORLD, &st);
    CHECK(ir[0] == peer && ir[1] == 10 + peer && ir[2] == -peer && MPI_Get_count(&st, MPI_INTEGER, &count) == 0 &&
              count == 3,
          "MPI_INTEGER sent and received: %d %d %d (count %d)", ir[0], ir[1], ir[2], count);
    MPI_Sendrecv(dv, 2, MPI_DOUBLE_PRECISION, peer, 2, dr, 2, MPI_DOUBLE_PRECISION, peer, 2, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    CHECK(dr[0] == 0.5 + peer && dr[1] == -2.0 * peer, "MPI_DOUBLE_PRECISION: %g %g", dr[0], dr[1]);

    /* pack/unpack of a REAL8 pair */
    char buf[64];
    int pos = 0;
    double back[2] = {0, 0};
    CHECK(MPI_Pack(dv, 2, MPI_REAL8, buf, sizeof buf, &pos, MPI_COMM_WORLD) == MPI_SUCCESS && pos == 16,
          "MPI_Pack of 2 MPI_REAL8: %d bytes", pos);
    pos = 0;
    MPI_Unpack(buf, sizeof buf, &pos, back, 2, MPI_REAL8, MPI_COMM_WORLD);
    CHECK(back[0] == dv[0] && back[1] == dv[1], "MPI_Unpack of MPI_REAL8");

    /* external32: big-endian INTEGER and INTEGER2, and back */
    int in[2] = {0x01020304, 0}, out[2] = {0, 0};
    short s2 = 0x0506, s2b = 0;
    unsigned char x[8];
    MPI_Aint xp = 0;
    CHECK(MPI_Pack_external("external32", in, 1, MPI_INTEGER, x, sizeof x, &xp) == MPI_SUCCESS &&
              MPI_Pack_external("external32", &s2, 1, MPI_INTEGER2, x, sizeof x, &xp) == MPI_SUCCESS && xp == 6 &&
              x[0] == 1 && x[1] == 2 && x[2] == 3 && x[3] == 4 && x[4] == 5 && x[5] == 6,
          "MPI_Pack_external of MPI_INTEGER, MPI_INTEGER2: %ld bytes", (long)xp);
    xp = 0;
    MPI_Unpack_external("external32", x, sizeof x, &xp, out, 1, MPI_INTEGER);
    MPI_Unpack_external("external32", x, sizeof x, &xp, &s2b, 1, MPI_INTEGER2);
    CHECK(out[0] == in[0] && s2b == s2, "MPI_Unpack_external of MPI_INTEGER, MPI_INTEGER2");
}

static void reductions(void)
{
    int n = size, i = rank + 1, isum = 0, land = -1, lor = -1, lxor = -1, t = (rank == 0);
    long long b = 0xf0 | (1LL << (40 + rank)), band = 0, bor = 0;
    float r = (float)rank * 1.5f, rmax = -1;
    double d = rank + 0.25, dprod = 0;
    double complex z = rank + 1.0 * I, zsum = 0;
    struct {
        double v, loc;
    } pair = {rank == 1 ? -5.0 : 3.0, 100.0 + rank}, min = {0, 0};

    MPI_Allreduce(&i, &isum, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD);
    CHECK(isum == n * (n + 1) / 2, "SUM on MPI_INTEGER: %d", isum);
    MPI_Allreduce(&b, &band, 1, MPI_INTEGER8, MPI_BAND, MPI_COMM_WORLD);
    MPI_Allreduce(&b, &bor, 1, MPI_INTEGER8, MPI_BOR, MPI_COMM_WORLD);
    CHECK(band == 0xf0 && bor == (0xf0 | (1LL << 40) | (1LL << 41)), "BAND/BOR on MPI_INTEGER8: %llx %llx",
          band, bor);
    MPI_Allreduce(&r, &rmax, 1, MPI_REAL, MPI_MAX, MPI_COMM_WORLD);
    CHECK(rmax == (float)(n - 1) * 1.5f, "MAX on MPI_REAL: %g", rmax);
    MPI_Allreduce(&d, &dprod, 1, MPI_DOUBLE_PRECISION, MPI_PROD, MPI_COMM_WORLD);
    CHECK(dprod == 0.25 * 1.25, "PROD on MPI_DOUBLE_PRECISION: %g", dprod);
    MPI_Allreduce(&z, &zsum, 1, MPI_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD);
    CHECK(creal(zsum) == 1.0 && cimag(zsum) == 2.0, "SUM on MPI_DOUBLE_COMPLEX: %g%+gi", creal(zsum),
          cimag(zsum));
    /* Fortran .TRUE. is 1 (gfortran, MPICH): only rank 0 holds it. */
    MPI_Allreduce(&t, &land, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD);
    MPI_Allreduce(&t, &lor, 1, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD);
    MPI_Allreduce(&t, &lxor, 1, MPI_LOGICAL, MPI_LXOR, MPI_COMM_WORLD);
    CHECK(land == 0 && lor == 1 && lxor == 1, "LAND/LOR/LXOR on MPI_LOGICAL: %d %d %d", land, lor, lxor);
    MPI_Allreduce(&pair, &min, 1, MPI_2DOUBLE_PRECISION, MPI_MINLOC, MPI_COMM_WORLD);
    CHECK(min.v == -5.0 && min.loc == 101.0, "MINLOC on MPI_2DOUBLE_PRECISION: %g at %g", min.v, min.loc);
    CHECK_ERR(MPI_Allreduce(&z, &zsum, 1, MPI_DOUBLE_COMPLEX, MPI_MAX, MPI_COMM_WORLD), MPI_ERR_OP,
              "MPI_MAX");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    attributes();
    send_recv_pack();
    reductions();
    CHECK(MPI_Finalize() == MPI_SUCCESS, "MPI_Finalize");
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
