/* The express blocking collectives (barrier, broadcast and allreduce of a few bytes of a builtin
 * type, which replay the flat schedule's messages without a schedule) against the general path,
 * in one job: for the same call, even ranks pass a builtin datatype (the express path) and odd
 * ranks a committed contiguous derived type of the same type map (the general path), so the two
 * must put the same messages on the wire; results are checked against local references. Also:
 * nonblocking collectives left in flight across express calls (the collective numbers stay in
 * step), MPI_IN_PLACE, a non-commutative user operation (general) beside builtin ones, sizes
 * around the express limit, every root, and a second communicator. Any number of processes;
 * runs on MPICH's library too. */
#include "check.h"

static int rank, size;
static MPI_Datatype int4, dbl1; /* MPI_Type_contiguous(4, MPI_INT), (1, MPI_DOUBLE) */

/* Allreduce of `n` ints (sum and max), even ranks with MPI_INT, odd with int4 (n a multiple of
 * 4). */
static void allreduce_mixed(MPI_Comm comm, int n, const char *what)
{
    int me, p;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    int *in = malloc(sizeof(int) * n), *out = malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++)
        in[i] = me * 1000 + i;
    MPI_Datatype t = me % 2 ? int4 : MPI_INT;
    int c = me % 2 ? n / 4 : n;
    CHECK(MPI_Allreduce(in, out, c, t, MPI_SUM, comm) == MPI_SUCCESS, "%s: allreduce sum", what);
    int ok = 1;
    for (int i = 0; i < n; i++)
        ok &= out[i] == 1000 * (p * (p - 1) / 2) + p * i;
    CHECK(ok, "%s: allreduce of %d ints (sum), %s path", what, n, me % 2 ? "general" : "express");
    memcpy(out, in, sizeof(int) * n);
    CHECK(MPI_Allreduce(MPI_IN_PLACE, out, c, t, MPI_MAX, comm) == MPI_SUCCESS, "%s: in place", what);
    ok = 1;
    for (int i = 0; i < n; i++)
        ok &= out[i] == (p - 1) * 1000 + i;
    CHECK(ok, "%s: allreduce in place of %d ints (max)", what, n);
    free(in);
    free(out);
}

/* Broadcast of `n` ints from every root, even ranks with MPI_INT, odd with int4. */
static void bcast_mixed(MPI_Comm comm, int n, const char *what)
{
    int me, p;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    int *b = malloc(sizeof(int) * (n + 1));
    for (int root = 0; root < p; root++) {
        for (int i = 0; i < n; i++)
            b[i] = me == root ? root * 7 + i : -1;
        MPI_Datatype t = me % 2 ? int4 : MPI_INT;
        CHECK(MPI_Bcast(b, me % 2 ? n / 4 : n, t, root, comm) == MPI_SUCCESS, "%s: bcast", what);
        int ok = 1;
        for (int i = 0; i < n; i++)
            ok &= b[i] == root * 7 + i;
        CHECK(ok, "%s: bcast of %d ints from %d", what, n, root);
    }
    free(b);
}

/* Express calls while nonblocking collectives of the same communicator are in flight. */
static void interleaved(void)
{
    int x = rank + 1, sum = 0, y = rank == 0 ? 42 : 0, z = 0;
    double d = rank, dmax = -1;
    MPI_Request r[2];
    CHECK(MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[0]) == MPI_SUCCESS, "iallreduce");
    CHECK(MPI_Ibcast(&y, 1, MPI_INT, 0, MPI_COMM_WORLD, &r[1]) == MPI_SUCCESS, "ibcast");
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Allreduce(&d, &dmax, 1, rank % 2 ? dbl1 : MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD) == MPI_SUCCESS,
          "allreduce during");
    z = rank == size - 1 ? 9 : 0;
    CHECK(MPI_Bcast(&z, 1, MPI_INT, size - 1, MPI_COMM_WORLD) == MPI_SUCCESS, "bcast during");
    CHECK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "waitall");
    CHECK(sum == size * (size + 1) / 2 && y == 42 && dmax == size - 1 && z == 9,
          "nonblocking collectives in flight across express ones: %d %d %g %d", sum, y, dmax, z);
}

static void noncommutative(void)
{
    MPI_Op op;
    CHECK(MPI_Op_create(check_matmul, 0, &op) == MPI_SUCCESS, "MPI_Op_create (non-commutative)");
    int m[4] = {rank + 2, 1, 0, 1}, out[4], want[4] = {1, 0, 0, 1};
    for (int r = size - 1; r >= 0; r--) { /* want = A_0 A_1 ... A_{size-1} */
        int a[4] = {r + 2, 1, 0, 1}, n = 1;
        check_matmul(a, want, &n, NULL);
    }
    CHECK(MPI_Allreduce(m, out, 1, int4, op, MPI_COMM_WORLD) == MPI_SUCCESS, "allreduce matmul");
    CHECK(!memcmp(out, want, sizeof want), "non-commutative allreduce in rank order: %d %d %d %d", out[0],
          out[1], out[2], out[3]);
    MPI_Op_free(&op);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    MPI_Type_contiguous(4, MPI_INT, &int4);
    MPI_Type_commit(&int4);
    MPI_Type_contiguous(1, MPI_DOUBLE, &dbl1);
    MPI_Type_commit(&dbl1);

    for (int i = 0; i < 100; i++)
        CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS, "barrier %d", i);
    for (int n = 4; n <= 128; n *= 2) { /* 16 B to 512 B: across the express limit */
        allreduce_mixed(MPI_COMM_WORLD, n, "world");
        bcast_mixed(MPI_COMM_WORLD, n, "world");
    }
    interleaved();
    noncommutative();

    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    allreduce_mixed(half, 8, "split");
    bcast_mixed(half, 8, "split");
    MPI_Barrier(half);
    MPI_Comm_free(&half);

    MPI_Type_free(&int4);
    MPI_Type_free(&dbl1);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("OK %d: all checks passed\n", rank);
    MPI_Finalize();
    return 0;
}
