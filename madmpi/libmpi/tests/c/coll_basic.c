/* Collectives and reduction operations: MPI_Barrier, MPI_Bcast, MPI_Reduce, MPI_Allreduce,
 * their nonblocking forms (several in flight at once), MPI_IN_PLACE, a derived (vector)
 * datatype, every predefined operation on int, double, unsigned char and MPI_2INT, a
 * non-commutative user operation (rank order kept), MPI_Reduce_local, MPI_Op_create / free /
 * commutative, and the argument errors under MPI_ERRORS_RETURN. Every result is compared with
 * a reference computed locally from what each rank contributes. Runs with any number of
 * processes; built against madmpi's mpi.h and MPICH's by tests/c_programs.rs. */
#include "check.h"

static int rank, size;

/* ---------------------------------------------------------------- contributions */

static int ival(int r, int i) { return (r * 7 + i * 3) % 11 - 5; }
static int ipos(int r, int i) { return (r + i) % 2 + 1; } /* 1 or 2: products stay small */
static int ibool(int r, int i) { return (r + i) % 3 == 0; }
static double dval(int r, int i) { return (double)((r * 5 + i) % 9) - 4.0; }
/* Values of 128 and above only on MadMPI: MPICH 4.0.2 (Debian) compares MPI_UNSIGNED_CHAR as
 * signed in MPI_MAX and MPI_MIN (91 MAX 128 gives 91). */
static int uchar_full = 1;
static unsigned char uval(int r, int i) { return (unsigned char)((r * 37 + i * 11 + 3) & (uchar_full ? 0xff : 0x7f)); }
static int pval(int r, int i) { return (r * 5 + i) % 3; } /* ties for MAXLOC/MINLOC */

typedef struct {
    MPI_Op op;
    const char *name;
} NamedOp;

static long long combine_ll(MPI_Op op, long long a, long long b)
{
    if (op == MPI_MAX) return a > b ? a : b;
    if (op == MPI_MIN) return a < b ? a : b;
    if (op == MPI_SUM) return a + b;
    if (op == MPI_PROD) return a * b;
    if (op == MPI_LAND) return (a != 0) && (b != 0);
    if (op == MPI_LOR) return (a != 0) || (b != 0);
    if (op == MPI_LXOR) return (a != 0) != (b != 0);
    if (op == MPI_BAND) return a & b;
    if (op == MPI_BOR) return a | b;
    if (op == MPI_BXOR) return a ^ b;
    abort();
}

static int int_input(MPI_Op op, int r, int i)
{
    if (op == MPI_PROD) return ipos(r, i);
    if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR) return ibool(r, i) ? ival(r, i) | 1 : 0;
    return ival(r, i);
}

static int int_ref(MPI_Op op, int i)
{
    long long acc = int_input(op, 0, i);
    for (int r = 1; r < size; r++)
        acc = combine_ll(op, acc, int_input(op, r, i));
    return (int)acc;
}

/* ---------------------------------------------------------------- barrier and broadcast */

static void barrier_and_bcast(void)
{
    MPI_Request req;
    static const int counts[] = {0, 1, 7, 1000, 100000};

    CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Barrier");
    CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &req) == MPI_SUCCESS &&
              MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS && req == MPI_REQUEST_NULL,
          "MPI_Ibarrier + MPI_Wait");
    CHECK(MPI_Barrier(MPI_COMM_SELF) == MPI_SUCCESS, "MPI_Barrier(MPI_COMM_SELF)");

    for (unsigned k = 0; k < sizeof counts / sizeof *counts; k++) {
        int n = counts[k];
        int *b = malloc((n + 1) * sizeof(int));
        for (int root = 0; root < size; root++) {
            for (int nb = 0; nb < 2; nb++) {
                int ok = 1;
                for (int i = 0; i < n; i++)
                    b[i] = rank == root ? i * 3 + root : -1;
                b[n] = -99;
                if (nb) {
                    CHECK(MPI_Ibcast(b, n, MPI_INT, root, MPI_COMM_WORLD, &req) == MPI_SUCCESS,
                          "MPI_Ibcast");
                    CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Wait(Ibcast)");
                } else {
                    CHECK(MPI_Bcast(b, n, MPI_INT, root, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Bcast");
                }
                for (int i = 0; i < n; i++)
                    ok &= b[i] == i * 3 + root;
                CHECK(ok && b[n] == -99, "%s of %d ints from root %d", nb ? "MPI_Ibcast" : "MPI_Bcast",
                      n, root);
            }
        }
        free(b);
    }
    {
        double d[3] = {0};
        if (rank == 0)
            d[0] = 1.5, d[1] = -2.25, d[2] = 1e300;
        CHECK(MPI_Bcast(d, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD) == MPI_SUCCESS && d[0] == 1.5 &&
                  d[1] == -2.25 && d[2] == 1e300,
              "MPI_Bcast of doubles");
    }
}

/* ---------------------------------------------------------------- predefined operations */

static void int_ops(void)
{
    static const NamedOp ops[] = {{MPI_MAX, "MPI_MAX"},   {MPI_MIN, "MPI_MIN"},   {MPI_SUM, "MPI_SUM"},
                                  {MPI_PROD, "MPI_PROD"}, {MPI_LAND, "MPI_LAND"}, {MPI_LOR, "MPI_LOR"},
                                  {MPI_LXOR, "MPI_LXOR"}, {MPI_BAND, "MPI_BAND"}, {MPI_BOR, "MPI_BOR"},
                                  {MPI_BXOR, "MPI_BXOR"}};
    enum { N = 300 };
    int in[N], out[N];
    for (unsigned k = 0; k < sizeof ops / sizeof *ops; k++) {
        MPI_Op op = ops[k].op;
        int root = (int)k % size, ok = 1;
        for (int i = 0; i < N; i++)
            in[i] = int_input(op, rank, i), out[i] = -12345;
        CHECK(MPI_Reduce(in, out, N, MPI_INT, op, root, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Reduce");
        for (int i = 0; i < N; i++)
            ok &= rank == root ? out[i] == int_ref(op, i) : out[i] == -12345;
        CHECK(ok, "MPI_Reduce %s on MPI_INT to root %d", ops[k].name, root);
        ok = 1;
        CHECK(MPI_Allreduce(in, out, N, MPI_INT, op, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Allreduce");
        for (int i = 0; i < N; i++)
            ok &= out[i] == int_ref(op, i);
        CHECK(ok, "MPI_Allreduce %s on MPI_INT", ops[k].name);
    }
}

static void double_ops(void)
{
    static const NamedOp ops[] = {
        {MPI_MAX, "MPI_MAX"}, {MPI_MIN, "MPI_MIN"}, {MPI_SUM, "MPI_SUM"}, {MPI_PROD, "MPI_PROD"}};
    enum { N = 5000 };
    static double in[N], out[N];
    for (unsigned k = 0; k < sizeof ops / sizeof *ops; k++) {
        MPI_Op op = ops[k].op;
        int ok = 1;
        for (int i = 0; i < N; i++)
            in[i] = op == MPI_PROD ? (double)ipos(rank, i) * 0.5 : dval(rank, i);
        CHECK(MPI_Allreduce(in, out, N, MPI_DOUBLE, op, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Allreduce");
        for (int i = 0; i < N; i++) {
            double ref = op == MPI_PROD ? (double)ipos(0, i) * 0.5 : dval(0, i);
            for (int r = 1; r < size; r++) {
                double v = op == MPI_PROD ? (double)ipos(r, i) * 0.5 : dval(r, i);
                ref = op == MPI_MAX ? (v > ref ? v : ref)
                    : op == MPI_MIN ? (v < ref ? v : ref)
                    : op == MPI_SUM ? ref + v
                                    : ref * v;
            }
            ok &= out[i] == ref;
        }
        CHECK(ok, "MPI_Allreduce %s on MPI_DOUBLE (%d elements)", ops[k].name, N);
    }
}

static void uchar_ops(void)
{
    static const NamedOp ops[] = {{MPI_BAND, "MPI_BAND"}, {MPI_BOR, "MPI_BOR"}, {MPI_BXOR, "MPI_BXOR"},
                                  {MPI_MAX, "MPI_MAX"},   {MPI_MIN, "MPI_MIN"}, {MPI_SUM, "MPI_SUM"}};
    enum { N = 77 };
    unsigned char in[N], out[N];
    for (unsigned k = 0; k < sizeof ops / sizeof *ops; k++) {
        MPI_Op op = ops[k].op;
        int ok = 1, root = size - 1;
        uchar_full = on_madmpi() || (op != MPI_MAX && op != MPI_MIN);
        for (int i = 0; i < N; i++)
            in[i] = uval(rank, i);
        CHECK(MPI_Reduce(in, out, N, MPI_UNSIGNED_CHAR, op, root, MPI_COMM_WORLD) == MPI_SUCCESS,
              "MPI_Reduce");
        if (rank == root)
            for (int i = 0; i < N; i++) {
                long long acc = uval(0, i);
                for (int r = 1; r < size; r++)
                    acc = combine_ll(op, acc, uval(r, i));
                ok &= out[i] == (unsigned char)acc;
            }
        CHECK(ok, "MPI_Reduce %s on MPI_UNSIGNED_CHAR", ops[k].name);
    }
}

static void loc_ops(void)
{
    enum { N = 40 };
    struct {
        int v, r;
    } in[N], out[N];
    for (int m = 0; m < 2; m++) {
        MPI_Op op = m ? MPI_MINLOC : MPI_MAXLOC;
        int ok = 1;
        for (int i = 0; i < N; i++)
            in[i].v = pval(rank, i), in[i].r = rank;
        CHECK(MPI_Allreduce(in, out, N, MPI_2INT, op, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Allreduce");
        for (int i = 0; i < N; i++) {
            int bv = pval(0, i), br = 0;
            for (int r = 1; r < size; r++)
                if (m ? pval(r, i) < bv : pval(r, i) > bv)
                    bv = pval(r, i), br = r; /* ties keep the lowest rank */
            ok &= out[i].v == bv && out[i].r == br;
        }
        CHECK(ok, "MPI_Allreduce %s on MPI_2INT (ties go to the lowest rank)", m ? "MPI_MINLOC" : "MPI_MAXLOC");
    }
}

/* ---------------------------------------------------------------- in place */

static void in_place(void)
{
    enum { N = 1000 };
    static int b[N];
    MPI_Request req;
    int ok = 1;
    /* MPICH 4.0.2 (Debian, ch4:ucx) crashes on MPI_Reduce(MPI_IN_PLACE) at a root other than 0. */
    for (int root = 0; root < (on_madmpi() ? size : 1); root++) {
        ok = 1;
        for (int i = 0; i < N; i++)
            b[i] = ival(rank, i);
        if (rank == root)
            CHECK(MPI_Reduce(MPI_IN_PLACE, b, N, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD) == MPI_SUCCESS,
                  "MPI_Reduce(MPI_IN_PLACE)");
        else
            CHECK(MPI_Reduce(b, NULL, N, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD) == MPI_SUCCESS,
                  "MPI_Reduce (no receive buffer off the root)");
        for (int i = 0; i < N; i++)
            ok &= b[i] == (rank == root ? int_ref(MPI_SUM, i) : ival(rank, i));
        CHECK(ok, "MPI_Reduce with MPI_IN_PLACE at root %d", root);
    }
    ok = 1;
    for (int i = 0; i < N; i++)
        b[i] = ival(rank, i);
    CHECK(MPI_Allreduce(MPI_IN_PLACE, b, N, MPI_INT, MPI_MAX, MPI_COMM_WORLD) == MPI_SUCCESS,
          "MPI_Allreduce(MPI_IN_PLACE)");
    for (int i = 0; i < N; i++)
        ok &= b[i] == int_ref(MPI_MAX, i);
    CHECK(ok, "MPI_Allreduce with MPI_IN_PLACE");
    ok = 1;
    for (int i = 0; i < N; i++)
        b[i] = ival(rank, i);
    CHECK(MPI_Iallreduce(MPI_IN_PLACE, b, N, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req) == MPI_SUCCESS &&
              MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS,
          "MPI_Iallreduce(MPI_IN_PLACE)");
    for (int i = 0; i < N; i++)
        ok &= b[i] == int_ref(MPI_MIN, i);
    CHECK(ok, "MPI_Iallreduce with MPI_IN_PLACE");
}

/* ---------------------------------------------------------------- user operations */

/* 2x2 matrices of unsigned ints (wrapping arithmetic: associative, not commutative). */
typedef struct {
    unsigned a, b, c, d;
} Mat;

static int user_calls;
static MPI_Datatype mat_type;

static void matmul(void *invec, void *inoutvec, int *len, MPI_Datatype *dt)
{
    Mat *x = invec, *y = inoutvec;
    user_calls++;
    if (*dt != mat_type)
        abort(); /* the handle the program passed */
    for (int i = 0; i < *len; i++) {
        Mat p = {x[i].a * y[i].a + x[i].b * y[i].c, x[i].a * y[i].b + x[i].b * y[i].d,
                 x[i].c * y[i].a + x[i].d * y[i].c, x[i].c * y[i].b + x[i].d * y[i].d};
        y[i] = p;
    }
}

static Mat mat(int r, int i)
{
    Mat m = {(unsigned)(r + 1 + i), 1u, 1u, (unsigned)(i % 3)};
    return m;
}

static Mat mat_ref(int i)
{
    Mat acc = mat(0, i);
    for (int r = 1; r < size; r++) {
        Mat y = mat(r, i);
        int one = 1;
        matmul(&acc, &y, &one, &mat_type); /* acc = acc * y: rank order */
        acc = y;
    }
    return acc;
}

static int mat_eq(Mat x, Mat y) { return x.a == y.a && x.b == y.b && x.c == y.c && x.d == y.d; }

static int in_vec(int i) { return (i % 11) % 3 != 2; } /* 4 blocks of 2, stride 3: 0,1,3,4,6,7,9,10 */

/* Sums ints, for a vector type (non-contiguous: the library unpacks for the function). */
static MPI_Datatype vec_type;
static MPI_Op vsum_op;
static void vsum(void *invec, void *inoutvec, int *len, MPI_Datatype *dt)
{
    int *x = invec, *y = inoutvec;
    if (*dt != vec_type)
        abort();
    /* vec_type: 4 blocks of 2 ints, stride 3, extent 11 ints */
    for (int e = 0; e < *len; e++)
        for (int k = 0; k < 4; k++)
            for (int j = 0; j < 2; j++)
                y[e * 11 + k * 3 + j] += x[e * 11 + k * 3 + j];
}

static void user_ops(void)
{
    enum { N = 50 };
    MPI_Op op, op2;
    Mat in[N], out[N];
    MPI_Request req;
    int commute = -1, ok;

    CHECK(MPI_Type_contiguous(4, MPI_UNSIGNED, &mat_type) == MPI_SUCCESS &&
              MPI_Type_commit(&mat_type) == MPI_SUCCESS,
          "a matrix type");
    CHECK(MPI_Op_create(matmul, 0, &op) == MPI_SUCCESS && op != MPI_OP_NULL, "MPI_Op_create");
    CHECK(MPI_Op_commutative(op, &commute) == MPI_SUCCESS && commute == 0, "MPI_Op_commutative: 0");
    CHECK(MPI_Op_commutative(MPI_SUM, &commute) == MPI_SUCCESS && commute == 1,
          "MPI_Op_commutative(MPI_SUM): 1");
    for (int i = 0; i < N; i++)
        in[i] = mat(rank, i);
    for (int root = 0; root < size; root++) {
        ok = 1;
        memset(out, 0, sizeof out);
        CHECK(MPI_Reduce(in, out, N, mat_type, op, root, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Reduce");
        if (rank == root)
            for (int i = 0; i < N; i++)
                ok &= mat_eq(out[i], mat_ref(i));
        CHECK(ok, "MPI_Reduce of a non-commutative user operation to root %d keeps rank order", root);
    }
    ok = 1;
    CHECK(MPI_Allreduce(in, out, N, mat_type, op, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Allreduce");
    for (int i = 0; i < N; i++)
        ok &= mat_eq(out[i], mat_ref(i));
    CHECK(ok, "MPI_Allreduce of a non-commutative user operation keeps rank order");
    ok = 1;
    memset(out, 0, sizeof out);
    CHECK(MPI_Ireduce(in, out, N, mat_type, op, 0, MPI_COMM_WORLD, &req) == MPI_SUCCESS &&
              MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS,
          "MPI_Ireduce");
    if (rank == 0)
        for (int i = 0; i < N; i++)
            ok &= mat_eq(out[i], mat_ref(i));
    CHECK(ok, "MPI_Ireduce of a non-commutative user operation");
    /* MPI_Reduce_local: inout = in op inout. */
    {
        Mat x[2] = {mat(1, 0), mat(1, 1)}, y[2] = {mat(2, 0), mat(2, 1)}, z[2];
        int two = 2;
        memcpy(z, y, sizeof y);
        user_calls = 0;
        CHECK(MPI_Reduce_local(x, y, 2, mat_type, op) == MPI_SUCCESS && user_calls == 1,
              "MPI_Reduce_local with a user operation calls it once");
        matmul(x, z, &two, &mat_type);
        CHECK(mat_eq(y[0], z[0]) && mat_eq(y[1], z[1]), "MPI_Reduce_local: inout = in op inout");
    }
    CHECK(MPI_Op_free(&op) == MPI_SUCCESS && op == MPI_OP_NULL, "MPI_Op_free");

    /* A user operation on a non-contiguous datatype. */
    op2 = vsum_op;
    {
        int a[22], b[22];
        for (int i = 0; i < 22; i++)
            a[i] = rank * 100 + i, b[i] = -7;
        CHECK(MPI_Allreduce(a, b, 2, vec_type, op2, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Allreduce");
        ok = 1;
        for (int i = 0; i < 22; i++) {
            ok &= in_vec(i) ? b[i] == 100 * size * (size - 1) / 2 + size * i : b[i] == -7;
        }
        CHECK(ok, "MPI_Allreduce of a user operation on a vector type (gaps untouched)");
    }
    MPI_Type_free(&mat_type);
}

/* ---------------------------------------------------------------- derived datatypes */

/* A vector type in collectives. Builtin operations on derived datatypes are a MadMPI extension
 * (MPICH 4.0.2 rejects them: "MPI_Op MPI_SUM operation not defined for this datatype"), so the
 * reductions use the user operation vsum everywhere and MPI_SUM on MadMPI too. */
static void derived(void)
{
    enum { E = 3, L = E * 11 };
    int b[L], s[L], r[L], ok;
    MPI_Request req;
    MPI_Op sums[2] = {vsum_op, MPI_SUM};
    int nsums = on_madmpi() ? 2 : 1;
    for (int root = 0; root < size; root++) {
        for (int nb = 0; nb < 2; nb++) {
            ok = 1;
            for (int i = 0; i < L; i++)
                b[i] = !in_vec(i) ? -7 : rank == root ? 1000 + i : -1;
            if (nb)
                CHECK(MPI_Ibcast(b, E, vec_type, root, MPI_COMM_WORLD, &req) == MPI_SUCCESS &&
                          MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS,
                      "MPI_Ibcast");
            else
                CHECK(MPI_Bcast(b, E, vec_type, root, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Bcast");
            for (int i = 0; i < L; i++)
                ok &= in_vec(i) ? b[i] == 1000 + i : b[i] == -7;
            CHECK(ok, "%s of a vector type from root %d (gaps untouched)", nb ? "MPI_Ibcast" : "MPI_Bcast",
                  root);
        }
        for (int k = 0; k < nsums; k++) {
            const char *name = k ? "MPI_SUM" : "a user operation";
            ok = 1;
            for (int i = 0; i < L; i++)
                s[i] = in_vec(i) ? rank + i : -3, r[i] = -7;
            CHECK(MPI_Reduce(s, r, E, vec_type, sums[k], root, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Reduce");
            for (int i = 0; i < L; i++)
                ok &= rank == root && in_vec(i) ? r[i] == size * (size - 1) / 2 + size * i : r[i] == -7;
            CHECK(ok, "MPI_Reduce of %s on a vector type to root %d (gaps untouched)", name, root);
            ok = 1;
            for (int i = 0; i < L; i++)
                r[i] = in_vec(i) ? rank + i : -7;
            if (rank == root)
                CHECK(MPI_Ireduce(MPI_IN_PLACE, r, E, vec_type, sums[k], root, MPI_COMM_WORLD, &req) ==
                          MPI_SUCCESS,
                      "MPI_Ireduce(MPI_IN_PLACE)");
            else
                CHECK(MPI_Ireduce(r, NULL, E, vec_type, sums[k], root, MPI_COMM_WORLD, &req) == MPI_SUCCESS,
                      "MPI_Ireduce");
            CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Wait(Ireduce)");
            for (int i = 0; i < L; i++)
                ok &= in_vec(i) ? r[i] == (rank == root ? size * (size - 1) / 2 + size * i : rank + i)
                                : r[i] == -7;
            CHECK(ok, "MPI_Ireduce of %s in place on a vector type at root %d", name, root);
        }
    }
    for (int k = 0; k < nsums; k++) {
        ok = 1;
        for (int i = 0; i < L; i++)
            s[i] = in_vec(i) ? rank * 2 + i : -3, r[i] = -7;
        CHECK(MPI_Iallreduce(s, r, E, vec_type, sums[k], MPI_COMM_WORLD, &req) == MPI_SUCCESS &&
                  MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS,
              "MPI_Iallreduce");
        for (int i = 0; i < L; i++)
            ok &= in_vec(i) ? r[i] == size * (size - 1) + size * i : r[i] == -7;
        CHECK(ok, "MPI_Iallreduce of %s on a vector type (unpacked at completion, gaps untouched)",
              k ? "MPI_SUM" : "a user operation");
        ok = 1;
        for (int i = 0; i < L; i++)
            s[i] = i, r[i] = in_vec(i) ? 2 * i : -7;
        CHECK(MPI_Reduce_local(s, r, E, vec_type, sums[k]) == MPI_SUCCESS, "MPI_Reduce_local");
        for (int i = 0; i < L; i++)
            ok &= r[i] == (in_vec(i) ? 3 * i : -7);
        CHECK(ok, "MPI_Reduce_local of %s on a vector type", k ? "MPI_SUM" : "a user operation");
    }
}

/* ---------------------------------------------------------------- overlap */

static void overlapped(void)
{
    enum { N = 20000 };
    static int bc[N], ar_in[N], ar_out[N], rd_in[N], rd_out[N];
    MPI_Request reqs[4];
    int ok = 1, root = size / 2;
    for (int i = 0; i < N; i++) {
        bc[i] = rank == 0 ? i : -1;
        ar_in[i] = ival(rank, i);
        rd_in[i] = ival(rank, i);
        rd_out[i] = -1;
    }
    CHECK(MPI_Ibcast(bc, N, MPI_INT, 0, MPI_COMM_WORLD, &reqs[0]) == MPI_SUCCESS, "MPI_Ibcast");
    CHECK(MPI_Iallreduce(ar_in, ar_out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[1]) == MPI_SUCCESS,
          "MPI_Iallreduce");
    CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &reqs[2]) == MPI_SUCCESS, "MPI_Ibarrier");
    CHECK(MPI_Ireduce(rd_in, rd_out, N, MPI_INT, MPI_MAX, root, MPI_COMM_WORLD, &reqs[3]) == MPI_SUCCESS,
          "MPI_Ireduce");
    /* Complete them in reverse order. */
    for (int k = 3; k >= 0; k--)
        CHECK(MPI_Wait(&reqs[k], MPI_STATUS_IGNORE) == MPI_SUCCESS && reqs[k] == MPI_REQUEST_NULL,
              "MPI_Wait of request %d", k);
    for (int i = 0; i < N; i++) {
        ok &= bc[i] == i && ar_out[i] == int_ref(MPI_SUM, i);
        ok &= rank == root ? rd_out[i] == int_ref(MPI_MAX, i) : rd_out[i] == -1;
    }
    CHECK(ok, "four nonblocking collectives in flight at once, completed in reverse order");
    /* The same with MPI_Waitall. */
    for (int i = 0; i < N; i++)
        bc[i] = rank == size - 1 ? 2 * i : -1;
    CHECK(MPI_Ibcast(bc, N, MPI_INT, size - 1, MPI_COMM_WORLD, &reqs[0]) == MPI_SUCCESS &&
              MPI_Iallreduce(MPI_IN_PLACE, ar_in, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[1]) == MPI_SUCCESS &&
              MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE) == MPI_SUCCESS,
          "MPI_Ibcast + MPI_Iallreduce + MPI_Waitall");
    ok = 1;
    for (int i = 0; i < N; i++)
        ok &= bc[i] == 2 * i && ar_in[i] == int_ref(MPI_SUM, i);
    CHECK(ok, "MPI_Waitall of two nonblocking collectives");
}

/* ---------------------------------------------------------------- Reduce_local */

static void reduce_local(void)
{
    static const NamedOp ops[] = {{MPI_MAX, "MPI_MAX"},   {MPI_MIN, "MPI_MIN"},   {MPI_SUM, "MPI_SUM"},
                                  {MPI_PROD, "MPI_PROD"}, {MPI_LAND, "MPI_LAND"}, {MPI_LOR, "MPI_LOR"},
                                  {MPI_LXOR, "MPI_LXOR"}, {MPI_BAND, "MPI_BAND"}, {MPI_BOR, "MPI_BOR"},
                                  {MPI_BXOR, "MPI_BXOR"}};
    enum { N = 16 };
    int a[N], b[N];
    for (unsigned k = 0; k < sizeof ops / sizeof *ops; k++) {
        int ok = 1;
        for (int i = 0; i < N; i++)
            a[i] = int_input(ops[k].op, 0, i), b[i] = int_input(ops[k].op, 1, i);
        CHECK(MPI_Reduce_local(a, b, N, MPI_INT, ops[k].op) == MPI_SUCCESS, "MPI_Reduce_local");
        for (int i = 0; i < N; i++)
            ok &= b[i] == (int)combine_ll(ops[k].op, int_input(ops[k].op, 0, i), int_input(ops[k].op, 1, i));
        CHECK(ok, "MPI_Reduce_local %s on MPI_INT", ops[k].name);
    }
    {
        struct {
            double v;
            int r;
        } x[2] = {{1.0, 3}, {2.0, 1}}, y[2] = {{1.0, 2}, {5.0, 0}};
        CHECK(MPI_Reduce_local(x, y, 2, MPI_DOUBLE_INT, MPI_MAXLOC) == MPI_SUCCESS && y[0].v == 1.0 &&
                  y[0].r == 2 && y[1].v == 5.0 && y[1].r == 0,
              "MPI_Reduce_local MPI_MAXLOC on MPI_DOUBLE_INT");
    }
}

/* ---------------------------------------------------------------- errors */

static void errors(void)
{
    int b[4] = {1, 2, 3, 4}, c[4];
    double d[2] = {1, 2}, e[2];
    MPI_Op op = MPI_SUM;
    MPI_Request req;

    CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN) == MPI_SUCCESS, "MPI_ERRORS_RETURN");
    CHECK_ERR(MPI_Bcast(b, 4, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT, "root");
    CHECK_ERR(MPI_Bcast(b, 4, MPI_INT, -1, MPI_COMM_WORLD), MPI_ERR_ROOT, "root");
    CHECK_ERR(MPI_Ibcast(b, 4, MPI_INT, size + 3, MPI_COMM_WORLD, &req), MPI_ERR_ROOT, "root");
    CHECK_ERR(MPI_Reduce(b, c, 4, MPI_INT, MPI_SUM, size, MPI_COMM_WORLD), MPI_ERR_ROOT, "root");
    CHECK_ERR(MPI_Ireduce(b, c, 4, MPI_INT, MPI_SUM, -2, MPI_COMM_WORLD, &req), MPI_ERR_ROOT, "root");
    CHECK_ERR(MPI_Bcast(b, -1, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_COUNT, "count");
    if (on_madmpi()) /* MPICH 4.0.2 does not check it (it asserts in yaksa) */
        CHECK_ERR(MPI_Allreduce(b, c, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_COUNT, "count");
    CHECK_ERR(MPI_Bcast(b, 4, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD), MPI_ERR_TYPE, "datatype");
    CHECK_ERR(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM, "communicator");
    CHECK_ERR(MPI_Allreduce(b, c, 4, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD), MPI_ERR_OP, "operation");
    CHECK_ERR(MPI_Allreduce(d, e, 2, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD), MPI_ERR_OP, "MPI_BAND");
    CHECK_ERR(MPI_Reduce_local(d, e, 2, MPI_DOUBLE, MPI_BXOR), MPI_ERR_OP, "MPI_BXOR");
    CHECK_ERR(MPI_Allreduce(NULL, c, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_BUFFER, "buffer");
    CHECK_ERR(MPI_Allreduce(b, b, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_BUFFER, "same");
    if (rank != 0 && on_madmpi()) /* MPICH 4.0.2 does not check it (it crashes) */
        CHECK_ERR(MPI_Reduce(MPI_IN_PLACE, c, 4, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER,
                  "MPI_IN_PLACE");
    CHECK_ERR(MPI_Op_free(&op), MPI_ERR_OP, "predefined");
    if (on_madmpi()) /* MPICH 4.0 does not check the function pointer */
        CHECK_ERR(MPI_Op_create(NULL, 1, &op), MPI_ERR_ARG, "null");
    CHECK_ERR(MPI_Ibarrier(MPI_COMM_WORLD, NULL), MPI_ERR_ARG, "request");
    /* Everyone is still in step. */
    CHECK(MPI_Allreduce(b, c, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS && c[3] == 4 * size,
          "collectives work after the errors");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    CHECK(MPI_Type_vector(4, 2, 3, MPI_INT, &vec_type) == MPI_SUCCESS && MPI_Type_commit(&vec_type) == MPI_SUCCESS,
          "a vector type");
    CHECK(MPI_Op_create(vsum, 1, &vsum_op) == MPI_SUCCESS, "MPI_Op_create (commutative)");

    barrier_and_bcast();
    int_ops();
    double_ops();
    uchar_ops();
    loc_ops();
    in_place();
    user_ops();
    derived();
    overlapped();
    reduce_local();
    errors();

    CHECK(MPI_Op_free(&vsum_op) == MPI_SUCCESS && vsum_op == MPI_OP_NULL, "MPI_Op_free");
    MPI_Type_free(&vec_type);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("OK %d: all checks passed\n", rank);
    MPI_Finalize();
    return 0;
}
